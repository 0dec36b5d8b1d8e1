#!/bin/sh
# The Python training loop's cost (`make bench-python-train`): the CNN on Fashion-MNIST
# (batch 128, Adam 1e-3, f32, the CPU) three ways in one run, interleaved round by round so
# that a shared machine's load falls on each alike: `ctensor train` (the C loop), the
# Python example python/examples/cnn_fashion_mnist.py (ctensor from Python: ct.nn, ct.optim,
# ct.data.DataLoader), and PyTorch's loop (bench/peer_torch_train.py) at its best thread
# count here. Each side trains one epoch on the first LIMIT samples with data loading in
# the main thread (ctensor train's default on the CPU) and reports samples/s; the ratios are
# per round. OPENBLAS_CORETYPE is unset for every side.
#
# Usage: bench/run_python_train.sh [BUILD_DIR] [ROUNDS]
# Environment: BENCH_LIMIT (12800), BENCH_THREADS (2), BENCH_PYTHON (/usr/bin/python3:
# Debian's python3-torch for the peer; ctensor's module comes from BUILD_DIR/python).
set -eu
build=${1:-build}
rounds=${2:-3}
limit=${BENCH_LIMIT:-12800}
threads=${BENCH_THREADS:-2}
python=${BENCH_PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
unset OPENBLAS_CORETYPE
export OMP_NUM_THREADS="$threads" OMP_WAIT_POLICY=passive
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "CNN, batch 128, Adam, f32, cpu, $limit samples, $threads threads (samples/s)"
printf '  %-5s %14s %14s %14s %10s %10s\n' round ctensor_train python_ct torch python/C python/torch
for r in $(seq 1 "$rounds"); do
    c=$("$build/ctensor" train --model cnn --epochs 1 --device cpu --batch-size 128 \
        --limit "$limit" --workers 0 | sed -n 's/^epoch 1\/1.* \([0-9.]*\) samples\/s.*/\1/p')
    p=$(PYTHONPATH="$build/python" "$python" "$here/../python/examples/cnn_fashion_mnist.py" \
        --epochs 1 --limit "$limit" --workers 0 | sed -n 's/.*, \([0-9.]*\) samples\/s.*/\1/p')
    best=0
    for t in 1 "$threads"; do
        v=$(OMP_NUM_THREADS="$t" \
            GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 \
            "$python" "$here/peer_torch_train.py" cnn 1 128 "$t" --limit "$limit" |
            awk '/ epoch 1 / {print $8}')
        best=$(awk -v a="$best" -v b="$v" 'BEGIN {print (b > a ? b : a)}')
    done
    awk -v r="$r" -v c="$c" -v p="$p" -v t="$best" 'BEGIN {
        printf "  %-5d %14.0f %14.0f %14.0f %9.2fx %9.2fx\n", r, c, p, t, p / c, p / t }'
done

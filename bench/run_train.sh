#!/bin/sh
# The training benchmark (`make bench-train`): `ctensor train` and PyTorch on Fashion-MNIST
# with the same model, batch (128), optimiser (Adam 1e-3) and threads, in one run: each
# epoch's time, samples/s (data loading included) and test accuracy, with the ratio.
# PyTorch gets its best settings on this machine (the training issue): passive OpenMP
# waiting and glibc malloc tunables that keep freed memory; OPENBLAS_CORETYPE is unset for
# both sides so OpenBLAS picks its own kernels. Each model runs once per precision of
# BENCH_AMP: off (f32), bf16, f16 (`ctensor train --amp`, PyTorch's torch.autocast).
#
# Usage: bench/run_train.sh [BUILD_DIR] [EPOCHS]
# Environment: BENCH_MODELS ("mlp cnn"), BENCH_AMP ("off bf16"), BENCH_LIMIT (train on the
# first N samples; 0: all), BENCH_DEVICE (cpu; cuda on a GPU machine, both
# sides on it), BENCH_BATCH (128), BENCH_THREADS (2), BENCH_DATA (the folder of the four
# Fashion-MNIST IDX files; Debian's by default), BENCH_PYTHON (/usr/bin/python3, whose
# torch is Debian's python3-torch).
set -eu
build=${1:-build}
epochs=${2:-3}
threads=${BENCH_THREADS:-2}
device=${BENCH_DEVICE:-cpu}
limit=${BENCH_LIMIT:-0}
limit_opt=""
if [ "$limit" != 0 ]; then limit_opt="--limit $limit"; fi
batch=${BENCH_BATCH:-128}
data=${BENCH_DATA:-/usr/share/datasets/fashion-mnist}
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$build/ctensor" ]; then
    echo "run_train.sh: $build/ctensor not found; build first (make build)" >&2
    exit 1
fi
unset OPENBLAS_CORETYPE
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for model in ${BENCH_MODELS:-mlp cnn}; do
for amp in ${BENCH_AMP:-off bf16}; do
    "$build/ctensor" train --model "$model" --epochs "$epochs" --device "$device" \
        --batch-size "$batch" --dataset "$data" --amp "$amp" $limit_opt > "$tmp/ours"
    echo "$model on $device, batch $batch, Adam 1e-3, $threads threads, amp $amp"
    if ! OMP_WAIT_POLICY=passive \
        GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 \
        "${BENCH_PYTHON:-/usr/bin/python3}" "$here/peer_torch_train.py" "$model" "$epochs" \
        "$batch" "$threads" --data "$data" --device "$device" --amp "$amp" $limit_opt \
        > "$tmp/theirs" \
        2> "$tmp/error"; then
        # ctensor's epochs still count; the peer's failure is the run's.
        echo "  PyTorch failed: $(tail -n 1 "$tmp/error")"
        grep '^epoch' "$tmp/ours" | sed 's/^/  ctensor: /'
        status=1
        continue
    fi
    printf '  %-5s %14s %14s %8s %12s %12s\n' epoch ctensor_sps torch_sps ratio ctensor_acc torch_acc
    grep '^epoch' "$tmp/ours" | sed 's|/| |' | while read -r _ e _ _ _ _ _ _ _ _ acc _ _ sps _; do
        line=$(grep " epoch $e " "$tmp/theirs")
        tsps=$(echo "$line" | awk '{print $8}')
        tacc=$(echo "$line" | awk '{print $10}')
        awk -v e="$e" -v s="$sps" -v t="$tsps" -v a="$acc" -v b="$tacc" 'BEGIN {
            printf "  %-5d %14.0f %14.0f %7.2fx %11s %11.2f%%\n", e, s, t, s / t, a, 100 * b }'
    done
done
done
exit "$status"

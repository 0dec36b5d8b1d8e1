#!/bin/sh
# The training-step benchmark: one step (forward, backward, Adam) of the small CNN and the
# MLP at batch 128, ctensor against PyTorch on the CPU, in one run with the same threads.
# PyTorch gets its best settings measured on this machine (the training issue): glibc
# malloc tunables that keep freed memory, passive OpenMP waiting (for both sides);
# OPENBLAS_CORETYPE is unset for both sides so OpenBLAS picks its own kernels.
#
# Usage: bench/run_step.sh [BUILD_DIR]     (`make bench-step`)
set -eu
build=${1:-build}
threads=${BENCH_THREADS:-2}
steps=${BENCH_STEPS:-20}
if [ ! -x "$build/bench/bench_step" ]; then
    echo "run_step.sh: $build/bench/bench_step not found; build first" >&2
    exit 1
fi
unset OPENBLAS_CORETYPE
# Passive OpenMP waiting for both sides: PyTorch's best setting here, and ctensor's default
# in its command (tools/ctensor.c says why).
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" OMP_WAIT_POLICY=passive
here=$(cd "$(dirname "$0")" && pwd)
printf '%-6s %6s %12s %12s %12s %12s %8s\n' model batch ctensor_ms torch_ms ctensor_sps torch_sps ratio
for model in cnn mlp; do
    ours=$("$build/bench/bench_step" "$model" 128 "$steps")
    theirs=$(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 \
        /usr/bin/python3 "$here/peer_torch_step.py" "$model" 128 "$steps" "$threads")
    echo "$ours $theirs" | awk '{ printf "%-6s %6d %12.2f %12.2f %12.0f %12.0f %7.2fx\n", $2, $3, $4, $9, $5, $10, ($10 > 0 ? $5 / $10 : 0) }'
done

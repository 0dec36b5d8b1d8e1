#!/bin/sh
# The training-step benchmark: one step (forward, backward, Adam) of the small CNN and the
# MLP at batch 128, ctensor against PyTorch on the CPU, in one run. Each side runs at one
# thread and at BENCH_THREADS (2), interleaved; the last line of each model compares the
# best of each side, and ctensor at its default threads against its own one-thread step, so
# a threading regression shows as a ratio. PyTorch gets its best settings measured on this
# machine (the training issue): glibc malloc tunables that keep freed memory, passive
# OpenMP waiting; ctensor runs as a library user's program does (no OpenMP settings but the
# thread count). OPENBLAS_CORETYPE is unset for both sides so OpenBLAS picks its own kernels.
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
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %6s %-8s %12s %12s %12s %12s %8s\n' model batch threads ctensor_ms torch_ms ctensor_sps torch_sps ratio
for model in cnn mlp; do
    for t in 1 "$threads"; do
        OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t "$build/bench/bench_step" "$model" 128 "$steps" > "$tmp/ours.$t"
        OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t OMP_WAIT_POLICY=passive \
            GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 \
            /usr/bin/python3 "$here/peer_torch_step.py" "$model" 128 "$steps" "$t" > "$tmp/theirs.$t"
        echo "$(cat "$tmp/ours.$t") $(cat "$tmp/theirs.$t")" | awk -v t="$t" '{
            printf "%-6s %6d %-8s %12.2f %12.2f %12.0f %12.0f %7.2fx\n", $2, $3, t, $4, $9, $5, $10,
                ($10 > 0 ? $5 / $10 : 0) }'
    done
    # The best of each side, and ctensor's default threads against its one thread.
    cat "$tmp/ours.1" "$tmp/ours.$threads" "$tmp/theirs.1" "$tmp/theirs.$threads" | awk -v t="$threads" '
        $1 == "ctensor" { if ($5 > best_c) best_c = $5; if (NR == 1) one = $5; else dflt = $5 }
        $1 == "torch" { if ($5 > best_t) best_t = $5 }
        END { printf "%-6s %6s %-8s %12s %12s %12.0f %12.0f %7.2fx   (ctensor at %s threads: %.2fx its 1 thread)\n",
            "", "", "best", "", "", best_c, best_t, best_c / best_t, t, dflt / one }'
done

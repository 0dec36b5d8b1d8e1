#!/bin/sh
# The ops benchmark: ctensor (bench_ops) against the same work done directly in C (OpenBLAS's
# cblas_sgemm, a plain OpenMP loop, memcpy) and against NumPy, in one run on one machine with
# the same threads. Prints one table with ratios and writes it, with the machine and the
# command, to bench/results/latest.md; then the FFT against numpy.fft (bench/bench_fft.py),
# whose table is appended.
#
# Usage: bench/run.sh [BUILD_DIR] [--quick]     (`make bench` runs it on ./build)
# BENCH_THREADS (default 2) sets OMP_NUM_THREADS and OPENBLAS_NUM_THREADS for both sides.
# BENCH_NUMPY_PYTHON (default .venv/bin/python3) runs bench_fft.py: an interpreter of the
# Python the module was built for, whose NumPy is the FFT's peer (Debian's NumPy 1.24 returns
# complex128 for complex64 input, so the FFT's accuracy can be judged only against NumPy 2).
# Measure on a quiet machine: other work on the cores skews every figure.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
command="bench/run.sh $*"
build=build
case "${1:-}" in --*|"") ;; *) build=$1; shift ;; esac
bench_ops="$build/bench/bench_ops"
python=/usr/bin/python3
if [ ! -x "$bench_ops" ]; then
    echo "run.sh: $bench_ops not found; build first (make build, or cmake --build $build)" >&2
    exit 1
fi

build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ "$build_type" != Release ]; then
    echo "run.sh: warning: $build is a ${build_type:-unknown} build; figures are meant for Release" >&2
fi

threads=${BENCH_THREADS:-2}
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "running bench_ops and bench/peer_numpy.py ($threads threads; load average: $load)" >&2
"$bench_ops" "$@" > "$work/ctensor.tsv"
"$python" "$here/peer_numpy.py" "$@" > "$work/numpy.tsv"

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
numpy_blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo unknown)
mkdir -p "$here/results"
numpy_version=$("$python" -c 'import numpy; print(numpy.__version__)')
openblas=$(ldd "$bench_ops" | awk '/libopenblas/ { print $3; exit }')
openblas=$(readlink -f "$openblas" 2>/dev/null || echo "$openblas")
footer="Machine: $cpu, $(getconf _NPROCESSORS_ONLN) cores online, $threads threads (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS).
NumPy $numpy_version, BLAS $numpy_blas; ctensor's matmul and the direct calls use $openblas.
Run: $command (${build_type:-unknown} build) on $(date -u '+%Y-%m-%d %H:%M UTC'), load average before: $load."
"$python" - "$work/ctensor.tsv" "$work/numpy.tsv" "$footer" > "$here/results/latest.md" <<'EOF'
import sys

# Targets: benchmark -> (what is compared, bound, text).
TARGETS = {
    "matmul f32 2048": ("vs_direct", 0.95, ">= 0.95x OpenBLAS"),
    "add f32 10^7": ("value", 55.0, ">= 55 GB/s"),
    "mul f32 10^7": ("value", 55.0, ">= 55 GB/s"),
    "exp f32 10^7": ("value", 50.0, ">= 50 GB/s"),
    "add 1 element": ("value", 100.0, "<= 100 ns"),
}

rows, units, order = {}, {}, []
for path in sys.argv[1:3]:
    for line in open(path):
        bench, impl, unit, value, note = (line.rstrip("\n").split("\t") + [""])[:5]
        if bench not in rows:
            rows[bench], units[bench] = {}, unit
            order.append(bench)
        rows[bench][impl] = (None if value == "n/a" else float(value), note)

def shown(cell):
    if cell is None:
        return ""
    value, note = cell
    return f"n/a ({note})" if value is None else f"{value:.4g}"

def ratio(bench, peer):
    """ctensor's speed over the peer's (> 1: ctensor is faster)."""
    ours, theirs = rows[bench].get("ctensor"), rows[bench].get(peer)
    if not ours or not theirs or ours[0] is None or theirs[0] is None:
        return None
    if units[bench] == "ns":
        return theirs[0] / ours[0]
    return ours[0] / theirs[0]

def target(bench):
    if bench not in TARGETS:
        return ""
    what, bound, text = TARGETS[bench]
    value = ratio(bench, "direct") if what == "vs_direct" else rows[bench].get("ctensor", (None,))[0]
    if value is None:
        return f"{text}: not measured"
    met = value <= bound if units[bench] == "ns" else value >= bound
    return f"{text}: {'met' if met else 'NOT met'}"

print("| benchmark | unit | ctensor | direct C | NumPy | vs direct C | vs NumPy | target |")
print("|---|---|---|---|---|---|---|---|")
for bench in order:
    r = rows[bench]
    ratios = [ratio(bench, peer) for peer in ("direct", "numpy")]
    ratios = [f"{x:.2f}x" if x is not None else "" for x in ratios]
    print(f"| {bench} | {units[bench]} | {shown(r.get('ctensor'))} | {shown(r.get('direct'))} "
          f"| {shown(r.get('numpy'))} | {ratios[0]} | {ratios[1]} | {target(bench)} |")
print()
print("Ratios are ctensor's speed over the peer's: above 1x ctensor is faster. Direct C is")
print("cblas_sgemm for matmul, an OpenMP loop into a preallocated result for add, memcpy for clone.")
print(sys.argv[3])
EOF
cat "$here/results/latest.md"

# The FFT against numpy.fft (issue 36), with the Python module of this build.
echo "running bench/bench_fft.py" >&2
PYTHONPATH="$build/python" OMP_WAIT_POLICY=passive \
    "${BENCH_NUMPY_PYTHON:-$here/../.venv/bin/python3}" "$here/bench_fft.py" "$@" > "$work/fft.md"
{ echo; cat "$work/fft.md"; } >> "$here/results/latest.md"
cat "$work/fft.md"

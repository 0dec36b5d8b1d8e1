#!/bin/sh
# Data-parallel scaling of `ctensor train` (`make bench-dist`), in one run, interleaved so
# that a shared machine's load falls on every configuration alike: the same model, global
# batch, seed and samples on
#   1r1t  one process, one OpenMP thread
#   1r2t  one process, two OpenMP threads
#   2r1t  mpirun -np 2, one thread per rank (the MPI engine)
#   2d1t  --devices cpu:0,cpu:1 in one process (the threads engine, one core each)
#   2r    mpirun -np 2 with OMP_NUM_THREADS unset (each rank takes its share of the cores)
#   2p1t  two independent one-thread trainings at once, each on half the samples with half the
#         batch (the machine's ceiling for 2r1t: the same work, no communication; the
#         accuracy shown is one half's)
# and, for each run, samples/s, the test accuracy, and from the summary the time the
# gradient all-reduces took, the part hidden behind backward, and the time waited for them.
# The ratios to 1r1t are printed at the end, with their range over the repeats.
#
# Usage: bench/run_dist.sh [BUILD_DIR] [REPEATS]
# Environment: BENCH_MODEL (cnn), BENCH_LIMIT (training samples; 0: all 60000, one epoch),
# BENCH_BATCH (128), BENCH_DATA (Fashion-MNIST's folder; Debian's by default), BENCH_CONFIGS
# (the configurations to run: "1r1t 2r1t 1r2t 2d1t 2p1t"; ratios need 1r1t).
set -eu
build=${1:-build}
repeats=${2:-3}
model=${BENCH_MODEL:-cnn}
limit=${BENCH_LIMIT:-0}
batch=${BENCH_BATCH:-128}
data=${BENCH_DATA:-fashion-mnist}
if [ ! -x "$build/ctensor" ]; then
    echo "run_dist.sh: $build/ctensor not found; build first (make build)" >&2
    exit 1
fi
command -v mpirun >/dev/null || { echo "run_dist.sh: mpirun not found (make deps)" >&2; exit 1; }
unset OPENBLAS_CORETYPE
# OpenMP's waiting is left to the command (tools/ctensor.c sets its short spin in each rank).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_base_warn_component_unused=0
args="--model $model --epochs 1 --batch-size $batch --dataset $data --json"
[ "$limit" != 0 ] && args="$args --limit $limit"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

one() { # NAME COMMAND...: run, keep the JSON summary
    name=$1
    shift
    "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    tail -1 "$tmp/out" >>"$tmp/$name"
    python3 -c 'import json, sys
s = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print("%-5s %8.1f samples/s  test acc %.2f%%  allreduce %.2f s, hidden %.2f s, waited %.2f s "
      "(%.1f%% of %.1f s)" % (sys.argv[2], s["samples_per_second"], 100 * s["test_accuracy"],
      s["comm_seconds"], s["comm_hidden_seconds"], s["comm_wait_seconds"],
      100 * s["comm_wait_seconds"] / s["seconds"], s["seconds"]))' "$tmp/out" "$name"
}

# Two one-thread trainings at once, each on half the samples (of Fashion-MNIST's 60,000 with
# BENCH_LIMIT=0) and half the batch: their joint rate, the samples over the slower one's
# seconds, as one summary line.
pair() {
    half="--model $model --epochs 1 --batch-size $((batch / 2)) --dataset $data --json"
    half="$half --limit $((limit > 0 ? limit / 2 : 30000))"
    OMP_NUM_THREADS=1 "$build/ctensor" train $half >"$tmp/pair_a" 2>"$tmp/err_a" &
    first=$!
    OMP_NUM_THREADS=1 "$build/ctensor" train $half >"$tmp/pair_b" 2>"$tmp/err_b" &
    second=$!
    wait $first && wait $second || { cat "$tmp/err_a" "$tmp/err_b" >&2; exit 1; }
    python3 -c 'import json, sys
a, b = (json.loads(open(f).read().splitlines()[-1]) for f in sys.argv[1:])
seconds = max(a["seconds"], b["seconds"])
print(json.dumps({"samples_per_second": (a["train_samples"] + b["train_samples"]) / seconds,
                  "test_accuracy": a["test_accuracy"], "seconds": seconds, "comm_seconds": 0,
                  "comm_hidden_seconds": 0, "comm_wait_seconds": 0}))' "$tmp/pair_a" "$tmp/pair_b"
}

lscpu | sed -n 's/^Model name: *//p'
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$repeats"); do
    echo "== repeat $r"
    for config in ${BENCH_CONFIGS:-1r1t 2r1t 1r2t 2d1t 2p1t}; do
        case $config in
        1r1t) one 1r1t env OMP_NUM_THREADS=1 "$build/ctensor" train $args ;;
        2r1t) one 2r1t mpirun --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 \
            "$build/ctensor" train $args ;;
        1r2t) one 1r2t env OMP_NUM_THREADS=2 "$build/ctensor" train $args ;;
        2d1t) one 2d1t env OMP_NUM_THREADS=2 "$build/ctensor" train $args --devices cpu:0,cpu:1 ;;
        2p1t) one 2p1t pair ;;
        2r) one 2r env -u OMP_NUM_THREADS mpirun --oversubscribe --bind-to none -np 2 \
            "$build/ctensor" train $args ;;
        esac
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" <<'EOF'
import json, os, sys
runs = {n: [json.loads(l)["samples_per_second"] for l in open(os.path.join(sys.argv[1], n))]
        for n in ("1r1t", "1r2t", "2r1t", "2d1t", "2r", "2p1t") if os.path.exists(os.path.join(sys.argv[1], n))}
if "1r1t" not in runs:
    sys.exit(0)
for n in [n for n in ("1r2t", "2r1t", "2d1t", "2r", "2p1t") if n in runs]:
    ratios = [a / b for a, b in zip(runs[n], runs["1r1t"])]
    print("%s / 1r1t: %.2f-%.2fx (per repeat: %s)" % (n, min(ratios), max(ratios),
          ", ".join("%.2f" % x for x in ratios)))
if "2r1t" in runs and "1r2t" in runs:
    ratios = [a / b for a, b in zip(runs["2r1t"], runs["1r2t"])]
    print("2r1t / 1r2t: %.2f-%.2fx" % (min(ratios), max(ratios)))
if "2r1t" in runs and "2p1t" in runs:
    ratios = [a / b for a, b in zip(runs["2r1t"], runs["2p1t"])]
    print("2r1t / 2p1t (of the machine's ceiling): %.2f-%.2f (per repeat: %s)" % (
          min(ratios), max(ratios), ", ".join("%.2f" % x for x in ratios)))
EOF

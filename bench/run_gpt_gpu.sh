#!/bin/sh
# The GPT GPU benchmark (issue 35): `ctensor train --model gpt2-124m --dataset synthetic
# --amp bf16` (GPT-2 124M: 12 layers, 12 heads, width 768, context 1024, vocabulary 50257) on
# cuda at batch 16 and 64, beside PyTorch eager with F.scaled_dot_product_attention
# (bench/peer_torch_gpt_gpu.py: nanoGPT's model, torch.autocast bf16, fused AdamW) on the same
# GPU in one run: tokens/s, model FLOPs utilisation and the ratios against the goals (>= 1.0x
# PyTorch eager at each batch; >= 400,000 tokens/s at batch 64, judged only where the card is
# an H200). ctensor runs with its default settings (deterministic algorithms), then, while the
# budget lasts, with --nondeterministic; the goals are judged on the default. Last, while the
# budget lasts, one `--profile` run at the first batch (GPT_WARMUP + GPT_STEPS steps, the
# warm-up in it): where a step's time goes, by phase and kernel kind (its table follows).
#
# MFU: (6 N + 6 L C T) FLOPs per token (N the parameters, the tied embedding once; L layers,
# C width, T context: issue 35's count, llm.c's) times tokens/s over the card's dense bf16
# peak: GPT_PEAK_TFLOPS, else the peer's (its PEAK_TFLOPS table, by the card's name).
#
# Both sides run GPT_WARMUP steps (default 10) and then time GPT_STEPS (default 10). ctensor
# times each step to the device's synchronisation and prints its cumulative tokens/s at each
# evaluation (--eval-interval GPT_WARMUP): its figure here is the rate of the steps after the
# warm-up, from the cumulative rates at step GPT_WARMUP and at the last step (evaluations are
# outside its timing; GPT_STEPS <= GPT_WARMUP keeps them to two). Every run is bounded by
# timeout(1) (GPT_TIMEOUT seconds, default 90), and once the section has run GPT_BUDGET seconds
# (default 240) the runs left are skipped, each saying so, so that the section and the build
# fit in one call of a GPU machine.
#
# Usage: bench/run_gpt_gpu.sh BUILD_DIR [BATCHES]       (BATCHES: "16 64")
# Environment: PYTHON (python3), GPT_* above, GPT_DEVICE (ctensor's device, default cuda),
# GPT_PEER_DEVICE (PyTorch's, default cuda:0), GPT_SHAPE (options given to both sides to change
# the shape, e.g. "--layers 2 --heads 2 --width 64 --context 64 --vocab 512": a check of the
# script, not the benchmark). Prints the table (with "NOT met" beside a goal that is not) and
# exits non-zero when a ctensor run failed.
set -u
build=${1:?usage: bench/run_gpt_gpu.sh BUILD_DIR [BATCHES]}
batches=${2:-16 64}
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
warmup=${GPT_WARMUP:-10}
steps=${GPT_STEPS:-10}
bound=${GPT_TIMEOUT:-90}
budget=${GPT_BUDGET:-240}
device=${GPT_DEVICE:-cuda}
peer_device=${GPT_PEER_DEVICE:-cuda:0}
shape=${GPT_SHAPE:-}
peak=${GPT_PEAK_TFLOPS:-}
goal_rate=400000
if [ ! -x "$build/ctensor" ]; then
    echo "run_gpt_gpu.sh: $build/ctensor not found; build first" >&2
    exit 1
fi
case "$warmup$steps" in *[!0-9]*) echo "run_gpt_gpu.sh: GPT_WARMUP and GPT_STEPS are counts" >&2; exit 2 ;; esac
if [ "$warmup" -lt 1 ] || [ "$steps" -lt 1 ]; then
    echo "run_gpt_gpu.sh: GPT_WARMUP and GPT_STEPS must be at least 1" >&2
    exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
began=$(date +%s)

# Whether the section's time is spent; says so for the run named by $1.
spent() {
    if [ $(($(date +%s) - began)) -ge "$budget" ]; then
        echo "  $1: skipped: the section's budget of $budget s is spent (GPT_BUDGET)"
        return 0
    fi
    return 1
}

# The value after the word $1 on the line of $2 (a file) whose words $3 and $4 are "batch B",
# or "n/a".
field() {
    value=$(awk -v key="$1" -v b="$3" '$1 == "torch" && $4 == "batch" && $5 == b {
        for (i = 1; i < NF; i++) if ($i == key) { print $(i + 1); exit } }' "$2" 2>/dev/null)
    echo "${value:-n/a}"
}

# ctensor BATCH [--nondeterministic]: runs it, its output in $work/ctensor.BATCH[.nd]; prints
# the steady tokens/s (or "n/a", with the run's end on stderr).
ctensor_rate() {
    log="$work/ctensor.$1${2:+.nd}"
    # shellcheck disable=SC2086 # shape is a list of words
    timeout "$bound" "$build/ctensor" train --model gpt2-124m --dataset synthetic --device "$device" \
        --batch-size "$1" --steps $((warmup + steps)) --eval-interval "$warmup" --amp bf16 \
        $shape ${2:+"$2"} > "$log" 2>&1
    code=$?
    # "step K/TOTAL ... R tokens/s": the cumulative rates at the warm-up's end and the last step.
    rate=$(awk -v w="$warmup" -v n=$((warmup + steps)) '
        /^step [0-9]+\/[0-9]+ .* tokens\/s$/ {
            split($2, k, "/"); r = $(NF - 1)
            if (k[1] == w) rw = r
            if (k[1] == n) rn = r }
        END { if (rw > 0 && rn > 0 && n / rn > w / rw) printf "%.0f", (n - w) / (n / rn - w / rw) }' "$log")
    if [ "$code" != 0 ] || [ -z "$rate" ]; then
        echo "  ctensor batch $1${2:+ $2}: exit $code$([ "$code" = 124 ] && echo " (timeout $bound s)"); its end:" >&2
        tail -n 5 "$log" | sed 's/^/    /' >&2
        : > "$work/failed"
        rate=n/a
    fi
    echo "$rate"
}

# 100 x RATE x flops_per_token / peak, or "n/a".
mfu() {
    awk -v r="$1" -v f="$flops" -v p="$peak" 'BEGIN {
        if (r + 0 > 0 && f + 0 > 0 && p + 0 > 0) printf "%.2f%%", 100 * r * f / (p * 1e12)
        else print "n/a" }'
}

card=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
# Whether the tokens/s goal applies: the card is an H200 (not judged on another card).
case "$card" in *H200*) h200=1 ;; *) h200=0 ;; esac
echo "GPT-2 training on $device (${card:-GPU unknown}), --amp bf16, synthetic tokens, AdamW, gradient clipping at 1.0"

# PyTorch first: its line per batch, and the card's peak.
if spent "PyTorch"; then
    : > "$work/torch"
else
    # shellcheck disable=SC2086 # shape is a list of words
    timeout $((bound + 60)) "$python" "$here/peer_torch_gpt_gpu.py" \
        --batches "$(echo "$batches" | tr ' ' ',')" --warmup "$warmup" --steps "$steps" \
        --device "$peer_device" ${peak:+--peak-tflops "$peak"} $shape \
        > "$work/torch" 2> "$work/torch.err" ||
        echo "  PyTorch failed (exit $?): $(tail -n 1 "$work/torch.err")"
    grep "^# " "$work/torch" | sed 's/^# /  /'
fi

# ctensor at each batch, its defaults, then --nondeterministic while the budget lasts.
for batch in $batches; do
    spent "ctensor batch $batch" && { echo n/a > "$work/rate.$batch"; continue; }
    ctensor_rate "$batch" > "$work/rate.$batch"
done
for batch in $batches; do
    spent "ctensor batch $batch --nondeterministic" && { echo n/a > "$work/rate.$batch.nd"; continue; }
    ctensor_rate "$batch" --nondeterministic > "$work/rate.$batch.nd"
done

# The shape and parameters from ctensor's summary ("model gpt2-124m: L layers, H heads, width
# C, context T, vocabulary V; N parameters"), the first run that printed one.
model_line=$(grep -h "^  model  *gpt2-124m:" "$work"/ctensor.* 2>/dev/null | head -n 1)
shape_of() { echo "$model_line" | sed -n "s/.*$1.*/\\1/p"; }
layers=$(shape_of ': \([0-9]*\) layers')
width=$(shape_of 'width \([0-9]*\),')
context=$(shape_of 'context \([0-9]*\),')
params=$(shape_of '; \([0-9]*\) parameters')
flops=$(awk -v n="$params" -v l="$layers" -v c="$width" -v t="$context" 'BEGIN {
    if (n + 0 > 0) printf "%.0f", 6 * n + 6 * l * c * t }')
first=$(echo "$batches" | awk '{ print $1 }')
if [ -z "$peak" ]; then
    for batch in $batches; do
        p=$(field peak_tflops "$work/torch" "$batch")
        [ "$p" != n/a ] && peak=$p && break
    done
fi
torch_params=$(field parameters "$work/torch" "$first")

[ -n "$model_line" ] && echo "$model_line"
echo "tokens/s: the $steps timed steps after $warmup of warm-up, on both sides;" \
     "ctensor's default is deterministic (nd: --nondeterministic)"
echo "MFU: ${flops:-?} FLOPs per token (6N + 6LCT) over ${peak:-an unknown} TFLOP/s (dense bf16)"
[ "$torch_params" != n/a ] && [ -n "$params" ] && [ "$torch_params" != "$params" ] &&
    echo "  NOTE: PyTorch's model has $torch_params parameters, ctensor's $params"
printf '  %-5s %10s %7s %10s %7s %10s %7s %9s %s\n' batch ctensor mfu ctensor_nd mfu torch mfu \
    vs_torch goals
for batch in $batches; do
    ours=$(cat "$work/rate.$batch") nd=$(cat "$work/rate.$batch.nd")
    theirs=$(field tokens_per_s "$work/torch" "$batch")
    # PyTorch's MFU as the peer counts it: its own parameter count, the same peak.
    their_mfu=$(field mfu_pct "$work/torch" "$batch")
    [ "$their_mfu" != n/a ] && their_mfu="$their_mfu%"
    awk -v b="$batch" -v c="$ours" -v cm="$(mfu "$ours")" -v n="$nd" -v nm="$(mfu "$nd")" \
        -v t="$theirs" -v tm="$their_mfu" -v g="$goal_rate" -v h200="$h200" '
        function ratio(a, b) { return a + 0 > 0 && b + 0 > 0 ? sprintf("%.2fx", a / b) : "n/a" }
        BEGIN {
            goals = ">= 1.0x torch " \
                (c + 0 > 0 && t + 0 > 0 ? (c / t >= 1.0 ? "met" : "NOT met") : "not measured")
            if (b == 64 && h200)
                goals = goals "; >= " g " tokens/s (H200) " \
                    (c + 0 > 0 ? (c >= g ? "met" : "NOT met") : "not measured")
            else if (b == 64)
                goals = goals "; >= " g " tokens/s: an H200 goal, not judged on this card"
            printf "  %-5s %10s %7s %10s %7s %10s %7s %9s %s\n", b, c, cm, n, nm, t, tm, ratio(c, t), goals }'
done
for batch in $batches; do
    memory=$(sed -n 's/^  peak memory *//p' "$work/ctensor.$batch" 2>/dev/null)
    theirs=$(field peak_memory_mib "$work/torch" "$batch")
    [ "$theirs" != n/a ] && theirs="$theirs MiB"
    echo "  batch $batch peak memory: ctensor ${memory:-n/a}, PyTorch $theirs"
done
# Where a step's time goes: one --profile run at the first batch, while the budget lasts.
if ! spent "ctensor batch $first --profile"; then
    echo
    echo "ctensor train --model gpt2-124m --amp bf16 --batch-size $first --profile" \
         "($((warmup + steps)) steps, the warm-up in them):"
    # shellcheck disable=SC2086 # shape is a list of words
    timeout "$bound" "$build/ctensor" train --model gpt2-124m --dataset synthetic \
        --device "$device" --batch-size "$first" --steps $((warmup + steps)) \
        --eval-interval $((warmup + steps)) --amp bf16 $shape --profile \
        > "$work/profile" 2>&1 || echo "  (exit $?)"
    sed -n '/^profile /,$p' "$work/profile"
fi
status=0
[ -e "$work/failed" ] && status=1
echo
echo "Run: bench/run_gpt_gpu.sh $build on $(date -u '+%Y-%m-%d %H:%M UTC'), $(($(date +%s) - began)) s"
exit "$status"

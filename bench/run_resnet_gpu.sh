#!/bin/sh
# The ResNet GPU benchmark (issue 34): `ctensor train --model resnet18|resnet20 --dataset
# synthetic --batch-size 512` on cuda beside PyTorch eager at its best
# (bench/peer_torch_resnet_gpu.py: channels-last, cudnn.benchmark, torch.autocast bf16) on the
# same GPU in one run: images/s in f32 and bf16 (--amp bf16), and the ratios against the goals
# (resnet18 >= 1.0x PyTorch, resnet20 >= 1.2x). ctensor runs with its default settings
# (deterministic algorithms) and with --nondeterministic (cuDNN's fastest algorithms, as
# PyTorch's cudnn.benchmark); the goal is judged on the default. Both sides train with SGD,
# momentum 0.9, lr 0.1. Then one `--profile` run per model in bf16 (its table follows).
#
# ctensor's figure is the samples/s of the last of RESNET_EPOCHS epochs (default 2: the first
# is the warm-up, with cuDNN's plans) of RESNET_LIMIT synthetic samples (default 10240: 20
# steps); PyTorch's is RESNET_STEPS timed steps (default 30) after 10 of warm-up. Every run is
# bounded by timeout(1) (RESNET_TIMEOUT seconds, default 90), and once the section has run
# RESNET_BUDGET seconds (default 300) the rows left are skipped, each saying so, so that the
# whole fits in one call of a GPU machine.
#
# Usage: bench/run_resnet_gpu.sh BUILD_DIR [MODELS]       (MODELS: "resnet18 resnet20")
# Environment: PYTHON (python3), RESNET_* above, RESNET_BATCH (default 512; smaller only to
# check the script, e.g. on the fake GPU: not the benchmark). Prints the table (with "NOT met" beside a
# goal that is not) and exits non-zero when a ctensor run failed.
set -u
build=${1:?usage: bench/run_resnet_gpu.sh BUILD_DIR [MODELS]}
models=${2:-resnet18 resnet20}
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
limit=${RESNET_LIMIT:-10240}
epochs=${RESNET_EPOCHS:-2}
steps=${RESNET_STEPS:-30}
bound=${RESNET_TIMEOUT:-90}
budget=${RESNET_BUDGET:-300}
batch=${RESNET_BATCH:-512}
if [ ! -x "$build/ctensor" ]; then
    echo "run_resnet_gpu.sh: $build/ctensor not found; build first" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
began=$(date +%s)
status=0

# Whether the section's time is spent; says so for the row named by $1.
spent() {
    if [ $(($(date +%s) - began)) -ge "$budget" ]; then
        echo "  $1: skipped: the section's budget of $budget s is spent (RESNET_BUDGET)"
        return 0
    fi
    return 1
}

# ctensor MODEL AMP [--nondeterministic]: the last epoch's samples/s, or "n/a" (its output in
# $work/ctensor.MODEL.AMP[.nd]).
ctensor_rate() {
    log="$work/ctensor.$1.$2${3:+.nd}"
    timeout "$bound" "$build/ctensor" train --model "$1" --dataset synthetic --device cuda \
        --batch-size "$batch" --epochs "$epochs" --limit "$limit" --optimizer sgd --lr 0.1 \
        --amp "$2" ${3:+"$3"} > "$log" 2>&1
    code=$?
    rate=$(grep "^epoch $epochs/" "$log" | sed 's/.* \([0-9.]*\) samples\/s.*/\1/')
    if [ "$code" != 0 ] || [ -z "$rate" ]; then
        echo "  ctensor $1 --amp $2 ${3:-}: exit $code$([ "$code" = 124 ] && echo " (timeout $bound s)"); its end:" >&2
        tail -n 5 "$log" | sed 's/^/    /' >&2
        : > "$work/failed" # (a subshell: the status is set at the end)
        rate=n/a
    fi
    echo "$rate"
}

# The PyTorch figure of MODEL VARIANT from $work/torch.MODEL, or "n/a".
torch_rate() {
    rate=$(awk -v v="$2" '$1 == "torch" && $3 == v { print $7 }' "$work/torch.$1")
    echo "${rate:-n/a}"
}

card=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
echo "ResNet training on cuda (${card:-GPU unknown}), batch $batch, synthetic CIFAR shapes (3x32x32, 10 classes), SGD momentum 0.9"
echo "images/s: ctensor the last of $epochs epochs of $limit samples (default: deterministic; nd: --nondeterministic);"
echo "PyTorch $("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo '(not installed)') eager, channels-last, cudnn.benchmark, $steps timed steps (f32: TF32 off; tf32: its default for convolutions; bf16: torch.autocast)"
printf '  %-9s %-5s %10s %10s %10s %10s %9s %9s %s\n' model prec ctensor ctensor_nd torch torch_tf32 \
    vs_torch vs_tf32 goal
for model in $models; do
    goal=1.0
    [ "$model" = resnet20 ] && goal=1.2
    spent "$model" && continue
    timeout $((bound + 60)) "$python" "$here/peer_torch_resnet_gpu.py" "$model" --batch "$batch" \
        --steps "$steps" > "$work/torch.$model" 2> "$work/torch.$model.err" ||
        echo "  PyTorch $model failed: $(tail -n 1 "$work/torch.$model.err")"
    for amp in off bf16; do
        spent "$model $amp" && continue
        ours=$(ctensor_rate "$model" "$amp")
        spent "$model $amp --nondeterministic" && nd=n/a || nd=$(ctensor_rate "$model" "$amp" --nondeterministic)
        if [ "$amp" = off ]; then
            theirs=$(torch_rate "$model" f32) tf32=$(torch_rate "$model" tf32) precision=f32
        else
            theirs=$(torch_rate "$model" bf16) tf32=n/a precision=bf16
        fi
        awk -v m="$model" -v p="$precision" -v c="$ours" -v n="$nd" -v t="$theirs" -v f="$tf32" \
            -v g="$goal" 'function ratio(a, b) { return a + 0 > 0 && b + 0 > 0 ? sprintf("%.2fx", a / b) : "n/a" }
            BEGIN {
                verdict = c + 0 > 0 && t + 0 > 0 ? (c / t >= g ? "met" : "NOT met") : "not measured"
                printf "  %-9s %-5s %10s %10s %10s %10s %9s %9s >= %.1fx %s\n", m, p, c, n, t, f,
                    ratio(c, t), ratio(c, f), g, verdict }'
    done
done
# Where a step's time goes, in bf16 (one epoch: the warm-up's plans are in it).
for model in $models; do
    spent "profile $model" && continue
    echo
    echo "ctensor train --model $model --amp bf16 --profile (one epoch of $((limit / 2)) samples):"
    timeout "$bound" "$build/ctensor" train --model "$model" --dataset synthetic --device cuda \
        --batch-size "$batch" --epochs 1 --limit $((limit / 2)) --optimizer sgd --lr 0.1 \
        --amp bf16 --profile > "$work/profile.$model" 2>&1 ||
        echo "  (exit $?)"
    sed -n '/^profile /,$p' "$work/profile.$model"
done
[ -e "$work/failed" ] && status=1
echo
echo "Run: bench/run_resnet_gpu.sh $build on $(date -u '+%Y-%m-%d %H:%M UTC'), $(($(date +%s) - began)) s"
exit "$status"

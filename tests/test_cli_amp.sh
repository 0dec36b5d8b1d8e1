#!/bin/sh
# Tests of `ctensor train --amp` on a small generated IDX dataset: bf16 and f16 runs learn and
# name their precision in the JSON summary; f16 keeps its loss scaler's state in the
# checkpoint, so a run resumed after epoch 1 ends with the same weights and scaler state as one
# that was not interrupted; a bad value is refused with one line. The runs about the CPU's
# bf16 name --device cpu; the others run on the default device (a GPU where there is one).
# Usage: test_cli_amp.sh CTENSOR WORKDIR
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
need_python
workdir "$2"

mkdir -p "$work/good"
"$python" "$here/make_idx_dataset.py" "$work/good" 512 128 "" || exit 1

for amp in bf16 f16; do
    run "$ctensor" train --dataset "$work/good" --model mlp --epochs 2 --json --seed 3 --amp $amp
    if [ "$code" = 0 ] && "$python" -c 'import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(not (s["precision"] == sys.argv[2] and s["skipped_steps"] >= 0 and s["test_accuracy"] >= 0.5))' \
        "$out" $amp 2>>"$err"
    then pass "test_cli_amp_${amp}_learns"
    else fail "test_cli_amp_${amp}_learns" "exit $code, or not $amp, or accuracy below 0.5"; fi
done

# auto trains in bf16 where `devices` says this CPU's bf16 is faster than f32, else in f32;
# a bf16 run on a CPU whose bf16 is not faster warns so, once, and a fast one does not. Both
# are about the CPU's bf16, so both run on the CPU (the default device is a GPU where there
# is one, whose bf16 is native).
fast=$("$ctensor" devices --json | "$python" -c 'import json, sys
d = [d for d in json.load(sys.stdin)["devices"] if d["device"] == "cpu:0"][0]
print(str(d["fast_bf16"]).lower())')
want=f32 && [ "$fast" = true ] && want=bf16
run "$ctensor" train --dataset "$work/good" --model mlp --epochs 1 --json --amp auto --device cpu
if [ "$code" = 0 ] && grep -q "\"precision\": \"$want\"" "$out"
then pass test_cli_amp_auto_picks_the_faster
else fail test_cli_amp_auto_picks_the_faster "exit $code, or not $want (fast_bf16: $fast)"; fi
run "$ctensor" train --dataset "$work/good" --model mlp --epochs 1 --json --amp bf16 --device cpu
warnings=$(grep -c "slower than f32 here" "$err")
if [ "$code" = 0 ] && { { [ "$fast" = true ] && [ "$warnings" = 0 ]; } ||
    { [ "$fast" = false ] && [ "$warnings" = 1 ]; }; }
then pass test_cli_amp_bf16_warns_where_slower
else fail test_cli_amp_bf16_warns_where_slower "exit $code, $warnings warnings (fast_bf16: $fast)"; fi

run "$ctensor" train --dataset "$work/good" --model mlp --epochs 1 --json --amp off
if [ "$code" = 0 ] && grep -q '"precision": "f32", "skipped_steps": 0' "$out"
then pass test_cli_amp_off_is_f32
else fail test_cli_amp_off_is_f32 "exit $code, or no f32 precision"; fi

# f16 interrupted after epoch 1 and resumed: the same checkpoint, scaler state included.
common="--dataset $work/good --model cnn --batch-size 64 --seed 5 --limit 256 --amp f16"
run "$ctensor" train $common --epochs 2 --checkpoint "$work/whole.safetensors"
whole=$code
run "$ctensor" train $common --epochs 1 --checkpoint "$work/resumed.safetensors"
first=$code
run "$ctensor" train $common --epochs 2 --checkpoint "$work/resumed.safetensors" --resume
if [ "$whole$first$code" = 000 ] && cmp -s "$work/whole.safetensors" "$work/resumed.safetensors" &&
    "$python" -c 'import json, struct, sys
f = open(sys.argv[1], "rb")
n = struct.unpack("<Q", f.read(8))[0]
meta = json.loads(f.read(n))["__metadata__"]
sys.exit(not (float(meta["amp_scale"]) > 0 and int(meta["amp_growth_tracker"]) >= 0))' \
        "$work/whole.safetensors" 2>>"$err"
then pass test_cli_amp_f16_resume_keeps_the_scaler
else fail test_cli_amp_f16_resume_keeps_the_scaler "exits $whole $first $code, checkpoints differ, or no scaler state"; fi

run "$ctensor" train --dataset "$work/good" --amp f8
if [ "$code" = 2 ] && [ "$(wc -l <"$err")" = 1 ] && grep -qF "off, bf16, f16 or auto" "$err"
then pass test_cli_amp_bad_value_refused
else fail test_cli_amp_bad_value_refused "exit $code"; fi

finish

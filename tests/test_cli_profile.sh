#!/bin/sh
# `ctensor train --profile` (ctensor/profile.h) on a small generated IDX dataset, on the CPU
# and on the fake GPU with the CPU's kernels: the profile's kernel kinds and their counts per
# step, its phases adding up to the training time, the text table and the JSON member; the
# same for a GPT's training steps. (That no training step reads from the device is
# test_cli_train_device_reads_on_a_gpu's.)
# Usage: test_cli_profile.sh CTENSOR WORKDIR [FAKE_GPU_PLUGIN]
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
fake_gpu=${3:-}
need_python
workdir "$2"
mkdir -p "$work/data"
"$python" "$here/make_idx_dataset.py" "$work/data" 1024 128 || exit 1

# The CNN's kernels per step, by kind: two convolutions forward and two backward (the first
# layer's input needs no gradient), its products (two linear layers forward, four backward),
# the loss forward and backward, one fused Adam update; the same on every device.
check_cnn_profile() { # NAME DEVICE_TIMED
    if [ "$code" = 0 ] && "$python" - "$out" "$2" <<'PY' 2>"$err"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["profile"]
steps = p["steps"]
assert steps == 1024 // 64, steps
assert p["device_timed"] == (sys.argv[2] == "true"), p["device_timed"]
kinds = p["kinds"]
for kind, per_step in {"conv": 4, "matmul": 6, "loss": 2, "optimizer_update": 1}.items():
    assert kinds[kind]["calls"] == per_step * steps, (kind, kinds[kind]["calls"])
phases = p["phases"]
assert phases["forward"]["kinds"]["conv"]["calls"] == 2 * steps
assert phases["backward"]["kinds"]["conv"]["calls"] == 2 * steps
assert phases["optimizer"]["kinds"]["optimizer_update"]["calls"] == steps
assert "conv" not in phases["optimizer"]["kinds"] and "conv" not in phases["data_wait"]["kinds"]
# The phases add up to the profile's time, which is the training time (both clocks start
# and stop within a few statements of each other).
total = sum(phase["seconds"] for phase in phases.values())
assert abs(total - p["seconds"]) <= 1e-6 * max(1.0, p["seconds"]) + 1e-5, (total, p["seconds"])
assert abs(p["seconds"] - s["seconds"]) <= 0.05 * s["seconds"] + 0.02, (p["seconds"], s["seconds"])
for phase in phases.values():
    assert phase["kernels"]["host_seconds"] <= phase["seconds"] + 1e-4
for kind in kinds.values():
    assert 0 <= kind["host_seconds"] and 0 <= kind["device_seconds"]
PY
    then pass "$1"
    else fail "$1" "exit $code, or the profile is not as expected"; fi
}

run "$ctensor" train --dataset "$work/data" --model cnn --epochs 1 --batch-size 64 --device cpu \
    --json --profile
check_cnn_profile test_cli_profile_cnn_cpu false

run "$ctensor" train --dataset "$work/data" --model cnn --epochs 1 --batch-size 64 --device cpu \
    --json
if [ "$code" = 0 ] && grep -q '"profile": null' "$out"; then pass test_cli_profile_off_is_null
else fail test_cli_profile_off_is_null "exit $code, or no \"profile\": null"; fi

# As text: the table after the summary, a row per phase and per kind that ran.
run "$ctensor" train --dataset "$work/data" --model mlp --epochs 1 --limit 256 --batch-size 64 \
    --device cpu --profile
holds test_cli_profile_text_table "profile         4 steps" "kernel kind" "forward" "backward" \
    "optimizer" "data wait" "matmul" "optimizer update"

if [ -z "$fake_gpu" ]; then
    skip test_cli_profile_cnn_fake_gpu "no fake GPU plugin given"
else
    run env CT_CUDA_PLUGIN="$fake_gpu" "$ctensor" train --dataset "$work/data" --model cnn \
        --epochs 1 --batch-size 64 --device cuda --json --profile
    check_cnn_profile test_cli_profile_cnn_fake_gpu true
fi

# A GPT: the profile covers its training steps (not the evaluations between them), with the
# same phases and kinds: products forward and backward, the AdamW update in the optimiser's
# phase only, the phases adding up to the profile's time and that to the training time.
text="$work/text.txt"
awk 'BEGIN { srand(1); split("the cat sat on a mat and dog ran to house red blue", w, " ");
             for (i = 0; i < 3000; i++) printf "%s ", w[int(rand() * 13) + 1]; print "" }' > "$text"
gpt="--model gpt --layers 1 --heads 2 --width 32 --context 16 --batch-size 4 --dataset $text
    --steps 6 --eval-interval 3"
check_gpt_profile() { # NAME DEVICE_TIMED
    if [ "$code" = 0 ] && "$python" - "$out" "$2" <<'PY' 2>"$err"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["profile"]
assert p["steps"] == 6 == s["steps_run"], p["steps"]
assert p["device_timed"] == (sys.argv[2] == "true"), p["device_timed"]
phases = p["phases"]
for phase in ("forward", "backward"):
    assert phases[phase]["kinds"]["matmul"]["calls"] >= 6 * 4, (phase, phases[phase]["kinds"])
    assert "optimizer_update" not in phases[phase]["kinds"], phase
assert phases["optimizer"]["kinds"]["optimizer_update"]["calls"] >= 6
assert "matmul" not in phases["data_wait"]["kinds"]
total = sum(phase["seconds"] for phase in phases.values())
assert abs(total - p["seconds"]) <= 1e-6 * max(1.0, p["seconds"]) + 1e-5, (total, p["seconds"])
assert abs(p["seconds"] - s["seconds"]) <= 0.05 * s["seconds"] + 0.02, (p["seconds"], s["seconds"])
PY
    then pass "$1"
    else fail "$1" "exit $code, or the profile is not as expected"; fi
}

# shellcheck disable=SC2086
run "$ctensor" train $gpt --device cpu --json --profile
check_gpt_profile test_cli_profile_gpt_cpu false

# shellcheck disable=SC2086
run "$ctensor" train $gpt --device cpu
if [ "$code" = 0 ] && ! grep -q "kernel kind" "$out"; then pass test_cli_profile_gpt_off
else fail test_cli_profile_gpt_off "exit $code, or a profile printed without --profile"; fi

# shellcheck disable=SC2086
run "$ctensor" train $gpt --device cpu --profile
holds test_cli_profile_gpt_text_table "profile         6 steps" "kernel kind" "forward" \
    "backward" "optimizer" "matmul" "optimizer update" "validation    loss"

if [ -z "$fake_gpu" ]; then
    skip test_cli_profile_gpt_fake_gpu "no fake GPU plugin given"
else
    # shellcheck disable=SC2086
    run env CT_CUDA_PLUGIN="$fake_gpu" "$ctensor" train $gpt --device cuda --json --profile
    check_gpt_profile test_cli_profile_gpt_fake_gpu true
fi

finish

#!/bin/sh
# Tests of `ctensor train` as a user runs it, on small generated IDX datasets: training and
# its JSON summary, reproducibility (the same seed twice, and resumed from a checkpoint: the
# same final weights by sha256, the MLP and the CNN, on the CPU and on the GPU), bad input (one
# clear line on stderr and a non-zero exit, never a crash), and memory limits with
# --batch-size auto, and training on a GPU (the fake GPU with the CPU's kernels, when its
# plugin is given) to the same weights as on the CPU. Each run names its device: "auto" would
# be cuda:0 on a machine with a GPU.
# Usage: test_cli_train.sh CTENSOR WORKDIR [FAKE_GPU_PLUGIN]
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
fake_gpu=${3:-}
need_python
workdir "$2"

# dataset NAME TRAIN TEST [BAD]: a folder of the four IDX files.
dataset() {
    mkdir -p "$work/$1"
    "$python" "$here/make_idx_dataset.py" "$work/$1" "$2" "$3" "${4:-}" || exit 1
}

dataset good 512 128
run "$ctensor" train --dataset "$work/good" --model mlp --epochs 2 --json --seed 3 --device cpu
accuracy=$(sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$out")
if [ "$code" = 0 ] && grep -q '"epochs": 2' "$out" && awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.5) }'
then pass "test_cli_train_learns_json (test accuracy $accuracy)"
else fail test_cli_train_learns_json "exit $code, test accuracy \"$accuracy\""; fi
# The summary is one JSON object, and the time spent waiting for batches lies within the
# training time.
if "$python" -c 'import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(not 0 <= s["data_wait_seconds"] <= s["seconds"])' "$out" 2>"$err"
then pass test_cli_train_json_data_wait
else fail test_cli_train_json_data_wait "not one JSON object, or data_wait_seconds outside [0, seconds]"; fi

# A run that diverges (SGD at lr 900: the loss is NaN) still writes strict JSON: null.
run "$ctensor" train --dataset "$work/good" --model mlp --epochs 1 --optimizer sgd --lr 900 --json \
    --device cpu
if [ "$code" = 0 ] && "$python" -c 'import json, sys
def refuse(name): raise ValueError(name)
s = json.load(open(sys.argv[1]), parse_constant=refuse)
assert s["final_loss"] is None' "$out" 2>/dev/null
then pass test_cli_train_json_diverged_loss_is_null
else fail test_cli_train_json_diverged_loss_is_null "exit $code, or the JSON is not strict or its final_loss not null"; fi

# As text, the diverged run says nan (not printf's "-nan") and what to try.
run "$ctensor" train --dataset "$work/good" --model mlp --epochs 1 --optimizer sgd --lr 900 \
    --device cpu
if [ "$code" = 0 ] && grep -q "^epoch 1/1  loss nan " "$out" && ! grep -q -- "-nan" "$out" &&
    grep -qF "final loss    nan: training diverged; try a lower --lr (this run: 900)" "$out"
then pass test_cli_train_text_diverged_loss_hint
else fail test_cli_train_text_diverged_loss_hint "exit $code, no \"loss nan\" line with the --lr hint"; fi

# As text (not a terminal): a line per epoch, then the summary with every line the issue asks.
run "$ctensor" train --dataset "$work/good" --model mlp --epochs 1 --seed 3 --device cpu
holds test_cli_train_text_summary "epoch 1/1" "test accuracy" "samples/s" "device" \
    "waiting for the next batch" "peak memory" "transfers" "algorithms    deterministic"

# Deterministic by default, and --json says so; --nondeterministic says not.
run "$ctensor" train --dataset "$work/good" --model mlp --epochs 1 --limit 128 --device cpu --json
default=$code
grep -q '"deterministic": true' "$out"
default_says=$?
run "$ctensor" train --dataset "$work/good" --model mlp --epochs 1 --limit 128 --device cpu --json \
    --nondeterministic
if [ "$default$default_says$code" = 000 ] && grep -q '"deterministic": false' "$out"
then pass test_cli_train_json_deterministic
else fail test_cli_train_json_deterministic "exits $default $code, or \"deterministic\" not true then false"; fi

# Reproducible: on each device (the CPU; the fake GPU when its plugin is given), for the MLP,
# the CNN and ResNet-20, two runs with the same seed end with the same checkpoint (sha256),
# and one interrupted after epoch 1 and resumed ends with it too. ResNet-20 without its
# one-cycle schedule there: a run of 1 epoch has another schedule than one of 2 (as
# PyTorch's OneCycleLR, which counts the run's steps).
sha() { sha256sum "$1" | cut -d' ' -f1; }
# reproducible MODEL DEVICE [ENV...]
reproducible() {
    model=$1 device=$2
    shift 2
    tag="${model}_${device}"
    common="--dataset $work/good --model $model --batch-size 64 --seed 5 --workers 2 --limit 256 --device $device"
    [ "$model" = resnet20 ] && common="$common --schedule none"
    run env "$@" "$ctensor" train $common --epochs 2 --checkpoint "$work/$tag-a.safetensors"
    a=$code
    run env "$@" "$ctensor" train $common --epochs 2 --checkpoint "$work/$tag-b.safetensors"
    b=$code
    if [ "$a$b" = 00 ] && grep -q "${device}:0" "$out" &&
        [ "$(sha "$work/$tag-a.safetensors")" = "$(sha "$work/$tag-b.safetensors")" ]
    then pass "test_cli_train_same_seed_same_weights_$tag"
    else fail "test_cli_train_same_seed_same_weights_$tag" "exits $a $b, not on ${device}:0, or other sha256"; fi

    run env "$@" "$ctensor" train $common --epochs 1 --checkpoint "$work/$tag-r.safetensors"
    first=$code
    run env "$@" "$ctensor" train $common --epochs 2 --checkpoint "$work/$tag-r.safetensors" --resume
    if [ "$first$code" = 00 ] &&
        [ "$(sha "$work/$tag-a.safetensors")" = "$(sha "$work/$tag-r.safetensors")" ]
    then pass "test_cli_train_resume_same_weights_$tag"
    else fail "test_cli_train_resume_same_weights_$tag" "exits $first $code, or other sha256 than uninterrupted"; fi
}
for model in mlp cnn resnet20; do
    reproducible $model cpu
    if [ -z "$fake_gpu" ]; then
        for name in same_seed_same_weights resume_same_weights; do
            echo "SKIP test_cli_train_${name}_${model}_cuda: no fake GPU plugin given"
            skipped=$((skipped + 1))
        done
    else
        reproducible $model cuda CT_CUDA_PLUGIN="$fake_gpu"
    fi
done

# ResNet-20's checkpoint loads into PyTorch's model of the same layers (bench/peer_torch_train.py's
# ResNet, the usual CIFAR ResNet code) by its state-dict names, strictly: every tensor there,
# of its shape.
if "$python" -c "import torch, safetensors.torch" 2>/dev/null; then
    if "$python" - "$here/../bench" "$work/resnet20_cpu-a.safetensors" >"$out" 2>"$err" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import safetensors.torch
import peer_torch_train as peer
saved = safetensors.torch.load_file(sys.argv[2])
model = peer.ResNet(1, 10, [16, 32, 64], [3, 3, 3])
model.load_state_dict({k: saved[k] for k in model.state_dict()}, strict=True)
print("loaded", len(model.state_dict()))
PY
    then pass test_cli_train_resnet20_checkpoint_loads_in_pytorch
    else fail test_cli_train_resnet20_checkpoint_loads_in_pytorch "PyTorch's ResNet did not load it"; fi
else
    echo "SKIP test_cli_train_resnet20_checkpoint_loads_in_pytorch: PyTorch with safetensors is not importable by $python"
    skipped=$((skipped + 1))
fi

# On a GPU (the fake one: the CPU's kernels behind the GPU's paths: 2 loader workers, pinned
# batches copied to the device, the model and optimiser state there): the same weights, and
# the host reads from the device three times an epoch (the running loss and hits, then the
# test set's hits): nothing per training step (the loss does not read its check of the
# targets back: the labels were checked when loaded), nothing per test batch and nothing else
# hidden.
if [ -z "$fake_gpu" ]; then
    for name in same_weights device_reads; do
        echo "SKIP test_cli_train_${name}_on_a_gpu: no fake GPU plugin given"
        skipped=$((skipped + 1))
    done
else
    # (the CNN's uninterrupted runs of the reproducibility tests above, on each device)
    if [ -f "$work/cnn_cpu-a.safetensors" ] && [ -f "$work/cnn_cuda-a.safetensors" ] &&
        cmp -s "$work/cnn_cpu-a.safetensors" "$work/cnn_cuda-a.safetensors"
    then pass test_cli_train_same_weights_on_a_gpu
    else fail test_cli_train_same_weights_on_a_gpu "the CNN's checkpoints on cpu and cuda are missing or differ"; fi

    run env CT_CUDA_PLUGIN="$fake_gpu" "$ctensor" train --dataset "$work/good" --model mlp \
        --batch-size 64 --limit 256 --epochs 2 --device cuda --json
    if [ "$code" = 0 ] && "$python" -c 'import json, math, sys
s = json.load(open(sys.argv[1]))
steps = math.ceil(s["train_samples"] / s["batch_size"])
sys.exit(steps < 2 or s["transfers"]["device_to_host"]["count"] != s["epochs"] * 3)' "$out" 2>>"$err"
    then pass test_cli_train_device_reads_on_a_gpu
    else fail test_cli_train_device_reads_on_a_gpu "exit $code, or not three reads an epoch and none a step"; fi
fi

# A checkpoint folder that does not exist: refused before training, not after an epoch.
refused test_cli_train_checkpoint_folder_missing "its folder $work/missing cannot take" \
    "$ctensor" train --dataset "$work/good" --model mlp --epochs 1 --device cpu \
    --checkpoint "$work/missing/model.safetensors"
if grep -q "^epoch" "$out"; then
    fail test_cli_train_checkpoint_refused_before_training "an epoch ran first"
else pass test_cli_train_checkpoint_refused_before_training; fi

dataset labels 64 16 labels
dataset magic 64 16 magic
dataset truncated 64 16 truncated
dataset huge 64 16 huge
refused test_cli_train_missing_dataset "$work/absent" "$ctensor" train --dataset "$work/absent"
refused test_cli_train_labels_out_of_range "label" "$ctensor" train --dataset "$work/labels"
refused test_cli_train_bad_magic "train-labels-idx1-ubyte.gz" "$ctensor" train --dataset "$work/magic"
refused test_cli_train_truncated "train-images-idx3-ubyte.gz" "$ctensor" train --dataset "$work/truncated"
refused test_cli_train_huge_header "train-images-idx3-ubyte.gz" "$ctensor" train --dataset "$work/huge"
refused test_cli_train_unknown_model '"resnet"' "$ctensor" train --model resnet
refused test_cli_train_unknown_device '"tpu:0"' "$ctensor" train --device tpu:0
refused test_cli_train_negative_batch '"-5"' "$ctensor" train --batch-size -5
refused test_cli_train_non_numeric '"abc"' "$ctensor" train --epochs abc
refused test_cli_train_lr_not_a_number '"fast"' "$ctensor" train --lr fast
refused test_cli_train_lr_nan '"nan": expected a number > 0 and < 1000' "$ctensor" train --lr nan
refused test_cli_train_resume_needs_checkpoint "--checkpoint" "$ctensor" train --resume
refused test_cli_train_momentum_needs_sgd "--momentum and --nesterov are SGD's" \
    "$ctensor" train --optimizer adam --momentum 0.5
refused test_cli_train_nesterov_needs_momentum "--nesterov" \
    "$ctensor" train --optimizer sgd --momentum 0 --nesterov
refused test_cli_train_unknown_schedule '"linear": expected none, onecycle or cosine' \
    "$ctensor" train --schedule linear
refused test_cli_train_warmup_needs_cosine "--schedule cosine" \
    "$ctensor" train --model resnet20 --warmup-epochs 1
refused test_cli_train_warmup_too_long "shorter than --epochs (2)" \
    "$ctensor" train --schedule cosine --warmup-epochs 2 --epochs 2
refused test_cli_train_label_smoothing_range '"1": expected a number >= 0 and < 1' \
    "$ctensor" train --label-smoothing 1
refused test_cli_train_weight_decay_negative '"-0.1"' "$ctensor" train --weight-decay -0.1

# ResNet-20 on 28x28 gray images with the whole recipe: it trains, and its summary names it
# (272,186 parameters for one input channel).
run "$ctensor" train --dataset "$work/good" --model resnet20 --epochs 2 --limit 128 \
    --batch-size 32 --device cpu --json --nesterov --no-decay-norm-bias --label-smoothing 0.1 \
    --schedule cosine --warmup-epochs 1
if [ "$code" = 0 ] && grep -q '"model": "resnet20"' "$out" && grep -q '"parameters": 272186' "$out" &&
    grep -q '"optimizer": "sgd"' "$out"
then pass test_cli_train_resnet20_recipe
else fail test_cli_train_resnet20_recipe "exit $code, or not resnet20 with 272186 parameters and sgd"; fi
printf 'not a safetensors file' >"$work/junk.safetensors"
refused test_cli_train_corrupt_checkpoint "junk.safetensors" \
    "$ctensor" train --dataset "$work/good" --model mlp --device cpu \
    --checkpoint "$work/junk.safetensors" --resume

# A memory limit too small for the batch: the out-of-memory error; auto finds one that fits.
# On the CPU, whose limit it is (auto would pick a GPU where there is one).
# (a test set of 1024: evaluation in batches larger than the training batch would not fit)
dataset big 4096 1024
refused test_cli_train_memory_limit "out of memory" \
    env CT_MEMORY_LIMIT=cpu=48MiB "$ctensor" train --dataset "$work/big" --batch-size 4096 --epochs 1 \
    --device cpu
if grep -qF -- "; --batch-size auto finds the largest batch that fits" "$err"; then
    pass test_cli_train_memory_limit_names_auto
else fail test_cli_train_memory_limit_names_auto "the line does not point to --batch-size auto"; fi
# A limit too small for the batch itself: the loader cannot make it, and training fails
# (it once ran an epoch of no steps and exited 0).
refused test_cli_train_memory_limit_below_a_batch "out of memory" \
    env CT_MEMORY_LIMIT=cpu=8MiB "$ctensor" train --dataset "$work/big" --model mlp \
    --batch-size 4096 --epochs 1 --device cpu
# The limit holds on each logical device of --devices too (it once limited none of them).
# The replicas fail alike, and the line is printed once (it was once per replica).
run env CT_MEMORY_LIMIT=cpu=8MiB "$ctensor" train --dataset "$work/big" --model mlp \
    --batch-size 4096 --epochs 1 --devices cpu:0,cpu:1
if [ "$code" = 0 ] || [ "$code" -gt 125 ]; then
    fail test_cli_train_memory_limit_logical_devices "exit status $code"
elif ! grep -q "out of memory on cpu:[01]: .*limit 8.00 MiB" "$err" ||
    grep -qv "out of memory" "$err"; then
    fail test_cli_train_memory_limit_logical_devices "not only out-of-memory lines on stderr"
else pass test_cli_train_memory_limit_logical_devices; fi
if [ "$(wc -l <"$err")" = 1 ]; then pass test_cli_train_replicas_failing_alike_say_it_once
else fail test_cli_train_replicas_failing_alike_say_it_once "$(wc -l <"$err") lines on stderr, expected 1"; fi
# One replica out of memory (cpu:1's limit only): the other stops at once with it, not at the
# collective's deadline (60 s here), and the line names cpu:1.
started=$(date +%s)
run env CT_COMM_TIMEOUT=60 CT_MEMORY_LIMIT=cpu:1=8MiB "$ctensor" train --dataset "$work/big" \
    --model mlp --batch-size 4096 --epochs 1 --devices cpu:0,cpu:1
took=$(($(date +%s) - started))
if [ "$code" = 1 ] && [ "$took" -lt 30 ] && grep -q "out of memory on cpu:1" "$err"
then pass test_cli_train_one_replica_failing_stops_the_others
else fail test_cli_train_one_replica_failing_stops_the_others "exit $code after $took s"; fi
# A dataset every replica fails to read: one line too.
refused test_cli_train_replicas_missing_dataset_once "$work/absent: no such file or folder" \
    "$ctensor" train --dataset "$work/absent" --model mlp --devices cpu:0,cpu:1
# (on the first 1024 samples, to keep the run short: auto starts from 1024 then)
run env CT_MEMORY_LIMIT=cpu=48MiB "$ctensor" train --dataset "$work/big" --batch-size auto --device cpu \
    --epochs 1 --limit 1024 --json
batch=$(sed -n 's/.*"batch_size": \([0-9]*\).*/\1/p' "$out")
if [ "$code" = 0 ] && [ -n "$batch" ] && [ "$batch" -lt 1024 ] && [ "$batch" -ge 1 ]
then pass "test_cli_train_batch_size_auto (batch $batch)"
else fail test_cli_train_batch_size_auto "exit $code, batch \"$batch\""; fi

finish

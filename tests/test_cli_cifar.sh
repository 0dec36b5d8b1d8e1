#!/bin/sh
# Tests of `ctensor train`'s image datasets beyond 28x28: `--dataset cifar10 DIR` on a small
# folder in CIFAR-10's binary format written here (a ResNet trains an epoch on it; hostile
# folders are one clear line naming the file), `--dataset synthetic` (made on the device: on
# the fake GPU, no dataset crosses from the host), --augment (the same weights whatever the
# loader's workers), and the options' checks.
# Usage: test_cli_cifar.sh CTENSOR WORKDIR [FAKE_GPU_PLUGIN]
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
fake_gpu=${3:-}
need_python
workdir "$2"

# json FIELD: a number of the JSON summary in $out.
json() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$out"; }

# cifar NAME PER_FILE TEST: a CIFAR-10 folder.
cifar() {
    mkdir -p "$work/$1"
    "$python" "$here/make_cifar_dataset.py" "$work/$1" "$2" "$3" || exit 1
}
cifar good 40 50

# An epoch of a ResNet on it (the models that take 3x32x32 images), augmented by default.
if "$ctensor" train --help | grep -q resnet20; then
    run "$ctensor" train --dataset cifar10 "$work/good" --model resnet20 --epochs 1 --batch-size 50 \
        --device cpu --json
    if [ "$code" = 0 ] && [ "$(json train_samples)" = 200 ] && [ "$(json test_samples)" = 50 ]
    then pass test_cli_cifar_resnet20_trains_an_epoch
    else fail test_cli_cifar_resnet20_trains_an_epoch "exit $code, or not 200 training and 50 test samples"; fi
else
    skip test_cli_cifar_resnet20_trains_an_epoch "this ctensor has no --model resnet20"
fi

# 28x28 images (a folder of IDX files) are zero-padded to 32x32 for a ResNet.
mkdir -p "$work/idx"
"$python" "$here/make_idx_dataset.py" "$work/idx" 256 64 "" || exit 1
if "$ctensor" train --help | grep -q resnet20; then
    run "$ctensor" train --dataset "$work/idx" --model resnet20 --epochs 1 --limit 64 --batch-size 32 \
        --device cpu --json
    if [ "$code" = 0 ] && [ "$(json train_samples)" = 64 ] && [ "$(json test_samples)" = 64 ]
    then pass test_cli_cifar_resnet20_on_28x28_padded
    else fail test_cli_cifar_resnet20_on_28x28_padded "exit $code, or not 64 training and 64 test samples"; fi
else
    skip test_cli_cifar_resnet20_on_28x28_padded "this ctensor has no --model resnet20"
fi

# The MLP and the CNN take 1x28x28: CIFAR-10's images are read, then refused by shape.
refused test_cli_cifar_cnn_refuses_3x32x32 "images are 3x32x32, but --model cnn takes 1x28x28" \
    "$ctensor" train --dataset cifar10 "$work/good" --model cnn --device cpu

# Hostile folders: the file and the problem on one line.
cifar truncated 40 50
head -c 100000 "$work/truncated/data_batch_3.bin" >"$work/cut" && mv "$work/cut" "$work/truncated/data_batch_3.bin"
refused test_cli_cifar_truncated_file "data_batch_3.bin: byte 98336: truncated or not CIFAR-10" \
    "$ctensor" train --dataset cifar10 "$work/truncated" --model mlp --device cpu
cifar missing 40 50
rm "$work/missing/test_batch.bin"
refused test_cli_cifar_missing_file "test_batch.bin not found" \
    "$ctensor" train --dataset cifar10 "$work/missing" --model mlp --device cpu
cifar label 40 50
printf '\014' | dd of="$work/label/data_batch_2.bin" bs=1 seek=3073 conv=notrunc 2>/dev/null
refused test_cli_cifar_label_out_of_range "data_batch_2.bin: byte 3073: label 12 of record 1" \
    "$ctensor" train --dataset cifar10 "$work/label" --model mlp --device cpu
refused test_cli_cifar_folder_named_alone "give it as --dataset cifar10 DIR" \
    "$ctensor" train --dataset "$work/good" --model mlp --device cpu
refused test_cli_cifar_needs_its_folder "--dataset cifar10 DIR" \
    "$ctensor" train --dataset cifar10 --model mlp

# Synthetic data: the model's shape, --synthetic-size samples and a fifth for the test.
run "$ctensor" train --dataset synthetic --synthetic-size 256 --model mlp --epochs 1 --device cpu --json
if [ "$code" = 0 ] && [ "$(json train_samples)" = 256 ] && [ "$(json test_samples)" = 52 ]
then pass test_cli_cifar_synthetic_sizes
else fail test_cli_cifar_synthetic_sizes "exit $code, or not 256 training and 52 test samples"; fi
# --limit takes the first N of them, as of a file's (the GPU benchmark's epochs rely on it).
run "$ctensor" train --dataset synthetic --synthetic-size 256 --limit 96 --model mlp --epochs 1 \
    --device cpu --json
if [ "$code" = 0 ] && [ "$(json train_samples)" = 96 ] && [ "$(json test_samples)" = 52 ]
then pass test_cli_cifar_synthetic_limit
else fail test_cli_cifar_synthetic_limit "exit $code, or not 96 training and 52 test samples"; fi
# Made on the device: on the (fake) GPU nothing crosses from the host while the epochs run
# (a loader would copy every batch).
if [ -z "$fake_gpu" ]; then
    skip test_cli_cifar_synthetic_made_on_the_device "no fake GPU plugin given"
else
    run env CT_CUDA_PLUGIN="$fake_gpu" "$ctensor" train --dataset synthetic --synthetic-size 320 \
        --model mlp --epochs 1 --device cuda --json
    if [ "$code" = 0 ] && "$python" -c 'import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(s["transfers"]["host_to_device"]["count"] != 0)' "$out" 2>>"$err"
    then pass test_cli_cifar_synthetic_made_on_the_device
    else fail test_cli_cifar_synthetic_made_on_the_device "exit $code, or copies to the device"; fi
fi

# --augment on 28x28 images (a folder of IDX files): the same weights with 0 and 2 workers,
# other weights than without it.
common="--dataset $work/idx --model mlp --epochs 1 --batch-size 64 --seed 4 --device cpu"
for variant in "augment --workers 0" "augment --workers 2" "no-augment --workers 2"; do
    tag=$(echo "$variant" | tr -d ' -')
    run "$ctensor" train $common --$variant --checkpoint "$work/$tag.safetensors"
    [ "$code" = 0 ] || fail "test_cli_cifar_augment_$tag" "exit $code"
done
if cmp -s "$work/augmentworkers0.safetensors" "$work/augmentworkers2.safetensors" &&
    ! cmp -s "$work/augmentworkers2.safetensors" "$work/noaugmentworkers2.safetensors"
then pass test_cli_cifar_augment_same_whatever_the_workers
else fail test_cli_cifar_augment_same_whatever_the_workers "weights differ with the workers, or not from --no-augment"; fi

refused test_cli_cifar_synthetic_size_needs_synthetic "only --dataset synthetic takes it" \
    "$ctensor" train --synthetic-size 10
refused test_cli_cifar_synthetic_not_augmented "is not augmented" \
    "$ctensor" train --dataset synthetic --augment
refused test_cli_cifar_augment_once "give one of them" "$ctensor" train --augment --no-augment

finish

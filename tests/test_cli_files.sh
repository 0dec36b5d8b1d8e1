#!/bin/sh
# `ctensor train` against what a user's filesystem, a kill and a resume do: FIFOs as every
# input (an error at once, never a hang: every run here is under `timeout`), a link to a
# device and a FIFO as the checkpoint (left alone), a symbolic link as the checkpoint
# (written through), SIGKILL at random moments (a valid checkpoint, and after the next save
# no temporary file), SIGINT and SIGTERM mid-epoch (the summary of what was done, exit
# 130/143), --resume at or past --epochs (the loaded model evaluated, no unmeasured
# figure), checkpoints that lack optimiser state, hold extra tensors or NaN weights, or a
# tensor of another shape (both shapes shown whole)
# (refused by name, or loaded with --resume-weights-only), unclear messages, an absurd
# OMP_NUM_THREADS, and the command under valgrind and the dynamic loader.
# Usage: test_cli_files.sh CTENSOR WORKDIR
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
need_python
workdir "$2"
limit=60 # seconds any one run may take; a run that hangs fails with status 124

run() {
    timeout -k 5 "$limit" "$@" >"$out" 2>"$err"
    code=$?
}
# refused (tests/lib.sh) takes neither the timeout's 124 nor its own failure's 125.
refused_max=123

# json_field NAME: the value of "NAME" in the JSON summary in $out.
json_field() { "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$out" "$1"; }

mkdir -p "$work/good"
"$python" "$here/make_idx_dataset.py" "$work/good" 512 128 || exit 1
train="$ctensor train --dataset $work/good --model mlp --batch-size 64 --limit 256 --seed 1"

# ---- FIFOs as inputs: an error naming the FIFO, at once.
mkfifo "$work/fifo.npy" "$work/labels-fifo.npy" "$work/fifo.safetensors"
"$python" -c 'import numpy as np, sys
np.save(sys.argv[1], np.zeros((20, 28, 28), np.uint8)); np.save(sys.argv[2], np.zeros(20, np.int64))' \
    "$work/images.npy" "$work/labels.npy"
refused test_cli_files_fifo_dataset "fifo.npy is a pipe (FIFO)" \
    $ctensor train --dataset "$work/fifo.npy" --labels "$work/labels.npy"
refused test_cli_files_fifo_labels "labels-fifo.npy is a pipe (FIFO)" \
    $ctensor train --dataset "$work/images.npy" --labels "$work/labels-fifo.npy"
mkdir -p "$work/fifo-member"
cp "$work/good/"* "$work/fifo-member/"
rm "$work/fifo-member/t10k-labels-idx1-ubyte.gz"
mkfifo "$work/fifo-member/t10k-labels-idx1-ubyte"
refused test_cli_files_fifo_in_dataset_folder "t10k-labels-idx1-ubyte is a pipe (FIFO)" \
    $ctensor train --dataset "$work/fifo-member"
refused test_cli_files_fifo_checkpoint_resume "fifo.safetensors is a pipe (FIFO)" \
    $train --checkpoint "$work/fifo.safetensors" --resume

# ---- Checkpoint paths that are not regular files: refused before training, left alone.
refused test_cli_files_fifo_checkpoint "is a pipe (FIFO), not a regular file" \
    $train --checkpoint "$work/fifo.safetensors"
if [ -p "$work/fifo.safetensors" ] && ! grep -q "^epoch" "$out"; then pass test_cli_files_fifo_checkpoint_kept
else fail test_cli_files_fifo_checkpoint_kept "the FIFO was replaced, or an epoch ran first"; fi
ln -s /dev/null "$work/null.safetensors"
refused test_cli_files_device_checkpoint "is a symbolic link to a character device" \
    $train --checkpoint "$work/null.safetensors"
if [ -L "$work/null.safetensors" ] && [ -c /dev/null ]; then pass test_cli_files_device_checkpoint_kept
else fail test_cli_files_device_checkpoint_kept "the link or /dev/null was replaced"; fi
mkdir -p "$work/folder.safetensors"
refused test_cli_files_folder_checkpoint "is a folder, not a regular file" \
    $train --checkpoint "$work/folder.safetensors"
refused test_cli_files_empty_checkpoint '--checkpoint is empty' \
    $train --checkpoint ""

# A symbolic link is written through: the file it names holds the run, the link stays.
ln -s run1.safetensors "$work/latest.safetensors"
: >"$work/run1.safetensors"
run $train --epochs 1 --checkpoint "$work/latest.safetensors"
if [ "$code" = 0 ] && [ -L "$work/latest.safetensors" ] && [ -s "$work/run1.safetensors" ] &&
    ! ls "$work" | grep -q '\.tmp\.'
then pass test_cli_files_symlink_checkpoint_written_through
else fail test_cli_files_symlink_checkpoint_written_through "exit $code, or the link was replaced"; fi

# ---- SIGKILL at random moments of 20 runs (checkpoints are saved many times a second
# here, so some kills land mid-write): the checkpoint always loads, and after the next save
# no temporary file is left.
ck="$work/killed.safetensors"
valid=0 temporaries=0
run $train --epochs 1 --checkpoint "$ck" # (so that there is a checkpoint from the start)
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    $train --epochs 100000 --checkpoint "$ck" >/dev/null 2>&1 &
    pid=$!
    sleep "$(awk -v s="$i" 'BEGIN { srand(s * 7919); printf "%.2f", 0.3 + rand() * 1.2 }')"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    temporaries=$((temporaries + $(ls "$work" | grep -c '^killed\.safetensors\.tmp\.')))
    if "$python" -c 'import json, struct, sys
d = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", d[:8])[0]
h = json.loads(d[8:8 + n]); h.pop("__metadata__")
sys.exit(max(e["data_offsets"][1] for e in h.values()) != len(d) - 8 - n)' "$ck" 2>/dev/null
    then valid=$((valid + 1)); fi
done
run $train --epochs 1 --checkpoint "$ck"
left=$(ls "$work" | grep -c '^killed\.safetensors\.tmp\.')
if [ "$valid" = 20 ] && [ "$code" = 0 ] && [ "$left" = 0 ]
then pass "test_cli_files_sigkill_20_runs ($temporaries temporary file(s) seen after kills)"
else fail test_cli_files_sigkill_20_runs "$valid of 20 checkpoints valid, exit $code, $left temporary file(s) left"; fi

# ---- SIGINT and SIGTERM mid-epoch: the summary of the epochs done, exit 130 and 143, the
# checkpoint of the last whole epoch intact.
mkdir -p "$work/big"
"$python" "$here/make_idx_dataset.py" "$work/big" 4096 256 || exit 1
for signal in INT TERM; do
    expected=$([ $signal = INT ] && echo 130 || echo 143)
    ck="$work/stopped-$signal.safetensors"
    # shellcheck disable=SC2086
    interrupt "^epoch 1/" 100 "$signal" $ctensor train --dataset "$work/big" --model mlp \
        --batch-size 16 --epochs 1000 --checkpoint "$ck"
    epoch=$("$python" -c 'import json, struct, sys
d = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", d[:8])[0]
print(json.loads(d[8:8 + n])["__metadata__"]["epoch"])' "$ck" 2>/dev/null)
    if [ "$code" = "$expected" ] && grep -q "stopped after a step of epoch" "$err" &&
        grep -q "test accuracy" "$out" && [ "${epoch:-0}" -ge 1 ]
    then pass "test_cli_files_sig${signal}_mid_epoch (checkpoint at epoch $epoch)"
    else fail "test_cli_files_sig${signal}_mid_epoch" "exit $code (expected $expected), checkpoint epoch \"$epoch\""; fi
done

# ---- --resume at or past --epochs: says so and evaluates the loaded model: the same test
# accuracy as the run that wrote it measured.
ck="$work/done.safetensors"
run $train --epochs 2 --checkpoint "$ck" --json
measured=$(json_field test_accuracy)
run $train --epochs 1 --checkpoint "$ck" --resume --json
if [ "$code" = 0 ] && [ "$(json_field test_accuracy)" = "$measured" ] &&
    [ "$(json_field epochs)" = 0 ] && [ "$(json_field final_loss)" = None ]
then pass "test_cli_files_resume_past_epochs_evaluates (test accuracy $measured)"
else fail test_cli_files_resume_past_epochs_evaluates "exit $code, or not the accuracy $measured measured before"; fi
run $train --epochs 2 --checkpoint "$ck" --resume
if [ "$code" = 0 ] && grep -q "checkpoint already at epoch 2 of 2; nothing to train" "$out" &&
    ! grep -q "^epoch" "$out"
then pass test_cli_files_resume_finished_says_so
else fail test_cli_files_resume_finished_says_so "exit $code, or no \"nothing to train\""; fi

# ---- Checkpoints that would not continue the run: refused by name.
edit() { "$python" "$here/edit_checkpoint.py" "$ck" "$work/edited.safetensors" "$@" || exit 1; }
resume_edited="$train --epochs 3 --checkpoint $work/edited.safetensors"
edit drop optimizer.state.0.exp_avg
refused test_cli_files_missing_optimizer_state "lacks optimizer.state.0.exp_avg" $resume_edited --resume
run $resume_edited --resume-weights-only
if [ "$code" = 0 ] && grep -q "warning: .*--resume-weights-only: the weights are loaded" "$err" &&
    grep -q "^epoch 3/3" "$out"
then pass test_cli_files_resume_weights_only
else fail test_cli_files_resume_weights_only "exit $code, or no warning, or not epoch 3"; fi
edit add extra.weight
refused test_cli_files_extra_tensor "do not have: extra.weight" $resume_edited --resume
edit nan 1.bias
refused test_cli_files_nan_weights "non-finite values (NaN or infinity) in 1.bias" $resume_edited --resume
edit narrow 1.weight
refused test_cli_files_wrong_shape_shows_both_shapes \
    'entry "1.weight" has dtype float32 and shape (256, 783), but the module'"'"'s has dtype float32 and shape (256, 784)' \
    $resume_edited --resume
edit epoch banana
refused test_cli_files_bad_epoch "the checkpoint's \"epoch\" is \"banana\"" $resume_edited --resume

# ---- Messages.
refused test_cli_files_unknown_option 'unknown option "--frobnicate"' $ctensor train --frobnicate
refused test_cli_files_device_index "cuda:16\": there" $ctensor train --device cuda:16
refused test_cli_files_labels_with_folder "only a .npy dataset takes --labels" \
    $train --labels "$work/labels.npy"
refused test_cli_files_ct_device_garbage 'CT_DEVICE="garbage" is not a device' \
    env CT_DEVICE=garbage $train
mkdir -p "$work/loop"
ln -s train-images-idx3-ubyte "$work/loop/train-images-idx3-ubyte"
refused test_cli_files_dataset_member_unreadable "Too many levels of symbolic links" \
    $ctensor train --dataset "$work/loop"

# ---- An absurd OMP_NUM_THREADS: capped with a warning (libgomp crashed starting 100000).
run env OMP_NUM_THREADS=100000 $train --epochs 1
if [ "$code" = 0 ] && grep -q "OMP_NUM_THREADS=100000 asks for more than" "$err"
then pass test_cli_files_omp_num_threads_capped
else fail test_cli_files_omp_num_threads_capped "exit $code"; fi

# ---- The command started by the dynamic loader, and under valgrind: it runs as started (it
# re-executed /proc/self/exe, which is then the loader or valgrind's tool), and its short
# OpenMP spin is still set where it can be (libgomp shows the spin count).
loader=$(readelf -l "$ctensor" 2>/dev/null | sed -n 's/.*interpreter: \(.*\)\]/\1/p')
if [ -z "$loader" ] || [ ! -x "$loader" ]; then
    skip test_cli_files_under_the_loader "no program interpreter found with readelf"
else
    run "$loader" "$ctensor" --help
    if [ "$code" = 0 ] && grep -q "usage: ctensor COMMAND" "$out"; then pass test_cli_files_under_the_loader
    else fail test_cli_files_under_the_loader "exit $code"; fi
fi
# The command's own short spin where the user chose no OpenMP waiting, and the user's choice
# (a policy, or a spin count) where there is one.
run env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose "$ctensor" --help
if grep -q "GOMP_SPINCOUNT = '5000'" "$err"; then pass test_cli_files_short_spin
elif ! grep -q "GOMP_SPINCOUNT" "$err"; then skip test_cli_files_short_spin "built without OpenMP"
else fail test_cli_files_short_spin "libgomp's spin is not 5000 ($(grep GOMP_SPINCOUNT "$err" | tail -1))"; fi
run env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive OMP_DISPLAY_ENV=verbose "$ctensor" --help
passive=$(grep -c "GOMP_SPINCOUNT = '0'" "$err")
run env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=123 OMP_DISPLAY_ENV=verbose "$ctensor" --help
if [ "$passive" = 1 ] && grep -q "GOMP_SPINCOUNT = '123'" "$err"; then pass test_cli_files_users_waiting_kept
elif ! grep -q "GOMP_SPINCOUNT" "$err"; then skip test_cli_files_users_waiting_kept "built without OpenMP"
else fail test_cli_files_users_waiting_kept "passive gave $passive spin-0 lines; $(grep GOMP_SPINCOUNT "$err" | tail -1)"; fi
if ! command -v valgrind >/dev/null; then
    skip test_cli_files_under_valgrind "valgrind is not installed"
elif ldd "$ctensor" 2>/dev/null | grep -q libasan; then
    skip test_cli_files_under_valgrind "an AddressSanitizer build, which valgrind cannot run"
else
    run valgrind -q --error-exitcode=99 "$ctensor" --help
    if [ "$code" = 0 ] && grep -q "usage: ctensor COMMAND" "$out"; then pass test_cli_files_under_valgrind
    else fail test_cli_files_under_valgrind "exit $code"; fi
fi

finish

#!/bin/sh
# The `ctensor` command by the conventions of command-line programs: --version (the Python
# module's ct.__version__ too), exit statuses
# every --help lists and train and bench share (2 a usage error, 1 a failed run), errors as one
# JSON object on stdout with --json, a write error on stdout reported, repeated and empty
# options refused, devices that are not present a usage error (or, with --soft-placement, the
# best one present), a --dataset that does not exist said so, and garbage in CT_TRANSFER_GUARD
# and CT_SOFT_PLACEMENT warned about once when only the CPU is used. Every GPU is hidden
# (CUDA_VISIBLE_DEVICES="", no plugin), so that "gpu" and cuda:N are absent on any machine.
# Usage: test_cli_conventions.sh CTENSOR WORKDIR
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
need_python
workdir "$2"
export CUDA_VISIBLE_DEVICES= CT_CUDA_PLUGIN="$work/no-plugin.so"
unset CT_DEVICE CT_SOFT_PLACEMENT CT_TRANSFER_GUARD

run() {
    timeout -k 5 120 "$@" >"$out" 2>"$err"
    code=$?
}

# refused NAME STATUS TEXT ARGS...: exits with STATUS and one line on stderr holding TEXT.
refused() {
    name=$1 status=$2 text=$3
    shift 3
    run "$@"
    if [ "$code" != "$status" ]; then fail "$name" "exit status $code, expected $status"
    elif [ "$(wc -l <"$err")" != 1 ]; then fail "$name" "$(wc -l <"$err") lines on stderr, expected 1"
    elif ! grep -qF -- "$text" "$err"; then fail "$name" "no \"$text\" on stderr"
    else pass "$name"; fi
}

# json_error NAME STATUS CLASS ARGS...: exits with STATUS, and stdout is one JSON object
# {"error": a non-empty string, "status": CLASS, ...}.
json_error() {
    name=$1 status=$2 class=$3
    shift 3
    run "$@"
    if [ "$code" = "$status" ] && "$python" -c 'import json, sys
e = json.load(open(sys.argv[1]))
assert isinstance(e["error"], str) and e["error"], e
assert e["status"] == sys.argv[2] and e["exit_code"] == int(sys.argv[3]), e' "$out" "$class" "$status" 2>>"$err"
    then pass "$name"
    else fail "$name" "exit status $code (expected $status), or stdout is not one JSON error object of status $class"; fi
}

mkdir -p "$work/good"
"$python" "$here/make_idx_dataset.py" "$work/good" 256 64 || exit 1
train="$ctensor train --dataset $work/good --model mlp --epochs 1 --limit 128"

# ---- --version, as every command-line program has it.
for form in --version version; do
    run "$ctensor" $form
    if [ "$code" = 0 ] && grep -qE '^ctensor [0-9]+\.[0-9]+\.[0-9]+$' "$out" && [ "$(wc -l <"$out")" = 1 ]
    then pass "test_cli_conventions_version_$form"
    else fail "test_cli_conventions_version_$form" "exit $code, or not one line \"ctensor X.Y.Z\""; fi
done

# ... the version the Python module gives as ct.__version__ (the build folder's module, when
# the build has one; `tools/check-python-install.sh` checks the pip-installed one and its
# `ctensor` command).
module="$(cd "$(dirname "$ctensor")" && pwd)/python"
if [ ! -d "$module/ctensor" ]; then
    skip test_cli_conventions_python_version_is_the_commands "no Python module in this build"
else
    # (a sanitizer build's module needs the ASan runtime loaded first, as its pytest run has it)
    asan=$(ldd "$ctensor" 2>/dev/null | sed -n 's/.*libasan[^ ]* => \([^ ]*\).*/\1/p')
    version=$(cd "$work" && env ${asan:+LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0} \
        PYTHONPATH="$module" "$python" -c 'import ctensor; print(ctensor.__version__)' 2>"$err")
    if [ "ctensor $version" = "$(cat "$out")" ]; then pass test_cli_conventions_python_version_is_the_commands
    else fail test_cli_conventions_python_version_is_the_commands "ct.__version__ \"$version\", the command says \"$(cat "$out")\""; fi
fi

# ---- Every --help lists the exit statuses.
for command in "" train bench devices doctor; do
    run "$ctensor" $command --help
    if [ "$code" = 0 ] && grep -q "^exit status: 0 " "$out" && grep -q "2 a usage error\|usage error" "$out"
    then pass "test_cli_conventions_help_lists_exit_status_${command:-ctensor}"
    else fail "test_cli_conventions_help_lists_exit_status_${command:-ctensor}" "exit $code, or no \"exit status:\" line"; fi
done

# ---- A write error on stdout is an error, with a line on stderr.
if [ ! -w /dev/full ]; then
    skip test_cli_conventions_stdout_full "no writable /dev/full"
else
    for command in devices --version "devices --json"; do
        timeout 120 "$ctensor" $command >/dev/full 2>"$err"
        code=$?
        : >"$out"
        tag=$(echo "$command" | tr -d ' -')
        if [ "$code" = 1 ] && grep -q "writing the output failed: No space left on device" "$err"
        then pass "test_cli_conventions_stdout_full_$tag"
        else fail "test_cli_conventions_stdout_full_$tag" "exit $code, or no line on the write error"; fi
    done
fi

# ---- With --json, an error is one JSON object on stdout too.
json_error test_cli_conventions_json_error_train_option 2 usage $ctensor train --json --epochs x
json_error test_cli_conventions_json_error_train_dataset 2 usage \
    $ctensor train --json --dataset "$work/absent" --device cpu
json_error test_cli_conventions_json_error_bench_device 2 usage $ctensor bench --json --device tpu:0
json_error test_cli_conventions_json_error_devices_option 2 usage $ctensor devices --json --bogus
json_error test_cli_conventions_json_error_doctor_option 2 usage $ctensor doctor --json --bogus
json_error test_cli_conventions_json_error_train_out_of_memory 1 failed \
    env CT_MEMORY_LIMIT=cpu=2MiB $train --batch-size 128 --device cpu --json
if grep -q '"library_status": "CT_ERR_OUT_OF_MEMORY"' "$out"
then pass test_cli_conventions_json_error_names_library_status
else fail test_cli_conventions_json_error_names_library_status "no \"library_status\": \"CT_ERR_OUT_OF_MEMORY\""; fi
# A measurement that fails: the error object alone on stdout, not the results as if complete.
json_error test_cli_conventions_json_error_bench_out_of_memory 1 failed \
    env CT_MEMORY_LIMIT=cpu=1MiB $ctensor bench --quick --device cpu --json

# ---- train and bench: the same exit status for the same failure.
# same_status NAME "TRAIN ARGS" "BENCH ARGS": the two exit with one status (not 0, not a signal).
same_status() {
    run env $2
    a=$code
    run env $3
    if [ "$a" = "$code" ] && [ "$a" -ne 0 ] && [ "$a" -lt 125 ]
    then pass "test_cli_conventions_same_status_$1 ($a)"
    else fail "test_cli_conventions_same_status_$1" "train exits $a, bench $code"; fi
}
same_status absent_device "$train --device cuda:15" "$ctensor bench --quick --device cuda:15"
same_status unknown_device "$train --device tpu:0" "$ctensor bench --quick --device tpu:0"
same_status unwritable_output "$train --device cpu --checkpoint $work/absent/model.safetensors" \
    "$ctensor bench --quick --device cpu --csv $work/absent/bench.csv"
same_status out_of_memory "CT_MEMORY_LIMIT=cpu=2MiB $train --device cpu" \
    "CT_MEMORY_LIMIT=cpu=1MiB $ctensor bench --quick --device cpu"
same_status unknown_option "$train --frobnicate" "$ctensor bench --frobnicate"
same_status repeated_option "$train --json --json" "$ctensor bench --json --json"

# ---- Devices that are not present: a usage error (2), as an unknown one is.
refused test_cli_conventions_device_gpu 2 '--device "gpu": there is no cuda device' \
    $train --device gpu
refused test_cli_conventions_device_cpu_1 2 '--device "cpu:1": there is 1 cpu device' \
    $train --device cpu:1
refused test_cli_conventions_device_tpu 2 '--device "tpu:0": expected' $train --device tpu:0
refused test_cli_conventions_ct_device_absent 2 'CT_DEVICE "cuda:3": there is no cuda device' \
    env CT_DEVICE=cuda:3 $train
if grep -qF -- "--soft-placement" "$err"; then pass test_cli_conventions_device_error_names_soft_placement
else fail test_cli_conventions_device_error_names_soft_placement "the line does not name --soft-placement"; fi
# ... and with --soft-placement (or CT_SOFT_PLACEMENT=1), the best device present, with a warning.
run $train --device cuda:0 --soft-placement --json
if [ "$code" = 0 ] && grep -q '"device": "cpu:0"' "$out" &&
    grep -q 'warning: --device "cuda:0": .*soft placement: training on cpu:0' "$err"
then pass test_cli_conventions_soft_placement
else fail test_cli_conventions_soft_placement "exit $code, not on cpu:0, or no warning"; fi
run env CT_SOFT_PLACEMENT=1 $train --device cuda:0 --json
if [ "$code" = 0 ] && grep -q '"device": "cpu:0"' "$out"
then pass test_cli_conventions_soft_placement_from_the_environment
else fail test_cli_conventions_soft_placement_from_the_environment "exit $code, or not on cpu:0"; fi

# ---- --dataset: a path that does not exist, and an empty value.
refused test_cli_conventions_dataset_missing 2 "/nonexistent/data: no such file or folder" \
    $ctensor train --dataset /nonexistent/data --device cpu
refused test_cli_conventions_dataset_empty 2 "--dataset is empty" $ctensor train --dataset ""
refused test_cli_conventions_dataset_empty_equals 2 "--dataset is empty" $ctensor train --dataset=
refused test_cli_conventions_bench_csv_empty 2 "--csv is empty" $ctensor bench --csv ""

# ---- A repeated option is refused, by name (last-one-wins would hide a typo).
refused test_cli_conventions_repeated_value 2 "--epochs is given twice" \
    $train --epochs 1 --epochs 2
refused test_cli_conventions_repeated_equals 2 "--lr is given twice" $train --lr=0.1 --lr 0.2
refused test_cli_conventions_repeated_flag 2 "--resume is given twice" $train --resume --resume
refused test_cli_conventions_repeated_bench 2 "--quick is given twice" $ctensor bench --quick --quick
refused test_cli_conventions_repeated_devices 2 "--json is given twice" $ctensor devices --json --json

# ---- Garbage in the settings read on first use: one warning each, on the CPU alone.
for setting in CT_TRANSFER_GUARD CT_SOFT_PLACEMENT; do
    run env "$setting=garbage" $train --device cpu
    lines=$(grep -c "$setting=\"garbage\"" "$err")
    if [ "$code" = 0 ] && [ "$lines" = 1 ]
    then pass "test_cli_conventions_${setting}_garbage_warned"
    else fail "test_cli_conventions_${setting}_garbage_warned" "exit $code, $lines warning lines (expected 1)"; fi
done

finish

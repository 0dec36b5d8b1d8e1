#!/bin/sh
# Tests of `ctensor doctor` and `ctensor devices`: each failure that can be made without a GPU
# is made through the environment and must be diagnosed with its reason, fix and exit status.
# Usage: test_cli_doctor.sh CTENSOR FAKE_PLUGIN FAKE_DRIVER_DIR (tests/CMakeLists.txt passes them)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
fake_plugin=$2
fake_driver=$3
python=$(command -v python3 || echo python3) # only its json module
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

# run ENV... -- ARGS: runs ctensor with the environment changes; sets $code.
run() {
    env -u CT_CUDA_PLUGIN -u CUDA_VISIBLE_DEVICES "$@" >"$out" 2>"$err"
    code=$?
}
fail() { echo "FAIL $1: $2"; echo "    output was:"; sed 's/^/    | /' "$out" "$err"; failed=$((failed + 1)); }

# expect NAME CODE TEXT...: the last run exited with CODE and its stdout holds every TEXT.
expect() {
    name=$1 want=$2
    shift 2
    if [ "$code" != "$want" ]; then fail "$name" "exit status $code, expected $want"; return; fi
    for text in "$@"; do
        if ! grep -qF -- "$text" "$out"; then fail "$name" "no \"$text\" in the output"; return; fi
    done
    pass "$name"
}

# json NAME PYTHON: the last run's stdout parses as JSON, and PYTHON (an expression of the
# parsed object d) is true.
json() {
    if [ ! -x "$python" ]; then skip "$1" "$python is not installed"; return; fi
    if "$python" -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if ('"$2"') else 1)' <"$out"
    then pass "$1"; else fail "$1" "the JSON does not parse or does not satisfy: $2"; fi
}

run "$ctensor" doctor
if grep -q "✓ NVIDIA driver" "$out"; then
    skip test_cli_doctor_no_driver "this machine has an NVIDIA driver"
    skip test_cli_doctor_no_driver_json "this machine has an NVIDIA driver"
else
    # The verdict gives the library's reason: the missing driver, after the missing plugin
    # when this build has none.
    verdict="the GPU is not usable: no NVIDIA driver: libcuda.so.1"
    grep -q "✓ CUDA plugin" "$out" ||
        verdict="to its path; also no NVIDIA driver: libcuda.so.1 cannot be loaded"
    expect test_cli_doctor_no_driver 1 "✗ NVIDIA driver: libcuda.so.1 cannot be loaded" \
        "fix: install the NVIDIA driver" "$verdict" "the CPU will be used" "✓ CPU self-test"
    # The plugin, where it was built, still tells the runtime it was built with.
    if grep -q "✓ CUDA plugin" "$out"; then
        expect test_cli_doctor_no_driver_runtime 1 \
            "✗ CUDA runtime: the plugin was built with CUDA 1" "no driver to run it"
    else
        skip test_cli_doctor_no_driver_runtime "built without the CUDA plugin"
    fi
    # The BLAS line names the kernel family OpenBLAS runs and a user's OPENBLAS_CORETYPE,
    # with sgemm's measured rate under it and without it (a second run of the command).
    run OPENBLAS_CORETYPE=Haswell "$ctensor" doctor
    expect test_cli_doctor_blas_coretype 1 "BLAS: OpenBLAS" "OPENBLAS_CORETYPE=Haswell" \
        "sgemm 512^3 at" "which it runs without the variable"
    run "$ctensor" doctor --json
    json test_cli_doctor_no_driver_json 'd["status"] == 1 and d["device"] == "cpu:0" and
        any(c["name"] == "NVIDIA driver" and c["ok"] is False and "libcuda.so.1" in c["detail"]
            and c["fix"] for c in d["checks"]) and "libcuda.so.1" in d["reason"] and
        "CPU will be used" in d["verdict"]'
fi

run CT_CUDA_PLUGIN=/nonexistent/libctensor_cuda.so "$ctensor" doctor
expect test_cli_doctor_plugin_not_found 1 \
    "✗ CUDA plugin: not found at /nonexistent/libctensor_cuda.so" "fix: point CT_CUDA_PLUGIN at the libctensor_cuda.so of this build" \
    "the CPU will be used"

# A file that exists but is no shared library: a broken install, not a missing plugin.
run CT_CUDA_PLUGIN="$0" "$ctensor" doctor
expect test_cli_doctor_plugin_broken 2 "✗ CUDA plugin: $0 is present but fails to load" \
    "broken install"

run CUDA_VISIBLE_DEVICES= "$ctensor" doctor
expect test_cli_doctor_visible_devices_empty 1 \
    "✗ devices visible: none: CUDA_VISIBLE_DEVICES=\"\" hides every GPU" \
    "fix: unset CUDA_VISIBLE_DEVICES"

run CT_CUDA_PLUGIN="$fake_plugin" LD_LIBRARY_PATH="$fake_driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$ctensor" doctor
expect test_cli_doctor_driver_too_old 1 "✓ NVIDIA driver: libcuda.so.1 loaded; the driver supports CUDA 11.4" \
    "✓ CUDA plugin: $fake_plugin" \
    "✗ CUDA runtime: the driver is too old: it supports CUDA 11.4, the plugin was built with CUDA 13.0" \
    "fix: update the NVIDIA driver to one that supports CUDA 13.0" \
    "the GPU is not usable: the NVIDIA driver supports CUDA 11.4" "the CPU will be used"
run CT_CUDA_PLUGIN="$fake_plugin" LD_LIBRARY_PATH="$fake_driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$ctensor" doctor --json
json test_cli_doctor_driver_too_old_json 'd["status"] == 1 and any(c["name"] == "CUDA runtime"
    and not c["ok"] and "11.4" in c["detail"] and "13.0" in c["detail"] for c in d["checks"])'

# A CT_MEMORY_LIMIT the library cannot read is ignored with a warning, which doctor shows;
# the quotes in it also try the JSON string escaping.
run CT_MEMORY_LIMIT='cpu=lots "of" \ memory' "$ctensor" doctor --json
json test_cli_doctor_memory_limit_misread 'any(c["name"] == "memory limits" and
    c["state"] == "warn" and "cpu=lots \"of\" \\ memory" in c["detail"] and c["fix"]
    for c in d["checks"])'

run "$ctensor" devices
expect test_cli_devices_table 0 "cpu:0" "auto picks"
run "$ctensor" devices --json
json test_cli_devices_json 'd["devices"][0]["device"] == "cpu:0" and d["devices"][0]["cores"] >= 1
    and d["auto"] in ("cpu:0", "cuda:0")'

for args in "--help" "doctor --help" "devices --help"; do
    # shellcheck disable=SC2086 # the words are meant to split
    run "$ctensor" $args
    expect "test_cli_help[$args]" 0 "usage: ctensor"
done

for command in doctor devices; do
    run "$ctensor" $command --bogus
    if [ "$code" = 2 ] && [ "$(wc -l <"$err")" = 1 ] && grep -q 'unknown option "--bogus"' "$err"
    then pass "test_cli_unknown_option[$command]"
    else fail "test_cli_unknown_option[$command]" "exit $code, expected 2 and one line on stderr"; fi
done

finish

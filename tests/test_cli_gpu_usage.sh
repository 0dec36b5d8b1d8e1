#!/bin/sh
# Tests of the GPU's usage (utilisation, memory in use, power) read through NVML by `ctensor
# devices`, `doctor` and `train`, on the fake GPU with the CPU's kernels and a fake NVML
# (fake_nvml.c: two GPUs, the second with the fake GPU's UUID): the figures shown must be that
# GPU's (20% busy, 3.0 of 141.0 GiB, 123 W), not the first's (99%). Without NVML, with an NVML
# that fails to start, or for a GPU NVML does not know (the fake GPU given another UUID),
# nothing is shown and nothing is an error. The fake driver (fake_libcuda.c) passes doctor's
# driver check.
# Usage: test_cli_gpu_usage.sh CTENSOR FAKE_GPU_PLUGIN FAKE_NVML FAKE_DRIVER_DIR WORKDIR
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
fake_gpu=$2
fake_nvml=$3
fake_driver=$4
need_python
workdir "$5"
mkdir -p "$work/data"
"$python" "$here/make_idx_dataset.py" "$work/data" 4096 128 "" || exit 1

# run [VAR=VALUE...] ARGS...: ctensor on the fake GPU, NVML and driver, with the changes given.
run() {
    env -u CUDA_VISIBLE_DEVICES -u CT_FAKE_GPU_UUID CT_CUDA_PLUGIN="$fake_gpu" \
        CT_NVML_LIBRARY="$fake_nvml" LD_LIBRARY_PATH="$fake_driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$@" >"$out" 2>"$err"
    code=$?
}
# check NAME PYTHON: the last run exited 0, wrote nothing on stderr, and PYTHON (an expression
# of d, its stdout parsed as JSON) is true.
check() {
    if [ "$code" != 0 ]; then fail "$1" "exit status $code"
    elif [ -s "$err" ]; then fail "$1" "it wrote on stderr"
    elif "$python" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ('"$2"') else 1)' \
        "$out"; then pass "$1"
    else fail "$1" "the JSON does not parse or does not satisfy: $2"; fi
}
# text NAME TEXT...: the last run exited 0, wrote nothing on stderr, and its stdout holds each
# TEXT (a TEXT starting with ! must not be there).
text() {
    name=$1
    shift
    if [ "$code" != 0 ]; then fail "$name" "exit status $code"; return; fi
    if [ -s "$err" ]; then fail "$name" "it wrote on stderr"; return; fi
    for t in "$@"; do
        case "$t" in
            !*) if grep -qF -- "${t#!}" "$out"; then fail "$name" "\"${t#!}\" is there"; return; fi ;;
            *) if ! grep -qF -- "$t" "$out"; then fail "$name" "no \"$t\""; return; fi ;;
        esac
    done
    pass "$name"
}
cuda0='[x for x in d["devices"] if x["device"] == "cuda:0"][0]'

run "$ctensor" devices
text test_cli_gpu_usage_devices_table "GPU 0 now: 20% busy, 3.0 of 141.0 GiB in use, 123 W (NVML)" \
    "!99%"
run "$ctensor" devices --json
check test_cli_gpu_usage_devices_json "$cuda0"'["usage"] == {"source": "nvml",
    "utilization_percent": 20, "memory_used": 3 << 30, "memory_total": 141 << 30,
    "power_watts": 123.0} and d["devices"][0].get("usage") is None'

# NVML absent, failing to start, or not knowing the GPU (another UUID): the
# devices are listed as before, without the figures, and nothing goes to stderr.
for case in absent:CT_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 init_fails:FAKE_NVML_INIT_FAILS=1 \
    "unknown_gpu:CT_FAKE_GPU_UUID=another GPU"; do
    what=${case%%:*} change=${case#*:}
    run "$change" "$ctensor" devices
    text "test_cli_gpu_usage_${what}_not_shown" "cuda:0" "auto picks cuda:0" "!now:" "!NVML"
    run "$change" "$ctensor" devices --json
    check "test_cli_gpu_usage_${what}_json_null" "$cuda0"'["usage"] is None'
done

# doctor: the figures, and what `train` does with them; without NVML a skip that says why.
doctor_usage='[c for c in d["checks"] if c["name"] == "cuda:0 usage"][0]'
run "$ctensor" doctor --json
if "$python" -c 'import json,sys; d=json.load(open(sys.argv[1])); c='"$doctor_usage"'
sys.exit(not (c["state"] == "pass" and "20% busy" in c["detail"] and "idle" in c["detail"]))' "$out"
then pass test_cli_gpu_usage_doctor
else fail test_cli_gpu_usage_doctor "no passed \"cuda:0 usage\" check with the figures"; fi
run CT_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$ctensor" doctor --json
if "$python" -c 'import json,sys; d=json.load(open(sys.argv[1])); c='"$doctor_usage"'
sys.exit(not (c["state"] == "skip" and "cannot be loaded" in c["detail"] and d["status"] == 0))' "$out"
then pass test_cli_gpu_usage_doctor_without_nvml
else fail test_cli_gpu_usage_doctor_without_nvml "no skipped \"cuda:0 usage\" check saying why, or not status 0"; fi

# train: the means of the readings and the warning, as the GPU was busy 20% of the time; the
# loop did not wait for batches, so the advice is a larger batch. (The CNN on 4096 samples for
# 6 epochs: seconds, enough readings to tell.)
# (each option is given once: the runs below give their own --epochs)
train="$ctensor train --dataset $work/data --model cnn --seed 1"
run $train --device cuda --json --epochs 6
check test_cli_gpu_usage_train_json 'd["gpu_usage"]["samples"] >= 5 and
    d["gpu_usage"]["mean_utilization_percent"] == 20 and d["gpu_usage"]["idle_percent"] == 80 and
    d["gpu_usage"]["mean_power_watts"] == 123 and d["gpu_usage"]["peak_memory_used"] == 3 << 30 and
    d["gpu_usage"]["warning"].startswith("the GPU was idle 80% of the time: the input pipeline or the host holds it up") and
    "--batch-size" in d["gpu_usage"]["warning"]'
run $train --device cuda --epochs 6
text test_cli_gpu_usage_train_text "  GPU usage     20% busy on average (" \
    "123 W on average, 3.0 GiB in use at most" \
    "  warning       the GPU was idle 80% of the time: the input pipeline or the host holds it up"
run $train --device cpu --json --epochs 1
check test_cli_gpu_usage_train_cpu_null 'd["gpu_usage"] is None'
run CT_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 $train --device cuda --json --epochs 1
check test_cli_gpu_usage_train_without_nvml_null 'd["gpu_usage"] is None'

# A reading stuck in NVML (a hung driver): training ends all the same, the sampler's stop
# gives up on it after its deadline with a warning, and the summary has no readings.
run FAKE_NVML_READING_HANGS=1 timeout 120 $train --device cuda --json --epochs 3
if [ "$code" = 0 ] && grep -qF "warning: the GPU usage sampler did not stop within 2 s" "$err" &&
    "$python" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["gpu_usage"] is not None)' "$out"
then pass test_cli_gpu_usage_stuck_reading_has_a_deadline
else fail test_cli_gpu_usage_stuck_reading_has_a_deadline "exit $code, no warning on stderr, or readings in the summary"; fi

# The progress line (a terminal only: script(1) gives the run one) shows the latest reading.
if ! command -v script >/dev/null 2>&1; then
    skip test_cli_gpu_usage_progress_line "script(1) (util-linux) is not installed"
else
    run script -qec "$train --device cuda --epochs 2" /dev/null
    if [ "$code" = 0 ] && grep -q "ETA [0-9]*:[0-9]* mem [0-9.]* MiB gpu 20% 3.0/141.0 GiB 123 W" "$out"
    then pass test_cli_gpu_usage_progress_line
    else fail test_cli_gpu_usage_progress_line "exit $code, or no \"gpu 20% 3.0/141.0 GiB 123 W\" on the progress line"; fi
fi

finish

#!/bin/sh
# A signal that reaches one replica of a data-parallel `ctensor train`: every replica stops
# after the same step (the next collective carries the stop), rank 0 prints the summary with
# the signal, every rank says it stopped, and every one exits 128 + the signal, well within
# the collectives' deadline (CT_COMM_TIMEOUT=60 here: a rank left waiting for the others
# would end only then). Under mpirun (2 ranks, SIGINT and SIGTERM to rank 1's process
# only; each rank's exit status recorded by a wrapper) and with --devices cpu:0,cpu:1 (one
# process, the threads engine); the same for a GPT (SIGTERM with --devices, SIGINT to rank
# 1 under mpirun). Every run is bounded by timeout(1); the mpirun cases are skipped by name
# without mpirun.
# Usage: test_dist_signal.sh CTENSOR WORKDIR
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
workdir "$2"
need_python
mkdir -p "$work/data"
"$python" "$here/make_idx_dataset.py" "$work/data" 600 200 || exit 1
train="train --dataset $work/data --device cpu --model mlp --epochs 100000 --batch-size 64 --json"
awk 'BEGIN { srand(1); split("the cat sat on a mat and dog ran to house red blue", w, " ");
             for (i = 0; i < 6000; i++) printf "%s ", w[int(rand() * 13) + 1]; print "" }' > "$work/text.txt"
gpt="train --model gpt --layers 2 --heads 2 --width 32 --context 32 --batch-size 8 --device cpu
     --dataset $work/text.txt --steps 100000 --eval-interval 50 --json"
export CT_COMM_TIMEOUT=60

exe=$(readlink -f "$ctensor")
# The pid of the ctensor process with CT_TEST_RUN=$1 in its environment and, with $2, the
# environment entry $2 too (Open MPI puts OMPI_COMM_WORLD_RANK in each rank's).
find_pid() {
    for environ in /proc/[0-9]*/environ; do
        pid=${environ#/proc/}
        pid=${pid%/environ}
        [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] || continue
        entries=$(tr '\0' '\n' 2>/dev/null <"$environ")
        echo "$entries" | grep -qx "CT_TEST_RUN=$1" || continue
        [ -z "$2" ] || echo "$entries" | grep -qx "$2" || continue
        echo "$pid"
        return
    done
}

# signal_one NAME SIGNAL ENTRY COMMAND...: start COMMAND in the background, wait until the
# ctensor process found by ENTRY catches the signals and has trained a little, send it
# SIGNAL, and wait; sets code (COMMAND's exit status), took (seconds from the signal to the
# end) and victim (the pid signalled, empty if none was found).
signal_one() {
    name=$1 signal=$2 entry=$3
    shift 3
    CT_TEST_RUN="$$-$name" timeout 120 "$@" >"$out" 2>"$err" &
    job=$!
    victim=
    for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        sleep 0.5
        victim=$(find_pid "$$-$name" "$entry")
        [ -n "$victim" ] && break
    done
    # Past start-up (the handlers of SIGINT and SIGTERM installed: SigCgt has bits 1 and 14)
    # and into the epochs.
    for _ in $(seq 60); do
        [ -n "$victim" ] || break
        caught=$(sed -n 's/^SigCgt:\t*//p' "/proc/$victim/status" 2>/dev/null)
        [ -n "$caught" ] && [ $((0x$caught & 0x4002)) = $((0x4002)) ] && break
        sleep 0.5
    done
    sleep 2
    start=$(date +%s)
    if [ -n "$victim" ]; then kill -s "$signal" "$victim"; else kill "$job"; fi
    wait "$job"
    code=$?
    took=$(($(date +%s) - start))
}

# ---- --devices: the replicas are threads of one process ----
signal_one devices INT "" "$ctensor" $train --devices cpu:0,cpu:1
lines=$(grep -c "ctensor train: interrupted (SIGINT): stopped after a step of epoch" "$err")
if [ -n "$victim" ] && [ "$code" = 130 ] && [ "$took" -le 20 ] && [ "$lines" = 1 ] &&
    grep -q '"interrupted_by_signal": 2' "$out" && grep -q '"world_size": 2, "engine": "threads"' "$out"
then pass "test_dist_signal_devices_sigint (ended in $took s)"
else fail test_dist_signal_devices_sigint "pid \"$victim\", exit $code after $took s, $lines stop lines"; fi

signal_one gpt_devices TERM "" "$ctensor" $gpt --devices cpu:0,cpu:1
lines=$(grep -c "ctensor train: terminated (SIGTERM): stopped after step" "$err")
if [ -n "$victim" ] && [ "$code" = 143 ] && [ "$took" -le 20 ] && [ "$lines" = 1 ] &&
    grep -q '"interrupted_by_signal": 15' "$out" && grep -q '"world_size": 2, "engine": "threads"' "$out"
then pass "test_dist_signal_gpt_devices_sigterm (ended in $took s)"
else fail test_dist_signal_gpt_devices_sigterm "pid \"$victim\", exit $code after $took s, $lines stop lines"; fi

# ---- mpirun: the signal reaches rank 1's process only ----
if ! command -v mpirun >/dev/null 2>&1; then
    for name in sigint_one_rank sigterm_one_rank gpt_sigint_one_rank; do
        skip "test_dist_signal_mpi_$name" "mpirun not found (install openmpi-bin, or run make deps)"
    done
else
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_btl=self,vader,tcp
    export OMPI_MCA_mca_base_component_disable_dlclose=1
    export LSAN_OPTIONS="suppressions=$here/lsan_mpi.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
    export ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export OMP_WAIT_POLICY=passive
    for signal in INT TERM; do
        number=$([ $signal = INT ] && echo 2 || echo 15)
        what=$([ $signal = INT ] && echo "interrupted (SIG$signal" || echo "terminated (SIG$signal")
        name=$([ $signal = INT ] && echo sigint || echo sigterm)_one_rank
        rm -f "$work"/rank-*.code
        # Each rank's wrapper records its ctensor's exit status before passing it on.
        signal_one "$name" "$signal" OMPI_COMM_WORLD_RANK=1 \
            mpirun --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY \
            -x CT_COMM_TIMEOUT -x CT_TEST_RUN -np 2 sh -c \
            '"$@"; code=$?; echo $code >"'"$work"'/rank-$OMPI_COMM_WORLD_RANK.code"; exit $code' \
            sh "$ctensor" $train
        codes="$(cat "$work/rank-0.code" 2>/dev/null) $(cat "$work/rank-1.code" 2>/dev/null)"
        expected="$((128 + number)) $((128 + number))"
        if [ -n "$victim" ] && [ "$codes" = "$expected" ] && [ "$code" = $((128 + number)) ] &&
            [ "$took" -le 20 ] &&
            grep -q "rank 0 of 2: $what on another rank): stopped after a step" "$err" &&
            grep -q "rank 1 of 2: $what): stopped after a step" "$err" &&
            grep -q "\"interrupted_by_signal\": $number" "$out" &&
            grep -q '"world_size": 2, "engine": "mpi"' "$out"
        then pass "test_dist_signal_mpi_$name (both ranks exit $codes, $took s after the signal)"
        else fail "test_dist_signal_mpi_$name" "rank 1 pid \"$victim\", exits \"$codes\", mpirun $code after $took s"; fi
    done
    rm -f "$work"/rank-*.code
    signal_one gpt_sigint_one_rank INT OMPI_COMM_WORLD_RANK=1 \
        mpirun --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY \
        -x CT_COMM_TIMEOUT -x CT_TEST_RUN -np 2 sh -c \
        '"$@"; code=$?; echo $code >"'"$work"'/rank-$OMPI_COMM_WORLD_RANK.code"; exit $code' \
        sh "$ctensor" $gpt
    codes="$(cat "$work/rank-0.code" 2>/dev/null) $(cat "$work/rank-1.code" 2>/dev/null)"
    if [ -n "$victim" ] && [ "$codes" = "130 130" ] && [ "$code" = 130 ] && [ "$took" -le 20 ] &&
        grep -q "rank 0 of 2: interrupted (SIGINT on another rank): stopped after step" "$err" &&
        grep -q "rank 1 of 2: interrupted (SIGINT): stopped after step" "$err" &&
        grep -q '"interrupted_by_signal": 2' "$out" && grep -q '"world_size": 2, "engine": "mpi"' "$out"
    then pass "test_dist_signal_mpi_gpt_sigint_one_rank (both ranks exit $codes, $took s after the signal)"
    else fail test_dist_signal_mpi_gpt_sigint_one_rank "rank 1 pid \"$victim\", exits \"$codes\", mpirun $code after $took s"; fi
fi
finish

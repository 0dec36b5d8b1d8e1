#!/bin/sh
# Data parallelism across processes, as a user runs it (mpirun, Open MPI): the MPI engine's
# collectives against their definitions and a mismatch named; `ctensor train` giving the same
# model (checkpoints equal to 1e-4 relative, accuracy within 0.5 points) alone, on 2 ranks
# and on 2 devices of one process, for the MLP and the CNN; a stopped rank (SIGSTOP) ending
# the job within 30 s with CT_ERR_COMM naming the collective; a killed rank named; two
# "machines" (two network namespaces joined by a veth pair, Open MPI over TCP between them)
# giving the same model as two ranks on one host. Every run is bounded by timeout(1). Cases
# that need mpirun, the plugin or network namespaces are skipped by name, with the reason.
# With a fake GPU plugin (the CPU's kernels), --devices cuda:0,cuda:1 on two logical GPUs too,
# and with the fake NCCL plugin as well, mpirun -np 2 with --device cuda: over the NCCL engine
# when each rank has a GPU of its own (CT_FAKE_GPU_UUID per rank), and on the MPI engine with
# one warning when both share the one GPU (NCCL refuses two ranks per GPU). Every run names
# its device: on a machine with a GPU the default ("auto") is cuda:0.
# Usage: test_dist_mpi.sh CTENSOR DIST_MPI_CHECK WORKDIR [FAKE_GPU_PLUGIN [FAKE_NCCL_PLUGIN]]
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
check=$2
fake_gpu=${4:-}
fake_nccl=${5:-}
workdir "$3"

if ! command -v mpirun >/dev/null 2>&1; then
    for name in collectives mismatch buckets_in_flight progress_without_polls stopped_rank train_same_model resume_other_world_size batch_size_auto_2_ranks batch_size_auto_none_fits \
        stopped_rank_train killed_rank two_machines train_nccl train_one_gpu; do
        skip "test_dist_mpi_$name" "mpirun not found (install openmpi-bin, or run make deps)"
    done
    finish
fi
need_python
# Open MPI refuses root unless told; CI runs as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Quiet about the missing InfiniBand of a container, and TCP/shared memory only.
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_btl=self,vader,tcp
mpi="mpirun --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY"
export OMP_WAIT_POLICY=passive
# Under make sanitize: Open MPI's own allocations are not ctensor's leaks. The suppressions
# match them by library, so Open MPI keeps its components loaded (a component unloaded at
# MPI_Finalize leaves "<unknown module>" frames) and LeakSanitizer unwinds fully.
export OMPI_MCA_mca_base_component_disable_dlclose=1
export LSAN_OPTIONS="suppressions=$here/lsan_mpi.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

# ---- the engine's collectives ----
run timeout 60 $mpi -np 3 "$check" collectives
if [ "$code" = 0 ] && [ "$(grep -c "PASS collectives of 3 ranks" "$out")" = 3 ]; then
    pass test_dist_mpi_collectives
else fail test_dist_mpi_collectives "exit $code"; fi

run timeout 60 $mpi -np 2 "$check" mismatch
if [ "$code" = 0 ] && [ "$(grep -c "PASS mismatched collective: .*(sum of 6 float32)" "$out")" = 2 ]
then pass test_dist_mpi_mismatch
else fail test_dist_mpi_mismatch "exit $code"; fi

run timeout 120 $mpi -np 3 "$check" buckets
if [ "$code" = 0 ] && [ "$(grep -c "PASS 40 steps of [0-9]* buckets" "$out")" = 3 ]; then
    pass "test_dist_mpi_buckets_in_flight ($(grep -o "40 steps of [0-9]* buckets" "$out" | head -1))"
else fail test_dist_mpi_buckets_in_flight "exit $code"; fi

run timeout 120 $mpi -np 2 "$check" progress
if [ "$code" = 0 ] && [ "$(grep -c "PASS bucket 0 in flight" "$out")" = 2 ]; then
    pass "test_dist_mpi_progress_without_polls ($(grep -o "bucket 0 in flight .*" "$out" | head -1))"
else fail test_dist_mpi_progress_without_polls "exit $code"; fi

start=$(date +%s)
run timeout 60 env CT_COMM_TIMEOUT=3 $mpi -x CT_COMM_TIMEOUT -np 2 "$check" stall
took=$(($(date +%s) - start))
if [ "$code" != 0 ] && [ "$code" != 124 ] && [ "$took" -le 30 ] &&
    grep -q "rank 0: PASS ct_comm_all_reduce #1 .*timed out after 3 s" "$out"
then pass "test_dist_mpi_stopped_rank (ended in $took s)"
else fail test_dist_mpi_stopped_rank "exit $code after $took s"; fi

# ---- ctensor train: the same model alone, on 2 ranks, on 2 devices ----
mkdir -p "$work/data"
"$python" "$here/make_idx_dataset.py" "$work/data" 600 200 || exit 1
# 600 samples in global batches of 64: the last batch has 24.
data="--dataset $work/data --epochs 1 --batch-size 64 --seed 7 --json"
common="$data --device cpu"

# same A.safetensors B.safetensors A.json B.json: every tensor within 1e-4 relative (the norm
# of the difference over the norm of the tensor, so that Adam's tiny second moments do not
# turn float rounding into large ratios) and the test accuracies within 0.5 points.
same() {
    "$python" - "$@" >"$out" 2>"$err" <<'EOF'
import json, sys
import numpy as np
from safetensors.numpy import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
norm = lambda x: float(np.linalg.norm(x.astype(np.float64).ravel()))
worst = max(norm(a[k] - b[k]) / max(norm(a[k]), 1e-30) for k in a)
# The summary is the last line that is a JSON object: a launcher's warning may be beside it
# (Open MPI's rsh agent prints one when setpgid loses a race with the child's exec).
ja, jb = [json.loads([l for l in open(f).read().splitlines() if l.startswith("{")][-1])
          for f in sys.argv[3:5]]
gap = abs(ja["test_accuracy"] - jb["test_accuracy"]) * 100
print("worst relative difference %.2g, accuracy %.2f%% and %.2f%%" % (
    worst, ja["test_accuracy"] * 100, jb["test_accuracy"] * 100))
sys.exit(0 if worst <= 1e-4 and gap <= 0.5 else 1)
EOF
}

for model in mlp cnn; do
    run timeout 300 "$ctensor" train $common --model $model --checkpoint "$work/$model-1.safetensors"
    cp "$out" "$work/$model-1.json"
    one=$code
    run timeout 300 $mpi -np 2 "$ctensor" train $common --model $model \
        --checkpoint "$work/$model-2.safetensors"
    cp "$out" "$work/$model-2.json"
    two=$code
    run timeout 300 "$ctensor" train $common --model $model --devices cpu:0,cpu:1 \
        --checkpoint "$work/$model-d.safetensors"
    cp "$out" "$work/$model-d.json"
    devices=$code
    if [ "$one$two$devices" != 000 ]; then
        fail "test_dist_mpi_train_same_model_$model" "exits $one $two $devices"
        continue
    fi
    if same "$work/$model-1.safetensors" "$work/$model-2.safetensors" "$work/$model-1.json" \
        "$work/$model-2.json" && grep -q '"world_size": 2, "engine": "mpi"' "$work/$model-2.json"
    then pass "test_dist_mpi_train_same_model_${model}_2_ranks ($(cat "$out"))"
    else fail "test_dist_mpi_train_same_model_${model}_2_ranks" "differs"; fi
    if same "$work/$model-1.safetensors" "$work/$model-d.safetensors" "$work/$model-1.json" \
        "$work/$model-d.json" && grep -q '"world_size": 2, "engine": "threads"' "$work/$model-d.json"
    then pass "test_dist_mpi_train_same_model_${model}_2_devices ($(cat "$out"))"
    else fail "test_dist_mpi_train_same_model_${model}_2_devices" "differs"; fi
done

# --devices cuda:0,cuda:1: two logical GPUs of one (the fake GPU), the same model again.
if [ -n "$fake_gpu" ]; then
    run timeout 300 env CT_CUDA_PLUGIN="$fake_gpu" "$ctensor" train $common --model mlp \
        --devices cuda:0,cuda:1 --checkpoint "$work/mlp-g.safetensors"
    cp "$out" "$work/mlp-g.json"
    if [ "$code" = 0 ] && grep -q '"device": "cuda:0"' "$work/mlp-g.json" &&
        same "$work/mlp-1.safetensors" "$work/mlp-g.safetensors" "$work/mlp-1.json" "$work/mlp-g.json"
    then pass "test_dist_devices_two_logical_fake_gpus ($(cat "$out"))"
    else fail test_dist_devices_two_logical_fake_gpus "exit $code, or the models differ"; fi
else
    skip test_dist_devices_two_logical_fake_gpus "no fake GPU plugin given"
fi

# mpirun -np 2 with --device cuda: the NCCL engine, its unique id broadcast over MPI, here
# the fake NCCL plugin with ranks in processes (FAKE_NCCL_DIR) on the fake GPU, each rank
# seeing a GPU of its own (CT_FAKE_GPU_UUID from its rank): the same model.
if [ -n "$fake_gpu" ] && [ -n "$fake_nccl" ]; then
    rm -rf "$work/nccl" && mkdir -p "$work/nccl"
    run timeout 300 env CT_CUDA_PLUGIN="$fake_gpu" CT_NCCL_PLUGIN="$fake_nccl" \
        FAKE_NCCL_DIR="$work/nccl" $mpi -x CT_CUDA_PLUGIN -x CT_NCCL_PLUGIN -x FAKE_NCCL_DIR \
        -np 2 sh -c 'CT_FAKE_GPU_UUID="rank $OMPI_COMM_WORLD_RANK" exec "$@"' sh \
        "$ctensor" train $data --model mlp --device cuda --checkpoint "$work/mlp-nccl.safetensors"
    cp "$out" "$work/mlp-nccl.json"
    rm -rf "$work/nccl"
    if [ "$code" = 0 ] && grep -q '"device": "cuda:0"' "$work/mlp-nccl.json" &&
        grep -q '"world_size": 2, "engine": "nccl"' "$work/mlp-nccl.json" &&
        ! grep -q "NCCL allows one rank per GPU" "$err" &&
        same "$work/mlp-1.safetensors" "$work/mlp-nccl.safetensors" "$work/mlp-1.json" \
            "$work/mlp-nccl.json"
    then pass "test_dist_mpi_train_nccl ($(cat "$out"))"
    else fail test_dist_mpi_train_nccl "exit $code, not the NCCL engine, or the models differ"; fi

    # Both ranks on the one GPU (the same UUID): NCCL would refuse them ("Duplicate GPU
    # detected"), so the collectives run on MPI, with one warning from rank 0 that says why.
    rm -rf "$work/nccl" && mkdir -p "$work/nccl"
    run timeout 300 env CT_CUDA_PLUGIN="$fake_gpu" CT_NCCL_PLUGIN="$fake_nccl" \
        FAKE_NCCL_DIR="$work/nccl" $mpi -x CT_CUDA_PLUGIN -x CT_NCCL_PLUGIN -x FAKE_NCCL_DIR \
        -np 2 "$ctensor" train $data --model mlp --device cuda \
        --checkpoint "$work/mlp-one-gpu.safetensors"
    cp "$out" "$work/mlp-one-gpu.json"
    cp "$err" "$work/mlp-one-gpu.err"
    rm -rf "$work/nccl"
    warnings=$(grep -c "ctensor: warning: ranks 0 and 1 share cuda:0 (UUID GPU-[0-9a-f-]*); NCCL allows one rank per GPU; using MPI for the collectives" "$work/mlp-one-gpu.err")
    if [ "$code" = 0 ] && grep -q '"device": "cuda:0"' "$work/mlp-one-gpu.json" &&
        grep -q '"world_size": 2, "engine": "mpi"' "$work/mlp-one-gpu.json" &&
        [ "$warnings" = 1 ] && [ "$(grep -c "warning" "$work/mlp-one-gpu.err")" = 1 ] &&
        same "$work/mlp-1.safetensors" "$work/mlp-one-gpu.safetensors" "$work/mlp-1.json" \
            "$work/mlp-one-gpu.json"
    then pass "test_dist_mpi_train_one_gpu ($(grep -o "ranks 0 and 1 share.*" "$work/mlp-one-gpu.err"); $(cat "$out"))"
    else
        cp "$work/mlp-one-gpu.err" "$err"
        fail test_dist_mpi_train_one_gpu "exit $code, $warnings warnings, not the MPI engine, or the models differ"
    fi
else
    skip test_dist_mpi_train_nccl "needs the fake GPU and fake NCCL plugins"
    skip test_dist_mpi_train_one_gpu "needs the fake GPU and fake NCCL plugins"
fi

# --resume with another world size: epoch 1 on 2 ranks, epoch 2 alone, against 2 epochs alone.
cp "$work/mlp-2.safetensors" "$work/mlp-resumed.safetensors"
# (each option is given once: $common's --epochs 1 becomes --epochs 2)
two_epochs=$(echo "$common" | sed 's/--epochs 1 /--epochs 2 /')
run timeout 300 "$ctensor" train $two_epochs --model mlp --checkpoint "$work/mlp-resumed.safetensors" --resume
cp "$out" "$work/mlp-resumed.json"
resumed=$code
run timeout 300 "$ctensor" train $two_epochs --model mlp --checkpoint "$work/mlp-whole.safetensors"
cp "$out" "$work/mlp-whole.json"
if [ "$resumed$code" = 00 ] && same "$work/mlp-whole.safetensors" "$work/mlp-resumed.safetensors" \
    "$work/mlp-whole.json" "$work/mlp-resumed.json"
then pass "test_dist_mpi_resume_other_world_size ($(cat "$out"))"
else fail test_dist_mpi_resume_other_world_size "exits $resumed $code, or the models differ"; fi

# --batch-size auto with ranks: each rank finds the largest local batch that fits its memory
# limit (a limit per process, under which one process alone fits a batch below the cap),
# the ranks agree on the smallest, and the global batch is the world size times it; and
# --devices cpu:0,cpu:1 with auto runs.
auto="--dataset $work/data --device cpu --epochs 1 --model cnn --batch-size auto --limit 512 --json"
run timeout 300 env CT_MEMORY_LIMIT=cpu=16MiB "$ctensor" train $auto
alone=$(sed -n 's/.*"batch_size": \([0-9]*\).*/\1/p' "$out")
run timeout 300 $mpi -x CT_MEMORY_LIMIT=cpu=16MiB -np 2 "$ctensor" train $auto
ranks=$(sed -n 's/.*"batch_size": \([0-9]*\).*/\1/p' "$out")
if [ "$code" = 0 ] && [ -n "$ranks" ] && [ -n "$alone" ] && [ "$alone" -lt 256 ] &&
    [ "$ranks" = $((2 * alone)) ]
then pass "test_dist_mpi_batch_size_auto_2_ranks (global $ranks, alone $alone)"
else fail test_dist_mpi_batch_size_auto_2_ranks "exit $code, batch \"$ranks\" (alone \"$alone\")"; fi
run timeout 300 $mpi -x CT_MEMORY_LIMIT=cpu=8MiB -np 2 "$ctensor" train $auto
if [ "$code" != 0 ] && grep -q "not even a batch of 1 per rank fits" "$err"
then pass test_dist_mpi_batch_size_auto_none_fits
else fail test_dist_mpi_batch_size_auto_none_fits "exit $code"; fi
run timeout 300 "$ctensor" train $auto --devices cpu:0,cpu:1
devices=$(sed -n 's/.*"batch_size": \([0-9]*\).*/\1/p' "$out")
if [ "$code" = 0 ] && [ -n "$devices" ] && [ $((devices % 2)) = 0 ] && [ "$devices" -ge 2 ] &&
    [ "$devices" -le 512 ]
then pass "test_dist_batch_size_auto_2_devices (global $devices)"
else fail test_dist_batch_size_auto_2_devices "exit $code, batch \"$devices\""; fi

# ---- a rank stopped or killed while training ----
# The pid of rank 1 of the run marked $1 (Open MPI puts the rank in each rank's environment).
rank1_pid() {
    for environ in /proc/[0-9]*/environ; do
        if tr '\0' '\n' 2>/dev/null <"$environ" | grep -qx "CT_TEST_RUN=$1" &&
            tr '\0' '\n' 2>/dev/null <"$environ" | grep -qx OMPI_COMM_WORLD_RANK=1; then
            pid=${environ#/proc/}
            echo "${pid%/environ}"
            return
        fi
    done
}

# interrupt NAME SIGNAL: start a long run, wait for its first epochs, signal rank 1.
interrupt() {
    timeout 120 env CT_COMM_TIMEOUT=10 CT_TEST_RUN="$$-$1" $mpi -x CT_COMM_TIMEOUT -x CT_TEST_RUN \
        -np 2 "$ctensor" train --dataset "$work/data" --device cpu --model mlp --epochs 1000 \
        --batch-size 64 >"$out" 2>"$err" &
    job=$!
    sleep 4
    victim=$(rank1_pid "$$-$1")
    start=$(date +%s)
    if [ -n "$victim" ]; then kill -s "$2" "$victim"; else kill "$job"; fi
    wait "$job"
    code=$?
    took=$(($(date +%s) - start))
}

# The stopped rank leaves the other waiting in a step's all-reduce or, when the stop falls
# between epochs, in the barrier that starts the next one: either is named.
interrupt stopped STOP
if [ -n "$victim" ] && [ "$code" != 0 ] && [ "$code" != 124 ] && [ "$took" -le 30 ] &&
    grep -q "ct_comm_[a-z_]* #[0-9]* .*timed out after 10 s" "$err"
then pass "test_dist_mpi_stopped_rank_train (ended in $took s: $(grep -o "ct_comm_[a-z_]* #[0-9]*.* timed out after 10 s" "$err" | head -1))"
else fail test_dist_mpi_stopped_rank_train "rank 1 pid \"$victim\", exit $code after $took s"; fi

interrupt killed KILL
if [ -n "$victim" ] && [ "$code" != 0 ] && [ "$code" != 124 ] && [ "$took" -le 30 ] &&
    grep -q "rank 1 .*signal 9" "$out" "$err"
then pass "test_dist_mpi_killed_rank (ended in $took s, rank 1 named)"
else fail test_dist_mpi_killed_rank "rank 1 pid \"$victim\", exit $code after $took s"; fi

# ---- two machines: two network namespaces and Open MPI over TCP between them ----
sh "$here/netns_two_machines.sh" "$work" "$ctensor" "$common --model mlp" \
    "$work/mlp-n.safetensors" >"$work/netns.out" 2>&1
netns=$?
if [ "$netns" = 77 ]; then
    skip test_dist_mpi_two_machines "$(tail -1 "$work/netns.out")"
elif [ "$netns" = 0 ] && same "$work/mlp-2.safetensors" "$work/mlp-n.safetensors" \
    "$work/mlp-2.json" "$work/netns.out"; then
    pass "test_dist_mpi_two_machines ($(cat "$out"))"
else
    cp "$work/netns.out" "$out"
    fail test_dist_mpi_two_machines "exit $netns"
fi
finish

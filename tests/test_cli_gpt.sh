#!/bin/sh
# `ctensor train --model gpt` and `ctensor generate` end to end on a small text file: a short
# run prints the validation loss in bits per byte and learns; the same seed gives the same
# loss; a run resumed from its checkpoint continues at the saved step; synthetic tokens
# train without a text; generate continues a prompt through the KV cache, the same for the
# same seed; bad options are refused with one line. Data parallelism (--devices: 2 and 3
# replicas, an uneven split) gives the loss of one device up to float sums, and the same
# checkpoint, bit for bit, twice; the same with logical GPUs of the fake GPU (when its plugin
# is given);
# SIGINT and SIGTERM stop the run after a step with exit 130 and 143, the checkpoint at that
# step. From the same initial weights (bench/peer_torch_gpt.py --save-init) ctensor and
# PyTorch give the same validation loss after 60 steps (skipped without Debian's torch).
# Usage: test_cli_gpt.sh CTENSOR WORKDIR [FAKE_GPU_PLUGIN]
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ctensor=$1
fake_gpu=${3:-}
workdir "$2"
field() { sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" "$out"; }

# A text of 6000 short words (about 24 KB): bytes a small model learns quickly.
text="$work/text.txt"
awk 'BEGIN { srand(1); split("the cat sat on a mat and dog ran to house red blue", w, " ");
             for (i = 0; i < 6000; i++) printf "%s ", w[int(rand() * 13) + 1]; print "" }' > "$text"
small="--model gpt --layers 2 --heads 2 --width 32 --context 32 --batch-size 8 --lr 3e-3"

run "$ctensor" train $small --dataset "$text" --steps 30 --eval-interval 15 --seed 1
if [ "$code" = 0 ] && grep -q "step 15/30 .* bits per byte" "$out" &&
    grep -q "validation    loss [0-9.]*, [0-9.]* bits per byte" "$out"
then pass test_cli_gpt_reports_bits_per_byte
else fail test_cli_gpt_reports_bits_per_byte "exit $code, or no bits per byte"; fi

run "$ctensor" train $small --dataset "$text" --steps 60 --eval-interval 60 --seed 1 --json
first=$(field val_loss) bpb=$(field bits_per_byte)
if [ "$code" = 0 ] && awk -v l="$first" -v b="$bpb" 'BEGIN { exit !(l < 3.0 && (b - l / log(2))^2 < 1e-6) }'
then pass test_cli_gpt_learns
else fail test_cli_gpt_learns "exit $code, val_loss $first (want < 3.0, from ln 256 = 5.55), bpb $bpb"; fi

run "$ctensor" train $small --dataset "$text" --steps 60 --eval-interval 60 --seed 1 --json
if [ "$code" = 0 ] && [ "$(field val_loss)" = "$first" ]
then pass test_cli_gpt_same_seed_same_loss
else fail test_cli_gpt_same_seed_same_loss "exit $code, $(field val_loss) against $first"; fi

ckpt="$work/gpt.safetensors"
run "$ctensor" train $small --dataset "$text" --steps 20 --seed 2 --checkpoint "$ckpt"
run "$ctensor" train $small --dataset "$text" --steps 40 --seed 2 --checkpoint "$ckpt" --resume
if [ "$code" = 0 ] && grep -q "resumed from .* at step 20 of 40" "$out" &&
    grep -q "40 steps of batch 8 .* 20 in this run" "$out"
then pass test_cli_gpt_resume
else fail test_cli_gpt_resume "exit $code"; fi

run "$ctensor" generate --checkpoint "$ckpt" --prompt "the cat " --tokens 50 --seed 3
sample="$(cat "$out")"
run "$ctensor" generate --checkpoint "$ckpt" --prompt "the cat " --tokens 50 --seed 3
if [ "$code" = 0 ] && [ "$(cat "$out")" = "$sample" ] && [ "$(head -c 8 "$out")" = "the cat " ] &&
    [ "$(wc -c < "$out")" -eq 59 ]
then pass test_cli_gpt_generate
else fail test_cli_gpt_generate "exit $code, or not the prompt and 50 bytes, the same twice"; fi

run "$ctensor" generate --checkpoint "$ckpt" --prompt "the" --tokens 40 --temperature 0 --top-k 5 --json
if [ "$code" = 0 ] && [ "$(field tokens)" = 40 ] && grep -q '"text": "the' "$out"
then pass test_cli_gpt_generate_json
else fail test_cli_gpt_generate_json "exit $code"; fi

run "$ctensor" train --model gpt --layers 1 --heads 2 --width 16 --context 16 --batch-size 4 \
    --dataset synthetic --vocab 1000 --steps 3 --json
if [ "$code" = 0 ] && [ "$(field vocab)" = 1000 ] && [ "$(field bits_per_byte)" = null ]
then pass test_cli_gpt_synthetic
else fail test_cli_gpt_synthetic "exit $code"; fi

run "$ctensor" train --model gpt --layers 1 --heads 2 --width 16 --context 16 --batch-size 4 \
    --dataset "$text" --steps 3 --amp bf16 --json
if [ "$code" = 0 ] && grep -q '"precision": "bf16"' "$out"
then pass test_cli_gpt_amp_bf16
else fail test_cli_gpt_amp_bf16 "exit $code"; fi

run "$ctensor" train $small --dataset "$text" --steps 30 --eval-interval 30 --seed 1 --json
alone=$(field val_loss)
run "$ctensor" train $small --dataset "$text" --steps 30 --eval-interval 30 --seed 1 --json \
    --devices cpu:0,cpu:1 --checkpoint "$work/two.safetensors"
two=$(field val_loss) world=$(field world_size)
run "$ctensor" train $small --dataset "$text" --steps 30 --eval-interval 30 --seed 1 --json \
    --devices cpu:0,cpu:1 --checkpoint "$work/again.safetensors"
again=$(field val_loss)
run "$ctensor" train $small --dataset "$text" --steps 30 --eval-interval 30 --seed 1 --json \
    --devices cpu:0,cpu:1,cpu:2
three=$(field val_loss)
# The two runs of 2 replicas: the same weights and optimiser state, bit for bit.
if [ "$code" = 0 ] && [ "$world" = 2 ] && [ "$two" = "$again" ] &&
    cmp -s "$work/two.safetensors" "$work/again.safetensors" &&
    awk -v a="$alone" -v b="$two" -v c="$three" 'BEGIN {
        exit !(a > 0 && (a - b)^2 < 1e-6 * a * a && (a - c)^2 < 1e-6 * a * a) }'
then pass "test_cli_gpt_devices_same_loss (alone $alone, 2 replicas $two twice, 3 replicas $three)"
else fail test_cli_gpt_devices_same_loss "exit $code, alone $alone, 2 replicas $two then $again, 3 replicas $three"; fi

# The same on the fake GPU (the CPU's kernels behind the plugin): --devices cuda:0,cuda:1 and
# cuda:0,cuda:1,cuda:2 are logical GPUs of its one device; each run is bounded in time.
if [ -z "$fake_gpu" ]; then
    skip test_cli_gpt_devices_fake_gpu_same_loss "no fake GPU plugin given"
else
    on_gpu() {
        # shellcheck disable=SC2086
        run timeout 120 env CT_CUDA_PLUGIN="$fake_gpu" "$ctensor" train $small --dataset "$text" \
            --steps 30 --eval-interval 30 --seed 1 --json "$@"
    }
    on_gpu --device cuda
    gpu_alone=$(field val_loss) gpu_code=$code
    on_gpu --devices cuda:0,cuda:1 --checkpoint "$work/gpu-two.safetensors"
    gpu_two=$(field val_loss) gpu_world=$(field world_size) gpu_code=$((gpu_code + code))
    grep -q '"device": "cuda:0"' "$out" || gpu_code=$((gpu_code + 1))
    on_gpu --devices cuda:0,cuda:1 --checkpoint "$work/gpu-again.safetensors"
    gpu_code=$((gpu_code + code))
    on_gpu --devices cuda:0,cuda:1,cuda:2
    gpu_three=$(field val_loss) gpu_code=$((gpu_code + code))
    if [ "$gpu_code" = 0 ] && [ "$gpu_world" = 2 ] &&
        cmp -s "$work/gpu-two.safetensors" "$work/gpu-again.safetensors" &&
        awk -v a="$gpu_alone" -v b="$gpu_two" -v c="$gpu_three" -v cpu="$alone" 'BEGIN {
            exit !(a > 0 && (a - b)^2 < 1e-6 * a * a && (a - c)^2 < 1e-6 * a * a &&
                   (a - cpu)^2 < 1e-6 * a * a) }'
    then pass "test_cli_gpt_devices_fake_gpu_same_loss (alone $gpu_alone, 2 replicas $gpu_two, 3 replicas $gpu_three)"
    else fail test_cli_gpt_devices_fake_gpu_same_loss "exit statuses $gpu_code, alone $gpu_alone, 2 replicas $gpu_two, 3 replicas $gpu_three, on the CPU $alone"; fi
fi

# A run stopped by a signal (tests/lib.sh: interrupt), once the first progress line is out.
for signal in INT TERM; do
    expected=$([ $signal = INT ] && echo 130 || echo 143)
    ck="$work/stopped-$signal.safetensors"
    # shellcheck disable=SC2086
    interrupt "^step 5/" 300 "$signal" "$ctensor" train $small --dataset "$text" \
        --steps 100000 --eval-interval 5 --checkpoint "$ck"
    stopped=$(sed -n 's/.*stopped after step \([0-9]*\) of.*/\1/p' "$err")
    saved=$(head -c 2000 "$ck" 2>/dev/null | tr -c '[:print:]' '\n' |
        sed -n 's/.*"epoch":"\([0-9]*\)".*/\1/p' | head -n 1)
    if [ "$code" = "$expected" ] && [ -n "$stopped" ] && [ "$saved" = "$stopped" ] &&
        grep -q "the checkpoint holds it" "$err" && grep -q "not measured (stopped by a signal)" "$out"
    then pass "test_cli_gpt_sig${signal}_stops_after_a_step (step $stopped saved)"
    else fail "test_cli_gpt_sig${signal}_stops_after_a_step" "exit $code (expected $expected), stopped at \"$stopped\", checkpoint at \"$saved\""; fi
done

# The same model, data, schedule and steps as PyTorch's nanoGPT (the benchmark's peer), from
# the same initial weights: the same loss up to float sums.
torch_python=${BENCH_PYTHON:-/usr/bin/python3}
if ! "$torch_python" -c "import torch" >/dev/null 2>&1; then
    skip test_cli_gpt_same_as_torch "no torch for $torch_python (Debian's python3-torch)"
else
    init="$work/torch-init.safetensors"
    shape="--layers 2 --heads 2 --width 32 --context 32"
    run env OMP_NUM_THREADS=1 "$torch_python" "$here/../bench/peer_torch_gpt.py" "$text" 60 8 1 \
        $shape --lr 3e-3 --seed 1 --save-init "$init"
    theirs=$(sed -n 's/.* val_loss \([^ ]*\) .*/\1/p' "$out")
    run "$ctensor" train --model gpt $shape --batch-size 8 --lr 3e-3 --dataset "$text" \
        --steps 60 --eval-interval 60 --seed 1 --checkpoint "$init" --resume --json
    ours=$(field val_loss)
    if [ "$code" = 0 ] && awk -v a="$ours" -v b="$theirs" 'BEGIN {
        exit !(b > 0 && (a - b)^2 < 1e-8 * b * b) }'
    then pass "test_cli_gpt_same_as_torch (val loss $ours, PyTorch $theirs)"
    else fail test_cli_gpt_same_as_torch "exit $code, val loss $ours against PyTorch's $theirs"; fi
fi

short="$work/short.txt"
printf 'too short' > "$short"
run "$ctensor" train $small --dataset "$short" --steps 2
if [ "$code" = 2 ] && grep -q "validation part" "$err"
then pass test_cli_gpt_short_text_refused
else fail test_cli_gpt_short_text_refused "exit $code"; fi

run "$ctensor" train --model gpt --width 30 --heads 4 --dataset "$text"
code1=$code
run "$ctensor" train --model gpt --epochs 2 --dataset "$text"
code2=$code
run "$ctensor" train --model cnn --layers 3
if [ "$code1" = 2 ] && [ "$code2" = 2 ] && [ "$code" = 2 ] && grep -q "gpt" "$err"
then pass test_cli_gpt_bad_options_refused
else fail test_cli_gpt_bad_options_refused "exit $code1, $code2 and $code"; fi

run "$ctensor" generate --checkpoint "$text"
code1=$code
run "$ctensor" generate --checkpoint "$ckpt" --prompt ""
if [ "$code1" = 2 ] && [ "$code" = 2 ]
then pass test_cli_gpt_generate_refuses_other_files
else fail test_cli_gpt_generate_refuses_other_files "exit $code"; fi

finish

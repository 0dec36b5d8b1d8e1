"""PyTorch's side of the GPT GPU benchmark (bench/run_gpt_gpu.sh runs it beside
`ctensor train --model gpt2-124m --dataset synthetic --amp bf16`).

PyTorch eager as nanoGPT trains GPT-2 124M without torch.compile: the model of
bench/peer_torch_gpt.py (nanoGPT's GPT-2 with F.scaled_dot_product_attention(is_causal=True),
the classifier tied to the token embedding, biases, GELU in the tanh form, dropout 0) at
GPT-2's shapes (12 layers, 12 heads, width 768, context 1024, vocabulary 50257, as ctensor's
synthetic tokens: not nanoGPT's 50304), forward and loss under torch.autocast bf16, AdamW
(betas 0.9, 0.95; weight decay 0.1 on parameters of 2 or more axes; fused=True where this
PyTorch has it) and gradient clipping at 1.0, as ctensor's step; TF32 allowed for what stays in
f32, as nanoGPT. Random tokens made on the device beforehand (no data loading in the timing).
Per batch size: WARMUP steps, then STEPS timed steps between two torch.cuda.synchronize calls.

Model FLOPs utilisation, as issue 35 and llm.c count it: 6 N + 6 L C T FLOPs per token (N the
parameters, the tied embedding once; L layers, C width, T context) times tokens/s, over the
card's dense bf16 peak (PEAK_TFLOPS below, or --peak-tflops).

Prints one line per batch size:
    torch gpt bf16 batch B context T tokens_per_s X step_ms Y mfu_pct M parameters N
        peak_tflops P peak_memory_mib Q
(mfu_pct: the utilisation in percent; it and peak_tflops "n/a" on a card not in PEAK_TFLOPS
without --peak-tflops). Without
PyTorch or a CUDA device (and no --device cpu) it says so on stderr and prints nothing.
--device cpu with a small shape (--layers 2 --heads 2 --width 64 --context 64 --vocab 512)
checks the script end to end, not a benchmark (with nanoGPT's masked softmax where PyTorch,
before 2.0, lacks F.scaled_dot_product_attention; on cuda that is refused).

Usage: python3 bench/peer_torch_gpt_gpu.py [--batches 16,64] [--steps 20] [--warmup 5]
           [--amp bf16|off] [--layers 12 --heads 12 --width 768 --context 1024 --vocab 50257]
           [--peak-tflops P] [--device cuda:0]
"""
import argparse
import inspect
import sys
import time

# Dense (not 2:4 sparse) bf16 tensor-core peaks in TFLOP/s, the first name that the card's
# name contains: NVIDIA's datasheets give the sparse figure, twice these.
# H200 SXM: "H200 Tensor Core GPU" datasheet, BF16 Tensor Core 1,979 TFLOPS with sparsity;
# H200 NVL: 1,671 with sparsity (the same datasheet).
# H100 SXM 1,979, H100 NVL 1,671, H100 PCIe 1,513 with sparsity: "H100 Tensor Core GPU"
# datasheet. A100: 312 dense, "A100 Tensor Core GPU" datasheet.
PEAK_TFLOPS = [
    ("H200 NVL", 835.5),
    ("H200", 989.4),
    ("H100 NVL", 835.5),
    ("H100 PCIe", 756.5),
    ("H100", 989.4),
    ("A100", 312.0),
]


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="16,64")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--amp", choices=["bf16", "off"], default="bf16")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--lr", type=float, default=6e-4)
    parser.add_argument("--peak-tflops", type=float, default=None)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be at least 1 and --warmup at least 0")
    return args


def flops_per_token(parameters, layers, width, context):
    """6 N + 6 L C T: the matmuls' forward and backward (6 per parameter and token) and the
    causal attention's scores and weighted sum (llm.c's count)."""
    return 6 * parameters + 6 * layers * width * context


def peak_tflops(torch, device, given):
    if given is not None:
        return given
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in PEAK_TFLOPS if key in name), None)


def make_optimizer(torch, model, lr, device):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
    extra = {}
    if device.type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters:
        extra["fused"] = True
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), **extra), bool(extra)


def run_batch(torch, F, model, optimizer, batch, args, device, peak):
    gpu = device.type == "cuda"
    # A few batches (inputs and their next tokens) made on the device beforehand, used in turn.
    windows = [torch.randint(0, args.vocab, (batch, args.context + 1), device=device)
               for _ in range(4)]
    batches = [(w[:, :-1].contiguous(), w[:, 1:].contiguous()) for w in windows]
    amp = args.amp == "bf16"

    def step(i):
        x, y = batches[i % len(batches)]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, args.vocab), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    if gpu:
        torch.cuda.reset_peak_memory_stats(device)
    for i in range(args.warmup):
        step(i)
    if gpu:
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for i in range(args.steps):
        step(i)
    if gpu:
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    rate = args.steps * batch * args.context / seconds
    parameters = sum(p.numel() for p in model.parameters())
    flops = flops_per_token(parameters, args.layers, args.width, args.context)
    mfu = f"{100 * rate * flops / (peak * 1e12):.2f}" if peak else "n/a"
    memory = f"{torch.cuda.max_memory_allocated(device) / 2**20:.0f}" if gpu else "n/a"
    print(f"torch gpt {args.amp} batch {batch} context {args.context} tokens_per_s "
          f"{rate:.1f} step_ms {1e3 * seconds / args.steps:.3f} mfu_pct {mfu} parameters "
          f"{parameters} peak_tflops {peak if peak else 'n/a'} peak_memory_mib {memory}",
          flush=True)


def main():
    args = arguments()
    try:
        import torch
        from torch.nn import functional as F
        from peer_torch_gpt import GPT  # the model of the CPU rows, this file's folder
    except ImportError as error:
        print(f"peer_torch_gpt_gpu: {error}; no peer figures", file=sys.stderr)
        return 0
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("peer_torch_gpt_gpu: PyTorch sees no CUDA device; no peer figures",
              file=sys.stderr)
        return 0
    sdpa = hasattr(F, "scaled_dot_product_attention")
    if not sdpa and device.type == "cuda":
        print(f"peer_torch_gpt_gpu: PyTorch {torch.__version__} lacks "
              "F.scaled_dot_product_attention; no peer figures", file=sys.stderr)
        return 0
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(args.seed)
    model = GPT(args.vocab, args.context, args.layers, args.heads, args.width).to(device)
    model.train()
    optimizer, fused = make_optimizer(torch, model, args.lr, device)
    peak = peak_tflops(torch, device, args.peak_tflops)
    card = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    attention = "F.scaled_dot_product_attention" if sdpa else "nanoGPT's masked softmax"
    print(f"# PyTorch {torch.__version__} eager on {card}, {attention}, AdamW fused={fused}, "
          f"{args.warmup} warm-up then {args.steps} timed steps", flush=True)
    status = 0
    for batch in (int(b) for b in args.batches.split(",")):
        try:
            run_batch(torch, F, model, optimizer, batch, args, device, peak)
        except RuntimeError as error:  # out of memory at one size leaves the others' figures
            print(f"peer_torch_gpt_gpu: batch {batch}: {error}", file=sys.stderr)
            status = 1
            optimizer.zero_grad(set_to_none=True)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return status


if __name__ == "__main__":
    sys.exit(main())

"""PyTorch's side of the GPT rows of the training benchmark (bench/run_train.sh): the model,
data, seed policy, schedule and steps of `ctensor train --model gpt-mini --dataset FILE`:

- nanoGPT's GPT-2 (tied classifier, pre-LayerNorm blocks, GELU in the tanh form, biases,
  dropout 0) with F.scaled_dot_product_attention (is_causal=True; before PyTorch 2.0,
  nanoGPT's explicit masked softmax);
- the text as bytes, its last 10% held out; each step's batch is the windows ctensor draws
  (splitmix64 of the seed, the stream and the step: tools/train_gpt_data.c), and the
  validation loss is the mean over the same 8 validation batches;
- AdamW (betas 0.9, 0.95; weight decay 0.1 on parameters of 2 or more axes), gradient
  clipping at 1.0, linear warm-up over min(100, steps / 10) steps then a cosine to lr / 10;
- --amp bf16 runs forward and loss under torch.autocast, as `ctensor train --amp bf16`;
- the memory of a step as `ctensor train` reports it (first_step_rss_growth): the growth of
  the resident set over the first step (Linux's VmHWM after /proc/self/clear_refs, less
  VmRSS before it), AdamW's state (made in that step on both sides) included.
The initial weights come from torch.manual_seed(seed): the same distribution as ctensor's,
not the same numbers; --save-init FILE writes them as a checkpoint of step 0 in ctensor's
names, from which `ctensor train --checkpoint FILE --resume` starts with the same numbers
(bench/run_train.sh does, so that the bits per byte compare the two implementations, not two
draws of the initial weights).

Usage: peer_torch_gpt.py TEXT STEPS BATCH THREADS [--layers 4 --heads 4 --width 256
                         --context 256 --lr 6e-4 --seed 0 --device cpu --amp off|bf16
                         --save-init FILE.safetensors]
Prints `torch gpt steps N seconds S tokens_per_s R val_loss L bits_per_byte B
first_step_rss_growth M` (M in bytes; 0 where /proc cannot tell)."""
import argparse
import json
import math
import struct
import time

import torch
from torch import nn
from torch.nn import functional as F

MASK = (1 << 64) - 1
EVAL_BATCHES = 8


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def batch(data, split, seed, stream, index, size, context):
    """gpt_data_batch of tools/train_gpt_data.c: the same windows."""
    state = ((seed * 0x100000001B3) & MASK) ^ (stream << 56) ^ index
    lo, hi = (split, len(data)) if stream else (0, split)
    starts = []
    for _ in range(size):
        state, r = splitmix64(state)
        starts.append(lo + r % (hi - lo - context))
    x = torch.stack([data[s:s + context] for s in starts]).long()
    y = torch.stack([data[s + 1:s + context + 1] for s in starts]).long()
    return x, y


def attention(q, k, v):
    """F.scaled_dot_product_attention(is_causal=True); PyTorch before 2.0 lacks it, and runs
    nanoGPT's own fallback: the masked softmax over the T x T scores."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    return F.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.c_attn = nn.Linear(width, 3 * width)
        self.attn_proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.mlp_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = attention(q, k, v)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, context, layers, heads, width):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.h = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))
            elif p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith(".bias") and ".ln_" not in name:
                nn.init.zeros_(p)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def ctensor_name(name):
    """A parameter's name in ctensor's GPT (src/nn/gpt.c: nanoGPT's module tree)."""
    for ours, theirs in ((".c_attn.", ".attn.c_attn."), (".attn_proj.", ".attn.c_proj."),
                         (".c_fc.", ".mlp.c_fc."), (".mlp_proj.", ".mlp.c_proj.")):
        name = name.replace(ours, theirs)
    return "transformer." + name


def save_init(model, path, args):
    """The model as a safetensors checkpoint of step 0 that `ctensor train --resume` loads."""
    tensors = {ctensor_name(n): p.detach().float().contiguous().cpu()
               for n, p in model.named_parameters()}
    metadata = {"model": "gpt", "gpt.vocab": "256", "gpt.context": str(args.context),
                "gpt.layers": str(args.layers), "gpt.heads": str(args.heads),
                "gpt.width": str(args.width), "epoch": "0", "seed": str(args.seed)}
    header, offset = {"__metadata__": metadata}, 0
    for name, t in tensors.items():
        size = t.numel() * 4
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for t in tensors.values():
            f.write(t.numpy().astype("<f4").tobytes())


def status_bytes(key):
    """A "Key:   N kB" line of /proc/self/status in bytes; 0 where it is absent."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_begin():
    """Reset the resident set's peak (Linux 4.0 and later) and return its size now."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return 0
    return status_bytes("VmRSS")


def learning_rate(step, steps, lr):
    warmup = min(100, steps // 10)
    if step < warmup:
        return lr * (step + 1) / (warmup + 1)
    ratio = (step - warmup) / (steps - warmup) if steps > warmup else 1.0
    return lr / 10 + 0.5 * (1 + math.cos(math.pi * ratio)) * (lr - lr / 10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("steps", type=int)
    ap.add_argument("batch", type=int)
    ap.add_argument("threads", type=int)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--amp", choices=["off", "bf16"], default="off")
    ap.add_argument("--save-init")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    raw = open(args.text, "rb").read()
    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    split = len(data) - len(data) // 10
    torch.manual_seed(args.seed)
    model = GPT(256, args.context, args.layers, args.heads, args.width).to(device)
    if args.save_init:
        save_init(model, args.save_init, args)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": rest, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.95))
    amp = args.amp == "bf16"

    def loss_of(x, y):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            logits = model(x.to(device))
        return F.cross_entropy(logits.float().view(-1, 256), y.to(device).view(-1))

    seconds = 0.0
    rss_growth = 0
    for step in range(args.steps):
        rss = rss_begin() if step == 0 else 0
        start = time.perf_counter()
        for g in optimizer.param_groups:
            g["lr"] = learning_rate(step, args.steps, args.lr)
        x, y = batch(data, split, args.seed, 0, step, args.batch, args.context)
        loss = loss_of(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds += time.perf_counter() - start
        if step == 0 and rss:
            rss_growth = max(status_bytes("VmHWM") - rss, 0)
    model.eval()
    with torch.no_grad():
        val = sum(loss_of(*batch(data, split, args.seed, 1, i, args.batch, args.context)).item()
                  for i in range(EVAL_BATCHES)) / EVAL_BATCHES
    tokens = args.steps * args.batch * args.context
    print(f"torch gpt steps {args.steps} seconds {seconds:.3f} tokens_per_s "
          f"{tokens / seconds:.1f} val_loss {val:.6f} bits_per_byte {val / math.log(2):.6f} "
          f"first_step_rss_growth {rss_growth}")


if __name__ == "__main__":
    main()

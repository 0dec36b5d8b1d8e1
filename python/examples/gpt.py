"""A GPT (nanoGPT's model) trained on the bytes of a text file, written as a PyTorch user
writes it, with ctensor in torch's place.

    python python/examples/gpt.py --data input.txt [--steps 200] [--layers 4] [--heads 4]
        [--width 256] [--context 256] [--batch-size 16] [--lr 6e-4] [--dropout 0.0]
        [--seed 0] [--device cpu] [--amp] [--sample 200]

The text is read as bytes (vocabulary 256); its last 10% is held out for validation. Each
step trains on random windows of context + 1 bytes. As nanoGPT: the classifier shares the
token embedding's weight, AdamW decays the matrices and embeddings only, gradients are
clipped at norm 1.0, and the learning rate warms up then follows a cosine. It prints the
validation loss in bits per byte, and with --sample N a sample of N bytes at the end.
"""

import argparse
import math
import time

import numpy as np

import ctensor as ct
import ctensor.nn as nn
import ctensor.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, dropout):
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.resid_dropout = nn.Dropout(dropout)
        self.heads, self.dropout = heads, dropout

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, width, dropout):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, width, heads, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, dropout)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, context, layers, heads, width, dropout):
        super().__init__()
        self.context = context
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, width),
            wpe=nn.Embedding(context, width),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block(width, heads, dropout) for _ in range(layers)]),
            ln_f=nn.LayerNorm(width),
        ))
        # nanoGPT's initialisation; the residual projections scaled by the depth.
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))
            elif p.ndim == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith(".bias") and ".ln_" not in name:
                nn.init.zeros_(p)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        t = self.transformer
        pos = ct.arange(0, T, dtype=ct.int64, device=idx.device)
        x = t.drop(t.wte(idx) + t.wpe(pos))
        for block in t.h:
            x = block(x)
        x = t.ln_f(x)
        # The classifier is the token embedding (weight tying): one parameter, two uses.
        logits = F.linear(x, t.wte.weight)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))


def batch(data, size, context, rng, device):
    starts = rng.integers(0, len(data) - context - 1, size)
    x = np.stack([data[s:s + context] for s in starts]).astype(np.int64)
    y = np.stack([data[s + 1:s + context + 1] for s in starts]).astype(np.int64)
    return ct.asarray(x, device=device), ct.asarray(y, device=device)


def learning_rate(step, steps, lr):
    warmup = min(100, steps // 10)
    if step < warmup:
        return lr * (step + 1) / (warmup + 1)
    ratio = (step - warmup) / max(1, steps - warmup)
    return lr / 10 + 0.5 * (1 + math.cos(math.pi * ratio)) * (lr - lr / 10)


@ct.no_grad()
def validation_loss(model, data, args, device, batches=8):
    model.eval()
    rng = np.random.default_rng(args.seed + 1)  # the same windows every time
    total = 0.0
    for _ in range(batches):
        x, y = batch(data, args.batch_size, args.context, rng, device)
        with ct.autocast(device.type, enabled=args.amp):
            _, loss = model(x, y)
        total += loss.item()
    model.train()
    return total / batches


@ct.no_grad()
def sample(model, n, device, temperature=0.8):
    model.eval()
    idx = np.array([[ord("\n")]], dtype=np.int64)
    for _ in range(n):
        x = ct.asarray(idx[:, -model.context:], device=device)
        logits, _ = model(x)
        p = F.softmax(logits[:, -1, :] / temperature, dim=-1).numpy()[0].astype(np.float64)
        idx = np.concatenate([idx, [[np.random.choice(256, p=p / p.sum())]]], axis=1)
    return bytes(idx[0].tolist()).decode("utf-8", errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--amp", action="store_true", help="bf16 autocast")
    ap.add_argument("--sample", type=int, default=0)
    args = ap.parse_args()

    device = ct.device(args.device)
    data = np.frombuffer(open(args.data, "rb").read(), dtype=np.uint8)
    split = len(data) - len(data) // 10
    train, val = data[:split], data[split:]
    ct.manual_seed(args.seed)
    model = GPT(256, args.context, args.layers, args.heads, args.width, args.dropout).to(device)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = ct.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                {"params": no_decay, "weight_decay": 0.0}],
                               lr=args.lr, betas=(0.9, 0.95))
    print(f"{sum(p.numel() for p in model.parameters())} parameters")
    rng = np.random.default_rng(args.seed)
    start = time.time()
    for step in range(args.steps):
        for g in optimizer.param_groups:
            g["lr"] = learning_rate(step, args.steps, args.lr)
        x, y = batch(train, args.batch_size, args.context, rng, device)
        with ct.autocast(device.type, enabled=args.amp):
            _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if (step + 1) % max(1, args.steps // 4) == 0 or step + 1 == args.steps:
            tokens = (step + 1) * args.batch_size * args.context
            print(f"step {step + 1}: train loss {loss.item():.4f}, "
                  f"{tokens / (time.time() - start):.0f} tokens/s")
    loss = validation_loss(model, val, args, device)
    print(f"validation loss {loss:.4f}, {loss / math.log(2):.4f} bits per byte")
    if args.sample:
        print(sample(model, args.sample, device))


if __name__ == "__main__":
    main()

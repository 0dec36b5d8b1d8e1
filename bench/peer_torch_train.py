"""PyTorch's side of the training benchmark (bench/run_train.sh): the MLP or the small CNN
on Fashion-MNIST with Adam, as `ctensor train` does: the same model, batch, optimiser,
normalisation and threads; the data in memory as tensors (PyTorch's fastest loading here).
On a GPU each batch is made on the CPU as ctensor's loader makes it, then copied from
pinned memory without blocking (pin_memory + non_blocking, what a DataLoader with
pin_memory=True does), and cuDNN keeps its default (heuristic) algorithm choice, as
ctensor's does. Convolutions compute in f32, as ctensor's do, unless --tf32 gives them
PyTorch's default on a GPU (TF32 tensor cores: faster, with a 10-bit mantissa). --amp bf16
or f16 runs forward and loss under torch.autocast(device, dtype) (and f16 with a GradScaler),
as `ctensor train --amp` does.

Usage: peer_torch_train.py MODEL EPOCHS BATCH THREADS [--data DIR] [--seed S] [--device D]
                           [--tf32] [--amp off|bf16|f16] [--limit N]
Prints a line per epoch: `torch MODEL epoch N seconds S samples_per_s R test_accuracy A`."""
import argparse
import gzip
import struct
import sys
import time

import numpy as np
import torch
from torch import nn

MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def model_for(name):
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                         nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def images(array):
    return ((torch.from_numpy(array.copy()).float() / 255 - MEAN) / STD).unsqueeze(1)


def arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["mlp", "cnn"])
    parser.add_argument("epochs", type=int)
    parser.add_argument("batch", type=int)
    parser.add_argument("threads", type=int)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tf32", action="store_true")
    parser.add_argument("--amp", choices=["off", "bf16", "f16"], default="off")
    parser.add_argument("--limit", type=int, default=0, help="train on the first N samples")
    return parser.parse_args()


def main():
    args = arguments()
    device = torch.device(args.device)
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    folder = args.data
    train_x = read_idx(f"{folder}/train-images-idx3-ubyte.gz")
    train_y = torch.from_numpy(read_idx(f"{folder}/train-labels-idx1-ubyte.gz").astype(np.int64))
    if args.limit:
        train_x, train_y = train_x[:args.limit], train_y[:args.limit]
    test_x = images(read_idx(f"{folder}/t10k-images-idx3-ubyte.gz")).to(device)
    test_y = torch.from_numpy(read_idx(f"{folder}/t10k-labels-idx1-ubyte.gz").astype(np.int64))
    test_y = test_y.to(device)
    model = model_for(args.model).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    n, batch, gpu = len(train_y), args.batch, device.type == "cuda"
    amp = args.amp != "off"
    # PyTorch 1.13's CPU autocast refuses f16 even when disabled: bf16 stands in for "off".
    dtype = torch.float16 if args.amp == "f16" else torch.bfloat16
    scaler = torch.cuda.amp.GradScaler() if args.amp == "f16" and gpu else None
    for epoch in range(1, args.epochs + 1):
        model.train()
        start = time.perf_counter()
        # Data loading is part of the timed epoch, as in ctensor: shuffle, batch, normalise.
        order = torch.randperm(n)
        for first in range(0, n, batch):
            rows = order[first:first + batch]
            x = images(train_x[rows.numpy()])
            y = train_y[rows]
            if gpu:
                x = x.pin_memory().to(device, non_blocking=True)
                y = y.pin_memory().to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=dtype, enabled=amp):
                loss = loss_fn(model(x), y)
            if scaler:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
        if gpu:
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - start
        model.eval()
        with torch.no_grad(), torch.autocast(device.type, dtype=dtype, enabled=amp):
            correct = sum(int((model(test_x[i:i + 1000]).argmax(1) == test_y[i:i + 1000]).sum())
                          for i in range(0, len(test_y), 1000))
        print(f"torch {args.model} epoch {epoch} seconds {seconds:.2f} "
              f"samples_per_s {n / seconds:.0f} test_accuracy {correct / len(test_y):.4f}",
              flush=True)


if __name__ == "__main__":
    main()

"""PyTorch's side of the training benchmark (bench/run_train.sh): the MLP or the small CNN
on Fashion-MNIST with Adam, as `ctensor train` does: the same model, batch, optimiser,
normalisation and threads; the data in memory as tensors (PyTorch's fastest loading here).

Usage: peer_torch_train.py MODEL EPOCHS BATCH THREADS [DIR [SEED]]   (SEED: 0 by default)
Prints a line per epoch: `torch MODEL epoch N seconds S samples_per_s R test_accuracy A`."""
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


def main():
    name, epochs, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    folder = sys.argv[5] if len(sys.argv) > 5 else "/usr/share/datasets/fashion-mnist"
    seed = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    train_x = read_idx(f"{folder}/train-images-idx3-ubyte.gz")
    train_y = torch.from_numpy(read_idx(f"{folder}/train-labels-idx1-ubyte.gz").astype(np.int64))
    test_x = images(read_idx(f"{folder}/t10k-images-idx3-ubyte.gz"))
    test_y = torch.from_numpy(read_idx(f"{folder}/t10k-labels-idx1-ubyte.gz").astype(np.int64))
    model = model_for(name)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    n = len(train_y)
    for epoch in range(1, epochs + 1):
        model.train()
        start = time.perf_counter()
        # Data loading is part of the timed epoch, as in ctensor: shuffle, batch, normalise.
        order = torch.randperm(n)
        for first in range(0, n, batch):
            rows = order[first:first + batch]
            x = images(train_x[rows.numpy()])
            y = train_y[rows]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        seconds = time.perf_counter() - start
        model.eval()
        with torch.no_grad():
            correct = sum(int((model(test_x[i:i + 1000]).argmax(1) == test_y[i:i + 1000]).sum())
                          for i in range(0, len(test_y), 1000))
        print(f"torch {name} epoch {epoch} seconds {seconds:.2f} samples_per_s {n / seconds:.0f} "
              f"test_accuracy {correct / len(test_y):.4f}", flush=True)


if __name__ == "__main__":
    main()

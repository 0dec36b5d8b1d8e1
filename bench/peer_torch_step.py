"""PyTorch's side of the training-step benchmark (bench/run_step.sh): one step (forward,
backward, Adam) of the issue's small CNN or MLP on random data, median time over the steps.

Usage: peer_torch_step.py MODEL BATCH STEPS THREADS    (MODEL: cnn | mlp)
Prints one line: `torch MODEL BATCH median_ms samples_per_s`."""
import statistics
import sys
import time

import torch
from torch import nn


def model_for(name):
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                         nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    name, batch, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = model_for(name)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    times = []
    for step in range(steps + 3):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        if step >= 3:  # warm-up steps are not timed
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"torch {name} {batch} {median * 1e3:.3f} {batch / median:.0f}")


if __name__ == "__main__":
    main()

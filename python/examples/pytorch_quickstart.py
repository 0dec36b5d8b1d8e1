"""PyTorch's quickstart (the tutorial's Fashion-MNIST classifier), with its imports changed.

The model, the loop, the loss, the optimiser and the evaluation are the tutorial's lines as
PyTorch users type them; only the imports differ (`import ctensor as torch`, `from ctensor
...`), and the data comes from Debian's dataset-fashion-mnist through NumPy instead of
torchvision. python/tests/test_pytorch_quickstart.py runs this file as it is and, where
PyTorch is installed, the same file with the imports put back, and compares the accuracy.

    python python/examples/pytorch_quickstart.py [--epochs 5] [--limit N]
"""

import argparse
import gzip
import os

import numpy as np

import ctensor as torch
from ctensor import nn
from ctensor.utils.data import DataLoader, TensorDataset

DATA = os.environ.get("CT_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def read_idx(name, limit):
    """Images as float32 in [0, 1] of shape (N, 1, 28, 28), or labels as int64."""
    with gzip.open(os.path.join(DATA, name)) as f:
        data = f.read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    values = np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)[:limit]
    if ndim == 1:
        return values.astype(np.int64)
    return (values.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train(dataloader, model, loss_fn, optimizer, device):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)

        # Compute prediction error
        pred = model(X)
        loss = loss_fn(pred, y)

        # Backpropagation
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

        if batch % 100 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test(dataloader, model, loss_fn, device):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return correct


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()
    torch.manual_seed(0)

    training_data = TensorDataset(torch.from_numpy(read_idx("train-images-idx3-ubyte.gz", args.limit)),
                                  torch.from_numpy(read_idx("train-labels-idx1-ubyte.gz", args.limit)))
    test_data = TensorDataset(torch.from_numpy(read_idx("t10k-images-idx3-ubyte.gz", args.limit)),
                              torch.from_numpy(read_idx("t10k-labels-idx1-ubyte.gz", args.limit)))

    batch_size = 64
    train_dataloader = DataLoader(training_data, batch_size=batch_size, shuffle=True)
    test_dataloader = DataLoader(test_data, batch_size=batch_size)

    for X, y in test_dataloader:
        print(f"Shape of X [N, C, H, W]: {X.shape}")
        print(f"Shape of y: {y.shape} {y.dtype}")
        break

    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"Using {device} device")

    model = NeuralNetwork().to(device)
    print(model)

    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    for t in range(args.epochs):
        print(f"Epoch {t+1}\n-------------------------------")
        train(train_dataloader, model, loss_fn, optimizer, device)
        accuracy = test(test_dataloader, model, loss_fn, device)
    print(f"Done! accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()

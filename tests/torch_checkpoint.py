"""PyTorch's side of test_nn_checkpoint: a checkpoint ctensor wrote loads into the same
torch.nn.Sequential and gives ctensor's outputs; a checkpoint torch writes loads in ctensor.

Usage: torch_checkpoint.py DIR
Reads DIR/ctensor_model.safetensors and DIR/ctensor_io.safetensors ("input", "output"),
writes DIR/torch_model.safetensors and DIR/torch_io.safetensors. Exit 0 when they agree."""
import sys

import numpy as np
import torch
from safetensors.numpy import load_file, save_file
from safetensors.torch import load_file as load_torch, save_file as save_torch
from torch import nn


def model():
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(4 * 4 * 4, 5), nn.Tanh(), nn.Linear(5, 3))


def main():
    folder = sys.argv[1]
    ours = model()
    ours.load_state_dict(load_torch(f"{folder}/ctensor_model.safetensors"))  # strict
    ours.eval()
    io = load_file(f"{folder}/ctensor_io.safetensors")
    with torch.no_grad():
        out = ours(torch.from_numpy(io["input"])).numpy()
    error = float(np.abs(out - io["output"]).max())
    if error > 1e-5:
        print(f"torch_checkpoint.py: torch's output differs from ctensor's by {error}")
        return 1
    torch.manual_seed(5)
    theirs = model()
    theirs.train()
    x = torch.from_numpy(io["input"])
    with torch.no_grad():
        theirs(x)  # one batch updates the running statistics
    theirs.eval()
    with torch.no_grad():
        expected = theirs(x).numpy()
    save_torch(theirs.state_dict(), f"{folder}/torch_model.safetensors")
    save_file({"input": io["input"], "output": expected}, f"{folder}/torch_io.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The device-selection idiom, as PyTorch users write it, with ctensor.

    python python/examples/device_idiom.py

Picks cuda:0 when a GPU is usable (else the CPU, and says why not), puts a model and a batch
there, runs a forward and backward pass, and prints the transfers the C library counted.
"""

import ctensor as ct

device = ct.device("cuda:0" if ct.cuda.is_available() else "cpu")
if device.type == "cpu":
    print("CUDA unavailable:", ct.cuda.unavailable_reason())
print("device:", device)

ct.manual_seed(0)
model = ct.nn.Sequential(ct.nn.Linear(20, 64), ct.nn.ReLU(), ct.nn.Linear(64, 3)).to(device)
inputs = ct.randn(32, 20).to(device)
targets = ct.asarray([i % 3 for i in range(32)], dtype=ct.int64).to(device)

loss = ct.nn.functional.cross_entropy(model(inputs), targets)
loss.backward()
print("loss:", round(loss.item(), 4))
print("gradient shapes:", [tuple(p.grad.shape) for p in model.parameters()])
print("transfers:", ct.transfer_stats())

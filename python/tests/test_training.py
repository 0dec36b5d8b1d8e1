"""Training from Python, part three: what the issue must show. The examples (python/examples)
run on a slice of Fashion-MNIST (the ResNet on synthetic images), also under ct.autocast and
under `mpirun -np 2`; a
checkpoint written by ct.save loads into the same PyTorch model and gives the same outputs
(and back); 10^4 training steps leave the tensor count and the memory statistics where they
started. Each test that needs what may be missing (the data set, PyTorch, mpirun) is
skipped by name with the reason."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ctensor as ct
import ctensor.nn as nn
import ctensor.nn.functional as F
from conftest import to_numpy

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TIMEOUT = 600  # seconds: no run may hang the suite


def have_fashion_mnist():
    try:
        ct.data.fashion_mnist("test")
        return True
    except ct.FileError:
        return False


def run_example(*args, launcher=()):
    package_root = str(Path(ct.__file__).resolve().parents[1])  # the ctensor under test
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, OMP_WAIT_POLICY="passive", PYTHONPATH=path)
    done = subprocess.run([*launcher, sys.executable, *args], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_example_device_idiom():
    out = run_example(str(EXAMPLES / "device_idiom.py"))
    assert "device: " in out and "gradient shapes: [(64, 20), (64,), (3, 64), (3,)]" in out


@pytest.mark.parametrize("amp", [False, True], ids=["f32", "autocast"])
def test_example_cnn_on_a_slice(amp, tmp_path):
    if not have_fashion_mnist():
        pytest.skip("Fashion-MNIST is not installed (dataset-fashion-mnist)")
    save = tmp_path / "cnn.safetensors"
    args = ["--limit", "2048", "--epochs", "2", "--save", str(save)] + (["--amp"] if amp else [])
    out = run_example(str(EXAMPLES / "cnn_fashion_mnist.py"), *args)
    accuracy = float(out.strip().splitlines()[-1].split("test accuracy ")[1].split(",")[0])
    assert accuracy > 0.6, out  # 2 epochs of 2048 samples: well above chance (0.1)
    assert sorted(ct.load(save))[:2] == ["0.bias", "0.weight"]


def test_example_resnet_a_few_steps():
    """python/examples/resnet_cifar.py: two steps of each of two epochs on synthetic images
    (no data set needed), through the whole recipe (parameter groups, OneCycleLR, label
    smoothing)."""
    out = run_example(str(EXAMPLES / "resnet_cifar.py"), "--dataset", "synthetic", "--limit",
                      "64", "--batch-size", "16", "--epochs", "2", "--steps", "2")
    lines = out.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("epoch 2: loss "), out


def test_example_resnet20_is_the_c_librarys():
    """The example's ResNet20 has the C library's count (ct_nn_resnet20: 272,474 parameters
    for 3 channels) and PyTorch's CIFAR ResNet names."""
    spec = importlib.util.spec_from_file_location("resnet_cifar", EXAMPLES / "resnet_cifar.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    model = example.ResNet20(in_channels=3)
    assert sum(p.numel() for p in model.parameters()) == 272474
    names = list(model.state_dict())
    for name in ("conv1.weight", "bn1.running_mean", "layer1.0.conv1.weight",
                 "layer2.0.shortcut.0.weight", "layer2.0.shortcut.1.num_batches_tracked",
                 "layer3.2.bn2.bias", "linear.weight"):
        assert name in names, name
    assert "layer1.0.shortcut.0.weight" not in names


def test_example_cnn_under_mpirun():
    if not have_fashion_mnist():
        pytest.skip("Fashion-MNIST is not installed (dataset-fashion-mnist)")
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not found (install openmpi-bin, or run make deps)")
    launcher = ["timeout", str(TIMEOUT), "mpirun", "--oversubscribe", "--bind-to", "none",
                "-x", "OMP_NUM_THREADS=1", "-x", "OMP_WAIT_POLICY", "-x", "PYTHONPATH",
                "-x", "CT_CUDA_PLUGIN", "-np", "2"]
    if os.geteuid() == 0:
        launcher.insert(4, "--allow-run-as-root")
    out = run_example(str(EXAMPLES / "cnn_fashion_mnist.py"), "--limit", "1024", "--epochs",
                      "1", "--workers", "1", launcher=launcher)
    lines = [line for line in out.splitlines() if line.startswith("epoch")]
    assert len(lines) == 1 and "x 2 ranks" in lines[0], out  # rank 0 alone reports


def test_distributed_data_parallel_matches_one_rank():
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not found (install openmpi-bin, or run make deps)")
    launcher = ["timeout", "300", "mpirun", "--oversubscribe", "--bind-to", "none",
                "-x", "OMP_NUM_THREADS=1", "-x", "PYTHONPATH", "-np", "2"]
    if os.geteuid() == 0:
        launcher.insert(4, "--allow-run-as-root")
    script = Path(__file__).resolve().parent / "ddp_same_as_one_rank.py"
    out = run_example(str(script), launcher=launcher)
    assert "ddp: 6 steps x 2 ranks on " in out and "same as one rank" in out, out


TORCH_SIDE = r"""
import sys
import torch
from safetensors.torch import load_file, save_file
path, back, inputs = sys.argv[1:4]
torch.set_num_threads(1)
model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(4 * 14 * 14, 10))
model.load_state_dict(load_file(path))  # strict: every name and shape must match
x = load_file(inputs)["x"]
with torch.no_grad():
    y = model(x)
    for p in model.parameters():
        p.mul_(0.5)
save_file({"y": y.contiguous(), **{k: v.contiguous() for k, v in model.state_dict().items()}},
          back)
"""


def test_checkpoint_round_trip_with_pytorch(tmp_path):
    probe = subprocess.run([sys.executable, "-c", "import torch, safetensors.torch"],
                           capture_output=True, text=True, timeout=TIMEOUT)
    if probe.returncode != 0:
        pytest.skip("PyTorch with safetensors is not importable by this interpreter "
                    "(install python3-torch): " + probe.stderr.strip().splitlines()[-1])
    ct.manual_seed(5)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 14 * 14, 10))
    x = ct.randn(8, 1, 28, 28, device="cpu")
    path, back, inputs = (tmp_path / n for n in ("ct.st", "torch.st", "x.st"))
    ct.save(model.state_dict(), path)
    ct.save({"x": x}, inputs)
    subprocess.run([sys.executable, "-c", TORCH_SIDE, str(path), str(back), str(inputs)],
                   check=True, timeout=TIMEOUT, env=dict(os.environ, OMP_NUM_THREADS="1"))
    theirs = ct.load(back, device="cpu")
    with ct.no_grad():
        ours = model(x)
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs.pop("y")), atol=1e-5, rtol=1e-5)
    halved = {k: v.cpu() * 0.5 for k, v in model.state_dict().items()}
    model.load_state_dict(theirs)  # and back: PyTorch's halved weights
    for k, t in model.state_dict().items():
        np.testing.assert_allclose(to_numpy(t), to_numpy(halved[k]), rtol=1e-6, atol=1e-7)


def test_ten_thousand_steps_leave_nothing_behind(device):
    ct.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
    opt = ct.optim.Adam(model.parameters(), lr=1e-3)
    x = ct.randn(32, 8).to(device)
    y = ct.asarray(np.arange(32) % 4, dtype=ct.int64, device=device)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    first = step().item()  # the optimiser's state exists from here on
    opt.zero_grad()
    tensors, memory = ct.live_tensor_count(), ct.memory_stats(device)["allocated"]
    for _ in range(10_000):
        last = step()
    last = last.item()
    opt.zero_grad()
    assert last < first
    assert ct.live_tensor_count() == tensors
    assert ct.memory_stats(device)["allocated"] == memory

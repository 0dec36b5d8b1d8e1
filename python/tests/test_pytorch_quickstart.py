"""PyTorch's quickstart (python/examples/pytorch_quickstart.py) runs with only its imports
changed: the file as it is trains with ctensor, and the same file with its three import lines
put back to PyTorch's trains with PyTorch on the same data, to the same accuracy. Skipped by
name where the data set or PyTorch is missing."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ctensor

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pytorch_quickstart.py"
DATA = Path(os.environ.get("CT_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))
ARGS = ["--epochs", "2", "--limit", "6000", "--lr", "0.1"]
TIMEOUT = 600  # seconds: no run may hang the suite
# ctensor's import lines and PyTorch's, in the order they stand in the example.
IMPORTS = [("import ctensor as torch", "import torch"),
           ("from ctensor import nn", "from torch import nn"),
           ("from ctensor.utils.data import DataLoader, TensorDataset",
            "from torch.utils.data import DataLoader, TensorDataset")]


def accuracy_of(path):
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    root = str(Path(ctensor.__file__).resolve().parents[1])  # the ctensor under test
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, str(path), *ARGS], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"Done! accuracy ([0-9.]+)", done.stdout)
    assert found, done.stdout
    return float(found.group(1)), done.stdout


def test_quickstart_differs_from_pytorch_only_in_its_imports():
    lines = EXAMPLE.read_text().splitlines()
    ours = [line for line in lines if re.match(r"(import|from) ctensor\b", line)]
    assert ours == [a for a, _ in IMPORTS]
    assert not any("torch" in line and line not in ours for line in lines
                   if line.startswith(("import", "from")))


def test_quickstart_reaches_pytorchs_accuracy(tmp_path):
    if not (DATA / "train-images-idx3-ubyte.gz").exists():
        pytest.skip(f"Fashion-MNIST is not installed in {DATA} (dataset-fashion-mnist)")
    ours, out = accuracy_of(EXAMPLE)
    assert ours > 0.6, out  # 2 epochs of 6000 samples: far above chance (0.1)
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True,
                           text=True, timeout=TIMEOUT)
    if probe.returncode != 0:
        pytest.skip("PyTorch is not importable by this interpreter (install python3-torch); "
                    f"ctensor's run reached {ours:.3f}")
    text = EXAMPLE.read_text()
    for mine, theirs in IMPORTS:
        text = text.replace(mine + "\n", theirs + "\n", 1)
    torch_script = tmp_path / "quickstart_torch.py"
    torch_script.write_text(text)
    theirs, their_out = accuracy_of(torch_script)
    # The same data, model, optimiser and steps; only the initial weights and the shuffling
    # differ, which moves either accuracy by a point or two.
    assert ours >= theirs - 0.03, f"ctensor {ours:.3f}, PyTorch {theirs:.3f}\n{out}\n{their_out}"

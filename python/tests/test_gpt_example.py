"""python/examples/gpt.py, nanoGPT's model written against ct.nn as a PyTorch user would:
a short run on a small text learns (the validation loss falls well below ln 256 = 5.55 nats,
printed in bits per byte), in f32 and under bf16 autocast, and samples bytes; its state-dict
names are nanoGPT's and the classifier is tied to the token embedding."""

import importlib.util
import math
import random
import re

import numpy as np
import pytest

import ctensor as ct
from test_training import EXAMPLES, run_example


def _text(path):
    words = "the cat sat on a mat and dog ran to house red blue".split()
    rng = random.Random(1)
    path.write_text(" ".join(rng.choice(words) for _ in range(6000)))
    return path


@pytest.mark.parametrize("amp", [False, True], ids=["f32", "autocast"])
def test_gpt_example_learns(tmp_path, amp):
    args = ["--data", str(_text(tmp_path / "text.txt")), "--steps", "60", "--layers", "2",
            "--heads", "2", "--width", "32", "--context", "32", "--batch-size", "8",
            "--lr", "3e-3", "--sample", "20"] + (["--amp"] if amp else [])
    out = run_example(str(EXAMPLES / "gpt.py"), *args)
    found = re.search(r"validation loss ([0-9.]+), ([0-9.]+) bits per byte", out)
    assert found, out
    loss, bpb = float(found.group(1)), float(found.group(2))
    assert loss < 3.2 and abs(bpb - loss / math.log(2)) < 1e-3, out


def test_gpt_example_model_is_nanogpts(device):
    spec = importlib.util.spec_from_file_location("gpt_example", EXAMPLES / "gpt.py")
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    ct.manual_seed(0)
    model = gpt.GPT(11, 8, 2, 2, 8, 0.0).to(device)
    names = [name for name, _ in model.named_parameters()]
    assert names[:3] == ["transformer.wte.weight", "transformer.wpe.weight",
                         "transformer.h.0.ln_1.weight"]
    assert "transformer.h.1.attn.c_attn.weight" in names and "lm_head.weight" not in names
    assert sum(p.numel() for p in model.parameters()) == (11 + 8) * 8 + 2 * (12 * 64 + 13 * 8) + 16
    idx = ct.asarray(np.array([[1, 2, 3, 4]]), dtype=ct.int64, device=device)
    logits, loss = model(idx, idx)
    loss.backward()
    wte = model.transformer.wte.weight
    assert logits.shape == (1, 4, 11) and wte.grad is not None
    # Tied: rows of tokens never seen as input still get gradient through the classifier.
    assert np.abs(wte.grad.to("cpu").numpy()[7]).sum() > 0

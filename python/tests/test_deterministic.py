"""ct.use_deterministic_algorithms / ct.are_deterministic_algorithms_enabled, with PyTorch's
names and behaviour: off by default, bool arguments only, warn_only accepted; and, with the
switch on, on every device, the embedding's backward (a scatter-add of repeated indices, with
atomics on a GPU otherwise) gives the same gradient twice, the bits of the CPU's."""

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy


@pytest.fixture
def deterministic():
    """The switch on for the test, off again after it (its default)."""
    ct.use_deterministic_algorithms(True)
    yield
    ct.use_deterministic_algorithms(False)


def test_off_by_default():
    assert ct.are_deterministic_algorithms_enabled() is False


def test_set_and_read_back():
    try:
        assert ct.use_deterministic_algorithms(True) is None
        assert ct.are_deterministic_algorithms_enabled() is True
        ct.use_deterministic_algorithms(mode=False)
        assert ct.are_deterministic_algorithms_enabled() is False
        ct.use_deterministic_algorithms(True, warn_only=True)
        assert ct.are_deterministic_algorithms_enabled() is True
    finally:
        ct.use_deterministic_algorithms(False)


@pytest.mark.parametrize("args, kwargs", [((1,), {}), (("yes",), {}), ((None,), {}),
                                          ((True,), {"warn_only": 1}), ((), {}),
                                          ((True, False), {})])
def test_arguments_are_checked_as_pytorch(args, kwargs):
    with pytest.raises(TypeError):
        ct.use_deterministic_algorithms(*args, **kwargs)
    assert ct.are_deterministic_algorithms_enabled() is False


def _embedding_grad(device):
    """The weight's gradient of sum(embedding(idx, w) * g) for indices that repeat and
    addends whose f32 sum depends on the order (2^25 absorbs the small ones until -2^25)."""
    idx = np.array([i * 7 % 5 for i in range(64)], dtype=np.int64)
    g = np.where(np.arange(64 * 3).reshape(64, 3) % 4 == 0,
                 np.where(np.arange(64 * 3).reshape(64, 3) % 8 == 0, 2.0**25, -2.0**25),
                 1.0 + 0.5 * (np.arange(64 * 3).reshape(64, 3) % 3)).astype(np.float32)
    w = ct.zeros((5, 3), dtype=ct.float32, device=device).requires_grad_()
    y = ct.nn.functional.embedding(ct.asarray(idx, device=device), w)
    ct.sum(y * ct.asarray(g, device=device)).backward()
    return to_numpy(w.grad)


def test_embedding_backward_same_bits_as_cpu(device, deterministic):
    first, second = _embedding_grad(device), _embedding_grad(device)
    on_cpu = _embedding_grad(ct.device("cpu"))
    assert first.tobytes() == second.tobytes() == on_cpu.tobytes()

"""Memory formats as PyTorch's: x.to(memory_format=ct.channels_last), x.contiguous(memory_format=...),
x.is_contiguous(memory_format=...) and x.stride(), their errors, and the layers the ResNets use on
channels-last input (the same values and gradients as on NCHW input, channels-last outputs), on
every device."""

import numpy as np
import pytest

import ctensor as ct

from conftest import to_numpy

nn = ct.nn
F = nn.functional


def test_channels_last_strides_and_queries(device):
    values = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    x = ct.asarray(values, device=device)
    y = x.to(memory_format=ct.channels_last)
    assert y.stride() == (60, 1, 15, 3) and y.stride(1) == 1 and y.stride(-1) == 3
    assert y.is_contiguous(memory_format=ct.channels_last)
    assert not y.is_contiguous() and x.is_contiguous()
    assert not x.is_contiguous(memory_format=ct.channels_last)
    np.testing.assert_array_equal(to_numpy(y), values)
    assert y.contiguous(memory_format=ct.channels_last) is y
    assert y.to(memory_format=ct.preserve_format) is y
    back = y.contiguous()
    assert back.is_contiguous() and back.stride() == (60, 20, 5, 1)
    np.testing.assert_array_equal(to_numpy(back), values)
    z = x.to(ct.float64, memory_format=ct.channels_last)
    assert z.dtype == ct.float64 and z.is_contiguous(memory_format=ct.channels_last)
    assert repr(ct.channels_last) == "ctensor.channels_last"
    assert isinstance(ct.contiguous_format, ct.memory_format)


def test_memory_format_errors():
    x = ct.zeros((2, 3, 4))
    with pytest.raises(ct.ShapeError, match="4-d"):
        x.to(memory_format=ct.channels_last)
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format="channels_last")
    with pytest.raises(ValueError, match="preserve_format"):
        x.is_contiguous(memory_format=ct.preserve_format)
    assert not x.is_contiguous(memory_format=ct.channels_last)


def test_conv_bn_relu_add_pool_on_channels_last(device):
    ct.manual_seed(0)
    conv = nn.Conv2d(3, 8, 3, padding=1, bias=False).to(device)
    bn = nn.BatchNorm2d(8).to(device)
    rng = np.random.default_rng(0)
    values = rng.standard_normal((4, 3, 9, 7)).astype(np.float32)
    skip = rng.standard_normal((4, 8, 9, 7)).astype(np.float32)
    results = []
    for fmt in (ct.contiguous_format, ct.channels_last):
        x = ct.asarray(values, device=device).to(memory_format=fmt)
        x.requires_grad_(True)
        s = ct.asarray(skip, device=device).to(memory_format=fmt)
        h = F.relu(bn(conv(x)))
        assert h.is_contiguous(memory_format=fmt)
        y = F.adaptive_avg_pool2d(F.relu(h + s), 1)
        y.sum().backward()
        results.append((to_numpy(h), to_numpy(y), to_numpy(x.grad)))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)

"""ct.nn.init against torch.nn.init's definitions: the distributions' moments (from the
formulas, on enough samples that a wrong scale fails), bounds, orthogonality, the exact
eye_ and dirac_ patterns, calculate_gain's table and the errors; each in place, on every
device, with the tensor still a leaf that requires grad."""

import math

import numpy as np
import pytest

import ctensor as ct
import ctensor.nn as nn
from conftest import to_numpy


def _param(shape, device):
    return nn.Parameter(ct.zeros(shape, device=device))


def _close(actual, expected, rel):
    assert abs(actual - expected) <= rel * abs(expected), (actual, expected)


def test_fans_and_gain():
    assert nn.init._calculate_fan_in_and_fan_out(ct.zeros((16, 8, 3, 3))) == (72, 144)
    assert nn.init._calculate_fan_in_and_fan_out(ct.zeros((5, 7))) == (7, 5)
    with pytest.raises(ValueError):
        nn.init._calculate_fan_in_and_fan_out(ct.zeros((5,)))
    gain = nn.init.calculate_gain
    for name in ("linear", "identity", "sigmoid", "conv1d", "conv2d", "conv3d",
                 "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        assert gain(name) == 1.0
    assert gain("tanh") == 5 / 3 and gain("relu") == math.sqrt(2) and gain("selu") == 0.75
    assert gain("leaky_relu") == math.sqrt(2 / (1 + 0.01 ** 2))
    assert gain("leaky_relu", 0) == math.sqrt(2)  # a slope of 0 is not the default 0.01
    assert gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    with pytest.raises(ValueError):
        gain("softsign")
    with pytest.raises(ValueError):
        gain("leaky_relu", True)


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming_and_xavier_normal(device, mode):
    ct.manual_seed(3)
    w = _param((256, 512), device)
    assert nn.init.kaiming_normal_(w, mode=mode, nonlinearity="relu") is w
    fan = 512 if mode == "fan_in" else 256
    values = to_numpy(w)
    _close(values.std(), math.sqrt(2 / fan), 0.02)
    assert abs(values.mean()) < 0.01 * math.sqrt(2 / fan)
    nn.init.xavier_normal_(w, gain=2.0)
    _close(to_numpy(w).std(), 2 * math.sqrt(2 / (256 + 512)), 0.02)
    assert w.requires_grad and w.is_leaf
    with pytest.raises(ValueError):
        nn.init.kaiming_normal_(w, mode="fan_both")


def _truncated_moments(mean, std, a, b):
    """The mean and standard deviation of Normal(mean, std) truncated to [a, b]."""
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = [math.exp(-v * v / 2) / math.sqrt(2 * math.pi) for v in (alpha, beta)]
    z = (math.erf(beta / math.sqrt(2)) - math.erf(alpha / math.sqrt(2))) / 2
    shift = (pdf[0] - pdf[1]) / z
    variance = 1 + (alpha * pdf[0] - beta * pdf[1]) / z - shift * shift
    return mean + std * shift, std * math.sqrt(variance)


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 0.02, -0.04, 0.04), (0.0, 1.0, 1.0, 3.0),
                                             (1.0, 2.0, -10.0, 0.0), (0.0, 1.0, 6.0, 7.0)])
def test_trunc_normal(device, mean, std, a, b):
    ct.manual_seed(4)
    w = _param((400, 500), device)
    nn.init.trunc_normal_(w, mean=mean, std=std, a=a, b=b)
    values = to_numpy(w).astype(np.float64)
    assert values.min() >= np.float32(a) and values.max() <= np.float32(b)
    expected_mean, expected_std = _truncated_moments(mean, std, a, b)
    assert abs(values.mean() - expected_mean) < 0.01 * expected_std
    _close(values.std(), expected_std, 0.02)
    with pytest.raises(ValueError):
        nn.init.trunc_normal_(w, a=1.0, b=1.0)


@pytest.mark.parametrize("shape", [(64, 32), (32, 64), (16, 8, 3, 3), (1, 5)])
def test_orthogonal(device, shape):
    ct.manual_seed(5)
    w = _param(shape, device)
    nn.init.orthogonal_(w, gain=3.0)
    flat = to_numpy(w).astype(np.float64).reshape(shape[0], -1)
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, 9 * np.eye(gram.shape[0]), atol=1e-5)
    assert w.requires_grad and w.is_leaf
    with pytest.raises(ValueError):
        nn.init.orthogonal_(ct.zeros((4,), device=device))


def test_eye_and_dirac(device):
    w = _param((3, 5), device)
    nn.init.eye_(w)
    np.testing.assert_array_equal(to_numpy(w), np.eye(3, 5))
    expected = np.zeros((6, 2, 3, 5))
    for g in range(2):  # 3 out-channels per group, 2 in-channels: the first 2 of each group
        for c in range(2):
            expected[g * 3 + c, c, 1, 2] = 1
    w = _param((6, 2, 3, 5), device)
    nn.init.dirac_(w, groups=2)
    np.testing.assert_array_equal(to_numpy(w), expected)
    w1 = _param((2, 4, 3), device)
    nn.init.dirac_(w1)
    expected1 = np.zeros((2, 4, 3))
    expected1[0, 0, 1] = expected1[1, 1, 1] = 1
    np.testing.assert_array_equal(to_numpy(w1), expected1)
    with pytest.raises(ValueError):
        nn.init.eye_(ct.zeros((2, 2, 2), device=device))
    with pytest.raises(ValueError):
        nn.init.dirac_(ct.zeros((3, 3), device=device))
    with pytest.raises(ValueError):
        nn.init.dirac_(_param((5, 2, 3, 3), device), groups=2)

"""Training from Python, part one: autograd (requires_grad, .grad, backward, detach,
no_grad/enable_grad), ct.nn's modules, functional and init, on every device present,
against float64 NumPy references."""

import numpy as np
import pytest

import ctensor as ct
import ctensor.nn as nn
import ctensor.nn.functional as F
from conftest import to_numpy


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_backward_accumulates_gradients(device):
    xs = rnd(3, 4)
    x = ct.asarray(xs, device=device).requires_grad_()
    assert x.requires_grad and x.is_leaf and x.grad is None
    y = ct.sum(x * x)
    assert y.requires_grad and not y.is_leaf
    y.backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2 * xs.astype(np.float64), rtol=1e-6)
    ct.sum(x * 3.0).backward()  # accumulates, as PyTorch's
    np.testing.assert_allclose(to_numpy(x.grad), 2 * xs.astype(np.float64) + 3, rtol=1e-6)
    x.grad = None
    assert x.grad is None


def test_backward_with_gradient_and_errors(device):
    x = ct.asarray(rnd(5), device=device).requires_grad_()
    y = x * 2.0
    with pytest.raises(ct.ShapeError):
        y.backward()  # not a scalar: needs a gradient
    g = rnd(5, seed=1)
    y.backward(ct.asarray(g, device=device))
    np.testing.assert_allclose(to_numpy(x.grad), 2 * g.astype(np.float64), rtol=1e-6)
    with pytest.raises(ct.StateError):
        y.backward(ct.asarray(g, device=device))  # the graph was freed
    with pytest.raises(ct.DTypeError):
        ct.asarray([1, 2], device=device).requires_grad_()
    with pytest.raises(ct.ShapeError):
        x.grad = ct.zeros(4, device=device)  # an assigned gradient has the tensor's shape


def test_detach_and_no_grad(device):
    x = ct.asarray(rnd(4), device=device).requires_grad_()
    d = x.detach()
    assert not d.requires_grad and d.tolist() == x.tolist()
    with ct.no_grad():
        assert not ct.is_grad_enabled()
        assert not (x * 2.0).requires_grad
        with ct.enable_grad():
            assert ct.is_grad_enabled() and (x * 2.0).requires_grad
        assert not ct.is_grad_enabled()
    assert ct.is_grad_enabled()

    @ct.no_grad()
    def doubled(t):
        return t * 2.0

    assert not doubled(x).requires_grad and ct.is_grad_enabled()


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 3, bias=False)
        self.scale = nn.Parameter(ct.ones((3,)))
        self.register_buffer("offset", ct.zeros((3,)))
        self.note = "not registered"

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale + self.offset


def test_module_registration_and_state_dict():
    m = TwoLayer()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert list(m.state_dict()) == ["scale", "offset", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in m.named_buffers()] == ["offset"]
    assert [type(c).__name__ for c in m.children()] == ["Linear", "ReLU", "Linear"]
    assert len(list(m.modules())) == 4
    assert m.fc1.weight.shape == (8, 6) and m.note == "not registered"
    assert "Linear(in_features=6, out_features=8, bias=True)" in repr(m)
    with pytest.raises(AttributeError):
        m.missing


def test_module_forward_matches_reference(device):
    ct.manual_seed(3)
    m = TwoLayer().to(device)
    assert all(p.device == device for p in m.parameters())
    xs = rnd(5, 6)
    y = m(ct.asarray(xs, device=device))
    w1, b1 = (to_numpy(t).astype(np.float64) for t in (m.fc1.weight, m.fc1.bias))
    w2 = to_numpy(m.fc2.weight).astype(np.float64)
    expected = np.maximum(xs @ w1.T + b1, 0) @ w2.T
    np.testing.assert_allclose(to_numpy(y), expected, rtol=1e-5, atol=1e-6)
    ct.sum(y).backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_load_state_dict(device):
    a, b = TwoLayer(), TwoLayer().to(device)
    b.load_state_dict(a.state_dict())
    for (na, ta), (nb, tb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb and tb.device == device
        np.testing.assert_array_equal(to_numpy(ta), to_numpy(tb))
    sd = dict(a.state_dict())
    del sd["fc2.weight"]
    with pytest.raises(RuntimeError, match="fc2.weight"):
        b.load_state_dict(sd)
    missing, unexpected = b.load_state_dict(sd, strict=False)
    assert missing == ["fc2.weight"] and unexpected == []
    sd["fc2.weight"] = ct.zeros((2, 2))
    with pytest.raises(RuntimeError, match="shape"):
        b.load_state_dict(sd)


def test_builtin_layers_and_modes(device):
    x = ct.asarray(rnd(2, 3, 8, 8), device=device)
    seq = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.GELU(),
                        nn.MaxPool2d(2), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                        nn.Dropout(0.5), nn.Linear(4, 5), nn.Tanh(), nn.Sigmoid(),
                        nn.LayerNorm(5), nn.Softmax(dim=1)).to(device)
    assert "1.running_mean" in seq.state_dict() and len(seq) == 13
    y = seq(x)
    assert y.shape == (2, 5)
    np.testing.assert_allclose(to_numpy(ct.sum(y, axis=1)), np.ones(2), rtol=1e-5)
    seq.eval()
    assert not seq.training and not seq[7].training
    z1, z2 = seq(x), seq(x)  # dropout off, batch norm on running statistics
    np.testing.assert_array_equal(to_numpy(z1), to_numpy(z2))
    emb = nn.Embedding(10, 4).to(device)
    assert emb(ct.asarray([[1, 2], [3, 4]], device=device)).shape == (2, 2, 4)
    with pytest.raises(ct.UnsupportedError):
        nn.Conv2d(1, 1, (3, 5))
    with pytest.raises(ct.InvalidArgumentError):
        nn.Linear(0, 3)


def test_functional_against_reference(device):
    logits, target = rnd(6, 4), np.array([0, 3, 1, 2, 2, 0])
    lg = ct.asarray(logits, device=device)
    tg = ct.asarray(target, dtype=ct.int64, device=device)
    l64 = logits.astype(np.float64)
    logp = l64 - np.log(np.exp(l64).sum(1, keepdims=True))
    ce = -logp[np.arange(6), target].mean()
    assert abs(F.cross_entropy(lg, tg).item() - ce) < 1e-5
    assert abs(F.cross_entropy(lg, tg, reduction="sum").item() - 6 * ce) < 1e-4
    np.testing.assert_allclose(to_numpy(F.log_softmax(lg, dim=1)), logp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(F.softmax(lg, 1)), np.exp(logp), rtol=1e-5, atol=1e-7)
    other = rnd(6, 4, seed=2)
    mse = ((l64 - other) ** 2).mean()
    assert abs(F.mse_loss(lg, ct.asarray(other, device=device)).item() - mse) < 1e-5
    np.testing.assert_allclose(to_numpy(F.relu(lg)), np.maximum(l64, 0), rtol=1e-6)
    w, b = rnd(3, 4, seed=4), rnd(3, seed=5)
    lin = F.linear(lg, ct.asarray(w, device=device), ct.asarray(b, device=device))
    np.testing.assert_allclose(to_numpy(lin), l64 @ w.T + b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(lg, tg, reduction="avg")


def test_conv_and_pool_functional(device):
    xs, ws = rnd(1, 1, 4, 4), rnd(2, 1, 3, 3, seed=1)
    y = F.conv2d(ct.asarray(xs, device=device), ct.asarray(ws, device=device), padding=1)
    padded = np.pad(xs[0, 0].astype(np.float64), 1)
    ref = np.array([[[np.sum(padded[i:i + 3, j:j + 3] * ws[o, 0]) for j in range(4)]
                     for i in range(4)] for o in range(2)])
    np.testing.assert_allclose(to_numpy(y)[0], ref, rtol=1e-5, atol=1e-5)
    p = F.max_pool2d(ct.asarray(xs, device=device), 2)
    np.testing.assert_array_equal(to_numpy(p)[0, 0], xs[0, 0].reshape(2, 2, 2, 2).max((1, 3)))
    d = F.dropout(ct.ones((1000,), device=device), p=0.5)
    values = set(np.unique(to_numpy(d)).tolist())
    assert values <= {0.0, 2.0} and len(values) == 2
    np.testing.assert_array_equal(to_numpy(F.dropout(d, 0.5, training=False)), to_numpy(d))


def test_init_and_clip_grad_norm(device):
    ct.manual_seed(1)
    w = nn.Parameter(ct.zeros((64, 32), device=device))
    nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    bound = 1 / 32 ** 0.5
    values = to_numpy(w)
    assert values.min() >= -bound and values.max() <= bound and values.std() > bound / 3
    nn.init.zeros_(w)
    assert not to_numpy(w).any() and w.requires_grad and w.is_leaf
    nn.init.constant_(w, 0.5)
    assert (to_numpy(w) == 0.5).all()
    ct.sum(w * w).backward()  # grad = 2w = 1 everywhere: norm sqrt(2048)
    norm = nn.utils.clip_grad_norm_([w], max_norm=1.0)
    assert abs(norm - 2048 ** 0.5) < 1e-3
    assert abs(np.linalg.norm(to_numpy(w.grad).astype(np.float64)) - 1.0) < 1e-4

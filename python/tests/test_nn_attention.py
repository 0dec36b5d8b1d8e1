"""ct.nn.functional.scaled_dot_product_attention and ct.nn.MultiheadAttention against float64
NumPy references: PyTorch's argument names, causal and masked attention (bool and float
masks, key padding), Tq != Tk and head sizes that differ, gradients, and the module's
parameters, shapes (batch_first or not, unbatched) and attention weights."""

import math

import numpy as np
import pytest

import ctensor as ct

from conftest import to_numpy

nn = ct.nn
F = nn.functional


def _sdpa_reference(q, k, v, bias=None, causal=False, scale=None):
    """softmax(q k^T * scale + bias) v in float64; bias -inf hides a key."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = s + np.where(np.tril(np.ones((q.shape[-2], k.shape[-2]), bool)), 0.0, -np.inf)
    if bias is not None:
        s = s + bias
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    p = p / p.sum(-1, keepdims=True)
    return p @ v, p


def _rand(rng, *shape):
    return rng.uniform(-1.0, 1.0, shape)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 5, 5, 4, 4), (1, 2, 7, 11, 5, 3), (2, 1, 1, 1, 3, 2),
                                   (1, 1, 9, 4, 6, 6)])
def test_sdpa_matches_reference(device, shape, causal):
    b, h, tq, tk, d, dv = shape
    rng = np.random.default_rng(1)
    q, k, v = _rand(rng, b, h, tq, d), _rand(rng, b, h, tk, d), _rand(rng, b, h, tk, dv)
    expected, _ = _sdpa_reference(q, k, v, causal=causal)
    for dtype, tol in ((ct.float64, 1e-12), (ct.float32, 1e-5)):
        args = [ct.tensor(x, dtype=dtype, device=device) for x in (q, k, v)]
        out = F.scaled_dot_product_attention(*args, is_causal=causal)
        assert out.dtype == dtype and tuple(out.shape) == (b, h, tq, dv)
        np.testing.assert_allclose(to_numpy(out), expected, rtol=tol, atol=tol)


def test_sdpa_masks_and_scale(device):
    rng = np.random.default_rng(2)
    q, k, v = _rand(rng, 2, 2, 4, 3), _rand(rng, 2, 2, 6, 3), _rand(rng, 2, 2, 6, 5)
    keep = rng.uniform(size=(2, 1, 4, 6)) > 0.3
    keep[..., 0] = True
    t = [ct.tensor(x, dtype=ct.float64, device=device) for x in (q, k, v)]
    # A bool mask: True attends (broadcast over the heads).
    out = F.scaled_dot_product_attention(*t, attn_mask=ct.tensor(keep, device=device), scale=0.5)
    expected, _ = _sdpa_reference(q, k, v, np.where(keep, 0.0, -np.inf), scale=0.5)
    np.testing.assert_allclose(to_numpy(out), expected, rtol=1e-12, atol=1e-12)
    # A float mask is added to the scores (a (S,) row broadcast to every query).
    bias = rng.uniform(-2, 2, size=(6,))
    out = F.scaled_dot_product_attention(*t, attn_mask=ct.tensor(bias, device=device))
    expected, _ = _sdpa_reference(q, k, v, bias)
    np.testing.assert_allclose(to_numpy(out), expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(Exception, match="both given"):
        F.scaled_dot_product_attention(*t, attn_mask=ct.tensor(keep, device=device),
                                       is_causal=True)
    with pytest.raises(ValueError, match="scale=0"):
        F.scaled_dot_product_attention(*t, scale=0.0)


def test_sdpa_gradients(device):
    """The gradients of sum(u * out) against the reference's, by the chain rule in NumPy."""
    rng = np.random.default_rng(3)
    q, k, v = _rand(rng, 1, 2, 5, 3), _rand(rng, 1, 2, 7, 3), _rand(rng, 1, 2, 7, 4)
    u = _rand(rng, 1, 2, 5, 4)
    t = [ct.tensor(x, dtype=ct.float64, device=device, requires_grad=True) for x in (q, k, v)]
    out = F.scaled_dot_product_attention(*t, is_causal=True)
    (out * ct.tensor(u, device=device)).sum().backward()
    _, p = _sdpa_reference(q, k, v, causal=True)
    scale = 1.0 / math.sqrt(3)
    dp = u @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    np.testing.assert_allclose(to_numpy(t[2].grad), np.swapaxes(p, -1, -2) @ u, atol=1e-12)
    np.testing.assert_allclose(to_numpy(t[0].grad), ds @ k * scale, atol=1e-12)
    np.testing.assert_allclose(to_numpy(t[1].grad), np.swapaxes(ds, -1, -2) @ q * scale,
                               atol=1e-12)


def _mha_reference(m, query, key, value, key_padding_mask=None, attn_mask=None):
    """torch.nn.MultiheadAttention's arithmetic in float64 (batch_first inputs)."""
    e, h = m.embed_dim, m.num_heads
    w = to_numpy(m.in_proj_weight).astype(np.float64)
    b = to_numpy(m.in_proj_bias).astype(np.float64)
    proj = [x @ w[i * e:(i + 1) * e].T + b[i * e:(i + 1) * e]
            for i, x in enumerate((query, key, value))]
    n, length, s = query.shape[0], query.shape[1], key.shape[1]
    q, k, v = (y.reshape(n, y.shape[1], h, e // h).transpose(0, 2, 1, 3) for y in proj)
    bias = np.zeros((n, 1, length, s))
    if attn_mask is not None:
        bias = bias + np.where(attn_mask, -np.inf, 0.0)
    if key_padding_mask is not None:
        bias = bias + np.where(key_padding_mask, -np.inf, 0.0)[:, None, None, :]
    out, p = _sdpa_reference(q, k, v, bias)
    out = out.transpose(0, 2, 1, 3).reshape(n, length, e)
    wo = to_numpy(m.out_proj.weight).astype(np.float64)
    bo = to_numpy(m.out_proj.bias).astype(np.float64)
    return out @ wo.T + bo, p.mean(1)


def test_multihead_attention_parameters():
    m = nn.MultiheadAttention(8, 2)
    names = [name for name, _ in m.named_parameters()]
    assert names == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert tuple(m.in_proj_weight.shape) == (24, 8)
    assert np.all(to_numpy(m.in_proj_bias) == 0) and np.all(to_numpy(m.out_proj.bias) == 0)
    bound = math.sqrt(6.0 / (24 + 8))
    assert np.all(np.abs(to_numpy(m.in_proj_weight)) <= bound)
    other = nn.MultiheadAttention(8, 4, kdim=5, vdim=3, bias=False)
    shapes = {name: tuple(p.shape) for name, p in other.named_parameters()}
    assert shapes == {"q_proj_weight": (8, 8), "k_proj_weight": (8, 5), "v_proj_weight": (8, 3),
                      "out_proj.weight": (8, 8)}
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(10, 3)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_reference(device, batch_first):
    ct.manual_seed(0)
    m = nn.MultiheadAttention(12, 3, batch_first=batch_first).to(device)
    rng = np.random.default_rng(4)
    query, key = _rand(rng, 2, 5, 12), _rand(rng, 2, 7, 12)
    value = _rand(rng, 2, 7, 12)
    pad = np.zeros((2, 7), bool)
    pad[1, 5:] = True
    causal = ~np.tril(np.ones((5, 7), bool))
    expected, weights = _mha_reference(m, query, key, value, pad, causal)

    def arrange(x):
        x = x if batch_first else x.transpose(1, 0, 2)
        return ct.tensor(x.astype(np.float32), device=device)

    args = [arrange(x) for x in (query, key, value)]
    masks = dict(key_padding_mask=ct.tensor(pad, device=device),
                 attn_mask=ct.tensor(causal, device=device))
    for need_weights in (True, False):
        out, w = m(*args, need_weights=need_weights, **masks)
        got = to_numpy(out)
        got = got if batch_first else got.transpose(1, 0, 2)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
        if need_weights:
            np.testing.assert_allclose(to_numpy(w), weights, rtol=1e-4, atol=1e-5)
        else:
            assert w is None
    # A bool key padding mask alone goes to the fused path as a (N, 1, 1, S) mask.
    expected, _ = _mha_reference(m, query, key, value, pad)
    out, _ = m(*args, key_padding_mask=masks["key_padding_mask"], need_weights=False)
    got = to_numpy(out)
    np.testing.assert_allclose(got if batch_first else got.transpose(1, 0, 2), expected,
                               rtol=1e-4, atol=1e-5)


def test_multihead_attention_unbatched_and_backward(device):
    m = nn.MultiheadAttention(8, 2, batch_first=True).to(device)
    rng = np.random.default_rng(5)
    x = _rand(rng, 6, 8)
    causal = ~np.tril(np.ones((6, 6), bool))
    expected, _ = _mha_reference(m, x[None], x[None], x[None], attn_mask=causal)
    xt = ct.tensor(x.astype(np.float32), device=device, requires_grad=True)
    out, w = m(xt, xt, xt, attn_mask=ct.tensor(causal, device=device), need_weights=False,
               is_causal=True)
    assert w is None and tuple(out.shape) == (6, 8)
    np.testing.assert_allclose(to_numpy(out), expected[0], rtol=1e-4, atol=1e-5)
    out.sum().backward()
    assert xt.grad is not None and m.in_proj_weight.grad is not None
    assert np.all(np.isfinite(to_numpy(m.in_proj_weight.grad)))
    with pytest.raises(RuntimeError, match="need attn_mask"):
        m(xt, xt, xt, is_causal=True)

"""Arrays of rank 9 to 16 (ctensor's limit) through the module: elementwise with broadcasting,
reductions over axes past the eighth, permutes, reshapes and views, indexing, matmul with 14
batch axes, the array API suite's rank-9 tensordot (empty and not) and a rank-16 one, concat
and stack, gradients, NumPy/DLPack exchange and safetensors; each against NumPy in float64.
Rank 17 is refused with ShapeError naming the limit."""

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

SHAPES = {
    9: (2, 3, 1, 2, 2, 1, 3, 2, 2),
    12: (3, 2, 2, 1, 2, 2, 1, 2, 2, 1, 3, 1),
    16: (2, 3, 2, 2, 1, 2, 2, 1, 2, 2, 1, 2, 2, 1, 2, 1),
}


def _values(shape, seed):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def _reversed_view(a, device):
    """a as a ctensor array whose axes are stored in reverse order (not contiguous)."""
    stored = ct.asarray(np.ascontiguousarray(a.transpose()), device=device)
    return ct.permute_dims(stored, tuple(range(a.ndim - 1, -1, -1)))


def _close(x, expected, tol=1e-12):
    assert x.shape == expected.shape
    np.testing.assert_allclose(to_numpy(x), expected, rtol=tol, atol=tol)


def _unbroadcast(g, shape):
    """g summed over the axes that broadcasting added or stretched to reach its shape."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    return g.sum(axis=tuple(d for d, s in enumerate(shape) if s == 1), keepdims=True)


@pytest.mark.parametrize("rank", [9, 12, 16])
def test_elementwise_broadcast(device, rank):
    full = SHAPES[rank]
    a = _values(tuple(1 if d % 3 == 1 else s for d, s in enumerate(full)), rank)
    b = _values(tuple(1 if d % 4 == 2 else s for d, s in enumerate(full))[1:], rank + 1)
    x, xs, y = ct.asarray(a, device=device), _reversed_view(a, device), ct.asarray(b, device=device)
    _close(x + y, a + b)
    _close(xs * y, a * b)
    _close(ct.where(xs > 0, xs, y), np.where(a > 0, a, b))
    _close(ct.exp(xs), np.exp(a))


@pytest.mark.parametrize(
    "rank, axes, keepdims",
    [(16, (0, 8, 11, 15), False), (16, (9, 12, 14), True), (12, (1, 10, 11), False),
     (9, (8,), True), (16, None, False)],
)
def test_reductions(device, rank, axes, keepdims):
    a = _values(SHAPES[rank], 20 + rank)
    x = _reversed_view(a, device)
    _close(ct.sum(x, axis=axes, keepdims=keepdims), a.sum(axis=axes, keepdims=keepdims))
    _close(ct.max(x, axis=axes, keepdims=keepdims), a.max(axis=axes, keepdims=keepdims))
    _close(ct.mean(x, axis=axes, keepdims=keepdims), a.mean(axis=axes, keepdims=keepdims))
    _close(ct.std(x, axis=axes, keepdims=keepdims), a.std(axis=axes, keepdims=keepdims))


def test_permute_reshape_view_copy(device):
    a = _values(SHAPES[16], 30)
    x = ct.asarray(a, device=device)
    perm = tuple((5 * d + 3) % 16 for d in range(16))
    p = ct.permute_dims(x, perm)
    _close(p, a.transpose(perm), 0)
    _close(ct.reshape(p, (3, 2, 2, 2, 2, 2, 2, 2, 8)),
           a.transpose(perm).reshape(3, 2, 2, 2, 2, 2, 2, 2, 8), 0)
    _close(ct.matrix_transpose(x), np.swapaxes(a, -1, -2), 0)
    _close(ct.moveaxis(x, 0, 15), np.moveaxis(a, 0, 15), 0)
    shape12 = (2,) * 10 + (3, 1)
    _close(x.view(*shape12), a.reshape(shape12))
    # a strided slice written into a permuted view
    out = ct.zeros(SHAPES[16][::-1], dtype=ct.float64, device=device)
    view = ct.permute_dims(out, tuple(range(15, -1, -1)))
    view[:, ::2] = x[:, ::2]
    expected = np.zeros(SHAPES[16])
    expected[:, ::2] = a[:, ::2]
    _close(out, expected.transpose(), 0)


def test_indexing(device):
    a = _values(SHAPES[16], 40)
    x = _reversed_view(a, device)
    _close(x[1, ..., 0], a[1, ..., 0], 0)
    key = (slice(None), slice(None, None, 2)) + (slice(None),) * 12 + (slice(None, None, -1),)
    _close(x[key], a[key], 0)
    _close(x[..., None, 0, :, 0], a[..., None, 0, :, 0], 0)
    index = np.array([1, 0, 1])
    _close(x[..., ct.asarray(index, device=device), :], a[..., index, :], 0)
    _close(ct.take(x, ct.asarray(index, device=device), axis=14), np.take(a, index, axis=14), 0)
    mask = a > 0.25
    _close(x[ct.asarray(mask, device=device)], a[mask], 0)
    y = ct.asarray(a, device=device)
    y[..., 1, :] = -1.0
    b = a.copy()
    b[..., 1, :] = -1.0
    _close(y, b, 0)


@pytest.mark.parametrize("dtype", [ct.float64, ct.float32, ct.int32])
def test_matmul_14_batch_axes(device, dtype):
    nd = {ct.float64: np.float64, ct.float32: np.float32, ct.int32: np.int32}[dtype]
    a = (_values((2, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4), 50) * 8).astype(nd)
    b = (_values((1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 2), 51) * 8).astype(nd)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    got = ct.asarray(a, device=device) @ _reversed_view(b, device)
    assert got.dtype == dtype
    _close(got, expected, 1e-5 if dtype == ct.float32 else 1e-12)


@pytest.mark.parametrize(
    "shape1, shape2",
    [
        ((2, 1, 3, 2, 2), (3, 1, 2, 2)),
        ((2, 0, 3, 1, 2), (3, 1, 2, 2)),
        ((3, 1, 2, 2), (2, 1, 3, 0, 2)),
    ],
)
def test_tensordot_rank_9(device, shape1, shape2):
    # the array API suite's case: axes=((), ()) gives the outer product, rank 9
    a, b = _values(shape1, 60), _values(shape2, 61)
    got = ct.tensordot(ct.asarray(a, device=device), _reversed_view(b, device), axes=((), ()))
    assert got.ndim == 9
    _close(got, np.tensordot(a, b, axes=((), ())))


def test_tensordot_rank_16_and_17(device):
    a, b = _values(SHAPES[9], 62), _values((2, 2, 1, 2, 1, 2, 1, 1, 2), 63)
    x, y = ct.asarray(a, device=device), ct.asarray(b, device=device)
    _close(ct.tensordot(x, y, axes=([8], [0])), np.tensordot(a, b, axes=([8], [0])))
    _close(ct.tensordot(x, y, axes=([3], [5])), np.tensordot(a, b, axes=([3], [5])))
    with pytest.raises(ct.ShapeError, match=r"would have rank 17 \(at most 16\)"):
        ct.tensordot(x, y[0], axes=((), ()))


def test_concat_stack(device):
    a, b = _values(SHAPES[16], 70), _values(SHAPES[16][:11] + (1,) + SHAPES[16][12:], 71)
    x, y = _reversed_view(a, device), ct.asarray(b, device=device)
    _close(ct.concat([x, y], axis=11), np.concatenate([a, b], axis=11), 0)
    # two 15-d arrays, one strided, stacked at axis 7 into a 16-d one
    stacked = ct.stack([x[0], ct.asarray(a[1], device=device)], axis=7)
    _close(stacked, np.stack([a[0], a[1]], axis=7), 0)
    with pytest.raises(ct.ShapeError, match="16"):
        ct.stack([x, x])


def test_more_ops_past_the_eighth_axis(device):
    a = _values(SHAPES[16], 75)
    x = _reversed_view(a, device)
    z = a + 1j * np.flip(a)
    m = _values((2, 1, 2) + (1,) * 10 + (2, 3, 3), 76) + 3 * np.eye(3)
    cases = [
        (ct.argmax(x, axis=12), np.argmax(a, axis=12)),
        (ct.sort(x, axis=9), np.sort(a, axis=9)),
        (ct.argsort(x, axis=11, stable=True), np.argsort(a, axis=11, kind="stable")),
        (ct.cumulative_sum(x, axis=10), np.cumsum(a, axis=10)),
        (ct.var(x, axis=(8, 12), correction=1), np.var(a, axis=(8, 12), ddof=1)),
        (ct.flip(x, axis=(9, 14)), np.flip(a, axis=(9, 14))),
        (ct.roll(x, 1, axis=14), np.roll(a, 1, axis=14)),
        (ct.fft.fftn(x, axes=(8, 12)), np.fft.fftn(a, axes=(8, 12))),
        (ct.sum(ct.asarray(z, device=device), axis=(9, 14)), z.sum(axis=(9, 14))),
        (ct.linalg.solve(ct.asarray(m, device=device), ct.asarray(m, device=device)),
         np.linalg.solve(m, m)),
        (ct.linalg.det(ct.asarray(m, device=device)), np.linalg.det(m)),
        (ct.vecdot(x, x, axis=9), np.sum(a * a, axis=9)),
        (ct.nonzero(x > 0)[15], np.nonzero(a > 0)[15]),
        (ct.meshgrid(*[ct.arange(2.0, device=device)] * 16)[15],
         np.meshgrid(*[np.arange(2.0)] * 16)[15]),
        (ct.take_along_axis(x, ct.argsort(x, axis=13), axis=13),
         np.take_along_axis(a, np.argsort(a, axis=13), axis=13)),
        (ct.squeeze(x, axis=(4, 7, 10, 13, 15)), np.squeeze(a, axis=(4, 7, 10, 13, 15))),
    ]
    for got, expected in cases:
        _close(got, expected)


def test_gradients(device):
    # sum over axes past the eighth of a broadcast product
    xa = _values((2, 1, 1, 2, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2, 1), 80)
    ya = _values((1, 1, 1, 1, 3, 1, 1, 2, 1, 1, 1, 1, 2, 1), 81)
    x = ct.asarray(xa, device=device).requires_grad_()
    y = ct.asarray(ya, device=device).requires_grad_()
    r = ct.sum(x * y, axis=(1, 6, 9, 14))
    u = _values(r.shape, 82)
    (r * ct.asarray(u, device=device)).sum().backward()
    g = np.broadcast_to(np.expand_dims(u, (1, 6, 9, 14)), np.broadcast_shapes(xa.shape, ya.shape))
    _close(x.grad, _unbroadcast(g * ya, xa.shape))
    _close(y.grad, _unbroadcast(g * xa, ya.shape))

    # matmul with 14 batch axes
    aa = _values((2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3), 83)
    ba = _values((1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 2), 84)
    a = ct.asarray(aa, device=device).requires_grad_()
    b = ct.asarray(ba, device=device).requires_grad_()
    m = ct.permute_dims(a @ b, (15,) + tuple(range(15)))
    u = _values(m.shape, 85)
    (m * ct.asarray(u, device=device)).sum().backward()
    um = np.moveaxis(u, 0, 15)
    _close(a.grad, _unbroadcast(um @ np.swapaxes(ba, -1, -2), aa.shape))
    _close(b.grad, _unbroadcast(np.swapaxes(aa, -1, -2) @ um, ba.shape))

    # the rank-9 tensordot, and an index past the eighth axis
    ta, tb = _values((2, 1, 3, 1, 2), 86), _values((1, 2, 1, 2), 87)
    p = ct.asarray(ta, device=device).requires_grad_()
    q = ct.asarray(tb, device=device).requires_grad_()
    t = ct.tensordot(p, q, axes=((), ()))[..., 1]
    u = _values(t.shape, 88)
    (t * ct.asarray(u, device=device)).sum().backward()
    full = np.zeros((2, 1, 3, 1, 2, 1, 2, 1, 2))
    full[..., 1] = u
    _close(p.grad, np.tensordot(full, tb, axes=(range(5, 9), range(4))))
    _close(q.grad, np.tensordot(ta, full, axes=(range(5), range(5))))


def test_numpy_and_dlpack_exchange(device):
    a = _values(SHAPES[16], 90).transpose(tuple(range(15, -1, -1)))  # not C-contiguous
    x = ct.asarray(a, device=device)
    _close(x, a, 0)
    _close(ct.from_dlpack(a), a, 0)
    back = to_numpy(_reversed_view(np.ascontiguousarray(a), device))
    np.testing.assert_array_equal(back, a)
    if device.type == "cpu":
        np.testing.assert_array_equal(np.from_dlpack(_reversed_view(a, device)), a)


def test_rank_17_refused(device):
    with pytest.raises(ct.ShapeError, match="16"):
        ct.ones((1,) * 17, device=device)
    x = ct.ones((1,) * 16, device=device)
    with pytest.raises(ct.ShapeError, match="maximum rank 16"):
        ct.expand_dims(x, axis=0)
    with pytest.raises(ct.ShapeError, match="maximum rank 16"):
        x[None]
    with pytest.raises(ct.ShapeError, match="at most 16"):
        ct.reshape(x, (1,) * 17)
    with pytest.raises(ct.ShapeError, match="at most 16"):
        ct.asarray(np.ones((1,) * 17), device=device)
    with pytest.raises(ct.ShapeError, match="at most 16"):
        ct.asarray(np.ones((1,) * 17).tolist(), device=device)
    with pytest.raises(ct.ShapeError, match="16"):
        ct.from_dlpack(np.ones((1,) * 17))


def test_safetensors_rank_16(device, tmp_path):
    a = _values(SHAPES[16], 100)
    ct.save({"x": _reversed_view(a, device)}, tmp_path / "x.safetensors")
    back = ct.load(tmp_path / "x.safetensors", device=device)["x"]
    assert back.device == device
    _close(back, a, 0)

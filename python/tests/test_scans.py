"""cumulative_prod / cumprod, diff and isin (the array API 2024.12's and PyTorch's spellings)
against NumPy, on every device: every dtype NumPy has, each axis, include_initial, dtype=,
complex, gradients with zeros in the input (checked against central differences), diff's
prepend and append, isin's duplicates, NaN, invert, mixed dtypes and Python scalars."""

import numpy as np
import pytest

import ctensor as ct
from conftest import NUMPY_DTYPES, check_complex_grad, to_numpy

DTYPES = list(NUMPY_DTYPES)
FLOATS = [ct.float32, ct.float64, ct.float16]


def small(dtype, shape, seed):
    """Small values with zeros: integers in [-3, 3] (unsigned 0..3, bool), floats with halves."""
    rng = np.random.default_rng(seed)
    v = rng.integers(-3, 4, size=shape).astype(np.float64)
    if dtype == ct.bool:
        return v > 0
    if ct.isdtype(dtype, "unsigned integer"):
        v = np.abs(v)
    if dtype in FLOATS:
        v = v + 0.5 * (rng.integers(0, 2, size=shape))
    return v.astype(NUMPY_DTYPES[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cumulative_prod_matches_numpy(device, dtype):
    a = small(dtype, (3, 4, 5), seed=1)
    x = ct.asarray(a, device=device)
    want_dtype = (dtype if dtype in FLOATS else
                  ct.uint64 if ct.isdtype(dtype, "unsigned integer") else ct.int64)
    for axis in (0, 1, 2, -1):
        for initial in (False, True):
            got = ct.cumulative_prod(x, axis=axis, include_initial=initial)
            want = np.cumprod(a.astype(np.float64), axis=axis)
            if initial:
                shape = list(a.shape)
                shape[axis] = 1
                want = np.concatenate([np.ones(shape), want], axis=axis)
            assert got.dtype == want_dtype
            np.testing.assert_allclose(to_numpy(got).astype(np.float64), want, rtol=2e-3)
    one = ct.cumulative_prod(ct.asarray(a[0, 0], device=device), dtype=ct.float64)
    assert one.dtype == ct.float64
    np.testing.assert_allclose(to_numpy(one), np.cumprod(a[0, 0].astype(np.float64)))
    with pytest.raises(ValueError, match="axis"):
        ct.cumulative_prod(x)


def test_cumulative_prod_wraps_strided_empty_and_complex(device):
    a = np.full(70, 3, dtype=np.int64)
    got = to_numpy(ct.cumulative_prod(ct.asarray(a, device=device)))
    np.testing.assert_array_equal(got, np.cumprod(a))  # wraps as NumPy's int64 does
    b = np.random.default_rng(2).uniform(-2, 2, (4, 6))
    xt = ct.asarray(b, device=device).T  # not contiguous
    np.testing.assert_allclose(to_numpy(ct.cumulative_prod(xt, axis=0)), np.cumprod(b.T, axis=0))
    e = ct.asarray(np.zeros((0, 3), np.float32), device=device)
    np.testing.assert_array_equal(to_numpy(ct.cumulative_prod(e, axis=0, include_initial=True)),
                                  np.ones((1, 3)))
    assert ct.cumulative_prod(e, axis=1).shape == (0, 3)
    z = (b + 1j * b[::-1]).astype(np.complex128)
    zc = ct.asarray(ct.from_dlpack(np.ascontiguousarray(z)), device=device, copy=True)
    for axis in (0, 1):
        got = ct.cumulative_prod(zc, axis=axis)
        assert got.dtype == ct.complex128
        np.testing.assert_allclose(to_numpy(got), np.cumprod(z, axis=axis), rtol=1e-12)
    assert ct.cumulative_prod(zc, axis=1, dtype=ct.complex64).dtype == ct.complex64


def test_cumprod_pytorch_spelling(device):
    a = small(ct.float32, (3, 4), seed=3)
    x = ct.asarray(a, device=device)
    np.testing.assert_allclose(to_numpy(ct.cumprod(x, 1)), np.cumprod(a, axis=1), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(x.cumprod(0)), np.cumprod(a, axis=0), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(x.cumprod(dim=-1)), np.cumprod(a, axis=-1), rtol=1e-6)
    assert ct.cumprod(x, 0, dtype=ct.float64).dtype == ct.float64
    np.testing.assert_allclose(to_numpy(ct.cumulative_prod(x, dim=1)), np.cumprod(a, axis=1),
                               rtol=1e-6)


def numeric_grad(a, axis, u):
    """d sum(u * cumprod(a)) / da by central differences."""
    grad = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        plus, minus = a.copy(), a.copy()
        plus[idx] += 1e-6
        minus[idx] -= 1e-6
        diff = np.sum(u * (np.cumprod(plus, axis=axis) - np.cumprod(minus, axis=axis)))
        grad[idx] = diff / 2e-6
    return grad


@pytest.mark.parametrize("zeros", [[], [(0, 2)], [(0, 0), (1, 3), (1, 4), (2, 1), (2, 2)]])
def test_cumprod_gradient_with_zeros(device, zeros):
    a = np.random.default_rng(4).uniform(-1.5, 1.5, (3, 5))
    for idx in zeros:
        a[idx] = 0.0
    u = np.random.default_rng(5).uniform(-1, 1, (3, 5))
    for axis in (0, 1):
        x = ct.asarray(a, device=device)
        x.requires_grad_()
        ct.sum(ct.cumprod(x, axis) * ct.asarray(u, device=device)).backward()
        np.testing.assert_allclose(to_numpy(x.grad), numeric_grad(a, axis, u), atol=1e-7)


def test_cumprod_complex_gradient_with_zeros(device):
    rng = np.random.default_rng(6)
    z = rng.uniform(-1, 1, (2, 5)) + 1j * rng.uniform(-1, 1, (2, 5))
    z[0, 1] = z[1, 0] = z[1, 3] = 0
    w = rng.uniform(-1, 1, (2, 5)) + 1j * rng.uniform(-1, 1, (2, 5))
    wc = ct.asarray(ct.from_dlpack(np.ascontiguousarray(w)), device=device, copy=True)
    check_complex_grad(lambda v: ct.sum(ct.real(ct.cumulative_prod(v, axis=1) * wc)), z, device,
                       atol=1e-7)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_diff_matches_numpy(device, dtype):
    a = small(dtype, (3, 6), seed=7)
    x = ct.asarray(a, device=device)
    for n in (0, 1, 2, 3, 7):
        for axis in (0, 1, -1):
            got = ct.diff(x, axis=axis, n=n)
            want = np.diff(a, axis=axis, n=n)
            assert got.shape == want.shape
            assert got.dtype == x.dtype
            np.testing.assert_array_equal(to_numpy(got), want)


def test_diff_prepend_append_and_spellings(device):
    a = np.random.default_rng(8).uniform(-3, 3, (3, 4))
    x = ct.asarray(a, device=device)
    post = np.random.default_rng(9).uniform(-3, 3, (3, 2))
    got = ct.diff(x, axis=1, n=2, prepend=1.5, append=ct.asarray(post, device=device))
    np.testing.assert_allclose(to_numpy(got), np.diff(a, axis=1, n=2, prepend=1.5, append=post))
    got = ct.diff(x, axis=0, prepend=np.zeros((1, 4)), append=-2.0)
    np.testing.assert_allclose(to_numpy(got), np.diff(a, axis=0, prepend=np.zeros((1, 4)),
                                                       append=-2.0))
    np.testing.assert_allclose(to_numpy(ct.diff(x, 2, dim=0)), np.diff(a, 2, axis=0))  # torch
    np.testing.assert_allclose(to_numpy(x.diff()), np.diff(a))
    np.testing.assert_allclose(to_numpy(x.diff(dim=0, prepend=x)),
                               np.diff(a, axis=0, prepend=a))
    i8 = ct.asarray(np.array([1, 5, -2], np.int8), device=device)
    assert ct.diff(i8, prepend=0).dtype == ct.int8  # a Python int keeps x's dtype
    with pytest.raises(ValueError):
        ct.diff(x, n=-1)
    with pytest.raises(ValueError):
        ct.diff(x, axis=1, prepend=np.zeros((2, 1)))
    with pytest.raises(ValueError):
        ct.diff(ct.asarray(1.0, device=device))


def test_diff_gradient(device):
    a = np.random.default_rng(10).uniform(-1, 1, (3, 4))
    x = ct.asarray(a, device=device)
    x.requires_grad_()
    u = np.random.default_rng(11).uniform(-1, 1, (3, 2))
    ct.sum(ct.diff(x, n=2) * ct.asarray(u, device=device)).backward()
    want = np.zeros_like(a)  # d/dx of sum(u[:, i] * (x[:, i+2] - 2 x[:, i+1] + x[:, i]))
    want[:, 0:2] += u
    want[:, 1:3] -= 2 * u
    want[:, 2:4] += u
    np.testing.assert_allclose(to_numpy(x.grad), want, atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_isin_matches_numpy(device, dtype):
    e = small(dtype, (4, 5), seed=12)
    t = small(dtype, (7,), seed=13)
    t[3] = t[1]  # a duplicate
    x, y = ct.asarray(e, device=device), ct.asarray(t, device=device)
    for invert in (False, True):
        for unique in (False, True):
            got = ct.isin(x, y, assume_unique=unique, invert=invert)
            assert got.dtype == ct.bool and got.shape == (4, 5)
            np.testing.assert_array_equal(to_numpy(got), np.isin(e, t, invert=invert))


def test_isin_nan_mixed_scalars_and_empty(device):
    e = np.array([np.nan, 1.5, -0.0, 2.0, 3.0], np.float32)
    t = np.array([0.0, np.nan, 2.0, 2.0, 1.5])
    x = ct.asarray(e, device=device)
    np.testing.assert_array_equal(to_numpy(ct.isin(x, ct.asarray(t, device=device))),
                                  np.isin(e, t))
    i = ct.asarray(np.array([[1, 2], [3, 2]]), device=device)
    np.testing.assert_array_equal(to_numpy(ct.isin(i, ct.asarray(t, device=device))),
                                  [[False, True], [False, True]])
    np.testing.assert_array_equal(to_numpy(ct.isin(i, 2)), [[False, True], [False, True]])
    np.testing.assert_array_equal(to_numpy(ct.isin(i, 2.5)), np.zeros((2, 2), bool))
    assert bool(ct.isin(3, i)) and not bool(ct.isin(4, i))
    assert to_numpy(ct.isin(x, 0.1 * 15)).tolist() == [False, True, False, False, False]
    empty = ct.asarray(np.zeros(0, np.float32), device=device)
    np.testing.assert_array_equal(to_numpy(ct.isin(i, empty, invert=True)), np.ones((2, 2), bool))
    assert ct.isin(empty, i).shape == (0,)
    with pytest.raises(TypeError):
        ct.isin(ct.asarray(np.ones(2, np.complex64), device=device), i)

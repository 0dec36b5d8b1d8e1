"""ct.linalg against NumPy (float64 references) on every device, in float32 and float64: the
values, the named tuples, the errors that name the bad matrix, and gradients."""

import math

import numpy as np
import pytest

import ctensor as ct
from conftest import check_complex_grad, to_numpy

DTYPES = [(ct.float32, np.float32, 2e-4), (ct.float64, np.float64, 1e-10)]


@pytest.fixture(params=DTYPES, ids=["float32", "float64"])
def dt(request):
    return request.param


def _rng(seed):
    return np.random.default_rng(seed)


def _general(shape, seed):
    """Random matrices with their order added to the diagonal (well-conditioned)."""
    a = _rng(seed).uniform(-1, 1, shape)
    n = min(shape[-2:])
    a[..., range(n), range(n)] += shape[-1]
    return a


def _spd(shape, seed):
    b = _rng(seed).uniform(-1, 1, shape)
    return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])


def _close(actual, expected, tol, scale=1.0):
    np.testing.assert_allclose(to_numpy(actual).astype(np.float64), expected,
                               rtol=tol * 10, atol=tol * 10 * scale)


def test_namespace():
    for name in ct.linalg.__all__:
        assert callable(getattr(ct.linalg, name)), name
    assert len(ct.linalg.__all__) == 23


def test_cholesky(device, dt):
    dtype, npt, tol = dt
    a = _spd((3, 5, 5), 1)
    x = ct.asarray(a.astype(npt), device=device)
    expected = np.linalg.cholesky(a.astype(npt).astype(np.float64))
    _close(ct.linalg.cholesky(x), expected, tol, 5)
    _close(ct.linalg.cholesky(x, upper=True), np.swapaxes(expected, -1, -2), tol, 5)


def test_cholesky_not_positive_definite(device):
    a = _spd((3, 4, 4), 2)
    a[2, 1, 1] = -40
    with pytest.raises(ValueError, match=r"cholesky: matrix 2 of the stack is not positive-def"):
        ct.linalg.cholesky(ct.asarray(a, device=device))


def test_det_slogdet(device, dt):
    dtype, npt, tol = dt
    a = _rng(3).uniform(-2, 2, (4, 4, 4)).astype(npt)
    x = ct.asarray(a, device=device)
    ref = a.astype(np.float64)
    _close(ct.linalg.det(x), np.linalg.det(ref), tol, 10)
    sign, logabsdet = ct.linalg.slogdet(x)
    ref_sign, ref_log = np.linalg.slogdet(ref)
    _close(sign, ref_sign, tol)
    _close(logabsdet, ref_log, tol)
    assert isinstance(ct.linalg.slogdet(x), ct.linalg.SlogdetResult)


def test_eigh(device, dt):
    dtype, npt, tol = dt
    a = _spd((2, 6, 6), 4) - 3
    x = ct.asarray(a.astype(npt), device=device)
    w, v = ct.linalg.eigh(x)
    ref = a.astype(npt).astype(np.float64)
    _close(w, np.linalg.eigvalsh(ref), tol, 10)
    _close(ct.linalg.eigvalsh(x), np.linalg.eigvalsh(ref), tol, 10)
    wv, vv = to_numpy(w).astype(np.float64), to_numpy(v).astype(np.float64)
    np.testing.assert_allclose(ref @ vv, vv * wv[..., None, :], atol=tol * 100)


def test_inv_solve(device, dt):
    dtype, npt, tol = dt
    a = _general((3, 5, 5), 5).astype(npt)
    b = _rng(6).uniform(-1, 1, (3, 5, 2)).astype(npt)
    v = _rng(7).uniform(-1, 1, 5).astype(npt)
    x1, x2, xv = (ct.asarray(t, device=device) for t in (a, b, v))
    ref_a, ref_b, ref_v = (t.astype(np.float64) for t in (a, b, v))
    _close(ct.linalg.inv(x1), np.linalg.inv(ref_a), tol)
    _close(ct.linalg.solve(x1, x2), np.linalg.solve(ref_a, ref_b), tol)
    solved = ct.linalg.solve(x1, xv)  # a vector x2: (..., M) out, as the standard says
    assert solved.shape == (3, 5)
    _close(solved, np.linalg.solve(ref_a, ref_v[None, :, None].repeat(3, 0))[..., 0], tol)
    # broadcast stacks: one matrix against three right-hand sides
    _close(ct.linalg.solve(x1[0], x2), np.linalg.solve(ref_a[0], ref_b), tol)


def test_singular(device):
    a = _general((4, 3, 3), 8)
    a[1, 2, :] = 0
    x = ct.asarray(a, device=device)
    with pytest.raises(ValueError, match=r"ct\.linalg\.inv: matrix 1 of the stack is singular"):
        ct.linalg.inv(x)
    with pytest.raises(ValueError, match=r"solve: matrix 1 of the stack is singular"):
        ct.linalg.solve(x, ct.ones((4, 3, 1), dtype=ct.float64, device=device))
    assert to_numpy(ct.linalg.det(x))[1] == 0


def test_nan_is_an_error_where_lapack_says_so(device):
    a = np.eye(3)
    a[1, 1] = np.nan
    x = ct.asarray(a, device=device)
    with pytest.raises(ValueError, match=r"matrix 0 of the stack has singular values that did"):
        ct.linalg.svdvals(x)
    with pytest.raises(ValueError, match=r"matrix 0 of the stack has eigenvalues that did not"):
        ct.linalg.eigvalsh(x)


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5), (4, 4)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(device, dt, shape, full):
    dtype, npt, tol = dt
    a = _rng(9).uniform(-1, 1, shape).astype(npt)
    x = ct.asarray(a, device=device)
    ref = a.astype(np.float64)
    u, s, vh = ct.linalg.svd(x, full_matrices=full)
    ref_u, ref_s, ref_vh = np.linalg.svd(ref, full_matrices=full)
    assert u.shape == ref_u.shape and s.shape == ref_s.shape and vh.shape == ref_vh.shape
    _close(s, ref_s, tol)
    _close(ct.linalg.svdvals(x), ref_s, tol)
    k = ref_s.shape[-1]
    un, sn, vn = (to_numpy(t).astype(np.float64) for t in (u, s, vh))
    back = (un[..., :, :k] * sn[..., None, :]) @ vn[..., :k, :]
    np.testing.assert_allclose(back, ref, atol=tol * 10)


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(device, dt, shape, mode):
    dtype, npt, tol = dt
    a = _rng(10).uniform(-1, 1, shape).astype(npt)
    q, r = ct.linalg.qr(ct.asarray(a, device=device), mode=mode)
    ref_q, ref_r = np.linalg.qr(a.astype(np.float64), mode=mode)
    assert q.shape == ref_q.shape and r.shape == ref_r.shape
    qn, rn = to_numpy(q).astype(np.float64), to_numpy(r).astype(np.float64)
    np.testing.assert_allclose(qn @ rn, a.astype(np.float64), atol=tol * 10)
    np.testing.assert_allclose(np.abs(rn), np.abs(ref_r), atol=tol * 10)
    assert np.all(np.tril(rn, -1) == 0)


def test_pinv_rank(device, dt):
    dtype, npt, tol = dt
    rng = _rng(11)
    a = (rng.uniform(-1, 1, (3, 5, 1)) @ rng.uniform(-1, 1, (3, 1, 4))
         + rng.uniform(-1, 1, (3, 5, 1)) @ rng.uniform(-1, 1, (3, 1, 4))).astype(npt)
    x = ct.asarray(a, device=device)
    rank = ct.linalg.matrix_rank(x)
    assert rank.dtype == ct.int64
    np.testing.assert_array_equal(to_numpy(rank), np.linalg.matrix_rank(a))
    _close(ct.linalg.pinv(x), np.linalg.pinv(a.astype(np.float64), rcond=5 * np.finfo(npt).eps),
           tol * 10)
    full = _general((5, 5), 12).astype(npt)
    assert int(ct.linalg.matrix_rank(ct.asarray(full, device=device))) == 5


@pytest.mark.parametrize("ord", ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2])
def test_matrix_norm(device, dt, ord):
    dtype, npt, tol = dt
    a = _rng(13).uniform(-1, 1, (3, 4, 5)).astype(npt)
    x = ct.asarray(a, device=device)
    ref = np.linalg.norm(a.astype(np.float64), ord=ord, axis=(-2, -1))
    _close(ct.linalg.matrix_norm(x, ord=ord), ref, tol)
    kept = ct.linalg.matrix_norm(x, ord=ord, keepdims=True)
    assert kept.shape == (3, 1, 1)


@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3, 0.5])
@pytest.mark.parametrize("axis", [None, -1, (0, 2)])
def test_vector_norm(device, dt, ord, axis):
    dtype, npt, tol = dt
    a = _rng(14).uniform(-1, 1, (3, 4, 5)).astype(npt)
    a[0, 0, 0] = 0
    x = ct.asarray(a, device=device)
    ref = a.astype(np.float64)
    if axis is None:
        expected = np.linalg.norm(ref.ravel(), ord=ord)
    else:
        moved = np.moveaxis(ref, axis if isinstance(axis, tuple) else (axis,),
                            (-2, -1) if isinstance(axis, tuple) else (-1,))
        flat = moved.reshape(moved.shape[:-2] + (-1,)) if isinstance(axis, tuple) else moved
        expected = np.linalg.norm(flat, ord=ord, axis=-1)
    _close(ct.linalg.vector_norm(x, axis=axis, ord=ord), expected, tol)


def test_power_trace_diagonal(device, dt):
    dtype, npt, tol = dt
    a = _general((2, 3, 3), 15).astype(npt) / 3
    x = ct.asarray(a, device=device)
    ref = a.astype(np.float64)
    for n in (0, 1, 3, -2):
        _close(ct.linalg.matrix_power(x, n), np.linalg.matrix_power(ref, n), tol, 10)
    m = np.arange(24, dtype=npt).reshape(2, 3, 4)
    y = ct.asarray(m, device=device)
    for offset in (-2, -1, 0, 1, 3, 5):
        _close(ct.linalg.diagonal(y, offset=offset),
               np.diagonal(m, offset=offset, axis1=-2, axis2=-1), tol)
        _close(ct.linalg.trace(y, offset=offset),
               np.trace(m, offset=offset, axis1=-2, axis2=-1), tol)


def test_cross_outer_products(device, dt):
    dtype, npt, tol = dt
    rng = _rng(16)
    a, b = rng.uniform(-1, 1, (4, 3)).astype(npt), rng.uniform(-1, 1, 3).astype(npt)
    x1, x2 = ct.asarray(a, device=device), ct.asarray(b, device=device)
    _close(ct.linalg.cross(x1, x2), np.cross(a, b), tol)
    c = rng.uniform(-1, 1, (3, 2)).astype(npt)
    _close(ct.linalg.cross(ct.asarray(c, device=device), ct.asarray(c[::-1].copy(),
                                                                    device=device), axis=0),
           np.cross(c, c[::-1], axis=0), tol)
    _close(ct.linalg.outer(x1[0], x2), np.outer(a[0], b), tol)
    _close(ct.linalg.matmul(x1, x2), a.astype(np.float64) @ b, tol)
    _close(ct.linalg.vecdot(x1, x2), a.astype(np.float64) @ b, tol)
    _close(ct.linalg.tensordot(x1, x2, axes=1), a.astype(np.float64) @ b, tol)
    assert ct.linalg.matrix_transpose(x1).shape == (3, 4)


def test_errors(device):
    with pytest.raises(TypeError):
        ct.linalg.inv(ct.ones((3, 3), dtype=ct.int32, device=device))
    with pytest.raises(ValueError, match="square"):
        ct.linalg.cholesky(ct.ones((3, 4), dtype=ct.float64, device=device))
    with pytest.raises(ValueError, match="ord"):
        ct.linalg.matrix_norm(ct.ones((3, 3), device=device), ord=3)
    with pytest.raises(ValueError, match="mode"):
        ct.linalg.qr(ct.ones((3, 3), device=device), mode="economic")


def test_gradients(device):
    """Gradients of det, solve and eigvalsh against their closed forms."""
    a = _general((2, 4, 4), 17)
    b = _rng(18).uniform(-1, 1, (2, 4, 2))
    x = ct.asarray(a, device=device).requires_grad_()
    ct.sum(ct.linalg.det(x)).backward()
    expected = np.linalg.det(a)[:, None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)
    np.testing.assert_allclose(to_numpy(x.grad), expected, rtol=1e-9, atol=1e-9)
    x = ct.asarray(a, device=device).requires_grad_()
    y = ct.asarray(b, device=device).requires_grad_()
    ct.sum(ct.linalg.solve(x, y)).backward()
    gb = np.linalg.solve(np.swapaxes(a, -1, -2), np.ones_like(b))
    np.testing.assert_allclose(to_numpy(y.grad), gb, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(to_numpy(x.grad), -gb @ np.swapaxes(np.linalg.solve(a, b), -1, -2),
                               rtol=1e-9, atol=1e-9)
    s = _spd((4, 4), 19)
    z = ct.asarray(s, device=device).requires_grad_()
    ct.sum(ct.linalg.eigvalsh(z)).backward()  # d(trace)/dA over the lower triangle read
    np.testing.assert_allclose(to_numpy(z.grad), np.eye(4), atol=1e-9)


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5)])
def test_svd_full_matrices_gradients(device, shape):
    """Of a full factorization (full_matrices=True, as PyTorch's), U's first K columns and Vh's
    first K rows are differentiated as the reduced factorization's; the others are arbitrary
    bases of the complements, whose gradients are ignored (0)."""
    a = _rng(40).uniform(-1, 1, shape)
    b, m, n = shape
    k = min(m, n)
    rng = _rng(41)
    wu, ws, wv, wr = (ct.asarray(rng.uniform(-1, 1, s), device=device)
                      for s in [(b, m, k), (b, k), (b, k, n), shape])

    def loss(x, full=True):
        r = ct.linalg.svd(x, full_matrices=full)
        u, vh = r.U[..., :, :k], r.Vh[..., :k, :]
        # each column's sign drops out
        return (ct.sum(ct.abs(u) * wu) + ct.sum(r.S * ws) + ct.sum(ct.abs(vh) * wv)
                + ct.sum((u * r.S[..., None, :]) @ vh * wr))

    full = check_complex_grad(loss, a, device, atol=1e-6)
    x = ct.asarray(a, device=device).requires_grad_()
    loss(x, full=False).backward()
    np.testing.assert_allclose(full, to_numpy(x.grad), rtol=0, atol=1e-12)
    x = ct.asarray(a, device=device).requires_grad_()
    r = ct.linalg.svd(x, full_matrices=True)
    (ct.sum(r.U[..., :, k:]) + ct.sum(r.Vh[..., k:, :])).backward()
    assert np.all(to_numpy(x.grad) == 0)

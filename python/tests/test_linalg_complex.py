"""ct.linalg on complex64 and complex128 against NumPy's complex128 references, on every
device: Hermitian and unitary where the real functions are symmetric and orthogonal, the real
dtypes of eigenvalues, singular values, logabsdet and norms, slogdet's complex sign, solve's
promotion, and the errors that name the bad matrix of the stack."""

import math

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

CDTYPES = [(ct.complex64, np.complex64, ct.float32, 2e-4),
           (ct.complex128, np.complex128, ct.float64, 1e-10)]


@pytest.fixture(params=CDTYPES, ids=["complex64", "complex128"])
def cdt(request):
    return request.param


def _rng(seed):
    return np.random.default_rng(seed)


def _complex(shape, seed):
    rng = _rng(seed)
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)


def _general(shape, seed):
    """Random complex matrices with their order added to the diagonal (well-conditioned)."""
    a = _complex(shape, seed)
    n = min(shape[-2:])
    a[..., range(n), range(n)] += shape[-1]
    return a


def _hermitian_pd(shape, seed):
    b = _complex(shape, seed)
    return b @ _h(b) + shape[-1] * np.eye(shape[-1])


def _h(a):
    """The conjugate transpose of each matrix."""
    return np.conj(np.swapaxes(a, -1, -2))


def _rounded(a, npt):
    """a as the dtype holds it, back in complex128: the reference's input."""
    return a.astype(npt).astype(np.complex128)


def _close(actual, expected, tol, scale=1.0):
    np.testing.assert_allclose(to_numpy(actual).astype(np.complex128), expected,
                               rtol=tol * 10, atol=tol * 10 * scale)


def _put(a, npt, device):
    return ct.asarray(a.astype(npt), device=device)


def test_cholesky(device, cdt):
    dtype, npt, real, tol = cdt
    a = _hermitian_pd((3, 4, 4), 1)
    x = _put(a, npt, device)
    expected = np.linalg.cholesky(_rounded(a, npt))
    lower = ct.linalg.cholesky(x)
    assert lower.dtype == dtype
    _close(lower, expected, tol, 5)
    _close(ct.linalg.cholesky(x, upper=True), _h(expected), tol, 5)


def test_cholesky_not_positive_definite(device, cdt):
    dtype, npt, real, tol = cdt
    a = _hermitian_pd((3, 4, 4), 2)
    a[1, 2, 2] = -50
    with pytest.raises(ValueError, match=r"cholesky: matrix 1 of the stack is not positive-def"):
        ct.linalg.cholesky(_put(a, npt, device))


def test_det_slogdet(device, cdt):
    dtype, npt, real, tol = cdt
    a = _general((2, 3, 4, 4), 3)
    ref = _rounded(a, npt)
    x = _put(a, npt, device)
    det = ct.linalg.det(x)
    assert det.dtype == dtype and det.shape == (2, 3)
    _close(det, np.linalg.det(ref), tol, 300)
    sign, logabs = ct.linalg.slogdet(x)
    expected_sign, expected_logabs = np.linalg.slogdet(ref)
    assert sign.dtype == dtype and logabs.dtype == real
    _close(sign, expected_sign, tol)
    _close(logabs, expected_logabs, tol)
    np.testing.assert_allclose(np.abs(to_numpy(sign)), 1, rtol=tol * 10)


def test_singular(device, cdt):
    dtype, npt, real, tol = cdt
    a = _general((4, 3, 3), 4)
    a[2, 1, :] = 0
    x = _put(a, npt, device)
    with pytest.raises(ValueError, match=r"ct\.linalg\.inv: matrix 2 of the stack is singular"):
        ct.linalg.inv(x)
    with pytest.raises(ValueError, match=r"solve: matrix 2 of the stack is singular"):
        ct.linalg.solve(x, ct.ones((4, 3, 1), dtype=dtype, device=device))
    assert to_numpy(ct.linalg.det(x))[2] == 0
    sign, logabs = ct.linalg.slogdet(x)
    assert to_numpy(sign)[2] == 0 and to_numpy(logabs)[2] == -math.inf


def test_eigh(device, cdt):
    dtype, npt, real, tol = cdt
    a = _hermitian_pd((2, 5, 5), 5)
    ref = _rounded(a, npt)
    x = _put(a, npt, device)
    w, v = ct.linalg.eigh(x)
    assert w.dtype == real and v.dtype == dtype
    expected = np.linalg.eigvalsh(ref)
    _close(w, expected, tol, 10)
    _close(ct.linalg.eigvalsh(x), expected, tol, 10)
    vv = to_numpy(v).astype(np.complex128)
    _close(v, vv, tol)  # the shape and dtype, then what v must satisfy:
    np.testing.assert_allclose(ref @ vv, vv * expected[..., None, :], atol=tol * 500)
    np.testing.assert_allclose(_h(vv) @ vv, np.broadcast_to(np.eye(5), vv.shape), atol=tol * 10)


def test_eigh_reads_the_lower_triangle(device, cdt):
    dtype, npt, real, tol = cdt
    a = _hermitian_pd((4, 4), 6)
    garbled = a.copy()
    garbled[np.triu_indices(4, 1)] = 7 + 7j
    _close(ct.linalg.eigvalsh(_put(garbled, npt, device)),
           np.linalg.eigvalsh(_rounded(a, npt)), tol, 10)


def test_inv_solve(device, cdt):
    dtype, npt, real, tol = cdt
    a = _general((3, 4, 4), 7)
    b = _complex((3, 4, 2), 8)
    ref_a, ref_b = _rounded(a, npt), _rounded(b, npt)
    x1, x2 = _put(a, npt, device), _put(b, npt, device)
    inv = ct.linalg.inv(x1)
    assert inv.dtype == dtype
    _close(inv, np.linalg.inv(ref_a), tol)
    _close(ct.linalg.solve(x1, x2), np.linalg.solve(ref_a, ref_b), tol)
    vector = _complex((4,), 9)
    _close(ct.linalg.solve(x1, _put(vector, npt, device)),
           np.linalg.solve(ref_a, _rounded(vector, npt)[None, :, None].repeat(3, 0))[..., 0], tol)


def test_solve_promotes(device):
    """complex with real gives complex; 64-bit parts on either side give complex128."""
    a = _general((3, 3), 10)
    b = _rng(11).uniform(-1, 1, (3, 2))
    out = ct.linalg.solve(ct.asarray(a.astype(np.complex64), device=device),
                          ct.asarray(b, device=device))
    assert out.dtype == ct.complex128
    _close(out, np.linalg.solve(_rounded(a, np.complex64), b), 1e-10)
    out = ct.linalg.solve(ct.asarray(a.real.astype(np.float32), device=device),
                          ct.asarray(b.astype(np.complex64), device=device))
    assert out.dtype == ct.complex64


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5), (4, 4)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(device, cdt, shape, full):
    dtype, npt, real, tol = cdt
    a = _complex(shape, 12)
    ref = _rounded(a, npt)
    x = _put(a, npt, device)
    u, s, vh = ct.linalg.svd(x, full_matrices=full)
    assert s.dtype == real and u.dtype == dtype and vh.dtype == dtype
    expected_u, expected_s, expected_vh = np.linalg.svd(ref, full_matrices=full)
    assert u.shape == expected_u.shape and vh.shape == expected_vh.shape
    _close(s, expected_s, tol)
    _close(ct.linalg.svdvals(x), expected_s, tol)
    uu, vv = to_numpy(u).astype(np.complex128), to_numpy(vh).astype(np.complex128)
    k = min(shape[-2:])
    np.testing.assert_allclose((uu[..., :, :k] * expected_s[..., None, :]) @ vv[..., :k, :], ref,
                               atol=tol * 20)
    np.testing.assert_allclose(_h(uu) @ uu, np.broadcast_to(np.eye(uu.shape[-1]), _h(uu).shape[:-1]
                                                            + (uu.shape[-1],)), atol=tol * 10)
    np.testing.assert_allclose(vv @ _h(vv), np.broadcast_to(np.eye(vv.shape[-2]), vv.shape[:-1]
                                                            + (vv.shape[-2],)), atol=tol * 10)


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(device, cdt, shape, mode):
    dtype, npt, real, tol = cdt
    a = _complex(shape, 13)
    ref = _rounded(a, npt)
    q, r = ct.linalg.qr(_put(a, npt, device), mode=mode)
    expected_q, expected_r = np.linalg.qr(ref, mode=mode)
    assert q.shape == expected_q.shape and r.shape == expected_r.shape and q.dtype == dtype
    qq, rr = to_numpy(q).astype(np.complex128), to_numpy(r).astype(np.complex128)
    np.testing.assert_allclose(qq @ rr, ref, atol=tol * 20)
    eye = np.eye(qq.shape[-1])
    np.testing.assert_allclose(_h(qq) @ qq, np.broadcast_to(eye, qq.shape[:-2] + eye.shape),
                               atol=tol * 10)
    assert np.all(np.tril(rr, -1) == 0)


def test_pinv_rank(device, cdt):
    dtype, npt, real, tol = cdt
    a = _complex((2, 5, 3), 14)
    a[1, :, 2] = a[1, :, 0] * 2  # rank 2, exactly in every precision
    ref = _rounded(a, npt)
    x = _put(a, npt, device)
    _close(ct.linalg.pinv(x), np.linalg.pinv(ref), tol, 10)
    rank = ct.linalg.matrix_rank(x)
    assert rank.dtype == ct.int64
    np.testing.assert_array_equal(to_numpy(rank), [3, 2])


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
def test_matrix_norm(device, cdt, ord):
    dtype, npt, real, tol = cdt
    a = _complex((2, 4, 3), 15)
    out = ct.linalg.matrix_norm(_put(a, npt, device), ord=ord, keepdims=True)
    assert out.dtype == real
    _close(out, np.linalg.norm(_rounded(a, npt), ord=ord, axis=(-2, -1), keepdims=True), tol)


@pytest.mark.parametrize("ord", [2, 1, 0, 3, -1, math.inf, -math.inf])
def test_vector_norm(device, cdt, ord):
    dtype, npt, real, tol = cdt
    a = _complex((3, 4), 16)
    a[0, 1] = 0
    x = _put(a, npt, device)
    ref = _rounded(a, npt)
    out = ct.linalg.vector_norm(x, axis=-1, ord=ord)
    assert out.dtype == real
    with np.errstate(divide="ignore"):  # a negative ord over a zero element
        expected = np.linalg.norm(ref, ord=ord, axis=-1)
    _close(out, expected, tol)
    if ord == 2:
        _close(ct.linalg.vector_norm(x), np.linalg.norm(ref.ravel()), tol)


def test_power_trace_diagonal(device, cdt):
    dtype, npt, real, tol = cdt
    a = _general((2, 3, 3), 17) / 3
    ref = _rounded(a, npt)
    x = _put(a, npt, device)
    for n in (0, 1, 3, -2):
        out = ct.linalg.matrix_power(x, n)
        assert out.dtype == dtype
        _close(out, np.linalg.matrix_power(ref, n), tol, 10)
    _close(ct.linalg.trace(x), np.trace(ref, axis1=-2, axis2=-1), tol)
    _close(ct.linalg.trace(x, offset=-1), np.trace(ref, offset=-1, axis1=-2, axis2=-1), tol)
    _close(ct.linalg.diagonal(x, offset=1), np.diagonal(ref, 1, -2, -1), tol)


def test_products(device, cdt):
    """cross, outer and tensordot do not conjugate; vecdot conjugates x1."""
    dtype, npt, real, tol = cdt
    u, v = _complex((2, 3), 18), _complex((2, 3), 19)
    ru, rv = _rounded(u, npt), _rounded(v, npt)
    x1, x2 = _put(u, npt, device), _put(v, npt, device)
    _close(ct.linalg.cross(x1, x2), np.cross(ru, rv), tol)
    _close(ct.linalg.outer(x1[0], x2[1]), np.outer(ru[0], rv[1]), tol)
    _close(ct.linalg.vecdot(x1, x2), np.sum(np.conj(ru) * rv, axis=-1), tol)
    _close(ct.linalg.tensordot(x1, x2, axes=([1], [1])), np.tensordot(ru, rv, axes=([1], [1])), tol)
    _close(ct.linalg.matmul(x1, ct.linalg.matrix_transpose(x2)), ru @ rv.T, tol)


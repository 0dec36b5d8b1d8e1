"""Gradients through ct.linalg on complex128 matrices, in PyTorch's convention (for a real loss
L of z = x + iy, z.grad is dL/dx + i dL/dy), against central differences computed in NumPy
along the real and the imaginary part of each element, and against closed forms where there
are some; a loss through eigh's eigenvectors that depends on their phases is refused. (The C
tests, tests/test_linalg_complex_grad.c, check every rule with ct_gradcheck_complex.)"""

import numpy as np
import pytest

import ctensor as ct
from conftest import check_complex_grad, device_array, to_numpy

array = device_array


def check(fn, a, device):
    """fn: ctensor array -> real ctensor scalar, differentiated and differenced."""
    return check_complex_grad(fn, a, device, atol=1e-6)


def _complex(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)


def _general(shape, seed):
    a = _complex(shape, seed)
    n = min(shape[-2:])
    a[..., range(n), range(n)] += shape[-1]
    return a


def _hermitian_pd(n, seed):
    b = _complex((n, n), seed)
    return b @ np.conj(b.T) + n * np.eye(n)


def _weights(shape, seed, device):
    return array(_complex(shape, seed), device)


def test_solve_inv_det_slogdet(device):
    a, b = _general((3, 3), 1), _complex((3, 2), 2)
    w = _weights((3, 2), 3, device)
    check(lambda z: ct.sum(ct.real(ct.linalg.solve(z, array(b, device)) * w)), a, device)
    check(lambda z: ct.sum(ct.real(ct.linalg.solve(array(a, device), z) * w)), b, device)
    check(lambda z: ct.sum(ct.abs(ct.linalg.inv(z))), a, device)
    # det is holomorphic: Re(det)'s gradient is conj(det(A) A^{-T})
    grad = check(lambda z: ct.real(ct.linalg.det(z)), a, device)
    np.testing.assert_allclose(grad, np.conj(np.linalg.det(a) * np.linalg.inv(a).T), rtol=1e-9)
    grad = check(lambda z: ct.linalg.slogdet(z).logabsdet, a, device)
    np.testing.assert_allclose(grad, np.conj(np.linalg.inv(a).T), rtol=1e-9)
    s = _weights((), 4, device)
    check(lambda z: ct.real(ct.linalg.slogdet(z).sign * s), a, device)


def test_cholesky_eigh(device):
    """The upper triangle and the diagonal's imaginary parts are not read: gradient 0 there."""
    h = _hermitian_pd(3, 5)
    w = _weights((3, 3), 6, device)
    grad = check(lambda z: ct.sum(ct.real(ct.linalg.cholesky(z) * w)), h, device)
    assert np.all(np.triu(grad, 1) == 0) and np.all(np.imag(np.diagonal(grad)) == 0)
    check(lambda z: ct.sum(ct.real(ct.linalg.cholesky(z, upper=True) * w)), h, device)
    grad = check(lambda z: ct.sum(ct.linalg.eigvalsh(z)), h, device)
    np.testing.assert_allclose(grad, np.eye(3), atol=1e-9)  # d trace over the lower triangle
    m = array(np.abs(_complex((3, 3), 7)), device)
    check(lambda z: ct.sum(ct.abs(ct.linalg.eigh(z).eigenvectors) * m), h, device)
    c = array(np.arange(1.0, 4.0), device)

    def weighted(z):  # v diag(c) v^H: the phases cancel
        v = ct.linalg.eigh(z).eigenvectors
        return ct.sum(ct.real((v * c) @ ct.conj(ct.linalg.matrix_transpose(v)) * w))

    check(weighted, h, device)


def test_eigh_phase_dependent_loss_is_refused(device):
    z = array(_hermitian_pd(3, 8), device, requires_grad=True)
    loss = ct.sum(ct.imag(ct.linalg.eigh(z).eigenvectors))
    with pytest.raises(ValueError, match="phases of the complex eigenvectors"):
        loss.backward()


@pytest.mark.parametrize("loss", ["imag_u", "real_vh", "u_and_vh_of_two_calls", "imag_full_u"])
def test_svd_phase_dependent_loss_is_refused(device, loss):
    """U, S and Vh of one call share a node that sees their gradients together (as PyTorch's):
    a loss that moves with the shared phase of U's and V's k-th columns is refused, and U and
    Vh of two calls are two factorizations whose phases do not cancel."""
    z = array(_general((4, 3), 20), device, requires_grad=True)
    w = _weights((4, 3), 21, device)
    if loss == "imag_u":
        value = ct.sum(ct.imag(ct.linalg.svd(z, full_matrices=False).U))
    elif loss == "real_vh":
        value = ct.sum(ct.real(ct.linalg.svd(z, full_matrices=False).Vh))
    elif loss == "imag_full_u":  # its first K columns carry the phases
        value = ct.sum(ct.imag(ct.linalg.svd(z, full_matrices=True).U))
    else:
        u = ct.linalg.svd(z, full_matrices=False).U
        value = ct.sum(ct.real(u @ ct.linalg.svd(z, full_matrices=False).Vh * w))
    with pytest.raises(ValueError, match="svd: the loss depends on the phases"):
        value.backward()
    assert z.grad is None


@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
def test_svd_pinv_qr(device, shape):
    a = _general(shape, 9)
    k = min(shape)
    ws = array(np.random.default_rng(10).uniform(-1, 1, k), device)
    m = array(np.abs(_complex((shape[0], k), 11)), device)
    w = _weights(shape, 12, device)
    svd = lambda z: ct.linalg.svd(z, full_matrices=False)  # noqa: E731
    check(lambda z: ct.sum(svd(z).S * ws), a, device)
    check(lambda z: ct.sum(ct.linalg.svdvals(z) * ws), a, device)
    check(lambda z: ct.sum(ct.abs(svd(z).U) * m), a, device)
    mv = array(np.abs(_complex((k, shape[1]), 22)), device)
    check(lambda z: ct.sum(ct.abs(svd(z).Vh) * mv), a, device)

    def u_vh(z):  # the shared phases cancel
        r = svd(z)
        return ct.sum(ct.real(r.U @ r.Vh * w))

    def u_s_vh(z):
        r = svd(z)
        return ct.sum(ct.imag((r.U * r.S[..., None, :]) @ r.Vh * w))

    check(u_vh, a, device)
    check(u_s_vh, a, device)
    check(lambda z: ct.sum(ct.abs(ct.linalg.pinv(z))), a, device)
    if shape[0] >= shape[1]:
        q_w, r_w = _weights(shape, 13, device), _weights((k, k), 14, device)
        check(lambda z: ct.sum(ct.real(ct.linalg.qr(z).Q * q_w)), a, device)
        check(lambda z: ct.sum(ct.imag(ct.linalg.qr(z).R * r_w)), a, device)


@pytest.mark.parametrize("shape", [(2, 4, 3), (2, 3, 4)])
def test_svd_full_matrices(device, shape):
    """Of a full factorization (full_matrices=True, as PyTorch's), U's first K columns and Vh's
    first K rows are differentiated as the reduced factorization's; the others are arbitrary
    bases of the complements, whose gradients are ignored (0), phases included."""
    a = _general(shape, 30)
    b, m, n = shape
    k = min(m, n)
    ws = array(np.random.default_rng(31).uniform(-1, 1, (b, k)), device)
    mu = array(np.abs(_complex((b, m, k), 32)), device)
    mv = array(np.abs(_complex((b, k, n), 33)), device)
    w = _weights(shape, 34, device)

    def parts(z, full):
        r = ct.linalg.svd(z, full_matrices=full)
        return r.U[..., :, :k], r.S, r.Vh[..., :k, :]

    def invariant(z, full=True):  # each column's phase drops out
        u, s, vh = parts(z, full)
        return (ct.sum(ct.abs(u) * mu) + ct.sum(s * ws) + ct.sum(ct.abs(vh) * mv)
                + ct.sum(ct.real(u @ vh * w)) + ct.sum(ct.imag((u * s[..., None, :]) @ vh * w)))

    full = check(invariant, a, device)
    z = array(a, device, requires_grad=True)
    invariant(z, full=False).backward()
    np.testing.assert_allclose(full, to_numpy(z.grad), rtol=0, atol=1e-12)
    z = array(a, device, requires_grad=True)
    r = ct.linalg.svd(z, full_matrices=True)
    extra_u, extra_vh = r.U[..., :, k:], r.Vh[..., k:, :]
    (ct.sum(ct.imag(extra_u)) + ct.sum(ct.real(extra_vh))).backward()
    assert np.all(to_numpy(z.grad) == 0)


def test_norms_trace(device):
    a = _general((3, 3), 15)
    for ord in ["fro", "nuc", 2, -2, 1, float("inf")]:
        check(lambda z: ct.linalg.matrix_norm(z, ord=ord), a, device)
    for ord in [2, 1, 3]:
        check(lambda z: ct.linalg.vector_norm(z, ord=ord), a, device)
    t = _weights((), 16, device)
    grad = check(lambda z: ct.real(ct.linalg.trace(z) * t), a, device)
    np.testing.assert_allclose(grad, np.conj(to_numpy(t)) * np.eye(3), atol=1e-9)


@pytest.mark.parametrize("name", ["solve", "inv", "det", "logabsdet", "cholesky", "eigvalsh",
                                  "eigh_magnitudes", "svdvals", "u_vh", "qr", "pinv", "nuc"])
def test_complex64_gradients_follow_complex128(device, name):
    """Each rule in complex64 keeps the dtype and agrees with complex128 to float32's accuracy."""
    h = _hermitian_pd(3, 17)
    a = h if name in ("cholesky", "eigvalsh", "eigh_magnitudes") else _general((3, 3), 18)
    w = _complex((3, 3), 19)
    losses = {
        "solve": lambda z, u: ct.sum(ct.real(ct.linalg.solve(z, u) * u)),
        "inv": lambda z, u: ct.sum(ct.real(ct.linalg.inv(z) * u)),
        "det": lambda z, u: ct.real(ct.linalg.det(z)),
        "logabsdet": lambda z, u: ct.linalg.slogdet(z).logabsdet,
        "cholesky": lambda z, u: ct.sum(ct.real(ct.linalg.cholesky(z) * u)),
        "eigvalsh": lambda z, u: ct.sum(ct.linalg.eigvalsh(z) * ct.real(u[0])),
        "eigh_magnitudes": lambda z, u: ct.sum(ct.abs(ct.linalg.eigh(z).eigenvectors)
                                               * ct.real(u)),
        "svdvals": lambda z, u: ct.sum(ct.linalg.svdvals(z) * ct.real(u[0])),
        "u_vh": lambda z, u: (lambda r: ct.sum(ct.real(r.U @ r.Vh * u)))(ct.linalg.svd(z)),
        "qr": lambda z, u: ct.sum(ct.real(ct.linalg.qr(z).Q * u) + ct.imag(ct.linalg.qr(z).R)),
        "pinv": lambda z, u: ct.sum(ct.real(ct.linalg.pinv(z) * u)),
        "nuc": lambda z, u: ct.linalg.matrix_norm(z, ord="nuc"),
    }
    grads = []
    for dtype in (np.complex64, np.complex128):
        z = array(a.astype(dtype), device, requires_grad=True)
        losses[name](z, array(w.astype(dtype), device)).backward()
        assert z.grad.dtype == z.dtype
        grads.append(to_numpy(z.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-3, atol=1e-4)

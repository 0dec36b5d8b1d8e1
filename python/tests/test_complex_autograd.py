"""Autograd through complex arrays, in PyTorch's convention: for a real loss L of z = x + iy,
z.grad is dL/dx + i dL/dy. Each gradient is checked against central differences computed in
NumPy along the real and the imaginary part of each element (the C tests,
tests/test_autograd_complex.c and tests/test_fft_grad.c, check every rule)."""

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

EPS = 1e-6


def array(a, device, requires_grad=False):
    if np.iscomplexobj(a):
        x = ct.asarray(ct.from_dlpack(np.ascontiguousarray(a)), device=device, copy=True)
    else:
        x = ct.asarray(a, device=device)
    if requires_grad:
        x.requires_grad_()
    return x


def numeric_grad(loss, a):
    """dL/dRe a + i dL/dIm a by central differences (L: a NumPy function to a float)."""
    grad = np.zeros(a.shape, dtype=a.dtype)
    for idx in np.ndindex(a.shape):
        for step in (1, 1j) if np.iscomplexobj(a) else (1,):
            plus, minus = a.copy(), a.copy()
            plus[idx] += EPS * step
            minus[idx] -= EPS * step
            grad[idx] += step * (loss(plus) - loss(minus)) / (2 * EPS)
    return grad


def check(fn, a, device):
    """fn: ctensor array -> real ctensor scalar; the same fn is evaluated for the differences."""
    z = array(a, device, requires_grad=True)
    fn(z).backward()
    assert z.grad.dtype == z.dtype
    expected = numeric_grad(lambda v: float(to_numpy(fn(array(v, device)))), a)
    np.testing.assert_allclose(to_numpy(z.grad), expected, rtol=1e-5, atol=1e-7)


def sample(shape, seed, complex_=True):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.3, 1.4, shape)
    return x + 1j * rng.uniform(0.2, 0.9, shape) if complex_ else x


def test_elementwise_and_abs(device):
    w = array(sample((2, 3), 1), device)
    check(lambda z: ct.sum(ct.abs(ct.exp(z) * w - ct.log(z)) + ct.real(z * z)), sample((2, 3), 2),
          device)


def test_matmul_and_conj(device):
    b = array(sample((3, 2), 3), device)
    check(lambda z: ct.sum(ct.imag(ct.conj(z) @ b)), sample((2, 3), 4), device)


def test_real_input_promoted(device):
    w = array(sample((4,), 5), device)
    check(lambda x: ct.sum(ct.abs(x * w)), sample((4,), 6, complex_=False), device)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fft_functions(device, norm):
    u = array(sample((5,), 7), device)
    check(lambda z: ct.sum(ct.real(ct.fft.fft(z, n=5, norm=norm) * u)), sample((7,), 8), device)
    check(lambda z: ct.sum(ct.abs(ct.fft.ifft(z, norm=norm))), sample((6,), 9), device)
    r = array(sample((7,), 10, complex_=False), device)
    check(lambda h: ct.sum(ct.fft.irfft(h, n=7, norm=norm) * r), sample((4,), 11), device)
    check(lambda x: ct.sum(ct.abs(ct.fft.rfft(x, norm=norm))), sample((8,), 12, False), device)
    check(lambda h: ct.sum(ct.fft.hfft(h, n=6, norm=norm) ** 2), sample((4,), 13), device)


def test_complex_root_is_refused(device):
    z = array(sample((3,), 14), device, requires_grad=True)
    with pytest.raises(Exception, match="real scalar output"):
        ct.sum(z).backward()

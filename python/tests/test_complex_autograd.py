"""Autograd through complex arrays, in PyTorch's convention: for a real loss L of z = x + iy,
z.grad is dL/dx + i dL/dy. Each gradient is checked against central differences computed in
NumPy along the real and the imaginary part of each element (the C tests,
tests/test_autograd_complex.c and tests/test_fft_grad.c, check every rule)."""

import numpy as np
import pytest

import ctensor as ct
from conftest import check_complex_grad, device_array

array = device_array


def check(fn, a, device):
    """fn: ctensor array -> real ctensor scalar; the same fn is evaluated for the differences."""
    return check_complex_grad(fn, a, device, atol=1e-7)


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

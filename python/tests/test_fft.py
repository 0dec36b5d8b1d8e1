"""ctensor.fft against numpy.fft on every device: the 14 functions of the standard's fft
extension with their n/s, axis/axes and norm arguments, complex64 and complex128 (and real
input taken as complex), lengths of every kind (powers of two, primes, products of small
primes), and the errors. numpy.fft computes in float64, so it is the reference for both
precisions: the relative RMS error must stay within 2e-6 for complex64 and 1e-13 for
complex128 (the engine's own bound, eps log2(2n), checked in tests/test_fft_engine.c)."""

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

LENGTHS = list(range(1, 33)) + [49, 60, 97, 100, 127, 128, 210, 257, 1000, 1009, 1024]
NORMS = ["backward", "ortho", "forward"]
TOLERANCE = {np.complex64: 2e-6, np.complex128: 1e-13, np.float32: 2e-6, np.float64: 1e-13}


def signal(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def array(a, device):
    """NumPy's a as a ctensor array on device (a copy; complex values through DLPack)."""
    if np.iscomplexobj(a):
        return ct.asarray(ct.from_dlpack(np.ascontiguousarray(a)), device=device, copy=True)
    return ct.asarray(a, device=device)


def close(ours, ref, dtype):
    """ours (a ctensor array) against NumPy's ref, by relative RMS error."""
    got = to_numpy(ours)
    assert got.shape == ref.shape
    err = np.sqrt(np.sum(np.abs(got - ref) ** 2))
    norm = np.sqrt(np.sum(np.abs(ref) ** 2))
    assert err <= TOLERANCE[dtype] * max(norm, 1.0), (err, norm)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_fft_ifft_every_length(device, dtype):
    for n in LENGTHS:
        a = signal(n, dtype, seed=n)
        x = array(a, device)
        y = ct.fft.fft(x)
        assert y.dtype == (ct.complex64 if dtype == np.complex64 else ct.complex128)
        assert y.device == x.device
        close(y, np.fft.fft(a), dtype)
        close(ct.fft.ifft(x), np.fft.ifft(a), dtype)


@pytest.mark.parametrize("norm", NORMS)
def test_one_axis_functions_n_axis_norm(device, norm):
    a = signal((3, 10, 4), np.complex128, seed=1)
    r = signal((3, 10, 4), np.float64, seed=2)
    x, xr = array(a, device), array(r, device)
    for axis in (0, 1, -1):
        for n in (None, 1, 7, 10, 16):
            kw = {"n": n, "axis": axis, "norm": norm}
            close(ct.fft.fft(x, **kw), np.fft.fft(a, **kw), np.complex128)
            close(ct.fft.ifft(x, **kw), np.fft.ifft(a, **kw), np.complex128)
            close(ct.fft.rfft(xr, **kw), np.fft.rfft(r, **kw), np.complex128)
            close(ct.fft.ihfft(xr, **kw), np.fft.ihfft(r, **kw), np.complex128)
            if n != 1 or a.shape[axis] > 1:
                close(ct.fft.irfft(x, **kw), np.fft.irfft(a, **kw), np.float64)
                close(ct.fft.hfft(x, **kw), np.fft.hfft(a, **kw), np.float64)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 9, 100, 101, 257, 1000])
def test_real_transforms_lengths_complex64(device, n):
    r = signal(n, np.float32, seed=n)
    xr = array(r, device)
    y = ct.fft.rfft(xr)
    assert y.dtype == ct.complex64
    close(y, np.fft.rfft(r.astype(np.float64)), np.complex64)
    spectrum = np.fft.rfft(r.astype(np.float64)).astype(np.complex64)
    back = ct.fft.irfft(array(spectrum, device), n=n)
    assert back.dtype == ct.float32
    close(back, np.fft.irfft(spectrum.astype(np.complex128), n=n), np.float32)


@pytest.mark.parametrize("norm", NORMS)
def test_n_dimensional(device, norm):
    a = signal((4, 6, 5), np.complex128, seed=3)
    r = signal((4, 6, 5), np.float64, seed=4)
    x, xr = array(a, device), array(r, device)
    cases = [{}, {"axes": (0,)}, {"axes": (2, 0)}, {"s": (3, 8)}, {"s": (4, 2, 9), "axes": (1, 0, 2)},
             {"axes": (-1, -2)}]
    for kw in cases:
        close(ct.fft.fftn(x, norm=norm, **kw), np.fft.fftn(a, norm=norm, **kw), np.complex128)
        close(ct.fft.ifftn(x, norm=norm, **kw), np.fft.ifftn(a, norm=norm, **kw), np.complex128)
        close(ct.fft.rfftn(xr, norm=norm, **kw), np.fft.rfftn(r, norm=norm, **kw), np.complex128)
        close(ct.fft.irfftn(x, norm=norm, **kw), np.fft.irfftn(a, norm=norm, **kw), np.float64)


def test_real_input_is_taken_as_complex(device):
    for np_dtype, ct_dtype in ((np.float32, ct.complex64), (np.float64, ct.complex128)):
        r = signal(12, np_dtype)
        y = ct.fft.fft(array(r, device))
        assert y.dtype == ct_dtype
        close(y, np.fft.fft(r.astype(np.float64)), np.complex64 if np_dtype == np.float32
              else np.complex128)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 11])
def test_frequencies(device, n):
    for d in (1.0, 0.25):
        f = ct.fft.fftfreq(n, d=d, dtype=ct.float64, device=device)
        np.testing.assert_array_equal(to_numpy(f), np.fft.fftfreq(n, d=d))
        rf = ct.fft.rfftfreq(n, d=d, dtype=ct.float64, device=device)
        np.testing.assert_array_equal(to_numpy(rf), np.fft.rfftfreq(n, d=d))
    assert ct.fft.fftfreq(n, device=device).dtype == ct.float32
    assert ct.fft.fftfreq(n, device=device).device == device


def test_shifts(device):
    a = np.arange(5 * 4 * 3, dtype=np.float32).reshape(5, 4, 3)
    x = array(a, device)
    for axes in (None, 0, (1,), (0, 2), (-1, 0)):
        np.testing.assert_array_equal(to_numpy(ct.fft.fftshift(x, axes=axes)),
                                      np.fft.fftshift(a, axes=axes))
        np.testing.assert_array_equal(to_numpy(ct.fft.ifftshift(x, axes=axes)),
                                      np.fft.ifftshift(a, axes=axes))
    c = signal((7,), np.complex64)
    np.testing.assert_array_equal(to_numpy(ct.fft.fftshift(array(c, device))),
                                  np.fft.fftshift(c))


def test_errors(device):
    x = array(signal(8, np.complex64), device)
    with pytest.raises(ValueError):
        ct.fft.fft(x, norm="sideways")
    with pytest.raises(ValueError):
        ct.fft.fft(x, n=0)
    with pytest.raises(ValueError):
        ct.fft.fftn(x, s=(4, 4), axes=(0,))
    with pytest.raises(TypeError):  # rfft of complex input (a dtype error)
        ct.fft.rfft(x)
    with pytest.raises(ValueError):
        ct.fft.irfft(array(signal(1, np.complex64), device))  # n = 2 (1 - 1) = 0

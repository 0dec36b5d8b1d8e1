"""ctensor.fft: the array API standard's fft extension (2023.12) over the C library's
ct_fft_* functions (include/ctensor/fft.h), on every device: the CPU's own engine of any
length (f32 computed in f32, f64 in f64) and cuFFT on CUDA.

Results follow numpy.fft: complex64 input gives complex64 results, complex128 complex128;
real input to fft/ifft/fftn/ifftn/irfft/irfftn/hfft is taken as complex (float64 as
complex128, other reals as complex64). norm is "backward" (the default), "ortho" or
"forward". fft, ifft, fftn and ifftn are differentiable.
"""
from ctensor import _ctensor as _c

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    """The one-dimensional discrete Fourier transform along axis (length n: x cropped or
    padded with zeros)."""
    return _c._fft_1d(x, 0, n, axis, norm)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of fft."""
    return _c._fft_1d(x, 1, n, axis, norm)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The n // 2 + 1 first bins of the transform of real x."""
    return _c._fft_1d(x, 2, n, axis, norm)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The real signal of length n (default 2 (m - 1)) whose rfft is x."""
    return _c._fft_1d(x, 3, n, axis, norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The real spectrum of length n (default 2 (m - 1)) of a Hermitian signal given by its
    first half x."""
    return _c._fft_1d(x, 4, n, axis, norm)


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of hfft, from real x."""
    return _c._fft_1d(x, 5, n, axis, norm)


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    """The n-dimensional transform over axes (all when both s and axes are None; the last
    len(s) when only s is given), with lengths s."""
    return _c._fft_nd(x, 0, s, axes, norm)


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    """The inverse of fftn."""
    return _c._fft_nd(x, 1, s, axes, norm)


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    """fftn of real x, the last axis halved as rfft does."""
    return _c._fft_nd(x, 2, s, axes, norm)


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    """The inverse of rfftn (the last axis's length s[-1], default 2 (m - 1))."""
    return _c._fft_nd(x, 3, s, axes, norm)


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of a transform of length n, sample spacing d."""
    return _c._fft_freq(n, d, False, dtype, device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of rfft's bins."""
    return _c._fft_freq(n, d, True, dtype, device)


def fftshift(x, /, *, axes=None):
    """The zero frequency moved to the middle of each axis (all when axes is None)."""
    return _c._fft_shift(x, axes, False)


def ifftshift(x, /, *, axes=None):
    """The inverse of fftshift."""
    return _c._fft_shift(x, axes, True)

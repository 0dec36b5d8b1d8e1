/* Discrete Fourier transforms: the array API standard's fft extension (2023.12), as
 * numpy.fft computes them, on every device (the CPU's own engine of any length; cuFFT on
 * CUDA).
 *
 * Conventions (those of the standard and numpy.fft):
 *   forward  X[k] = sum_j x[j] e^{-2 pi i jk/n}, inverse x[j] = sum_k X[k] e^{+2 pi i jk/n},
 *   each scaled by the norm: CT_FFT_BACKWARD (forward 1, inverse 1/n), CT_FFT_ORTHO (both
 *   1/sqrt(n)), CT_FFT_FORWARD (forward 1/n, inverse 1); n is the product of the transformed
 *   lengths for the n-dimensional transforms.
 *   - n (one axis) and s (several) give the transform's length along each axis: the input is
 *     cropped or padded with zeros to it; n < 0 (s NULL) keeps the input's length, except for
 *     irfft, hfft and irfftn's last axis, whose output length is then 2 (m - 1), m the input's.
 *     A length below 1 is CT_ERR_INVALID_ARG.
 *   - The n-dimensional transforms take naxes axes: axes (NULL: the last naxes axes) with
 *     lengths s (NULL: the input's); naxes < 0 transforms every axis (axes and s then NULL).
 *     An axis may be negative (counting from the end); a repeated axis is CT_ERR_INVALID_ARG.
 *   - dtypes: complex64 in, complex64 out, complex128 in, complex128 out. On the CPU both are
 *     computed in float64 (a complex64 result is the float64 transform of the input rounded
 *     once, as NumPy 2 gives); cuFFT computes complex64 in float32. fft, ifft,
 *     fftn, ifftn, irfft, irfftn and hfft take complex input; real input is taken as complex
 *     (float64 as complex128, other reals as complex64). rfft, rfftn and ihfft take real input
 *     (float64 in float64, other reals in float32); complex input is CT_ERR_DTYPE.
 *   - Results are new tensors on x's device. Every transform is differentiable (PyTorch's
 *     convention for complex gradients, ctensor/autograd.h): its gradient is the adjoint
 *     transform under the same norm, and the half-spectrum ones (rfft, irfft, hfft, ihfft and
 *     their n-dimensional forms) count each bin that stands for its mirror twice. */
#ifndef CTENSOR_FFT_H
#define CTENSOR_FFT_H

#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_fft_norm {
    CT_FFT_BACKWARD = 0, /* "backward", the default */
    CT_FFT_ORTHO = 1,    /* "ortho" */
    CT_FFT_FORWARD = 2   /* "forward" */
} ct_fft_norm;

/* One axis: complex to complex, forward and inverse. */
CT_API ct_tensor *ct_fft_fft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm);
CT_API ct_tensor *ct_fft_ifft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm);
/* Several axes: complex to complex. */
CT_API ct_tensor *ct_fft_fftn(const ct_tensor *x, int naxes, const int *axes, const int64_t *s,
                              ct_fft_norm norm);
CT_API ct_tensor *ct_fft_ifftn(const ct_tensor *x, int naxes, const int *axes, const int64_t *s,
                               ct_fft_norm norm);
/* Real input: the n/2 + 1 first bins of the forward transform; rfftn: the last axis is the
 * halved one. */
CT_API ct_tensor *ct_fft_rfft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm);
CT_API ct_tensor *ct_fft_rfftn(const ct_tensor *x, int naxes, const int *axes, const int64_t *s,
                               ct_fft_norm norm);
/* Real output of length n from the n/2 + 1 first bins of a Hermitian spectrum (the imaginary
 * parts of bin 0 and, for even n, of bin n/2 are ignored); irfftn: along the last axis. */
CT_API ct_tensor *ct_fft_irfft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm);
CT_API ct_tensor *ct_fft_irfftn(const ct_tensor *x, int naxes, const int *axes, const int64_t *s,
                                ct_fft_norm norm);
/* The signal of Hermitian symmetry: hfft gives the real spectrum of length n (default
 * 2 (m - 1)) of a signal whose n/2 + 1 first values are x; ihfft its inverse, from real x. */
CT_API ct_tensor *ct_fft_hfft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm);
CT_API ct_tensor *ct_fft_ihfft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm);
/* The sample frequencies of a transform of length n >= 1 with sample spacing d != 0:
 * [0, 1, ..., (n - 1) / 2, -(n / 2), ..., -1] / (d n), and rfftfreq's [0, 1, ..., n / 2] /
 * (d n). dtype: a real floating dtype, or CT_FFT_DEFAULT_DTYPE for float32 (the default
 * floating dtype). */
#define CT_FFT_DEFAULT_DTYPE ((ct_dtype)-1)
CT_API ct_tensor *ct_fft_fftfreq(int64_t n, double d, ct_dtype dtype, ct_device device);
CT_API ct_tensor *ct_fft_rfftfreq(int64_t n, double d, ct_dtype dtype, ct_device device);
/* Zero frequency to the middle: each axis rolled by floor(size / 2) (ifftshift: back, by
 * -floor(size / 2)); naxes < 0 (axes NULL) shifts every axis. A new tensor of x's dtype. */
CT_API ct_tensor *ct_fft_fftshift(const ct_tensor *x, int naxes, const int *axes);
CT_API ct_tensor *ct_fft_ifftshift(const ct_tensor *x, int naxes, const int *axes);

#ifdef __cplusplus
}
#endif
#endif

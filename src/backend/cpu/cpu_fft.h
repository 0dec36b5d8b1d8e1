/* ctensor's CPU FFT engine: discrete Fourier transforms of any length on interleaved
 * (re, im) arrays of float or double with strides, in batches over the library's OpenMP
 * team. Both precisions compute in double: float data are widened and the results rounded
 * once, so that a float transform's error is about that of rounding the exact result, as
 * NumPy 2's numpy.fft gives for complex64.
 *
 * The transforms are unnormalised: forward X[k] = sum_j x[j] e^{-2 pi i jk/n}, backward
 * x[j] = sum_k X[k] e^{+2 pi i jk/n}, so backward(forward(x)) = n x. A length whose prime
 * factors are small runs in mixed radix (butterflies of radix 2, 3, 4 and 5, a generic one
 * for other odd primes, cpu_fft_exec.c); one with a large prime factor by Bluestein's
 * chirp-z algorithm, a cyclic convolution through a mixed-radix transform of a 5-smooth length
 * at least 2n - 1. Real input (r2c, forward) gives the n/2 + 1 first outputs, the others being
 * their conjugates; real output (c2r, backward) reads n/2 + 1 inputs and ignores the
 * imaginary parts of input 0 and, for even n, of input n/2 (the Hermitian spectrum's are 0).
 * An even length runs as a complex transform of n/2 points; an odd one as one of n points.
 *
 * Plans (factors, twiddles, Bluestein's chirp and filter) are cached per (length, kind,
 * sign): a bounded cache shared by all threads (cpu_fft_plan.c). A plan keeps one work buffer
 * (n + scratch double pairs) between calls, as cuFFT's plans keep their work area, and frees
 * it when the cache lets the plan go. */
#ifndef CT_CPU_FFT_H
#define CT_CPU_FFT_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/status.h"

/* A batch of `batch` transforms of length n. Strides and distances (from one transform's
 * first element to the next one's) count elements of each array's own type: complex (re, im)
 * pairs for complex arrays, scalars for real ones; any sign. The input and the output do not
 * overlap, except that a complex-to-complex transform may run in place (the same pointer,
 * with the same strides and distances). */
typedef struct ct__fft_layout {
    int64_t n, batch;
    int64_t in_stride, in_dist;
    int64_t out_stride, out_dist;
    double scale; /* the results multiplied by it (1: unnormalised) */
} ct__fft_layout;

/* Complex to complex, forward (sign -1) or backward (sign +1); in, out: float or double
 * pairs as f64 says (the data's precision; the transform is computed in double). CT_ERR_INVALID_ARG
 * for n < 1, a negative batch or another sign; CT_ERR_OUT_OF_MEMORY when a plan or the work buffers
 * cannot be allocated. */
ct_status ct__fft_c2c(bool f64, int sign, const ct__fft_layout *layout, const void *in, void *out);
/* Real to complex, forward: n reals in, n/2 + 1 complex out. Errors as ct__fft_c2c. */
ct_status ct__fft_r2c(bool f64, const ct__fft_layout *layout, const void *in, void *out);
/* Complex to real, backward: n/2 + 1 complex in, n reals out. Errors as ct__fft_c2c. */
ct_status ct__fft_c2r(bool f64, const ct__fft_layout *layout, const void *in, void *out);

/* The number of plans the cache holds now, and its bound (for tests). */
int ct__fft_cached_plans(void);
#define CT_FFT_PLAN_CACHE_SIZE 16

#endif

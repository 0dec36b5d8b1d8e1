/* The Fourier transforms of ctensor/fft.h on every device, against a naive DFT computed here
 * in double: the one-axis transforms with n (crop, pad), axis and the three norms, complex64
 * and complex128; the real ones (rfft, irfft, hfft, ihfft); the n-dimensional ones against
 * one-axis transforms in turn; the frequencies and shifts; the refusal of gradients; and the
 * errors. Tolerances: relative RMS 1e-12 (complex128) and 2e-6
 * (complex64), the engine's eps log2(2n) bound (tests/test_fft_engine.c) with room. */
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"

typedef double complex cplx;

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static double uniform(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1.0p-52 - 1.0;
}

static void random_fill(cplx *x, int64_t n, bool real) {
    for (int64_t i = 0; i < n; i++) x[i] = real ? uniform() : uniform() + I * uniform();
}

/* A complex tensor (complex128, or complex64 holding x rounded) of shape on device. */
static ct_tensor *complex_tensor(const cplx *x, int ndim, const int64_t *shape, bool f64,
                                 ct_device device) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    if (f64) return ct_from_data(x, ndim, shape, CT_C128, device);
    float *pairs = malloc((size_t)(2 * n + 1) * sizeof *pairs);
    if (!pairs) return NULL;
    for (int64_t i = 0; i < n; i++)
        pairs[2 * i] = (float)creal(x[i]), pairs[2 * i + 1] = (float)cimag(x[i]);
    ct_tensor *t = ct_from_data(pairs, ndim, shape, CT_C64, device);
    free(pairs);
    return t;
}

static ct_tensor *real_tensor(const cplx *x, int ndim, const int64_t *shape, bool f64,
                              ct_device device) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    double *values = malloc((size_t)(n + 1) * sizeof *values);
    if (!values) return NULL;
    for (int64_t i = 0; i < n; i++) values[i] = creal(x[i]);
    ct_tensor *t = ct_from_data(values, ndim, shape, CT_F64, device), *out = t;
    if (t && !f64) {
        out = ct_cast(t, CT_F32);
        ct_release(t);
    }
    free(values);
    return out;
}

/* t's values as complex doubles (real dtypes with 0 imaginary parts); NULL on failure. */
static cplx *values_of(const ct_tensor *t) {
    int64_t n = ct_numel(t);
    ct_tensor *wide = ct_dtype_of(t) == CT_C64 || ct_dtype_of(t) == CT_C128 ? ct_cast(t, CT_C128)
                                                                            : ct_cast(t, CT_F64);
    cplx *out = malloc((size_t)(n + 1) * sizeof *out);
    double *re = malloc((size_t)(n + 1) * sizeof *re);
    bool complex_values = ct_dtype_of(t) == CT_C64 || ct_dtype_of(t) == CT_C128;
    if (!wide || !out || !re ||
        ct_copy_to_host(wide, complex_values ? (void *)out : (void *)re,
                        (size_t)n * (complex_values ? sizeof *out : sizeof *re)) != CT_OK) {
        free(out);
        out = NULL;
    } else if (!complex_values) {
        for (int64_t i = 0; i < n; i++) out[i] = re[i];
    }
    free(re);
    ct_release(wide);
    return out;
}

/* The DFT of n values of x (stride apart) of sign, times scale, into out (stride apart). */
static void naive(const cplx *x, int64_t n, int64_t stride, int sign, double scale, cplx *out) {
    const double two_pi = 6.283185307179586476925286766559;
    for (int64_t k = 0; k < n; k++) {
        cplx sum = 0;
        for (int64_t j = 0; j < n; j++)
            sum += x[j * stride] * cexp(sign * I * two_pi * (double)((j * k) % n) / (double)n);
        out[k * stride] = scale * sum;
    }
}

static double rel_rms(const cplx *a, const cplx *b, int64_t n) {
    double err = 0, norm = 0;
    for (int64_t i = 0; i < n; i++) {
        err += cabs(a[i] - b[i]) * cabs(a[i] - b[i]);
        norm += cabs(b[i]) * cabs(b[i]);
    }
    return norm > 0 ? sqrt(err / norm) : sqrt(err);
}

static double scale_of(ct_fft_norm norm, bool inverse, int64_t n) {
    if (norm == CT_FFT_ORTHO) return 1 / sqrt((double)n);
    return (inverse ? norm == CT_FFT_BACKWARD : norm == CT_FFT_FORWARD) ? 1.0 / (double)n : 1.0;
}

#define CHECK_CLOSE(got, want, count, tol)                                                         \
    do {                                                                                           \
        double e_ = rel_rms(got, want, count);                                                     \
        if (!(e_ <= (tol))) {                                                                      \
            ct_test_fail(__FILE__, __LINE__, "relative RMS error %.3g above %.3g", e_,             \
                         (double)(tol));                                                           \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* fft and ifft of a (rows x cols) matrix along axis 1 and 0, with n cropping and padding,
 * each norm, both precisions, against the naive DFT. */
DEVICE_TEST(fft_one_axis_against_naive) {
    const int64_t lengths[] = {1, 2, 3, 5, 8, 12, 17, 64, 100, 127, 257};
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
        for (int f = 0; f < 2; f++)
            for (int norm = 0; norm < 3; norm++)
                for (int inverse = 0; inverse < 2; inverse++) {
                    int64_t n = lengths[li], shape[2] = {3, n};
                    cplx *x = malloc(3 * n * sizeof *x), *want = malloc(3 * n * sizeof *want);
                    CHECK(x && want);
                    random_fill(x, 3 * n, false);
                    ct_tensor *t = complex_tensor(x, 2, shape, f == 1, device);
                    CHECK_NOT_NULL(t);
                    ct_tensor *y = inverse ? ct_fft_ifft(t, -1, -1, (ct_fft_norm)norm)
                                           : ct_fft_fft(t, -1, 1, (ct_fft_norm)norm);
                    CHECK_NOT_NULL(y);
                    CHECK(ct_dtype_of(y) == (f ? CT_C128 : CT_C64));
                    for (int r = 0; r < 3; r++)
                        naive(x + r * n, n, 1, inverse ? 1 : -1,
                              scale_of((ct_fft_norm)norm, inverse, n), want + r * n);
                    cplx *got = values_of(y);
                    CHECK(got);
                    CHECK_CLOSE(got, want, 3 * n, f ? 1e-12 : 2e-6);
                    free(got), free(x), free(want);
                    ct_release(t), ct_release(y);
                }
}

DEVICE_TEST(fft_axis_zero_and_lengths_n) {
    const int64_t rows = 6, cols = 4, shape[2] = {rows, cols};
    cplx x[24], padded[10 * 4] = {0}, want[10 * 4];
    random_fill(x, rows * cols, false);
    ct_tensor *t = complex_tensor(x, 2, shape, true, device);
    CHECK_NOT_NULL(t);
    const int64_t ns[] = {6, 3, 10};
    for (int i = 0; i < 3; i++) {
        int64_t n = ns[i];
        memset(padded, 0, sizeof padded);
        for (int64_t r = 0; r < (n < rows ? n : rows); r++)
            for (int64_t c = 0; c < cols; c++) padded[r * cols + c] = x[r * cols + c];
        for (int64_t c = 0; c < cols; c++) naive(padded + c, n, cols, -1, 1.0, want + c);
        ct_tensor *y = ct_fft_fft(t, n, 0, CT_FFT_BACKWARD);
        CHECK_NOT_NULL(y);
        CHECK(ct_shape(y)[0] == n && ct_shape(y)[1] == cols);
        cplx *got = values_of(y);
        CHECK(got);
        CHECK_CLOSE(got, want, n * cols, 1e-12);
        free(got);
        ct_release(y);
    }
    ct_release(t);
}

/* rfft against the first bins of the naive DFT; irfft(rfft(x), n) = x; ihfft(x) =
 * conj(rfft(x)) / n and hfft(ihfft(x), n) = x. */
DEVICE_TEST(fft_real_transforms) {
    const int64_t lengths[] = {1, 2, 7, 8, 9, 60, 101};
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
        for (int f = 0; f < 2; f++) {
            int64_t n = lengths[li], h = n / 2 + 1;
            cplx x[101], want[101];
            random_fill(x, n, true);
            ct_tensor *t = real_tensor(x, 1, &n, f == 1, device);
            CHECK_NOT_NULL(t);
            ct_tensor *spec = ct_fft_rfft(t, -1, 0, CT_FFT_BACKWARD);
            CHECK_NOT_NULL(spec);
            CHECK(ct_dtype_of(spec) == (f ? CT_C128 : CT_C64) && ct_shape(spec)[0] == h);
            naive(x, n, 1, -1, 1.0, want);
            cplx *got = values_of(spec);
            CHECK(got);
            CHECK_CLOSE(got, want, h, f ? 1e-12 : 2e-6);
            free(got);
            ct_tensor *back = ct_fft_irfft(spec, n, 0, CT_FFT_BACKWARD);
            CHECK_NOT_NULL(back);
            CHECK(ct_dtype_of(back) == (f ? CT_F64 : CT_F32) && ct_shape(back)[0] == n);
            got = values_of(back);
            CHECK(got);
            CHECK_CLOSE(got, x, n, f ? 1e-12 : 4e-6);
            free(got);
            ct_tensor *ih = ct_fft_ihfft(t, -1, 0, CT_FFT_BACKWARD);
            CHECK_NOT_NULL(ih);
            got = values_of(ih);
            CHECK(got);
            for (int64_t k = 0; k < h; k++) want[k] = conj(want[k]) / (double)n;
            CHECK_CLOSE(got, want, h, f ? 1e-12 : 2e-6);
            free(got);
            ct_tensor *hf = ct_fft_hfft(ih, n, 0, CT_FFT_BACKWARD);
            CHECK_NOT_NULL(hf);
            got = values_of(hf);
            CHECK(got);
            CHECK_CLOSE(got, x, n, f ? 1e-12 : 4e-6);
            free(got);
            ct_release(t), ct_release(spec), ct_release(back), ct_release(ih), ct_release(hf);
        }
}

/* fftn over (0, 2) with s = (3, 5) against fft along 2 then along 0; rfftn/irfftn round
 * trip; ifftn(fftn(x)) = x over every axis. */
DEVICE_TEST(fft_n_dimensional) {
    const int64_t shape[3] = {4, 3, 6};
    cplx x[72];
    random_fill(x, 72, false);
    ct_tensor *t = complex_tensor(x, 3, shape, true, device);
    CHECK_NOT_NULL(t);
    const int axes[2] = {0, 2};
    const int64_t s[2] = {3, 5};
    ct_tensor *y = ct_fft_fftn(t, 2, axes, s, CT_FFT_ORTHO);
    ct_tensor *a = ct_fft_fft(t, 5, 2, CT_FFT_ORTHO);
    ct_tensor *b = a ? ct_fft_fft(a, 3, 0, CT_FFT_ORTHO) : NULL;
    CHECK_NOT_NULL(y);
    CHECK_NOT_NULL(b);
    cplx *got = values_of(y), *want = values_of(b);
    CHECK(got && want && ct_numel(y) == 3 * 3 * 5);
    CHECK_CLOSE(got, want, 45, 1e-13);
    free(got), free(want);
    ct_tensor *all = ct_fft_fftn(t, -1, NULL, NULL, CT_FFT_BACKWARD);
    ct_tensor *back = all ? ct_fft_ifftn(all, -1, NULL, NULL, CT_FFT_BACKWARD) : NULL;
    CHECK_NOT_NULL(back);
    got = values_of(back);
    CHECK(got);
    CHECK_CLOSE(got, x, 72, 1e-13);
    free(got);
    ct_tensor *r = real_tensor(x, 3, shape, true, device);
    ct_tensor *rs = r ? ct_fft_rfftn(r, -1, NULL, NULL, CT_FFT_FORWARD) : NULL;
    CHECK_NOT_NULL(rs);
    CHECK(ct_shape(rs)[2] == 4);
    const int64_t full[3] = {4, 3, 6};
    ct_tensor *rb = ct_fft_irfftn(rs, 3, NULL, full, CT_FFT_FORWARD);
    CHECK_NOT_NULL(rb);
    got = values_of(rb);
    cplx re[72];
    for (int i = 0; i < 72; i++) re[i] = creal(x[i]);
    CHECK(got);
    CHECK_CLOSE(got, re, 72, 1e-13);
    free(got);
    ct_release(t), ct_release(y), ct_release(a), ct_release(b), ct_release(all);
    ct_release(back), ct_release(r), ct_release(rs), ct_release(rb);
}

DEVICE_TEST(fft_frequencies_and_shifts) {
    ct_tensor *f = ct_fft_fftfreq(5, 0.5, CT_F64, device);
    ct_tensor *rf = ct_fft_rfftfreq(6, 1.0, CT_FFT_DEFAULT_DTYPE, device);
    CHECK_NOT_NULL(f);
    CHECK_NOT_NULL(rf);
    CHECK(ct_dtype_of(rf) == CT_F32 && ct_numel(rf) == 4);
    double fv[5];
    CHECK_OK(ct_copy_to_host(f, fv, sizeof fv));
    const double fw[5] = {0, 0.4, 0.8, -0.8, -0.4};
    for (int i = 0; i < 5; i++) CHECK_NEAR(fv[i], fw[i], 1e-15);
    float rv[4];
    CHECK_OK(ct_copy_to_host(rf, rv, sizeof rv));
    for (int i = 0; i < 4; i++) CHECK_NEAR(rv[i], i / 6.0, 1e-7);
    const int64_t shape[2] = {3, 4};
    ct_tensor *m = ct_arange(0, 12, 1, CT_F32, device), *m2 = m ? ct_reshape(m, 2, shape) : NULL;
    CHECK_NOT_NULL(m2);
    ct_tensor *s = ct_fft_fftshift(m2, -1, NULL), *u = s ? ct_fft_ifftshift(s, -1, NULL) : NULL;
    CHECK_NOT_NULL(u);
    float sv[12], uv[12];
    CHECK_OK(ct_copy_to_host(s, sv, sizeof sv));
    CHECK_OK(ct_copy_to_host(u, uv, sizeof uv));
    const float sw[12] = {10, 11, 8, 9, 2, 3, 0, 1, 6, 7, 4, 5};
    for (int i = 0; i < 12; i++) CHECK(sv[i] == sw[i] && uv[i] == (float)i);
    const int axis = 1;
    ct_tensor *one = ct_fft_fftshift(m2, 1, &axis);
    CHECK_NOT_NULL(one);
    CHECK_OK(ct_copy_to_host(one, sv, sizeof sv));
    const float ow[12] = {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9};
    for (int i = 0; i < 12; i++) CHECK(sv[i] == ow[i]);
    ct_release(f), ct_release(rf), ct_release(m), ct_release(m2), ct_release(s), ct_release(u);
    ct_release(one);
}

DEVICE_TEST(fft_errors) {
    const int64_t n = 4;
    cplx x[4] = {1, 2, 3, 4};
    ct_tensor *t = complex_tensor(x, 1, &n, false, device);
    CHECK_NOT_NULL(t);
    CHECK(ct_fft_fft(t, 0, 0, CT_FFT_BACKWARD) == NULL && ct_last_status() == CT_ERR_INVALID_ARG);
    CHECK(ct_fft_fft(t, -1, 0, (ct_fft_norm)7) == NULL && ct_last_status() == CT_ERR_INVALID_ARG);
    CHECK(ct_fft_fft(t, -1, 1, CT_FFT_BACKWARD) == NULL && ct_last_status() == CT_ERR_INVALID_ARG);
    CHECK(ct_fft_rfft(t, -1, 0, CT_FFT_BACKWARD) == NULL && ct_last_status() == CT_ERR_DTYPE);
    const int twice[2] = {0, -1};
    CHECK(ct_fft_fftn(t, 2, twice, NULL, CT_FFT_BACKWARD) == NULL &&
          ct_last_status() == CT_ERR_INVALID_ARG);
    CHECK(ct_fft_fftfreq(0, 1.0, CT_F32, device) == NULL && ct_last_status() == CT_ERR_INVALID_ARG);
    CHECK(ct_fft_fftfreq(4, 1.0, CT_I32, device) == NULL && ct_last_status() == CT_ERR_DTYPE);
    ct_tensor *one = ct_slice(t, 0, 0, 1, 1); /* irfft of 1 bin: n = 2 (1 - 1) = 0 */
    CHECK_NOT_NULL(one);
    CHECK(ct_fft_irfft(one, -1, 0, CT_FFT_BACKWARD) == NULL &&
          ct_last_status() == CT_ERR_INVALID_ARG);
    ct_release(one);
    ct_release(t);
    ct_clear_error();
}

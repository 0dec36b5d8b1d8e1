/* The CPU FFT engine (backend/cpu/cpu_fft*.c) against a naive DFT in long double.
 *
 * The error of a transform is its relative RMS error, ||y - X||_2 / ||X||_2, X the reference.
 * The bound checked is FFT_ERROR_BOUND * eps * log2(2n) (eps = 2^-53 for f64, 2^-24 for f32;
 * for Bluestein's algorithm n is its convolution's length M >= 2n - 1): the O(eps log n) of
 * a Cooley-Tukey transform with twiddles accurate to the precision.
 *   - every length 1..256, forward and backward, f32 and f64, against the full naive DFT;
 *   - primes 257, 1009, 4099, 65537, the product 2*3*5*7*11*13 and powers of 2 up to 2^20:
 *     f64 against the naive DFT at sampled bins, f32 against the f64 engine, and the round
 *     trip backward(forward(x)) = n x;
 *   - real to complex and complex to real against the complex transform;
 *   - strided, batched and in-place layouts bit for bit against contiguous single transforms;
 *   - f32 bit for bit the f64 transform of the widened input, rounded once (the engine
 *     computes in double);
 *   - one thread against two (the split forced), bit for bit; the plan cache's bound, and
 *     plans made and used by several threads at once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/cpu_fft.h"
#include "backend/cpu/cpu_fft_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "ct_test.h"

#define FFT_ERROR_BOUND 1.0
#define EPS64 1.1102230246251565e-16
#define EPS32 5.9604644775390625e-08

typedef long double ldouble;

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            ct_test_fail(__FILE__, __LINE__, __VA_ARGS__);                                         \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void) { /* in [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1.0p-52 - 1.0;
}

/* Random pairs, each exactly a float, so that the f32 and f64 transforms see the same x. */
static double *random_pairs(int64_t count) {
    double *x = malloc((size_t)count * 2 * sizeof *x);
    for (int64_t i = 0; x && i < 2 * count; i++) x[i] = (float)uniform();
    return x;
}

static float *to_f32(const double *x, int64_t count) {
    float *y = malloc((size_t)count * sizeof *y);
    for (int64_t i = 0; y && i < count; i++) y[i] = (float)x[i];
    return y;
}

/* The exact roots e^{sign 2 pi i t / n}, t < n, in long double. */
static ldouble *roots_ld(int64_t n, int sign) {
    ldouble *w = malloc((size_t)n * 2 * sizeof *w);
    const ldouble two_pi = 6.283185307179586476925286766559005768L;
    for (int64_t t = 0; w && t < n; t++) {
        w[2 * t] = cosl(two_pi * (ldouble)t / (ldouble)n);
        w[2 * t + 1] = sign * sinl(two_pi * (ldouble)t / (ldouble)n);
    }
    return w;
}

/* Bin k of the DFT of n pairs x. */
static void naive_bin(int64_t n, const ldouble *w, const double *x, int64_t k, ldouble *out) {
    ldouble re = 0, im = 0;
    int64_t idx = 0;
    for (int64_t j = 0; j < n; j++) {
        re += x[2 * j] * w[2 * idx] - x[2 * j + 1] * w[2 * idx + 1];
        im += x[2 * j] * w[2 * idx + 1] + x[2 * j + 1] * w[2 * idx];
        idx += k;
        if (idx >= n) idx -= n;
    }
    out[0] = re;
    out[1] = im;
}

/* The relative RMS error of y (count pairs at bins[i], or 0..count) against X. */
static double rel_rms(const double *y, const ldouble *ref, int64_t count, const int64_t *bins) {
    ldouble err = 0, norm = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t k = bins ? bins[i] : i;
        ldouble dr = y[2 * k] - ref[2 * i], di = y[2 * k + 1] - ref[2 * i + 1];
        err += dr * dr + di * di;
        norm += ref[2 * i] * ref[2 * i] + ref[2 * i + 1] * ref[2 * i + 1];
    }
    return norm > 0 ? (double)sqrtl(err / norm) : (double)sqrtl(err);
}

static double rel_rms_f32(const float *y, const double *ref, int64_t count) {
    ldouble err = 0, norm = 0;
    for (int64_t i = 0; i < 2 * count; i++) {
        ldouble d = (ldouble)y[i] - ref[i];
        err += d * d;
        norm += (ldouble)ref[i] * ref[i];
    }
    return norm > 0 ? (double)sqrtl(err / norm) : (double)sqrtl(err);
}

static ct__fft_layout contiguous(int64_t n, int64_t batch) {
    return (ct__fft_layout){n, batch, 1, n, 1, n, 1.0};
}

/* The bound for a transform of length n: log2(2 M) for Bluestein's plans. */
static double bound(int64_t n, double eps, bool f64, int sign) {
    ct__fft_plan *plan = ct__fft_plan_get(n, CT_FFT_C2C, sign);
    int64_t length = plan && plan->blue_m ? plan->blue_m : n;
    ct__fft_plan_release(plan);
    return FFT_ERROR_BOUND * eps * log2(2.0 * (double)length);
}

TEST(fft_every_length_to_256_against_naive_dft) {
    double worst64 = 0, worst32 = 0;
    for (int64_t n = 1; n <= 256; n++)
        for (int sign = -1; sign <= 1; sign += 2) {
            double *x = random_pairs(n), *y = malloc((size_t)n * 2 * sizeof *y);
            float *x32 = to_f32(x, 2 * n), *y32 = malloc((size_t)n * 2 * sizeof *y32);
            ldouble *w = roots_ld(n, sign), *ref = malloc((size_t)n * 2 * sizeof *ref);
            double *ref64 = malloc((size_t)n * 2 * sizeof *ref64);
            CHECK(x && y && x32 && y32 && w && ref && ref64);
            for (int64_t k = 0; k < n; k++) naive_bin(n, w, x, k, ref + 2 * k);
            for (int64_t i = 0; i < 2 * n; i++) ref64[i] = (double)ref[i];
            ct__fft_layout l = contiguous(n, 1);
            CHECK_OK(ct__fft_c2c(true, sign, &l, x, y));
            CHECK_OK(ct__fft_c2c(false, sign, &l, x32, y32));
            double e64 = rel_rms(y, ref, n, NULL), e32 = rel_rms_f32(y32, ref64, n);
            double b64 = bound(n, EPS64, true, sign), b32 = bound(n, EPS32, false, sign);
            if (e64 > b64 || e32 > b32)
                CHECK_MSG(false, "n %lld sign %d: f64 error %.3g (bound %.3g), f32 %.3g (%.3g)",
                          (long long)n, sign, e64, b64, e32, b32);
            worst64 = e64 / b64 > worst64 ? e64 / b64 : worst64;
            worst32 = e32 / b32 > worst32 ? e32 / b32 : worst32;
            free(x), free(y), free(x32), free(y32), free(w), free(ref), free(ref64);
        }
    printf("  worst error / bound: f64 %.3f, f32 %.3f\n", worst64, worst32);
}

/* Lengths too long for the full naive DFT: f64 at 64 sampled bins against it, f32 against the
 * f64 engine, and the round trip in both precisions. */
static void check_long(int64_t n) {
    double *x = random_pairs(n), *y = malloc((size_t)n * 2 * sizeof *y);
    double *back = malloc((size_t)n * 2 * sizeof *back);
    float *x32 = to_f32(x, 2 * n), *y32 = malloc((size_t)n * 2 * sizeof *y32);
    float *back32 = malloc((size_t)n * 2 * sizeof *back32);
    ldouble *w = roots_ld(n, -1), ref[2 * 64];
    int64_t bins[64];
    CHECK(x && y && back && x32 && y32 && back32 && w);
    ct__fft_layout l = contiguous(n, 1);
    CHECK_OK(ct__fft_c2c(true, -1, &l, x, y));
    CHECK_OK(ct__fft_c2c(false, -1, &l, x32, y32));
    int samples = n < 64 ? (int)n : 64;
    for (int i = 0; i < samples; i++) {
        bins[i] =
            i < 4 ? (i < 2 ? i : n - 4 + i) : (int64_t)((uniform() + 1) * 0.5 * (double)n) % n;
        naive_bin(n, w, x, bins[i], ref + 2 * i);
    }
    double e64 = rel_rms(y, ref, samples, bins), b64 = bound(n, EPS64, true, -1);
    double e32 = rel_rms_f32(y32, y, n), b32 = bound(n, EPS32, false, -1);
    CHECK_OK(ct__fft_c2c(true, 1, &l, y, back));
    CHECK_OK(ct__fft_c2c(false, 1, &l, y32, back32));
    ldouble err = 0, err32 = 0, norm = 0;
    for (int64_t i = 0; i < 2 * n; i++) {
        ldouble nx = (ldouble)n * x[i];
        err += (back[i] - nx) * (back[i] - nx);
        err32 += (back32[i] - nx) * (back32[i] - nx);
        norm += nx * nx;
    }
    double trip = (double)sqrtl(err / norm), trip32 = (double)sqrtl(err32 / norm);
    printf("  n %lld: f64 %.3g (bound %.3g), f32 %.3g (%.3g), round trip %.3g, %.3g\n",
           (long long)n, e64, b64, e32, b32, trip, trip32);
    CHECK_MSG(e64 <= b64 && e32 <= b32, "n %lld: error above the bound", (long long)n);
    CHECK_MSG(trip <= 2 * b64 && trip32 <= 2 * b32, "n %lld: round trip", (long long)n);
    free(x), free(y), free(back), free(x32), free(y32), free(back32), free(w);
}

TEST(fft_long_primes_and_products) {
    const int64_t lengths[] = {257,  1009,    4099,        65537,         2 * 3 * 5 * 7 * 11 * 13,
                               1000, 1 << 10, 3 * 131 * 4, 6 * 6 * 6 * 49};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        check_long(lengths[i]);
        if (ct_test_failed()) return;
    }
}

TEST(fft_powers_of_two_to_2_20) {
    for (int e = 11; e <= 20; e += 3) {
        check_long((int64_t)1 << e);
        if (ct_test_failed()) return;
    }
}

TEST(fft_plans_cover_mixed_radix_and_bluestein) {
    const int64_t mixed[] = {7, 11, 13, 49, 2 * 3 * 5 * 7 * 11 * 13};
    const int64_t bluestein[] = {257, 1009, 2 * 131, 65537};
    for (size_t i = 0; i < sizeof mixed / sizeof mixed[0]; i++) {
        ct__fft_plan *plan = ct__fft_plan_get(mixed[i], CT_FFT_C2C, -1);
        CHECK(plan && plan->blue_m == 0 && plan->stages > 0);
        ct__fft_plan_release(plan);
    }
    for (size_t i = 0; i < sizeof bluestein / sizeof bluestein[0]; i++) {
        ct__fft_plan *plan = ct__fft_plan_get(bluestein[i], CT_FFT_C2C, 1);
        CHECK(plan && plan->blue_m >= 2 * bluestein[i] - 1);
        ct__fft_plan_release(plan);
    }
}

/* r2c(x) against the first n/2 + 1 bins of c2c(x + 0i); c2r(X) against the real part of the
 * backward c2c of X's Hermitian extension, with junk in the imaginary parts that c2r
 * ignores (bin 0, and n/2 for even n). */
static void check_real(int64_t n, bool f64) {
    int64_t h = n / 2 + 1;
    double *x = random_pairs(n), *full = malloc((size_t)n * 2 * sizeof *full);
    double *xr = malloc((size_t)n * sizeof *xr), *spec = malloc((size_t)h * 2 * sizeof *spec);
    double *real_out = malloc((size_t)n * sizeof *real_out);
    CHECK(x && full && xr && spec && real_out);
    for (int64_t j = 0; j < n; j++) xr[j] = x[2 * j], x[2 * j + 1] = 0;
    ct__fft_layout l = contiguous(n, 1);
    ct__fft_layout lr = {n, 1, 1, n, 1, h, 1.0};
    double eps = f64 ? EPS64 : EPS32, b = bound(n, eps, f64, -1) * 2;
    CHECK_OK(ct__fft_c2c(true, -1, &l, x, full));
    if (f64) {
        CHECK_OK(ct__fft_r2c(true, &lr, xr, spec));
    } else {
        float *xr32 = to_f32(xr, n), *spec32 = malloc((size_t)h * 2 * sizeof *spec32);
        CHECK(xr32 && spec32);
        CHECK_OK(ct__fft_r2c(false, &lr, xr32, spec32));
        for (int64_t i = 0; i < 2 * h; i++) spec[i] = spec32[i];
        free(xr32), free(spec32);
    }
    ldouble *ref = malloc((size_t)h * 2 * sizeof *ref);
    CHECK(ref);
    for (int64_t i = 0; i < 2 * h; i++) ref[i] = full[i];
    double e = rel_rms(spec, ref, h, NULL);
    CHECK_MSG(e <= b, "r2c n %lld %s: error %.3g, bound %.3g", (long long)n, f64 ? "f64" : "f32", e,
              b);
    /* c2r of the spectrum (with junk imaginary parts at 0 and n/2) against c2c backward. */
    spec[1] = 7.0;
    if (n % 2 == 0) spec[2 * (h - 1) + 1] = -3.0;
    for (int64_t k = 0; k < h; k++) {
        full[2 * k] = spec[2 * k], full[2 * k + 1] = spec[2 * k + 1];
        if (k > 0) full[2 * (n - k)] = spec[2 * k], full[2 * (n - k) + 1] = -spec[2 * k + 1];
    }
    full[1] = 0;
    if (n % 2 == 0) full[2 * (h - 1) + 1] = 0;
    double *back = malloc((size_t)n * 2 * sizeof *back);
    CHECK(back);
    CHECK_OK(ct__fft_c2c(true, 1, &l, full, back));
    ct__fft_layout lc = {n, 1, 1, h, 1, n, 1.0};
    if (f64) {
        CHECK_OK(ct__fft_c2r(true, &lc, spec, real_out));
    } else {
        float *spec32 = to_f32(spec, 2 * h), *out32 = malloc((size_t)n * sizeof *out32);
        CHECK(spec32 && out32);
        CHECK_OK(ct__fft_c2r(false, &lc, spec32, out32));
        for (int64_t j = 0; j < n; j++) real_out[j] = out32[j];
        free(spec32), free(out32);
    }
    ldouble err = 0, norm = 0;
    for (int64_t j = 0; j < n; j++) {
        err += (ldouble)(real_out[j] - back[2 * j]) * (real_out[j] - back[2 * j]);
        norm += (ldouble)back[2 * j] * back[2 * j];
    }
    double ec = (double)sqrtl(err / norm);
    CHECK_MSG(ec <= b, "c2r n %lld %s: error %.3g, bound %.3g", (long long)n, f64 ? "f64" : "f32",
              ec, b);
    free(x), free(full), free(xr), free(spec), free(real_out), free(ref), free(back);
}

TEST(fft_real_transforms_against_complex) {
    const int64_t extra[] = {1000, 1001, 2 * 4099, 4099, 1 << 16, 2 * 3 * 5 * 7 * 11 * 13};
    for (int64_t n = 1; n <= 80; n++)
        for (int f = 0; f < 2; f++) {
            check_real(n, f == 1);
            if (ct_test_failed()) return;
        }
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        for (int f = 0; f < 2; f++) {
            check_real(extra[i], f == 1);
            if (ct_test_failed()) return;
        }
}

/* A batch of 5 with strides 3 (input) and 2 (output) and gaps between the transforms, against
 * each transform alone from contiguous memory: bit for bit, f32, all three kinds. */
static void check_layouts(int64_t n) {
    const int64_t batch = 5, is = 3, os = 2, id = 3 * n + 7, od = 2 * (n + 1) + 5;
    int64_t h = n / 2 + 1;
    float *in = malloc((size_t)(batch * id) * 2 * sizeof *in);
    float *out = calloc((size_t)(batch * od) * 2, sizeof *out);
    float *one_in = malloc((size_t)n * 2 * sizeof *one_in);
    float *one_out = malloc((size_t)n * 2 * sizeof *one_out);
    CHECK(in && out && one_in && one_out);
    for (int64_t i = 0; i < batch * id * 2; i++) in[i] = (float)uniform();
    for (int kind = 0; kind < 3; kind++) {
        int64_t count_in = kind == 2 ? h : n, count_out = kind == 1 ? h : n;
        ct__fft_layout l = {n, batch, is, id, os, od, 1.0}, one = contiguous(n, 1);
        if (kind == 0) CHECK_OK(ct__fft_c2c(false, -1, &l, in, out));
        if (kind == 1) CHECK_OK(ct__fft_r2c(false, &l, in, out));
        if (kind == 2) CHECK_OK(ct__fft_c2r(false, &l, in, out));
        int width_in = kind == 1 ? 1 : 2, width_out = kind == 2 ? 1 : 2;
        for (int64_t b = 0; b < batch; b++) {
            for (int64_t j = 0; j < count_in; j++)
                memcpy(one_in + j * width_in, in + (b * id + j * is) * width_in,
                       (size_t)width_in * sizeof(float));
            if (kind == 0) CHECK_OK(ct__fft_c2c(false, -1, &one, one_in, one_out));
            if (kind == 1) CHECK_OK(ct__fft_r2c(false, &one, one_in, one_out));
            if (kind == 2) CHECK_OK(ct__fft_c2r(false, &one, one_in, one_out));
            for (int64_t k = 0; k < count_out; k++)
                CHECK_MSG(memcmp(one_out + k * width_out, out + (b * od + k * os) * width_out,
                                 (size_t)width_out * sizeof(float)) == 0,
                          "n %lld kind %d batch %lld element %lld differs", (long long)n, kind,
                          (long long)b, (long long)k);
        }
    }
    /* In place: the contiguous batch transformed over itself. */
    ct__fft_layout lp = contiguous(n, batch);
    float *copy = malloc((size_t)(batch * n) * 2 * sizeof *copy);
    CHECK(copy);
    memcpy(copy, in, (size_t)(batch * n) * 2 * sizeof *copy);
    CHECK_OK(ct__fft_c2c(false, 1, &lp, copy, copy));
    CHECK_OK(ct__fft_c2c(false, 1, &lp, in, out));
    CHECK(memcmp(copy, out, (size_t)(batch * n) * 2 * sizeof *copy) == 0);
    free(in), free(out), free(one_in), free(one_out), free(copy);
}

TEST(fft_strided_batched_and_in_place) {
    const int64_t lengths[] = {1, 2, 7, 16, 60, 101, 257, 1000, 1024};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        check_layouts(lengths[i]);
        if (ct_test_failed()) return;
    }
}

TEST(fft_one_and_two_threads_bit_identical) {
#ifdef _OPENMP
    const int64_t n = 1000, batch = 64;
    double *x = random_pairs(n * batch);
    double *one = malloc((size_t)(n * batch) * 2 * sizeof *one);
    double *two = malloc((size_t)(n * batch) * 2 * sizeof *two);
    CHECK(x && one && two);
    int threads = omp_get_max_threads();
    double region = ct__cpu_region_ns();
    ct__fft_layout l = contiguous(n, batch);
    omp_set_num_threads(1);
    ct_status s1 = ct__fft_c2c(true, -1, &l, x, one);
    omp_set_num_threads(2);
    ct__cpu_set_region_ns(0.0);
    ct_status s2 = ct__fft_c2c(true, -1, &l, x, two);
    ct__cpu_set_region_ns(region);
    omp_set_num_threads(threads);
    CHECK_OK(s1);
    CHECK_OK(s2);
    CHECK(memcmp(one, two, (size_t)(n * batch) * 2 * sizeof *one) == 0);
    free(x), free(one), free(two);
#else
    ct_test_skip("built without OpenMP: one thread only");
#endif
}

/* More lengths than the cache holds, from several threads at once, each checked against the
 * naive DFT at bin 1; the cache stays within its bound. */
TEST(fft_plan_cache_bounded_and_shared_by_threads) {
    const int lengths = 3 * CT_FFT_PLAN_CACHE_SIZE;
    int bad = 0;
#ifdef _OPENMP
#pragma omp parallel for num_threads(2) schedule(dynamic) reduction(+ : bad)
#endif
    for (int i = 0; i < 2 * lengths; i++) {
        int64_t n = 30 + i % lengths;
        double *x = random_pairs(n), *y = malloc((size_t)n * 2 * sizeof *y);
        ldouble *w = roots_ld(n, -1), ref[2];
        ct__fft_layout l = contiguous(n, 1);
        if (!x || !y || !w || ct__fft_c2c(true, -1, &l, x, y) != CT_OK) {
            bad++;
        } else {
            naive_bin(n, w, x, 1, ref);
            bad += fabsl(ref[0] - y[2]) + fabsl(ref[1] - y[3]) > 1e-12L * n;
        }
        free(x), free(y), free(w);
    }
    CHECK(bad == 0);
    CHECK(ct__fft_cached_plans() <= CT_FFT_PLAN_CACHE_SIZE);
}

/* A float transform is the double transform of its widened input, scaled in double and
 * rounded once: bit for bit, all three kinds, scale 1 and 1/n, mixed radix and Bluestein. */
TEST(fft_float_is_the_double_transform_rounded_once) {
    const int64_t lengths[] = {1, 2, 3, 7, 16, 60, 101, 257, 1000, 1024, 4099};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        int64_t n = lengths[i], h = n / 2 + 1;
        double *x = random_pairs(n), *y = malloc((size_t)n * 2 * sizeof *y);
        float *x32 = to_f32(x, 2 * n), *y32 = malloc((size_t)n * 2 * sizeof *y32);
        CHECK(x && y && x32 && y32);
        for (int kind = 0; kind < 3; kind++)
            for (int scaled = 0; scaled < 2; scaled++) {
                ct__fft_layout l = contiguous(n, 1);
                l.scale = scaled ? 1.0 / (double)n : 1.0;
                if (kind == 0) CHECK_OK(ct__fft_c2c(true, 1, &l, x, y));
                if (kind == 0) CHECK_OK(ct__fft_c2c(false, 1, &l, x32, y32));
                if (kind == 1) CHECK_OK(ct__fft_r2c(true, &l, x, y));
                if (kind == 1) CHECK_OK(ct__fft_r2c(false, &l, x32, y32));
                if (kind == 2) CHECK_OK(ct__fft_c2r(true, &l, x, y));
                if (kind == 2) CHECK_OK(ct__fft_c2r(false, &l, x32, y32));
                int64_t scalars = kind == 0 ? 2 * n : kind == 1 ? 2 * h : n;
                for (int64_t k = 0; k < scalars; k++)
                    CHECK_MSG(y32[k] == (float)y[k], "n %lld kind %d scale %d scalar %lld",
                              (long long)n, kind, scaled, (long long)k);
            }
        free(x), free(y), free(x32), free(y32);
    }
}

/* scale multiplies the results: by 0.25 (exact), bit for bit against the unscaled results
 * times 0.25, for all three kinds. */
TEST(fft_scale_applies_to_results) {
    const int64_t n = 60, h = n / 2 + 1;
    double *x = random_pairs(n), *plain = malloc(n * 2 * sizeof *plain);
    double *scaled = malloc(n * 2 * sizeof *scaled);
    CHECK(x && plain && scaled);
    for (int kind = 0; kind < 3; kind++) {
        ct__fft_layout one = contiguous(n, 1), quarter = one;
        quarter.scale = 0.25;
        int64_t count = kind == 0 ? 2 * n : kind == 1 ? 2 * h : n;
        ct__fft_layout *ls[2] = {&one, &quarter};
        double *outs[2] = {plain, scaled};
        for (int i = 0; i < 2; i++) {
            if (kind == 0) CHECK_OK(ct__fft_c2c(true, -1, ls[i], x, outs[i]));
            if (kind == 1) CHECK_OK(ct__fft_r2c(true, ls[i], x, outs[i]));
            if (kind == 2) CHECK_OK(ct__fft_c2r(true, ls[i], x, outs[i]));
        }
        for (int64_t i = 0; i < count; i++)
            CHECK_MSG(scaled[i] == 0.25 * plain[i], "kind %d element %lld", kind, (long long)i);
    }
    free(x), free(plain), free(scaled);
}

TEST(fft_bad_arguments) {
    float x[4] = {0};
    ct__fft_layout l = contiguous(0, 1);
    CHECK(ct__fft_c2c(false, -1, &l, x, x) == CT_ERR_INVALID_ARG);
    l = contiguous(2, 1);
    CHECK(ct__fft_c2c(false, 0, &l, x, x) == CT_ERR_INVALID_ARG);
    l.batch = 0;
    CHECK_OK(ct__fft_c2c(false, -1, &l, NULL, NULL));
    ct_clear_error();
}

/* Elementwise ops on complex tensors, on every device, against C99's double complex
 * (<complex.h>, whose functions follow Annex G): ordinary values within a few ulps, and the
 * special values (zeros, infinities, NaN in each part), where the result's NaN and infinite
 * parts must match the reference's. Branch cuts: the sign of a zero imaginary part picks the
 * side. Mixed dtypes promote as the array API standard says. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"

enum { MAX_N = 64 };

static ct_tensor *from_values(const double complex *v, int64_t n, ct_dtype dtype,
                              ct_device device) {
    ct_complex128 z[MAX_N];
    for (int64_t i = 0; i < n; i++) z[i] = (ct_complex128){creal(v[i]), cimag(v[i])};
    ct_tensor *wide = ct_from_data(z, 1, &n, CT_C128, device);
    ct_tensor *t = wide ? ct_cast(wide, dtype) : NULL;
    ct_release(wide);
    return t;
}

/* t's values as double complex, t released; false with the test failed. */
static bool take_values(ct_tensor *t, double complex *out, int64_t n) {
    ct_tensor *wide = t ? ct_cast(t, CT_C128) : NULL;
    ct_complex128 z[MAX_N];
    bool ok = wide && ct_copy_to_host(wide, z, (size_t)n * sizeof z[0]) == CT_OK;
    if (!ok) ct_test_fail(__FILE__, __LINE__, "no result: %s", ct_last_error());
    for (int64_t i = 0; ok && i < n; i++) out[i] = CMPLX(z[i].re, z[i].im);
    ct_release(wide);
    ct_release(t);
    return ok;
}

/* One part against the reference: NaN for NaN, the same infinity, or within tol relative to
 * scale (the reference's magnitude) for finite values. Beside a NaN part the infinity's sign
 * is free (Annex G's "+-inf + NaN i" results leave it unspecified). */
static bool close_part(double got, double want, double scale, double tol, bool beside_nan) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return beside_nan ? isinf(got) : got == want;
    if (!isfinite(got)) return false;
    return fabs(got - want) <= tol * (scale > 1e-300 ? scale : 1e-300);
}

static bool close(double complex got, double complex want, double tol) {
    double scale = cabs(want);
    if (!isfinite(scale)) scale = fmax(fabs(creal(want)), fabs(cimag(want)));
    return close_part(creal(got), creal(want), isfinite(scale) ? scale : 1, tol,
                      isnan(cimag(want))) &&
           close_part(cimag(got), cimag(want), isfinite(scale) ? scale : 1, tol,
                      isnan(creal(want)));
}

typedef double complex (*ref_fn)(double complex);
static double complex ref_neg(double complex z) { return -z; }
static double complex ref_square(double complex z) { return z * z; }
static double complex ref_reciprocal(double complex z) { return 1.0 / z; }
/* In long double, so that the cancellation near 0 stays below double's precision (expm1 by
 * the identity e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y/2); its special values are exp's). */
static double complex ref_expm1(double complex z) {
    long double x = creal(z), y = cimag(z), s = sinl(y / 2);
    if (!isfinite(x) || !isfinite(y)) return cexp(z) - 1.0;
    return CMPLX((double)(expm1l(x) * cosl(y) - 2 * s * s), (double)(expl(x) * sinl(y)));
}
static double complex ref_log1p(double complex z) { /* log|1 + z| = log1p(2x + x^2 + y^2) / 2 */
    long double x = creal(z), y = cimag(z);
    if (!isfinite(x) || !isfinite(y)) return clog(1.0 + z);
    return CMPLX((double)(0.5L * log1pl(x * (2 + x) + y * y)), (double)atan2l(y, 1 + x));
}
static double complex ref_log2(double complex z) {
    double complex l = clog(z);
    return CMPLX(creal(l) / log(2.0), cimag(l) / log(2.0));
}
static double complex ref_log10(double complex z) {
    double complex l = clog(z);
    return CMPLX(creal(l) / log(10.0), cimag(l) / log(10.0));
}
static double complex ref_abs(double complex z) { return cabs(z); }
static double complex ref_sign(double complex z) { return z == 0 ? 0 : z / cabs(z); }

typedef struct {
    const char *name;
    ct_tensor *(*op)(const ct_tensor *);
    ref_fn ref;
    bool real_out, special; /* abs gives the real dtype; special values checked */
} unary_case;

static const unary_case unary_cases[] = {
    {"neg", ct_neg, ref_neg, false, true},
    {"square", ct_square, ref_square, false, false},
    {"reciprocal", ct_reciprocal, ref_reciprocal, false, false},
    {"abs", ct_abs, ref_abs, true, true},
    {"sign", ct_sign, ref_sign, false, false},
    {"sqrt", ct_sqrt, csqrt, false, true},
    {"exp", ct_exp, cexp, false, true},
    {"expm1", ct_expm1, ref_expm1, false, true},
    {"log", ct_log, clog, false, true},
    {"log1p", ct_log1p, ref_log1p, false, true},
    {"log2", ct_log2, ref_log2, false, true},
    {"log10", ct_log10, ref_log10, false, true},
    {"sin", ct_sin, csin, false, true},
    {"cos", ct_cos, ccos, false, true},
    {"tan", ct_tan, ctan, false, true},
    {"sinh", ct_sinh, csinh, false, true},
    {"cosh", ct_cosh, ccosh, false, true},
    {"tanh", ct_tanh, ctanh, false, true},
    {"asin", ct_asin, casin, false, true},
    {"acos", ct_acos, cacos, false, true},
    {"atan", ct_atan, catan, false, true},
    {"asinh", ct_asinh, casinh, false, true},
    {"acosh", ct_acosh, cacosh, false, true},
    {"atanh", ct_atanh, catanh, false, true},
};

/* Ordinary values: both signs, small and large magnitudes, the axes, near |z| = 1. */
static int ordinary_values(double complex *v) {
    static const double parts[] = {0.0, -0.0, 0.5, -1.25, 3.0, -7.5, 1e-8, 20.0};
    int n = 0;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            if (n < MAX_N) v[n++] = CMPLX(parts[i], parts[j]);
    return n;
}

/* The special values of Annex G: zeros, ones, infinities and NaN in each part. */
static int special_values(double complex *v) {
    static const double parts[] = {0.0, -0.0, 1.0, -2.0, INFINITY, -INFINITY, NAN};
    int n = 0;
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 7; j++) v[n++] = CMPLX(parts[i], parts[j]);
    return n;
}

static void check_unary(ct_device device, const unary_case *c, ct_dtype dtype, bool special) {
    double complex v[MAX_N], got[MAX_N];
    int n = special ? special_values(v) : ordinary_values(v);
    bool narrow = dtype == CT_C64;
    if (narrow) /* the input as complex64 holds it */
        for (int i = 0; i < n; i++) v[i] = CMPLX((float)creal(v[i]), (float)cimag(v[i]));
    ct_tensor *x = from_values(v, n, dtype, device);
    ct_tensor *y = c->op(x);
    ct_dtype want_dtype = c->real_out ? (narrow ? CT_F32 : CT_F64) : dtype;
    if (y && ct_dtype_of(y) != want_dtype)
        ct_test_fail(__FILE__, __LINE__, "%s of %s gave %s", c->name, ct_dtype_name(dtype),
                     ct_dtype_name(ct_dtype_of(y)));
    if (c->real_out && y) { /* read the real result back as complex */
        ct_tensor *as_complex = ct_cast(y, CT_C128);
        ct_release(y);
        y = as_complex;
    }
    ct_release(x);
    if (!take_values(y, got, n)) return;
    double tol = narrow ? 4e-7 : 1e-14;
    for (int i = 0; i < n; i++) {
        double complex want = c->ref(v[i]);
        if (narrow && isfinite(creal(want)) && isfinite(cimag(want)))
            want = CMPLX((float)creal(want), (float)cimag(want));
        if (!close(got[i], want, tol)) {
            ct_test_fail(__FILE__, __LINE__,
                         "%s(%g%+gj) as %s = %.17g%+.17gj, expected %.17g%+.17gj", c->name,
                         creal(v[i]), cimag(v[i]), ct_dtype_name(dtype), creal(got[i]),
                         cimag(got[i]), creal(want), cimag(want));
            return;
        }
    }
}

DEVICE_TEST(test_ops_complex_unary_against_c99) {
    for (size_t k = 0; k < sizeof unary_cases / sizeof unary_cases[0]; k++)
        for (ct_dtype dt = CT_C64; dt <= CT_C128; dt++) {
            check_unary(device, &unary_cases[k], dt, false);
            if (unary_cases[k].special) check_unary(device, &unary_cases[k], dt, true);
            if (ct_test_failed()) return;
        }
}

/* The branch cuts and the signed zeros the standard lists. */
DEVICE_TEST(test_ops_complex_branch_cuts) {
    double complex v[6] = {CMPLX(-4, 0.0),   CMPLX(-4, -0.0), CMPLX(-0.0, 0.0),
                           CMPLX(0.0, -0.0), CMPLX(-1, 0.0),  CMPLX(-1, -0.0)};
    double complex got[6];
    ct_tensor *x = from_values(v, 6, CT_C128, device);
    CHECK(take_values(ct_sqrt(x), got, 6));
    CHECK(creal(got[0]) == 0 && cimag(got[0]) == 2); /* sqrt(-4 + 0i) = 2i */
    CHECK(creal(got[1]) == 0 && cimag(got[1]) == -2);
    CHECK(creal(got[2]) == 0 && !signbit(creal(got[2])) && cimag(got[2]) == 0 &&
          !signbit(cimag(got[2])));
    CHECK(signbit(cimag(got[3])));
    CHECK(take_values(ct_log(x), got, 6));
    CHECK(fabs(cimag(got[4]) - M_PI) < 1e-15 && fabs(cimag(got[5]) + M_PI) < 1e-15);
    CHECK(creal(got[2]) == -INFINITY && fabs(cimag(got[2]) - M_PI) < 1e-15); /* log(-0 + 0i) */
    CHECK(creal(got[3]) == -INFINITY && cimag(got[3]) == 0 && signbit(cimag(got[3])));
    ct_release(x);
}

DEVICE_TEST(test_ops_complex_predicates) {
    double complex v[6] = {CMPLX(1, 2),        CMPLX(NAN, 0),       CMPLX(0, NAN),
                           CMPLX(INFINITY, 0), CMPLX(0, -INFINITY), CMPLX(INFINITY, NAN)};
    ct_tensor *x = from_values(v, 6, CT_C64, device);
    ct_tensor *nan = ct_isnan(x), *inf = ct_isinf(x), *fin = ct_isfinite(x);
    bool b[3][6];
    CHECK(nan && ct_dtype_of(nan) == CT_BOOL);
    CHECK_OK(ct_copy_to_host(nan, b[0], 6));
    CHECK_OK(ct_copy_to_host(inf, b[1], 6));
    CHECK_OK(ct_copy_to_host(fin, b[2], 6));
    for (int i = 0; i < 6; i++) {
        CHECK(b[0][i] == (isnan(creal(v[i])) || isnan(cimag(v[i]))));
        CHECK(b[1][i] == (isinf(creal(v[i])) || isinf(cimag(v[i]))));
        CHECK(b[2][i] == (isfinite(creal(v[i])) && isfinite(cimag(v[i]))));
    }
    ct_release(nan);
    ct_release(inf);
    ct_release(fin);
    ct_release(x);
}

typedef double complex (*ref2_fn)(double complex, double complex);
static double complex ref_add(double complex a, double complex b) { return a + b; }
static double complex ref_sub(double complex a, double complex b) { return a - b; }
static double complex ref_mul(double complex a, double complex b) { return a * b; }
static double complex ref_div(double complex a, double complex b) { return a / b; }

DEVICE_TEST(test_ops_complex_binary_against_c99) {
    static const struct {
        const char *name;
        ct_tensor *(*op)(const ct_tensor *, const ct_tensor *);
        ref2_fn ref;
    } cases[] = {{"add", ct_add, ref_add},
                 {"sub", ct_sub, ref_sub},
                 {"mul", ct_mul, ref_mul},
                 {"div", ct_div, ref_div},
                 {"pow", ct_pow, cpow}};
    double complex a[MAX_N], b[MAX_N], got[MAX_N];
    int n = ordinary_values(a);
    for (int i = 0; i < n; i++) b[i] = a[(i * 13 + 5) % n] + CMPLX(0.25, -0.5);
    ct_tensor *ta = from_values(a, n, CT_C128, device), *tb = from_values(b, n, CT_C128, device);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (!take_values(cases[k].op(ta, tb), got, n)) break;
        for (int i = 0; i < n; i++) {
            double complex want = cases[k].ref(a[i], b[i]);
            if (!close(got[i], want, k == 4 ? 1e-12 : 1e-15))
                ct_test_fail(__FILE__, __LINE__, "%s(%g%+gj, %g%+gj) = %g%+gj, expected %g%+gj",
                             cases[k].name, creal(a[i]), cimag(a[i]), creal(b[i]), cimag(b[i]),
                             creal(got[i]), cimag(got[i]), creal(want), cimag(want));
        }
        if (ct_test_failed()) break;
    }
    /* Annex G's infinities: (inf + NaN i) * (1 + 1i) and 1 / 0 are infinite */
    double complex s[2] = {CMPLX(INFINITY, NAN), CMPLX(1, 0)}, t[2] = {CMPLX(1, 1), CMPLX(0, 0)};
    ct_tensor *sa = from_values(s, 2, CT_C128, device), *sb = from_values(t, 2, CT_C128, device);
    CHECK(take_values(ct_mul(sa, sb), got, 2));
    CHECK(isinf(creal(got[0])) || isinf(cimag(got[0])));
    CHECK(take_values(ct_div(sb, sb), got, 2));
    CHECK(isnan(creal(got[1])) || !isfinite(creal(got[1]))); /* 0 / 0 */
    CHECK(take_values(ct_div(sa, sb), got, 2));
    CHECK(isinf(creal(got[1])) || isinf(cimag(got[1]))); /* 1 / 0 */
    ct_release(sa);
    ct_release(sb);
    ct_release(ta);
    ct_release(tb);
}

DEVICE_TEST(test_ops_complex_comparisons_and_promotion) {
    double complex a[3] = {CMPLX(1, 2), CMPLX(NAN, 0), CMPLX(3, -0.0)};
    double complex b[3] = {CMPLX(1, 2), CMPLX(NAN, 0), CMPLX(3, 0.0)};
    ct_tensor *ta = from_values(a, 3, CT_C64, device), *tb = from_values(b, 3, CT_C128, device);
    ct_tensor *eq = ct_eq(ta, tb), *ne = ct_ne(ta, tb);
    bool e[3], d[3];
    CHECK_OK(ct_copy_to_host(eq, e, 3));
    CHECK_OK(ct_copy_to_host(ne, d, 3));
    CHECK(e[0] && !e[1] && e[2] && !d[0] && d[1] && !d[2]);
    ct_release(eq);
    ct_release(ne);
    /* complex64 with float64 is complex128, with float32 complex64, with int32 complex128 */
    double reals[3] = {2, -1, 0.5};
    int64_t three = 3;
    ct_tensor *f64 = ct_from_data(reals, 1, &three, CT_F64, device);
    ct_tensor *f32 = ct_cast(f64, CT_F32), *i32 = ct_cast(f64, CT_I32);
    ct_tensor *s1 = ct_add(ta, f64), *s2 = ct_mul(f32, ta), *s3 = ct_sub(ta, i32);
    CHECK(ct_dtype_of(s1) == CT_C128 && ct_dtype_of(s2) == CT_C64 && ct_dtype_of(s3) == CT_C128);
    double complex got[3];
    CHECK(take_values(s2, got, 3));
    CHECK(creal(got[0]) == 2 && cimag(got[0]) == 4);
    /* a real scalar keeps the tensor's dtype */
    ct_tensor *scaled = ct_mul_scalar(ta, 2.0), *shifted = ct_sub_rscalar(ta, 1.0);
    CHECK(ct_dtype_of(scaled) == CT_C64);
    CHECK(take_values(scaled, got, 3));
    CHECK(creal(got[0]) == 2 && cimag(got[0]) == 4);
    CHECK(take_values(shifted, got, 3));
    CHECK(creal(got[0]) == 0 && cimag(got[0]) == -2); /* 1 - (1 + 2i) */
    ct_release(s1);
    ct_release(s3);
    ct_release(f64);
    ct_release(f32);
    ct_release(i32);
    ct_release(ta);
    ct_release(tb);
}

DEVICE_TEST(test_ops_complex_refused_ops_name_themselves) {
    ct_tensor *z = ct_ones(1, (int64_t[]){2}, CT_C128, device);
    ct_tensor *r = ct_ones(1, (int64_t[]){2}, CT_F32, device);
    CHECK(ct_maximum(z, r) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_maximum: not defined for complex tensors (argument 1");
    CHECK(ct_remainder(r, z) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_remainder: not defined for complex tensors (argument 2");
    CHECK(ct_gt_scalar(z, 1.0) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_gt_scalar: not defined for complex tensors");
    CHECK(ct_sigmoid(z) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_sigmoid");
    CHECK(ct_clamp(z, 0, 1) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_clamp");
    CHECK(ct_bitwise_and(z, z) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_bitwise_and");
    ct_release(z);
    ct_release(r);
}

/* sum, mean, prod, all and any over axes against loops in double complex; max refuses. */
DEVICE_TEST(test_ops_complex_reductions) {
    enum { R = 3, C = 5 };
    double complex v[R * C], got[C];
    for (int i = 0; i < R * C; i++) v[i] = CMPLX(0.5 + i % 4, 1.0 - 0.25 * i);
    v[7] = 0; /* one zero: all is false there */
    for (ct_dtype dt = CT_C64; dt <= CT_C128; dt++) {
        double tol = dt == CT_C64 ? 2e-6 : 1e-14;
        ct_tensor *flat = from_values(v, R * C, dt, device);
        ct_tensor *x = ct_reshape(flat, 2, (int64_t[]){R, C});
        ct_tensor *sum = ct_sum(x, 1, (int[]){0}, false), *prod = ct_prod(x, 1, (int[]){0}, true);
        ct_tensor *mean = ct_mean(x, 1, (int[]){0}, false);
        CHECK(ct_dtype_of(sum) == dt && ct_ndim(prod) == 2 && ct_shape(prod)[0] == 1);
        double complex want_sum[C], want_prod[C];
        for (int j = 0; j < C; j++) {
            want_sum[j] = 0, want_prod[j] = 1;
            for (int i = 0; i < R; i++) want_sum[j] += v[i * C + j], want_prod[j] *= v[i * C + j];
        }
        if (take_values(sum, got, C))
            for (int j = 0; j < C; j++) CHECK(close(got[j], want_sum[j], tol));
        if (take_values(prod, got, C))
            for (int j = 0; j < C; j++) CHECK(close(got[j], want_prod[j], tol));
        if (take_values(mean, got, C))
            for (int j = 0; j < C; j++) CHECK(close(got[j], want_sum[j] / R, tol));
        /* every axis: a product of 15 (odd lengths while halving) */
        double complex whole = 1;
        for (int i = 0; i < R * C; i++) whole *= v[i] == 0 ? 1 : v[i];
        v[7] = 1;
        ct_tensor *ones_at_zero = from_values(v, R * C, dt, device);
        v[7] = 0;
        if (take_values(ct_prod(ones_at_zero, 0, NULL, false), got, 1))
            CHECK(close(got[0], whole, tol * 10));
        ct_tensor *all = ct_all(x, 0, NULL, false), *any = ct_any(x, 0, NULL, false);
        bool all_v = true, any_v = false;
        CHECK_OK(ct_copy_to_host(all, &all_v, 1));
        CHECK_OK(ct_copy_to_host(any, &any_v, 1));
        CHECK(!all_v && any_v);
        CHECK(ct_max(x, 0, NULL, false) == NULL);
        CHECK_ERROR(CT_ERR_DTYPE, "ct_max: not defined for complex tensors");
        ct_release(all);
        ct_release(any);
        ct_release(ones_at_zero);
        ct_release(flat);
        ct_release(x);
    }
}

/* a @ b through cgemm and zgemm: strided operands, a broadcast batch, mixed dtypes. */
DEVICE_TEST(test_ops_complex_matmul) {
    enum { B = 2, M = 3, K = 4, N = 2 };
    double complex a[B * M * K], b[K * N], got[B * M * N];
    for (int i = 0; i < B * M * K; i++) a[i] = CMPLX(0.25 * i - 2, 1.5 - 0.5 * (i % 5));
    for (int i = 0; i < K * N; i++) b[i] = CMPLX(1 - 0.5 * i, 0.125 * i);
    for (ct_dtype dt = CT_C64; dt <= CT_C128; dt++) {
        double tol = dt == CT_C64 ? 2e-6 : 1e-14;
        ct_tensor *fa = from_values(a, B * M * K, dt, device);
        ct_tensor *ta = ct_reshape(fa, 3, (int64_t[]){B, M, K});
        /* b as the transpose of a contiguous (N, K) matrix: a strided operand */
        double complex bt[N * K];
        for (int r = 0; r < K; r++)
            for (int c = 0; c < N; c++) bt[c * K + r] = b[r * N + c];
        ct_tensor *fb = from_values(bt, N * K, dt, device);
        ct_tensor *tbt = ct_reshape(fb, 2, (int64_t[]){N, K});
        ct_tensor *tb = ct_transpose(tbt, 0, 1);
        ct_tensor *out = ct_matmul(ta, tb);
        CHECK(ct_dtype_of(out) == dt && ct_ndim(out) == 3);
        if (take_values(out, got, B * M * N))
            for (int s = 0; s < B; s++)
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++) {
                        double complex want = 0;
                        for (int p = 0; p < K; p++) want += a[(s * M + i) * K + p] * b[p * N + j];
                        CHECK(close(got[(s * M + i) * N + j], want, tol));
                    }
        ct_release(fa);
        ct_release(ta);
        ct_release(fb);
        ct_release(tbt);
        ct_release(tb);
    }
    /* a real float64 operand promotes: complex64 @ float64 is complex128 */
    ct_tensor *z = ct_ones(2, (int64_t[]){2, 2}, CT_C64, device);
    ct_tensor *r = ct_ones(2, (int64_t[]){2, 2}, CT_F64, device);
    ct_tensor *p = ct_matmul(z, r);
    CHECK(ct_dtype_of(p) == CT_C128);
    ct_release(p);
    ct_release(z);
    ct_release(r);
}

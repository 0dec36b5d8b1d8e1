/* Unary elementwise ops and ct_clamp against float64 references computed here with libm:
 * every op on every dtype, several shapes (0-d, empty, non-contiguous, large enough for
 * the threaded and blocked paths), result dtypes, special values, exp's accuracy in ulps,
 * and the error paths. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_ref.h"

/* Run a helper that may fail a check, and leave the test when it did. */
#define RUN(call)                                                                                  \
    do {                                                                                           \
        call;                                                                                      \
        if (ct_test_failed()) return;                                                              \
    } while (0)

typedef ct_tensor *(*unary_fn)(const ct_tensor *);

/* The float64 reference of an op: its function of x, and the input range for floating
 * dtypes (integer dtypes get small integers). */
typedef struct unary_ref {
    double (*fn)(double x);
    double lo, hi;
} unary_ref;

/* One reference per row of op_list.h: the case table below is generated from the rows, so a
 * row without its reference here does not compile ('uref_NAME' undeclared). */
#define REF(name, lo, hi, expr)                                                                    \
    static double ref_fn_##name(double x) { return (expr); }                                       \
    static const unary_ref uref_##name = {ref_fn_##name, lo, hi};
REF(neg, -5, 5, -x)
REF(abs, -5, 5, fabs(x))
REF(sign, -5, 5, x > 0 ? 1.0 : (x < 0 ? -1.0 : x == x ? 0.0 : x))
REF(sqrt, 0, 10, sqrt(x))
REF(rsqrt, 0.1, 10, 1.0 / sqrt(x))
REF(exp, -10, 10, exp(x))
REF(expm1, -3, 3, expm1(x))
REF(log, 0.01, 10, log(x))
REF(log1p, -0.9, 10, log1p(x))
REF(sin, -10, 10, sin(x))
REF(cos, -10, 10, cos(x))
REF(tanh, -5, 5, tanh(x))
REF(sigmoid, -10, 10, 1.0 / (1.0 + exp(-x)))
REF(relu, -5, 5, x < 0 ? 0.0 : x)
REF(gelu, -5, 5, 0.5 * x * (1.0 + erf(x / sqrt(2.0))))
REF(gelu_tanh, -5, 5, 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))))
REF(erf, -3, 3, erf(x))
REF(floor, -5, 5, floor(x))
REF(ceil, -5, 5, ceil(x))
REF(round, -5, 5, nearbyint(x))
REF(logical_not, -2, 2, x == 0.0)
REF(trunc, -5, 5, trunc(x))
REF(square, -5, 5, x *x)
REF(reciprocal, -5, 5, 1.0 / x)
REF(log2, 0.01, 10, log2(x))
REF(log10, 0.01, 10, log10(x))
REF(tan, -1.2, 1.2, tan(x))
REF(asin, -1, 1, asin(x))
REF(acos, -1, 1, acos(x))
REF(atan, -5, 5, atan(x))
REF(sinh, -5, 5, sinh(x))
REF(cosh, -5, 5, cosh(x))
REF(asinh, -5, 5, asinh(x))
REF(acosh, 1, 10, acosh(x))
REF(atanh, -0.99, 0.99, atanh(x))
REF(exp2, -10, 10, exp2(x))
REF(signbit, -2, 2, signbit(x) != 0)
REF(isnan, -2, 2, isnan(x) != 0)
REF(isinf, -2, 2, isinf(x) != 0)
REF(isfinite, -2, 2, isfinite(x) != 0)
/* integers only; on bool, logical not (check_op) */
REF(bitwise_invert, 0, 0, (double)~(int64_t)x)
#undef REF

enum { FLOAT, SAME, BOOL, INT };

typedef struct op_case {
    const char *name;
    unary_fn fn;
    const unary_ref *ref;
    int kind;
} op_case;

static const op_case ops[] = {
#define CASE_(name, NAME, kind, grad, autocast) {#name, ct_##name, &uref_##name, kind},
    CT_UNARY_OPS(CASE_)
#undef CASE_
};
#define OP_COUNT ((int)(sizeof ops / sizeof ops[0]))

/* Whether op takes dtype (INT ops refuse floats; negating bool is an error). */
static bool takes(const op_case *op, ct_dtype dtype) {
    if (op->kind == INT && ct_dtype_is_floating(dtype)) return false;
    return !(op->fn == ct_neg && dtype == CT_BOOL);
}

static ct_dtype expected_dtype(int kind, ct_dtype in) {
    if (kind == INT) return in;
    if (kind == BOOL) return CT_BOOL;
    if (kind == FLOAT && !ct_dtype_is_floating(in)) return CT_F32;
    return in;
}

/* n input values for dtype: random in the op's range for floats (with some exact zeros and
 * halves, which round and sign care about), small integers otherwise. */
static void input_values(double *v, int64_t n, const op_case *op, ct_dtype dtype, uint64_t seed) {
    if (dtype == CT_BOOL) {
        ref_random(v, n, seed, 0, 2);
        for (int64_t i = 0; i < n; i++) v[i] = floor(v[i]);
        return;
    }
    if (!ct_dtype_is_floating(dtype)) {
        double lo = ct_dtype_is_unsigned(dtype) ? 0 : -6;
        ref_random(v, n, seed, lo, 7);
        for (int64_t i = 0; i < n; i++) v[i] = floor(v[i]);
        return;
    }
    ref_random(v, n, seed, op->ref->lo, op->ref->hi);
    for (int64_t i = 0; i < n; i++) {
        if (i % 7 == 3 && op->ref->lo < 0) v[i] = floor(v[i]) + 0.5;
        if (i % 11 == 5 && op->ref->lo <= 0) v[i] = 0.0;
        v[i] = ref_round(v[i], dtype);
    }
}

/* op on a tensor of (ndim, shape), contiguous or not, against the reference. */
static void check_op(ct_device device, const op_case *op, ct_dtype dtype, int ndim,
                     const int64_t *shape, bool strided, uint64_t seed) {
    int64_t n = ref_numel(ndim, shape);
    double *in = malloc(sizeof(double) * (size_t)(n + 1));
    double *expected = malloc(sizeof(double) * (size_t)(n + 1));
    CHECK(in && expected);
    input_values(in, n, op, dtype, seed);
    ct_dtype out_dtype = expected_dtype(op->kind, dtype);
    bool invert_bool = op->kind == INT && dtype == CT_BOOL; /* NumPy: logical not */
    for (int64_t i = 0; i < n; i++)
        expected[i] = ref_round(invert_bool ? in[i] == 0 : op->ref->fn(in[i]), out_dtype);
    ct_tensor *x = strided ? ref_tensor_strided(in, ndim, shape, dtype, device)
                           : ref_tensor(in, ndim, shape, dtype, device);
    CHECK_NOT_NULL(x);
    ct_tensor *y = op->fn(x);
    if (!y)
        ct_test_fail(__FILE__, __LINE__, "ct_%s on %s: %s", op->name, ct_dtype_name(dtype),
                     ct_last_error());
    CHECK_NOT_NULL(y);
    CHECK(ct_dtype_of(y) == out_dtype);
    CHECK(ct_ndim(y) == ndim);
    for (int d = 0; d < ndim; d++) CHECK(ct_shape(y)[d] == shape[d]);
    CHECK(ct_device_equal(ct_device_of(y), device));
    CHECK_TENSOR(y, expected);
    ct_release(x);
    ct_release(y);
    free(in);
    free(expected);
}

DEVICE_TEST(test_ops_unary_every_op_every_dtype) {
    static const int64_t shape[2] = {3, 5};
    for (int k = 0; k < OP_COUNT; k++)
        for (int d = 0; d < CT_TEST_DTYPE_COUNT; d++) {
            if (!takes(&ops[k], ct_test_dtypes[d])) continue; /* errors, checked below */
            RUN(check_op(device, &ops[k], ct_test_dtypes[d], 2, shape, false,
                         (uint64_t)(k * 8 + d)));
        }
}

DEVICE_TEST(test_ops_unary_shapes_and_layouts) {
    static const int64_t s1[1] = {9}, s3[3] = {2, 3, 4}, empty[2] = {0, 3}, s2[2] = {4, 6};
    static const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_F16, CT_I32};
    for (int k = 0; k < OP_COUNT; k++)
        for (int d = 0; d < 4; d++) {
            ct_dtype dt = dtypes[d];
            if (!takes(&ops[k], dt)) continue;
            uint64_t seed = (uint64_t)(100 + k * 4 + d);
            RUN(check_op(device, &ops[k], dt, 0, NULL, false, seed));
            RUN(check_op(device, &ops[k], dt, 1, s1, true, seed));
            RUN(check_op(device, &ops[k], dt, 3, s3, false, seed));
            RUN(check_op(device, &ops[k], dt, 3, s3, true, seed));
            RUN(check_op(device, &ops[k], dt, 2, s2, true, seed));
            RUN(check_op(device, &ops[k], dt, 2, empty, false, seed));
        }
}

/* Large enough for the threaded split and many blocks, in the contiguous fast path (f32)
 * and in the converting path (f16, strided f64). */
DEVICE_TEST(test_ops_unary_large_tensors) {
    static const int64_t big[1] = {100003}, big2[2] = {300, 257};
    static const int selected[] = {0, 5, 12, 13, 15, 18};
    for (int i = 0; i < 6; i++) {
        const op_case *op = &ops[selected[i]];
        RUN(check_op(device, op, CT_F32, 1, big, false, 7));
        RUN(check_op(device, op, CT_F16, 1, big, false, 8));
        RUN(check_op(device, op, CT_F64, 2, big2, true, 9));
        RUN(check_op(device, op, CT_I32, 2, big2, false, 10));
    }
}

/* Where the reference gives a zero, y has a zero of the same sign (ref_close takes -0.0 for
 * 0.0): the branch cuts and NumPy's answers that the standard specifies depend on it. */
static bool zero_signs_match(const ct_tensor *y, const double *expected, const char *name) {
    double *got = ref_read(y);
    bool ok = got != NULL;
    for (int64_t i = 0; ok && i < ct_numel(y); i++)
        if (expected[i] == 0 && got[i] == 0 && signbit(expected[i]) != signbit(got[i])) {
            printf("    ct_%s: element %lld is %s0, expected %s0 (%s)\n", name, (long long)i,
                   signbit(got[i]) ? "-" : "+", signbit(expected[i]) ? "-" : "+",
                   ct_dtype_name(ct_dtype_of(y)));
            ok = false;
        }
    free(got);
    return ok;
}

/* NaN, infinities and signed zeros through the ops whose special cases the API promises. */
DEVICE_TEST(test_ops_unary_special_values) {
    static const double v[8] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 2.5, -2.5, 0.5};
    static const int64_t shape[1] = {8};
    static const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < OP_COUNT; k++) {
            if (!takes(&ops[k], dtypes[d])) continue;
            ct_tensor *x = ref_tensor(v, 1, shape, dtypes[d], device);
            CHECK_NOT_NULL(x);
            ct_tensor *y = ops[k].fn(x);
            if (!y) ct_test_fail(__FILE__, __LINE__, "ct_%s: %s", ops[k].name, ct_last_error());
            double expected[8];
            for (int i = 0; i < 8; i++) expected[i] = ops[k].ref->fn(v[i]);
            CHECK_TENSOR(y, expected);
            CHECK(zero_signs_match(y, expected, ops[k].name));
            ct_release(x);
            ct_release(y);
        }
}

DEVICE_TEST(test_ops_unary_round_is_half_to_even) {
    static const double v[8] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 2.4999};
    static const double expected[8] = {0, 2, 2, 0, -2, -2, 4, 2};
    static const int64_t shape[1] = {8};
    ct_tensor *x = ref_tensor(v, 1, shape, CT_F64, device);
    ct_tensor *y = ct_round(x);
    CHECK_TENSOR(y, expected);
    ct_release(x);
    ct_release(y);
}

DEVICE_TEST(test_ops_unary_integer_wraparound) {
    /* Negating and taking abs of the most negative value give it back, as NumPy does. */
    static const double v[3] = {-2147483648.0, 2147483647.0, -7};
    static const double neg[3] = {-2147483648.0, -2147483647.0, 7};
    static const double abs_v[3] = {-2147483648.0, 2147483647.0, 7};
    static const int64_t shape[1] = {3};
    ct_tensor *x = ref_tensor(v, 1, shape, CT_I32, device);
    ct_tensor *n = ct_neg(x), *a = ct_abs(x);
    CHECK_TENSOR(n, neg);
    CHECK_TENSOR(a, abs_v);
    ct_release(x);
    ct_release(n);
    ct_release(a);
    static const double u[2] = {0, 3};
    static const double u_neg[2] = {0, 253};
    ct_tensor *xu = ref_tensor(u, 1, (const int64_t[]){2}, CT_U8, device);
    ct_tensor *nu = ct_neg(xu);
    CHECK(ct_dtype_of(nu) == CT_U8);
    CHECK_TENSOR(nu, u_neg);
    ct_release(xu);
    ct_release(nu);
}

/* Units in the last place of float32 between got and the correctly rounded want. */
static double ulps(float got, double want) {
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    float w = (float)want;
    if (isinf(w)) return got == w ? 0 : INFINITY;
    double ulp = fabs(w) < 0x1p-126 ? 0x1p-149 : fabs((double)nextafterf(w, INFINITY) - w);
    return fabs((double)got - want) / ulp;
}

static void check_exp_ulps(ct_device device, const float *x, int64_t n, double max_ulps) {
    ct_tensor *t = ct_from_data(x, 1, &n, CT_F32, device);
    ct_tensor *y = ct_exp(t);
    CHECK_NOT_NULL(y);
    float *out = malloc(sizeof(float) * (size_t)n);
    CHECK(out);
    CHECK_OK(ct_copy_to_host(y, out, sizeof(float) * (size_t)n));
    for (int64_t i = 0; i < n; i++) {
        double e = ulps(out[i], exp((double)x[i]));
        if (!(e <= max_ulps)) {
            ct_test_fail(__FILE__, __LINE__, "exp(%a) = %a, expected %a (%.2f ulps)", x[i], out[i],
                         exp((double)x[i]), e);
            break;
        }
    }
    free(out);
    ct_release(t);
    ct_release(y);
}

/* float32 exp within 2 ulps on a dense sweep of -104..89 (every 509th float, covering
 * subnormal results and overflow), and exactly right at the edges. */
DEVICE_TEST(test_ops_unary_exp_ulp_error) {
    int64_t cap = 5000000, n = 0;
    float *x = malloc(sizeof(float) * (size_t)cap);
    CHECK(x);
    /* Bit patterns: negative floats from -104 up to -0, then positive ones from 0 to 89. */
    const float low = -104.0f, high = 89.0f;
    uint32_t low_bits, high_bits;
    memcpy(&low_bits, &low, sizeof low_bits);
    memcpy(&high_bits, &high, sizeof high_bits);
    for (uint32_t b = low_bits; b >= 0x80000000u && n < cap; b -= 509) memcpy(&x[n++], &b, 4);
    for (uint32_t b = 0; b <= high_bits && n < cap; b += 509) memcpy(&x[n++], &b, 4);
    CHECK(n < cap);
    RUN(check_exp_ulps(device, x, n, 2.0));
    static const float edges[] = {88.72283f,  88.72284f, 89.0f,      100.0f,     INFINITY,
                                  -87.33654f, -87.5f,    -103.2789f, -103.9720f, -103.9721f,
                                  -104.0f,    -110.0f,   -INFINITY,  0.0f,       -0.0f,
                                  1e-45f,     -1e-45f,   NAN,        1.0f,       -1.0f};
    RUN(check_exp_ulps(device, edges, (int64_t)(sizeof edges / sizeof edges[0]), 1.0));
    free(x);
}

DEVICE_TEST(test_ops_unary_clamp) {
    static const double v[7] = {-3, -1.5, 0, 0.7, 2, 9, NAN};
    static const int64_t shape[1] = {7};
    static const double f[7] = {-1, -1, 0, 0.7, 2, 2.5, NAN};
    ct_tensor *x = ref_tensor(v, 1, shape, CT_F32, device);
    ct_tensor *y = ct_clamp(x, -1.0, 2.5);
    CHECK_TENSOR(y, f);
    ct_release(y);
    /* lo > hi gives hi everywhere (min(max(x, lo), hi)), except NaN. */
    static const double swapped[7] = {1, 1, 1, 1, 1, 1, NAN};
    y = ct_clamp(x, 3.0, 1.0);
    CHECK_TENSOR(y, swapped);
    ct_release(y);
    y = ct_clamp(x, -INFINITY, 0.5);
    static const double upper[7] = {-3, -1.5, 0, 0.5, 0.5, 0.5, NAN};
    CHECK_TENSOR(y, upper);
    ct_release(y);
    ct_release(x);
    /* Integers: bounds ceil(lo) and floor(hi), dtype kept. */
    static const double iv[6] = {-5, -2, 0, 3, 4, 100};
    static const double iexp[6] = {-2, -2, 0, 3, 3, 3};
    ct_tensor *xi = ref_tensor(iv, 1, (const int64_t[]){6}, CT_I64, device);
    ct_tensor *yi = ct_clamp(xi, -2.5, 3.5);
    CHECK(ct_dtype_of(yi) == CT_I64);
    CHECK_TENSOR(yi, iexp);
    ct_release(xi);
    ct_release(yi);
    static const double uv[3] = {0, 100, 255};
    static const double uexp[3] = {10, 100, 200};
    ct_tensor *xu = ref_tensor_strided(uv, 1, (const int64_t[]){3}, CT_U8, device);
    ct_tensor *yu = ct_clamp(xu, 10, 200);
    CHECK_TENSOR(yu, uexp);
    ct_release(yu);
    /* Bounds beyond the dtype's range act as its extremes. */
    yu = ct_clamp(xu, -5, 300);
    CHECK_TENSOR(yu, uv);
    ct_release(yu);
    static const double u_top[3] = {255, 255, 255};
    yu = ct_clamp(xu, 300, INFINITY);
    CHECK_TENSOR(yu, u_top);
    ct_release(yu);
    ct_release(xu);
    static const double wide[3] = {-2147483648.0, 0, 2147483647.0};
    ct_tensor *xw = ref_tensor(wide, 1, (const int64_t[]){3}, CT_I32, device);
    ct_tensor *yw = ct_clamp(xw, -INFINITY, INFINITY);
    CHECK_TENSOR(yw, wide);
    ct_release(yw);
    static const double w_top[3] = {2147483647.0, 2147483647.0, 2147483647.0};
    yw = ct_clamp(xw, 1e10, 2e10);
    CHECK_TENSOR(yw, w_top);
    ct_release(yw);
    ct_release(xw);
}

DEVICE_TEST(test_ops_unary_clamp_nan_bound_is_an_error) {
    ct_tensor *x = ct_zeros(1, (const int64_t[]){3}, CT_F32, device);
    CHECK(ct_clamp(x, NAN, 1.0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_clamp: bound lo is NaN");
    CHECK(ct_clamp(x, 0.0, NAN) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "bound hi is NaN");
    ct_release(x);
}

DEVICE_TEST(test_ops_unary_neg_of_bool_is_an_error) {
    ct_tensor *x = ct_ones(1, (const int64_t[]){3}, CT_BOOL, device);
    CHECK(ct_neg(x) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_neg: negation of a bool tensor");
    ct_release(x);
}

TEST(test_ops_unary_null_argument) {
    CHECK(ct_exp(NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_exp: argument 1 is NULL");
    CHECK(ct_clamp(NULL, 0, 1) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_clamp: argument 1 is NULL");
    /* A chain keeps the first error. */
    ct_tensor *x = ct_zeros(1, (const int64_t[]){3}, CT_BOOL, CT_CPU);
    ct_tensor *y = ct_relu(ct_exp(ct_neg(x)));
    CHECK(y == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_neg");
    ct_release(x);
}

/* The INT ops refuse floating dtypes; on integers ~x wraps in the dtype's width. */
DEVICE_TEST(test_ops_unary_bitwise_invert) {
    static const double v[4] = {0, 1, -1, 2147483647.0};
    static const double expected[4] = {-1, -2, 0, -2147483648.0};
    ct_tensor *x = ref_tensor(v, 1, (const int64_t[]){4}, CT_I32, device);
    ct_tensor *y = ct_bitwise_invert(x);
    CHECK(ct_dtype_of(y) == CT_I32);
    CHECK_TENSOR(y, expected);
    ct_release(x);
    ct_release(y);
    static const double u[3] = {0, 200, 255}, u_inv[3] = {255, 55, 0};
    ct_tensor *xu = ref_tensor(u, 1, (const int64_t[]){3}, CT_U8, device);
    ct_tensor *yu = ct_bitwise_invert(xu);
    CHECK(ct_dtype_of(yu) == CT_U8);
    CHECK_TENSOR(yu, u_inv);
    ct_release(xu);
    ct_release(yu);
    ct_tensor *f = ct_zeros(1, (const int64_t[]){2}, CT_F32, device);
    CHECK(ct_bitwise_invert(f) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_bitwise_invert: takes integer or bool tensors, not float32");
    ct_release(f);
}

/* The predicates on the values where they differ: signed zeros, NaN and infinities. */
DEVICE_TEST(test_ops_unary_predicates) {
    static const double v[6] = {-0.0, 0.0, NAN, -INFINITY, INFINITY, -3};
    static const double signbit_v[6] = {1, 0, 0, 1, 0, 1}, isnan_v[6] = {0, 0, 1, 0, 0, 0};
    static const double isinf_v[6] = {0, 0, 0, 1, 1, 0}, isfinite_v[6] = {1, 1, 0, 0, 0, 1};
    static const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
    for (int d = 0; d < 4; d++) {
        ct_tensor *x = ref_tensor_strided(v, 1, (const int64_t[]){6}, dtypes[d], device);
        ct_tensor *s = ct_signbit(x), *n = ct_isnan(x), *i = ct_isinf(x), *f = ct_isfinite(x);
        CHECK(ct_dtype_of(s) == CT_BOOL);
        CHECK_TENSOR(s, signbit_v);
        CHECK_TENSOR(n, isnan_v);
        CHECK_TENSOR(i, isinf_v);
        CHECK_TENSOR(f, isfinite_v);
        ct_release(s), ct_release(n), ct_release(i), ct_release(f), ct_release(x);
    }
}

/* Binary elementwise ops, their *_scalar and reflected *_rscalar forms and ct_where against
 * float64 references computed here: every op on every dtype and on mixed dtypes (with the
 * promoted result dtype checked against NumPy's table), broadcasting, non-contiguous, empty
 * and 0-d operands, large tensors, NaN semantics, weak scalars (on either side, with no
 * device memory for the scalar), and the error paths. */
#include <math.h>
#include <stdlib.h>

#include "ct_ref.h"

/* Run a helper that may fail a check, and leave the test when it did. */
#define RUN(call)                                                                                  \
    do {                                                                                           \
        call;                                                                                      \
        if (ct_test_failed()) return;                                                              \
    } while (0)

typedef ct_tensor *(*binary_fn)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*scalar_fn)(const ct_tensor *, double);
typedef double (*ref_fn)(double, double);

/* Python's %: the result has the divisor's sign. */
static double ref_rem(double a, double b) {
    double r = fmod(a, b);
    if (r != 0 && (r < 0) != (b < 0)) r += b;
    return r;
}

static double ref_logaddexp(double a, double b) {
    if (a == b) return a + log(2.0);
    double m = a > b ? a : b;
    return isnan(a - b) ? NAN : m + log1p(exp(-fabs(a - b)));
}

/* One float64 reference per row of op_list.h: the case table below is generated from the
 * rows, so a row without its reference here does not compile ('bref_NAME' undeclared).
 * Integer results are computed exactly (the test's operands keep them small). */
#define REF(name, expr)                                                                            \
    static double bref_##name(double a, double b) { return (expr); }
REF(add, a + b)
REF(sub, a - b)
REF(mul, a *b)
REF(div, a / b)
REF(pow, pow(a, b))
REF(maximum, isnan(a) || isnan(b) ? NAN : fmax(a, b))
REF(minimum, isnan(a) || isnan(b) ? NAN : fmin(a, b))
REF(remainder, ref_rem(a, b))
REF(eq, a == b)
REF(ne, a != b)
REF(lt, a < b)
REF(le, a <= b)
REF(gt, a > b)
REF(ge, a >= b)
REF(logical_and, a != 0 && b != 0)
REF(logical_or, a != 0 || b != 0)
REF(hypot, hypot(a, b))
REF(copysign, copysign(a, b))
REF(atan2, atan2(a, b))
REF(logaddexp, ref_logaddexp(a, b))
REF(nextafter, nextafter(a, b))
REF(floor_divide, b == 0 ? a / b : floor(a / b))
REF(bitwise_and, (double)((int64_t)a &(int64_t)b))
REF(bitwise_or, (double)((int64_t)a | (int64_t)b))
REF(bitwise_xor, (double)((int64_t)a ^ (int64_t)b))
REF(bitwise_left_shift, (double)((int64_t)a *((int64_t)1 << (int64_t)b)))
REF(bitwise_right_shift, (double)((int64_t)a >> (int64_t)b))
#undef REF

enum { ARITH, FLOAT, COMPARE, LOGICAL, INT, SHIFT };

typedef struct op_case {
    const char *name;
    binary_fn fn;
    scalar_fn scalar, rscalar;
    ref_fn ref;
    int kind;
} op_case;

static const op_case ops[] = {
#define CASE_(name, NAME, kind, grad, autocast)                                                    \
    {#name, ct_##name, ct_##name##_scalar, ct_##name##_rscalar, bref_##name, kind},
    CT_BINARY_OPS(CASE_)
#undef CASE_
};
#define OP_COUNT ((int)(sizeof ops / sizeof ops[0]))

/* Ops whose integer divisor must not be 0, and the op pow. */
static bool needs_divisor(int op) {
    return ops[op].fn == ct_remainder || ops[op].fn == ct_floor_divide;
}
#define IS_POW(op) (ops[op].fn == ct_pow)

/* Whether op takes operands of these dtypes (INT ops refuse floats, SHIFT ops also bool;
 * bool - bool and nextafter of float16/bfloat16 are errors): these combinations are checked
 * by the error tests. */
static bool takes(int op, ct_dtype a, ct_dtype b) {
    ct_dtype p = ct_promote_types(a, b);
    if (ops[op].fn == ct_nextafter && (p == CT_F16 || p == CT_BF16)) return false;
    if (ops[op].kind == INT && ct_dtype_is_floating(p)) return false;
    if (ops[op].kind == SHIFT && (ct_dtype_is_floating(p) || p == CT_BOOL)) return false;
    return !(ops[op].fn == ct_sub && p == CT_BOOL);
}

static ct_dtype expected_dtype(int kind, ct_dtype a, ct_dtype b) {
    ct_dtype p = ct_promote_types(a, b);
    if (kind == COMPARE || kind == LOGICAL) return CT_BOOL;
    if (kind == FLOAT && !ct_dtype_is_floating(p)) return CT_F32;
    return p;
}

/* n values for operand `which` (0: a, 1: b) of op in dtype: floats in [-4, 4) with some
 * repeats of a fixed value (so eq and ne see equal pairs) and zeros; small integers. pow
 * gets positive bases and small exponents; remainder never gets a zero integer divisor. */
static void operand_values(double *v, int64_t n, int op, int which, ct_dtype dtype, uint64_t seed) {
    bool is_float = ct_dtype_is_floating(dtype);
    double lo = ct_dtype_is_unsigned(dtype) ? 0 : -4, hi = 4;
    if (dtype == CT_BOOL) lo = 0, hi = 2;
    if (IS_POW(op)) lo = which == 0 ? (is_float ? 0.5 : 1) : 0, hi = which == 0 ? 3 : 4;
    if (ops[op].kind == SHIFT && which == 1) lo = 0, hi = 4;
    ref_random(v, n, seed, lo, hi);
    for (int64_t i = 0; i < n; i++) {
        if (!is_float)
            v[i] = floor(v[i]);
        else if (i % 5 == 2 && !IS_POW(op))
            v[i] = 1.5;
        if (needs_divisor(op) && which == 1 && v[i] == 0) v[i] = dtype == CT_BOOL ? 1 : 3;
        v[i] = ref_round(v[i], dtype);
    }
}

/* a op b for operands of the given shapes (broadcast), layouts and dtypes. */
static void check_op(ct_device device, int op, ct_dtype da, ct_dtype db, int nda, const int64_t *sa,
                     int ndb, const int64_t *sb, bool strided, uint64_t seed) {
    int nd = nda > ndb ? nda : ndb;
    int64_t shape[CT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        int ia = d - (nd - nda), ib = d - (nd - ndb);
        int64_t xa = ia < 0 ? 1 : sa[ia], xb = ib < 0 ? 1 : sb[ib];
        shape[d] = xa == 1 ? xb : xa;
    }
    int64_t n = ref_numel(nd, shape), na = ref_numel(nda, sa), nb = ref_numel(ndb, sb);
    double *a = malloc(sizeof(double) * (size_t)(na + 1));
    double *b = malloc(sizeof(double) * (size_t)(nb + 1));
    double *expected = malloc(sizeof(double) * (size_t)(n + 1));
    CHECK(a && b && expected);
    operand_values(a, na, op, 0, da, seed);
    operand_values(b, nb, op, 1, db, seed + 1000);
    ct_dtype out_dtype = expected_dtype(ops[op].kind, da, db);
    /* The reference walks the output in C order and finds each operand's element. */
    int64_t index[CT_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t ia = 0, ib = 0;
        for (int d = 0; d < nd; d++) {
            int ka = d - (nd - nda), kb = d - (nd - ndb);
            if (ka >= 0) ia = ia * sa[ka] + (sa[ka] == 1 ? 0 : index[d]);
            if (kb >= 0) ib = ib * sb[kb] + (sb[kb] == 1 ? 0 : index[d]);
        }
        expected[i] = ref_round(ops[op].ref(a[ia], b[ib]), out_dtype);
        for (int d = nd - 1; d >= 0; d--) {
            if (++index[d] < shape[d]) break;
            index[d] = 0;
        }
    }
    ct_tensor *ta =
        strided ? ref_tensor_strided(a, nda, sa, da, device) : ref_tensor(a, nda, sa, da, device);
    ct_tensor *tb = ref_tensor(b, ndb, sb, db, device);
    CHECK(ta && tb);
    ct_tensor *y = ops[op].fn(ta, tb);
    if (!y)
        ct_test_fail(__FILE__, __LINE__, "ct_%s(%s, %s): %s", ops[op].name, ct_dtype_name(da),
                     ct_dtype_name(db), ct_last_error());
    CHECK_NOT_NULL(y);
    if (ct_dtype_of(y) != out_dtype)
        ct_test_fail(__FILE__, __LINE__, "ct_%s(%s, %s) gave %s, expected %s", ops[op].name,
                     ct_dtype_name(da), ct_dtype_name(db), ct_dtype_name(ct_dtype_of(y)),
                     ct_dtype_name(out_dtype));
    CHECK(ct_ndim(y) == nd);
    for (int d = 0; d < nd; d++) CHECK(ct_shape(y)[d] == shape[d]);
    CHECK_TENSOR(y, expected);
    ct_release(ta);
    ct_release(tb);
    ct_release(y);
    free(a);
    free(b);
    free(expected);
}

DEVICE_TEST(test_ops_binary_every_op_every_dtype) {
    static const int64_t shape[2] = {4, 5};
    for (int k = 0; k < OP_COUNT; k++)
        for (int d = 0; d < CT_TEST_DTYPE_COUNT; d++) {
            ct_dtype dt = ct_test_dtypes[d];
            if (!takes(k, dt, dt)) continue; /* errors, checked below */
            RUN(check_op(device, k, dt, dt, 2, shape, 2, shape, false, (uint64_t)(k * 8 + d)));
        }
}

/* Mixed dtypes: the result dtype follows ct_promote_types (NumPy's table). */
DEVICE_TEST(test_ops_binary_mixed_dtypes) {
    static const ct_dtype pairs[][2] = {
        {CT_I32, CT_F32}, {CT_U8, CT_I32},   {CT_BOOL, CT_F16}, {CT_F16, CT_BF16}, {CT_I64, CT_F64},
        {CT_U8, CT_BF16}, {CT_BOOL, CT_I64}, {CT_F32, CT_F64},  {CT_I32, CT_I64},  {CT_U8, CT_F16},
        {CT_I8, CT_U8},   {CT_U16, CT_I16},  {CT_U32, CT_I32},  {CT_U64, CT_I64},  {CT_U64, CT_U8},
        {CT_I16, CT_F16}, {CT_U32, CT_F32},  {CT_I8, CT_BF16},  {CT_U16, CT_U64},  {CT_BOOL, CT_I8},
    };
    enum { PAIRS = sizeof pairs / sizeof pairs[0] };
    static const int64_t shape[1] = {11};
    for (int k = 0; k < OP_COUNT; k++)
        for (int p = 0; p < PAIRS; p++) {
            uint64_t seed = (uint64_t)(300 + k * PAIRS + p);
            if (!takes(k, pairs[p][0], pairs[p][1])) continue;
            RUN(check_op(device, k, pairs[p][0], pairs[p][1], 1, shape, 1, shape, false, seed));
            RUN(check_op(device, k, pairs[p][1], pairs[p][0], 1, shape, 1, shape, true, seed));
        }
}

DEVICE_TEST(test_ops_binary_promotion_table) {
    /* NumPy's promote_types, written out here independently of the library's table. */
    static const struct {
        ct_dtype a, b, add, div;
    } cases[] = {
        {CT_I32, CT_F32, CT_F64, CT_F64},    {CT_U8, CT_I32, CT_I32, CT_F32},
        {CT_BOOL, CT_BOOL, CT_BOOL, CT_F32}, {CT_F16, CT_BF16, CT_F32, CT_F32},
        {CT_U8, CT_F16, CT_F16, CT_F16},     {CT_I64, CT_F16, CT_F64, CT_F64},
        {CT_BOOL, CT_U8, CT_U8, CT_F32},     {CT_I32, CT_I32, CT_I32, CT_F32},
        {CT_I8, CT_U8, CT_I16, CT_F32},      {CT_U32, CT_I32, CT_I64, CT_F32},
        {CT_U64, CT_I64, CT_F64, CT_F64},    {CT_U16, CT_F16, CT_F32, CT_F32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ct_tensor *a = ct_ones(1, (const int64_t[]){2}, cases[i].a, device);
        ct_tensor *b = ct_ones(1, (const int64_t[]){2}, cases[i].b, device);
        ct_tensor *sum = ct_add(a, b), *quotient = ct_div(a, b), *cmp = ct_lt(a, b);
        CHECK(ct_dtype_of(sum) == cases[i].add);
        CHECK(ct_dtype_of(quotient) == cases[i].div);
        CHECK(ct_dtype_of(cmp) == CT_BOOL);
        ct_release(a);
        ct_release(b);
        ct_release(sum);
        ct_release(quotient);
        ct_release(cmp);
    }
}

DEVICE_TEST(test_ops_binary_broadcasting_and_layouts) {
    static const int64_t s314[3] = {3, 1, 4}, s54[2] = {5, 4}, s4[1] = {4}, s34[2] = {3, 4};
    static const int64_t s04[2] = {0, 4}, s23[2] = {2, 3}, s1[1] = {1};
    static const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_I32, CT_F16};
    for (int k = 0; k < OP_COUNT; k++)
        for (int d = 0; d < 4; d++) {
            ct_dtype dt = dtypes[d];
            if (!takes(k, dt, dt)) continue;
            uint64_t seed = (uint64_t)(500 + k * 4 + d);
            RUN(check_op(device, k, dt, dt, 3, s314, 2, s54, false, seed));
            RUN(check_op(device, k, dt, dt, 2, s54, 3, s314, true, seed));
            RUN(check_op(device, k, dt, dt, 2, s34, 1, s4, true, seed));
            RUN(check_op(device, k, dt, dt, 1, s4, 2, s34, false, seed));
            RUN(check_op(device, k, dt, dt, 2, s23, 0, NULL, true, seed));
            RUN(check_op(device, k, dt, dt, 0, NULL, 2, s23, false, seed));
            RUN(check_op(device, k, dt, dt, 0, NULL, 0, NULL, false, seed));
            RUN(check_op(device, k, dt, dt, 2, s04, 1, s4, false, seed));
            RUN(check_op(device, k, dt, dt, 1, s1, 2, s04, false, seed));
        }
}

/* Large enough for the threaded split, many blocks and (f32) streaming stores. */
DEVICE_TEST(test_ops_binary_large_tensors) {
    static const int64_t big[1] = {2100003}, big2[2] = {1001, 203}, row[1] = {203};
    static const int selected[] = {0, 2, 3, 5, 7, 10};
    for (int i = 0; i < 6; i++) {
        int k = selected[i];
        RUN(check_op(device, k, CT_F32, CT_F32, 1, big, 1, big, false, 11));
        RUN(check_op(device, k, CT_F64, CT_F64, 2, big2, 1, row, false, 12));
        RUN(check_op(device, k, CT_F16, CT_F32, 2, big2, 2, big2, true, 13));
        RUN(check_op(device, k, CT_I32, CT_I32, 2, big2, 0, NULL, false, 14));
    }
}

/* maximum and minimum propagate NaN from either side; comparisons with NaN are false except
 * ne; remainder takes the divisor's sign. */
DEVICE_TEST(test_ops_binary_nan_and_sign_semantics) {
    static const double a[6] = {NAN, 1, NAN, -7, 7, -7};
    static const double b[6] = {1, NAN, NAN, 3, -3, -3};
    static const int64_t shape[1] = {6};
    static const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
    for (int d = 0; d < 4; d++) {
        ct_tensor *ta = ref_tensor(a, 1, shape, dtypes[d], device);
        ct_tensor *tb = ref_tensor(b, 1, shape, dtypes[d], device);
        for (int k = 0; k < OP_COUNT; k++) {
            if (!takes(k, dtypes[d], dtypes[d])) continue;
            double expected[6];
            for (int i = 0; i < 6; i++) expected[i] = ops[k].ref(a[i], b[i]);
            ct_tensor *y = ops[k].fn(ta, tb);
            CHECK_TENSOR(y, expected);
            ct_release(y);
        }
        ct_release(ta);
        ct_release(tb);
    }
    static const double rem[6] = {NAN, NAN, NAN, 2, -2, -1};
    CHECK(ref_rem(-7, 3) == 2 && ref_rem(7, -3) == -2); /* the reference itself */
    ct_tensor *ia = ref_tensor(a + 3, 1, (const int64_t[]){3}, CT_I32, device);
    ct_tensor *ib = ref_tensor(b + 3, 1, (const int64_t[]){3}, CT_I32, device);
    ct_tensor *r = ct_remainder(ia, ib);
    CHECK(ct_dtype_of(r) == CT_I32);
    CHECK_TENSOR(r, rem + 3);
    ct_release(ia);
    ct_release(ib);
    ct_release(r);
}

DEVICE_TEST(test_ops_binary_integer_arithmetic_wraps) {
    static const double a[3] = {2147483647.0, -2147483648.0, 65536};
    static const double b[3] = {1, -1, 65536};
    static const int64_t shape[1] = {3};
    ct_tensor *ta = ref_tensor(a, 1, shape, CT_I32, device);
    ct_tensor *tb = ref_tensor(b, 1, shape, CT_I32, device);
    ct_tensor *sum = ct_add(ta, tb), *product = ct_mul(ta, tb);
    static const double wrapped_sum[3] = {-2147483648.0, 2147483647.0, 131072};
    static const double wrapped_product[3] = {2147483647.0, -2147483648.0, 0};
    CHECK_TENSOR(sum, wrapped_sum);
    CHECK_TENSOR(product, wrapped_product);
    ct_release(ta);
    ct_release(tb);
    ct_release(sum);
    ct_release(product);
    /* pow with integers stays integer. */
    static const double base[4] = {2, -3, 0, 7}, exponent[4] = {10, 3, 0, 1};
    static const double powers[4] = {1024, -27, 1, 7};
    ct_tensor *pa = ref_tensor(base, 1, (const int64_t[]){4}, CT_I64, device);
    ct_tensor *pb = ref_tensor(exponent, 1, (const int64_t[]){4}, CT_I64, device);
    ct_tensor *p = ct_pow(pa, pb);
    CHECK(ct_dtype_of(p) == CT_I64);
    CHECK_TENSOR(p, powers);
    ct_release(pa);
    ct_release(pb);
    ct_release(p);
}

/* A weak scalar: the expected dtype and value of t op s, or of s op t (the reflected form)
 * when first. */
static void check_scalar_side(ct_device device, int op, ct_dtype dtype, double s, ct_dtype want,
                              bool strided, bool first) {
    static const int64_t shape[2] = {3, 4};
    double a[12], expected[12];
    operand_values(a, 12, op, first ? 1 : 0, dtype, (uint64_t)(op * 31 + dtype));
    for (int i = 0; i < 12; i++)
        expected[i] = ref_round(first ? ops[op].ref(s, a[i]) : ops[op].ref(a[i], s), want);
    ct_tensor *t = strided ? ref_tensor_strided(a, 2, shape, dtype, device)
                           : ref_tensor(a, 2, shape, dtype, device);
    ct_tensor *y = first ? ops[op].rscalar(t, s) : ops[op].scalar(t, s);
    CHECK_NOT_NULL(y);
    if (ct_dtype_of(y) != want)
        ct_test_fail(__FILE__, __LINE__, "ct_%s_%s(%s, %g) gave %s, expected %s", ops[op].name,
                     first ? "rscalar" : "scalar", ct_dtype_name(dtype), s,
                     ct_dtype_name(ct_dtype_of(y)), ct_dtype_name(want));
    CHECK_TENSOR(y, expected);
    ct_release(t);
    ct_release(y);
}

/* Both forms follow the same weak-scalar rules. */
static void check_scalar(ct_device device, int op, ct_dtype dtype, double s, ct_dtype want,
                         bool strided) {
    RUN(check_scalar_side(device, op, dtype, s, want, strided, false));
    RUN(check_scalar_side(device, op, dtype, s, want, strided, true));
}

/* x op s and s op x for x of dtype on device: one allocation each (the result), the scalar
 * passed by value; the same dtype and values as the op with s as a 0-d tensor of x's dtype,
 * or the same failure. */
static void check_scalar_as_tensor(ct_device device, int op, ct_dtype dtype, double s, bool first) {
    static const int64_t shape[2] = {3, 4};
    double a[12];
    operand_values(a, 12, op, first ? 1 : 0, dtype, (uint64_t)(op * 7 + dtype));
    ct_tensor *x = ref_tensor(a, 2, shape, dtype, device);
    ct_tensor *st = ct_scalar(s, dtype, device);
    CHECK_NOT_NULL(x);
    CHECK_NOT_NULL(st);
    ct_tensor *want = first ? ops[op].fn(st, x) : ops[op].fn(x, st);
    ct_memory_statistics before, after;
    CHECK_OK(ct_memory_stats(device, &before));
    ct_tensor *got = first ? ops[op].rscalar(x, s) : ops[op].scalar(x, s);
    CHECK_OK(ct_memory_stats(device, &after));
    CHECK(!want == !got);
    if (got) {
        if (after.alloc_count - before.alloc_count != 1)
            ct_test_fail(__FILE__, __LINE__, "ct_%s_%s(%s) made %llu allocations, not 1",
                         ops[op].name, first ? "rscalar" : "scalar", ct_dtype_name(dtype),
                         (unsigned long long)(after.alloc_count - before.alloc_count));
        CHECK(ct_dtype_of(got) == ct_dtype_of(want));
        double *expected = ref_read(want);
        CHECK_NOT_NULL(expected);
        CHECK_TENSOR(got, expected);
        free(expected);
    }
    ct_release(x);
    ct_release(st);
    ct_release(want);
    ct_release(got);
}

/* Every op on every dtype, the scalar on either side, integral so that a 0-d tensor of the
 * tensor's dtype holds it (bool keeps its own rule: arithmetic computes in int64). */
DEVICE_TEST(test_ops_binary_scalar_no_device_memory) {
    for (int k = 0; k < OP_COUNT; k++)
        for (int d = 0; d < CT_TEST_DTYPE_COUNT; d++) {
            ct_dtype dtype = ct_test_dtypes[d];
            bool boolean = ops[k].kind == COMPARE || ops[k].kind == LOGICAL;
            if (!takes(k, dtype, dtype) || (dtype == CT_BOOL && !boolean)) continue;
            double s = dtype == CT_BOOL ? 1 : 2;
            RUN(check_scalar_as_tensor(device, k, dtype, s, false));
            RUN(check_scalar_as_tensor(device, k, dtype, s, true));
        }
}

DEVICE_TEST(test_ops_binary_scalar_forms) {
    for (int k = 0; k < OP_COUNT; k++) {
        int kind = ops[k].kind;
        if (kind == INT || kind == SHIFT) continue; /* test_ops_binary_bitwise */
        bool boolean = kind == COMPARE || kind == LOGICAL;
        double s = IS_POW(k) || needs_divisor(k) ? 2.5 : 1.5; /* not integral */
        RUN(check_scalar(device, k, CT_F32, s, boolean ? CT_BOOL : CT_F32, false));
        RUN(check_scalar(device, k, CT_F64, IS_POW(k) ? s : -s, boolean ? CT_BOOL : CT_F64, true));
        if (takes(k, CT_F16, CT_F16)) {
            RUN(check_scalar(device, k, CT_F16, s, boolean ? CT_BOOL : CT_F16, false));
            RUN(check_scalar(device, k, CT_BF16, s, boolean ? CT_BOOL : CT_BF16, false));
        }
        /* An integral scalar keeps an integer dtype; a fractional one gives float32. */
        ct_dtype int_result = boolean ? CT_BOOL : kind == FLOAT ? CT_F32 : CT_I32;
        RUN(check_scalar(device, k, CT_I32, 2, int_result, true));
        RUN(check_scalar(device, k, CT_I32, s, boolean ? CT_BOOL : CT_F32, false));
        RUN(check_scalar(device, k, CT_U8, 3,
                         boolean         ? CT_BOOL
                         : kind == FLOAT ? CT_F32
                                         : CT_U8,
                         false));
        /* bool with an integral scalar computes in int64. */
        ct_dtype bool_result = boolean ? CT_BOOL : kind == FLOAT ? CT_F32 : CT_I64;
        RUN(check_scalar(device, k, CT_BOOL, 1, bool_result, false));
        RUN(check_scalar(device, k, CT_I64, IS_POW(k) ? 3 : -3,
                         int_result == CT_I32 ? CT_I64 : int_result, false));
    }
    /* Out-of-range integral scalars wrap like the arithmetic itself. */
    RUN(check_scalar(device, 0, CT_U8, 300, CT_U8, false));
    /* A scalar that the dtype cannot hold still compares exactly. */
    RUN(check_scalar(device, 10, CT_I32, 1e10, CT_BOOL, false));
    RUN(check_scalar(device, 8, CT_BOOL, 2, CT_BOOL, false));
}

DEVICE_TEST(test_ops_binary_where) {
    static const int64_t sc[3] = {3, 1, 4}, sa[2] = {5, 4}, out[3] = {3, 5, 4};
    double cond[12], a[20], b = -2.5, expected[60];
    ref_random(cond, 12, 1, 0, 2);
    ref_random(a, 20, 2, -5, 5);
    for (int i = 0; i < 12; i++) cond[i] = floor(cond[i]);
    for (int i = 0; i < 20; i++) a[i] = ref_round(a[i], CT_F32);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            for (int k = 0; k < 4; k++)
                expected[(i * 5 + j) * 4 + k] = cond[i * 4 + k] != 0 ? a[j * 4 + k] : b;
    ct_tensor *tc = ref_tensor_strided(cond, 3, sc, CT_BOOL, device);
    ct_tensor *ta = ref_tensor(a, 2, sa, CT_F32, device);
    ct_tensor *tb = ct_scalar(b, CT_F64, device);
    ct_tensor *y = ct_where(tc, ta, tb);
    CHECK_NOT_NULL(y);
    CHECK(ct_dtype_of(y) == CT_F64 && ct_ndim(y) == 3);
    for (int d = 0; d < 3; d++) CHECK(ct_shape(y)[d] == out[d]);
    CHECK_TENSOR(y, expected);
    ct_release(y);
    /* Every dtype, same shapes (contiguous fast path), and an empty result. */
    for (int d = 0; d < CT_TEST_DTYPE_COUNT; d++) {
        ct_tensor *x = ref_tensor(a, 2, sa, ct_test_dtypes[d], device);
        ct_tensor *z = ct_zeros(2, sa, ct_test_dtypes[d], device);
        ct_tensor *c = ct_gt_scalar(ta, 0.0);
        ct_tensor *w = ct_where(c, x, z);
        double want[20];
        for (int i = 0; i < 20; i++) want[i] = a[i] > 0 ? ref_round(a[i], ct_test_dtypes[d]) : 0;
        CHECK(ct_dtype_of(w) == ct_test_dtypes[d]);
        CHECK_TENSOR(w, want);
        ct_release(x);
        ct_release(z);
        ct_release(c);
        ct_release(w);
    }
    ct_tensor *e = ct_zeros(3, (const int64_t[]){0, 1, 4}, CT_BOOL, device);
    ct_tensor *we = ct_where(e, ta, tb);
    CHECK(we && ct_numel(we) == 0 && ct_shape(we)[0] == 0);
    ct_release(we);
    ct_release(e);
    ct_release(tc);
    ct_release(ta);
    ct_release(tb);
}

DEVICE_TEST(test_ops_binary_where_errors) {
    ct_tensor *c = ct_ones(1, (const int64_t[]){4}, CT_F32, device);
    ct_tensor *a = ct_ones(1, (const int64_t[]){4}, CT_F32, device);
    ct_tensor *b = ct_ones(1, (const int64_t[]){3}, CT_F32, device);
    CHECK(ct_where(c, a, a) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_where: the condition has dtype float32");
    ct_tensor *cb = ct_cast(c, CT_BOOL);
    CHECK(ct_where(cb, a, b) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_where");
    CHECK(ct_where(cb, NULL, a) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_where: argument 2 is NULL");
    ct_release(c);
    ct_release(cb);
    ct_release(a);
    ct_release(b);
}

DEVICE_TEST(test_ops_binary_shape_mismatch_names_both_shapes) {
    ct_tensor *a = ct_ones(2, (const int64_t[]){3, 4}, CT_F32, device);
    ct_tensor *b = ct_ones(1, (const int64_t[]){5}, CT_F32, device);
    CHECK(ct_add(a, b) == NULL);
    CHECK(ct_last_status() == CT_ERR_SHAPE);
    CHECK(strstr(ct_last_error(), "(3, 4)") && strstr(ct_last_error(), "(5,)"));
    CHECK_ERROR(CT_ERR_SHAPE, "ct_add");
    ct_release(a);
    ct_release(b);
}

DEVICE_TEST(test_ops_binary_integer_errors) {
    static const double a[3] = {5, 6, 7}, b[3] = {2, 0, 1};
    static const int64_t shape[1] = {3};
    ct_tensor *ta = ref_tensor(a, 1, shape, CT_I32, device);
    ct_tensor *tb = ref_tensor(b, 1, shape, CT_I64, device);
    CHECK(ct_remainder(ta, tb) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_remainder: integer remainder by zero");
    CHECK(ct_remainder_scalar(ta, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_remainder_scalar: integer remainder by zero");
    CHECK(ct_pow_scalar(ta, -1) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_pow_scalar: integers to negative integer powers");
    ct_tensor *negative = ct_neg(tb);
    CHECK(ct_pow(ta, negative) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_pow: integers to negative integer powers");
    ct_release(negative);
    /* 0.0 is integral, so this is an integer remainder too. */
    CHECK(ct_remainder_scalar(ta, 0.0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "remainder by zero");
    /* A fractional exponent makes it a float32 pow, where negative exponents are fine. */
    ct_tensor *p = ct_pow_scalar(ta, -1.5);
    double want[3];
    for (int i = 0; i < 3; i++) want[i] = pow(a[i], -1.5);
    CHECK(ct_dtype_of(p) == CT_F32);
    CHECK_TENSOR(p, want);
    ct_release(p);
    ct_tensor *bools = ct_ones(1, shape, CT_BOOL, device);
    CHECK(ct_sub(bools, bools) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_sub: subtracting bool tensors is not supported");
    ct_release(bools);
    /* nextafter of a narrow float would give x1 back (its step rounds away): refused. */
    ct_tensor *halves = ct_ones(1, shape, CT_BF16, device);
    CHECK(ct_nextafter(halves, halves) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_nextafter: the next bfloat16 value is not computed");
    CHECK(ct_nextafter_scalar(halves, 2.0) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_nextafter_scalar: the next bfloat16 value is not computed");
    ct_release(halves);
    ct_release(ta);
    ct_release(tb);
}

TEST(test_ops_binary_null_propagation) {
    ct_tensor *a = ct_ones(1, (const int64_t[]){3}, CT_F32, CT_CPU);
    CHECK(ct_add(a, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_add: argument 2 is NULL");
    CHECK(ct_mul_scalar(NULL, 2.0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_mul_scalar: argument 1 is NULL");
    /* The first error survives a chain of ops. */
    ct_tensor *b = ct_ones(1, (const int64_t[]){4}, CT_F32, CT_CPU);
    ct_tensor *y = ct_exp(ct_mul(ct_add(a, b), a));
    CHECK(y == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_add");
    ct_release(a);
    ct_release(b);
}

/* 16-bit float results are rounded once from float, to nearest even, exactly as the scalar
 * conversions (ct_f32_to_f16, ct_f32_to_bf16) do: every value plus a few others, bit for
 * bit. */
static void check_16bit_rounding(ct_device device, ct_dtype dtype) {
    static const float addends[4] = {0.0f, 1.0f, -0.000123f, 3.0e4f};
    float (*to_f32)(uint16_t) = dtype == CT_F16 ? ct_f16_to_f32 : ct_bf16_to_f32;
    uint16_t (*from_f32)(float) = dtype == CT_F16 ? ct_f32_to_f16 : ct_f32_to_bf16;
    int64_t n = 65536;
    uint16_t *bits = malloc(sizeof(uint16_t) * (size_t)n);
    uint16_t *got = malloc(sizeof(uint16_t) * (size_t)n);
    CHECK(bits && got);
    for (int64_t i = 0; i < n; i++) bits[i] = (uint16_t)i;
    ct_tensor *x = ct_from_data(bits, 1, &n, dtype, device);
    CHECK_NOT_NULL(x);
    for (int k = 0; k < 4 && !ct_test_failed(); k++) {
        ct_tensor *b = ct_full(0, NULL, addends[k], dtype, device);
        ct_tensor *y = ct_add(x, b);
        CHECK_NOT_NULL(y);
        CHECK_OK(ct_copy_to_host(y, got, sizeof(uint16_t) * (size_t)n));
        float addend = to_f32(from_f32(addends[k]));
        for (int64_t i = 0; i < n; i++) {
            uint16_t want = from_f32(to_f32(bits[i]) + addend);
            if (got[i] != want && !(isnan(to_f32(want)) && isnan(to_f32(got[i])))) {
                ct_test_fail(__FILE__, __LINE__, "%s 0x%04x + %g gave 0x%04x, expected 0x%04x",
                             ct_dtype_name(dtype), bits[i], (double)addend, got[i], want);
                break;
            }
        }
        ct_release(b);
        ct_release(y);
    }
    ct_release(x);
    free(bits);
    free(got);
}

DEVICE_TEST(test_ops_binary_16bit_rounding_is_exact) {
    RUN(check_16bit_rounding(device, CT_F16));
    RUN(check_16bit_rounding(device, CT_BF16));
}

/* Edge cases of the float ops that NumPy defines: signed zeros, infinities and NaN. */
DEVICE_TEST(test_ops_binary_new_float_edges) {
    static const double a[6] = {1, 0.0, -0.0, INFINITY, -INFINITY, NAN};
    static const double b[6] = {-0.0, -0.0, -0.0, NAN, -INFINITY, 1};
    static const double copysign_v[6] = {-1, -0.0, -0.0, INFINITY, -INFINITY, -NAN};
    static const double hypot_v[6] = {1, 0, 0, INFINITY, INFINITY, NAN};
    static const double atan2_v[6] = {M_PI / 2, M_PI, -M_PI, NAN, -3 * M_PI / 4, NAN};
    const double logaddexp_v[6] = /* not static: log1p and exp are calls */ {
        1 + log1p(exp(-1)), 0 + log(2.0), -0.0 + log(2.0), NAN, -INFINITY, NAN};
    static const double floordiv_v[6] = {-INFINITY, NAN, NAN, NAN, NAN, NAN};
    static const ct_dtype dtypes[] = {CT_F32, CT_F64};
    for (int d = 0; d < 2; d++) {
        ct_tensor *ta = ref_tensor(a, 1, (const int64_t[]){6}, dtypes[d], device);
        ct_tensor *tb = ref_tensor(b, 1, (const int64_t[]){6}, dtypes[d], device);
        ct_tensor *c = ct_copysign(ta, tb), *h = ct_hypot(ta, tb), *t = ct_atan2(ta, tb);
        ct_tensor *l = ct_logaddexp(ta, tb), *f = ct_floor_divide(ta, tb);
        CHECK_TENSOR(c, copysign_v);
        CHECK_TENSOR(h, hypot_v);
        CHECK_TENSOR(t, atan2_v);
        CHECK_TENSOR(l, logaddexp_v);
        CHECK_TENSOR(f, floordiv_v);
        /* the signs of the zeros, which CHECK_TENSOR does not compare */
        double *cv = ref_read(c);
        CHECK(cv && signbit(cv[1]) && signbit(cv[2]));
        free(cv);
        ct_release(c), ct_release(h), ct_release(t), ct_release(l), ct_release(f);
        ct_release(ta), ct_release(tb);
    }
    /* floor_divide rounds toward -inf; -0.0 results keep their sign, as Python's //. */
    static const double fa[4] = {7, -7, 7, -0.5}, fb[4] = {2, 2, -2, 4};
    static const double fq[4] = {3, -4, -4, -1};
    ct_tensor *x = ref_tensor(fa, 1, (const int64_t[]){4}, CT_F64, device);
    ct_tensor *y = ref_tensor(fb, 1, (const int64_t[]){4}, CT_F64, device);
    ct_tensor *q = ct_floor_divide(x, y);
    CHECK_TENSOR(q, fq);
    ct_release(x), ct_release(y), ct_release(q);
}

/* The bitwise ops on integers: wrapping in the dtype's width, shifts past the width, bool
 * as logic, floats (and bool for shifts) refused; integer floor_divide by zero refused. */
DEVICE_TEST(test_ops_binary_bitwise) {
    static const double a[5] = {-2147483648.0, 12, -12, 1, 5};
    static const double b[5] = {-1, 10, 2, 31, 40};
    static const double and_v[5] = {-2147483648.0, 8, 0, 1, 0};
    static const double xor_v[5] = {2147483647.0, 6, -10, 30, 45};
    static const double shl_v[5] = {0, 12288, -48, -2147483648.0, 0};
    static const double shr_v[5] = {-1, 0, -3, 0, 0};
    static const double fdiv_v[5] = {-2147483648.0, 1, -6, 0, 0};
    ct_tensor *ta = ref_tensor(a, 1, (const int64_t[]){5}, CT_I32, device);
    ct_tensor *tb = ref_tensor(b, 1, (const int64_t[]){5}, CT_I32, device);
    ct_tensor *n = ct_bitwise_and(ta, tb), *x = ct_bitwise_xor(ta, tb);
    ct_tensor *l = ct_bitwise_left_shift(ta, tb), *r = ct_bitwise_right_shift(ta, tb);
    ct_tensor *f = ct_floor_divide(ta, tb);
    CHECK(ct_dtype_of(n) == CT_I32 && ct_dtype_of(l) == CT_I32);
    CHECK_TENSOR(n, and_v);
    CHECK_TENSOR(x, xor_v);
    CHECK_TENSOR(l, shl_v);
    CHECK_TENSOR(r, shr_v);
    CHECK_TENSOR(f, fdiv_v);
    ct_release(n), ct_release(x), ct_release(l), ct_release(r), ct_release(f);
    /* uint8 shifts by 8 or more give 0. */
    static const double u[3] = {200, 200, 1}, us[3] = {1, 8, 7}, ushl[3] = {144, 0, 128};
    ct_tensor *ua = ref_tensor(u, 1, (const int64_t[]){3}, CT_U8, device);
    ct_tensor *ub = ref_tensor(us, 1, (const int64_t[]){3}, CT_U8, device);
    ct_tensor *ul = ct_bitwise_left_shift(ua, ub);
    CHECK(ct_dtype_of(ul) == CT_U8);
    CHECK_TENSOR(ul, ushl);
    ct_release(ua), ct_release(ub), ct_release(ul);
    /* bool: logic, and a bool with an integral scalar computes in int64. */
    ct_tensor *t = ct_ones(1, (const int64_t[]){2}, CT_BOOL, device);
    ct_tensor *o = ct_bitwise_or(t, t), *s = ct_bitwise_and_scalar(t, 3);
    CHECK(ct_dtype_of(o) == CT_BOOL && ct_dtype_of(s) == CT_I64);
    static const double ones[2] = {1, 1};
    CHECK_TENSOR(o, ones);
    CHECK_TENSOR(s, ones);
    ct_release(o), ct_release(s);
    CHECK(ct_bitwise_left_shift(t, t) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_bitwise_left_shift: takes integer tensors, not bool");
    ct_release(t);
    ct_tensor *fl = ct_ones(1, (const int64_t[]){5}, CT_F32, device);
    CHECK(ct_bitwise_and(fl, ta) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_bitwise_and: takes integer or bool tensors, not float64");
    CHECK(ct_bitwise_xor_scalar(ta, 1.5) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_bitwise_xor_scalar: takes integer or bool tensors");
    ct_release(fl);
    ct_tensor *zero = ct_zeros(1, (const int64_t[]){5}, CT_I32, device);
    CHECK(ct_floor_divide(ta, zero) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_floor_divide: integer division by zero");
    CHECK(ct_floor_divide_scalar(ta, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_floor_divide_scalar: integer division by zero");
    ct_release(zero), ct_release(ta), ct_release(tb);
}

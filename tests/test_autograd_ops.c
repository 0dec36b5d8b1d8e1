/* Finite-difference gradient checks (float64) of every differentiable op of the array
 * core: elementwise, reductions, matmul, and the shape and copy ops. */
#include <math.h>
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

/* A float64 leaf on device with values uniform in [lo, hi) that requires grad. */
static ct_tensor *leaf(ct_device device, int ndim, const int64_t *shape, uint64_t seed, double lo,
                       double hi) {
    return ct_gradcheck_leaf(device, ndim, shape, seed, lo, hi, true);
}

static void release_all(int n, ct_tensor **t) {
    for (int i = 0; i < n; i++) ct_release(t[i]);
}

/* ---- elementwise ---- */

typedef ct_tensor *(*unary_op)(const ct_tensor *);

static ct_tensor *apply_unary(ct_tensor *const *in, void *context) {
    return (*(unary_op *)context)(in[0]);
}

/* The input range of each differentiable row's gradient check, away from where the
 * derivative is infinite or jumps. The cases are generated from op_list.h: a GRAD row
 * without its range here does not compile ('range_NAME' undeclared). */
typedef struct grad_range {
    double lo, hi;
} grad_range;
#define RANGE(name, lo, hi) static const grad_range range_##name = {lo, hi};
RANGE(neg, -2, 2)
RANGE(abs, 0.1, 2)
RANGE(sign, 0.1, 2)
RANGE(sqrt, 0.5, 3)
RANGE(rsqrt, 0.5, 3)
RANGE(exp, -2, 2)
RANGE(expm1, -2, 2)
RANGE(log, 0.5, 3)
RANGE(log1p, 0.5, 3)
RANGE(sin, -3, 3)
RANGE(cos, -3, 3)
RANGE(tanh, -2, 2)
RANGE(sigmoid, -3, 3)
RANGE(relu, 0.1, 2)
RANGE(gelu, -3, 3)
RANGE(gelu_tanh, -3, 3)
RANGE(erf, -2, 2)
RANGE(floor, 0.1, 0.9)
RANGE(ceil, 0.1, 0.9)
RANGE(round, 0.1, 0.4)
RANGE(trunc, 0.1, 0.9)
RANGE(square, -2, 2)
RANGE(reciprocal, 0.5, 3)
RANGE(log2, 0.5, 3)
RANGE(log10, 0.5, 3)
RANGE(tan, -1.2, 1.2)
RANGE(asin, -0.9, 0.9)
RANGE(acos, -0.9, 0.9)
RANGE(atan, -3, 3)
RANGE(sinh, -2, 2)
RANGE(cosh, -2, 2)
RANGE(asinh, -3, 3)
RANGE(acosh, 1.2, 3)
RANGE(atanh, -0.9, 0.9)
RANGE(exp2, -2, 2)
#undef RANGE

typedef struct unary_grad_case {
    const char *name;
    unary_op op;
    const grad_range *range; /* NULL: a NOGRAD row */
} unary_grad_case;

#define RANGE_GRAD(name) &range_##name
#define RANGE_NOGRAD(name) NULL
static const unary_grad_case unary_cases[] = {
#define CASE_(name, NAME, kind, grad, autocast) {#name, ct_##name, RANGE_##grad(name)},
    CT_UNARY_OPS(CASE_)
#undef CASE_
};

/* Every GRAD row of the unary table, and abs and relu on the other side of 0. */
DEVICE_TEST(test_autograd_unary) {
    int64_t shape[2] = {3, 4};
    size_t n = sizeof unary_cases / sizeof unary_cases[0];
    for (size_t c = 0; c < n + 2; c++) {
        const unary_grad_case *u = c < n ? &unary_cases[c] : NULL;
        if (u && !u->range) continue;
        unary_op op = u ? u->op : c == n ? ct_abs : ct_relu;
        double lo = u ? u->range->lo : -2, hi = u ? u->range->hi : -0.1;
        ct_tensor *x = leaf(device, 2, shape, 10 + c, lo, hi);
        CHECK_NOT_NULL(x);
        bool ok = ct_gradcheck(apply_unary, 1, &x, &op, EPS, ATOL, RTOL);
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "unary case %s", u ? u->name : "negative side");
        if (!ok) return;
    }
}

/* The NOGRAD unary rows give bool or integer results, which carry no gradient. */
DEVICE_TEST(test_autograd_nograd_unary_rows_carry_no_grad) {
    ct_tensor *x = leaf(device, 1, (int64_t[]){4}, 5, -2, 2);
    ct_tensor *xi = ct_cast(x, CT_I32);
    for (size_t c = 0; c < sizeof unary_cases / sizeof unary_cases[0]; c++) {
        if (unary_cases[c].range) continue;
        ct_tensor *y = unary_cases[c].op(unary_cases[c].op == ct_bitwise_invert ? xi : x);
        if (!y) ct_test_fail(__FILE__, __LINE__, "ct_%s: %s", unary_cases[c].name, ct_last_error());
        CHECK_NOT_NULL(y);
        CHECK(!ct_requires_grad(y));
        CHECK(!ct_dtype_is_floating(ct_dtype_of(y)));
        ct_release(y);
    }
    ct_release(xi);
    ct_release(x);
}

static ct_tensor *apply_clamp(ct_tensor *const *in, void *context) {
    (void)context;
    return ct_clamp(in[0], -0.5, 0.7);
}

DEVICE_TEST(test_autograd_clamp) {
    /* values kept away from the bounds, where the derivative jumps */
    double values[6] = {-1.5, -0.2, 0.1, 0.4, 0.9, 2.0};
    ct_tensor *x = ref_tensor(values, 1, (int64_t[]){6}, CT_F64, device);
    CHECK_NOT_NULL(x);
    ct_set_requires_grad(x, true);
    bool ok = ct_gradcheck(apply_clamp, 1, &x, NULL, EPS, ATOL, RTOL);
    ct_release(x);
    CHECK(ok);
}

typedef ct_tensor *(*binary_op)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*scalar_op)(const ct_tensor *, double);

static ct_tensor *apply_binary(ct_tensor *const *in, void *context) {
    return (*(binary_op *)context)(in[0], in[1]);
}

/* The operand ranges of each differentiable binary row's gradient check; generated cases
 * as for the unary rows ('range2_NAME' undeclared for a GRAD row without one). */
typedef struct grad_range2 {
    double alo, ahi, blo, bhi;
} grad_range2;
#define RANGE2(name, alo, ahi, blo, bhi)                                                           \
    static const grad_range2 range2_##name = {alo, ahi, blo, bhi};
RANGE2(add, -2, 2, 0.6, 1.9)
RANGE2(sub, -2, 2, 0.6, 1.9)
RANGE2(mul, -2, 2, 0.6, 1.9)
RANGE2(div, 0.5, 2, 0.6, 1.9)
RANGE2(pow, 0.5, 2, 0.6, 1.9)
RANGE2(maximum, -2, 2, 0.6, 1.9)
RANGE2(minimum, -2, 2, 0.6, 1.9)
RANGE2(remainder, 0.5, 2, 0.6, 1.9)
RANGE2(hypot, -2, 2, 0.6, 1.9)
RANGE2(copysign, 0.2, 2, -1.9, -0.6)
RANGE2(atan2, -2, 2, 0.6, 1.9)
RANGE2(logaddexp, -2, 2, -1, 1)
#undef RANGE2

typedef struct binary_grad_case {
    const char *name;
    binary_op op;
    const grad_range2 *range; /* NULL: a NOGRAD row */
} binary_grad_case;

#define RANGE2_GRAD(name) &range2_##name
#define RANGE2_NOGRAD(name) NULL
static const binary_grad_case binary_cases[] = {
#define CASE_(name, NAME, kind, grad, autocast) {#name, ct_##name, RANGE2_##grad(name)},
    CT_BINARY_OPS(CASE_)
#undef CASE_
};

/* Every GRAD row of the binary table with broadcasting on either side. */
DEVICE_TEST(test_autograd_binary) {
    int64_t shapes[3][2] = {{3, 4}, {1, 4}, {3, 1}};
    for (size_t o = 0; o < sizeof binary_cases / sizeof binary_cases[0]; o++) {
        const grad_range2 *r = binary_cases[o].range;
        if (!r) continue;
        for (int s = 0; s < 3; s++) {
            ct_tensor *in[2] = {leaf(device, 2, shapes[s], 20 + o, r->alo, r->ahi),
                                leaf(device, 2, shapes[(s + 1) % 3], 30 + o, r->blo, r->bhi)};
            CHECK_NOT_NULL(in[0]);
            CHECK_NOT_NULL(in[1]);
            bool ok =
                ct_gradcheck(apply_binary, 2, in, (void *)&binary_cases[o].op, EPS, ATOL, RTOL);
            release_all(2, in);
            if (!ok)
                ct_test_fail(__FILE__, __LINE__, "binary op %s shapes %d", binary_cases[o].name, s);
            if (!ok) return;
        }
    }
}

/* A NOGRAD row with a floating result and an input that requires grad is an error naming
 * the op, never a zero gradient; without grad (or under no-grad) it computes. */
DEVICE_TEST(test_autograd_nograd_row_is_unsupported) {
    ct_tensor *x = leaf(device, 1, (int64_t[]){4}, 6, 0.5, 2);
    ct_tensor *y = ct_full(1, (int64_t[]){4}, 0.3, CT_F64, device);
    CHECK(ct_floor_divide(x, y) == NULL);
    CHECK_ERROR(CT_ERR_UNSUPPORTED, "ct_floor_divide: the op is not differentiable");
    CHECK(ct_floor_divide_scalar(x, 0.3) == NULL);
    CHECK_ERROR(CT_ERR_UNSUPPORTED, "ct_floor_divide_scalar: the op is not differentiable");
    ct_tensor *q = ct_floor_divide(y, y);
    CHECK_NOT_NULL(q);
    ct_release(q);
    CHECK_OK(ct_no_grad_push());
    q = ct_floor_divide(x, y);
    CHECK_OK(ct_no_grad_pop());
    CHECK_NOT_NULL(q);
    CHECK(!ct_requires_grad(q));
    ct_release(q);
    ct_release(x);
    ct_release(y);
}

typedef struct scalar_case {
    scalar_op op;
    double s;
} scalar_case;

static ct_tensor *apply_scalar(ct_tensor *const *in, void *context) {
    scalar_case *c = context;
    return c->op(in[0], c->s);
}

DEVICE_TEST(test_autograd_binary_scalar) {
    scalar_case cases[] = {
        {ct_add_scalar, 2},        {ct_sub_scalar, 1.5},     {ct_mul_scalar, -3},
        {ct_div_scalar, 0.25},     {ct_pow_scalar, 2.5},     {ct_pow_scalar, 0},
        {ct_maximum_scalar, 1},    {ct_minimum_scalar, 1},   {ct_remainder_scalar, 0.7},
        {ct_hypot_scalar, 1.5},    {ct_copysign_scalar, -1}, {ct_atan2_scalar, 0.7},
        {ct_logaddexp_scalar, 0.3}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_tensor *x = leaf(device, 2, (int64_t[]){2, 5}, 40 + c, 0.1, 1.95);
        CHECK_NOT_NULL(x);
        bool ok = ct_gradcheck(apply_scalar, 1, &x, &cases[c], EPS, ATOL, RTOL);
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "scalar case %zu", c);
        if (!ok) return;
    }
}

/* The reflected forms: s op x, differentiated in x. */
DEVICE_TEST(test_autograd_binary_rscalar) {
    scalar_case cases[] = {
        {ct_add_rscalar, 2},     {ct_sub_rscalar, 1.5},      {ct_mul_rscalar, -3},
        {ct_div_rscalar, 0.25},  {ct_pow_rscalar, 2.5},      {ct_maximum_rscalar, 1},
        {ct_minimum_rscalar, 1}, {ct_hypot_rscalar, 1.5},    {ct_copysign_rscalar, -1},
        {ct_atan2_rscalar, 0.7}, {ct_logaddexp_rscalar, 0.3}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_tensor *x = leaf(device, 2, (int64_t[]){2, 5}, 60 + c, 0.1, 1.95);
        CHECK_NOT_NULL(x);
        bool ok = ct_gradcheck(apply_scalar, 1, &x, &cases[c], EPS, ATOL, RTOL);
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "reflected scalar case %zu", c);
        if (!ok) return;
    }
}

static ct_tensor *apply_where(ct_tensor *const *in, void *context) {
    (void)context;
    ct_tensor *cond = ct_gt_scalar(in[0], 0.0);
    ct_tensor *out = ct_where(cond, in[0], in[1]);
    ct_release(cond);
    return out;
}

DEVICE_TEST(test_autograd_where) {
    ct_tensor *in[2] = {leaf(device, 2, (int64_t[]){3, 4}, 50, -1, 1),
                        leaf(device, 1, (int64_t[]){4}, 51, -1, 1)};
    CHECK_NOT_NULL(in[0]);
    CHECK_NOT_NULL(in[1]);
    bool ok = ct_gradcheck(apply_where, 2, in, NULL, EPS, ATOL, RTOL);
    release_all(2, in);
    CHECK(ok);
}

/* ---- reductions and matmul ---- */

typedef struct reduce_case {
    int which; /* 0 sum, 1 mean, 2 prod, 3 max, 4 min, 5 var, 6 std */
    int naxes;
    int axes[2];
    bool keepdim;
} reduce_case;

static ct_tensor *apply_reduce(ct_tensor *const *in, void *context) {
    reduce_case *c = context;
    const int *axes = c->naxes ? c->axes : NULL;
    switch (c->which) {
    case 0: return ct_sum(in[0], c->naxes, axes, c->keepdim);
    case 1: return ct_mean(in[0], c->naxes, axes, c->keepdim);
    case 2: return ct_prod(in[0], c->naxes, axes, c->keepdim);
    case 3: return ct_max(in[0], c->naxes, axes, c->keepdim);
    case 4: return ct_min(in[0], c->naxes, axes, c->keepdim);
    case 5: return ct_var(in[0], c->naxes, axes, 1.0, c->keepdim);
    default: return ct_std(in[0], c->naxes, axes, 0.0, c->keepdim);
    }
}

DEVICE_TEST(test_autograd_reductions) {
    for (int which = 0; which < 7; which++) {
        reduce_case cases[] = {{which, 0, {0, 0}, false},
                               {which, 1, {1, 0}, false},
                               {which, 2, {0, 2}, true},
                               {which, 1, {-1, 0}, true}};
        for (size_t c = 0; c < 4; c++) {
            /* distinct values, so max and min have one winner */
            ct_tensor *x = leaf(device, 3, (int64_t[]){2, 3, 4}, 60 + which, 0.5, 1.5);
            CHECK_NOT_NULL(x);
            bool ok = ct_gradcheck(apply_reduce, 1, &x, &cases[c], EPS, ATOL, RTOL);
            ct_release(x);
            if (!ok) ct_test_fail(__FILE__, __LINE__, "reduction %d case %zu", which, c);
            if (!ok) return;
        }
    }
}

DEVICE_TEST(test_autograd_max_ties_share) {
    double values[4] = {1, 3, 3, 2};
    ct_tensor *x = ref_tensor(values, 1, (int64_t[]){4}, CT_F64, device);
    CHECK_NOT_NULL(x);
    ct_set_requires_grad(x, true);
    ct_tensor *m = ct_max(x, 0, NULL, false);
    ct_status status = ct_backward(m);
    ct_release(m);
    ct_tensor *g = ct_grad(x);
    ct_release(x);
    CHECK_OK(status);
    double expected[4] = {0, 0.5, 0.5, 0};
    CHECK_TENSOR(g, expected);
    ct_release(g);
}

DEVICE_TEST(test_autograd_matmul) {
    int64_t shapes[][2][4] = {{{3, 4}, {4, 2}}, {{2, 3, 4}, {4, 5}}, {{4}, {4, 3}},
                              {{3, 4}, {4}},    {{4}, {4}},          {{2, 1, 3, 4}, {3, 4, 2}}};
    int ranks[][2] = {{2, 2}, {3, 2}, {1, 2}, {2, 1}, {1, 1}, {4, 3}};
    for (size_t c = 0; c < sizeof ranks / sizeof ranks[0]; c++) {
        ct_tensor *in[2] = {leaf(device, ranks[c][0], shapes[c][0], 70 + c, -1, 1),
                            leaf(device, ranks[c][1], shapes[c][1], 80 + c, -1, 1)};
        CHECK_NOT_NULL(in[0]);
        CHECK_NOT_NULL(in[1]);
        binary_op op = ct_matmul;
        bool ok = ct_gradcheck(apply_binary, 2, in, &op, EPS, ATOL, RTOL);
        release_all(2, in);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "matmul case %zu", c);
        if (!ok) return;
    }
}

/* ---- shape and copy ops: each case multiplies by a fixed tensor after the op, so that
 * a wrong element order shows in the gradient ---- */

static ct_tensor *weighted(ct_tensor *y) {
    if (!y) return NULL;
    ct_tensor *w = ct_arange(1, (double)ct_numel(y) + 1, 1, CT_F64, ct_device_of(y));
    ct_tensor *wr = w ? ct_reshape(w, ct_ndim(y), ct_shape(y)) : NULL;
    ct_tensor *out = wr ? ct_mul(y, wr) : NULL;
    ct_release(w);
    ct_release(wr);
    ct_release(y);
    return out;
}

static ct_tensor *apply_shape(ct_tensor *const *in, void *context) {
    const ct_tensor *x = in[0];
    switch (*(int *)context) {
    case 0: return weighted(ct_reshape(x, 2, (int64_t[]){4, 6}));
    case 1: return weighted(ct_view(x, 1, (int64_t[]){-1}));
    case 2: return weighted(ct_flatten(x, 1, 2));
    case 3: return weighted(ct_unsqueeze(x, 1));
    case 4: return weighted(ct_transpose(x, 0, 2));
    case 5: return weighted(ct_permute(x, 3, (const int[]){2, 0, 1}));
    case 6: return weighted(ct_slice(x, 2, 3, 0, -2));
    case 7: return weighted(ct_slice(x, 1, 1, 3, 1));
    case 8: return weighted(ct_expand(ct_slice(x, 1, 0, 1, 1), 4, (int64_t[]){2, 2, 3, 4}));
    case 9: return weighted(ct_clone(x));
    case 10: return weighted(ct_contiguous(ct_transpose(x, 1, 2)));
    case 11: return weighted(ct_squeeze(ct_slice(x, 1, 2, 3, 1), 1));
    case 12: return weighted(ct_cast(ct_cast(x, CT_F32), CT_F64));
    case 13: return weighted(ct_to(x, CT_CPU));
    default: {
        const ct_tensor *parts[3] = {x, x, x};
        return *(int *)context == 14 ? weighted(ct_concat(3, parts, 1))
                                     : weighted(ct_stack(3, parts, 0));
    }
    }
}

DEVICE_TEST(test_autograd_shape_ops) {
    for (int c = 0; c <= 15; c++) {
        ct_tensor *x = leaf(device, 3, (int64_t[]){2, 3, 4}, 90 + c, -1, 1);
        CHECK_NOT_NULL(x);
        CHECK_OK(ct_scope_begin()); /* the cases leave their inner temporaries to the scope */
        /* the round trip through f32 loses precision: a looser tolerance for it */
        bool ok = ct_gradcheck(apply_shape, 1, &x, &c, c == 12 ? 1e-3 : EPS, c == 12 ? 1e-3 : ATOL,
                               c == 12 ? 1e-3 : RTOL);
        ct_scope_end();
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "shape case %d", c);
        if (!ok) return;
    }
}

static ct_tensor *apply_split(ct_tensor *const *in, void *context) {
    (void)context;
    ct_tensor *pieces[3];
    int count = 0;
    if (ct_split(in[0], 2, 1, pieces, 3, &count) != CT_OK) return NULL;
    ct_tensor *out = ct_sub(pieces[0], ct_mul_scalar(pieces[2], 3.0));
    for (int i = 0; i < count; i++) ct_release(pieces[i]);
    return out;
}

DEVICE_TEST(test_autograd_split) {
    ct_tensor *x = leaf(device, 2, (int64_t[]){3, 5}, 120, -1, 1);
    CHECK_NOT_NULL(x);
    CHECK_OK(ct_scope_begin());
    bool ok = ct_gradcheck(apply_split, 1, &x, NULL, EPS, ATOL, RTOL);
    ct_scope_end();
    ct_release(x);
    CHECK(ok);
}

/* ---- indexing: repeated indices accumulate ---- */

static ct_tensor *apply_index(ct_tensor *const *in, void *context) {
    const ct_tensor *x = in[0];
    ct_device device = ct_device_of(x);
    if (*(int *)context == 0) {
        int64_t picks[5] = {2, 0, 2, -1, 1};
        ct_tensor *index = ct_from_data(picks, 1, (int64_t[]){5}, CT_I64, device);
        ct_tensor *out = weighted(ct_index_select(x, 1, index));
        ct_release(index);
        return out;
    }
    int64_t picks[6] = {0, 1, 1, 0, 0, 0};
    ct_tensor *index = ct_from_data(picks, 2, (int64_t[]){2, 3}, CT_I64, device);
    ct_tensor *out = weighted(ct_gather(x, 0, index));
    ct_release(index);
    return out;
}

DEVICE_TEST(test_autograd_index_select_and_gather) {
    for (int c = 0; c < 2; c++) {
        ct_tensor *x = leaf(device, 2, (int64_t[]){2, 4}, 130 + c, -1, 1);
        CHECK_NOT_NULL(x);
        bool ok = ct_gradcheck(apply_index, 1, &x, &c, EPS, ATOL, RTOL);
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "index case %d", c);
        if (!ok) return;
    }
}

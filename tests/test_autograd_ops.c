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

DEVICE_TEST(test_autograd_unary) {
    struct {
        unary_op op;
        double lo, hi;
    } cases[] = {{ct_neg, -2, 2},    {ct_abs, 0.1, 2},   {ct_sqrt, 0.5, 3}, {ct_rsqrt, 0.5, 3},
                 {ct_exp, -2, 2},    {ct_expm1, -2, 2},  {ct_log, 0.5, 3},  {ct_log1p, 0.5, 3},
                 {ct_sin, -3, 3},    {ct_cos, -3, 3},    {ct_tanh, -2, 2},  {ct_sigmoid, -3, 3},
                 {ct_relu, 0.1, 2},  {ct_gelu, -3, 3},   {ct_erf, -2, 2},   {ct_floor, 0.1, 0.9},
                 {ct_abs, -2, -0.1}, {ct_relu, -2, -0.1}};
    int64_t shape[2] = {3, 4};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_tensor *x = leaf(device, 2, shape, 10 + c, cases[c].lo, cases[c].hi);
        CHECK_NOT_NULL(x);
        bool ok = ct_gradcheck(apply_unary, 1, &x, &cases[c].op, EPS, ATOL, RTOL);
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "unary case %zu", c);
        if (!ok) return;
    }
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

/* Every differentiable binary op with broadcasting on either side. */
DEVICE_TEST(test_autograd_binary) {
    binary_op ops[] = {ct_add, ct_sub,     ct_mul,     ct_div,
                       ct_pow, ct_maximum, ct_minimum, ct_remainder};
    int64_t shapes[3][2] = {{3, 4}, {1, 4}, {3, 1}};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        for (int s = 0; s < 3; s++) {
            bool positive = ops[o] == ct_pow || ops[o] == ct_div || ops[o] == ct_remainder;
            ct_tensor *in[2] = {leaf(device, 2, shapes[s], 20 + o, positive ? 0.5 : -2, 2),
                                leaf(device, 2, shapes[(s + 1) % 3], 30 + o, 0.6, 1.9)};
            CHECK_NOT_NULL(in[0]);
            CHECK_NOT_NULL(in[1]);
            bool ok = ct_gradcheck(apply_binary, 2, in, &ops[o], EPS, ATOL, RTOL);
            release_all(2, in);
            if (!ok) ct_test_fail(__FILE__, __LINE__, "binary op %zu shapes %d", o, s);
            if (!ok) return;
        }
    }
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
        {ct_add_scalar, 2},     {ct_sub_scalar, 1.5},   {ct_mul_scalar, -3},
        {ct_div_scalar, 0.25},  {ct_pow_scalar, 2.5},   {ct_pow_scalar, 0},
        {ct_maximum_scalar, 1}, {ct_minimum_scalar, 1}, {ct_remainder_scalar, 0.7}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_tensor *x = leaf(device, 2, (int64_t[]){2, 5}, 40 + c, 0.1, 1.95);
        CHECK_NOT_NULL(x);
        bool ok = ct_gradcheck(apply_scalar, 1, &x, &cases[c], EPS, ATOL, RTOL);
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "scalar case %zu", c);
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

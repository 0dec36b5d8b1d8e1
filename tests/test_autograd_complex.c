/* Finite-difference gradient checks of autograd through complex tensors, in PyTorch's
 * convention (the gradient of a real loss with respect to z is dL/dRe z + i dL/dIm z): every
 * unary and binary row that has a complex form, real/imag/conj, casts, reductions, matmul and
 * the shape ops; a complex root is refused, and the ops without a complex derivative give
 * no gradient or an error. The FFT's gradients are in test_fft_grad.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

/* Three quadrants, away from every branch cut (the real and imaginary axes). */
static const double quadrants[3][2][2] = {
    {{0.3, 1.4}, {0.2, 0.9}}, {{-1.4, -0.3}, {0.2, 0.9}}, {{-1.4, -0.3}, {-0.9, -0.2}}};

static ct_tensor *zleaf(ct_device device, int ndim, const int64_t *shape, uint64_t seed, int q) {
    return ct_gradcheck_complex_leaf(device, ndim, shape, seed, quadrants[q][0], quadrants[q][1],
                                     true);
}

static void release_all(int n, ct_tensor **t) {
    for (int i = 0; i < n; i++) ct_release(t[i]);
}

static bool gradcheck(ct_gradcheck_fn f, int n, ct_tensor *const *in, void *context) {
    return ct_gradcheck_complex(f, n, in, context, EPS, ATOL, RTOL);
}

/* ---- elementwise ---- */

typedef ct_tensor *(*unary_op)(const ct_tensor *);

static ct_tensor *apply_unary(ct_tensor *const *in, void *context) {
    return (*(unary_op *)context)(in[0]);
}

typedef struct unary_row {
    const char *name;
    unary_op op;
} unary_row;

static const unary_row unary_rows[] = {
#define ROW_(name, NAME, kind, grad, autocast) {#name, ct_##name},
    CT_UNARY_OPS(ROW_)
#undef ROW_
};

/* Every unary row that takes a complex tensor: a floating or complex result is checked in
 * three quadrants (round between its jumps), a bool result carries no gradient. */
DEVICE_TEST(test_autograd_complex_unary) {
    int64_t shape[2] = {3, 4};
    int checked = 0;
    for (size_t c = 0; c < sizeof unary_rows / sizeof unary_rows[0]; c++) {
        const unary_row *row = &unary_rows[c];
        for (int q = 0; q < 3; q++) {
            ct_tensor *z = zleaf(device, 2, shape, 40 + c, q);
            CHECK_NOT_NULL(z);
            if (row->op == ct_round) {
                ct_release(z);
                z = ct_gradcheck_complex_leaf(device, 2, shape, 40 + c, (double[]){0.1, 0.4},
                                              (double[]){-0.4, -0.1}, true);
            }
            ct_tensor *y = row->op(z);
            if (!y) { /* no complex form: refused by name */
                CHECK(ct_last_status() == CT_ERR_DTYPE && strstr(ct_last_error(), row->name));
                ct_clear_error();
                ct_release(z);
                break;
            }
            bool carries = ct_dtype_is_floating(ct_dtype_of(y)) || ct_dtype_of(y) == CT_C128;
            CHECK(ct_requires_grad(y) == carries);
            ct_release(y);
            bool ok = !carries || gradcheck(apply_unary, 1, &z, (void *)&row->op);
            checked += carries;
            ct_release(z);
            if (!ok) ct_test_fail(__FILE__, __LINE__, "unary %s, quadrant %d", row->name, q);
            if (!ok) return;
        }
    }
    CHECK(checked >= 3 * 24); /* neg .. round: the complex forms of op_list.h */
}

/* acosh's derivative 1 / (sqrt(z - 1) sqrt(z + 1)) near the imaginary axis, where
 * 1 / sqrt(z^2 - 1) has a cut that acosh has not. */
DEVICE_TEST(test_autograd_complex_acosh_near_imaginary_axis) {
    ct_tensor *z = ct_gradcheck_complex_leaf(device, 1, (int64_t[]){6}, 3, (double[]){-0.05, 0.05},
                                             (double[]){0.5, 2.0}, true);
    unary_op op = ct_acosh;
    CHECK(gradcheck(apply_unary, 1, &z, &op));
    ct_release(z);
}

typedef ct_tensor *(*binary_op)(const ct_tensor *, const ct_tensor *);

static ct_tensor *apply_binary(ct_tensor *const *in, void *context) {
    return (*(binary_op *)context)(in[0], in[1]);
}

/* add, sub, mul, div, pow: complex with complex and with real (float64) on either side, with
 * broadcasting; the real operand's gradient is the real part (as PyTorch). */
DEVICE_TEST(test_autograd_complex_binary) {
    static const struct {
        const char *name;
        binary_op op;
    } ops[] = {{"add", ct_add}, {"sub", ct_sub}, {"mul", ct_mul}, {"div", ct_div}, {"pow", ct_pow}};
    int64_t shapes[3][2] = {{3, 4}, {1, 4}, {3, 1}};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int s = 0; s < 3; s++)
            for (int mix = 0; mix < 3; mix++) { /* 0: both complex; 1, 2: a or b real */
                ct_tensor *in[2] = {zleaf(device, 2, shapes[s], 60 + o, s),
                                    zleaf(device, 2, shapes[(s + 1) % 3], 70 + o, (s + 1) % 3)};
                if (mix) {
                    ct_release(in[mix - 1]);
                    in[mix - 1] = ct_gradcheck_leaf(device, 2, shapes[s], 80 + o, 0.4, 1.6, true);
                }
                CHECK_NOT_NULL(in[0]);
                CHECK_NOT_NULL(in[1]);
                bool ok = gradcheck(apply_binary, 2, in, (void *)&ops[o].op);
                release_all(2, in);
                if (!ok)
                    ct_test_fail(__FILE__, __LINE__, "binary %s, shapes %d, real operand %d",
                                 ops[o].name, s, mix);
                if (!ok) return;
            }
}

/* The scalar forms, the scalar on either side: ((-1.5 z)^2.5 - 0.5) / 3 + 2 / z + 1.7^z. */
static ct_tensor *scalar_ops(ct_tensor *const *in, void *context) {
    (void)context;
    ct_tensor *a = ct_mul_scalar(in[0], -1.5);
    ct_tensor *b = a ? ct_pow_scalar(a, 2.5) : NULL;
    ct_tensor *c = b ? ct_sub_scalar(b, 0.5) : NULL;
    ct_tensor *d = c ? ct_div_scalar(c, 3.0) : NULL;
    ct_tensor *e = ct_div_rscalar(in[0], 2.0), *f = ct_pow_rscalar(in[0], 1.7);
    ct_tensor *de = d && e ? ct_add(d, e) : NULL;
    ct_tensor *out = de && f ? ct_add(de, f) : NULL;
    ct_tensor *all[] = {a, b, c, d, e, f, de};
    release_all(7, all);
    return out;
}

static ct_tensor *where_op(ct_tensor *const *in, void *context) {
    const ct_tensor *cond = context;
    return ct_where(cond, in[0], in[1]);
}

DEVICE_TEST(test_autograd_complex_scalar_operands_and_where) {
    int64_t shape[1] = {5};
    ct_tensor *z = zleaf(device, 1, shape, 5, 0);
    CHECK(gradcheck(scalar_ops, 1, &z, NULL));
    double mask[5] = {1, 0, 0, 1, 1};
    ct_tensor *cond_f = ref_tensor(mask, 1, shape, CT_F64, device);
    ct_tensor *cond = ct_cast(cond_f, CT_BOOL);
    ct_tensor *in[2] = {z, zleaf(device, 1, shape, 6, 1)};
    CHECK(gradcheck(where_op, 2, in, cond));
    ct_release(in[1]);
    ct_release(cond);
    ct_release(cond_f);
    ct_release(z);
}

/* ---- parts, casts, reductions, matmul, shapes ---- */

/* real(z) imag(z)^2 + |conj(z) w|: every part op and abs in one real function. */
static ct_tensor *parts_op(ct_tensor *const *in, void *context) {
    (void)context;
    ct_tensor *re = ct_real(in[0]), *im = ct_imag(in[0]), *cj = ct_conj(in[0]);
    ct_tensor *im2 = im ? ct_mul(im, im) : NULL;
    ct_tensor *left = re && im2 ? ct_mul(re, im2) : NULL;
    ct_tensor *prod = cj ? ct_mul(cj, in[1]) : NULL;
    ct_tensor *mag = prod ? ct_abs(prod) : NULL;
    ct_tensor *out = left && mag ? ct_add(left, mag) : NULL;
    ct_tensor *all[] = {re, im, cj, im2, left, prod, mag};
    release_all(7, all);
    return out;
}

static ct_tensor *conj_only(ct_tensor *const *in, void *context) {
    (void)context;
    return ct_conj(in[0]);
}

DEVICE_TEST(test_autograd_complex_parts) {
    int64_t shape[2] = {2, 3};
    ct_tensor *in[2] = {zleaf(device, 2, shape, 7, 0), zleaf(device, 2, shape, 8, 1)};
    CHECK(gradcheck(parts_op, 2, in, NULL));
    CHECK(gradcheck(conj_only, 1, in, NULL));
    release_all(2, in);
}

/* A real input cast to complex, times a complex one: the real input's gradient is real. */
static ct_tensor *cast_op(ct_tensor *const *in, void *context) {
    (void)context;
    ct_tensor *z = ct_cast(in[0], CT_C128);
    ct_tensor *narrow = ct_cast(in[1], CT_C64), *wide = narrow ? ct_cast(narrow, CT_C128) : NULL;
    ct_tensor *out = z && wide ? ct_mul(z, wide) : NULL;
    ct_release(z);
    ct_release(narrow);
    ct_release(wide);
    return out;
}

DEVICE_TEST(test_autograd_complex_casts) {
    int64_t shape[1] = {4};
    ct_tensor *in[2] = {ct_gradcheck_leaf(device, 1, shape, 9, -1, 1, true),
                        zleaf(device, 1, shape, 10, 0)};
    /* through complex64: steps far above its rounding; the function is bilinear */
    CHECK(ct_gradcheck_complex(cast_op, 2, in, NULL, 1e-2, 1e-5, 1e-4));
    ct_tensor *y = cast_op(in, NULL);
    ct_tensor *loss = y ? ct_sum(y, 0, NULL, false) : NULL;
    ct_tensor *loss_re = loss ? ct_real(loss) : NULL;
    CHECK_OK(ct_backward(loss_re));
    ct_tensor *g = ct_grad(in[0]);
    CHECK(g && ct_dtype_of(g) == CT_F64);
    ct_tensor *gz = ct_grad(in[1]);
    CHECK(gz && ct_dtype_of(gz) == CT_C128);
    ct_release(g);
    ct_release(gz);
    ct_release(loss_re);
    ct_release(loss);
    ct_release(y);
    release_all(2, in);
}

typedef struct reduce_case {
    ct_tensor *(*fn)(const ct_tensor *, int, const int *, bool);
    int naxes;
    int axes[2];
    bool keepdim;
} reduce_case;

static ct_tensor *reduce_op(ct_tensor *const *in, void *context) {
    const reduce_case *c = context;
    return c->fn(in[0], c->naxes, c->naxes ? c->axes : NULL, c->keepdim);
}

DEVICE_TEST(test_autograd_complex_reductions) {
    int64_t shape[3] = {2, 3, 4};
    reduce_case cases[] = {{ct_sum, 0, {0}, false},     {ct_sum, 1, {1}, true},
                           {ct_mean, 2, {0, 2}, false}, {ct_prod, 1, {2}, false},
                           {ct_prod, 0, {0}, false},    {ct_prod, 2, {0, 1}, true}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_tensor *z = zleaf(device, 3, shape, 11 + c, (int)c % 3);
        bool ok = gradcheck(reduce_op, 1, &z, &cases[c]);
        ct_release(z);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "reduction case %zu", c);
        if (!ok) return;
    }
}

static ct_tensor *matmul_op(ct_tensor *const *in, void *context) {
    (void)context;
    return ct_matmul(in[0], in[1]);
}

/* Matrix by matrix (batched, broadcast), by vector, vector by vector; and real by complex. */
DEVICE_TEST(test_autograd_complex_matmul) {
    int64_t shapes[5][2][3] = {
        {{2, 3, 4}, {4, 5}}, {{3, 4}, {4}}, {{4}, {4, 2}}, {{4}, {4}}, {{3, 4}, {4, 2}}};
    int ndims[5][2] = {{3, 2}, {2, 1}, {1, 2}, {1, 1}, {2, 2}};
    for (int c = 0; c < 5; c++) {
        ct_tensor *in[2] = {zleaf(device, ndims[c][0], shapes[c][0], 20 + c, c % 3),
                            zleaf(device, ndims[c][1], shapes[c][1], 30 + c, (c + 1) % 3)};
        if (c == 4) {
            ct_release(in[0]);
            in[0] = ct_gradcheck_leaf(device, 2, shapes[c][0], 40, -1, 1, true);
        }
        bool ok = gradcheck(matmul_op, 2, in, NULL);
        release_all(2, in);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "matmul case %d", c);
        if (!ok) return;
    }
}

/* reshape, permute, slice (negative step), expand, concat, index_select, gather in one
 * function; context: the index of index_select (4 rows of 5) and of gather (2 x 2). */
static ct_tensor *shapes_op(ct_tensor *const *in, void *context) {
    ct_tensor *const *index = context;
    ct_tensor *r = ct_reshape(in[0], 2, (int64_t[]){4, 3});
    ct_tensor *p = r ? ct_permute(r, 2, (int[]){1, 0}) : NULL; /* 3 x 4 */
    ct_tensor *s = p ? ct_slice(p, 1, 3, 0, -2) : NULL;        /* 3 x 2 */
    ct_tensor *first = s ? ct_slice(s, 0, 0, 1, 1) : NULL;
    ct_tensor *e = first ? ct_expand(first, 2, (int64_t[]){2, 2}) : NULL;
    const ct_tensor *parts[2] = {s, e};
    ct_tensor *c = e ? ct_concat(2, parts, 0) : NULL;            /* 5 x 2 */
    ct_tensor *sel = c ? ct_index_select(c, 0, index[0]) : NULL; /* 4 x 2 */
    ct_tensor *out = sel ? ct_gather(sel, 0, index[1]) : NULL;   /* 2 x 2 */
    ct_tensor *all[] = {r, p, s, first, e, c, sel};
    release_all(7, all);
    return out;
}

DEVICE_TEST(test_autograd_complex_shape_ops) {
    double rows[4] = {4, 0, 4, 2}, picks[4] = {3, 0, 3, 3};
    ct_tensor *rows_f = ref_tensor(rows, 1, (int64_t[]){4}, CT_F64, device);
    ct_tensor *picks_f = ref_tensor(picks, 2, (int64_t[]){2, 2}, CT_F64, device);
    ct_tensor *index[2] = {ct_cast(rows_f, CT_I64), ct_cast(picks_f, CT_I64)};
    ct_tensor *z = zleaf(device, 3, (int64_t[]){2, 2, 3}, 50, 1);
    CHECK(gradcheck(shapes_op, 1, &z, index));
    ct_tensor *all[] = {z, index[0], index[1], rows_f, picks_f};
    release_all(5, all);
}

/* stack, repeat and index_add: composed ops and the adds at indices. */
static ct_tensor *composed_op(ct_tensor *const *in, void *context) {
    const ct_tensor *index = context;
    ct_tensor *t = ct_matmul(in[0], in[1]); /* 2 x 3 */
    const ct_tensor *pair[2] = {t, in[2]};
    ct_tensor *s = t ? ct_stack(2, pair, 0) : NULL; /* 2 x 2 x 3 */
    ct_tensor *r = s ? ct_repeat(s, 2, 2) : NULL;   /* 2 x 2 x 6 */
    ct_tensor *flat = r ? ct_reshape(r, 2, (int64_t[]){4, 6}) : NULL;
    ct_tensor *out = flat ? ct_index_add(flat, 0, index, in[3]) : NULL;
    ct_tensor *all[] = {t, s, r, flat};
    release_all(4, all);
    return out;
}

DEVICE_TEST(test_autograd_complex_composed_ops) {
    double rows[2] = {3, 3};
    ct_tensor *rows_f = ref_tensor(rows, 1, (int64_t[]){2}, CT_F64, device);
    ct_tensor *index = ct_cast(rows_f, CT_I64);
    ct_tensor *in[4] = {
        zleaf(device, 2, (int64_t[]){2, 4}, 90, 0), zleaf(device, 2, (int64_t[]){4, 3}, 91, 1),
        zleaf(device, 2, (int64_t[]){2, 3}, 92, 2), zleaf(device, 2, (int64_t[]){2, 6}, 93, 0)};
    CHECK(gradcheck(composed_op, 4, in, index));
    release_all(4, in);
    ct_release(index);
    ct_release(rows_f);
}

/* ---- roots and ops without a complex derivative ---- */

DEVICE_TEST(test_autograd_complex_root_refused) {
    ct_tensor *z = zleaf(device, 1, (int64_t[]){3}, 60, 0);
    ct_tensor *total = ct_sum(z, 0, NULL, false);
    CHECK(ct_backward(total) == CT_ERR_DTYPE);
    CHECK_ERROR(CT_ERR_DTYPE, "a gradient can be implied only for a real scalar output");
    /* with its gradient given, it runs: d Re(conj(1) sum z) = 1 per element */
    ct_tensor *one = ct_ones(0, NULL, CT_C128, device);
    CHECK_OK(ct_backward_with(total, one, false));
    ct_tensor *g = ct_grad(z);
    ct_tensor *re = g ? ct_real(g) : NULL, *im = g ? ct_imag(g) : NULL;
    CHECK_TENSOR(re, ((double[]){1, 1, 1}));
    CHECK_TENSOR(im, ((double[]){0, 0, 0}));
    ct_tensor *all[] = {re, im, g, one, total, z};
    release_all(6, all);
}

DEVICE_TEST(test_autograd_complex_nondifferentiable) {
    ct_tensor *z = zleaf(device, 1, (int64_t[]){3}, 61, 0);
    ct_tensor *eq = ct_eq(z, z);
    CHECK(eq && !ct_requires_grad(eq)); /* bool: no gradient */
    CHECK(ct_lt(z, z) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_lt: not defined for complex tensors");
    CHECK(ct_floor(z) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_floor");
    /* abs and sign at 0: gradient 0, as PyTorch's */
    ct_tensor *zero = ct_zeros(1, (int64_t[]){2}, CT_C128, device);
    CHECK_OK(ct_set_requires_grad(zero, true));
    ct_tensor *a = ct_abs(zero), *s = ct_sign(zero);
    ct_tensor *sa = ct_sum(a, 0, NULL, false), *sz = ct_sum(s, 0, NULL, false);
    ct_tensor *ss = sz ? ct_real(sz) : NULL;
    ct_tensor *loss = sa && ss ? ct_add(sa, ss) : NULL;
    CHECK_OK(ct_backward(loss));
    ct_tensor *g = ct_grad(zero);
    ct_tensor *gr = g ? ct_real(g) : NULL, *gi = g ? ct_imag(g) : NULL;
    CHECK_TENSOR(gr, ((double[]){0, 0}));
    CHECK_TENSOR(gi, ((double[]){0, 0}));
    ct_tensor *all[] = {gr, gi, g, loss, sa, sz, ss, a, s, zero, eq, z};
    release_all(12, all);
    ct_clear_error();
}

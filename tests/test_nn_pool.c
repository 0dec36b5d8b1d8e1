/* ct_max_pool2d, ct_avg_pool2d (count_include_pad) and ct_adaptive_avg_pool2d: forward and
 * backward against float64 references computed here by direct loops, on several window
 * settings, 3-d and 4-d inputs, non-contiguous inputs and every floating dtype; the
 * routing of max pooling's gradient to the first maximum; and the error paths. */
#include <stdlib.h>

#include "autograd/tape_impl.h"
#include "backend/backend_impl.h"
#include "ct_ref.h"
#include "backend/conv_args_impl.h"
#include "core/tensor_impl.h"
#include "ct_gradcheck.h"
#include "ct_ref.h"
#include "ops/op_impl.h"

typedef enum { MAX, AVG, ADAPTIVE } kind;

typedef struct {
    kind k;
    int ndim;
    int64_t shape[4]; /* (N, C, H, W), or (C, H, W) with ndim 3 */
    ct_pool2d_options opt;
    int64_t out[2]; /* adaptive output size */
} pool_case;

/* Window [start, end) of output i along an axis of size n (o outputs), and its divisor. */
static void window(const pool_case *c, int axis, int64_t n, int64_t o, int64_t i, int64_t *start,
                   int64_t *end, int64_t *div) {
    ref_pool_window(c->k == ADAPTIVE, c->opt.kernel[axis], c->opt.stride[axis],
                    c->opt.padding[axis], n, o, i, start, end, div);
}

static int64_t out_size(const pool_case *c, int axis, int64_t n) {
    if (c->k == ADAPTIVE) return c->out[axis];
    int64_t k = c->opt.kernel[axis], s = c->opt.stride[axis] ? c->opt.stride[axis] : k;
    return (n + 2 * c->opt.padding[axis] - k) / s + 1;
}

/* y = pool(x), and gx = the gradient of sum(y * gy) with respect to x. */
static void reference(const pool_case *c, const double *x, const double *gy, double *y, double *gx,
                      int64_t *oh_n, int64_t *ow_n) {
    int64_t h = c->shape[c->ndim - 2], w = c->shape[c->ndim - 1], planes = 1;
    for (int d = 0; d < c->ndim - 2; d++) planes *= c->shape[d];
    *oh_n = out_size(c, 0, h);
    *ow_n = out_size(c, 1, w);
    for (int64_t i = 0; i < planes * h * w; i++) gx[i] = 0;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t oh = 0; oh < *oh_n; oh++)
            for (int64_t ow = 0; ow < *ow_n; ow++) {
                int64_t h0, h1, hd, w0, w1, wd, o = (p * *oh_n + oh) * *ow_n + ow;
                window(c, 0, h, *oh_n, oh, &h0, &h1, &hd);
                window(c, 1, w, *ow_n, ow, &w0, &w1, &wd);
                double acc = c->k == MAX ? -INFINITY : 0;
                int64_t at = -1;
                for (int64_t i = h0; i < h1; i++)
                    for (int64_t j = w0; j < w1; j++) {
                        double v = x[(p * h + i) * w + j];
                        if (c->k != MAX)
                            acc += v;
                        else if (v > acc)
                            acc = v, at = (p * h + i) * w + j;
                    }
                y[o] = c->k == MAX ? acc : acc / (double)(hd * wd);
                for (int64_t i = h0; i < h1; i++)
                    for (int64_t j = w0; j < w1; j++)
                        if (c->k != MAX) gx[(p * h + i) * w + j] += gy[o] / (double)(hd * wd);
                if (c->k == MAX) gx[at] += gy[o];
            }
}

static ct_tensor *run(const pool_case *c, const ct_tensor *x) {
    if (c->k == MAX) return ct_max_pool2d(x, &c->opt);
    if (c->k == AVG) return ct_avg_pool2d(x, &c->opt);
    return ct_adaptive_avg_pool2d(x, c->out[0], c->out[1]);
}

static bool close_all(const ct_tensor *t, const double *expected, double tol) {
    double *v = ref_read(t);
    bool ok = v != NULL;
    for (int64_t i = 0; ok && i < ct_numel(t); i++)
        if (isnan(expected[i]) ? !isnan(v[i])
                               : !(fabs(v[i] - expected[i]) <= tol * (1 + fabs(expected[i])))) {
            fprintf(stderr, "  element %lld: %.9g, expected %.9g\n", (long long)i, v[i],
                    expected[i]);
            ok = false;
        }
    free(v);
    return ok;
}

/* Forward and backward of one case on one dtype. */
static bool pool_check(const pool_case *c, ct_dtype dtype, bool strided, ct_device device) {
    int64_t n = ref_numel(c->ndim, c->shape);
    double *x = malloc(sizeof(double) * (size_t)(4 * n + 8));
    if (!x) return false;
    double *gx = x + n, *y = gx + n, *gy = y + n + 4; /* outputs never outnumber inputs here */
    ref_random(x, n, 31 + (uint64_t)n, -2.0, 2.0);
    ref_random(gy, n, 7, -1.0, 1.0);
    for (int64_t i = 0; i < n; i++) x[i] = ref_round(x[i], dtype), gy[i] = ref_round(gy[i], dtype);
    int64_t oh, ow, yshape[4];
    reference(c, x, gy, y, gx, &oh, &ow);
    memcpy(yshape, c->shape, sizeof yshape);
    yshape[c->ndim - 2] = oh;
    yshape[c->ndim - 1] = ow;
    ct_tensor *tx = strided ? ref_tensor_strided(x, c->ndim, c->shape, dtype, device)
                            : ref_tensor(x, c->ndim, c->shape, dtype, device);
    ct_tensor *tg = ref_tensor(gy, c->ndim, yshape, dtype, device), *grad = NULL;
    if (tx) tx->requires_grad = true;
    ct_tensor *ty = run(c, tx);
    double tol = dtype == CT_F64 ? 1e-12 : dtype == CT_F32 ? 1e-6 : ref_tolerance(dtype) * 2;
    bool ok = ty && tg && ct_dtype_of(ty) == dtype &&
              memcmp(ct_shape(ty), yshape, sizeof(int64_t) * (size_t)c->ndim) == 0 &&
              close_all(ty, y, tol) && ty->grad_fn;
    ct_no_grad_push();
    ok = ok && ty->grad_fn->backward(ty->grad_fn, tg, &grad) == CT_OK && close_all(grad, gx, tol);
    ct_no_grad_pop();
    ct_release(tx), ct_release(tg), ct_release(ty), ct_release(grad);
    free(x);
    return ok;
}

static const pool_case cases[] = {
    {MAX, 4, {2, 3, 8, 8}, {{2, 2}, {2, 2}, {0, 0}}, {0, 0}},
    {MAX, 4, {2, 3, 7, 9}, {{2, 2}, {2, 2}, {0, 0}}, {0, 0}}, /* a row and a column in no window */
    /* Rows of 23 and 34 windows: whole chunks of a vector row and their tails. */
    {MAX, 4, {2, 2, 6, 46}, {{2, 2}, {2, 2}, {0, 0}}, {0, 0}},
    {MAX, 4, {1, 2, 4, 69}, {{2, 2}, {0, 0}, {0, 0}}, {0, 0}},
    {MAX, 4, {1, 2, 7, 9}, {{3, 3}, {2, 2}, {1, 1}}, {0, 0}},
    {MAX, 3, {2, 6, 5, 0}, {{3, 2}, {1, 0}, {1, 1}}, {0, 0}},
    {AVG, 4, {2, 3, 8, 8}, {{2, 2}, {0, 0}, {0, 0}}, {0, 0}},
    {AVG, 4, {1, 2, 7, 9}, {{3, 3}, {2, 2}, {1, 1}}, {0, 0}},
    {AVG, 3, {2, 6, 5, 0}, {{3, 2}, {1, 3}, {1, 1}}, {0, 0}},
    {ADAPTIVE, 4, {2, 2, 7, 8}, {{0, 0}, {0, 0}, {0, 0}}, {3, 4}},
    {ADAPTIVE, 4, {1, 3, 6, 9}, {{0, 0}, {0, 0}, {0, 0}}, {4, 2}},
    {ADAPTIVE, 3, {2, 5, 3, 0}, {{0, 0}, {0, 0}, {0, 0}}, {7, 1}},
};

DEVICE_TEST(test_nn_pool_matches_reference) {
    ct_dtype dtypes[2] = {CT_F32, CT_F64};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int d = 0; d < 2; d++) {
            if (!pool_check(&cases[i], dtypes[d], d == 1, device))
                ct_test_fail(__FILE__, __LINE__, "case %zu, %s", i, ct_dtype_name(dtypes[d]));
            if (ct_test_failed()) return;
        }
}

DEVICE_TEST(test_nn_pool_half_precision) {
    CHECK(pool_check(&cases[1], CT_F16, false, device));
    CHECK(pool_check(&cases[6], CT_BF16, true, device));
    CHECK(pool_check(&cases[9], CT_F16, false, device));
}

/* Whether two tensors hold the same values, NaNs matching NaNs. */
static bool same_values(const ct_tensor *a, const ct_tensor *b) {
    double *u = ref_read(a), *v = ref_read(b);
    bool ok = u && v && ct_numel(a) == ct_numel(b);
    for (int64_t i = 0; ok && i < ct_numel(a); i++) ok = isnan(u[i]) ? isnan(v[i]) : u[i] == v[i];
    free(u), free(v);
    return ok;
}

/* y and the input gradient of case c on x (which requires grad) for output gradient g. */
static bool pool_with_grad(const pool_case *c, const ct_tensor *x, const ct_tensor *g,
                           ct_tensor **y, ct_tensor **grad) {
    *y = run(c, x);
    *grad = NULL;
    ct_no_grad_push();
    bool ok = *y && (*y)->grad_fn && (*y)->grad_fn->backward((*y)->grad_fn, g, grad) == CT_OK;
    ct_no_grad_pop();
    return ok;
}

/* bf16 pooling on every case: within bf16's tolerance of the float64 reference, and the very
 * values of the f32 path rounded once, forward and backward: where the backend pools bf16 as
 * it is (the CPU: pool2d_native) and where the op layer pools in f32 (CUDA, the fake GPU). */
DEVICE_TEST(test_nn_pool_bf16_matches_f32_path) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const pool_case *c = &cases[i];
        CHECK(pool_check(c, CT_BF16, i % 2 == 1, device));
        int64_t n = ref_numel(c->ndim, c->shape);
        double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
        CHECK(v != NULL);
        ref_random(v, n, 5 + i, -3.0, 3.0);
        if (n > 2) v[1] = NAN; /* a NaN takes its windows on both paths */
        ct_tensor *x16 = ref_tensor(v, c->ndim, c->shape, CT_BF16, device);
        free(v);
        ct_tensor *x32 = x16 ? ct_cast(x16, CT_F32) : NULL;
        ct_tensor *y16 = NULL, *g16 = NULL, *y32 = NULL, *g32 = NULL, *gy16 = NULL, *gy32 = NULL;
        bool ok = x16 && x32 && ct_set_requires_grad(x16, true) == CT_OK &&
                  ct_set_requires_grad(x32, true) == CT_OK;
        ct_tensor *probe = ok ? run(c, x32) : NULL;
        if (probe) {
            gy32 = ct_rand(ct_ndim(probe), ct_shape(probe), CT_F32, device);
            gy16 = gy32 ? ct_cast(gy32, CT_BF16) : NULL;
            ct_release(gy32);
            gy32 = gy16 ? ct_cast(gy16, CT_F32) : NULL; /* bf16 values on both paths */
        }
        ok = ok && gy32 && pool_with_grad(c, x16, gy16, &y16, &g16) &&
             pool_with_grad(c, x32, gy32, &y32, &g32);
        ct_tensor *y_rounded = ok ? ct_cast(y32, CT_BF16) : NULL;
        ct_tensor *g_rounded = ok ? ct_cast(g32, CT_BF16) : NULL;
        /* The engine gives x16 its gradient in bf16: a backend that pools bf16 in f32 hands
         * back the f32 sums of overlapping windows, rounded then, once. */
        ct_tensor *g_given = ok ? ct_cast(g16, CT_BF16) : NULL;
        ok = ok && y_rounded && g_rounded && g_given && ct_dtype_of(y16) == CT_BF16 &&
             same_values(y16, y_rounded) && same_values(g_given, g_rounded);
        ct_release(g_given);
        ct_release(probe), ct_release(x16), ct_release(x32), ct_release(y16), ct_release(g16);
        ct_release(y32), ct_release(g32), ct_release(gy16), ct_release(gy32);
        ct_release(y_rounded), ct_release(g_rounded);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "case %zu", i);
        if (ct_test_failed()) return;
    }
}

/* The CPU pools bf16 as it is (so the test above compares two paths there), and f32 is the
 * compute dtype of the other half-precision type. */
TEST(test_nn_pool_cpu_pools_bf16_natively) {
    int physical;
    const ct__kernel_table *k = ct__kernels(CT_CPU, &physical);
    CHECK(k && k->pool2d_native);
    ct__pool2d_args a = {.kind = CT_POOL_MAX, .dtype = CT_BF16, .planes = 1, .in_h = 4, .in_w = 4};
    CHECK(k->pool2d_native(physical, &a));
    a.dtype = CT_F16;
    CHECK(!k->pool2d_native(physical, &a));
}

/* Max pooling of a 2 x 4 f32 input by 2 x 2 windows: two outputs and the input gradient of
 * ones flowing back. */
static bool max_pool_routes(const double x[8], const double ey[2], const double egrad[8],
                            ct_device device) {
    int64_t shape[4] = {1, 1, 2, 4};
    ct_tensor *t = ref_tensor(x, 4, shape, CT_F32, device), *grad = NULL;
    if (!t) return false;
    t->requires_grad = true;
    ct_tensor *y = ct_max_pool2d(t, &(ct_pool2d_options){.kernel = {2, 2}});
    ct_tensor *g = y ? ct_ones(4, ct_shape(y), CT_F32, device) : NULL;
    bool ok = y && g && y->grad_fn;
    ct_no_grad_push();
    ok = ok && y->grad_fn->backward(y->grad_fn, g, &grad) == CT_OK;
    ct_no_grad_pop();
    ok = ok && close_all(y, ey, 0) && close_all(grad, egrad, 0);
    ct_release(t), ct_release(y), ct_release(g), ct_release(grad);
    return ok;
}

DEVICE_TEST(test_nn_pool_max_routes_to_first_max_and_keeps_nan) {
    /* Window 0: all ties; window 1: a NaN in the first row, then 2. */
    CHECK(max_pool_routes((double[8]){1, 1, 1, NAN, 1, 1, 2, 0}, (double[2]){1, NAN},
                          (double[8]){1, 0, 0, 1, 0, 0, 0, 0}, device));
    /* Window 0: ties across the rows; window 1: a NaN in the second row beats a larger 2. */
    CHECK(max_pool_routes((double[8]){0, 1, 1, 0, 1, 0, NAN, 2}, (double[2]){1, NAN},
                          (double[8]){0, 1, 0, 0, 0, 0, 1, 0}, device));
    /* No NaN in the row (the vector row's ties): all four equal; the first row's pair equal
     * and the second's; a tie across the rows. */
    CHECK(max_pool_routes((double[8]){1, 1, 0, 2, 1, 1, 2, 1}, (double[2]){1, 2},
                          (double[8]){1, 0, 0, 1, 0, 0, 0, 0}, device));
    CHECK(max_pool_routes((double[8]){0, 1, 3, 3, 1, 0, 3, 3}, (double[2]){1, 3},
                          (double[8]){0, 1, 1, 0, 0, 0, 0, 0}, device));
}

/* A window whose gradient is -0 gives its maximum's cell +0, as 0 + (-0) does in the f32 path's
 * sum, on every dtype (bf16's backward on the CPU writes the cells without that sum). */
DEVICE_TEST(test_nn_pool_max_gradient_of_minus_zero_is_plus_zero) {
    ct_dtype dtypes[3] = {CT_F32, CT_BF16, CT_F64};
    for (int d = 0; d < 3; d++) {
        ct_tensor *x = ref_tensor((double[8]){1, 2, 3, 4, 5, 6, 7, 8}, 4, (int64_t[]){1, 1, 2, 4},
                                  dtypes[d], device);
        ct_tensor *gy =
            ref_tensor((double[2]){-0.0, -0.0}, 4, (int64_t[]){1, 1, 1, 2}, dtypes[d], device);
        ct_tensor *grad = NULL;
        CHECK(x && gy);
        x->requires_grad = true;
        ct_tensor *y = ct_max_pool2d(x, &(ct_pool2d_options){.kernel = {2, 2}});
        ct_no_grad_push();
        bool ok = y && y->grad_fn && y->grad_fn->backward(y->grad_fn, gy, &grad) == CT_OK;
        ct_tensor *wide = ok ? ct_cast(grad, CT_F64) : NULL;
        ct_no_grad_pop();
        double v[8] = {0};
        ok = ok && wide && ct_copy_to_host(wide, v, sizeof v) == CT_OK;
        for (int i = 0; ok && i < 8; i++) ok = v[i] == 0 && !signbit(v[i]);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "%s", ct_dtype_name(dtypes[d]));
        ct_release(x), ct_release(gy), ct_release(y), ct_release(grad), ct_release(wide);
    }
}

DEVICE_TEST(test_nn_pool_without_grad_records_nothing) {
    int64_t shape[4] = {1, 1, 4, 4};
    ct_tensor *t = ct_ones(4, shape, CT_F32, device);
    ct_tensor *y = ct_max_pool2d(t, &(ct_pool2d_options){.kernel = {2, 2}});
    double e[4] = {1, 1, 1, 1};
    bool ok = y && y->grad_fn == NULL;
    ct_release(t);
    if (ok) CHECK_TENSOR(y, e);
    ct_release(y);
    CHECK(ok);
}

/* Without grad no indices are kept, and a row longer than the kernel's stack buffer goes in
 * pieces: 2 x 300 inputs, 150 windows, a NaN in window 100's second row. */
DEVICE_TEST(test_nn_pool_max_without_grad_long_rows) {
    double x[600], ey[150];
    for (int i = 0; i < 600; i++) x[i] = (double)((i * 37) % 600) - 300.0;
    x[300 + 200] = NAN;
    for (int o = 0; o < 150; o++) {
        double m = x[2 * o];
        const double rest[3] = {x[2 * o + 1], x[300 + 2 * o], x[300 + 2 * o + 1]};
        for (int k = 0; k < 3; k++) m = isnan(rest[k]) || rest[k] > m ? rest[k] : m;
        ey[o] = m;
    }
    ct_tensor *t = ref_tensor(x, 4, (int64_t[]){1, 1, 2, 300}, CT_F32, device);
    ct_tensor *y = t ? ct_max_pool2d(t, &(ct_pool2d_options){.kernel = {2, 2}}) : NULL;
    CHECK(y && y->grad_fn == NULL && close_all(y, ey, 0));
    ct_release(t), ct_release(y);
}

/* ---- gradient checks (finite differences through ct_backward) ---- */

static ct_tensor *apply_pool(ct_tensor *const *in, void *context) { return run(context, in[0]); }

DEVICE_TEST(test_nn_pool_gradcheck) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const pool_case *c = &cases[i];
        int64_t n = ref_numel(c->ndim, c->shape);
        double *v = malloc(sizeof(double) * (size_t)n);
        CHECK_NOT_NULL(v);
        /* Distinct values, so that no window's maximum is within eps of a tie. */
        for (int64_t j = 0; j < n; j++) v[j] = (double)((j * 37) % n) / (double)n - 0.5;
        ct_tensor *x = ref_tensor(v, c->ndim, c->shape, CT_F64, device);
        free(v);
        CHECK_NOT_NULL(x);
        ct_set_requires_grad(x, true);
        bool ok = ct_gradcheck(apply_pool, 1, &x, (void *)c, 1e-6, 1e-7, 1e-5);
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "case %zu", i);
        if (!ok) return;
    }
}

DEVICE_TEST(test_nn_pool_errors) {
    int64_t shape[4] = {1, 1, 4, 4};
    ct_tensor *x = ct_zeros(4, shape, CT_F32, device), *xi = ct_zeros(4, shape, CT_I64, device);
    ct_tensor *x2 = ct_zeros(2, shape + 2, CT_F32, device);
    CHECK(x && xi && x2);
    ct_tensor *r[8];
    r[0] = ct_max_pool2d(x2, &(ct_pool2d_options){.kernel = {2, 2}});
    bool e0 = ct_last_status() == CT_ERR_SHAPE && strstr(ct_last_error(), "ct_max_pool2d: input");
    ct_clear_error();
    r[1] = ct_avg_pool2d(xi, &(ct_pool2d_options){.kernel = {2, 2}});
    bool e1 = ct_last_status() == CT_ERR_DTYPE && strstr(ct_last_error(), "ct_avg_pool2d");
    ct_clear_error();
    r[2] = ct_max_pool2d(x, &(ct_pool2d_options){.kernel = {5, 2}});
    bool e2 = ct_last_status() == CT_ERR_SHAPE && strstr(ct_last_error(), "bigger than");
    ct_clear_error();
    r[3] = ct_max_pool2d(x, &(ct_pool2d_options){.kernel = {2, 2}, .padding = {0, 2}});
    bool e3 = ct_last_status() == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "half the kernel");
    ct_clear_error();
    r[4] = ct_avg_pool2d(x, NULL);
    bool e4 = ct_last_status() == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "kernel size");
    ct_clear_error();
    r[5] = ct_avg_pool2d(x, &(ct_pool2d_options){.kernel = {0, 2}});
    bool e5 = ct_last_status() == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "positive");
    ct_clear_error();
    r[6] = ct_adaptive_avg_pool2d(x, 0, 2);
    bool e6 = ct_last_status() == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "output size");
    ct_clear_error();
    r[7] = ct_adaptive_avg_pool2d(NULL, 2, 2);
    bool e7 =
        ct_last_status() == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "ct_adaptive_avg_pool2d");
    ct_clear_error();
    ct_release(x), ct_release(xi), ct_release(x2);
    for (int i = 0; i < 8; i++) CHECK(r[i] == NULL);
    CHECK(e0 && e1 && e2 && e3 && e4 && e5 && e6 && e7);
}

/* Max pooling's indices are int32: a plane of 2^31 cells or more is refused by name (a view
 * of one element expanded to 65536 x 32768, so no memory is needed). */
DEVICE_TEST(test_nn_pool_max_refuses_planes_past_int32) {
    ct_tensor *one = ct_zeros(4, (int64_t[]){1, 1, 1, 1}, CT_F32, device);
    ct_tensor *huge = one ? ct_expand(one, 4, (int64_t[]){1, 1, 65536, 32768}) : NULL;
    CHECK(huge);
    ct_tensor *r = ct_max_pool2d(huge, &(ct_pool2d_options){.kernel = {2, 2}});
    CHECK(r == NULL && ct_last_status() == CT_ERR_SHAPE &&
          strstr(ct_last_error(), "65536 x 32768 cells") && strstr(ct_last_error(), "int32"));
    ct_clear_error();
    ct_release(one), ct_release(huge);
}

/* Padding around an empty plane makes windows that hold no element of x: refused, as
 * adaptive pooling and PyTorch refuse empty planes (max pooling gave -inf there). */
DEVICE_TEST(test_nn_pool_empty_planes) {
    ct_tensor *no_rows = ct_zeros(4, (int64_t[]){1, 1, 0, 3}, CT_F32, device);
    ct_tensor *no_cols = ct_zeros(3, (int64_t[]){2, 3, 0}, CT_F32, device);
    CHECK(no_rows && no_cols);
    ct_pool2d_options padded = {.kernel = {2, 2}, .stride = {1, 1}, .padding = {1, 1}};
    ct_tensor *r0 = ct_max_pool2d(no_rows, &padded);
    bool e0 = ct_last_status() == CT_ERR_SHAPE &&
              strstr(ct_last_error(), "ct_max_pool2d: input planes of 0 x 3 are empty");
    ct_clear_error();
    ct_tensor *r1 = ct_avg_pool2d(no_cols, &padded);
    bool e1 = ct_last_status() == CT_ERR_SHAPE &&
              strstr(ct_last_error(), "ct_avg_pool2d: input planes of 3 x 0 are empty");
    ct_clear_error();
    bool refused = r0 == NULL && r1 == NULL;
    ct_release(no_rows), ct_release(no_cols), ct_release(r0), ct_release(r1);
    CHECK(refused && e0 && e1);
}

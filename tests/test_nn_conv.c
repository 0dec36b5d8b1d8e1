/* ct_conv2d: forward against a float64 reference computed here by direct loops, over
 * strides, padding, dilation, groups (depthwise too), non-square shapes, batches, bias or
 * none, non-contiguous inputs and every floating dtype; the error paths; and the backward
 * (input, weight and bias gradients) against references of the same loops. */
#include <stdlib.h>
#include <string.h>

#include "autograd/tape_impl.h"
#include "backend/conv_args_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "core/tensor_impl.h"
#include "ct_gradcheck.h"
#include "ct_ref.h"

typedef struct {
    int64_t n, c, h, w, o, kh, kw;
    ct_conv2d_options opt; /* zeros as the library reads them */
    bool bias;
} conv_case;

static int64_t eff(int64_t v, int64_t def) { return v ? v : def; }

static int64_t out_size(const conv_case *k, int axis) {
    int64_t in = axis ? k->w : k->h, kk = axis ? k->kw : k->kh;
    int64_t s = eff(k->opt.stride[axis], 1), p = k->opt.padding[axis];
    int64_t d = eff(k->opt.dilation[axis], 1);
    return (in + 2 * p - d * (kk - 1) - 1) / s + 1;
}

/* Visit every (output, weight tap) pair whose input cell is inside the image: the sum that
 * defines the convolution, in the plainest loops. f(ctx, y_index, x_index, w_index). */
typedef void (*tap_fn)(void *ctx, int64_t yi, int64_t xi, int64_t wi);

static void for_each_tap(const conv_case *k, tap_fn f, void *ctx) {
    int64_t g = eff(k->opt.groups, 1), cg = k->c / g, og = k->o / g;
    int64_t oh_n = out_size(k, 0), ow_n = out_size(k, 1);
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->o; o++)
            for (int64_t oh = 0; oh < oh_n; oh++)
                for (int64_t ow = 0; ow < ow_n; ow++)
                    for (int64_t ci = 0; ci < cg; ci++)
                        for (int64_t i = 0; i < k->kh; i++)
                            for (int64_t j = 0; j < k->kw; j++) {
                                int64_t ih = oh * eff(k->opt.stride[0], 1) - k->opt.padding[0] +
                                             i * eff(k->opt.dilation[0], 1);
                                int64_t iw = ow * eff(k->opt.stride[1], 1) - k->opt.padding[1] +
                                             j * eff(k->opt.dilation[1], 1);
                                if (ih < 0 || ih >= k->h || iw < 0 || iw >= k->w) continue;
                                int64_t c = o / og * cg + ci;
                                f(ctx, ((n * k->o + o) * oh_n + oh) * ow_n + ow,
                                  ((n * k->c + c) * k->h + ih) * k->w + iw,
                                  ((o * cg + ci) * k->kh + i) * k->kw + j);
                            }
}

typedef struct {
    const double *x, *w, *gy;
    double *y, *gx, *gw;
} ref_data;

static void forward_tap(void *ctx, int64_t yi, int64_t xi, int64_t wi) {
    ref_data *r = ctx;
    r->y[yi] += r->x[xi] * r->w[wi];
}

static void backward_tap(void *ctx, int64_t yi, int64_t xi, int64_t wi) {
    ref_data *r = ctx;
    r->gx[xi] += r->gy[yi] * r->w[wi];
    r->gw[wi] += r->gy[yi] * r->x[xi];
}

/* Tensors and reference values of one case: random x, w, b rounded to dtype. */
typedef struct {
    int64_t xs[4], ws[4], ys[4], nx, nw, ny;
    double *x, *w, *b, *y;
} conv_ref;

static bool make_ref(const conv_case *k, ct_dtype dtype, uint64_t seed, conv_ref *r) {
    int64_t g = eff(k->opt.groups, 1);
    int64_t xs[4] = {k->n, k->c, k->h, k->w}, ws[4] = {k->o, k->c / g, k->kh, k->kw};
    int64_t ys[4] = {k->n, k->o, out_size(k, 0), out_size(k, 1)};
    memcpy(r->xs, xs, sizeof xs);
    memcpy(r->ws, ws, sizeof ws);
    memcpy(r->ys, ys, sizeof ys);
    r->nx = ref_numel(4, xs);
    r->nw = ref_numel(4, ws);
    r->ny = ref_numel(4, ys);
    r->x = malloc(sizeof(double) * (size_t)(r->nx + r->nw + k->o + r->ny + 1));
    if (!r->x) return false;
    r->w = r->x + r->nx;
    r->b = r->w + r->nw;
    r->y = r->b + k->o;
    ref_random(r->x, r->nx + r->nw + k->o, seed, -1.0, 1.0);
    for (int64_t i = 0; i < r->nx + r->nw + k->o; i++) r->x[i] = ref_round(r->x[i], dtype);
    for (int64_t i = 0; i < r->ny; i++) r->y[i] = k->bias ? r->b[i / (ys[2] * ys[3]) % k->o] : 0;
    ref_data d = {r->x, r->w, NULL, r->y, NULL, NULL};
    for_each_tap(k, forward_tap, &d);
    return true;
}

/* |actual - expected| <= tol * (1 + |expected|) everywhere (sums of many products round more
 * than one op, so the tolerance is the test's, by dtype). */
static bool close_all(const ct_tensor *t, const double *expected, double tol) {
    double *v = ref_read(t);
    bool ok = v != NULL;
    for (int64_t i = 0; ok && i < ct_numel(t); i++)
        if (!(fabs(v[i] - expected[i]) <= tol * (1 + fabs(expected[i])))) {
            fprintf(stderr, "  element %lld: %.9g, expected %.9g\n", (long long)i, v[i],
                    expected[i]);
            ok = false;
        }
    free(v);
    return ok;
}

/* Under ct_set_matmul_precision("high") f32 may round more (the CPU's Winograd convolutions);
 * the tests that set it run on the CPU alone. */
static double conv_tol(ct_dtype dtype) {
    double f32 = strcmp(ct_get_matmul_precision(), "high") == 0 ? 2e-4 : 2e-5;
    return dtype == CT_F64 ? 1e-12 : dtype == CT_F32 ? f32 : dtype == CT_F16 ? 1e-2 : 5e-2;
}

static const conv_case cases[] = {
    {2, 3, 7, 6, 4, 3, 3, {{1, 1}, {0, 0}, {1, 1}, 1}, true},   /* plain */
    {2, 3, 9, 8, 5, 3, 2, {{2, 2}, {1, 1}, {0, 0}, 0}, true},   /* stride 2, padding, kh != kw */
    {1, 2, 9, 10, 3, 3, 3, {{1, 2}, {2, 1}, {2, 2}, 1}, false}, /* dilation 2, no bias */
    {3, 4, 6, 5, 6, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 2}, true},   /* groups 2 */
    {2, 4, 5, 7, 4, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 4}, true},   /* depthwise */
    {2, 3, 5, 5, 2, 1, 1, {{1, 1}, {0, 0}, {1, 1}, 1}, true},   /* 1x1 */
    {1, 1, 4, 3, 2, 4, 3, {{3, 1}, {0, 0}, {1, 1}, 1}, false},  /* kernel as large as input */
    /* As wide as the input (the CPU's block-shift im2col): shifts of two columns, and
     * fewer output rows than input rows. */
    {2, 3, 8, 6, 4, 5, 3, {{1, 1}, {2, 2}, {1, 2}, 1}, true},
    {2, 2, 8, 6, 3, 3, 3, {{1, 1}, {0, 1}, {1, 1}, 1}, true},
};

/* Larger cases: more channels and pixels per image, so the weight gradient sums many
 * images' partial sums across the CPU's threads. */
static const conv_case large_cases[] = {
    {2, 16, 26, 25, 16, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 2}, true},
    {3, 8, 40, 37, 12, 3, 3, {{2, 1}, {1, 2}, {2, 1}, 1}, false},
    /* Column matrices past the CPU's tile (2^18 elements), so an image goes in tiles of
     * output rows: 37 rows and then 11 ("same"); 22 and 16 (stride 2); one row each, a
     * single row being past the tile. */
    {1, 16, 48, 48, 4, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, true},
    {1, 32, 75, 80, 3, 3, 3, {{2, 2}, {1, 1}, {1, 1}, 1}, false},
    {1, 64, 4, 500, 2, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, true},
};

static bool backward_case(const conv_case *k, ct_dtype dtype, ct_device device);

/* One forward case on one dtype, contiguous or strided input. */
static bool forward_case(const conv_case *k, ct_dtype dtype, bool strided, ct_device device) {
    conv_ref r;
    if (!make_ref(k, dtype, 1000 + (uint64_t)k->o, &r)) return false;
    ct_tensor *x = strided ? ref_tensor_strided(r.x, 4, r.xs, dtype, device)
                           : ref_tensor(r.x, 4, r.xs, dtype, device);
    ct_tensor *w = ref_tensor(r.w, 4, r.ws, dtype, device);
    ct_tensor *b = k->bias ? ref_tensor(r.b, 1, &k->o, dtype, device) : NULL;
    ct_tensor *y = ct_conv2d(x, w, b, &k->opt);
    bool ok = y && ct_dtype_of(y) == dtype && ct_ndim(y) == 4 &&
              memcmp(ct_shape(y), r.ys, sizeof r.ys) == 0 && close_all(y, r.y, conv_tol(dtype));
    ct_release(x);
    ct_release(w);
    ct_release(b);
    ct_release(y);
    free(r.x);
    return ok;
}

DEVICE_TEST(test_nn_conv_forward_matches_reference) {
    ct_dtype dtypes[2] = {CT_F32, CT_F64};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int d = 0; d < 2; d++) {
            if (!forward_case(&cases[i], dtypes[d], false, device))
                ct_test_fail(__FILE__, __LINE__, "case %zu, %s", i, ct_dtype_name(dtypes[d]));
            if (ct_test_failed()) return;
        }
}

DEVICE_TEST(test_nn_conv_large_products_match_reference) {
    for (size_t i = 0; i < sizeof large_cases / sizeof large_cases[0]; i++) {
        CHECK(forward_case(&large_cases[i], CT_F32, false, device));
        CHECK(forward_case(&large_cases[i], CT_F64, true, device));
        CHECK(backward_case(&large_cases[i], CT_F64, device));
    }
}

DEVICE_TEST(test_nn_conv_forward_non_contiguous_input) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i += 2) {
        CHECK(forward_case(&cases[i], CT_F32, true, device));
        CHECK(forward_case(&cases[i], CT_F64, true, device));
    }
}

DEVICE_TEST(test_nn_conv_forward_half_precision) {
    CHECK(forward_case(&cases[1], CT_F16, false, device));
    CHECK(forward_case(&cases[3], CT_BF16, false, device));
}

/* A backend that answers "no f16 here" with an error (the CUDA plugin when cuDNN has no plan;
 * the fake GPU always does) leaves the thread's last failure as it was: none, or the caller's
 * own. */
DEVICE_TEST(test_nn_conv_half_precision_probe_keeps_last_error) {
    ct_clear_error();
    CHECK(forward_case(&cases[1], CT_F16, false, device));
    CHECK(ct_last_status() == CT_OK);
    int64_t xs[4] = {1, 2, 4, 4}, ws[4] = {1, 3, 3, 3};
    ct_tensor *x = ct_ones(4, xs, CT_F16, device), *w = ct_ones(4, ws, CT_F16, device);
    CHECK_NOT_NULL(x);
    CHECK_NOT_NULL(w);
    ct_tensor *bad = ct_conv2d(x, w, NULL, NULL); /* 2 input channels, a weight for 3 */
    ct_status earlier = ct_last_status();
    char message[256];
    snprintf(message, sizeof message, "%s", ct_last_error());
    bool ok = forward_case(&cases[1], CT_F16, false, device);
    ct_release(bad);
    ct_release(x);
    ct_release(w);
    CHECK(ok);
    CHECK(earlier != CT_OK && ct_last_status() == earlier && strcmp(ct_last_error(), message) == 0);
    ct_clear_error();
}

/* Whether a bf16 convolution on device ran on bf16 operands (the backend's own bf16 path)
 * rather than on f32 copies: what its node saved says. */
static bool ran_native_bf16(ct_device device) {
    int64_t xs[4] = {2, 3, 6, 6}, ws[4] = {4, 3, 3, 3};
    ct_tensor *x = ct_ones(4, xs, CT_BF16, device), *w = ct_ones(4, ws, CT_BF16, device);
    if (w) w->requires_grad = true;
    ct_tensor *y = ct_conv2d(x, w, NULL, NULL);
    bool native = y && y->grad_fn && y->grad_fn->saved[1]->dtype == CT_BF16;
    ct_release(x), ct_release(w), ct_release(y);
    return native;
}

/* bf16 forward and backward over every geometry (strides, padding, dilation, groups, no
 * bias, the large cases' threads), against the float64 sums of the same bf16 values; on a
 * CPU with bf16 units these run on oneDNN's bf16 convolutions, elsewhere on f32 copies. */
DEVICE_TEST(test_nn_conv_bf16_matches_reference) {
    bool native = ran_native_bf16(device);
    if (device.type == CT_DEVICE_CPU) CHECK(native == ct_cpu_has_native_bf16());
    printf("    bf16 convolution on %s: %s\n", device.type == CT_DEVICE_CPU ? "cpu" : "cuda",
           native ? "native (bf16 operands)" : "computed in f32");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!forward_case(&cases[i], CT_BF16, i % 2 == 1, device) ||
            !backward_case(&cases[i], CT_BF16, device))
            ct_test_fail(__FILE__, __LINE__, "case %zu", i);
        if (ct_test_failed()) return;
    }
    for (size_t i = 0; i < 2; i++) {
        CHECK(forward_case(&large_cases[i], CT_BF16, false, device));
        CHECK(backward_case(&large_cases[i], CT_BF16, device));
    }
}

DEVICE_TEST(test_nn_conv_forward_large_images) {
    conv_case k = {5, 1, 210, 209, 1, 11, 11, {{1, 1}, {0, 0}, {1, 1}, 1}, true};
    CHECK(forward_case(&k, CT_F32, false, device));
}

DEVICE_TEST(test_nn_conv_null_options_and_empty_batch) {
    int64_t xs[4] = {0, 2, 5, 5}, ws[4] = {3, 2, 3, 3};
    ct_tensor *x = ct_zeros(4, xs, CT_F32, device), *w = ct_ones(4, ws, CT_F32, device);
    ct_tensor *y = ct_conv2d(x, w, NULL, NULL);
    int64_t expect[4] = {0, 3, 3, 3};
    bool ok = y && memcmp(ct_shape(y), expect, sizeof expect) == 0;
    ct_release(x);
    ct_release(w);
    ct_release(y);
    CHECK(ok);
}

/* A convolution with padding 1 of ones x (xs) and weight (ws), with or without a bias,
 * where x or the output is empty: y must be the bias (or zeros), and the node's backward on
 * a random upstream gradient must give zeros for x and the weight and the gradient's sums
 * for the bias. */
typedef struct {
    int64_t xs[4], ws[4], ys[4];
    bool bias;
} empty_case;

static bool empty_conv_case(const empty_case *k, ct_dtype dtype, ct_device device) {
    int64_t ny = ref_numel(4, k->ys), o = k->ws[0];
    double *bias = calloc((size_t)(o + 2 * ny + 2), sizeof(double)), *gy = bias + o + 1;
    double *y_expected = gy + ny + 1, gb[8] = {0};
    if (!bias) return false;
    for (int64_t i = 0; i < o; i++) bias[i] = ref_round(0.25 * (double)i - 1.5, dtype);
    ref_random(gy, ny, 31, -1.0, 1.0);
    for (int64_t i = 0; i < ny; i++) {
        int64_t ch = i / (k->ys[2] * k->ys[3]) % o;
        gy[i] = ref_round(gy[i], dtype);
        y_expected[i] = k->bias ? bias[ch] : 0.0;
        gb[ch] += gy[i];
    }
    ct_tensor *x = ct_ones(4, k->xs, dtype, device), *w = ct_ones(4, k->ws, dtype, device);
    ct_tensor *b = k->bias ? ref_tensor(bias, 1, &o, dtype, device) : NULL;
    ct_tensor *g = ref_tensor(gy, 4, k->ys, dtype, device), *grads[3] = {NULL, NULL, NULL};
    bool ok = x && w && g && (b || !k->bias);
    if (ok) x->requires_grad = w->requires_grad = true;
    if (ok && b) b->requires_grad = true;
    ct_conv2d_options opt = {.padding = {1, 1}};
    ct_tensor *y = ok ? ct_conv2d(x, w, b, &opt) : NULL;
    ok = y && memcmp(ct_shape(y), k->ys, sizeof k->ys) == 0 && close_all(y, y_expected, 0.0);
    ct_no_grad_push();
    ok = ok && y->grad_fn && y->grad_fn->backward(y->grad_fn, g, grads) == CT_OK;
    ct_no_grad_pop();
    double *zeros = calloc((size_t)(ref_numel(4, k->xs) + ref_numel(4, k->ws) + 1), sizeof(double));
    ok = ok && zeros && close_all(grads[0], zeros, 0.0) && close_all(grads[1], zeros, 0.0);
    ok = ok && memcmp(ct_shape(grads[0]), k->xs, sizeof k->xs) == 0;
    ok = ok && (!k->bias || close_all(grads[2], gb, conv_tol(dtype) * 4));
    for (int i = 0; i < 3; i++) ct_release(grads[i]);
    ct_release(x), ct_release(w), ct_release(b), ct_release(g), ct_release(y);
    free(zeros);
    free(bias);
    return ok;
}

/* Empty operands never reach the backend (cuDNN rejects a size of 0): an image of no rows
 * whose padded windows give the bias alone, and a weight of no output channels whose input
 * gradient is zeros. */
DEVICE_TEST(test_nn_conv_empty_image_and_no_output_channels) {
    const empty_case cases_[] = {
        {{2, 3, 0, 4}, {2, 3, 1, 1}, {2, 2, 2, 6}, true},
        {{2, 3, 4, 0}, {3, 3, 3, 1}, {2, 3, 4, 2}, false},
        {{2, 3, 5, 5}, {0, 3, 3, 3}, {2, 0, 5, 5}, true},
    };
    ct_dtype dtypes[2] = {CT_F32, CT_F64};
    for (size_t i = 0; i < sizeof cases_ / sizeof cases_[0]; i++)
        for (int d = 0; d < 2; d++)
            if (!empty_conv_case(&cases_[i], dtypes[d], device)) {
                ct_test_fail(__FILE__, __LINE__, "case %zu, %s", i, ct_dtype_name(dtypes[d]));
                return;
            }
}

/* ---- backward ---- */

/* The node's backward on a random upstream gradient against the reference's gradients of
 * input, weight and bias (sum of the upstream gradient over batch and pixels). */
static bool backward_case(const conv_case *k, ct_dtype dtype, ct_device device) {
    conv_ref r;
    if (!make_ref(k, dtype, 77, &r)) return false;
    double *gy = malloc(sizeof(double) * (size_t)(r.ny + r.nx + r.nw + k->o));
    if (!gy) return free(r.x), false;
    double *gx = gy + r.ny, *gw = gx + r.nx, *gb = gw + r.nw;
    ref_random(gy, r.ny, 5, -1.0, 1.0);
    for (int64_t i = 0; i < r.ny; i++) gy[i] = ref_round(gy[i], dtype);
    memset(gx, 0, sizeof(double) * (size_t)(r.nx + r.nw + k->o));
    for (int64_t i = 0; i < r.ny; i++) gb[i / (r.ys[2] * r.ys[3]) % k->o] += gy[i];
    ref_data d = {r.x, r.w, gy, NULL, gx, gw};
    for_each_tap(k, backward_tap, &d);
    ct_tensor *x = ref_tensor_strided(r.x, 4, r.xs, dtype, device);
    ct_tensor *w = ref_tensor(r.w, 4, r.ws, dtype, device);
    ct_tensor *b = k->bias ? ref_tensor(r.b, 1, &k->o, dtype, device) : NULL;
    ct_tensor *g = ref_tensor(gy, 4, r.ys, dtype, device);
    x->requires_grad = w->requires_grad = true;
    if (b) b->requires_grad = true;
    ct_tensor *y = ct_conv2d(x, w, b, &k->opt), *grads[3] = {NULL, NULL, NULL};
    bool ok = y && y->grad_fn && y->grad_fn->ninputs == (k->bias ? 3 : 2);
    ct_no_grad_push();
    ok = ok && y->grad_fn->backward(y->grad_fn, g, grads) == CT_OK;
    ct_no_grad_pop();
    double tol = conv_tol(dtype) * 4;
    ok = ok && close_all(grads[0], gx, tol) && close_all(grads[1], gw, tol);
    ok = ok && (!k->bias || close_all(grads[2], gb, tol));
    for (int i = 0; i < 3; i++) ct_release(grads[i]);
    ct_release(x), ct_release(w), ct_release(b), ct_release(g), ct_release(y);
    free(r.x);
    free(gy);
    return ok;
}

DEVICE_TEST(test_nn_conv_backward_matches_reference) {
    ct_dtype dtypes[2] = {CT_F32, CT_F64};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int d = 0; d < 2; d++) {
            if (!backward_case(&cases[i], dtypes[d], device))
                ct_test_fail(__FILE__, __LINE__, "case %zu, %s", i, ct_dtype_name(dtypes[d]));
            if (ct_test_failed()) return;
        }
}

DEVICE_TEST(test_nn_conv_backward_large_images) {
    conv_case k = {3, 2, 210, 209, 2, 11, 11, {{1, 1}, {1, 1}, {1, 1}, 2}, true};
    CHECK(backward_case(&k, CT_F32, device));
}

/* The ResNets' convolutions on CIFAR's 32x32 images (a few images): 3x3 stride 1 and 2 with
 * padding 1, and the 1x1 stride-2 projection shortcut, without bias, forward and backward in
 * f32. Under the ctest variants *_on_onednn and *_on_im2col each CPU path meets the same
 * float64 reference, so the two agree. */
DEVICE_TEST(test_nn_conv_resnet_shapes_match_reference) {
    static const conv_case resnet[] = {
        {2, 16, 32, 32, 16, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, false},
        {2, 16, 32, 32, 32, 3, 3, {{2, 2}, {1, 1}, {1, 1}, 1}, false},
        {2, 16, 32, 32, 32, 1, 1, {{2, 2}, {0, 0}, {1, 1}, 1}, false},
        {2, 32, 16, 16, 32, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, false},
        {2, 64, 8, 8, 64, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, false},
        {2, 3, 32, 32, 16, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, false}, /* the stem */
    };
    for (size_t i = 0; i < sizeof resnet / sizeof resnet[0]; i++) {
        if (!forward_case(&resnet[i], CT_F32, false, device) ||
            !backward_case(&resnet[i], CT_F32, device))
            ct_test_fail(__FILE__, __LINE__, "ResNet case %zu", i);
        if (ct_test_failed()) return;
    }
}

DEVICE_TEST(test_nn_conv_backward_only_needed_grads) {
    int64_t xs[4] = {2, 2, 4, 4}, ws[4] = {3, 2, 3, 3};
    ct_tensor *x = ct_ones(4, xs, CT_F32, device), *w = ct_ones(4, ws, CT_F32, device);
    CHECK(x && w);
    w->requires_grad = true;
    ct_tensor *y = ct_conv2d(x, w, NULL, NULL), *grads[2] = {NULL, NULL};
    bool ok = y && y->grad_fn && y->grad_fn->inputs[0] == NULL;
    ct_tensor *g = ok ? ct_ones(4, ct_shape(y), CT_F32, device) : NULL;
    ct_no_grad_push();
    ok = ok && g && y->grad_fn->backward(y->grad_fn, g, grads) == CT_OK;
    ct_no_grad_pop();
    /* Each weight tap sees every output of a 2x2 map over 2 images, all ones: 8. */
    double expected[54];
    for (int i = 0; i < 54; i++) expected[i] = 8;
    ok = ok && grads[0] == NULL && grads[1] && close_all(grads[1], expected, 1e-6);
    ct_release(grads[1]), ct_release(g), ct_release(y), ct_release(x), ct_release(w);
    CHECK(ok);
}

/* ---- gradient checks (finite differences through ct_backward) ---- */

static ct_tensor *apply_conv(ct_tensor *const *in, void *context) {
    const conv_case *k = context;
    return ct_conv2d(in[0], in[1], k->bias ? in[2] : NULL, &k->opt);
}

/* A float64 leaf of the given shape with values in [-1, 1) that requires grad. */
static ct_tensor *leaf(ct_device device, int ndim, const int64_t *shape, uint64_t seed) {
    return ct_gradcheck_leaf(device, ndim, shape, seed, -1.0, 1.0, true);
}

DEVICE_TEST(test_nn_conv_gradcheck) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const conv_case *k = &cases[i];
        int64_t g = eff(k->opt.groups, 1);
        int64_t xs[4] = {k->n, k->c, k->h, k->w}, ws[4] = {k->o, k->c / g, k->kh, k->kw};
        ct_tensor *in[3] = {leaf(device, 4, xs, 3 + i), leaf(device, 4, ws, 13 + i),
                            leaf(device, 1, &k->o, 23 + i)};
        bool ok = in[0] && in[1] && in[2] &&
                  ct_gradcheck(apply_conv, k->bias ? 3 : 2, in, (void *)k, 1e-6, 1e-7, 1e-5);
        for (int j = 0; j < 3; j++) ct_release(in[j]);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "case %zu", i);
        if (!ok) return;
    }
}

/* Input gradient only (the weight a constant), as for a network's first layer's input. */
DEVICE_TEST(test_nn_conv_gradcheck_input_only) {
    const conv_case *k = &cases[3];
    int64_t xs[4] = {k->n, k->c, k->h, k->w}, ws[4] = {k->o, k->c / 2, k->kh, k->kw};
    ct_tensor *in[3] = {leaf(device, 4, xs, 5), leaf(device, 4, ws, 6), leaf(device, 1, &k->o, 7)};
    CHECK(in[0] && in[1] && in[2]);
    ct_set_requires_grad(in[1], false);
    ct_set_requires_grad(in[2], false);
    bool ok = ct_gradcheck(apply_conv, 3, in, (void *)k, 1e-6, 1e-7, 1e-5);
    for (int j = 0; j < 3; j++) ct_release(in[j]);
    CHECK(ok);
}

DEVICE_TEST(test_nn_conv_unbatched_input) {
    const conv_case *k = &cases[1];
    conv_case one = *k;
    one.n = 1;
    conv_ref r;
    CHECK(make_ref(&one, CT_F64, 9, &r));
    ct_tensor *x = ref_tensor(r.x, 3, r.xs + 1, CT_F64, device);
    ct_tensor *w = ref_tensor(r.w, 4, r.ws, CT_F64, device);
    ct_tensor *b = ref_tensor(r.b, 1, &one.o, CT_F64, device);
    ct_tensor *y = ct_conv2d(x, w, b, &one.opt);
    bool ok = y && ct_ndim(y) == 3 && memcmp(ct_shape(y), r.ys + 1, 3 * sizeof(int64_t)) == 0 &&
              close_all(y, r.y, 1e-12);
    ct_release(x), ct_release(w), ct_release(b), ct_release(y);
    free(r.x);
    CHECK(ok);
}

/* ---- errors ---- */

DEVICE_TEST(test_nn_conv_errors) {
    int64_t xs[4] = {1, 4, 5, 5}, ws[4] = {6, 2, 3, 3}, bs[1] = {5};
    ct_tensor *x = ct_zeros(4, xs, CT_F32, device), *w = ct_zeros(4, ws, CT_F32, device);
    ct_tensor *b = ct_zeros(1, bs, CT_F32, device), *xi = ct_zeros(4, xs, CT_I32, device);
    ct_tensor *wd = ct_zeros(4, ws, CT_F64, device), *x3 = ct_zeros(2, xs + 2, CT_F32, device);
    CHECK(x && w && b && xi && wd && x3);
    ct_tensor *r[10];
    r[0] = ct_conv2d(x3, w, NULL, NULL);
    bool e0 = ct_last_status() == CT_ERR_SHAPE && strstr(ct_last_error(), "ct_conv2d: input");
    ct_clear_error();
    r[1] = ct_conv2d(x, w, NULL, NULL); /* 4 channels against 2 per group, groups 1 */
    bool e1 = ct_last_status() == CT_ERR_SHAPE && strstr(ct_last_error(), "input channels");
    ct_clear_error();
    r[2] = ct_conv2d(x, w, NULL, &(ct_conv2d_options){.groups = 3});
    bool e2 = ct_last_status() == CT_ERR_SHAPE && strstr(ct_last_error(), "groups 3 must divide");
    ct_clear_error();
    r[3] = ct_conv2d(x, w, b, &(ct_conv2d_options){.groups = 2});
    bool e3 = ct_last_status() == CT_ERR_SHAPE && strstr(ct_last_error(), "bias must be 1-d");
    ct_clear_error();
    r[4] = ct_conv2d(x, w, NULL, &(ct_conv2d_options){.groups = 2, .dilation = {3, 1}});
    bool e4 = ct_last_status() == CT_ERR_SHAPE && strstr(ct_last_error(), "bigger than");
    ct_clear_error();
    r[5] = ct_conv2d(xi, w, NULL, &(ct_conv2d_options){.groups = 2});
    bool e5 = ct_last_status() == CT_ERR_DTYPE && strstr(ct_last_error(), "floating dtype");
    ct_clear_error();
    r[6] = ct_conv2d(x, wd, NULL, &(ct_conv2d_options){.groups = 2});
    bool e6 = ct_last_status() == CT_ERR_DTYPE && strstr(ct_last_error(), "share one dtype");
    ct_clear_error();
    r[7] = ct_conv2d(x, w, NULL, &(ct_conv2d_options){.stride = {-1, 1}});
    bool e7 = ct_last_status() == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "negative");
    ct_clear_error();
    r[8] = ct_conv2d(NULL, w, NULL, NULL);
    bool e8 = ct_last_status() == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "ct_conv2d");
    ct_clear_error();
    r[9] = ct_conv2d(x, w, NULL, &(ct_conv2d_options){.groups = -2});
    bool e9 = ct_last_status() == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "groups");
    ct_clear_error();
    ct_release(x), ct_release(w), ct_release(b), ct_release(xi), ct_release(wd), ct_release(x3);
    for (int i = 0; i < 10; i++) CHECK(r[i] == NULL);
    CHECK(e0 && e1 && e2 && e3 && e4 && e5 && e6 && e7 && e8 && e9);
}

TEST(test_nn_conv_device_mismatch) {
    if (!ct_cuda_is_available()) {
        ct_test_skip("needs a CUDA device");
        return;
    }
    int64_t xs[4] = {1, 1, 3, 3}, ws[4] = {1, 1, 1, 1};
    ct_tensor *x = ct_zeros(4, xs, CT_F32, CT_CPU);
    ct_tensor *w = ct_zeros(4, ws, CT_F32, (ct_device){CT_DEVICE_CUDA, 0});
    ct_tensor *y = ct_conv2d(x, w, NULL, NULL);
    ct_release(x);
    ct_release(w);
    CHECK(y == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "ct_conv2d");
}

/* The backend's arguments of case k in f32 under the current precision setting. */
static ct__conv2d_args cpu_args(const conv_case *k) {
    ct__conv2d_args a = {.dtype = CT_F32,
                         .batch = k->n,
                         .in_channels = k->c,
                         .in_h = k->h,
                         .in_w = k->w,
                         .out_channels = k->o,
                         .kernel_h = k->kh,
                         .kernel_w = k->kw,
                         .out_h = out_size(k, 0),
                         .out_w = out_size(k, 1),
                         .groups = eff(k->opt.groups, 1),
                         .allow_tf32 = strcmp(ct_get_matmul_precision(), "high") == 0};
    for (int i = 0; i < 2; i++) {
        a.stride[i] = eff(k->opt.stride[i], 1);
        a.padding[i] = k->opt.padding[i];
        a.dilation[i] = eff(k->opt.dilation[i], 1);
    }
    return a;
}

static const conv_case winograd_cases[] = {
    {2, 32, 16, 16, 32, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, true}, /* with bias */
    {3, 64, 8, 8, 64, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, false},
    {2, 32, 9, 7, 48, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, false}, /* odd sizes, 48 out */
};

/* Under "high", f32 3x3 stride-1 convolutions of 32 channels and more run with oneDNN's
 * Winograd algorithm on a CPU that has it (AVX-512; where f32 goes to oneDNN), and meet the
 * float64 reference at "high"'s tolerance, forward and backward; 16 channels, stride 2, 1x1
 * and the default "highest" keep direct. */
TEST(test_nn_conv_winograd_under_high_precision) {
    static const conv_case direct[] = {
        {2, 16, 32, 32, 16, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, false},
        {2, 32, 16, 16, 64, 3, 3, {{2, 2}, {1, 1}, {1, 1}, 1}, false},
        {2, 32, 16, 16, 64, 1, 1, {{1, 1}, {0, 0}, {1, 1}, 1}, false},
    };
    bool has = ct__cpu_conv2d_f32_on_onednn(32) && __builtin_cpu_supports("avx512f");
    ct__conv2d_args full = cpu_args(&winograd_cases[0]);
    CHECK(!ct__cpu_conv2d_dnnl_winograd(&full, false));
    CHECK_OK(ct_set_matmul_precision("high"));
    bool ok = true;
    for (size_t i = 0; ok && i < sizeof winograd_cases / sizeof winograd_cases[0]; i++) {
        ct__conv2d_args a = cpu_args(&winograd_cases[i]);
        ok = ct__cpu_conv2d_dnnl_winograd(&a, false) == has &&
             ct__cpu_conv2d_dnnl_winograd(&a, true) == has &&
             forward_case(&winograd_cases[i], CT_F32, false, CT_CPU) &&
             backward_case(&winograd_cases[i], CT_F32, CT_CPU);
        if (!ok) fprintf(stderr, "  Winograd case %zu\n", i);
    }
    for (size_t i = 0; ok && i < sizeof direct / sizeof direct[0]; i++) {
        ct__conv2d_args a = cpu_args(&direct[i]);
        ok = !ct__cpu_conv2d_dnnl_winograd(&a, false);
        if (!ok) fprintf(stderr, "  direct case %zu\n", i);
    }
    CHECK_OK(ct_set_matmul_precision("highest"));
    CHECK(ok);
}

/* Forward and backward of x and w (requiring grad) into out[0..2], y and the two gradients,
 * as host floats. */
static bool run_into(const ct_tensor *x, const ct_tensor *w, const conv_case *k, float *out[3]) {
    ct_zero_grad((ct_tensor *)x);
    ct_zero_grad((ct_tensor *)w);
    ct_tensor *y = ct_conv2d(x, w, NULL, &k->opt);
    ct_tensor *g = y ? ct_ones(4, ct_shape(y), CT_F32, CT_CPU) : NULL;
    bool ok = g && ct_backward_with(y, g, false) == CT_OK;
    ct_tensor *gx = ok ? ct_grad(x) : NULL, *gw = ok ? ct_grad(w) : NULL;
    ok = gx && gw && ct_copy_to_host(y, out[0], (size_t)ct_numel(y) * sizeof(float)) == CT_OK &&
         ct_copy_to_host(gx, out[1], (size_t)ct_numel(x) * sizeof(float)) == CT_OK &&
         ct_copy_to_host(gw, out[2], (size_t)ct_numel(w) * sizeof(float)) == CT_OK;
    ct_release(gx);
    ct_release(gw);
    ct_release(g);
    ct_release(y);
    return ok;
}

/* The CPU's convolutions give the same bits run after run, Winograd ("high") as direct: the
 * algorithm depends on the shape and the setting, never on a timing, and a batch large enough
 * to split across threads sums the weight gradient in a fixed order. */
TEST(test_nn_conv_cpu_results_repeat_bit_for_bit) {
    const conv_case k = {16, 64, 8, 8, 64, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, false};
    int64_t xs[4] = {k.n, k.c, k.h, k.w}, ws[4] = {k.o, k.c, 3, 3};
    size_t sizes[3] = {(size_t)(k.n * k.o * 64), (size_t)(k.n * k.c * 64), (size_t)(k.o * k.c * 9)};
    ct_tensor *x = ct_rand(4, xs, CT_F32, CT_CPU), *w = ct_rand(4, ws, CT_F32, CT_CPU);
    float *buf = malloc(2 * (sizes[0] + sizes[1] + sizes[2]) * sizeof(float));
    CHECK(x && w && buf);
    ct_set_requires_grad(x, true);
    ct_set_requires_grad(w, true);
    const char *settings[2] = {"highest", "high"};
    bool ok = true;
    for (int s = 0; s < 2 && ok; s++) {
        ok = ct_set_matmul_precision(settings[s]) == CT_OK;
        float *first[3] = {buf, buf + sizes[0], buf + sizes[0] + sizes[1]};
        float *again[3] = {first[2] + sizes[2], first[2] + sizes[2] + sizes[0],
                           first[2] + sizes[2] + sizes[0] + sizes[1]};
        ok = ok && run_into(x, w, &k, first) && run_into(x, w, &k, again);
        for (int i = 0; ok && i < 3; i++) ok = memcmp(first[i], again[i], sizes[i] * 4) == 0;
        if (!ok) fprintf(stderr, "  under \"%s\"\n", settings[s]);
    }
    CHECK_OK(ct_set_matmul_precision("highest"));
    free(buf);
    ct_release(x);
    ct_release(w);
    CHECK(ok);
}

/* CT_F32_CONV picks where f32 convolutions run (the ctest variants *_on_onednn and *_on_im2col
 * run this program under each); unset, a single input channel goes to im2col on CPUs without
 * AVX-512, and `ctensor devices`' kernels line says so. */
TEST(test_nn_conv_f32_path_follows_the_choice) {
    const char *choice = getenv("CT_F32_CONV");
    bool one = ct__cpu_conv2d_f32_on_onednn(1), many = ct__cpu_conv2d_f32_on_onednn(32);
    if (choice && strcmp(choice, "im2col") == 0)
        CHECK(!one && !many);
    else if (choice && strcmp(choice, "onednn") == 0)
        CHECK(one && many);
    else if (many)
        CHECK(one == (bool)__builtin_cpu_supports("avx512f"));
    bool named = strstr(ct_cpu_kernels(), "im2col with 1 input channel") != NULL;
    CHECK(named == (many && !one));
}

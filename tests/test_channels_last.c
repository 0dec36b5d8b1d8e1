/* The channels-last memory format: ct_contiguous_format and ct_is_contiguous_format (strides,
 * the single-channel case, errors), and the ops the ResNets run - conv2d, batch norm with and
 * without its ReLU, elementwise ops, pooling - on channels-last inputs against the same ops on
 * NCHW inputs, in float64 and float32: equal values, channels-last results, equal gradients
 * (whichever layout the output's gradient arrives in), finite-difference checks, and resnet20's
 * forward and gradients with channels-last activations against NCHW ones. On the CPU the
 * convolutions (f32, oneDNN) and batch norms run on the layout itself; so they do on the fake
 * GPU (the CPU's kernels, as the CUDA plugin's cuDNN NHWC convolutions and strided batch
 * norms), which tests the op layer's channels-last path for devices; f64 convolutions, which
 * oneDNN does not take here, run the op layer's NCHW copies. */
#include <math.h>
#include <stdlib.h>

#include <ctensor/autocast.h>
#include <ctensor/optim.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

static ct_tensor *cl(const ct_tensor *t) {
    return ct_contiguous_format(t, CT_FORMAT_CHANNELS_LAST);
}

static double tolerance(ct_dtype dtype) { return dtype == CT_F64 ? 1e-10 : 2e-4; }

/* A leaf of shape with values uniform in [lo, hi) from seed, in dtype on device; channels-last
 * when asked. */
static ct_tensor *leaf(ct_device device, ct_dtype dtype, int ndim, const int64_t *shape,
                       uint64_t seed, bool channels_last) {
    int64_t n = ref_numel(ndim, shape);
    double *v = malloc(sizeof(double) * (size_t)n);
    ref_random(v, n, seed, -2.0, 2.0);
    ct_tensor *t = ref_tensor(v, ndim, shape, dtype, device);
    free(v);
    if (t && channels_last) {
        ct_tensor *c = cl(t);
        ct_release(t);
        t = c;
    }
    if (t) ct_set_requires_grad(t, true);
    return t;
}

TEST(test_channels_last_format_queries) {
    int64_t shape[4] = {2, 3, 4, 5};
    ct_tensor *x = ct_arange(0, 120, 1, CT_F32, CT_CPU);
    ct_tensor *x4 = ct_reshape(x, 4, shape);
    ct_tensor *c = cl(x4);
    CHECK_NOT_NULL(c);
    const int64_t *s = ct_strides(c);
    CHECK(s[0] == 60 && s[1] == 1 && s[2] == 15 && s[3] == 3);
    CHECK(ct_is_contiguous_format(c, CT_FORMAT_CHANNELS_LAST));
    CHECK(!ct_is_contiguous_format(c, CT_FORMAT_CONTIGUOUS) && !ct_is_contiguous(c));
    CHECK(ct_is_contiguous_format(x4, CT_FORMAT_CONTIGUOUS));
    CHECK(!ct_is_contiguous_format(x4, CT_FORMAT_CHANNELS_LAST));
    CHECK(ref_max_diff(c, x4, NULL) == 0.0);
    ct_tensor *again = cl(c); /* already channels-last: itself */
    CHECK(again && ct_shares_storage(again, c) && ct_strides(again)[1] == 1);
    ct_tensor *back = ct_contiguous_format(c, CT_FORMAT_CONTIGUOUS);
    CHECK(back && ct_is_contiguous(back) && ref_max_diff(back, x4, NULL) == 0.0);
    /* One channel: both formats describe the memory; the conversion restrides. */
    ct_tensor *one = ct_zeros(4, (int64_t[]){2, 1, 3, 3}, CT_F32, CT_CPU);
    CHECK(ct_is_contiguous_format(one, CT_FORMAT_CHANNELS_LAST));
    ct_tensor *one_cl = cl(one);
    CHECK(one_cl && ct_strides(one_cl)[1] == 1 && ct_strides(one_cl)[3] == 1);
    CHECK(ct_is_contiguous_format(one_cl, CT_FORMAT_CONTIGUOUS));
    /* Errors. */
    CHECK(!cl(x) && ct_last_status() == CT_ERR_SHAPE);
    CHECK(!ct_contiguous_format(x4, (ct_memory_format)7) && ct_last_status() == CT_ERR_INVALID_ARG);
    CHECK(!ct_is_contiguous_format(x, CT_FORMAT_CHANNELS_LAST));
    CHECK(!ct_is_contiguous_format(NULL, CT_FORMAT_CONTIGUOUS));
    ct_release(x), ct_release(x4), ct_release(c), ct_release(again), ct_release(back);
    ct_release(one), ct_release(one_cl);
}

/* f applied to NCHW and channels-last leaves made from the same values: equal outputs (the
 * channels-last one channels-last when expect_cl), equal gradients of sum(u * f). inputs
 * beyond the first are NCHW tensors shared by both. */
typedef ct_tensor *(*op_fn)(const ct_tensor *x, void *context);

static void check_op(ct_device device, ct_dtype dtype, const int64_t *shape, op_fn f, void *context,
                     bool expect_cl, bool grad_cl, const char *what) {
    ct_tensor *xn = leaf(device, dtype, 4, shape, 11, false);
    ct_tensor *xc = leaf(device, dtype, 4, shape, 11, true);
    CHECK_NOT_NULL(xn);
    CHECK_NOT_NULL(xc);
    ct_tensor *yn = f(xn, context), *yc = f(xc, context);
    CHECK_NOT_NULL(yn);
    CHECK_NOT_NULL(yc);
    double diff = ref_max_diff(yn, yc, NULL);
    if (!(diff <= tolerance(dtype)))
        ct_test_fail(__FILE__, __LINE__, "%s: outputs differ by %g", what, diff);
    if (expect_cl && !ct_is_contiguous_format(yc, CT_FORMAT_CHANNELS_LAST))
        ct_test_fail(__FILE__, __LINE__, "%s: the output is not channels-last", what);
    /* The output's gradient: NCHW for one, channels-last for the other (when 4-d). */
    ct_tensor *u = ct_randn(ct_ndim(yn), ct_shape(yn), dtype, device);
    ct_tensor *uc = ct_ndim(yn) == 4 && grad_cl ? cl(u) : ct_retain(u);
    CHECK_OK(ct_backward_with(yn, u, false));
    CHECK_OK(ct_backward_with(yc, uc, false));
    ct_tensor *gn = ct_grad(xn), *gc = ct_grad(xc);
    diff = ref_max_diff(gn, gc, NULL);
    if (!(diff <= 10 * tolerance(dtype)))
        ct_test_fail(__FILE__, __LINE__, "%s: input gradients differ by %g", what, diff);
    ct_release(xn), ct_release(xc), ct_release(yn), ct_release(yc), ct_release(u);
    ct_release(uc), ct_release(gn), ct_release(gc);
}

typedef struct conv_case {
    ct_tensor *weight, *bias;
    ct_conv2d_options options;
} conv_case;

static ct_tensor *conv_op(const ct_tensor *x, void *context) {
    conv_case *k = context;
    return ct_conv2d(x, k->weight, k->bias, &k->options);
}

DEVICE_TEST(test_channels_last_conv2d_matches_nchw) {
    ct_dtype dtypes[2] = {CT_F64, CT_F32};
    int64_t shape[4] = {3, 5, 9, 8};
    for (int d = 0; d < 2; d++) {
        int64_t wshape[4] = {7, 5, 3, 3}, pshape[4] = {6, 5, 1, 1};
        conv_case three = {leaf(device, dtypes[d], 4, wshape, 3, false),
                           leaf(device, dtypes[d], 1, (int64_t[]){7}, 4, false),
                           {.stride = {2, 1}, .padding = {1, 1}}};
        conv_case point = {leaf(device, dtypes[d], 4, pshape, 5, false), NULL, {.stride = {2, 2}}};
        check_op(device, dtypes[d], shape, conv_op, &three, true, true, "conv 3x3");
        check_op(device, dtypes[d], shape, conv_op, &point, true, false, "conv 1x1");
        int64_t dshape[4] = {10, 1, 3, 3}; /* depthwise, 2 per channel, dilated */
        conv_case depthwise = {leaf(device, dtypes[d], 4, dshape, 6, false),
                               NULL,
                               {.padding = {2, 1}, .dilation = {2, 1}, .groups = 5}};
        check_op(device, dtypes[d], shape, conv_op, &depthwise, true, true, "conv depthwise");
        ct_release(three.weight), ct_release(three.bias), ct_release(point.weight);
        ct_release(depthwise.weight);
        if (ct_test_failed()) return;
    }
}

typedef struct bn_case {
    bool relu, training;
    ct_tensor *rm, *rv, *weight, *bias;
} bn_case;

static ct_tensor *bn_op(const ct_tensor *x, void *context) {
    bn_case *k = context;
    return (k->relu ? ct_batch_norm_relu : ct_batch_norm)(x, k->rm, k->rv, k->weight, k->bias,
                                                          k->training, 0.1, 1e-5);
}

DEVICE_TEST(test_channels_last_batch_norm_matches_nchw) {
    ct_dtype dtypes[2] = {CT_F64, CT_F32};
    /* 3 channels (odd); 24 channels over images of more than one row block; more row blocks
     * than the kernel's chunks (65 blocks of 682 rows), so that a chunk merges two blocks. */
    int64_t shapes[3][4] = {{4, 3, 5, 6}, {3, 24, 11, 13}, {4, 3, 104, 105}};
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 3; s++)
            for (int mode = 0; mode < 4; mode++) {
                int64_t c = shapes[s][1];
                bn_case k[2];
                for (int i = 0; i < 2; i++) {
                    k[i] = (bn_case){mode & 1,
                                     (mode & 2) == 0,
                                     ct_zeros(1, &c, CT_F32, device),
                                     ct_ones(1, &c, CT_F32, device),
                                     leaf(device, dtypes[d], 1, &c, 7, false),
                                     leaf(device, dtypes[d], 1, &c, 8, false)};
                }
                /* The two layouts' runs update their own running statistics alike. */
                ct_tensor *xn = leaf(device, dtypes[d], 4, shapes[s], 11, false);
                ct_tensor *xc = leaf(device, dtypes[d], 4, shapes[s], 11, true);
                ct_tensor *yn = bn_op(xn, &k[0]), *yc = bn_op(xc, &k[1]);
                CHECK(ref_max_diff(yn, yc, NULL) <= tolerance(dtypes[d]));
                CHECK(ct_is_contiguous_format(yc, CT_FORMAT_CHANNELS_LAST));
                CHECK(ref_max_diff(k[0].rm, k[1].rm, NULL) <= 1e-6 &&
                      ref_max_diff(k[0].rv, k[1].rv, NULL) <= 1e-6);
                ct_release(xn), ct_release(xc), ct_release(yn), ct_release(yc);
                check_op(device, dtypes[d], shapes[s], bn_op, &k[0], true, mode & 1, "batch norm");
                for (int i = 0; i < 2; i++) {
                    ct_release(k[i].rm), ct_release(k[i].rv);
                    ct_release(k[i].weight), ct_release(k[i].bias);
                }
                if (ct_test_failed()) return;
            }
}

/* Same-bits runs: the channels-last batch norm is reproducible. */
DEVICE_TEST(test_channels_last_batch_norm_is_reproducible) {
    int64_t shape[4] = {8, 16, 12, 12};
    ct_tensor *x = leaf(device, CT_F32, 4, shape, 5, true);
    ct_tensor *a = ct_batch_norm_relu(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    ct_tensor *b = ct_batch_norm_relu(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    CHECK(ref_max_diff(a, b, NULL) == 0.0);
    ct_release(x), ct_release(a), ct_release(b);
}

static ct_tensor *add_relu_op(const ct_tensor *x, void *context) {
    (void)context;
    ct_tensor *s = ct_mul_scalar(x, 3.0);
    ct_tensor *sum = s ? ct_add(x, s) : NULL;
    ct_tensor *out = sum ? ct_relu(sum) : NULL;
    ct_release(s), ct_release(sum);
    return out;
}

static ct_tensor *avg_op(const ct_tensor *x, void *context) {
    (void)context;
    return ct_adaptive_avg_pool2d(x, 1, 1);
}

static ct_tensor *max_op(const ct_tensor *x, void *context) {
    (void)context;
    return ct_max_pool2d(x, &(ct_pool2d_options){.kernel = {2, 2}});
}

DEVICE_TEST(test_channels_last_elementwise_and_pooling) {
    int64_t shape[4] = {2, 6, 5, 4};
    ct_dtype dtypes[2] = {CT_F64, CT_F32};
    for (int d = 0; d < 2; d++) {
        check_op(device, dtypes[d], shape, add_relu_op, NULL, true, true, "add, relu");
        check_op(device, dtypes[d], shape, avg_op, NULL, true, false, "adaptive average pool");
        check_op(device, dtypes[d], shape, max_op, NULL, true, true, "max pool");
        if (ct_test_failed()) return;
    }
    /* Mixed layouts: the values are right whichever layout the result takes. */
    ct_tensor *a = leaf(device, CT_F32, 4, shape, 1, true),
              *b = leaf(device, CT_F32, 4, shape, 2, false);
    ct_tensor *an = ct_contiguous(a), *s = ct_add(a, b), *sn = ct_add(an, b);
    CHECK(ct_is_contiguous_format(s, CT_FORMAT_CHANNELS_LAST)); /* the first operand's */
    CHECK(ref_max_diff(s, sn, NULL) == 0.0);
    ct_tensor *bias = ct_ones(3, (int64_t[]){6, 1, 1}, CT_F32, device);
    ct_tensor *broadcast = ct_add(a, bias), *broadcast_n = ct_add(an, bias);
    CHECK(ct_is_contiguous_format(broadcast, CT_FORMAT_CHANNELS_LAST));
    CHECK(ref_max_diff(broadcast, broadcast_n, NULL) == 0.0);
    ct_release(a), ct_release(b), ct_release(an), ct_release(s), ct_release(sn);
    ct_release(bias), ct_release(broadcast), ct_release(broadcast_n);
}

static ct_tensor *conv_bn_relu(ct_tensor *const *in, void *context) {
    conv_case *k = context;
    ct_tensor *x = cl(in[0]);
    ct_tensor *y = x ? ct_conv2d(x, in[1], NULL, &k->options) : NULL;
    ct_tensor *z = y ? ct_batch_norm_relu(y, NULL, NULL, in[2], NULL, true, 0.1, 1e-5) : NULL;
    ct_release(x), ct_release(y);
    return z;
}

/* The loss of a leaf-gradient case: sum(relu(x) * u), or sum(x), whose gradient arrives as
 * a broadcast view of a scalar (a view the leaf cannot keep). */
static ct_tensor *leaf_loss(ct_tensor *x, const ct_tensor *u) {
    if (!u) return ct_sum(x, 0, NULL, false);
    ct_tensor *r = ct_relu(x), *ru = r ? ct_mul(r, u) : NULL;
    ct_tensor *loss = ru ? ct_sum(ru, 0, NULL, false) : NULL;
    ct_release(r), ct_release(ru);
    return loss;
}

/* A leaf's gradient is laid out as the leaf is (PyTorch's gradient layout contract):
 * channels-last for a channels-last leaf, contiguous for an NCHW one, whichever layout the
 * gradient arrives in (NCHW, channels-last, a broadcast view), with equal values; a second
 * backward accumulates in the same layout; the grad scaler's unscale and clipping work on it
 * in place. */
DEVICE_TEST(test_channels_last_leaf_gradient_layout) {
    static const ct_dtype dtypes[] = {CT_F32, CT_F64};
    const int64_t shape[4] = {2, 3, 4, 5};
    for (int d = 0; d < 2; d++)
        for (int arrives = 0; arrives < 3; arrives++) { /* u NCHW, u channels-last, no u */
            ct_tensor *xn = leaf(device, dtypes[d], 4, shape, 7, false);
            ct_tensor *xc = leaf(device, dtypes[d], 4, shape, 7, true);
            ct_tensor *u = arrives < 2 ? leaf(device, dtypes[d], 4, shape, 8, arrives == 1) : NULL;
            for (int pass = 0; pass < 2; pass++) {
                ct_tensor *ln = leaf_loss(xn, u), *lc = leaf_loss(xc, u);
                CHECK_OK(ct_backward(ln));
                CHECK_OK(ct_backward(lc));
                ct_release(ln), ct_release(lc);
                ct_tensor *gn = ct_grad(xn), *gc = ct_grad(xc);
                CHECK(gn && ct_is_contiguous(gn));
                CHECK(gc && ct_is_contiguous_format(gc, CT_FORMAT_CHANNELS_LAST) &&
                      !ct_is_contiguous(gc));
                CHECK(gn && gc && ref_max_diff(gn, gc, NULL) == 0.0);
                ct_release(gn), ct_release(gc);
            }
            /* The scaler's unscale and clipping take the channels-last gradient in place. */
            ct_grad_scaler_params p = ct_grad_scaler_params_default();
            ct_grad_scaler *sn = ct_grad_scaler_new(1, &xn, NULL, &p);
            ct_grad_scaler *sc = ct_grad_scaler_new(1, &xc, NULL, &p);
            CHECK_OK(ct_grad_scaler_unscale(sn));
            CHECK_OK(ct_grad_scaler_unscale(sc));
            double norm_n = 0, norm_c = 0;
            CHECK_OK(ct_clip_grad_norm(1, &xn, 1e-6, 2.0, &norm_n));
            CHECK_OK(ct_clip_grad_norm(1, &xc, 1e-6, 2.0, &norm_c));
            ct_tensor *gn = ct_grad(xn), *gc = ct_grad(xc);
            CHECK(norm_n > 0 && fabs(norm_n - norm_c) <= tolerance(dtypes[d]) * norm_n);
            CHECK(gc && ct_is_contiguous_format(gc, CT_FORMAT_CHANNELS_LAST));
            CHECK(gn && gc && ref_max_diff(gn, gc, NULL) <= tolerance(dtypes[d]) * 1e-6);
            ct_release(gn), ct_release(gc);
            ct_grad_scaler_free(sn), ct_grad_scaler_free(sc);
            ct_release(xn), ct_release(xc), ct_release(u);
        }
}

DEVICE_TEST(test_channels_last_gradcheck) {
    ct_tensor *in[3] = {ct_gradcheck_leaf(device, 4, (int64_t[]){2, 3, 5, 4}, 1, -1, 1, true),
                        ct_gradcheck_leaf(device, 4, (int64_t[]){4, 3, 3, 3}, 2, -1, 1, true),
                        ct_gradcheck_leaf(device, 1, (int64_t[]){4}, 3, 0.5, 1.5, true)};
    conv_case k = {NULL, NULL, {.padding = {1, 1}, .stride = {1, 2}}};
    CHECK(ct_gradcheck(conv_bn_relu, 3, in, &k, 1e-6, 1e-6, 1e-4));
    for (int i = 0; i < 3; i++) ct_release(in[i]);
}

/* resnet20's logits and gradients with channels-last activations (the default where the
 * device convolves them natively) against NCHW ones (CT_CHANNELS_LAST=0). */
DEVICE_TEST(test_channels_last_resnet20_matches_nchw) {
    ct_manual_seed(3);
    ct_module *m = ct_nn_resnet20(3, 10);
    CHECK_NOT_NULL(m);
    CHECK_OK(ct_module_to(m, device));
    int64_t shape[4] = {4, 3, 16, 16};
    ct_tensor *x = leaf(device, CT_F32, 4, shape, 9, false);
    ct_tensor *logits[2] = {NULL, NULL}, *grads[2] = {NULL, NULL};
    ct_tensor *params[128];
    int n = ct_module_parameters(m, params, 128);
    for (int run = 0; run < 2; run++) {
        if (run == 0)
            setenv("CT_CHANNELS_LAST", "0", 1);
        else
            unsetenv("CT_CHANNELS_LAST");
        logits[run] = ct_module_forward(m, x);
        CHECK_NOT_NULL(logits[run]);
        ct_tensor *loss = ct_sum(logits[run], 0, NULL, false);
        CHECK_OK(ct_backward(loss));
        ct_release(loss);
        grads[run] = ct_grad(params[0]); /* the stem's weight: every layer's gradient behind it */
        for (int i = 0; i < n; i++) ct_zero_grad(params[i]);
    }
    unsetenv("CT_CHANNELS_LAST");
    CHECK(ref_max_diff(logits[0], logits[1], NULL) <= 1e-4);
    double scale = 0.0;
    double *g = ref_read(grads[0]);
    for (int64_t i = 0; g && i < ct_numel(grads[0]); i++) scale = fmax(scale, fabs(g[i]));
    free(g);
    CHECK(ref_max_diff(grads[0], grads[1], NULL) <= 1e-3 * (1.0 + scale));
    for (int i = 0; i < 2; i++) ct_release(logits[i]), ct_release(grads[i]);
    ct_release(x);
    ct_module_free(m);
}

/* Autocast keeps the layout: the casts to bf16 and back to f32 stay channels-last, and so do
 * the convolution's and batch norm's outputs. */
DEVICE_TEST(test_channels_last_under_autocast) {
    int64_t shape[4] = {2, 8, 6, 6}, wshape[4] = {8, 8, 3, 3}, c = 8;
    ct_tensor *x = leaf(device, CT_F32, 4, shape, 1, true);
    ct_tensor *w = leaf(device, CT_F32, 4, wshape, 2, false);
    CHECK_OK(ct_autocast_push(device.type, CT_BF16));
    ct_tensor *y = ct_conv2d(x, w, NULL, &(ct_conv2d_options){.padding = {1, 1}});
    ct_tensor *rm = ct_zeros(1, &c, CT_F32, device), *rv = ct_ones(1, &c, CT_F32, device);
    ct_tensor *z = y ? ct_batch_norm_relu(y, rm, rv, NULL, NULL, true, 0.1, 1e-5) : NULL;
    CHECK_OK(ct_autocast_pop());
    CHECK_NOT_NULL(z);
    CHECK(ct_dtype_of(y) == CT_BF16 && ct_is_contiguous_format(y, CT_FORMAT_CHANNELS_LAST));
    CHECK(ct_is_contiguous_format(z, CT_FORMAT_CHANNELS_LAST));
    ct_tensor *back = ct_cast(y, CT_F32);
    CHECK(back && ct_is_contiguous_format(back, CT_FORMAT_CHANNELS_LAST) &&
          ref_max_diff(back, y, NULL) == 0);
    ct_release(x), ct_release(w), ct_release(y), ct_release(rm), ct_release(rv), ct_release(z);
    ct_release(back);
}

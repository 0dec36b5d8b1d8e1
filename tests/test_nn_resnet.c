/* The residual networks: parameter counts and PyTorch's state-dict names, output shapes, the
 * forward pass against the same network composed here from float64 ops (training and
 * evaluation, the running statistics too), the basic block's gradients against finite
 * differences and the module's against the float64 composition, and forward and backward
 * under bf16 and f16 autocast, on every device. */
#include <stdlib.h>
#include <string.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

/* The module's tensor named `name` (borrowed), or NULL. */
static ct_tensor *named(const ct_module *m, const char *name) {
    ct_tensor *t;
    const char *entry;
    for (int i = 0; (entry = ct_module_state_at(m, i, &t, NULL)); i++)
        if (strcmp(entry, name) == 0) return t;
    return NULL;
}

TEST(test_nn_resnet_parameter_counts_and_names) {
    ct_module *r20 = ct_nn_resnet20(3, 10), *r18 = ct_nn_resnet18(3, 10);
    ct_module *gray = ct_nn_resnet20(1, 10);
    CHECK_NOT_NULL(r20);
    CHECK_NOT_NULL(r18);
    CHECK_NOT_NULL(gray);
    CHECK(ct_module_parameter_count(r20) == 272474);
    CHECK(ct_module_parameter_count(r18) == 11173962);
    CHECK(ct_module_parameter_count(gray) == 272186);
    const char *present[] = {"conv1.weight",
                             "bn1.running_var",
                             "layer1.0.conv1.weight",
                             "layer1.0.bn1.running_mean",
                             "layer1.2.bn2.num_batches_tracked",
                             "layer2.0.shortcut.0.weight",
                             "layer2.0.shortcut.1.bias",
                             "layer3.2.conv2.weight",
                             "linear.weight",
                             "linear.bias"};
    for (size_t i = 0; i < sizeof present / sizeof *present; i++) CHECK(named(r20, present[i]));
    CHECK(!named(r20, "layer1.0.shortcut.0.weight")); /* an identity shortcut */
    CHECK(!named(r20, "conv1.bias"));                 /* the convolutions have no bias */
    CHECK(!named(r20, "layer4.0.conv1.weight"));
    CHECK(named(r18, "layer4.1.bn2.weight"));
    CHECK(named(r18, "layer4.0.shortcut.1.running_var"));
    CHECK(!named(r18, "layer1.0.shortcut.0.weight"));
    CHECK(ct_size(named(r18, "conv1.weight"), 0) == 64);
    CHECK(ct_size(named(r20, "layer2.0.shortcut.0.weight"), 3) == 1);
    /* 20 weighted layers: 19 convolutions of 3x3 and the classifier. */
    int convs = 0;
    const char *entry;
    ct_tensor *t;
    for (int i = 0; (entry = ct_module_state_at(r20, i, &t, NULL)); i++)
        convs += ct_ndim(t) == 4 && ct_size(t, 3) == 3;
    CHECK(convs == 19);
    ct_module_free(r20);
    ct_module_free(r18);
    ct_module_free(gray);
    CHECK(!ct_nn_resnet20(0, 10));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_nn_resnet20: in_channels is 0");
    CHECK(!ct_nn_resnet18(3, -1));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_nn_resnet18: classes is -1");
    CHECK(!ct_nn_basic_block(16, 16, 0));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_nn_basic_block: stride is 0");
}

/* Logits of the right shape, on the device, for RGB 32x32, gray 28x28 and an odd size. */
DEVICE_TEST(test_nn_resnet_output_shapes) {
    struct {
        bool r18;
        int64_t channels, size, classes;
    } cases[] = {{false, 3, 32, 10}, {false, 1, 28, 10}, {false, 3, 9, 7}, {true, 3, 32, 100}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ct_manual_seed(k);
        ct_module *m = cases[k].r18 ? ct_nn_resnet18(cases[k].channels, cases[k].classes)
                                    : ct_nn_resnet20(cases[k].channels, cases[k].classes);
        CHECK_NOT_NULL(m);
        CHECK_OK(ct_module_to(m, device));
        ct_scope_begin();
        int64_t shape[4] = {2, cases[k].channels, cases[k].size, cases[k].size};
        ct_tensor *y = ct_module_forward(m, ct_randn(4, shape, CT_F32, device));
        CHECK_NOT_NULL(y);
        CHECK(ct_ndim(y) == 2 && ct_size(y, 0) == 2 && ct_size(y, 1) == cases[k].classes);
        CHECK(ct_device_equal(ct_device_of(y), device));
        ct_scope_end();
        ct_module_free(m);
    }
}

/* ---- the float64 composition ---- */

/* The module's tensor `prefix``name` as a new float64 tensor (a copy). */
static ct_tensor *param64(const ct_module *m, const char *prefix, const char *name) {
    char full[128];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    ct_tensor *t = named(m, full);
    return t ? ct_cast(t, CT_F64) : NULL;
}

/* Batch norm `prefix` of m in float64. Training updates `stats` (copies of the running
 * statistics, 2 per layer, kept by the caller's scope) instead of the module's. */
static ct_tensor *bn64(const ct_module *m, const char *prefix, const ct_tensor *x, bool training,
                       ct_tensor **stats) {
    stats[0] = param64(m, prefix, "running_mean");
    stats[1] = param64(m, prefix, "running_var");
    return ct_batch_norm(x, stats[0], stats[1], param64(m, prefix, "weight"),
                         param64(m, prefix, "bias"), training, 0.1, 1e-5);
}

static ct_tensor *conv64(const ct_module *m, const char *prefix, const ct_tensor *x, int64_t stride,
                         int64_t padding) {
    ct_conv2d_options o = {.stride = {stride, stride}, .padding = {padding, padding}};
    return ct_conv2d(x, param64(m, prefix, "weight"), NULL, &o);
}

/* ResNet-20 composed from float64 ops with m's parameters; the copies of the running
 * statistics go to stats (in state-dict order, 2 per batch norm) and their count to *nstats. */
static ct_tensor *resnet20_64(const ct_module *m, const ct_tensor *x, bool training,
                              ct_tensor **stats, int *nstats) {
    int n = 0;
    ct_tensor *h = ct_relu(bn64(m, "bn1.", conv64(m, "conv1.", x, 1, 1), training, &stats[n]));
    n += 2;
    int64_t widths[3] = {16, 32, 64};
    for (int s = 0; s < 3; s++)
        for (int b = 0; b < 3; b++) {
            char p[32], q[80];
            int64_t stride = s && !b ? 2 : 1;
            snprintf(p, sizeof p, "layer%d.%d.", s + 1, b);
            snprintf(q, sizeof q, "%sconv1.", p);
            ct_tensor *a = conv64(m, q, h, stride, 1);
            snprintf(q, sizeof q, "%sbn1.", p);
            a = ct_relu(bn64(m, q, a, training, &stats[n]));
            n += 2;
            snprintf(q, sizeof q, "%sconv2.", p);
            a = conv64(m, q, a, 1, 1);
            snprintf(q, sizeof q, "%sbn2.", p);
            a = bn64(m, q, a, training, &stats[n]);
            n += 2;
            ct_tensor *shortcut = h;
            if (stride != 1 || ct_size(h, 1) != widths[s]) {
                snprintf(q, sizeof q, "%sshortcut.0.", p);
                shortcut = conv64(m, q, h, stride, 0);
                snprintf(q, sizeof q, "%sshortcut.1.", p);
                shortcut = bn64(m, q, shortcut, training, &stats[n]);
                n += 2;
            }
            h = ct_relu(ct_add(a, shortcut));
        }
    *nstats = n;
    ct_tensor *pooled = ct_mean(h, 2, (int[]){2, 3}, false);
    return ct_linear(pooled, param64(m, "linear.", "weight"), param64(m, "linear.", "bias"));
}

/* Every element of actual (any dtype) within tol * (1 + |expected|) of expected (f64). */
static bool close_to(const ct_tensor *actual, const ct_tensor *expected, double tol) {
    double *a = ref_read(actual), *e = ref_read(expected);
    bool ok = a && e && ct_numel(actual) == ct_numel(expected);
    for (int64_t i = 0; ok && i < ct_numel(actual); i++) {
        ok = fabs(a[i] - e[i]) <= tol * (1 + fabs(e[i]));
        if (!ok) fprintf(stderr, "element %lld: %.9g, expected %.9g\n", (long long)i, a[i], e[i]);
    }
    free(a);
    free(e);
    return ok;
}

/* The f32 module in training mode (batch statistics, running statistics and the batch count
 * updated) and then in evaluation mode (running statistics) against the float64 composition. */
DEVICE_TEST(test_nn_resnet_forward_against_float64) {
    ct_manual_seed(7);
    ct_module *m = ct_nn_resnet20(3, 10);
    CHECK_NOT_NULL(m);
    CHECK_OK(ct_module_to(m, device));
    ct_scope_begin();
    int64_t shape[4] = {4, 3, 8, 8};
    ct_tensor *x = ct_randn(4, shape, CT_F32, device), *x64 = ct_cast(x, CT_F64);
    ct_tensor *stats[64];
    int nstats = 0;
    ct_tensor *expected = resnet20_64(m, x64, true, stats, &nstats);
    CHECK_NOT_NULL(expected);
    CHECK(nstats == 2 * (1 + 18 + 2));
    ct_tensor *y = ct_module_forward(m, x);
    CHECK(close_to(y, expected, 1e-4));
    /* The running statistics moved as the float64 copies did, in state-dict order. */
    int k = 0;
    const char *entry;
    ct_tensor *t;
    bool buffer;
    for (int i = 0; (entry = ct_module_state_at(m, i, &t, &buffer)); i++) {
        if (!buffer) continue;
        if (strstr(entry, "num_batches_tracked")) {
            double count = 0;
            CHECK_OK(ct_item(t, &count));
            CHECK(count == 1);
            continue;
        }
        CHECK(k < nstats);
        if (!close_to(t, stats[k++], 1e-4)) {
            fprintf(stderr, "running statistic %s differs\n", entry);
            CHECK(false);
        }
    }
    CHECK(k == nstats);
    /* Evaluation: the running statistics normalise, each sample alone gives its own row,
     * and nothing is counted. */
    CHECK_OK(ct_module_eval(m));
    expected = resnet20_64(m, x64, false, stats, &nstats);
    y = ct_module_forward(m, x);
    CHECK(close_to(y, expected, 1e-4));
    ct_tensor *first = ct_module_forward(m, ct_slice(x, 0, 0, 1, 1));
    CHECK(close_to(first, ct_slice(expected, 0, 0, 1, 1), 1e-4));
    double count = 0;
    CHECK_OK(ct_item(named(m, "bn1.num_batches_tracked"), &count));
    CHECK(count == 1);
    /* Training normalises with the batch: the first sample's logits depend on the others. */
    CHECK_OK(ct_module_train(m, true));
    ct_tensor *batch = ct_module_forward(m, x),
              *pair = ct_module_forward(m, ct_slice(x, 0, 0, 2, 1));
    double *a = ref_read(batch), *b = ref_read(pair);
    CHECK(a && b && fabs(a[0] - b[0]) > 1e-6);
    free(a);
    free(b);
    ct_scope_end();
    ct_module_free(m);
}

/* ---- the basic block's gradients ---- */

typedef struct block_case {
    int64_t in_channels, channels, stride;
} block_case;

/* The basic block from float64 ops in training mode: inputs x, then the block's parameters
 * in state-dict order (conv1.weight, bn1.weight, bn1.bias, conv2.weight, bn2.weight,
 * bn2.bias[, shortcut.0.weight, shortcut.1.weight, shortcut.1.bias]). */
static ct_tensor *block64(ct_tensor *const *in, void *context) {
    const block_case *k = context;
    ct_conv2d_options first = {.stride = {k->stride, k->stride}, .padding = {1, 1}};
    ct_conv2d_options second = {.padding = {1, 1}};
    ct_tensor *a = ct_conv2d(in[0], in[1], NULL, &first);
    ct_tensor *b = ct_batch_norm(a, NULL, NULL, in[2], in[3], true, 0.1, 1e-5);
    ct_tensor *c = ct_relu(b);
    ct_tensor *d = ct_conv2d(c, in[4], NULL, &second);
    ct_tensor *e = ct_batch_norm(d, NULL, NULL, in[5], in[6], true, 0.1, 1e-5);
    ct_tensor *p = NULL, *projected = NULL;
    if (k->stride != 1 || k->in_channels != k->channels) {
        ct_conv2d_options o = {.stride = {k->stride, k->stride}};
        p = ct_conv2d(in[0], in[7], NULL, &o);
        projected = ct_batch_norm(p, NULL, NULL, in[8], in[9], true, 0.1, 1e-5);
    }
    ct_tensor *sum = ct_add(e, projected ? projected : in[0]);
    ct_tensor *out = ct_relu(sum);
    ct_release(a), ct_release(b), ct_release(c), ct_release(d), ct_release(e);
    ct_release(p), ct_release(projected), ct_release(sum);
    return out;
}

static const block_case block_cases[] = {{2, 3, 2}, {3, 3, 1}, {2, 4, 1}};

/* Finite differences of the float64 composition: the backward rules of strided
 * convolution, batch norm in training, the residual add and ReLU together. */
DEVICE_TEST(test_nn_resnet_block_gradcheck) {
    for (size_t c = 0; c < sizeof block_cases / sizeof *block_cases; c++) {
        const block_case *k = &block_cases[c];
        bool project = k->stride != 1 || k->in_channels != k->channels;
        int64_t xs[4] = {2, k->in_channels, 5, 5}, w1[4] = {k->channels, k->in_channels, 3, 3};
        int64_t w2[4] = {k->channels, k->channels, 3, 3},
                ws[4] = {k->channels, k->in_channels, 1, 1};
        int64_t ch = k->channels;
        ct_tensor *in[10] = {ct_gradcheck_leaf(device, 4, xs, 1, -1.0, 1.0, true),
                             ct_gradcheck_leaf(device, 4, w1, 2, -0.5, 0.5, true),
                             ct_gradcheck_leaf(device, 1, &ch, 3, 0.5, 1.5, true),
                             ct_gradcheck_leaf(device, 1, &ch, 4, -0.5, 0.5, true),
                             ct_gradcheck_leaf(device, 4, w2, 5, -0.5, 0.5, true),
                             ct_gradcheck_leaf(device, 1, &ch, 6, 0.5, 1.5, true),
                             ct_gradcheck_leaf(device, 1, &ch, 7, -0.5, 0.5, true),
                             ct_gradcheck_leaf(device, 4, ws, 8, -0.5, 0.5, true),
                             ct_gradcheck_leaf(device, 1, &ch, 9, 0.5, 1.5, true),
                             ct_gradcheck_leaf(device, 1, &ch, 10, -0.5, 0.5, true)};
        int n = project ? 10 : 7;
        for (int i = 0; i < n; i++) CHECK_NOT_NULL(in[i]);
        CHECK(ct_gradcheck(block64, n, in, (void *)k, 1e-6, 1e-6, 1e-4));
        for (int i = 0; i < 10; i++) ct_release(in[i]);
    }
}

/* The f32 module's gradients (input and every parameter) against those of the float64
 * composition with the same values, for a fixed output gradient. */
DEVICE_TEST(test_nn_resnet_block_module_gradients) {
    for (size_t c = 0; c < sizeof block_cases / sizeof *block_cases; c++) {
        const block_case *k = &block_cases[c];
        ct_manual_seed(30 + c);
        ct_module *m = ct_nn_basic_block(k->in_channels, k->channels, k->stride);
        CHECK_NOT_NULL(m);
        CHECK_OK(ct_module_to(m, device));
        ct_scope_begin();
        int64_t xs[4] = {3, k->in_channels, 6, 6};
        ct_tensor *x = ct_randn(4, xs, CT_F32, device);
        CHECK_OK(ct_set_requires_grad(x, true));
        ct_tensor *params[9];
        int n = ct_module_parameters(m, params, 9);
        CHECK(n == (k->stride != 1 || k->in_channels != k->channels ? 9 : 6));
        ct_tensor *in64[10] = {ct_detach(ct_cast(x, CT_F64))};
        CHECK_OK(ct_set_requires_grad(in64[0], true));
        for (int i = 0; i < n; i++) {
            in64[i + 1] = ct_detach(ct_cast(params[i], CT_F64));
            CHECK_OK(ct_set_requires_grad(in64[i + 1], true));
        }
        ct_tensor *y = ct_module_forward(m, x), *expected = block64(in64, (void *)k);
        CHECK(close_to(y, expected, 1e-5));
        ct_tensor *u = ct_randn(ct_ndim(y), ct_shape(y), CT_F32, device);
        CHECK_OK(ct_backward_with(y, u, false));
        CHECK_OK(ct_backward_with(expected, ct_cast(u, CT_F64), false));
        CHECK(close_to(ct_grad(x), ct_grad(in64[0]), 1e-4));
        for (int i = 0; i < n; i++) {
            if (!close_to(ct_grad(params[i]), ct_grad(in64[i + 1]), 1e-4)) {
                fprintf(stderr, "the gradient of parameter %d differs\n", i);
                CHECK(false);
            }
        }
        ct_scope_end();
        ct_module_free(m);
    }
}

/* ResNet-20 under bf16 and f16 autocast: convolutions and the classifier in the low dtype,
 * batch norm in f32; logits close to the f32 model's (the low dtype's rounding through 20
 * layers), and a backward pass gives finite f32 gradients for every parameter. */
DEVICE_TEST(test_nn_resnet_autocast) {
    const ct_dtype dtypes[2] = {CT_BF16, CT_F16};
    for (int d = 0; d < 2; d++) {
        ct_manual_seed(11);
        ct_module *m = ct_nn_resnet20(3, 10);
        CHECK_NOT_NULL(m);
        CHECK_OK(ct_module_to(m, device));
        CHECK_OK(ct_module_eval(m)); /* the same normalisation for both passes */
        ct_scope_begin();
        int64_t shape[4] = {2, 3, 16, 16};
        ct_tensor *x = ct_randn(4, shape, CT_F32, device);
        ct_tensor *reference = ct_module_forward(m, x);
        CHECK_OK(ct_autocast_push(device.type, dtypes[d]));
        ct_tensor *low = ct_module_forward(m, x);
        CHECK_OK(ct_autocast_pop());
        CHECK_NOT_NULL(low);
        CHECK(ct_dtype_of(low) == dtypes[d]);
        double tol = dtypes[d] == CT_BF16 ? 0.05 : 0.01;
        CHECK(close_to(low, reference, tol));
        CHECK_OK(ct_backward(ct_sum(ct_cast(low, CT_F32), 0, NULL, false)));
        ct_tensor *params[80];
        int n = ct_module_parameters(m, params, 80);
        CHECK(n == 65);
        for (int i = 0; i < n; i++) {
            ct_tensor *g = ct_grad(params[i]);
            CHECK_NOT_NULL(g);
            CHECK(ct_dtype_of(g) == CT_F32);
            double finite = 0;
            CHECK_OK(ct_item(ct_all(ct_isfinite(g), 0, NULL, false), &finite));
            CHECK(finite == 1);
        }
        ct_scope_end();
        ct_module_free(m);
    }
}

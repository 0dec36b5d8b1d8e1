/* A GPU's channels-last convolution against the CPU's: conv2d forward and backward with
 * channels-last (NHWC) activations on the device (cuDNN's NHWC kernels with a KRSC copy of the
 * filter on the CUDA plugin; the fake GPU's CPU kernels) in f32 and bf16, against the same
 * values convolved in f32 with NCHW tensors on the CPU: output, input, weight and bias
 * gradients. The output must come back channels-last. On the CPU the test has nothing to
 * compare and says so (skipped); without a GPU the runner skips the cuda run by name. */
#include <stdlib.h>

#include "ct_ref.h"
#include "ct_test.h"

/* Values uniform in [-1, 1) from seed, as dtype (bf16 rounds them) on device; `channels_last`
 * lays a 4-d one out channels-last. */
static ct_tensor *leaf(ct_device device, ct_dtype dtype, int ndim, const int64_t *shape,
                       uint64_t seed, bool channels_last) {
    int64_t n = ref_numel(ndim, shape);
    double *v = malloc(sizeof(double) * (size_t)n);
    ref_random(v, n, seed, -1.0, 1.0);
    ct_tensor *t = ref_tensor(v, ndim, shape, dtype, device);
    free(v);
    if (t && channels_last) {
        ct_tensor *c = ct_contiguous_format(t, CT_FORMAT_CHANNELS_LAST);
        ct_release(t);
        t = c;
    }
    return t;
}

typedef struct conv_geometry {
    const char *name;
    int64_t x[4], w[4];
    ct_conv2d_options options;
} conv_geometry;

/* One geometry in dtype: x (channels-last), weight, bias and the output's gradient made on
 * device and on the CPU from the same values; every result compared. */
static void check_geometry(ct_device device, ct_dtype dtype, const conv_geometry *g) {
    int64_t b = g->w[0];
    ct_tensor *in[2][3];
    ct_device where[2] = {device, CT_CPU};
    for (int d = 0; d < 2; d++) {
        ct_dtype t = d == 0 ? dtype : CT_F32; /* the CPU's from dtype's values, in f32 */
        ct_tensor *x = leaf(where[d], dtype, 4, g->x, 1, d == 0);
        ct_tensor *w = leaf(where[d], dtype, 4, g->w, 2, false);
        ct_tensor *bias = leaf(where[d], dtype, 1, &b, 3, false);
        in[d][0] = x && t != dtype ? ct_cast(x, t) : ct_retain(x);
        in[d][1] = w && t != dtype ? ct_cast(w, t) : ct_retain(w);
        in[d][2] = bias && t != dtype ? ct_cast(bias, t) : ct_retain(bias);
        ct_release(x), ct_release(w), ct_release(bias);
        for (int i = 0; i < 3; i++) {
            CHECK_NOT_NULL(in[d][i]);
            CHECK_OK(ct_set_requires_grad(in[d][i], true));
        }
    }
    ct_tensor *y[2], *grads[2][3];
    for (int d = 0; d < 2; d++) {
        y[d] = ct_conv2d(in[d][0], in[d][1], in[d][2], &g->options);
        CHECK_NOT_NULL(y[d]);
    }
    if (!ct_is_contiguous_format(y[0], CT_FORMAT_CHANNELS_LAST))
        ct_test_fail(__FILE__, __LINE__, "%s %s: the output is not channels-last", g->name,
                     ct_dtype_name(dtype));
    ct_tensor *u_cpu = leaf(CT_CPU, dtype, 4, ct_shape(y[1]), 4, false);
    ct_tensor *u32 = u_cpu ? ct_cast(u_cpu, CT_F32) : NULL;
    ct_tensor *u_dev = u_cpu ? ct_to(u_cpu, device) : NULL;
    CHECK_OK(ct_backward_with(y[0], u_dev, false));
    CHECK_OK(ct_backward_with(y[1], u32, false));
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 3; i++) grads[d][i] = ct_grad(in[d][i]);
    /* f32: FMA products in another order (f32 stays f32 unless TF32 is allowed); bf16: the
     * output and the gradients rounded to bf16 once (8 bits), products accumulated in f32. */
    double rel = dtype == CT_BF16 ? 1.6e-2 : 2e-5;
    const char *what[4] = {"output", "input gradient", "weight gradient", "bias gradient"};
    const ct_tensor *got[4] = {y[0], grads[0][0], grads[0][1], grads[0][2]};
    const ct_tensor *want[4] = {y[1], grads[1][0], grads[1][1], grads[1][2]};
    for (int i = 0; i < 4; i++) {
        double scale, diff = ref_max_diff(got[i], want[i], &scale);
        if (!(diff <= rel * (1.0 + scale)))
            ct_test_fail(__FILE__, __LINE__,
                         "%s %s: the %s differs from the CPU's by %g (scale %g)", g->name,
                         ct_dtype_name(dtype), what[i], diff, scale);
    }
    for (int d = 0; d < 2; d++) {
        ct_release(y[d]);
        for (int i = 0; i < 3; i++) ct_release(in[d][i]), ct_release(grads[d][i]);
    }
    ct_release(u_cpu), ct_release(u32), ct_release(u_dev);
}

DEVICE_TEST(test_conv2d_channels_last_gpu_matches_cpu) {
    if (device.type == CT_DEVICE_CPU) {
        ct_test_skip("compares a GPU's channels-last convolution with the CPU's: runs on cuda");
        return;
    }
    const conv_geometry geometries[] = {
        {"3x3 padded", {2, 8, 7, 6}, {16, 8, 3, 3}, {.padding = {1, 1}}},
        {"1x1 strided", {3, 16, 8, 8}, {8, 16, 1, 1}, {.stride = {2, 2}}},
        {"3x3 grouped", {2, 16, 6, 6}, {16, 8, 3, 3}, {.padding = {1, 1}, .groups = 2}},
    };
    ct_dtype dtypes[2] = {CT_F32, CT_BF16};
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < sizeof geometries / sizeof geometries[0]; i++)
            check_geometry(device, dtypes[d], &geometries[i]);
}

/* Kernel arguments of the convolution and pooling family (conv2d, max/avg/adaptive-avg
 * pool2d), forward and backward, shared by the op layer (src/ops/conv.c, pool.c) and the
 * backends. Every tensor arrives contiguous in NCHW layout and of `dtype`, which is CT_F32 or
 * CT_F64: the op layer makes views contiguous and computes f16/bf16 in f32, except a
 * convolution the backend's conv2d_native accepts, which arrives in f16 or bf16, and the
 * activations of a convolution or pooling with channels_last, which arrive in NHWC memory. */
#ifndef CT_CONV_ARGS_IMPL_H
#define CT_CONV_ARGS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctensor/dtype.h"

/* y (batch, out_channels, out_h, out_w) = conv(x (batch, in_channels, in_h, in_w),
 * weight (out_channels, in_channels / groups, kernel_h, kernel_w)) + bias (out_channels).
 * Forward reads x, weight and bias (NULL: none) and writes y. Backward reads y as the
 * gradient of the output, x and weight, and writes each of grad_x and grad_weight that is not
 * NULL (overwriting: nothing accumulates); the op layer sums the bias's gradient itself.
 * workspace: scratch of the size the backend's conv2d_workspace asked for (NULL when it
 * asked for none). allow_tf32: f32 may use TF32 (ct_set_matmul_precision("high")), else f32
 * is computed in f32; deterministic: only algorithms whose result does not depend on
 * scheduling (ct_use_deterministic_algorithms). Both are part of what decides a plan; the
 * CPU, deterministic always, reads allow_tf32 alone (Winograd for some f32 shapes:
 * cpu_conv_dnnl.c). */
typedef struct ct__conv2d_args {
    ct_dtype dtype;
    int64_t batch, in_channels, in_h, in_w;
    int64_t out_channels, kernel_h, kernel_w, out_h, out_w;
    int64_t stride[2], padding[2], dilation[2], groups;
    char *x, *weight, *bias, *y;
    char *grad_x, *grad_weight;
    char *workspace;
    size_t workspace_size;
    /* The f32 operands hold bf16 values (a bf16 convolution computed in f32), so the
     * products may run on the CPU's bf16 units without changing a value they read. */
    bool bf16_values;
    bool allow_tf32, deterministic;
    /* x, y, grad_x and the output's gradient are channels-last (NHWC memory; the weight stays
     * OIHW): only where the backend's conv2d_channels_last said yes for the geometry. */
    bool channels_last;
} ct__conv2d_args;

typedef enum ct__pool_kind {
    CT_POOL_MAX,         /* window max; padded cells never win */
    CT_POOL_AVG,         /* window sum / (kernel_h * kernel_w): padded cells count as zeros */
    CT_POOL_ADAPTIVE_AVG /* rows floor(i * in_h / out_h) .. ceil((i + 1) * in_h / out_h) */
} ct__pool_kind;

/* Pooling over `planes` = batch * channels planes of in_h x in_w into out_h x out_w.
 * Forward reads x and writes y (and, for max, indices: the in-plane flat index ih * in_w + iw,
 * as int32 (half the traffic of int64), of each output's first maximum, a NaN counting as the
 * maximum as in PyTorch (the first NaN); indices may be NULL in forward when no backward will
 * follow). Backward reads y as the gradient of the output (and indices, for max) and writes
 * the whole of x as the gradient of the input. kernel, stride and padding are unused by the
 * adaptive kind.
 *
 * channels_last (only where the backend's pool2d_channels_last said yes): x, y, indices and
 * both gradients are channels-last, the (batch, channels, h, w) tensors in NHWC memory, planes
 * = batch * channels; the indices' values stay in-plane flat indices ih * in_w + iw. */
typedef struct ct__pool2d_args {
    ct__pool_kind kind;
    ct_dtype dtype;
    int64_t planes, channels, in_h, in_w, out_h, out_w;
    int64_t kernel[2], stride[2], padding[2];
    char *x, *y;
    int32_t *indices; /* a plane has fewer than 2^31 cells: ct_max_pool2d checks */
    bool channels_last;
} ct__pool2d_args;

#endif

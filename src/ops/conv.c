/* ct_conv2d: 2-d convolution as torch.nn.functional.conv2d (NCHW input, weight
 * (out_channels, in_channels / groups, kh, kw), optional bias), with its backward.
 *
 * A 3-d input is one image (PyTorch's unbatched form). The front door checks ranks, dtypes,
 * channels against groups and the kernel against the padded input, then hands contiguous tensors of
 * the compute dtype (f64, else f32: f16 and bf16 compute in f32 and round once, except where the
 * backend convolves them as they are: bf16 on a CPU with bf16 units) to the backend. The
 * backend says how much scratch it needs; it comes from the device's pool, so a training loop
 * reuses the same blocks. The autograd node keeps the prepared input and weight; its backward asks
 * the backend for the gradients of exactly the input and weight when they need one, in one
 * call, and sums the bias's itself.
 *
 * Memory format: a channels-last input (ct__is_channels_last) gives a channels-last output, as
 * in PyTorch. Where the backend's conv2d_channels_last says yes, the input, output and their
 * gradients reach it channels-last (the CPU's oneDNN NHWC kernels); elsewhere the operands go
 * as NCHW copies and the output is copied back to channels-last. */
#include <stdio.h>
#include <string.h>

#include "autograd/tape_impl.h"
#include "backend/conv_args_impl.h"
#include "mem/pool_impl.h"
#include "ops/autocast_impl.h"
#include "ops/nn_impl.h"
#include "ops/op_impl.h"

#define OP "ct_conv2d"

typedef struct {
    int64_t stride[2], padding[2], dilation[2], groups;
} conv_params;

/* Options with zeros read as the defaults; negative values are errors. */
static ct_status read_options(const ct_conv2d_options *o, conv_params *p) {
    static const ct_conv2d_options defaults;
    ct_conv2d_options d = o ? *o : defaults;
    for (int i = 0; i < 2; i++) {
        if (d.stride[i] < 0 || d.padding[i] < 0 || d.dilation[i] < 0)
            return ct__error(CT_ERR_INVALID_ARG,
                             OP ": stride %lld, padding %lld and dilation %lld (axis %d) must not "
                                "be negative; use 0 for the defaults (1, 0, 1)",
                             (long long)d.stride[i], (long long)d.padding[i],
                             (long long)d.dilation[i], i);
        p->stride[i] = d.stride[i] ? d.stride[i] : 1;
        p->padding[i] = d.padding[i];
        p->dilation[i] = d.dilation[i] ? d.dilation[i] : 1;
    }
    if (d.groups < 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         OP ": groups is %lld; use a positive count (0 means 1)",
                         (long long)d.groups);
    p->groups = d.groups ? d.groups : 1;
    return CT_OK;
}

static ct_status check_dtypes(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias) {
    if (!ct__is_float(x->dtype))
        return ct__error(CT_ERR_DTYPE,
                         OP ": input is %s; convolution needs a floating dtype (cast "
                            "it with ct_cast)",
                         ct_dtype_name(x->dtype));
    if (w->dtype != x->dtype || (bias && bias->dtype != x->dtype))
        return ct__error(CT_ERR_DTYPE,
                         OP ": input is %s but weight is %s%s%s; input, weight and bias must "
                            "share one dtype",
                         ct_dtype_name(x->dtype), ct_dtype_name(w->dtype), bias ? " and bias " : "",
                         bias ? ct_dtype_name(bias->dtype) : "");
    return CT_OK;
}

/* Channel counts against groups, and the bias's shape. */
static ct_status check_channels(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias,
                                int64_t groups) {
    int64_t c = x->shape[1], o = w->shape[0];
    if (c % groups || o % groups)
        return ct__error(CT_ERR_SHAPE,
                         OP ": groups %lld must divide both in_channels %lld and out_channels "
                            "%lld",
                         (long long)groups, (long long)c, (long long)o);
    if (w->shape[1] != c / groups || c == 0)
        return ct__error(CT_ERR_SHAPE,
                         OP ": weight has %lld input channels per group; the input's %lld "
                            "channels in %lld groups need %lld",
                         (long long)w->shape[1], (long long)c, (long long)groups,
                         (long long)(c / groups));
    if (bias && (bias->ndim != 1 || bias->shape[0] != o))
        return ct__error(CT_ERR_SHAPE,
                         OP ": bias must be 1-d of size out_channels %lld; got %d-d "
                            "of size %lld",
                         (long long)o, bias->ndim, (long long)(bias->ndim ? bias->shape[0] : 1));
    return CT_OK;
}

/* Check shapes and fill the geometry of a (no pointers). */
static ct_status check_shapes(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias,
                              const conv_params *p, ct__conv2d_args *a) {
    if (x->ndim != 4 || w->ndim != 4)
        return ct__error(CT_ERR_SHAPE,
                         OP ": input (N, C, H, W) and weight (O, C / groups, kh, kw) must be 4-d; "
                            "got %d-d input and %d-d weight",
                         x->ndim, w->ndim);
    ct_status status = check_channels(x, w, bias, p->groups);
    if (status != CT_OK) return status;
    int64_t out[2];
    for (int i = 0; i < 2; i++) {
        int64_t k = w->shape[2 + i], n = x->shape[2 + i] + 2 * p->padding[i];
        int64_t span = (k - 1) * p->dilation[i] + 1;
        if (k == 0 || span > n)
            return ct__error(CT_ERR_SHAPE,
                             OP ": kernel size %lld (%lld with dilation) along %s is %s the padded "
                                "input's %lld; use a smaller kernel or more padding",
                             (long long)k, (long long)span, i ? "width" : "height",
                             k == 0 ? "empty against" : "bigger than", (long long)n);
        out[i] = (n - span) / p->stride[i] + 1;
    }
    *a = (ct__conv2d_args){.batch = x->shape[0],
                           .in_channels = x->shape[1],
                           .in_h = x->shape[2],
                           .in_w = x->shape[3],
                           .out_channels = w->shape[0],
                           .kernel_h = w->shape[2],
                           .kernel_w = w->shape[3],
                           .out_h = out[0],
                           .out_w = out[1],
                           .groups = p->groups,
                           .allow_tf32 = strcmp(ct_get_matmul_precision(), "high") == 0,
                           .deterministic = ct_are_deterministic_algorithms_enabled()};
    for (int i = 0; i < 2; i++) {
        a->stride[i] = p->stride[i];
        a->padding[i] = p->padding[i];
        a->dilation[i] = p->dilation[i];
    }
    return CT_OK;
}

/* t as a tensor of dtype contiguous in format (t itself, a new reference, when it already
 * is). */
static ct_tensor *prepared(const ct_tensor *t, ct_dtype dtype, ct_memory_format format) {
    ct_tensor *cast = ct_cast(t, dtype);
    ct_tensor *out = cast ? ct_contiguous_format(cast, format) : NULL;
    ct_release(cast);
    return out;
}

/* Run the forward or backward kernel with workspace from the device's pool. */
static ct_status run_kernel(ct_device device, ct__conv2d_args *a, bool backward) {
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return ct_last_status();
    size_t bytes = 0;
    ct_status status = k->conv2d_workspace(physical, a, backward, &bytes);
    if (status != CT_OK) return status;
    void *ws = NULL;
    if (bytes && (status = ct__pool_alloc(device, bytes, &ws)) != CT_OK) return status;
    a->workspace = ws;
    a->workspace_size = bytes;
    status = backward ? k->conv2d_backward(physical, a) : k->conv2d_forward(physical, a);
    if (ws) ct__pool_free(device, ws, bytes);
    return status;
}

/* y of an input with no rows or columns, whose every window holds padding alone: the bias
 * (or zeros). Empty operands never reach the backend, since cuDNN rejects a size of 0. */
static ct_status padding_only(ct_tensor *y, const ct_tensor *bias, int64_t out_channels) {
    if (!bias) return ct_fill(y, 0.0);
    ct_tensor *column = ct_reshape(bias, 4, (int64_t[]){1, out_channels, 1, 1});
    ct_status status = column ? ct__copy_into(y, column, OP) : ct_last_status();
    ct_release(column);
    return status;
}

/* A new output or gradient of shape for a, channels-last when a says so. */
static ct_tensor *new_activation(ct_device device, ct_dtype dtype, const ct__conv2d_args *a,
                                 const int64_t *shape) {
    int64_t strides[4];
    if (!a->channels_last) return ct__tensor_new(device, dtype, 4, shape);
    ct__channels_last_strides(shape, strides);
    return ct__tensor_new_strided(device, dtype, 4, shape, strides);
}

/* The layout of a's activations. */
static ct_memory_format format_of(const ct__conv2d_args *a) {
    return a->channels_last ? CT_FORMAT_CHANNELS_LAST : CT_FORMAT_CONTIGUOUS;
}

/* The convolution of prepared (compute-dtype, contiguous in a's format) operands. */
static ct_tensor *forward(ct_device device, ct__conv2d_args *a, const ct_tensor *x,
                          const ct_tensor *w, const ct_tensor *bias) {
    int64_t shape[4] = {a->batch, a->out_channels, a->out_h, a->out_w};
    ct_tensor *y = new_activation(device, x->dtype, a, shape);
    if (!y || y->numel == 0) return y;
    if (x->numel == 0) {
        if (padding_only(y, bias, a->out_channels) == CT_OK) return y;
        ct_release(y);
        return NULL;
    }
    a->dtype = x->dtype;
    a->x = ct__data(x);
    a->weight = ct__data(w);
    a->bias = bias ? ct__data(bias) : NULL;
    a->y = ct__data(y);
    if (run_kernel(device, a, false) != CT_OK) {
        ct_release(y);
        return NULL;
    }
    return y;
}

static void save_params(ct__node *node, const conv_params *p) {
    for (int i = 0; i < 2; i++) {
        node->ints[i] = p->stride[i];
        node->ints[2 + i] = p->padding[i];
        node->ints[4 + i] = p->dilation[i];
    }
    node->ints[6] = p->groups;
}

/* Whether the backend takes a (geometry and compute dtype set) channels-last. A "no" may come
 * with the reason as the thread's error (cuDNN without an NHWC plan): the last failure the
 * caller knows of is put back. */
static bool backend_channels_last(ct_device device, const ct__conv2d_args *a) {
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k || !k->conv2d_channels_last) return false;
    ct__kept_error kept;
    ct__error_keep(&kept);
    bool yes = k->conv2d_channels_last(physical, a);
    ct__error_put_back(&kept);
    return yes;
}

/* A new tensor shaped and laid out like t, or NULL (no error) when want is false. */
static ct_tensor *grad_like(bool want, ct_device device, const ct_tensor *t, bool *failed) {
    if (!want || *failed) return NULL;
    ct_tensor *g = ct__tensor_new_like(device, t->dtype, t);
    if (!g) *failed = true;
    return g;
}

/* The bias's gradient: the output's gradient g summed over batch, rows and columns (zeros
 * for an empty batch), by the library's own reduction on every device and for every dtype
 * (its float sums accumulate in f64), as PyTorch does: backends compute only the input's and
 * the weight's gradients (cuDNN's BackwardBias refuses bf16). */
static ct_tensor *bias_grad(const ct_tensor *g) { return ct_sum(g, 3, (int[]){0, 2, 3}, false); }

/* The gradients when the input or the output is empty, without the backend (which is not
 * handed empty operands): the input and the weight get zeros. */
static ct_status empty_grads(ct_tensor *gx, ct_tensor *gw) {
    ct_status status = gx ? ct_fill(gx, 0.0) : CT_OK;
    if (status == CT_OK && gw) status = ct_fill(gw, 0.0);
    return status;
}

/* Gradients of input, weight and bias (those the engine asks for) from grad_out. */
static ct_status conv2d_backward(ct__node *node, const ct_tensor *grad_out, ct_tensor **grad_in) {
    const ct_tensor *x = node->saved[0], *w = node->saved[1];
    conv_params p = {{node->ints[0], node->ints[1]},
                     {node->ints[2], node->ints[3]},
                     {node->ints[4], node->ints[5]},
                     node->ints[6]};
    ct__conv2d_args a;
    ct_status status = check_shapes(x, w, NULL, &p, &a);
    if (status != CT_OK) return status;
    ct_device device = x->storage->device;
    a.channels_last = node->ints[7] != 0;
    bool failed = false;
    ct_tensor *g = prepared(grad_out, x->dtype, format_of(&a));
    failed = g == NULL;
    ct_tensor *gx = grad_like(node->inputs[0] != NULL, device, x, &failed);
    ct_tensor *gw = grad_like(node->inputs[1] != NULL, device, w, &failed);
    ct_tensor *gb = NULL;
    if (node->ninputs == 3 && node->inputs[2] && !failed) {
        gb = bias_grad(g);
        failed = gb == NULL;
    }
    if (!failed && (x->numel == 0 || a.out_channels == 0)) {
        status = empty_grads(gx, gw);
    } else if (!failed && (gx || gw)) {
        a.dtype = x->dtype;
        /* The forward's dtype (all operands'), when it computed bf16 in f32. */
        a.bf16_values = grad_out->dtype == CT_BF16 && x->dtype == CT_F32;
        a.x = ct__data(x);
        a.weight = ct__data(w);
        a.y = ct__data(g);
        a.grad_x = gx ? ct__data(gx) : NULL;
        a.grad_weight = gw ? ct__data(gw) : NULL;
        status = run_kernel(device, &a, true);
    }
    ct_release(g);
    if (failed || status != CT_OK) {
        ct_release(gx);
        ct_release(gw);
        ct_release(gb);
        return failed ? ct_last_status() : status;
    }
    grad_in[0] = gx;
    grad_in[1] = gw;
    if (node->ninputs == 3) grad_in[2] = gb;
    return CT_OK;
}

/* The dtype the backend computes a (geometry set) of dtype in: f64 and f32 as they are, f16
 * and bf16 as they are where the backend's conv2d_native says so, else f32. A "no" may come
 * with the reason as the thread's error (cuDNN without a plan): the last failure the caller
 * knows of is put back. */
static ct_dtype compute_dtype(ct_device device, ct__conv2d_args *a, ct_dtype dtype) {
    if (dtype == CT_F64 || dtype == CT_F32) return dtype;
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k || !k->conv2d_native) return CT_F32;
    a->dtype = dtype;
    ct__kept_error kept;
    ct__error_keep(&kept);
    bool native = k->conv2d_native(physical, a);
    ct__error_put_back(&kept);
    return native ? dtype : CT_F32;
}

/* Prepare operands, convolve, cast back to the input dtype, record the node. */
static ct_tensor *convolve(ct_device device, const ct_tensor *const *args, int n,
                           ct__conv2d_args *a, const conv_params *p) {
    ct_dtype dtype = args[0]->dtype, compute = compute_dtype(device, a, dtype);
    bool record = ct__grad_needed(n, args), channels_last = ct__is_channels_last(args[0]);
    a->dtype = compute;
    a->bf16_values = dtype == CT_BF16 && compute == CT_F32;
    a->channels_last = channels_last && backend_channels_last(device, a);
    ct_no_grad_push();
    ct_tensor *x = prepared(args[0], compute, format_of(a));
    ct_tensor *w = x ? prepared(args[1], compute, CT_FORMAT_CONTIGUOUS) : NULL;
    ct_tensor *b = n == 3 && w ? prepared(args[2], compute, CT_FORMAT_CONTIGUOUS) : NULL;
    ct_tensor *y = w && (n == 2 || b) ? forward(device, a, x, w, b) : NULL;
    ct_tensor *cast = y ? ct_cast(y, dtype) : NULL;
    ct_tensor *out = cast ? ct_contiguous_format(cast, channels_last ? CT_FORMAT_CHANNELS_LAST
                                                                     : CT_FORMAT_CONTIGUOUS)
                          : NULL;
    ct_no_grad_pop();
    ct_release(cast);
    ct_release(y);
    ct_release(b);
    if (out && record) {
        ct__node *node = ct__node_new(OP, conv2d_backward, n, args);
        if (node) {
            ct__node_save(node, 0, x);
            ct__node_save(node, 1, w);
            save_params(node, p);
            node->ints[7] = a->channels_last;
        }
        out = ct__record(out, node);
    }
    ct_release(x);
    ct_release(w);
    return out;
}

/* An unbatched (C, H, W) input as a batch of one, through shape ops that autograd follows. */
static ct_tensor *conv_unbatched(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                                 const ct_conv2d_options *options) {
    ct_tensor *batch = ct_unsqueeze(x, 0);
    ct_tensor *y = batch ? ct_conv2d(batch, weight, bias, options) : NULL;
    ct_tensor *out = y ? ct_squeeze(y, 0) : NULL;
    ct_release(batch);
    ct_release(y);
    return out;
}

static ct_tensor *conv2d(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                         const ct_conv2d_options *options) {
    const ct_tensor *args[3] = {x, weight, bias};
    int n = bias ? 3 : 2;
    ct_device device;
    if (!ct__check_args(OP, n, args, &device)) return NULL;
    if (x->ndim == 3 && weight->ndim == 4) return conv_unbatched(x, weight, bias, options);
    conv_params p;
    ct__conv2d_args a;
    if (read_options(options, &p) != CT_OK || check_dtypes(x, weight, bias) != CT_OK ||
        check_shapes(x, weight, bias, &p, &a) != CT_OK)
        return NULL;
    return convolve(device, args, n, &a, &p);
}

bool ct__conv2d_channels_last_native(const ct_tensor *x, const ct_tensor *weight,
                                     const ct_conv2d_options *options) {
    const ct_tensor *args[2] = {x, weight};
    ct_device device;
    conv_params p;
    ct__conv2d_args a;
    ct__kept_error kept;
    ct__error_keep(&kept);
    bool native = ct__check_args(OP, 2, args, &device) && read_options(options, &p) == CT_OK &&
                  check_dtypes(x, weight, NULL) == CT_OK &&
                  check_shapes(x, weight, NULL, &p, &a) == CT_OK;
    if (native) {
        a.dtype = compute_dtype(device, &a, x->dtype);
        a.bf16_values = x->dtype == CT_BF16 && a.dtype == CT_F32;
        native = backend_channels_last(device, &a);
    }
    ct__error_put_back(&kept);
    return native;
}

ct_tensor *ct_conv2d(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                     const ct_conv2d_options *options) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_CONV2D, 3, (const ct_tensor **[]){&x, &weight, &bias}))
        return NULL;
    ct_tensor *out = conv2d(x, weight, bias, options);
    ct__autocast_end(&ac);
    return out;
}

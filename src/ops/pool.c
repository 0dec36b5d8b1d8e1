/* 2-d pooling as torch.nn.functional's max_pool2d, avg_pool2d (count_include_pad=True) and
 * adaptive_avg_pool2d, with their backward. Inputs are (N, C, H, W) or (C, H, W): every
 * leading axis is a plane to pool. Operands reach the backend contiguous in the compute
 * dtype (f64, else f32; f16 and bf16 round once at the end, or stay as they are where the
 * backend's pool2d_native says it gives the f32 results without the copies: bf16 on the
 * CPU, between the convolutions of an autocast CNN). Max pooling records the
 * in-plane index of each window's first maximum, which its backward routes the gradient
 * to; the average kinds recompute their windows in backward.
 *
 * Memory format: a channels-last input (ct__is_channels_last) gives a channels-last output, as
 * in PyTorch. Where the backend's pool2d_channels_last says yes, the kernels read and write
 * that layout (input, output, indices and both gradients); elsewhere they pool NCHW copies
 * and the results are copied back to channels-last. */
#include "autograd/tape_impl.h"
#include "backend/conv_args_impl.h"
#include "ops/op_impl.h"

/* Node ints: kind, then kernel, stride, padding (two each), then whether the kernels ran
 * channels-last (the saved indices' layout). */
enum {
    P_KIND,
    P_KERNEL,
    P_STRIDE = P_KERNEL + 2,
    P_PADDING = P_STRIDE + 2,
    P_CHANNELS_LAST = P_PADDING + 2
};

static const char *pool_name(ct__pool_kind kind) {
    return kind == CT_POOL_MAX   ? "ct_max_pool2d"
           : kind == CT_POOL_AVG ? "ct_avg_pool2d"
                                 : "ct_adaptive_avg_pool2d";
}

static ct_status check_input(const char *op, const ct_tensor *x) {
    if (x->ndim != 3 && x->ndim != 4)
        return ct__error(CT_ERR_SHAPE,
                         "%s: input must be 4-d (N, C, H, W) or 3-d (C, H, W); got "
                         "a %d-d tensor",
                         op, x->ndim);
    if (!ct__is_float(x->dtype))
        return ct__error(CT_ERR_DTYPE,
                         "%s: input is %s; pooling needs a floating dtype (cast it "
                         "with ct_cast)",
                         op, ct_dtype_name(x->dtype));
    return CT_OK;
}

/* Window options into a's kernel, stride, padding and output size. */
static ct_status window_geometry(const char *op, const ct_pool2d_options *o, ct__pool2d_args *a) {
    if (!o)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: options are NULL; the kernel size is "
                         "required",
                         op);
    for (int i = 0; i < 2; i++) {
        int64_t k = o->kernel[i], s = o->stride[i] ? o->stride[i] : k, p = o->padding[i];
        int64_t n = i ? a->in_w : a->in_h;
        if (k <= 0 || s < 0 || p < 0)
            return ct__error(CT_ERR_INVALID_ARG,
                             "%s: kernel %lld, stride %lld, padding %lld "
                             "(axis %d): the kernel must be positive, stride and padding not "
                             "negative",
                             op, (long long)k, (long long)o->stride[i], (long long)p, i);
        if (p > k / 2)
            return ct__error(CT_ERR_INVALID_ARG,
                             "%s: padding %lld is more than half the kernel "
                             "size %lld (axis %d); use padding <= kernel / 2",
                             op, (long long)p, (long long)k, i);
        if (n + 2 * p < k)
            return ct__error(CT_ERR_SHAPE,
                             "%s: kernel size %lld is bigger than the padded input's "
                             "%lld along %s; use a smaller kernel or more padding",
                             op, (long long)k, (long long)(n + 2 * p), i ? "width" : "height");
        a->kernel[i] = k;
        a->stride[i] = s;
        a->padding[i] = p;
    }
    if (a->kind == CT_POOL_MAX && a->in_h * a->in_w > INT32_MAX)
        return ct__error(CT_ERR_SHAPE,
                         "%s: a plane of %lld x %lld cells is more than the 2^31 - 1 that "
                         "max pooling's int32 indices reach; pool tiles of it",
                         op, (long long)a->in_h, (long long)a->in_w);
    a->out_h = (a->in_h + 2 * a->padding[0] - a->kernel[0]) / a->stride[0] + 1;
    a->out_w = (a->in_w + 2 * a->padding[1] - a->kernel[1]) / a->stride[1] + 1;
    return CT_OK;
}

static void plane_geometry(const ct_tensor *x, ct__pool_kind kind, ct__pool2d_args *a) {
    *a = (ct__pool2d_args){.kind = kind, .planes = 1, .channels = x->shape[x->ndim - 3]};
    for (int d = 0; d < x->ndim - 2; d++) a->planes *= x->shape[d];
    a->in_h = x->shape[x->ndim - 2];
    a->in_w = x->shape[x->ndim - 1];
}

/* The dtype the backend pools a (geometry and kind set) of dtype in: f64 as it is, f16 and
 * bf16 as they are where the backend's pool2d_native says so, else f32. */
static ct_dtype compute_dtype(ct_device device, ct__pool2d_args *a, ct_dtype dtype) {
    if (dtype == CT_F64 || dtype == CT_F32) return dtype;
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    a->dtype = dtype;
    return k && k->pool2d_native && k->pool2d_native(physical, a) ? dtype : CT_F32;
}

static ct_status run_kernel(ct_device device, const ct__pool2d_args *a, bool backward) {
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return ct_last_status();
    return backward ? k->pool2d_backward(physical, a) : k->pool2d_forward(physical, a);
}

/* Whether the backend pools a (geometry, kind and compute dtype set) of x channels-last. */
static bool native_channels_last(ct_device device, const ct_tensor *x, const ct__pool2d_args *a) {
    if (!ct__is_channels_last(x)) return false;
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    ct__pool2d_args query = *a;
    query.channels_last = true;
    return k && k->pool2d_channels_last && k->pool2d_channels_last(physical, &query);
}

/* t (compute dtype) as the kernels take it: dense in a's layout (t itself where its memory is
 * already that layout's, as a gradient of (N, C, 1, 1) in either format is). */
static ct_tensor *kernel_operand(const ct_tensor *t, const ct__pool2d_args *a) {
    if (!a->channels_last) return ct_contiguous(t);
    if (ct_is_contiguous_format(t, CT_FORMAT_CHANNELS_LAST)) return ct__new_ref(t);
    return ct_contiguous_format(t, CT_FORMAT_CHANNELS_LAST);
}

/* A new tensor of shape for the kernels to write, in a's layout. */
static ct_tensor *kernel_result(ct_device device, ct_dtype dtype, const ct_tensor *x,
                                const int64_t *shape, const ct__pool2d_args *a) {
    int64_t strides[4];
    if (!a->channels_last) return ct__tensor_new(device, dtype, x->ndim, shape);
    ct__channels_last_strides(shape, strides);
    return ct__tensor_new_strided(device, dtype, 4, shape, strides);
}

/* *t (made contiguous) replaced by its channels-last copy when `like` is channels-last, as
 * PyTorch's pooling keeps a channels-last input's layout: nothing to do where the kernels
 * pooled it channels-last, or where *t's memory is already channels-last's (C = 1, or
 * 1 x 1 planes: the global average pool's output). */
static ct_status keep_layout(const ct_tensor *like, ct_tensor **t) {
    if (!*t || !ct__is_channels_last(like) || ct_is_contiguous_format(*t, CT_FORMAT_CHANNELS_LAST))
        return CT_OK;
    ct_tensor *copy = ct_contiguous_format(*t, CT_FORMAT_CHANNELS_LAST);
    if (!copy) return ct_last_status();
    ct_release(*t);
    *t = copy;
    return CT_OK;
}

static ct_status pool_backward(ct__node *node, const ct_tensor *grad_out, ct_tensor **grad_in) {
    const ct_tensor *x = node->inputs[0];
    ct__pool2d_args a;
    plane_geometry(x, (ct__pool_kind)node->ints[P_KIND], &a);
    for (int i = 0; i < 2; i++) {
        a.kernel[i] = node->ints[P_KERNEL + i];
        a.stride[i] = node->ints[P_STRIDE + i];
        a.padding[i] = node->ints[P_PADDING + i];
    }
    a.out_h = grad_out->shape[grad_out->ndim - 2];
    a.out_w = grad_out->shape[grad_out->ndim - 1];
    a.channels_last = node->ints[P_CHANNELS_LAST] != 0;
    ct_device device = x->storage->device;
    ct_dtype compute = compute_dtype(device, &a, x->dtype);
    /* A gradient wider than a native input's dtype is summed in f32, not rounded first. */
    if (compute != CT_F64 && compute != grad_out->dtype) compute = CT_F32;
    ct_tensor *cast = ct_cast(grad_out, compute);
    ct_tensor *g = cast ? kernel_operand(cast, &a) : NULL;
    ct_release(cast);
    ct_tensor *gx = g ? kernel_result(device, compute, x, x->shape, &a) : NULL;
    ct_status status = gx ? CT_OK : ct_last_status();
    if (gx && a.planes * a.out_h * a.out_w == 0) {
        status = ct_fill(gx, 0.0);
    } else if (gx) {
        a.dtype = compute;
        a.x = ct__data(gx);
        a.y = ct__data(g);
        a.indices = node->saved[0] ? (int32_t *)ct__data(node->saved[0]) : NULL;
        status = run_kernel(device, &a, true);
    }
    ct_release(g);
    if (status == CT_OK) status = keep_layout(x, &gx);
    if (status != CT_OK) {
        ct_release(gx);
        return status;
    }
    grad_in[0] = gx;
    return CT_OK;
}

/* Pool x (checked) with the geometry in a; records the node when x requires grad. */
static ct_tensor *pool(ct_device device, const ct_tensor *x, ct__pool2d_args *a) {
    const char *op = pool_name(a->kind);
    bool record = ct__grad_needed(1, &x);
    ct_dtype compute = compute_dtype(device, a, x->dtype);
    int64_t shape[4];
    for (int d = 0; d < x->ndim - 2; d++) shape[d] = x->shape[d];
    shape[x->ndim - 2] = a->out_h;
    shape[x->ndim - 1] = a->out_w;
    a->dtype = compute;
    a->channels_last = native_channels_last(device, x, a);
    ct_no_grad_push();
    ct_tensor *cast = ct_cast(x, compute);
    ct_tensor *cx = cast ? kernel_operand(cast, a) : NULL;
    ct_tensor *y = cx ? kernel_result(device, compute, x, shape, a) : NULL;
    ct_tensor *idx =
        y && record && a->kind == CT_POOL_MAX ? kernel_result(device, CT_I32, x, shape, a) : NULL;
    bool ok = y && (idx || !record || a->kind != CT_POOL_MAX);
    if (ok && y->numel) {
        a->x = ct__data(cx);
        a->y = ct__data(y);
        a->indices = idx ? (int32_t *)ct__data(idx) : NULL;
        ok = run_kernel(device, a, false) == CT_OK;
    }
    ct_tensor *out = ok ? ct_cast(y, x->dtype) : NULL;
    if (out && keep_layout(x, &out) != CT_OK) {
        ct_release(out);
        out = NULL;
    }
    ct_no_grad_pop();
    ct_release(cast);
    ct_release(cx);
    ct_release(y);
    if (out && record) {
        ct__node *node = ct__node_new(op, pool_backward, 1, &x);
        if (node) {
            ct__node_save(node, 0, idx);
            node->ints[P_KIND] = a->kind;
            for (int i = 0; i < 2; i++) {
                node->ints[P_KERNEL + i] = a->kernel[i];
                node->ints[P_STRIDE + i] = a->stride[i];
                node->ints[P_PADDING + i] = a->padding[i];
            }
            node->ints[P_CHANNELS_LAST] = a->channels_last;
        }
        out = ct__record(out, node);
    }
    ct_release(idx);
    return out;
}

static ct_tensor *window_pool(const ct_tensor *x, const ct_pool2d_options *options,
                              ct__pool_kind kind) {
    const char *op = pool_name(kind);
    ct_device device;
    if (!ct__check_args(op, 1, &x, &device) || check_input(op, x) != CT_OK) return NULL;
    ct__pool2d_args a;
    plane_geometry(x, kind, &a);
    /* Padding would give windows with no element of x (max pooling made them -inf). */
    if (a.in_h == 0 || a.in_w == 0)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: input planes of %lld x %lld are empty; pooling needs at least one "
                        "row and column",
                        op, (long long)a.in_h, (long long)a.in_w);
    if (window_geometry(op, options, &a) != CT_OK) return NULL;
    return pool(device, x, &a);
}

ct_tensor *ct_max_pool2d(const ct_tensor *x, const ct_pool2d_options *options) {
    return window_pool(x, options, CT_POOL_MAX);
}

ct_tensor *ct_avg_pool2d(const ct_tensor *x, const ct_pool2d_options *options) {
    return window_pool(x, options, CT_POOL_AVG);
}

ct_tensor *ct_adaptive_avg_pool2d(const ct_tensor *x, int64_t out_h, int64_t out_w) {
    const char *op = "ct_adaptive_avg_pool2d";
    ct_device device;
    if (!ct__check_args(op, 1, &x, &device) || check_input(op, x) != CT_OK) return NULL;
    ct__pool2d_args a;
    plane_geometry(x, CT_POOL_ADAPTIVE_AVG, &a);
    if (out_h <= 0 || out_w <= 0)
        return ct__fail(CT_ERR_INVALID_ARG, "%s: output size %lld x %lld must be positive", op,
                        (long long)out_h, (long long)out_w);
    if (a.in_h == 0 || a.in_w == 0)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: input planes of %lld x %lld are empty; adaptive "
                        "pooling needs at least one row and column",
                        op, (long long)a.in_h, (long long)a.in_w);
    a.out_h = out_h;
    a.out_w = out_w;
    return pool(device, x, &a);
}

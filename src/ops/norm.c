/* ct_batch_norm, ct_batch_norm_relu and ct_layer_norm, forward and backward, each through one
 * fused kernel per direction. The nodes save the contiguous input, the weight, and the
 * statistics the forward used (per-channel or per-row mean and inverse standard deviation,
 * float64), so the backward reads no running statistic that a later training step may have
 * changed; ct_batch_norm_relu's node also saves its output (detached), whose positive
 * elements are the ReLU's mask.
 *
 * A channels-last input (ct__is_channels_last) gives a channels-last batch norm output. Where
 * the backend's batch_norm_channels_last says yes, the kernels read and write that layout
 * (and the node saves x in it); elsewhere they get NCHW copies and the output is copied to
 * channels-last through ct_contiguous_format, whose gradient passes through. */
#include <string.h>

#include "ops/autocast_impl.h"
#include "ops/grad_impl.h"
#include "ops/nn_impl.h"

/* Check an optional per-channel (batch norm) or per-element (layer norm) parameter: NULL, or
 * floating with the given shape. */
static bool check_param(const char *op, const ct_tensor *p, const char *name, int position,
                        int ndim, const int64_t *shape) {
    if (!p) return true;
    if (!ct__nn_check_float(op, p, position)) return false;
    if (p->ndim == ndim && memcmp(p->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0)
        return true;
    ct__error(CT_ERR_SHAPE,
              "%s: %s (argument %d) has rank %d and %lld elements; it must have the shape of "
              "the normalised axes (%lld elements over %d axes)",
              op, name, position, p->ndim, (long long)p->numel,
              (long long)ct__nn_numel(shape, 0, ndim), ndim);
    return false;
}

/* The present tensor arguments (NULLs dropped), for the device check. */
static int present(int n, const ct_tensor *const *all, const ct_tensor **out) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if (all[i]) out[m++] = all[i];
    return m;
}

/* New tensors for the gradients the node's inputs need (x, weight, bias), shaped like the
 * saved x and weight; false (none made) on failure. */
static bool new_grads(ct__node *node, const ct_tensor *x, const ct_tensor *w, ct_tensor **g) {
    ct_device device = x->storage->device;
    g[0] = node->inputs[0] ? ct__tensor_new_like(device, x->dtype, x) : NULL;
    g[1] = node->inputs[1] ? ct__tensor_new(device, x->dtype, w->ndim, w->shape) : NULL;
    g[2] = node->inputs[2] && w ? ct__tensor_new(device, x->dtype, w->ndim, w->shape) : NULL;
    if (node->inputs[2] && !w) { /* no weight: the bias has the normalised shape */
        const ct_tensor *b = node->inputs[2];
        g[2] = ct__tensor_new(device, x->dtype, b->ndim, b->shape);
    }
    if ((node->inputs[0] && !g[0]) || (node->inputs[1] && !g[1]) || (node->inputs[2] && !g[2])) {
        for (int i = 0; i < 3; i++) ct_release(g[i]);
        return false;
    }
    return true;
}

static char *data_or_null(const ct_tensor *t) { return t ? ct__data(t) : NULL; }

/* t on device in dtype, channels-last when `like` is (ct__is_channels_last), else contiguous. */
static ct_tensor *operand_in(const ct_tensor *t, ct_dtype dtype, ct_device device, const char *op,
                             const ct_tensor *like) {
    if (!ct__is_channels_last(like)) return ct__nn_operand(t, dtype, device, op);
    ct_tensor *on = ct__operand_on(t, device, op);
    ct_tensor *cast = on ? ct_cast(on, dtype) : NULL;
    ct_release(on);
    ct_tensor *out = cast ? ct_contiguous_format(cast, CT_FORMAT_CHANNELS_LAST) : NULL;
    ct_release(cast);
    return out;
}

/* What both norms' backward passes work with: the kernels of the saved x's device, the
 * incoming gradient in x's dtype there, and the new gradients of (x, weight, bias). */
typedef struct norm_backward {
    const ct__kernel_table *kernels;
    int physical;
    ct_tensor *grad_out;
    ct_tensor *grads[3];
} norm_backward;

/* Fills b; false (nothing held) on failure. */
static bool norm_backward_begin(ct__node *node, const ct_tensor *grad_out, norm_backward *b) {
    const ct_tensor *x = node->saved[0], *w = node->saved[1];
    ct_device device = x->storage->device;
    *b = (norm_backward){0};
    b->kernels = ct__kernels(device, &b->physical);
    if (b->kernels) b->grad_out = operand_in(grad_out, x->dtype, device, node->name, x);
    if (b->grad_out && new_grads(node, x, w, b->grads)) return true;
    ct_release(b->grad_out);
    return false;
}

/* Hands the gradients to grad_in when status is CT_OK, else releases them. */
static ct_status norm_backward_end(norm_backward *b, ct_status status, ct_tensor **grad_in) {
    ct_release(b->grad_out);
    for (int i = 0; i < 3; i++) {
        if (status == CT_OK)
            grad_in[i] = b->grads[i];
        else
            ct_release(b->grads[i]);
    }
    return status;
}

/* A node over (x, weight, bias) saving x, weight, mean and invstd (NULL on failure). */
static ct__node *new_norm_node(const char *op, ct__backward_fn backward,
                               const ct_tensor *const *inputs, ct_tensor *const *saved,
                               int64_t flag) {
    ct__node *node = ct__node_new(op, backward, 3, inputs);
    if (node) {
        for (int i = 0; i < 4; i++) ct__node_save(node, i, saved[i]);
        node->ints[0] = flag;
    }
    return node;
}

/* ---- batch norm ---- */

static bool check_batch_norm(const char *op, const ct_tensor *x, const ct_tensor *rm,
                             const ct_tensor *rv, const ct_tensor *w, const ct_tensor *b,
                             bool training) {
    if (!ct__nn_check_float(op, x, 1)) return false;
    if (x->ndim < 2)
        return ct__error(CT_ERR_SHAPE,
                         "%s: x has rank %d; batch norm takes (N, C, ...) with channels on "
                         "axis 1",
                         op, x->ndim),
               false;
    const int64_t *c = &x->shape[1];
    if (!check_param(op, rm, "running_mean", 2, 1, c) ||
        !check_param(op, rv, "running_var", 3, 1, c) || !check_param(op, w, "weight", 4, 1, c) ||
        !check_param(op, b, "bias", 5, 1, c))
        return false;
    if (!training && (!rm || !rv))
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: evaluation (training false) normalises with running_mean and "
                         "running_var, but %s is NULL; pass both, or train",
                         op, rm ? "running_var" : "running_mean"),
               false;
    int64_t per_channel = x->numel / (x->shape[1] ? x->shape[1] : 1);
    if (training && x->shape[1] > 0 && per_channel <= 1)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: training needs more than 1 value per channel to estimate a "
                         "variance, but x of %lld channels has %lld; use a larger batch",
                         op, (long long)x->shape[1], (long long)per_channel),
               false;
    return true;
}

/* x dense, NCHW or (where the backend takes it) channels-last. */
static ct__batch_norm_args batch_norm_args(const ct_tensor *x, const ct_tensor *w,
                                           ct_tensor *const *stats) {
    int64_t inner = ct__nn_numel(x->shape, 2, x->ndim);
    bool channels_last = ct__is_channels_last(x);
    return (ct__batch_norm_args){
        .dtype = x->dtype,
        .n = x->shape[0],
        .c = x->shape[1],
        .inner = inner,
        .channels_last = channels_last,
        .stride_n = x->shape[1] * inner,
        .stride_c = channels_last ? 1 : inner,
        .stride_inner = channels_last ? x->shape[1] : 1,
        .x = ct__data(x),
        .weight = data_or_null(w),
        .mean = ct__data(stats[0]),
        .invstd = ct__data(stats[1]),
    };
}

static ct_status batch_norm_backward(ct__node *node, const ct_tensor *grad_out,
                                     ct_tensor **grad_in) {
    norm_backward b;
    if (!norm_backward_begin(node, grad_out, &b)) return ct_last_status();
    ct__batch_norm_args args = batch_norm_args(node->saved[0], node->saved[1], &node->saved[2]);
    args.training = node->ints[0] != 0;
    args.relu = node->saved[4] != NULL;
    args.y = data_or_null(node->saved[4]);
    args.grad_out = ct__data(b.grad_out);
    args.grad_x = data_or_null(b.grads[0]);
    args.grad_weight = data_or_null(b.grads[1]);
    args.grad_bias = data_or_null(b.grads[2]);
    ct_status status = args.c ? b.kernels->batch_norm_backward(b.physical, &args) : CT_OK;
    return norm_backward_end(&b, status, grad_in);
}

/* Running statistics: pointer, dtype and stride, or NULL. */
static void set_running(ct__batch_norm_args *args, ct_tensor *rm, ct_tensor *rv) {
    if (rm) {
        args->running_mean = ct__data(rm);
        args->running_mean_dtype = rm->dtype;
        args->running_mean_stride = rm->strides[0];
    }
    if (rv) {
        args->running_var = ct__data(rv);
        args->running_var_dtype = rv->dtype;
        args->running_var_stride = rv->strides[0];
    }
}

/* The forward; saved gets x, weight (contiguous, x's dtype), mean and invstd. */
static ct_tensor *batch_norm_forward(const char *op, ct_device device, const ct_tensor *x,
                                     ct_tensor *rm, ct_tensor *rv, const ct_tensor *w,
                                     const ct_tensor *b, bool training, bool relu, double momentum,
                                     double eps, ct_tensor **saved) {
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return NULL;
    ct__batch_norm_args layout = {.dtype = x->dtype,
                                  .n = x->shape[0],
                                  .c = x->shape[1],
                                  .inner = ct__nn_numel(x->shape, 2, x->ndim),
                                  .channels_last = true};
    bool channels_last = ct__is_channels_last(x) && k->batch_norm_channels_last &&
                         k->batch_norm_channels_last(physical, &layout);
    saved[0] = channels_last ? operand_in(x, x->dtype, device, op, x)
                             : ct__nn_operand(x, x->dtype, device, op);
    saved[1] = w ? ct__nn_operand(w, x->dtype, device, op) : NULL;
    ct_tensor *bc = b ? ct__nn_operand(b, x->dtype, device, op) : NULL;
    saved[2] = ct__tensor_new(device, CT_F64, 1, &x->shape[1]);
    saved[3] = ct__tensor_new(device, CT_F64, 1, &x->shape[1]);
    ct_tensor *y = saved[0] ? ct__tensor_new_like(device, x->dtype, saved[0]) : NULL;
    bool ok = y && saved[0] && (saved[1] || !w) && (bc || !b) && saved[2] && saved[3];
    if (ok && x->shape[1] > 0) {
        ct__batch_norm_args args = batch_norm_args(saved[0], saved[1], &saved[2]);
        args.bias = data_or_null(bc);
        args.training = training;
        args.relu = relu;
        args.momentum = momentum;
        args.eps = eps;
        args.y = ct__data(y);
        set_running(&args, rm, rv);
        ok = k->batch_norm(physical, &args) == CT_OK;
        if (ok && training && rm) ct__storage_written(rm); /* running statistics updated */
        if (ok && training && rv) ct__storage_written(rv);
    }
    ct_release(bc);
    if (ok) return y;
    ct_release(y);
    return NULL;
}

/* The ReLU's mask for the backward: a detached view of y saved in slot 4 of node (NULL, the
 * node released, on failure). */
static ct__node *save_output(ct__node *node, const ct_tensor *y) {
    ct_tensor *view = node && y ? ct_detach(y) : NULL;
    if (view) ct__node_save(node, 4, view);
    ct_release(view);
    if (node && !view) ct__node_release(node);
    return view ? node : NULL;
}

static ct_tensor *batch_norm(const char *op, const ct_tensor *x, ct_tensor *running_mean,
                             ct_tensor *running_var, const ct_tensor *weight, const ct_tensor *bias,
                             bool training, bool relu, double momentum, double eps) {
    if (!x) return ct__null_arg(op, 1);
    const ct_tensor *all[5] = {x, running_mean, running_var, weight, bias}, *args[5];
    ct_device device;
    if (!ct__check_args(op, present(5, all, args), args, &device)) return NULL;
    if (!check_batch_norm(op, x, running_mean, running_var, weight, bias, training)) return NULL;
    ct_tensor *saved[4] = {NULL, NULL, NULL, NULL};
    ct_no_grad_push();
    ct_tensor *y = batch_norm_forward(op, device, x, running_mean, running_var, weight, bias,
                                      training, relu, momentum, eps, saved);
    ct_no_grad_pop();
    const ct_tensor *inputs[3] = {x, weight, bias};
    if (y && ct__grad_needed(3, inputs)) {
        ct__node *node = new_norm_node(op, batch_norm_backward, inputs, saved, training);
        y = ct__record(y, relu ? save_output(node, y) : node);
    }
    for (int i = 0; i < 4; i++) ct_release(saved[i]);
    if (y && ct__is_channels_last(x) && !ct__is_channels_last(y)) {
        ct_tensor *copy = ct_contiguous_format(y, CT_FORMAT_CHANNELS_LAST);
        ct_release(y);
        y = copy;
    }
    return y;
}

/* ---- layer norm ---- */

static ct__layer_norm_args layer_norm_args(const ct_tensor *x, const ct_tensor *w,
                                           ct_tensor *const *stats) {
    int64_t rows = stats[0]->numel;
    return (ct__layer_norm_args){
        .dtype = x->dtype,
        .rows = rows,
        .n = rows ? x->numel / rows : 0,
        .x = ct__data(x),
        .weight = data_or_null(w),
        .mean = ct__data(stats[0]),
        .invstd = ct__data(stats[1]),
    };
}

static ct_status layer_norm_backward(ct__node *node, const ct_tensor *grad_out,
                                     ct_tensor **grad_in) {
    norm_backward b;
    if (!norm_backward_begin(node, grad_out, &b)) return ct_last_status();
    const ct_tensor *x = node->saved[0];
    ct__layer_norm_args args = layer_norm_args(x, node->saved[1], &node->saved[2]);
    args.n = ct__nn_numel(x->shape, x->ndim - (int)node->ints[0], x->ndim);
    args.grad_out = ct__data(b.grad_out);
    args.grad_x = data_or_null(b.grads[0]);
    args.grad_weight = data_or_null(b.grads[1]);
    args.grad_bias = data_or_null(b.grads[2]);
    ct_status status = CT_OK;
    if (x->numel > 0)
        status = b.kernels->layer_norm_backward(b.physical, &args);
    else if (args.n > 0) { /* no rows: the parameter gradients are sums of nothing */
        for (int i = 1; i < 3 && status == CT_OK; i++)
            if (b.grads[i]) status = ct_fill(b.grads[i], 0.0);
    }
    return norm_backward_end(&b, status, grad_in);
}

/* The layer norm of x, or with a residual (x's shape and dtype) of the sum x + residual, which
 * the kernel writes into saved[0] (a new tensor) in the same pass; saved[0] is what the
 * backward reads as the input. */
static ct_tensor *layer_norm_forward(const char *op, ct_device device, const ct_tensor *x,
                                     const ct_tensor *residual, int k_axes, const ct_tensor *w,
                                     const ct_tensor *b, double eps, ct_tensor **saved) {
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return NULL;
    int64_t rows = ct__nn_numel(x->shape, 0, x->ndim - k_axes);
    ct_tensor *xc = ct__nn_operand(x, x->dtype, device, op), *rc = NULL;
    if (residual) {
        rc = xc ? ct__nn_operand(residual, x->dtype, device, op) : NULL;
        saved[0] = rc ? ct__tensor_new(device, x->dtype, x->ndim, x->shape) : NULL;
    } else {
        saved[0] = xc;
    }
    saved[1] = w ? ct__nn_operand(w, x->dtype, device, op) : NULL;
    ct_tensor *bc = b ? ct__nn_operand(b, x->dtype, device, op) : NULL;
    saved[2] = ct__tensor_new(device, CT_F64, 1, &rows);
    saved[3] = ct__tensor_new(device, CT_F64, 1, &rows);
    ct_tensor *y = saved[0] ? ct__tensor_new_like(device, x->dtype, saved[0]) : NULL;
    bool ok = y && saved[0] && (saved[1] || !w) && (bc || !b) && saved[2] && saved[3];
    if (ok && x->numel > 0) {
        ct__layer_norm_args args = layer_norm_args(xc, saved[1], &saved[2]);
        args.residual = data_or_null(rc);
        args.sum = rc ? ct__data(saved[0]) : NULL;
        args.bias = data_or_null(bc);
        args.eps = eps;
        args.y = ct__data(y);
        ok = k->layer_norm(physical, &args) == CT_OK;
    }
    if (residual) ct_release(xc); /* else saved[0] */
    ct_release(rc);
    ct_release(bc);
    if (ok) return y;
    ct_release(y);
    return NULL;
}

/* The layer norm of x, or with a residual (checked by the caller: x's shape and dtype) of
 * x + residual, that sum then a new reference in *sum, recorded as ct_add's result. */
static ct_tensor *layer_norm(const ct_tensor *x, const ct_tensor *residual, int normalized_ndim,
                             const ct_tensor *weight, const ct_tensor *bias, double eps,
                             ct_tensor **sum) {
    const char *op = residual ? "ct__add_layer_norm" : "ct_layer_norm";
    if (!x) return ct__null_arg(op, 1);
    const ct_tensor *all[4] = {x, weight, bias, residual}, *args[4];
    ct_device device;
    if (!ct__check_args(op, present(4, all, args), args, &device)) return NULL;
    if (!ct__nn_check_float(op, x, 1)) return NULL;
    if (normalized_ndim < 1 || normalized_ndim > x->ndim)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: normalized_ndim is %d for x of rank %d; it must be 1 to %d (the "
                        "number of trailing axes to normalise over)",
                        op, normalized_ndim, x->ndim, x->ndim);
    const int64_t *norm_shape = &x->shape[x->ndim - normalized_ndim];
    if (!check_param(op, weight, "weight", 3, normalized_ndim, norm_shape) ||
        !check_param(op, bias, "bias", 4, normalized_ndim, norm_shape))
        return NULL;
    ct_tensor *saved[4] = {NULL, NULL, NULL, NULL};
    ct_no_grad_push();
    ct_tensor *y =
        layer_norm_forward(op, device, x, residual, normalized_ndim, weight, bias, eps, saved);
    ct_no_grad_pop();
    const ct_tensor *input = x;
    if (y && residual) {
        /* The sum stays in the caller's scope; the node keeps a view of it, as nodes keep
         * what they save (a saved tensor is not in a scope). */
        ct_tensor *s = saved[0];
        saved[0] = ct__nn_alias(s);
        const ct_tensor *pair[2] = {x, residual};
        if (!saved[0])
            saved[0] = s, s = NULL;
        else if (ct__grad_needed(2, pair))
            s = ct__record_binary(s, "ct_add", CT_BOP_ADD, x, residual, 0);
        if (!s) ct_release(y), y = NULL;
        input = *sum = s;
    }
    const ct_tensor *inputs[3] = {input, weight, bias};
    if (y && ct__grad_needed(3, inputs))
        y = ct__record(y, new_norm_node(op, layer_norm_backward, inputs, saved, normalized_ndim));
    if (!y && residual && *sum) ct_release(*sum), *sum = NULL;
    for (int i = 0; i < 4; i++) ct_release(saved[i]);
    return y;
}

/* Autocast casts x only: the parameters and running statistics keep their dtype. */
ct_tensor *ct_batch_norm(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                         const ct_tensor *weight, const ct_tensor *bias, bool training,
                         double momentum, double eps) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_BATCH_NORM, 1, (const ct_tensor **[]){&x})) return NULL;
    ct_tensor *out = batch_norm("ct_batch_norm", x, running_mean, running_var, weight, bias,
                                training, false, momentum, eps);
    ct__autocast_end(&ac);
    return out;
}

/* As ct_batch_norm, in autocast's policy too (the ReLU changes no dtype). */
ct_tensor *ct_batch_norm_relu(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                              const ct_tensor *weight, const ct_tensor *bias, bool training,
                              double momentum, double eps) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_BATCH_NORM, 1, (const ct_tensor **[]){&x})) return NULL;
    ct_tensor *out = batch_norm("ct_batch_norm_relu", x, running_mean, running_var, weight, bias,
                                training, true, momentum, eps);
    ct__autocast_end(&ac);
    return out;
}

ct_tensor *ct_layer_norm(const ct_tensor *x, int normalized_ndim, const ct_tensor *weight,
                         const ct_tensor *bias, double eps) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_LAYER_NORM, 3, (const ct_tensor **[]){&x, &weight, &bias}))
        return NULL;
    ct_tensor *out = layer_norm(x, NULL, normalized_ndim, weight, bias, eps, NULL);
    ct__autocast_end(&ac);
    return out;
}

/* One kernel for both where it gives what the two ops give: x and residual of one shape
 * and dtype, float32 or float64 (which autocast's float32 policy for layer_norm leaves as
 * they are); otherwise the two ops. */
ct_tensor *ct__add_layer_norm(const ct_tensor *x, const ct_tensor *residual, int normalized_ndim,
                              const ct_tensor *weight, const ct_tensor *bias, double eps,
                              ct_tensor **sum) {
    *sum = NULL;
    if (!x || !residual) return ct__null_arg("ct__add_layer_norm", x ? 2 : 1);
    bool fused = x->dtype == residual->dtype && (x->dtype == CT_F32 || x->dtype == CT_F64) &&
                 x->ndim == residual->ndim &&
                 memcmp(x->shape, residual->shape, sizeof(int64_t) * (size_t)x->ndim) == 0;
    if (fused) return layer_norm(x, residual, normalized_ndim, weight, bias, eps, sum);
    ct_tensor *s = ct_add(x, residual);
    ct_tensor *y = s ? ct_layer_norm(s, normalized_ndim, weight, bias, eps) : NULL;
    if (!y) {
        ct_release(s);
        return NULL;
    }
    *sum = s;
    return y;
}

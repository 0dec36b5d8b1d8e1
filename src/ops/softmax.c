/* ct_softmax and ct_log_softmax along any axis, and their backward, through the backend's
 * softmax kernels. The input is viewed as (outer, n, inner) around the axis; a 0-d input
 * is one element along its only position (softmax 1, log-softmax 0), as PyTorch. The node
 * saves the output: the backward needs only y. */
#include "ops/nn_impl.h"
#include "ops/autocast_impl.h"

/* y = softmax(x) along a, or the backward (x = y, grad = dL/dy) when grad is not NULL. */
static ct_tensor *run_softmax(const char *op, const ct_tensor *x, const ct_tensor *grad, int a,
                              bool log) {
    ct_device device = x->storage->device;
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return NULL;
    ct_tensor *xc = ct__nn_operand(x, x->dtype, device, op);
    ct_tensor *gc = grad ? ct__nn_operand(grad, x->dtype, device, op) : NULL;
    ct_tensor *out =
        xc && (gc || !grad) ? ct__tensor_new(device, x->dtype, x->ndim, x->shape) : NULL;
    if (out && out->numel > 0) {
        ct__softmax_args args = {
            .dtype = x->dtype,
            .outer = ct__nn_numel(x->shape, 0, a),
            .n = x->ndim ? x->shape[a] : 1,
            .inner = ct__nn_numel(x->shape, a + 1, x->ndim),
            .log = log,
            .in = ct__data(xc),
            .grad = gc ? ct__data(gc) : NULL,
            .out = ct__data(out),
        };
        ct_status status =
            grad ? k->softmax_backward(physical, &args) : k->softmax(physical, &args);
        if (status != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(gc);
    ct_release(xc);
    return out;
}

static ct_status softmax_backward(ct__node *node, const ct_tensor *grad_out, ct_tensor **grad_in) {
    const ct_tensor *y = node->saved[0];
    grad_in[0] = run_softmax(node->name, y, grad_out, (int)node->ints[0], node->ints[1] != 0);
    return grad_in[0] ? CT_OK : ct_last_status();
}

static ct_tensor *softmax_op(const char *op, const ct_tensor *x, int axis, bool log) {
    ct_device device;
    int a;
    if (!ct__check_args(op, 1, &x, &device)) return NULL;
    if (!ct__nn_check_float(op, x, 1)) return NULL;
    if (ct__normalize_axis(op, axis, x->ndim ? x->ndim : 1, &a) != CT_OK) return NULL;
    ct_no_grad_push();
    ct_tensor *y = run_softmax(op, x, NULL, a, log);
    ct_no_grad_pop();
    if (!y || !ct__grad_needed(1, &x)) return y;
    ct__node *node = ct__node_new(op, softmax_backward, 1, &x);
    ct_tensor *saved = node ? ct__nn_alias(y) : NULL;
    if (node) {
        ct__node_save(node, 0, saved);
        node->ints[0] = a;
        node->ints[1] = log;
    }
    if (node && !saved) {
        ct__node_release(node);
        node = NULL;
    }
    ct_release(saved);
    return ct__record(y, node);
}

/* softmax_op through autocast's front door. */
static ct_tensor *softmax_autocast(const char *op, ct__autocast_op id, const ct_tensor *x, int axis,
                                   bool log) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, id, 1, (const ct_tensor **[]){&x})) return NULL;
    ct_tensor *out = softmax_op(op, x, axis, log);
    ct__autocast_end(&ac);
    return out;
}

ct_tensor *ct_softmax(const ct_tensor *x, int axis) {
    return softmax_autocast("ct_softmax", CT__AC_SOFTMAX, x, axis, false);
}

ct_tensor *ct_log_softmax(const ct_tensor *x, int axis) {
    return softmax_autocast("ct_log_softmax", CT__AC_LOG_SOFTMAX, x, axis, true);
}

/* ct_dropout: one kernel draws the keep mask from the global Philox stream (as ct_rand
 * draws: ceil(numel / 4) blocks taken atomically) and writes the output and the mask
 * (1 / (1 - p) where kept, 0 elsewhere), which the node saves: the backward is the
 * upstream gradient times the mask. */
#include "ops/nn_impl.h"
#include "ops/random_impl.h"

static ct_status dropout_backward(ct__node *node, const ct_tensor *grad_out, ct_tensor **grad_in) {
    grad_in[0] = ct_mul(grad_out, node->saved[0]);
    return grad_in[0] ? CT_OK : ct_last_status();
}

/* y and *mask for 0 < p < 1; p == 1 zeroes everything (PyTorch's result) without a draw. */
static ct_tensor *dropout_forward(const char *op, ct_device device, const ct_tensor *x, double p,
                                  ct_tensor **mask) {
    if (p == 1.0) {
        *mask = ct__full_on(device, x->ndim, x->shape, 0.0, x->dtype);
        return *mask ? ct__full_on(device, x->ndim, x->shape, 0.0, x->dtype) : NULL;
    }
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return NULL;
    ct_tensor *xc = ct__nn_operand(x, x->dtype, device, op);
    *mask = xc ? ct__tensor_new(device, x->dtype, x->ndim, x->shape) : NULL;
    ct_tensor *y = *mask ? ct__tensor_new(device, x->dtype, x->ndim, x->shape) : NULL;
    if (y && y->numel > 0) {
        ct__dropout_args args = {
            .dtype = x->dtype,
            .numel = x->numel,
            .x = ct__data(xc),
            .y = ct__data(y),
            .mask = ct__data(*mask),
            .p = p,
            .scale = 1.0 / (1.0 - p),
        };
        ct__random_take(((uint64_t)x->numel + 3) / 4, &args.seed, &args.offset);
        if (k->dropout(physical, &args) != CT_OK) {
            ct_release(y);
            y = NULL;
        }
    }
    ct_release(xc);
    return y;
}

ct_tensor *ct_dropout(const ct_tensor *x, double p, bool training) {
    const char *op = "ct_dropout";
    ct_device device;
    if (!ct__check_args(op, 1, &x, &device)) return NULL;
    if (!ct__nn_check_float(op, x, 1)) return NULL;
    if (!(p >= 0.0 && p <= 1.0))
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: p is %g; the probability of zeroing an element must be in [0, 1]", op,
                        p);
    if (!training || p == 0.0) return ct__new_ref(x);
    ct_tensor *mask = NULL;
    ct_no_grad_push();
    ct_tensor *y = dropout_forward(op, device, x, p, &mask);
    ct_no_grad_pop();
    if (y && ct__grad_needed(1, &x)) {
        ct__node *node = ct__node_new(op, dropout_backward, 1, &x);
        if (node) ct__node_save(node, 0, mask);
        y = ct__record(y, node);
    }
    ct_release(mask);
    return y;
}

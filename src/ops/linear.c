/* ct_linear: y = x W^T + b, as torch.nn.functional.linear. The forward reads W^T as a view,
 * which the GEMM takes in place. The backward is one node with its own rule, so that each
 * gradient comes out of one GEMM already in its parameter's layout: dW = g^T x (out, in),
 * dx = g W, db = the sum of g over the batch. */
#include "autograd/tape_impl.h"
#include "ops/autocast_impl.h"
#include "ops/op_impl.h"

/* t as a matrix: every axis but the last merged (a view when t is contiguous). */
static ct_tensor *as_rows(const ct_tensor *t) {
    return ct_reshape(t, 2, (int64_t[]){-1, t->ndim ? t->shape[t->ndim - 1] : 1});
}

static ct_status linear_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = node->saved[0], *w = node->saved[1];
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    ct_tensor *g_rows = as_rows(g);
    ct_status status = CT_OK;
    if (node->inputs[0] && !(grad_in[0] = ct_reshape(ct_matmul(g_rows, w), x->ndim, x->shape)))
        status = ct_last_status();
    if (status == CT_OK && node->inputs[1] &&
        !(grad_in[1] = ct_matmul(ct_transpose(g_rows, 0, 1), as_rows(x))))
        status = ct_last_status();
    if (status == CT_OK && node->ninputs > 2 && node->inputs[2] &&
        !(grad_in[2] = ct_sum(g_rows, 1, (const int[]){0}, false)))
        status = ct_last_status();
    for (int i = 0; i < node->ninputs; i++)
        if (grad_in[i]) ct_keep(grad_in[i]);
    ct_scope_end();
    return status;
}

/* x's rows times W^T, plus the bias in the product's pass where the kernel can
 * (ct__matmul_bias), reshaped back to x's leading axes: one product, not one per batch index. */
static ct_tensor *forward(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias) {
    if (ct_scope_begin() != CT_OK) return NULL;
    ct_tensor *rows = as_rows(x), *wt = ct_transpose(weight, 0, 1);
    ct_tensor *y = !rows || !wt ? NULL
                   : bias       ? ct__matmul_bias(rows, wt, bias)
                                : ct_matmul(rows, wt);
    int64_t shape[CT_MAX_DIMS];
    for (int d = 0; d + 1 < x->ndim; d++) shape[d] = x->shape[d];
    shape[x->ndim - 1] = weight->shape[0];
    ct_tensor *out = y ? ct_reshape(y, x->ndim, shape) : NULL;
    if (out && !ct_keep(out)) out = NULL;
    ct_scope_end();
    return out;
}

static ct_tensor *linear(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias) {
    const ct_tensor *args[3] = {x, weight, bias};
    int n = bias ? 3 : 2;
    ct_device device;
    if (!ct__check_args("ct_linear", n, args, &device)) return NULL;
    if (weight->ndim != 2 || x->ndim < 1 || x->shape[x->ndim - 1] != weight->shape[1])
        return ct__fail(CT_ERR_SHAPE,
                        "ct_linear: the weight must be (out_features, in_features) with "
                        "in_features the size of the input's last axis; got a rank-%d weight "
                        "with %lld columns for an input whose last axis has %lld",
                        weight->ndim, (long long)(weight->ndim == 2 ? weight->shape[1] : -1),
                        (long long)(x->ndim ? x->shape[x->ndim - 1] : -1));
    if (bias && (bias->ndim != 1 || bias->shape[0] != weight->shape[0]))
        return ct__fail(CT_ERR_SHAPE,
                        "ct_linear: the bias must have shape (%lld) (out_features); pass NULL "
                        "for no bias",
                        (long long)weight->shape[0]);
    if (!ct__grad_needed(n, args)) return forward(x, weight, bias);
    ct_no_grad_push();
    ct_tensor *out = forward(x, weight, bias);
    ct_no_grad_pop();
    ct__node *node = out ? ct__node_new("ct_linear", linear_backward, n, args) : NULL;
    if (node) ct__node_save(node, 0, x), ct__node_save(node, 1, weight);
    return ct__record(out, node);
}

ct_tensor *ct_linear(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_LINEAR, 3, (const ct_tensor **[]){&x, &weight, &bias}))
        return NULL;
    ct_tensor *out = linear(x, weight, bias);
    ct__autocast_end(&ac);
    return out;
}

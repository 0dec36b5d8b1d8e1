/* ct_linear: y = x W^T + b, as torch.nn.functional.linear. The transpose is a view, which
 * the GEMM reads in place; autograd records the matmul and the add. */
#include "ops/op_impl.h"

ct_tensor *ct_linear(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias) {
    const ct_tensor *args[3] = {x, weight, bias};
    ct_device device;
    if (!ct__check_args("ct_linear", bias ? 3 : 2, args, &device)) return NULL;
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
    ct_tensor *wt = ct_transpose(weight, 0, 1);
    ct_tensor *y = wt ? ct_matmul(x, wt) : NULL;
    ct_release(wt);
    if (!bias || !y) return y;
    ct_tensor *out = ct_add(y, bias);
    ct_release(y);
    return out;
}

/* The public autograd accessors: requires_grad, .grad, zero_grad, detach. */
#include "autograd/grad_hook_impl.h"
#include "autograd/tape_impl.h"
#include "ops/op_impl.h"

ct_status ct_set_requires_grad(ct_tensor *t, bool requires_grad) {
    if (!t) {
        ct__null_arg("ct_set_requires_grad", 1);
        return ct_last_status();
    }
    if (t->grad_fn)
        return ct__error(CT_ERR_STATE,
                         "ct_set_requires_grad: the tensor was made by %s from tensors that "
                         "require grad, so it is not a leaf; use ct_detach for a leaf copy",
                         t->grad_fn->name);
    if (requires_grad && !ct__is_float(t->dtype) && !ct__is_complex(t->dtype))
        return ct__error(CT_ERR_DTYPE,
                         "ct_set_requires_grad: only floating and complex tensors can require "
                         "grad, and this one is %s; ct_cast it to CT_F32 first",
                         ct_dtype_name(t->dtype));
    t->requires_grad = requires_grad;
    return CT_OK;
}

bool ct_requires_grad(const ct_tensor *t) { return t && t->requires_grad; }

bool ct_is_leaf(const ct_tensor *t) { return t && !t->grad_fn; }

ct_tensor *ct_grad(const ct_tensor *t) {
    if (!t) return ct__null_arg("ct_grad", 1);
    if (!t->grad)
        return ct__fail(CT_ERR_STATE,
                        t->grad_fn ? "ct_grad: the tensor is not a leaf (an op made it); only "
                                     "leaves keep their gradient"
                        : t->requires_grad ? "ct_grad: the tensor has no gradient yet; run "
                                             "ct_backward on a loss computed from it"
                                           : "ct_grad: the tensor does not require grad; call "
                                             "ct_set_requires_grad before the forward pass");
    return ct__new_ref(t->grad);
}

ct_status ct_zero_grad(ct_tensor *t) {
    if (!t) {
        ct__null_arg("ct_zero_grad", 1);
        return ct_last_status();
    }
    if (t->grad) ct__tensor_drop(t->grad);
    t->grad = NULL;
    return CT_OK;
}

static ct_status check_grad_for(const ct_tensor *t, const ct_tensor *grad) {
    if (t->grad_fn)
        return ct__error(CT_ERR_STATE,
                         "ct_set_grad: the tensor was made by %s, so it is not a leaf; only "
                         "leaves keep a gradient",
                         t->grad_fn->name);
    if (!ct__same_shape(t, grad))
        return ct__error(CT_ERR_SHAPE,
                         "ct_set_grad: the gradient's shape differs from the tensor's "
                         "(%d axes, %lld elements against %d axes, %lld elements)",
                         grad->ndim, (long long)grad->numel, t->ndim, (long long)t->numel);
    if (grad->dtype != t->dtype)
        return ct__error(CT_ERR_DTYPE,
                         "ct_set_grad: the gradient is %s and the tensor %s; "
                         "ct_cast the gradient first",
                         ct_dtype_name(grad->dtype), ct_dtype_name(t->dtype));
    if (!ct_device_equal(grad->storage->device, t->storage->device))
        return ct__error(CT_ERR_DEVICE_MISMATCH, "ct_set_grad: the gradient is on another device "
                                                 "than the tensor; ct_to it there first");
    return CT_OK;
}

ct_status ct_set_grad(ct_tensor *t, const ct_tensor *grad) {
    if (!t) {
        ct__null_arg("ct_set_grad", 1);
        return ct_last_status();
    }
    if (!grad) return ct_zero_grad(t);
    if (check_grad_for(t, grad) != CT_OK) return ct_last_status();
    ct_no_grad_push();
    ct_tensor *copy = ct_clone(grad);
    ct_no_grad_pop();
    if (!copy) return ct_last_status();
    ct__set_leaf_grad(t, copy);
    return CT_OK;
}

ct_tensor *ct_detach(const ct_tensor *t) {
    if (!t) return ct__null_arg("ct_detach", 1);
    return ct__tensor_view(t, t->dtype, t->ndim, t->shape, t->strides, t->offset);
}

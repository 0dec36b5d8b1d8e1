/* ctensor — autograd: a define-by-run tape, as PyTorch's.
 *
 * A leaf tensor that requires grad (ct_set_requires_grad) makes every differentiable op it
 * enters record a node; the op's result requires grad too. ct_backward(loss) walks the
 * recorded graph from loss back to the leaves and adds each leaf's gradient to its .grad
 * (gradients accumulate across calls until ct_zero_grad). Gradients of broadcast inputs are
 * summed back to the input's shape. The graph's saved tensors are freed by backward (unless
 * retained) and with the last reference to its result, so a training step inside a scope
 * leaves nothing behind.
 *
 * Gradients flow through floating and complex dtypes. Complex gradients follow PyTorch's
 * convention: for a real loss L, the gradient of z = x + iy is dL/dx + i dL/dy (a
 * holomorphic f passes grad * conj(f'(z)) to z), a real input that entered a complex op gets
 * the real part, and a complex output needs its gradient given (ct_backward_with). Ops
 * without a derivative (comparisons, floor, argmax, ...) give results that do not require
 * grad. Writing into a tensor that
 * requires grad (ct_fill, ct_copy) is CT_ERR_STATE, outside a no-grad region for leaves. */
#ifndef CTENSOR_AUTOGRAD_H
#define CTENSOR_AUTOGRAD_H

#include <stdbool.h>

#include "ctensor/export.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Mark a leaf tensor (one no op made with grad on) as requiring grad, or not. Floating and
 * complex dtypes only (CT_ERR_DTYPE); CT_ERR_STATE on a tensor an op recorded. */
CT_API ct_status ct_set_requires_grad(ct_tensor *t, bool requires_grad);
CT_API bool ct_requires_grad(const ct_tensor *t);
/* True for a tensor no recorded op made (parameters, inputs). */
CT_API bool ct_is_leaf(const ct_tensor *t);

/* Backpropagate from a scalar (one-element) loss, as loss.backward(). CT_ERR_STATE when
 * loss does not require grad or its graph was freed by an earlier backward; CT_ERR_SHAPE
 * when loss has more than one element and CT_ERR_DTYPE when it is complex (as PyTorch's
 * "grad can be implicitly created only for real scalar outputs"; use ct_backward_with). */
CT_API ct_status ct_backward(const ct_tensor *loss);
/* Backpropagate `gradient` (loss's shape, dtype and device; NULL for a one-element loss)
 * from any tensor; retain_graph keeps the saved tensors for another backward. */
CT_API ct_status ct_backward_with(const ct_tensor *output, const ct_tensor *gradient,
                                  bool retain_graph);

/* The accumulated gradient of t (a new reference; it has t's shape, dtype and device).
 * NULL with CT_ERR_STATE when t has none (no backward reached it, or after ct_zero_grad). */
CT_API ct_tensor *ct_grad(const ct_tensor *t);
/* Set t's gradient to a copy of grad (PyTorch's `t.grad = grad`; the copy keeps in-place
 * updates of one gradient from reaching another tensor); grad NULL drops it. t must be a leaf
 * (CT_ERR_STATE) and grad of t's shape (CT_ERR_SHAPE), dtype (CT_ERR_DTYPE) and device
 * (CT_ERR_DEVICE_MISMATCH). */
CT_API ct_status ct_set_grad(ct_tensor *t, const ct_tensor *grad);
/* Drop t's gradient (PyTorch's zero_grad(set_to_none=True)). */
CT_API ct_status ct_zero_grad(ct_tensor *t);

/* t's data without its history: shares storage, requires no grad. */
CT_API ct_tensor *ct_detach(const ct_tensor *t);

/* No-grad regions (torch.no_grad()): ops inside record nothing. They nest, per thread. */
CT_API ct_status ct_no_grad_push(void);
CT_API ct_status ct_no_grad_pop(void);
CT_API bool ct_grad_enabled(void);

#ifdef __cplusplus
}
#endif
#endif

/* ct_move_to: a tensor moved to another device in place, with its gradient (the storage
 * swap itself is core's ct__adopt_moved, src/core/move_in_place.c). */
#include "autograd/grad_hook_impl.h"
#include "autograd/tape_impl.h"
#include "ops/op_impl.h"

static ct_status check_movable(const ct_tensor *t) {
    if (t->grad_fn)
        return ct__error(CT_ERR_STATE,
                         "ct_move_to: the tensor was made by %s, which recorded it; move a "
                         "leaf (ct_detach it first)",
                         t->grad_fn->name);
    if (!ct__spans_storage(t))
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_move_to: the tensor is a view of part of a larger storage, which "
                         "other views share; move a ct_clone of it with ct_to instead");
    return CT_OK;
}

ct_status ct_move_to(ct_tensor *t, ct_device device) {
    if (!t) {
        ct__null_arg("ct_move_to", 1);
        return ct_last_status();
    }
    ct_device d;
    if (ct__resolve_device("ct_move_to", device, &d) != CT_OK) return ct_last_status();
    if (check_movable(t) != CT_OK) return ct_last_status();
    if (ct_device_equal(d, t->storage->device)) return CT_OK;
    ct_no_grad_push(); /* the copies are data, not recorded ops */
    ct_tensor *moved = ct_to(t, d);
    ct_tensor *grad = moved && t->grad ? ct_to(t->grad, d) : NULL;
    ct_no_grad_pop();
    if (!moved || (t->grad && !grad)) {
        ct_status status = ct_last_status();
        ct_release(moved);
        return status;
    }
    ct__scope_forget(moved);
    ct__adopt_moved(t, moved);
    if (grad) ct__set_leaf_grad(t, grad);
    return CT_OK;
}

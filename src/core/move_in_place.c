/* Moving a tensor to another device in place (PyTorch's module.to, which keeps each
 * parameter object and swaps its data): the tensor and every view of its storage stay the
 * same objects, so whoever holds them (an optimiser, a Python Parameter) follows the move. */
#include "autograd/grad_hook_impl.h"
#include "autograd/tape_impl.h"
#include "ops/op_impl.h"

/* Exchange what two storages hold (data, size, device, how the data is freed); each keeps
 * its own header, reference count and heap block. */
static void swap_contents(ct__storage *a, ct__storage *b) {
    ct__storage held = *a;
    a->device = b->device, a->data = b->data, a->size = b->size;
    a->host_owned = b->host_owned, a->pinned = b->pinned;
    a->external_free = b->external_free, a->external_context = b->external_context;
    b->device = held.device, b->data = held.data, b->size = held.size;
    b->host_owned = held.host_owned, b->pinned = held.pinned;
    b->external_free = held.external_free, b->external_context = held.external_context;
}

static bool spans_storage(const ct_tensor *t) {
    return t->contiguous && t->offset == 0 &&
           (size_t)t->numel * ct__dtype_size(t->dtype) == t->storage->size;
}

bool ct__adopt_moved(ct_tensor *t, ct_tensor *moved) {
    if (!spans_storage(t)) return false;
    swap_contents(t->storage, moved->storage);
    ct__storage_written(t);
    ct__tensor_drop(moved); /* it frees the old data */
    return true;
}

static ct_status check_movable(const ct_tensor *t) {
    if (t->grad_fn)
        return ct__error(CT_ERR_STATE,
                         "ct_move_to: the tensor was made by %s, which recorded it; move a "
                         "leaf (ct_detach it first)",
                         t->grad_fn->name);
    if (!spans_storage(t))
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

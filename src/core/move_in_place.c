/* A tensor given the data of its copy on another device, in place (ct_move_to in
 * src/autograd/move_to.c, PyTorch's module.to, which keeps each parameter object and swaps its
 * data): the tensor and every view of its storage stay the same objects, so whoever holds
 * them (an optimiser, a Python Parameter) follows the move. */
#include "core/tensor_impl.h"

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

bool ct__spans_storage(const ct_tensor *t) {
    return t->contiguous && t->offset == 0 &&
           (size_t)t->numel * ct__dtype_size(t->dtype) == t->storage->size;
}

bool ct__adopt_moved(ct_tensor *t, ct_tensor *moved) {
    if (!ct__spans_storage(t)) return false;
    swap_contents(t->storage, moved->storage);
    ct__storage_written(t);
    ct__tensor_drop(moved); /* it frees the old data */
    return true;
}

/* Backward rules of the indexing ops: ct_index_select and ct_gather send each gradient
 * element back to the element it was read from, accumulating repeated indices. */
#include "ops/grad_impl.h"
#include "ops/op_impl.h"

/* Zeros of x's shape with g added at the read positions, by index_add or scatter_add. */
static ct_status scatter_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = node->inputs[0], *index = node->saved[0];
    int axis = (int)node->ints[0];
    ct_tensor *zeros = ct__full_on(g->storage->device, x->ndim, x->shape, 0.0, g->dtype);
    ct_tensor *dense = zeros ? ct_contiguous(g) : NULL;
    ct_tensor *out = NULL;
    if (dense)
        out = node->ints[1] ? ct_scatter_add(zeros, axis, index, dense)
                            : ct_index_add(zeros, axis, index, dense);
    ct_release(zeros);
    ct_release(dense);
    grad_in[0] = out;
    return out ? CT_OK : ct_last_status();
}

static ct_tensor *record(ct_tensor *out, const char *name, const ct_tensor *x, int axis,
                         const ct_tensor *index, bool scatter) {
    if (!out || !ct__grad_dtype(out->dtype)) return out;
    ct__node *node = ct__node_new(name, scatter_backward, 1, &x);
    if (node) {
        node->ints[0] = axis;
        node->ints[1] = scatter;
        ct__node_save(node, 0, index);
    }
    return ct__record(out, node);
}

ct_tensor *ct__record_index_select(ct_tensor *out, const ct_tensor *x, int axis,
                                   const ct_tensor *index) {
    return record(out, "ct_index_select", x, axis, index, false);
}

ct_tensor *ct__record_gather(ct_tensor *out, const ct_tensor *x, int axis, const ct_tensor *index) {
    return record(out, "ct_gather", x, axis, index, true);
}

/* Backward rules of the shape and copy ops: reshape-like views, permutations, slices,
 * concatenation, and the ops whose gradient passes through unchanged. */
#include "ops/grad_impl.h"
#include "ops/op_impl.h"

static ct_status single(ct_tensor **grad_in, ct_tensor *g) {
    grad_in[0] = g;
    return g ? CT_OK : ct_last_status();
}

static ct_status reshape_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = node->inputs[0];
    return single(grad_in, ct_reshape(g, x->ndim, x->shape));
}

ct_tensor *ct__record_reshape(ct_tensor *out, const ct_tensor *x, const char *name) {
    if (!out || !ct__grad_dtype(out->dtype)) return out;
    return ct__record(out, ct__node_new(name, reshape_backward, 1, &x));
}

static ct_status identity_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    (void)node;
    return single(grad_in, ct__new_ref(g));
}

ct_tensor *ct__record_identity(ct_tensor *out, const ct_tensor *x, const char *name) {
    if (!out || !ct__grad_dtype(out->dtype) || !ct__grad_dtype(x->dtype)) return out;
    return ct__record(out, ct__node_new(name, identity_backward, 1, &x));
}

static ct_status permute_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    int inverse[CT_MAX_DIMS];
    for (int d = 0; d < g->ndim; d++) inverse[node->ints[d]] = d;
    return single(grad_in, ct_permute(g, g->ndim, inverse));
}

ct_tensor *ct__record_permute(ct_tensor *out, const ct_tensor *x, int ndim, const int *perm) {
    if (!out || !ct__grad_dtype(out->dtype)) return out;
    ct__node *node = ct__node_new("ct_permute", permute_backward, 1, &x);
    if (node)
        for (int d = 0; d < ndim; d++) node->ints[d] = perm[d];
    return ct__record(out, node);
}

/* Zeros of x's shape with g written into the slice the forward took. */
static ct_status slice_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = node->inputs[0];
    int axis = (int)node->ints[0];
    ct_tensor *full = ct__full_on(g->storage->device, x->ndim, x->shape, 0.0, g->dtype);
    if (!full) return ct_last_status();
    int64_t strides[CT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) strides[d] = full->strides[d];
    strides[axis] *= node->ints[2];
    ct_tensor *window = ct__tensor_view(full, g->dtype, g->ndim, g->shape, strides,
                                        node->ints[1] * full->strides[axis]);
    ct_status status = window ? ct_copy(window, g) : ct_last_status();
    ct_release(window);
    if (status != CT_OK) {
        ct_release(full);
        return status;
    }
    return single(grad_in, full);
}

ct_tensor *ct__record_slice(ct_tensor *out, const ct_tensor *x, int axis, int64_t start,
                            int64_t step) {
    if (!out || !ct__grad_dtype(out->dtype)) return out;
    ct__node *node = ct__node_new("ct_slice", slice_backward, 1, &x);
    if (node) node->ints[0] = axis, node->ints[1] = start, node->ints[2] = step;
    return ct__record(out, node);
}

/* Input i's part of g: a slice along the axis (squeezed for stack). */
static ct_status concat_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    int axis = (int)node->ints[0];
    bool stacked = node->ints[1];
    const int64_t *lengths = node->context;
    int64_t offset = 0;
    for (int i = 0; i < node->ninputs; i++) {
        int64_t length = stacked ? 1 : lengths[i];
        if (node->inputs[i]) {
            ct_tensor *part = ct_slice(g, axis, offset, offset + length, 1);
            if (stacked && part) {
                ct_tensor *squeezed = ct_squeeze(part, axis);
                ct_release(part);
                part = squeezed;
            }
            grad_in[i] = part;
            if (!part) return ct_last_status();
        }
        offset += length;
    }
    return CT_OK;
}

static void free_lengths(void *lengths) { ct__free_mem(lengths); }

ct_tensor *ct__record_concat(ct_tensor *out, int n, const ct_tensor *const *tensors, int axis,
                             bool stacked) {
    if (!out || !ct__grad_dtype(out->dtype)) return out;
    const char *name = stacked ? "ct_stack" : "ct_concat";
    ct__node *node = ct__node_new(name, concat_backward, n, tensors);
    int64_t *lengths = node ? ct__malloc(sizeof(int64_t) * (size_t)n) : NULL;
    if (node && !lengths) {
        ct__node_release(node);
        return ct__record(out, ct__fail(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory", name));
    }
    if (node) {
        node->ints[0] = axis;
        node->ints[1] = stacked;
        for (int i = 0; i < n; i++) lengths[i] = stacked ? 1 : tensors[i]->shape[axis];
        node->context = lengths;
        node->context_free = free_lengths;
    }
    return ct__record(out, node);
}

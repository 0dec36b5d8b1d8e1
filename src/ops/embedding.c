/* ct_embedding: rows of a weight table picked by integer indices of any shape, through
 * ct_index_select; the backward adds the upstream gradient's rows into a zero table at the
 * same indices (ct__index_add_into: repeated indices accumulate). As ct_index_select, a
 * negative index counts from the end of the table. */
#include <stdio.h>
#include <string.h>

#include "ops/nn_impl.h"

static ct_status embedding_backward(ct__node *node, const ct_tensor *grad_out,
                                    ct_tensor **grad_in) {
    const ct_tensor *flat = node->saved[0];
    int64_t table[2] = {node->ints[0], node->ints[1]};
    int64_t rows[2] = {flat->numel, table[1]};
    ct_tensor *g = ct_reshape(grad_out, 2, rows);
    ct_tensor *grad = g ? ct__full_on(g->storage->device, 2, table, 0.0, g->dtype) : NULL;
    ct_status status = grad ? ct__index_add_into(grad, 0, flat, g, node->name) : ct_last_status();
    ct_release(g);
    if (status != CT_OK) {
        ct_release(grad);
        return status;
    }
    grad_in[1] = grad;
    return CT_OK;
}

/* The rows, shaped indices' shape + (dim); *flat gets the indices as one axis. */
static ct_tensor *embedding_forward(const char *op, ct_device device, const ct_tensor *indices,
                                    const ct_tensor *weight, ct_tensor **flat) {
    int64_t n = indices->numel;
    ct_tensor *on_device = ct__operand_on(indices, device, op);
    *flat = on_device ? ct_reshape(on_device, 1, &n) : NULL;
    ct_release(on_device);
    ct_tensor *rows = *flat ? ct_index_select(weight, 0, *flat) : NULL;
    if (!rows) {
        /* The message names ct_index_select: name this op instead. */
        const char *message = ct_last_error(), *prefix = "ct_index_select: ";
        if (strncmp(message, prefix, strlen(prefix)) == 0) {
            char copy[1024];
            snprintf(copy, sizeof copy, "%s", message + strlen(prefix));
            ct__error(ct_last_status(), "%s: %s", op, copy);
        }
        return NULL;
    }
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
    shape[indices->ndim] = weight->shape[1];
    ct_tensor *out = ct_reshape(rows, indices->ndim + 1, shape);
    ct_release(rows);
    return out;
}

ct_tensor *ct_embedding(const ct_tensor *indices, const ct_tensor *weight) {
    const char *op = "ct_embedding";
    const ct_tensor *args[2] = {indices, weight};
    ct_device device;
    if (!ct__check_args(op, 2, args, &device)) return NULL;
    if (!ct__nn_check_index(op, indices, "index tensor") || !ct__nn_check_float(op, weight, 2))
        return NULL;
    if (weight->ndim != 2)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: weight has rank %d; it must be (num_embeddings, dim), one row per "
                        "index",
                        op, weight->ndim);
    if (indices->ndim >= CT_MAX_DIMS)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: indices have rank %d; the result adds an axis, so at most %d", op,
                        indices->ndim, CT_MAX_DIMS - 1);
    ct_tensor *flat = NULL;
    ct_no_grad_push();
    ct_tensor *out = embedding_forward(op, device, indices, weight, &flat);
    ct_no_grad_pop();
    if (out && ct__grad_needed(2, args)) {
        ct__node *node = ct__node_new(op, embedding_backward, 2, args);
        if (node) {
            ct__node_save(node, 0, flat);
            node->ints[0] = weight->shape[0];
            node->ints[1] = weight->shape[1];
        }
        out = ct__record(out, node);
    }
    ct_release(flat);
    return out;
}

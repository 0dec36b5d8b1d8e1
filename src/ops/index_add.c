/* ct_index_add and ct_scatter_add (torch.index_add and torch.scatter_add): a copy of x with
 * source elements added at indexed positions along one axis, repeated indices accumulating,
 * through the backend's index_add kernel. They are the backward of ct_index_select,
 * ct_gather and ct_embedding; their own backward selects or gathers the gradient back.
 * ct_index_copy (torch.index_copy_) stores instead, in place, through the same kernel. */
#include <string.h>

#include "ops/autocast_impl.h"
#include "ops/nn_impl.h"

/* dst[.. index ..] += src over the iteration `shape` (index's positions, rank ndim), split
 * into axis a and the rest; index_strides are the index's strides over those axes. */
static ct_status run_index_add(const char *op, ct_tensor *dst, int a, const ct_tensor *index,
                               const int64_t *index_strides, const ct_tensor *src,
                               const int64_t *shape, bool assign) {
    int physical;
    const ct__kernel_table *k = ct__kernels(dst->storage->device, &physical);
    if (!k) return ct_last_status();
    int64_t rest_shape[CT_MAX_DIMS], dst_s[CT_MAX_DIMS], index_s[CT_MAX_DIMS], src_s[CT_MAX_DIMS];
    int r = 0;
    for (int d = 0; d < dst->ndim; d++) {
        if (d == a) continue;
        rest_shape[r] = shape[d];
        dst_s[r] = dst->strides[d];
        index_s[r] = index_strides[d];
        src_s[r++] = src->strides[d];
    }
    ct__index_add_args args;
    ct__ew_init(&args.rest, r, rest_shape);
    ct__ew_add_strided(&args.rest, ct__data(dst), dst->dtype, dst_s);
    ct__ew_add_strided(&args.rest, ct__data(index), index->dtype, index_s);
    ct__ew_add_strided(&args.rest, ct__data(src), src->dtype, src_s);
    ct__ew_coalesce(&args.rest);
    args.k = shape[a];
    args.index_stride = index_strides[a];
    args.src_stride = src->strides[a];
    args.dst_axis_stride = dst->strides[a];
    args.dst_axis_size = dst->shape[a];
    args.assign = assign;
    args.deterministic = ct_are_deterministic_algorithms_enabled();
    if (args.rest.numel == 0 || args.k == 0) return CT_OK;
    ct_status status = ct__kernel_readback(dst->storage->device, CT_SLOT_index_add, op);
    if (status != CT_OK) return status;
    if (k->index_add(physical, &args) != CT_OK) return ct__nn_prefix_error(op);
    return CT_OK;
}

/* dst[.., index[k], ..] += (or, assigning, =) src[.., k, ..] along axis, index 1-D. */
static ct_status index_add_along(ct_tensor *dst, int axis, const ct_tensor *index,
                                 const ct_tensor *src, const char *op, bool assign) {
    int64_t index_strides[CT_MAX_DIMS] = {0};
    index_strides[axis] = index->strides[0];
    return run_index_add(op, dst, axis, index, index_strides, src, src->shape, assign);
}

ct_status ct__index_add_into(ct_tensor *dst, int axis, const ct_tensor *index, const ct_tensor *src,
                             const char *op) {
    return index_add_along(dst, axis, index, src, op, false);
}

/* Common checks: devices, axis, the index's dtype, src's dtype and rank. */
static bool check_common(const char *op, const ct_tensor *x, int axis, const ct_tensor *index,
                         const ct_tensor *src, int *a) {
    const ct_tensor *args[3] = {x, index, src};
    ct_device device;
    if (!ct__check_args_complex(op, 3, args, &device)) return false;
    if (ct__normalize_axis(op, axis, x->ndim, a) != CT_OK) return false;
    if (!ct__nn_check_index(op, index, "index")) return false;
    if (src->dtype != x->dtype)
        return ct__error(CT_ERR_DTYPE,
                         "%s: the source has dtype %s but x has %s; they must match (convert "
                         "with ct_cast)",
                         op, ct_dtype_name(src->dtype), ct_dtype_name(x->dtype)),
               false;
    if (src->ndim != x->ndim)
        return ct__error(CT_ERR_SHAPE,
                         "%s: the source has rank %d but x has rank %d; they must "
                         "match",
                         op, src->ndim, x->ndim),
               false;
    return true;
}

/* The copy of x that receives the additions, and the node over (x, index, src). */
static ct_tensor *add_and_record(const char *op, ct__backward_fn backward, const ct_tensor *x,
                                 int a, const ct_tensor *index, const ct_tensor *src,
                                 bool scatter) {
    ct_no_grad_push();
    ct_tensor *out = ct_clone(x);
    ct_status status = CT_ERR_INVALID_ARG;
    if (out) {
        int64_t index_strides[CT_MAX_DIMS] = {0};
        if (scatter)
            memcpy(index_strides, index->strides, sizeof index_strides);
        else
            index_strides[a] = index->strides[0];
        status = run_index_add(op, out, a, index, index_strides, src,
                               scatter ? index->shape : src->shape, false);
    }
    ct_no_grad_pop();
    if (status != CT_OK) {
        ct_release(out);
        return NULL;
    }
    const ct_tensor *inputs[3] = {x, index, src};
    if (!ct__grad_needed(3, inputs)) return out;
    ct__node *node = ct__node_new(op, backward, 3, inputs);
    if (node) {
        ct__node_save(node, 0, index);
        node->ints[0] = a;
    }
    return ct__record(out, node);
}

static ct_status index_add_backward(ct__node *node, const ct_tensor *grad_out,
                                    ct_tensor **grad_in) {
    if (node->inputs[0] && !(grad_in[0] = ct__new_ref(grad_out))) return ct_last_status();
    if (node->inputs[2]) {
        grad_in[2] = ct_index_select(grad_out, (int)node->ints[0], node->saved[0]);
        if (!grad_in[2]) return ct_last_status();
    }
    return CT_OK;
}

/* The kernel checks each index as it adds, so an empty source (an axis off `a` is 0) would
 * let a bad index pass: run it on stand-ins for axis a alone to check them (one element
 * expanded, as the axis may be huge; the additions all land in it). */
static ct_status check_unread_indices(const char *op, const ct_tensor *x, int a,
                                      const ct_tensor *index) {
    ct_tensor *one = ct__full_on(x->storage->device, 1, (int64_t[]){1}, 0.0, CT_U8);
    ct_tensor *row = one ? ct_expand(one, 1, &x->shape[a]) : NULL;
    ct_tensor *src = one ? ct_expand(one, 1, index->shape) : NULL;
    ct_status status =
        row && src ? run_index_add(op, row, 0, index, index->strides, src, index->shape, false)
                   : ct_last_status();
    ct_release(src);
    ct_release(row);
    ct_release(one);
    return status;
}

/* The checks of ct_index_add and ct_index_copy: a 1-D index, and source shaped as x with
 * the index's length on axis a. */
static bool check_index_source(const char *op, const ct_tensor *x, int axis, const ct_tensor *index,
                               const ct_tensor *source, int *a) {
    if (!check_common(op, x, axis, index, source, a)) return false;
    if (index->ndim != 1)
        return ct__error(CT_ERR_SHAPE, "%s: the index has rank %d; it must be 1-D", op,
                         index->ndim),
               false;
    for (int d = 0; d < x->ndim; d++) {
        int64_t want = d == *a ? index->shape[0] : x->shape[d];
        if (source->shape[d] != want)
            return ct__error(CT_ERR_SHAPE,
                             "%s: axis %d of the source has size %lld; it must be %lld (x's "
                             "shape, with the index's length on axis %d)",
                             op, d, (long long)source->shape[d], (long long)want, *a),
                   false;
    }
    return true;
}

ct_tensor *ct_index_add(const ct_tensor *x, int axis, const ct_tensor *index,
                        const ct_tensor *source) {
    const char *op = "ct_index_add";
    int a;
    if (!check_index_source(op, x, axis, index, source, &a)) return NULL;
    if (source->numel == 0 && index->numel > 0 && check_unread_indices(op, x, a, index) != CT_OK)
        return NULL;
    return add_and_record(op, index_add_backward, x, a, index, source, false);
}

ct_status ct_index_copy(ct_tensor *dst, int axis, const ct_tensor *index, const ct_tensor *source) {
    const char *op = "ct_index_copy";
    int a;
    if (!check_index_source(op, dst, axis, index, source, &a)) return ct_last_status();
    if (ct__check_writable(op, dst) != CT_OK) return ct_last_status();
    /* Every index is checked before anything is written, so a bad one leaves dst as it was. */
    if (index->numel > 0 && check_unread_indices(op, dst, a, index) != CT_OK)
        return ct_last_status();
    if (dst->numel == 0 || index->numel == 0) return CT_OK;
    ct__storage_written(dst);
    /* A source that shares dst's memory is read from a snapshot, as ct_copy reads. */
    ct_tensor *snapshot = ct_shares_storage(dst, source) ? ct_clone(source) : NULL;
    if (ct_shares_storage(dst, source) && !snapshot) return ct_last_status();
    ct_status status = index_add_along(dst, a, index, snapshot ? snapshot : source, op, true);
    ct_release(snapshot);
    return status;
}

/* The source's gradient: the upstream gradient gathered at the index, zero where the
 * source lies beyond the index's shape. */
static ct_tensor *scatter_source_grad(const ct_tensor *grad_out, int a, const ct_tensor *index,
                                      const ct_tensor *src) {
    ct_tensor *gathered = ct_gather(grad_out, a, index);
    if (!gathered || (src->ndim == index->ndim &&
                      memcmp(src->shape, index->shape, sizeof(int64_t) * (size_t)src->ndim) == 0))
        return gathered;
    ct_tensor *grad =
        ct__full_on(gathered->storage->device, src->ndim, src->shape, 0.0, gathered->dtype);
    ct_tensor *region = grad ? ct__tensor_view(grad, grad->dtype, index->ndim, index->shape,
                                               grad->strides, grad->offset)
                             : NULL;
    ct_status status = region ? ct__copy_into(region, gathered, "ct_scatter_add") : CT_ERR_STATE;
    ct_release(region);
    ct_release(gathered);
    if (status == CT_OK) return grad;
    ct_release(grad);
    return NULL;
}

static ct_status scatter_add_backward(ct__node *node, const ct_tensor *grad_out,
                                      ct_tensor **grad_in) {
    if (node->inputs[0] && !(grad_in[0] = ct__new_ref(grad_out))) return ct_last_status();
    if (node->inputs[2]) {
        grad_in[2] =
            scatter_source_grad(grad_out, (int)node->ints[0], node->saved[0], node->inputs[2]);
        if (!grad_in[2]) return ct_last_status();
    }
    return CT_OK;
}

static ct_tensor *scatter_add(const ct_tensor *x, int axis, const ct_tensor *index,
                              const ct_tensor *src) {
    const char *op = "ct_scatter_add";
    int a;
    if (!check_common(op, x, axis, index, src, &a)) return NULL;
    if (index->ndim != x->ndim)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: the index has rank %d but x has rank %d; they must "
                        "match",
                        op, index->ndim, x->ndim);
    for (int d = 0; d < x->ndim; d++) {
        if (index->shape[d] > src->shape[d] || (d != a && index->shape[d] > x->shape[d]))
            return ct__fail(CT_ERR_SHAPE,
                            "%s: axis %d of the index has size %lld, larger than the source's "
                            "(%lld)%s; the index may not be larger than the source, nor than x "
                            "off the scatter axis",
                            op, d, (long long)index->shape[d], (long long)src->shape[d],
                            d != a ? " or x's" : "");
    }
    return add_and_record(op, scatter_add_backward, x, a, index, src, true);
}

ct_tensor *ct_scatter_add(const ct_tensor *x, int axis, const ct_tensor *index,
                          const ct_tensor *src) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_SCATTER_ADD, 3, (const ct_tensor **[]){&x, &index, &src}))
        return NULL;
    ct_tensor *out = scatter_add(x, axis, index, src);
    ct__autocast_end(&ac);
    return out;
}

/* Indexing and joining ops: ct_index_select and ct_gather (both through the backend's
 * gather kernel), ct_concat and ct_stack (copies of each piece into its region of the
 * output, through the copy kernel), and ct_split (views). */
#include <stdio.h>
#include <string.h>

#include "ops/grad_impl.h"
#include "ops/op_impl.h"

static bool check_index_dtype(const char *op, const ct_tensor *index) {
    if (index->dtype == CT_I32 || index->dtype == CT_I64) return true;
    ct__error(CT_ERR_DTYPE,
              "%s: the index has dtype %s; it must be CT_I32 or CT_I64 (convert it "
              "with ct_cast)",
              op, ct_dtype_name(index->dtype));
    return false;
}

/* Fill out (shaped like the index iteration) from x through the gather kernel. The index
 * is read with index_strides over out's axes; x is read with its own strides, its `axis`
 * stride applied to the index value instead. Releases out and returns NULL on failure, with
 * the kernel's message (say, a bad index) prefixed by op. */
static ct_tensor *run_gather(const char *op, ct_device device, ct_tensor *out,
                             const ct_tensor *index, const int64_t *index_strides,
                             const ct_tensor *x, int axis) {
    if (out->numel == 0) return out;
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) {
        ct_release(out);
        return NULL;
    }
    ct__gather_args g;
    ct__ew_init(&g.it, out->ndim, out->shape);
    ct__ew_add(&g.it, out);
    ct__ew_add_strided(&g.it, ct__data(index), index->dtype, index_strides);
    int64_t src_strides[CT_MAX_DIMS];
    memcpy(src_strides, x->strides, sizeof src_strides);
    src_strides[axis] = 0;
    ct__ew_add_strided(&g.it, ct__data(x), x->dtype, src_strides);
    ct__ew_coalesce(&g.it);
    g.src_axis_stride = x->strides[axis];
    g.src_axis_size = x->shape[axis];
    if (ct__kernel_readback(device, CT_SLOT_gather, op) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    if (k->gather(physical, &g) != CT_OK) {
        char message[512];
        snprintf(message, sizeof message, "%s", ct_last_error());
        ct__error(ct_last_status(), "%s: %s", op, message);
        ct_release(out);
        return NULL;
    }
    return out;
}

/* The kernel checks each index as it copies, so an empty result (another axis of x is 0)
 * would let a bad index pass: select from a stand-in for x's axis alone to check them (one
 * element expanded, as the axis may be huge). */
static bool check_unread_indices(ct_device device, const ct_tensor *x, int a,
                                 const ct_tensor *index) {
    ct_tensor *one = ct__full_on(device, 1, (int64_t[]){1}, 0.0, CT_U8);
    ct_tensor *row = one ? ct_expand(one, 1, &x->shape[a]) : NULL;
    ct_tensor *picked = row ? ct_index_select(row, 0, index) : NULL;
    bool ok = picked != NULL;
    ct_release(one);
    ct_release(row);
    ct_release(picked);
    return ok;
}

ct_tensor *ct_index_select(const ct_tensor *x, int axis, const ct_tensor *index) {
    const char *op = "ct_index_select";
    const ct_tensor *args[2] = {x, index};
    ct_device device;
    int a;
    if (!ct__check_args_complex(op, 2, args, &device)) return NULL;
    if (ct__normalize_axis(op, axis, x->ndim, &a) != CT_OK) return NULL;
    if (!check_index_dtype(op, index)) return NULL;
    if (index->ndim != 1)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: the index has rank %d; it must be 1-D (use ct_flatten, or ct_gather "
                        "for an index of x's rank)",
                        op, index->ndim);
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[a] = index->shape[0];
    ct_tensor *out = ct__tensor_new(device, x->dtype, x->ndim, shape);
    if (!out) return NULL;
    if (out->numel == 0 && index->numel > 0 && !check_unread_indices(device, x, a, index)) {
        ct_release(out);
        return NULL;
    }
    /* The 1-D index seen over the output's axes: it moves along `axis` only. */
    int64_t index_strides[CT_MAX_DIMS] = {0};
    index_strides[a] = index->strides[0];
    out = run_gather(op, device, out, index, index_strides, x, a);
    return ct__grad_needed(1, &x) ? ct__record_index_select(out, x, a, index) : out;
}

ct_tensor *ct_gather(const ct_tensor *x, int axis, const ct_tensor *index) {
    const char *op = "ct_gather";
    const ct_tensor *args[2] = {x, index};
    ct_device device;
    int a;
    if (!ct__check_args_complex(op, 2, args, &device)) return NULL;
    if (ct__normalize_axis(op, axis, x->ndim, &a) != CT_OK) return NULL;
    if (!check_index_dtype(op, index)) return NULL;
    if (index->ndim != x->ndim)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: the index has rank %d but x has rank %d; they must "
                        "match",
                        op, index->ndim, x->ndim);
    for (int d = 0; d < x->ndim; d++)
        if (d != a && index->shape[d] > x->shape[d])
            return ct__fail(CT_ERR_SHAPE,
                            "%s: axis %d of the index has size %lld but x's has %lld; off the "
                            "gather axis the index may not be larger than x",
                            op, d, (long long)index->shape[d], (long long)x->shape[d]);
    ct_tensor *out = ct__tensor_new(device, x->dtype, index->ndim, index->shape);
    if (!out) return NULL;
    out = run_gather(op, device, out, index, index->strides, x, a);
    return ct__grad_needed(1, &x) ? ct__record_gather(out, x, a, index) : out;
}

/* Common checks of ct_concat and ct_stack: n, the array, devices; the promoted dtype. */
static bool check_pieces(const char *op, int n, const ct_tensor *const *tensors, ct_device *device,
                         ct_dtype *dtype) {
    if (n <= 0) {
        ct__error(CT_ERR_INVALID_ARG, "%s: n is %d; give at least one tensor", op, n);
        return false;
    }
    if (!tensors) {
        ct__error(CT_ERR_INVALID_ARG, "%s: tensors is NULL", op);
        return false;
    }
    if (!ct__check_args_complex(op, n, tensors, device)) return false;
    *dtype = tensors[0]->dtype;
    for (int i = 1; i < n; i++) *dtype = ct_promote_types(*dtype, tensors[i]->dtype);
    return true;
}

/* Copy each piece into out: piece i starts `axis` position pos_i (the running sum of the
 * pieces' sizes along axis for concat, i for stack) and is addressed with out's strides
 * (for stack, without the stacked axis). Releases out and returns NULL on failure. */
static ct_tensor *fill_pieces(const char *op, ct_device device, int n,
                              const ct_tensor *const *tensors, ct_tensor *out, int axis,
                              bool stacked) {
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) goto fail;
    int64_t dst_strides[CT_MAX_DIMS];
    for (int d = 0, s = 0; d < out->ndim; d++)
        if (!stacked || d != axis) dst_strides[s++] = out->strides[d];
    int64_t size = (int64_t)ct__dtype_size(out->dtype), pos = 0;
    for (int i = 0; i < n; i++) {
        const ct_tensor *piece = tensors[i];
        int64_t at = pos;
        pos += stacked ? 1 : piece->shape[axis];
        if (piece->numel == 0) continue;
        /* A 0-d CPU piece joins a device op as a scalar: bring it over first. */
        ct_tensor *src = ct__operand_on(piece, device, op);
        if (!src) goto fail;
        ct__ew_args args;
        ct__ew_init(&args, piece->ndim, piece->shape);
        ct__ew_add_strided(&args, ct__data(out) + at * out->strides[axis] * size, out->dtype,
                           dst_strides);
        ct__ew_add(&args, src);
        ct__ew_coalesce(&args);
        ct_status status = k->copy(physical, &args);
        ct_release(src);
        if (status != CT_OK) goto fail;
    }
    return out;
fail:
    ct_release(out);
    return NULL;
}

ct_tensor *ct_concat(int n, const ct_tensor *const *tensors, int axis) {
    const char *op = "ct_concat";
    ct_device device;
    ct_dtype dtype;
    int a;
    if (!check_pieces(op, n, tensors, &device, &dtype)) return NULL;
    const ct_tensor *first = tensors[0];
    if (first->ndim == 0)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: argument 1 is 0-d; concatenation needs an axis (use "
                        "ct_stack to join 0-d tensors)",
                        op);
    if (ct__normalize_axis(op, axis, first->ndim, &a) != CT_OK) return NULL;
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, first->shape, sizeof shape);
    for (int i = 1; i < n; i++) {
        const ct_tensor *t = tensors[i];
        if (t->ndim != first->ndim)
            return ct__fail(CT_ERR_SHAPE,
                            "%s: argument %d has rank %d but argument 1 has rank "
                            "%d; all must have the same rank",
                            op, i + 1, t->ndim, first->ndim);
        for (int d = 0; d < t->ndim; d++)
            if (d != a && t->shape[d] != first->shape[d])
                return ct__fail(CT_ERR_SHAPE,
                                "%s: argument %d has size %lld on axis %d but argument 1 has "
                                "%lld; every axis but the joined one (%d) must match",
                                op, i + 1, (long long)t->shape[d], d, (long long)first->shape[d],
                                a);
        if (__builtin_add_overflow(shape[a], t->shape[a], &shape[a]))
            return ct__fail(CT_ERR_SHAPE, "%s: the joined size overflows", op);
    }
    ct_tensor *out = ct__tensor_new(device, dtype, first->ndim, shape);
    if (!out) return NULL;
    out = fill_pieces(op, device, n, tensors, out, a, false);
    return ct__grad_needed(n, tensors) ? ct__record_concat(out, n, tensors, a, false) : out;
}

ct_tensor *ct_stack(int n, const ct_tensor *const *tensors, int axis) {
    const char *op = "ct_stack";
    ct_device device;
    ct_dtype dtype;
    if (!check_pieces(op, n, tensors, &device, &dtype)) return NULL;
    const ct_tensor *first = tensors[0];
    if (first->ndim >= CT_MAX_DIMS)
        return ct__fail(CT_ERR_SHAPE, "%s: the pieces already have the maximum rank %d", op,
                        CT_MAX_DIMS);
    int a = axis < 0 ? axis + first->ndim + 1 : axis;
    if (a < 0 || a > first->ndim)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: axis %d is out of range for stacking tensors of rank %d (use -%d "
                        "to %d)",
                        op, axis, first->ndim, first->ndim + 1, first->ndim);
    for (int i = 1; i < n; i++) {
        const ct_tensor *t = tensors[i];
        bool same = t->ndim == first->ndim &&
                    memcmp(t->shape, first->shape, sizeof(int64_t) * (size_t)t->ndim) == 0;
        if (!same)
            return ct__fail(CT_ERR_SHAPE,
                            "%s: argument %d's shape differs from argument 1's; "
                            "stacked tensors must all have the same shape",
                            op, i + 1);
    }
    int64_t shape[CT_MAX_DIMS];
    for (int d = 0, s = 0; d <= first->ndim; d++) shape[d] = d == a ? n : first->shape[s++];
    ct_tensor *out = ct__tensor_new(device, dtype, first->ndim + 1, shape);
    if (!out) return NULL;
    out = fill_pieces(op, device, n, tensors, out, a, true);
    return ct__grad_needed(n, tensors) ? ct__record_concat(out, n, tensors, a, true) : out;
}

ct_status ct_split(const ct_tensor *x, int64_t split_size, int axis, ct_tensor **out, int capacity,
                   int *count) {
    const char *op = "ct_split";
    ct_device device;
    int a;
    if (!ct__check_args_complex(op, 1, &x, &device)) return ct_last_status();
    if (ct__normalize_axis(op, axis, x->ndim, &a) != CT_OK) return ct_last_status();
    if (split_size <= 0)
        return ct__error(CT_ERR_INVALID_ARG, "%s: split_size is %lld; it must be positive", op,
                         (long long)split_size);
    if (!count || capacity < 0 || (capacity > 0 && !out))
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: out needs room for capacity (>= 0) tensors and count must not be "
                         "NULL",
                         op);
    int64_t size = x->shape[a];
    /* An empty axis still gives one (empty) piece, as torch.split does. */
    int64_t pieces = size == 0 ? 1 : (size - 1) / split_size + 1;
    if (pieces > capacity)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: splitting size %lld into pieces of %lld makes %lld tensors but "
                         "capacity is %d; pass room for all of them",
                         op, (long long)size, (long long)split_size, (long long)pieces, capacity);
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    for (int64_t i = 0; i < pieces; i++) {
        int64_t start = i * split_size;
        shape[a] = size - start < split_size ? size - start : split_size;
        out[i] = ct__tensor_view(x, x->dtype, x->ndim, shape, x->strides,
                                 x->offset + start * x->strides[a]);
        if (out[i] && ct__grad_needed(1, &x)) out[i] = ct__record_slice(out[i], x, a, start, 1);
        if (!out[i]) {
            for (int64_t j = 0; j < i; j++) {
                ct_release(out[j]);
                out[j] = NULL;
            }
            return ct_last_status();
        }
    }
    *count = (int)pieces;
    return CT_OK;
}

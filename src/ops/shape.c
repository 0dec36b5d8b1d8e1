/* Shape ops that make views of a tensor's storage: reshape, view, flatten, squeeze,
 * unsqueeze, transpose, permute, expand and slice. Each computes a new shape, strides and
 * offset and wraps them around the same storage (ct__tensor_view); only ct_reshape (and
 * ct_flatten, which is a reshape) copies, and only when no strides can describe the new
 * shape over the old layout. */
#include <stdio.h>
#include <string.h>

#include "ops/grad_impl.h"
#include "ops/op_impl.h"

/* "(2, 3)" style text for messages. */
static void shape_text(char *buf, size_t size, int ndim, const int64_t *shape) {
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < ndim && used < size; i++)
        used +=
            (size_t)snprintf(buf + used, size - used, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (used < size) snprintf(buf + used, size - used, ndim == 1 ? ",)" : ")");
}

/* One argument check for every single-tensor op here. */
static bool check_x(const char *op, const ct_tensor *x) {
    ct_device device;
    return ct__check_args_complex(op, 1, &x, &device);
}

/* Resolve a requested shape (one entry may be -1) against x's element count. */
static ct_status infer_shape(const char *op, const ct_tensor *x, int ndim, const int64_t *shape,
                             int64_t *out) {
    if (ndim < 0 || ndim > CT_MAX_DIMS)
        return ct__error(CT_ERR_SHAPE, "%s: rank %d is outside 0..%d", op, ndim, CT_MAX_DIMS);
    if (ndim > 0 && !shape)
        return ct__error(CT_ERR_INVALID_ARG, "%s: shape is NULL for rank %d", op, ndim);
    int inferred = -1;
    int64_t known = 1;
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (inferred >= 0)
                return ct__error(CT_ERR_SHAPE,
                                 "%s: axes %d and %d are both -1; only one size can be inferred",
                                 op, inferred, i);
            inferred = i;
        } else if (shape[i] < 0) {
            return ct__error(CT_ERR_SHAPE,
                             "%s: size %lld of axis %d is negative (only -1, "
                             "for an inferred size, is allowed)",
                             op, (long long)shape[i], i);
        } else if (ct__mul_overflow_i64(known, shape[i], &known)) {
            return ct__error(CT_ERR_SHAPE, "%s: the shape's element count overflows", op);
        }
    }
    char want[CT__SHAPE_TEXT_SIZE];
    shape_text(want, sizeof want, ndim, shape);
    if (inferred >= 0) {
        if (known == 0 || x->numel % known != 0)
            return ct__error(CT_ERR_SHAPE,
                             "%s: cannot infer the -1 in shape %s for a tensor of %lld "
                             "elements; the other sizes must divide it (and not be 0)",
                             op, want, (long long)x->numel);
        out[inferred] = x->numel / known;
    } else if (known != x->numel) {
        return ct__error(CT_ERR_SHAPE,
                         "%s: shape %s holds %lld elements but the tensor has %lld; the "
                         "element count must stay the same",
                         op, want, (long long)known, (long long)x->numel);
    }
    if (ct__shape_extent(ndim, out) < 0)
        return ct__error(CT_ERR_SHAPE,
                         "%s: shape %s has sizes other than 0 that multiply past 2^59; even "
                         "with no elements its strides would overflow",
                         op, want);
    return CT_OK;
}

/* Strides that lay `shape` over x's memory without moving elements, as PyTorch decides it:
 * x's axes fall into chunks that are contiguous among themselves, and each chunk must be
 * covered exactly by a run of new axes. Returns false when no such strides exist. */
static bool view_strides(const ct_tensor *x, int ndim, const int64_t *shape, int64_t *strides) {
    if (x->numel == 0 || x->ndim == 0 || ct_is_contiguous(x)) {
        ct__contiguous_strides(ndim, shape, strides);
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base = x->strides[x->ndim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        tensor_numel *= x->shape[d];
        bool chunk_ends =
            d == 0 || (x->shape[d - 1] != 1 && x->strides[d - 1] != tensor_numel * chunk_base);
        if (!chunk_ends) continue;
        while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
            strides[view_d] = view_numel * chunk_base;
            view_numel *= shape[view_d];
            view_d--;
        }
        if (view_numel != tensor_numel) return false;
        if (d > 0) {
            chunk_base = x->strides[d - 1];
            tensor_numel = view_numel = 1;
        }
    }
    return view_d == -1;
}

/* out recorded as a reshape of x when x requires grad. */
static ct_tensor *as_reshape(ct_tensor *out, const ct_tensor *x, const char *op) {
    return ct__grad_needed(1, &x) ? ct__record_reshape(out, x, op) : out;
}

/* A view of x with shape (already resolved), or a contiguous copy when allow_copy. */
static ct_tensor *reshaped(const char *op, const ct_tensor *x, int ndim, const int64_t *shape,
                           bool allow_copy) {
    int64_t strides[CT_MAX_DIMS];
    if (view_strides(x, ndim, shape, strides))
        return ct__tensor_view(x, x->dtype, ndim, shape, strides, x->offset);
    if (!allow_copy) {
        char from[CT__SHAPE_TEXT_SIZE], to[CT__SHAPE_TEXT_SIZE], st[CT__SHAPE_TEXT_SIZE];
        shape_text(from, sizeof from, x->ndim, x->shape);
        shape_text(st, sizeof st, x->ndim, x->strides);
        shape_text(to, sizeof to, ndim, shape);
        return ct__fail(CT_ERR_SHAPE,
                        "%s: shape %s cannot be a view of a tensor of shape %s with strides %s "
                        "(its axes are not laid out contiguously enough); use ct_reshape, "
                        "which copies when needed, or call ct_contiguous first",
                        op, to, from, st);
    }
    ct_tensor *dense = ct_contiguous(x);
    if (!dense) return NULL;
    ct__contiguous_strides(ndim, shape, strides);
    ct_tensor *out = ct__tensor_view(dense, x->dtype, ndim, shape, strides, dense->offset);
    ct_release(dense);
    return out;
}

ct_tensor *ct_reshape(const ct_tensor *x, int ndim, const int64_t *shape) {
    int64_t resolved[CT_MAX_DIMS];
    if (!check_x("ct_reshape", x)) return NULL;
    if (infer_shape("ct_reshape", x, ndim, shape, resolved) != CT_OK) return NULL;
    return as_reshape(reshaped("ct_reshape", x, ndim, resolved, true), x, "ct_reshape");
}

ct_tensor *ct_view(const ct_tensor *x, int ndim, const int64_t *shape) {
    int64_t resolved[CT_MAX_DIMS];
    if (!check_x("ct_view", x)) return NULL;
    if (infer_shape("ct_view", x, ndim, shape, resolved) != CT_OK) return NULL;
    return as_reshape(reshaped("ct_view", x, ndim, resolved, false), x, "ct_view");
}

ct_tensor *ct_flatten(const ct_tensor *x, int start_axis, int end_axis) {
    if (!check_x("ct_flatten", x)) return NULL;
    /* A 0-d tensor flattens to one element, as if it had one axis of size 1. */
    int rank = x->ndim ? x->ndim : 1;
    int start, end;
    if (ct__normalize_axis("ct_flatten", start_axis, rank, &start) != CT_OK ||
        ct__normalize_axis("ct_flatten", end_axis, rank, &end) != CT_OK)
        return NULL;
    if (start > end)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_flatten: start axis %d comes after end axis %d; pass them in order",
                        start_axis, end_axis);
    int64_t shape[CT_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < start; d++) shape[ndim++] = x->shape[d];
    int64_t merged = 1;
    for (int d = start; d <= end && d < x->ndim; d++) merged *= x->shape[d];
    shape[ndim++] = merged;
    for (int d = end + 1; d < x->ndim; d++) shape[ndim++] = x->shape[d];
    return as_reshape(reshaped("ct_flatten", x, ndim, shape, true), x, "ct_flatten");
}

ct_tensor *ct_squeeze(const ct_tensor *x, int axis) {
    if (!check_x("ct_squeeze", x)) return NULL;
    int only = -1;
    if (axis != CT_AXIS_NONE) {
        if (ct__normalize_axis("ct_squeeze", axis, x->ndim, &only) != CT_OK) return NULL;
        if (x->shape[only] != 1)
            return ct__fail(CT_ERR_SHAPE,
                            "ct_squeeze: axis %d has size %lld; only an axis of size 1 can be "
                            "removed (use CT_AXIS_NONE to remove every size-1 axis)",
                            axis, (long long)x->shape[only]);
    }
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        bool drop = only >= 0 ? d == only : x->shape[d] == 1;
        if (drop) continue;
        shape[ndim] = x->shape[d];
        strides[ndim++] = x->strides[d];
    }
    return as_reshape(ct__tensor_view(x, x->dtype, ndim, shape, strides, x->offset), x,
                      "ct_squeeze");
}

ct_tensor *ct_unsqueeze(const ct_tensor *x, int axis) {
    if (!check_x("ct_unsqueeze", x)) return NULL;
    if (x->ndim >= CT_MAX_DIMS)
        return ct__fail(CT_ERR_SHAPE, "ct_unsqueeze: the tensor already has the maximum rank %d",
                        CT_MAX_DIMS);
    int a = axis < 0 ? axis + x->ndim + 1 : axis;
    if (a < 0 || a > x->ndim)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_unsqueeze: axis %d is out of range for inserting into a tensor of "
                        "rank %d (use -%d to %d)",
                        axis, x->ndim, x->ndim + 1, x->ndim);
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    for (int d = 0, s = 0; d <= x->ndim; d++) {
        if (d == a) {
            /* The stride of a size-1 axis is never used; this one keeps the result
             * contiguous when x is. */
            shape[d] = 1;
            strides[d] = a < x->ndim ? x->shape[a] * x->strides[a] : 1;
            continue;
        }
        shape[d] = x->shape[s];
        strides[d] = x->strides[s++];
    }
    return as_reshape(ct__tensor_view(x, x->dtype, x->ndim + 1, shape, strides, x->offset), x,
                      "ct_unsqueeze");
}

ct_tensor *ct_transpose(const ct_tensor *x, int axis0, int axis1) {
    if (!check_x("ct_transpose", x)) return NULL;
    int a, b;
    if (ct__normalize_axis("ct_transpose", axis0, x->ndim, &a) != CT_OK ||
        ct__normalize_axis("ct_transpose", axis1, x->ndim, &b) != CT_OK)
        return NULL;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    memcpy(strides, x->strides, sizeof strides);
    shape[a] = x->shape[b];
    strides[a] = x->strides[b];
    shape[b] = x->shape[a];
    strides[b] = x->strides[a];
    ct_tensor *out = ct__tensor_view(x, x->dtype, x->ndim, shape, strides, x->offset);
    if (!ct__grad_needed(1, &x)) return out;
    int perm[CT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) perm[d] = d == a ? b : d == b ? a : d;
    return ct__record_permute(out, x, x->ndim, perm);
}

ct_tensor *ct_permute(const ct_tensor *x, int ndim, const int *perm) {
    if (!check_x("ct_permute", x)) return NULL;
    if (ndim != x->ndim)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_permute: the permutation has %d entries but the tensor has rank %d; "
                        "give one entry per axis",
                        ndim, x->ndim);
    if (ndim > 0 && !perm)
        return ct__fail(CT_ERR_INVALID_ARG, "ct_permute: perm is NULL for rank %d", ndim);
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    bool seen[CT_MAX_DIMS] = {false};
    int axes[CT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        int a;
        if (ct__normalize_axis("ct_permute", perm[d], ndim, &a) != CT_OK) return NULL;
        if (seen[a])
            return ct__fail(CT_ERR_INVALID_ARG,
                            "ct_permute: axis %d appears twice; perm must name every axis once",
                            perm[d]);
        seen[a] = true;
        axes[d] = a;
        shape[d] = x->shape[a];
        strides[d] = x->strides[a];
    }
    ct_tensor *out = ct__tensor_view(x, x->dtype, ndim, shape, strides, x->offset);
    return ct__grad_needed(1, &x) ? ct__record_permute(out, x, ndim, axes) : out;
}

ct_tensor *ct_expand(const ct_tensor *x, int ndim, const int64_t *shape) {
    if (!check_x("ct_expand", x)) return NULL;
    if (ndim < x->ndim || ndim > CT_MAX_DIMS)
        return ct__fail(CT_ERR_SHAPE,
                        "ct_expand: rank %d is outside %d..%d; the target keeps every axis of "
                        "the tensor (rank %d) and may add leading ones",
                        ndim, x->ndim, CT_MAX_DIMS, x->ndim);
    if (ndim > 0 && !shape)
        return ct__fail(CT_ERR_INVALID_ARG, "ct_expand: shape is NULL for rank %d", ndim);
    int64_t out_shape[CT_MAX_DIMS], strides[CT_MAX_DIMS], numel = 1;
    int lead = ndim - x->ndim;
    for (int d = 0; d < ndim; d++) {
        int64_t want = shape[d], have = d < lead ? 1 : x->shape[d - lead];
        if (want < -1 || (want == -1 && d < lead))
            return ct__fail(CT_ERR_SHAPE,
                            "ct_expand: size %lld for axis %d is invalid; use a size >= 0, or -1 "
                            "to keep an existing axis",
                            (long long)want, d);
        if (want == -1) want = have;
        if (want != have && have != 1)
            return ct__fail(CT_ERR_SHAPE,
                            "ct_expand: axis %d has size %lld and cannot expand to %lld; only "
                            "size-1 axes stretch",
                            d - lead, (long long)have, (long long)want);
        if (ct__mul_overflow_i64(numel, want, &numel))
            return ct__fail(CT_ERR_SHAPE, "ct_expand: the shape's element count overflows");
        out_shape[d] = want;
        strides[d] = d < lead || (have == 1 && want != 1) ? 0 : x->strides[d - lead];
    }
    ct_tensor *out = ct__tensor_view(x, x->dtype, ndim, out_shape, strides, x->offset);
    return ct__grad_needed(1, &x) ? ct__record_identity(out, x, "ct_expand") : out;
}

/* Python's slice.indices: clamp a bound into the range the step can start or stop at. */
static int64_t clamp_bound(int64_t bound, int64_t size, int64_t step) {
    int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? size : size - 1;
    if (bound < 0) {
        bound += size; /* cannot overflow: size >= 0 and bound < 0 */
        return bound < lower ? lower : bound;
    }
    return bound > upper ? upper : bound;
}

ct_tensor *ct_slice(const ct_tensor *x, int axis, int64_t start, int64_t stop, int64_t step) {
    if (!check_x("ct_slice", x)) return NULL;
    int a;
    if (ct__normalize_axis("ct_slice", axis, x->ndim, &a) != CT_OK) return NULL;
    if (step == 0)
        return ct__fail(CT_ERR_INVALID_ARG, "ct_slice: step is 0; use a positive step, or a "
                                            "negative one to walk backwards");
    int64_t size = x->shape[a];
    int64_t first = clamp_bound(start, size, step), last = clamp_bound(stop, size, step);
    /* Unsigned arithmetic: |step| of INT64_MIN does not fit an int64. */
    uint64_t span = step > 0 ? (uint64_t)(last - first) : (uint64_t)(first - last);
    uint64_t stride_abs = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
    bool nonempty = step > 0 ? last > first : first > last;
    int64_t length = nonempty ? (int64_t)((span - 1) / stride_abs + 1) : 0;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    memcpy(strides, x->strides, sizeof strides);
    shape[a] = length;
    /* With two or more elements |step| < size, so the product stays within the storage's
     * offsets; a shorter axis keeps its stride (never used to move). */
    if (length > 1) strides[a] = x->strides[a] * step;
    int64_t offset = x->offset + (length > 0 ? first * x->strides[a] : 0);
    ct_tensor *out = ct__tensor_view(x, x->dtype, x->ndim, shape, strides, offset);
    return ct__grad_needed(1, &x) ? ct__record_slice(out, x, a, length > 0 ? first : 0, step) : out;
}

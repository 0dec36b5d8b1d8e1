/* Order statistics composed of the core's ops (ctensor/stats.h): ct_median, ct_nanmedian and
 * their _dim forms (the element at a middle position of ct_argsort's order, picked with
 * ct_gather), ct_quantile and ct_nanquantile (torch.quantile's algorithm: the rows sorted,
 * fractional ranks q (n - 1) read by ct_gather and interpolated with ct_lerp). Their
 * gradients are those of the gathers: to the elements picked. */
#include <math.h>

#include "ctensor/stats.h"
#include "ops/op_impl.h"

/* Release n tensors. */
static void release_all(int n, ct_tensor **t) {
    for (int i = 0; i < n; i++) ct_release(t[i]);
}

/* The number of NaNs of each row of x along axis (CT_I64, the axis kept as size 1). */
static ct_tensor *nan_count(const ct_tensor *x, int axis, ct_dtype dtype) {
    ct_tensor *nan = ct_isnan(x);
    ct_tensor *wide = nan ? ct_cast(nan, dtype) : NULL;
    ct_tensor *count = wide ? ct_sum(wide, 1, &axis, true) : NULL;
    ct_release(nan);
    ct_release(wide);
    return count;
}

/* The position in each sorted row (x's shape with axis as size 1, CT_I64) of its median:
 * (n - 1) / 2, or with NaNs in the row the first NaN (n - nans), or, ignoring NaN, the
 * middle of the row's numbers ((n - 1 - nans) / 2, 0 for a row of NaNs). */
static ct_tensor *middle(const ct_tensor *x, int axis, bool ignore_nan, ct_device device) {
    int64_t n = x->shape[axis], shape[CT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) shape[d] = d == axis ? 1 : x->shape[d];
    if (!ct_dtype_is_floating(x->dtype))
        return ct__full_on(device, x->ndim, shape, (double)((n - 1) / 2), CT_I64);
    ct_tensor *t[5] = {NULL}, *out = NULL;
    t[0] = nan_count(x, axis, CT_I64);
    if (ignore_nan) {
        t[1] = ct_sub_rscalar(t[0], (double)(n - 1));
        t[2] = ct_floor_divide_scalar(t[1], 2.0);
        out = ct_maximum_scalar(t[2], 0.0);
    } else {
        t[1] = ct_gt_scalar(t[0], 0.0);
        t[2] = ct_sub_rscalar(t[0], (double)n);
        t[3] = ct__full_on(device, x->ndim, shape, (double)((n - 1) / 2), CT_I64);
        out = ct_where(t[1], t[2], t[3]);
    }
    release_all(5, t);
    return out;
}

static ct_status median_dim(const char *op, const ct_tensor *x, int axis, bool keepdim,
                            bool ignore_nan, ct_tensor **values, ct_tensor **indices) {
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    ct_device device;
    if (!ct__check_args(op, 1, &x, &device)) return ct_last_status();
    if (!values) return ct__error(CT_ERR_INVALID_ARG, "%s: values is NULL", op);
    int a = 0;
    /* A 0-d x is a row of one (axis 0 or -1, as PyTorch), and stays 0-d. */
    bool scalar = x->ndim == 0;
    if (ct__normalize_axis(op, axis, scalar ? 1 : x->ndim, &a) != CT_OK) return ct_last_status();
    ct_tensor *row = scalar ? ct_reshape(x, 1, (int64_t[]){1}) : ct_retain((ct_tensor *)x);
    if (!row) return ct_last_status();
    if (row->shape[a] == 0) {
        ct_release(row);
        return ct__error(CT_ERR_SHAPE,
                         "%s: axis %d has size 0; a median needs at least one element", op, axis);
    }
    ct_tensor *t[4] = {NULL};
    t[0] = ct_argsort(row, a, false);
    t[1] = t[0] ? middle(row, a, ignore_nan, device) : NULL;
    t[2] = t[1] ? ct_gather(t[0], a, t[1]) : NULL; /* the picked element's index on axis */
    t[3] = t[2] ? ct_gather(row, a, t[2]) : NULL;
    ct_tensor *v = NULL, *i = NULL;
    if (t[3] && (keepdim && !scalar)) {
        v = ct_retain(t[3]);
        i = ct_retain(t[2]);
    } else if (t[3]) {
        v = ct_squeeze(t[3], a);
        i = v ? ct_squeeze(t[2], a) : NULL;
    }
    release_all(4, t);
    ct_release(row);
    if (!v || !i) {
        ct_release(v);
        return ct_last_status();
    }
    *values = v;
    if (indices)
        *indices = i;
    else
        ct_release(i);
    return CT_OK;
}

ct_status ct_median_dim(const ct_tensor *x, int axis, bool keepdim, ct_tensor **values,
                        ct_tensor **indices) {
    return median_dim("ct_median_dim", x, axis, keepdim, false, values, indices);
}

ct_status ct_nanmedian_dim(const ct_tensor *x, int axis, bool keepdim, ct_tensor **values,
                           ct_tensor **indices) {
    return median_dim("ct_nanmedian_dim", x, axis, keepdim, true, values, indices);
}

static ct_tensor *median_all(const char *op, const ct_tensor *x, bool ignore_nan) {
    ct_device device;
    if (!ct__check_args(op, 1, &x, &device)) return NULL;
    if (ct_numel(x) == 0) {
        if (!ct_dtype_is_floating(x->dtype))
            return ct__fail(CT_ERR_SHAPE, "%s: x is empty and %s has no NaN to give", op,
                            ct_dtype_name(x->dtype));
        return ct__full_on(device, 0, NULL, NAN, x->dtype);
    }
    ct_tensor *flat = ct_reshape(x, 1, (int64_t[]){-1}), *out = NULL;
    if (flat) median_dim(op, flat, 0, false, ignore_nan, &out, NULL);
    ct_release(flat);
    return out;
}

ct_tensor *ct_median(const ct_tensor *x) { return median_all("ct_median", x, false); }

ct_tensor *ct_nanmedian(const ct_tensor *x) { return median_all("ct_nanmedian", x, true); }

/* ---- quantiles ---- */

/* Whether every q lies in [0, 1] (NaN does not), read back from q's device. */
static bool q_in_range(const char *op, const ct_tensor *q) {
    ct_tensor *t[4] = {NULL};
    t[0] = ct_ge_scalar(q, 0.0);
    t[1] = ct_le_scalar(q, 1.0);
    t[2] = ct_logical_and(t[0], t[1]);
    t[3] = ct_all(t[2], 0, NULL, false);
    double all = 0.0;
    ct_status status = t[3] ? ct_item(t[3], &all) : ct_last_status();
    release_all(4, t);
    if (status != CT_OK) return false;
    if (all == 0.0) ct__error(CT_ERR_INVALID_ARG, "%s: q values must lie in [0, 1]", op);
    return all != 0.0;
}

/* x's rows along axis as the last axis of a view or copy (x flattened for CT_AXIS_NONE or a
 * 0-d x). */
static ct_tensor *rows_last(const ct_tensor *x, int axis, bool all) {
    if (all) return ct_reshape(x, 1, (int64_t[]){-1});
    int perm[CT_MAX_DIMS];
    for (int d = 0, j = 0; d < x->ndim; d++)
        if (d != axis) perm[j++] = d;
    perm[x->ndim - 1] = axis;
    return ct_permute(x, x->ndim, perm);
}

/* The fractional ranks (Q, B..., 1) in each sorted row of `sorted` (B..., n), in rank_dtype,
 * for q as (Q, 1, ..., 1): q (n - 1), the last index for a row holding a NaN (its NaNs sort
 * last); ignoring NaN, q (count - 1) with count the row's numbers, and 0 for a row of NaNs;
 * then rounded as the interpolation asks. */
static ct_tensor *quantile_ranks(const ct_tensor *sorted, const ct_tensor *q, bool ignore_nan,
                                 ct_quantile_interpolation how, ct_dtype rank_dtype,
                                 ct_device device) {
    int last = sorted->ndim - 1;
    int64_t n = sorted->shape[last];
    ct_tensor *t[6] = {NULL}, *ranks = NULL;
    if (ignore_nan) {
        t[0] = nan_count(sorted, last, rank_dtype);
        t[1] = ct_sub_rscalar(t[0], (double)(n - 1)); /* numbers - 1 */
        t[2] = ct_mul(q, t[1]);
        t[3] = ct_lt_scalar(t[2], 0.0);
        t[4] = ct__full_on(device, 0, NULL, 0.0, rank_dtype);
        ranks = ct_where(t[3], t[4], t[2]);
    } else {
        t[0] = ct_isnan(sorted);
        t[1] = ct_any(t[0], 1, &last, true);
        t[2] = ct_mul_scalar(q, (double)(n - 1));
        t[3] = ct__full_on(device, 0, NULL, (double)(n - 1), rank_dtype);
        ranks = ct_where(t[1], t[3], t[2]);
    }
    release_all(6, t);
    ct_tensor *rounded = ranks;
    if (how == CT_QUANTILE_LOWER) rounded = ct_floor(ranks);
    if (how == CT_QUANTILE_HIGHER) rounded = ct_ceil(ranks);
    if (how == CT_QUANTILE_NEAREST) rounded = ct_round(ranks);
    if (rounded != ranks) ct_release(ranks);
    return rounded;
}

/* The elements of each row of the sorted (Q, B..., n) at the (Q, B..., 1) ranks, read
 * between the two neighbours by the interpolation; (Q, B..., 1) in x's dtype. */
static ct_tensor *read_ranks(const ct_tensor *sorted, const ct_tensor *ranks,
                             ct_quantile_interpolation how) {
    int last = sorted->ndim - 1;
    ct_tensor *t[7] = {NULL}, *out = NULL;
    t[0] = ct_floor(ranks);
    t[1] = ct_cast(t[0], CT_I64);
    t[2] = ct_gather(sorted, last, t[1]);
    if (how == CT_QUANTILE_LINEAR || how == CT_QUANTILE_MIDPOINT) {
        t[3] = ct_ceil(ranks);
        t[4] = ct_cast(t[3], CT_I64);
        t[5] = ct_gather(sorted, last, t[4]);
        /* midpoint: half way, also where the neighbours are one element (as PyTorch) */
        t[6] = how == CT_QUANTILE_MIDPOINT
                   ? ct__full_on(ct_device_of(sorted), 0, NULL, 0.5, sorted->dtype)
                   : ct_sub(ranks, t[0]);
        ct_tensor *w = t[6] ? ct_cast(t[6], sorted->dtype) : NULL;
        out = ct_lerp(t[2], t[5], w);
        ct_release(w);
    } else {
        out = ct_retain(t[2]);
    }
    release_all(7, t);
    return out;
}

static ct_tensor *quantile(const char *op, const ct_tensor *x, const ct_tensor *q, int axis,
                           bool keepdim, ct_quantile_interpolation how, bool ignore_nan) {
    ct_device device;
    const ct_tensor *args[2] = {x, q};
    if (!ct__check_args(op, 2, args, &device)) return NULL;
    if (!ct_dtype_is_floating(x->dtype))
        return ct__fail(CT_ERR_DTYPE, "%s: x is %s; quantiles need a real floating dtype", op,
                        ct_dtype_name(x->dtype));
    if (q->dtype != x->dtype)
        return ct__fail(CT_ERR_DTYPE, "%s: q is %s but x is %s; give q x's dtype", op,
                        ct_dtype_name(q->dtype), ct_dtype_name(x->dtype));
    if (q->ndim > 1)
        return ct__fail(CT_ERR_SHAPE, "%s: q has %d axes; give a 0-d or 1-D q", op, q->ndim);
    if ((int)how < CT_QUANTILE_LINEAR || (int)how > CT_QUANTILE_NEAREST)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: interpolation %d is not a ct_quantile_interpolation", op, (int)how);
    bool all = axis == CT_AXIS_NONE || x->ndim == 0;
    int a = 0;
    if (axis != CT_AXIS_NONE && ct__normalize_axis(op, axis, x->ndim ? x->ndim : 1, &a) != CT_OK)
        return NULL;
    int64_t shape[CT_MAX_DIMS + 1];
    int ndim = 0;
    if (q->ndim == 1) shape[ndim++] = q->shape[0];
    for (int d = 0; d < x->ndim; d++)
        if (keepdim || (!all && d != a)) shape[ndim++] = all || d == a ? 1 : x->shape[d];
    if (ndim > CT_MAX_DIMS)
        return ct__fail(CT_ERR_SHAPE, "%s: the result would have %d axes (at most %d)", op, ndim,
                        CT_MAX_DIMS);
    if (!all && x->ndim + 1 > CT_MAX_DIMS)
        return ct__fail(CT_ERR_SHAPE, "%s: x has %d axes; at most %d can take quantiles along one",
                        op, x->ndim, CT_MAX_DIMS - 1);
    if (!q_in_range(op, q)) return NULL;
    if (ct_numel(x) == 0) return ct__full_on(device, ndim, shape, NAN, x->dtype);
    /* a 0-d CPU q joins x's device (it is reshaped below, and only 0-d operands join) */
    ct_tensor *q_here = ct__operand_on(q, device, op);
    if (!q_here) return NULL;

    /* rows (B..., n), sorted, and seen as (Q, B..., n) beside q as (Q, 1, ..., 1) */
    ct_dtype rank_dtype = x->dtype == CT_F64 ? CT_F64 : CT_F32;
    int64_t nq = q->ndim == 1 ? q->shape[0] : 1, wide[CT_MAX_DIMS + 1], qshape[CT_MAX_DIMS + 1];
    ct_tensor *t[8] = {NULL}, *out = NULL;
    t[0] = rows_last(x, a, all);
    t[1] = t[0] ? ct_sort(t[0], -1, false) : NULL;
    if (t[1]) {
        int r = t[1]->ndim;
        int64_t one_more[CT_MAX_DIMS];
        one_more[0] = 1;
        wide[0] = nq;
        qshape[0] = nq;
        for (int d = 0; d < r; d++)
            one_more[d + 1] = wide[d + 1] = t[1]->shape[d], qshape[d + 1] = 1;
        t[2] = ct_reshape(t[1], r + 1, one_more);
        t[3] = t[2] ? ct_expand(t[2], r + 1, wide) : NULL;
        t[4] = ct_cast(q_here, rank_dtype);
        t[5] = t[4] ? ct_reshape(t[4], r + 1, qshape) : NULL;
        t[6] = t[5] ? quantile_ranks(t[1], t[5], ignore_nan, how, rank_dtype, device) : NULL;
        t[7] = t[6] && t[3] ? read_ranks(t[3], t[6], how) : NULL;
        out = t[7] ? ct_reshape(t[7], ndim, shape) : NULL;
    }
    release_all(8, t);
    ct_release(q_here);
    return out;
}

ct_tensor *ct_quantile(const ct_tensor *x, const ct_tensor *q, int axis, bool keepdim,
                       ct_quantile_interpolation interpolation) {
    return quantile("ct_quantile", x, q, axis, keepdim, interpolation, false);
}

ct_tensor *ct_nanquantile(const ct_tensor *x, const ct_tensor *q, int axis, bool keepdim,
                          ct_quantile_interpolation interpolation) {
    return quantile("ct_nanquantile", x, q, axis, keepdim, interpolation, true);
}

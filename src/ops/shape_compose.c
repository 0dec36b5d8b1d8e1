/* Shape ops composed of the core's, so that their gradients come from the ops they are made
 * of: ct_tril and ct_triu (a where over a diagonal mask), ct_tile and ct_repeat (a size-1
 * axis inserted, expanded, merged), ct_repeat_each (an index_select by the element each
 * output position repeats, found with ct_searchsorted), and ct_tensordot (a matmul of the
 * operands permuted and flattened to matrices). */
#include <string.h>

#include "ops/autocast_impl.h"
#include "ops/op_impl.h"

/* x where (col - row) compares with k as upper asks (>= k) or not (<= k), else 0. */
static ct_tensor *triangle(const char *op, const ct_tensor *x, int64_t k, bool upper) {
    ct_device device;
    if (!ct__check_args_complex(op, 1, &x, &device)) return NULL;
    if (x->ndim < 2)
        return ct__fail(CT_ERR_SHAPE, "%s: x has rank %d; it needs at least 2 axes", op, x->ndim);
    int64_t m = x->shape[x->ndim - 2], n = x->shape[x->ndim - 1];
    ct_tensor *t[7] = {NULL};
    t[0] = ct_arange(0, (double)m, 1, CT_I64, device);
    t[1] = t[0] ? ct_reshape(t[0], 2, (int64_t[]){m, 1}) : NULL;
    t[2] = ct_arange(0, (double)n, 1, CT_I64, device);
    t[3] = ct_sub(t[2], t[1]); /* (m, n): col - row */
    t[4] = upper ? ct_ge_scalar(t[3], (double)k) : ct_le_scalar(t[3], (double)k);
    t[5] = ct__full_on(device, 0, NULL, 0.0, x->dtype);
    ct_tensor *out = ct_where(t[4], x, t[5]);
    for (int i = 0; i < 6; i++) ct_release(t[i]);
    return out;
}

ct_tensor *ct_tril(const ct_tensor *x, int64_t k) { return triangle("ct_tril", x, k, false); }

ct_tensor *ct_triu(const ct_tensor *x, int64_t k) { return triangle("ct_triu", x, k, true); }

/* x with axis repeated r times: as a whole block (tile: a new axis before it) or element
 * by element (repeat: a new axis after it). */
static ct_tensor *stretch(const char *op, const ct_tensor *x, int axis, int64_t r, bool tile) {
    if (x->ndim >= CT_MAX_DIMS)
        return ct__fail(CT_ERR_SHAPE, "%s: x has rank %d; at most %d axes can be repeated", op,
                        x->ndim, CT_MAX_DIMS - 1);
    int64_t shape[CT_MAX_DIMS], big[CT_MAX_DIMS], merged[CT_MAX_DIMS];
    int at = tile ? axis : axis + 1;
    for (int d = 0, j = 0; d <= x->ndim; d++) shape[d] = d == at ? 1 : x->shape[j++];
    memcpy(big, shape, sizeof big);
    big[at] = r;
    memcpy(merged, x->shape, sizeof merged);
    if (__builtin_mul_overflow(merged[axis], r, &merged[axis]))
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: a repeat count of %lld makes the length of axis %d (%lld) overflow "
                        "int64",
                        op, (long long)r, axis, (long long)x->shape[axis]);
    ct_tensor *one = ct_reshape(x, x->ndim + 1, shape);
    ct_tensor *wide = one ? ct_expand(one, x->ndim + 1, big) : NULL;
    ct_tensor *out = wide ? ct_reshape(wide, x->ndim, merged) : NULL;
    ct_release(one);
    ct_release(wide);
    return out;
}

static bool check_count(const char *op, int64_t r) {
    if (r >= 0) return true;
    ct__error(CT_ERR_INVALID_ARG, "%s: a repeat count is %lld; counts must be >= 0", op,
              (long long)r);
    return false;
}

ct_tensor *ct_tile(const ct_tensor *x, int nreps, const int64_t *reps) {
    const char *op = "ct_tile";
    ct_device device;
    if (!ct__check_args_complex(op, 1, &x, &device)) return NULL;
    if (nreps < 0 || nreps > CT_MAX_DIMS || (nreps && !reps))
        return ct__fail(CT_ERR_INVALID_ARG, "%s: %d repeat counts; give 0 to %d", op, nreps,
                        CT_MAX_DIMS);
    int ndim = nreps > x->ndim ? nreps : x->ndim;
    int64_t shape[CT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        int from_x = d - (ndim - x->ndim), from_r = d - (ndim - nreps);
        shape[d] = from_x >= 0 ? x->shape[from_x] : 1;
        if (from_r >= 0 && !check_count(op, reps[from_r])) return NULL;
    }
    ct_tensor *cur = ct_reshape(x, ndim, shape);
    for (int d = 0; cur && d < nreps; d++) {
        int axis = d + (ndim - nreps);
        if (reps[d] == 1) continue;
        ct_tensor *next = stretch(op, cur, axis, reps[d], true);
        ct_release(cur);
        cur = next;
    }
    return cur;
}

ct_tensor *ct_repeat(const ct_tensor *x, int64_t repeats, int axis) {
    const char *op = "ct_repeat";
    ct_device device;
    int a = 0;
    if (!ct__check_args_complex(op, 1, &x, &device) || !check_count(op, repeats)) return NULL;
    bool flat = axis == CT_AXIS_NONE;
    ct_tensor *src = flat ? ct_reshape(x, 1, (int64_t[]){-1}) : ct_retain((ct_tensor *)x);
    if (src && ct__normalize_axis(op, flat ? 0 : axis, src->ndim, &a) != CT_OK) {
        ct_release(src);
        return NULL;
    }
    ct_tensor *out = src ? stretch(op, src, a, repeats, false) : NULL;
    ct_release(src);
    return out;
}

/* The source position of each output position: searchsorted(cumsum(counts), arange(total),
 * right). */
static ct_tensor *repeat_index(const ct_tensor *counts, ct_device device) {
    ct_tensor *ends = ct_cumulative_sum(counts, 0, CT_I64, false);
    ct_tensor *total = ends ? ct_sum(counts, 0, NULL, false) : NULL;
    double n = -1;
    ct_tensor *out = NULL;
    if (total && ct_item(total, &n) == CT_OK) {
        ct_tensor *at = ct_arange(0, n, 1, CT_I64, device);
        out = at ? ct_searchsorted(ends, at, true) : NULL;
        ct_release(at);
    }
    ct_release(ends);
    ct_release(total);
    return out;
}

ct_tensor *ct_repeat_each(const ct_tensor *x, const ct_tensor *repeats, int axis) {
    const char *op = "ct_repeat_each";
    const ct_tensor *args[2] = {x, repeats};
    ct_device device;
    int a = 0;
    if (!ct__check_args_complex(op, 2, args, &device)) return NULL; /* x of any dtype */
    if (!ct_dtype_is_integer(repeats->dtype))
        return ct__fail(CT_ERR_DTYPE, "%s: repeats has dtype %s; it must be an integer dtype", op,
                        ct_dtype_name(repeats->dtype));
    bool flat = axis == CT_AXIS_NONE;
    ct_tensor *src = flat ? ct_reshape(x, 1, (int64_t[]){-1}) : ct_retain((ct_tensor *)x);
    if (!src || ct__normalize_axis(op, flat ? 0 : axis, src->ndim, &a) != CT_OK) {
        ct_release(src);
        return NULL;
    }
    int64_t len = src->shape[a];
    ct_tensor *counts = NULL, *lowest = NULL, *index = NULL, *out = NULL;
    if (repeats->ndim != 1 || (repeats->shape[0] != len && repeats->shape[0] != 1))
        ct__error(CT_ERR_SHAPE, "%s: repeats must be 1-D of length %lld (or 1)", op,
                  (long long)len);
    else
        counts = ct_expand(repeats, 1, &len);
    double least = 0;
    lowest = counts && len ? ct_min(counts, 0, NULL, false) : NULL;
    if (lowest && ct_item(lowest, &least) == CT_OK && !check_count(op, (int64_t)least))
        ct_release(counts), counts = NULL;
    index = counts && (len == 0 || lowest) ? repeat_index(counts, device) : NULL;
    out = index ? ct_index_select(src, a, index) : NULL;
    ct_release(src);
    ct_release(counts);
    ct_release(lowest);
    ct_release(index);
    return out;
}

/* Permute t so that its `n` listed axes come first (lead) or last, and flatten it to a
 * matrix (rows, cols). free_shape gets the other axes' sizes. */
static ct_tensor *as_matrix(const char *op, const ct_tensor *t, int n, const int *axes, bool lead,
                            int64_t *free_shape, int *nfree, int *norm) {
    int perm[CT_MAX_DIMS], used[CT_MAX_DIMS] = {0}, k = 0, f = 0;
    int64_t contracted = 1, other = 1;
    for (int i = 0; i < n; i++) {
        if (ct__normalize_axis(op, axes[i], t->ndim, &norm[i]) != CT_OK) return NULL;
        if (used[norm[i]]++)
            return ct__fail(CT_ERR_INVALID_ARG, "%s: axis %d is listed twice", op, axes[i]);
        contracted *= t->shape[norm[i]];
    }
    if (lead)
        for (int i = 0; i < n; i++) perm[k++] = norm[i];
    for (int d = 0; d < t->ndim; d++)
        if (!used[d]) {
            perm[k++] = d;
            free_shape[f++] = t->shape[d];
            other *= t->shape[d];
        }
    if (!lead)
        for (int i = 0; i < n; i++) perm[k++] = norm[i];
    *nfree = f;
    ct_tensor *moved = ct_permute(t, t->ndim, perm);
    int64_t shape[2] = {lead ? contracted : other, lead ? other : contracted};
    ct_tensor *out = moved ? ct_reshape(moved, 2, shape) : NULL;
    ct_release(moved);
    return out;
}

static ct_tensor *tensordot(const ct_tensor *a, const ct_tensor *b, int n, const int *axes_a,
                            const int *axes_b) {
    const char *op = "ct_tensordot";
    const ct_tensor *args[2] = {a, b};
    ct_device device;
    if (!ct__check_args_complex(op, 2, args, &device)) return NULL; /* as ct_matmul's */
    if (n < 0 || n > a->ndim || n > b->ndim || (n && (!axes_a || !axes_b)))
        return ct__fail(CT_ERR_INVALID_ARG, "%s: %d axis pairs for operands of rank %d and %d", op,
                        n, a->ndim, b->ndim);
    if (a->ndim + b->ndim - 2 * n > CT_MAX_DIMS)
        return ct__fail(CT_ERR_SHAPE, "%s: the result would have rank %d (at most %d)", op,
                        a->ndim + b->ndim - 2 * n, CT_MAX_DIMS);
    int64_t shape[CT_MAX_DIMS];
    int fa = 0, fb = 0, na[CT_MAX_DIMS], nb[CT_MAX_DIMS];
    ct_tensor *ma = as_matrix(op, a, n, axes_a, false, shape, &fa, na);
    ct_tensor *mb = ma ? as_matrix(op, b, n, axes_b, true, shape + fa, &fb, nb) : NULL;
    for (int i = 0; mb && i < n; i++)
        if (a->shape[na[i]] != b->shape[nb[i]]) {
            ct__error(CT_ERR_SHAPE,
                      "%s: axis %d of a has size %lld, axis %d of b %lld; paired "
                      "axes must match",
                      op, na[i], (long long)a->shape[na[i]], nb[i], (long long)b->shape[nb[i]]);
            ct_release(mb);
            mb = NULL;
        }
    ct_tensor *product = mb ? ct_matmul(ma, mb) : NULL;
    ct_tensor *out = product ? ct_reshape(product, fa + fb, shape) : NULL;
    ct_release(ma);
    ct_release(mb);
    ct_release(product);
    return out;
}

ct_tensor *ct_tensordot(const ct_tensor *a, const ct_tensor *b, int n, const int *axes_a,
                        const int *axes_b) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_TENSORDOT, 2, (const ct_tensor **[]){&a, &b})) return NULL;
    ct_tensor *out = tensordot(a, b, n, axes_a, axes_b);
    ct__autocast_end(&ac);
    return out;
}

/* Advanced indexing, NumPy's rules, over a view whose basic items (slices, None) indexing.c
 * has applied: the index arrays (integer arrays, the axes of boolean masks through
 * ct_nonzero, and the ints among them) broadcast together to a shape B; the axes they index
 * are moved to the front and merged into one, which the arrays' linear index (C order over
 * those axes) selects from (ct_index_select, differentiable) or writes into
 * (ct_index_copy). B takes the place of the indexed axes when they are adjacent, else it
 * goes first. Of repeated positions in an assignment, the last in B's C order keeps its
 * value (ct_index_copy's rule), on every device. */
#include "ctpy_impl.h"

/* The result's layout. */
typedef struct {
    int nb, nr;
    int64_t b[CT_MAX_DIMS];    /* the broadcast shape of the index arrays */
    int64_t rest[CT_MAX_DIMS]; /* the view's axes that are not indexed, in order */
    int perm[CT_MAX_DIMS];     /* the indexed axes first, then the rest */
    int64_t merged;            /* the number of positions of the indexed axes together */
    int at;                    /* where B goes among the rest: the first indexed axis, or 0 */
} layout;

void ctpy_advanced_clear(ctpy_advanced *adv) {
    for (int i = 0; i < adv->n; i++) ct_release(adv->index[i]);
    adv->n = 0;
}

static int plan(const ct_tensor *view, const ctpy_advanced *adv, layout *l) {
    l->nb = 0;
    for (int i = 0; i < adv->n; i++) {
        const ct_tensor *t = adv->index[i];
        int nd = ct_ndim(t);
        if (nd > l->nb) { /* widen B on the left */
            memmove(l->b + (nd - l->nb), l->b, sizeof(int64_t) * (size_t)l->nb);
            for (int d = 0; d < nd - l->nb; d++) l->b[d] = 1;
            l->nb = nd;
        }
        for (int d = 0; d < nd; d++) {
            int64_t s = ct_shape(t)[d], *into = &l->b[l->nb - nd + d];
            if (s == *into || s == 1) continue;
            if (*into != 1) {
                PyErr_Format(PyExc_IndexError,
                             "shape mismatch: the index arrays cannot be broadcast together "
                             "(sizes %lld and %lld on one axis)",
                             (long long)*into, (long long)s);
                return -1;
            }
            *into = s;
        }
    }
    bool adjacent = true, indexed[CT_MAX_DIMS] = {false};
    l->merged = 1;
    for (int i = 0; i < adv->n; i++) {
        l->perm[i] = adv->axis[i];
        indexed[adv->axis[i]] = true;
        l->merged *= ct_shape(view)[adv->axis[i]];
        if (i > 0 && adv->axis[i] != adv->axis[i - 1] + 1) adjacent = false;
    }
    l->nr = 0;
    for (int d = 0; d < ct_ndim(view); d++)
        if (!indexed[d]) {
            l->perm[adv->n + l->nr] = d;
            l->rest[l->nr++] = ct_shape(view)[d];
        }
    l->at = adjacent ? adv->axis[0] : 0;
    if (l->nb + l->nr > CT_MAX_DIMS) {
        PyErr_Format(PyExc_IndexError, "the result would have %d dimensions; at most %d",
                     l->nb + l->nr, CT_MAX_DIMS);
        return -1;
    }
    return 0;
}

/* Whether an element of index is outside -size .. size-1, in *bad (a read-back). */
static ct_status any_out_of_range(const ct_tensor *index, int64_t size, double *bad) {
    ct_status status = CT_ERR_INVALID_ARG;
    /* an unsigned array has no element below 0 (its comparison with -size would convert
     * -size to the unsigned dtype) */
    bool is_unsigned = ct_dtype_is_unsigned(ct_dtype_of(index));
    ct_tensor *high = ct_ge_scalar(index, (double)size);
    ct_tensor *low = is_unsigned ? NULL : ct_lt_scalar(index, (double)-size);
    ct_tensor *either = is_unsigned   ? ct_retain(high)
                        : high && low ? ct_logical_or(high, low)
                                      : NULL;
    ct_tensor *any = either ? ct_any(either, 0, NULL, false) : NULL;
    if (any) status = ct_item(any, bad);
    ct_release(any);
    ct_release(either);
    ct_release(low);
    ct_release(high);
    return status;
}

int ctpy_check_index_range(const ct_tensor *index, int axis, int64_t size) {
    double bad = 0;
    ct_status status;
    CTPY_NOGIL(status = any_out_of_range(index, size, &bad));
    if (status != CT_OK) return ctpy_raise(), -1;
    if (!bad) return 0;
    PyErr_Format(PyExc_IndexError,
                 "an index array has an index out of range for axis %d of size %lld (valid "
                 "indices are -%lld to %lld)",
                 axis, (long long)size, (long long)size, (long long)size - 1);
    return -1;
}

/* The arrays (in range) combined: wrapped (Python's % of an index in range) and summed in
 * C order over the indexed axes, broadcast to B and flattened. One array is its own linear
 * index (the op wraps it). */
static ct_tensor *combined(const ct_tensor *view, const ctpy_advanced *adv, const layout *l) {
    ct_tensor *lin = adv->n == 1 ? ct_retain(adv->index[0]) : NULL;
    for (int i = 0; adv->n > 1 && i < adv->n && (i == 0 || lin); i++) {
        int64_t size = ct_shape(view)[adv->axis[i]];
        ct_tensor *wrapped = ct_remainder_scalar(adv->index[i], size ? (double)size : 1.0);
        ct_tensor *scaled = lin ? ct_mul_scalar(lin, (double)size) : NULL;
        ct_tensor *next = !wrapped ? NULL
                          : !lin   ? ct_retain(wrapped)
                          : scaled ? ct_add(scaled, wrapped)
                                   : NULL;
        ct_release(scaled);
        ct_release(wrapped);
        ct_release(lin);
        lin = next;
    }
    ct_tensor *full = lin ? ct_expand(lin, l->nb, l->b) : NULL;
    int64_t count = 1;
    for (int d = 0; d < l->nb; d++) count *= l->b[d];
    ct_release(lin);
    ct_tensor *flat = full ? ct_reshape(full, 1, &count) : NULL;
    ct_release(full);
    return flat;
}

/* The flat (1-D) linear index into the merged axes, B's elements in C order, each array
 * checked first (an IndexError, as NumPy's). */
static ct_tensor *linear_index(const ct_tensor *view, const ctpy_advanced *adv, const layout *l) {
    for (int i = 0; i < adv->n; i++)
        if (!adv->in_range[i] &&
            ctpy_check_index_range(adv->index[i], adv->axis[i], ct_shape(view)[adv->axis[i]]) < 0)
            return NULL;
    ct_tensor *lin;
    CTPY_NOGIL(lin = combined(view, adv, l));
    if (!lin) ctpy_raise();
    return lin;
}

/* The permutation of a rank-n tensor that moves its `count` axes from `from` on to `to`
 * (the others keep their order). */
static void move_axes(int n, int count, int from, int to, int *perm) {
    int others[CT_MAX_DIMS], k = 0;
    for (int d = 0; d < n; d++)
        if (d < from || d >= from + count) others[k++] = d;
    for (int d = 0; d < n; d++)
        perm[d] = d < to ? others[d] : d < to + count ? from + d - to : others[d - count];
}

/* moved (the view with its indexed axes first) with them merged: (merged, rest...). A view
 * of the same memory when `view_only` (NULL where the strides do not allow it). */
static ct_tensor *merged_axes(const ct_tensor *moved, const layout *l, bool view_only) {
    int64_t shape[CT_MAX_DIMS + 1] = {l->merged};
    memcpy(shape + 1, l->rest, sizeof(int64_t) * (size_t)l->nr);
    return view_only ? ct_view(moved, 1 + l->nr, shape) : ct_reshape(moved, 1 + l->nr, shape);
}

static ct_tensor *gather(const ct_tensor *view, const ctpy_advanced *adv, const layout *l,
                         const ct_tensor *flat) {
    int n = l->nb + l->nr, perm[CT_MAX_DIMS];
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, l->b, sizeof(int64_t) * (size_t)l->nb);
    memcpy(shape + l->nb, l->rest, sizeof(int64_t) * (size_t)l->nr);
    ct_tensor *moved = ct_permute(view, adv->n + l->nr, l->perm);
    ct_tensor *merged = moved ? merged_axes(moved, l, false) : NULL;
    ct_tensor *picked = merged ? ct_index_select(merged, 0, flat) : NULL;
    ct_tensor *shaped = picked ? ct_reshape(picked, n, shape) : NULL;
    move_axes(n, l->nb, 0, l->at, perm);
    ct_tensor *out = shaped && l->at ? ct_permute(shaped, n, perm) : ct_retain(shaped);
    ct_release(shaped);
    ct_release(picked);
    ct_release(merged);
    ct_release(moved);
    return out;
}

ct_tensor *ctpy_advanced_get(const ct_tensor *view, const ctpy_advanced *adv) {
    layout l;
    if (plan(view, adv, &l) < 0) return NULL;
    ct_tensor *flat = linear_index(view, adv, &l);
    if (!flat) return NULL;
    ct_tensor *out;
    CTPY_NOGIL(out = gather(view, adv, &l, flat));
    ct_release(flat);
    if (!out) ctpy_raise();
    return out;
}

/* value broadcast to the result's shape, in the merged layout (B flattened, rest...). */
static ct_tensor *merged_source(const ct_tensor *value, const layout *l) {
    int n = l->nb + l->nr, perm[CT_MAX_DIMS];
    int64_t shape[CT_MAX_DIMS], merged[CT_MAX_DIMS + 1] = {1};
    memcpy(shape, l->rest, sizeof(int64_t) * (size_t)l->at);
    memcpy(shape + l->at, l->b, sizeof(int64_t) * (size_t)l->nb);
    memcpy(shape + l->at + l->nb, l->rest + l->at, sizeof(int64_t) * (size_t)(l->nr - l->at));
    for (int d = 0; d < l->nb; d++) merged[0] *= l->b[d];
    memcpy(merged + 1, l->rest, sizeof(int64_t) * (size_t)l->nr);
    move_axes(n, l->nb, l->at, 0, perm);
    ct_tensor *wide = ct_expand(value, n, shape);
    ct_tensor *moved = wide ? ct_permute(wide, n, perm) : NULL;
    ct_tensor *out = moved ? ct_reshape(moved, 1 + l->nr, merged) : NULL;
    ct_release(moved);
    ct_release(wide);
    return out;
}

/* view[adv] = value: in place where the indexed axes merge into one axis of view's memory,
 * else through a contiguous copy of them written back. */
static ct_status scatter(ct_tensor *view, const ctpy_advanced *adv, const layout *l,
                         const ct_tensor *flat, const ct_tensor *value) {
    ct_status status;
    ct_tensor *src = merged_source(value, l);
    ct_tensor *moved = src ? ct_permute(view, adv->n + l->nr, l->perm) : NULL;
    ct_tensor *target = moved ? merged_axes(moved, l, true) : NULL, *copy = NULL;
    if (moved && !target) {
        copy = ct_contiguous(moved);
        target = copy ? merged_axes(copy, l, true) : NULL;
    }
    status = target ? ct_index_copy(target, 0, flat, src) : ct_last_status();
    if (copy && status == CT_OK) status = ct_copy(moved, copy);
    ct_release(copy);
    ct_release(target);
    ct_release(moved);
    ct_release(src);
    return status;
}

int ctpy_advanced_set(ct_tensor *view, const ctpy_advanced *adv, const ct_tensor *value) {
    layout l;
    if (plan(view, adv, &l) < 0) return -1;
    ct_tensor *flat = linear_index(view, adv, &l);
    if (!flat) return -1;
    ct_status status;
    CTPY_NOGIL(status = scatter(view, adv, &l, flat, value));
    ct_release(flat);
    return ctpy_check(status);
}

/* ct_diff (numpy.diff), composed of the core's ops: prepend and append joined to x along the
 * axis by ct_concat, then n times the difference of the slices [1:] and [:-1] (ct_sub, or
 * ct_ne for bool as NumPy's). No kernel of its own: every device has it, and its gradient is
 * that of the ops it is made of. */
#include "ops/op_impl.h"

/* The edge tensor e ready to join x along axis: a 0-d e broadcast to x's shape with size 1
 * on axis; otherwise e itself, which must have x's rank and x's sizes off axis. */
static ct_tensor *edge_of(const char *op, const char *what, const ct_tensor *x, int axis,
                          const ct_tensor *e) {
    if (e->ndim == 0) {
        int64_t shape[CT_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++) shape[d] = d == axis ? 1 : x->shape[d];
        ct_device device = ct_device_of(x);
        ct_tensor *moved =
            ct_device_equal(ct_device_of(e), device) ? ct__new_ref(e) : ct_to(e, device);
        ct_tensor *out = moved ? ct_expand(moved, x->ndim, shape) : NULL;
        ct_release(moved);
        return out;
    }
    if (e->ndim != x->ndim)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: %s has rank %d and x rank %d; give a 0-d %s or one of x's rank", op,
                        what, e->ndim, x->ndim, what);
    for (int d = 0; d < x->ndim; d++)
        if (d != axis && e->shape[d] != x->shape[d])
            return ct__fail(CT_ERR_SHAPE,
                            "%s: %s has size %lld on axis %d where x has %lld; only the "
                            "difference axis (%d) may differ",
                            op, what, (long long)e->shape[d], d, (long long)x->shape[d], axis);
    return ct__new_ref(e);
}

/* x with prepend before it and append after it along axis (each may be NULL). */
static ct_tensor *joined(const char *op, const ct_tensor *x, int axis, const ct_tensor *prepend,
                         const ct_tensor *append) {
    const ct_tensor *parts[3];
    ct_tensor *edges[2] = {NULL, NULL};
    int n = 0;
    bool ok = true;
    if (prepend) ok = (parts[n++] = edges[0] = edge_of(op, "prepend", x, axis, prepend)) != NULL;
    parts[n++] = x;
    if (ok && append) ok = (parts[n++] = edges[1] = edge_of(op, "append", x, axis, append)) != NULL;
    ct_tensor *out = !ok ? NULL : n == 1 ? ct__new_ref(x) : ct_concat(n, parts, axis);
    ct_release(edges[0]);
    ct_release(edges[1]);
    return out;
}

/* One difference along axis: t[1:] - t[:-1] (bool: t[1:] != t[:-1]). */
static ct_tensor *difference(const ct_tensor *t, int axis) {
    int64_t size = t->shape[axis];
    ct_tensor *hi = ct_slice(t, axis, 1, INT64_MAX, 1);
    ct_tensor *lo = ct_slice(t, axis, 0, size > 0 ? size - 1 : 0, 1);
    ct_tensor *out = t->dtype == CT_BOOL ? ct_ne(hi, lo) : ct_sub(hi, lo);
    ct_release(hi);
    ct_release(lo);
    return out;
}

ct_tensor *ct_diff(const ct_tensor *x, int axis, int64_t n, const ct_tensor *prepend,
                   const ct_tensor *append) {
    const char *op = "ct_diff";
    ct_device device;
    int a = 0;
    if (!ct__check_args_complex(op, 1, &x, &device)) return NULL;
    if (x->ndim == 0)
        return ct__fail(CT_ERR_SHAPE, "%s: x is 0-d; it needs an axis to take differences along",
                        op);
    if (ct__normalize_axis(op, axis, x->ndim, &a) != CT_OK) return NULL;
    if (n < 0)
        return ct__fail(CT_ERR_INVALID_ARG, "%s: n is %lld; the order must be >= 0", op,
                        (long long)n);
    if (n == 0) return ct__new_ref(x);
    ct_tensor *t = joined(op, x, a, prepend, append);
    /* once the axis is empty, further differences leave it so (and keep the dtype) */
    for (int64_t k = 0; t && k < n && (k == 0 || t->shape[a] > 0); k++) {
        ct_tensor *next = difference(t, a);
        ct_release(t);
        t = next;
    }
    return t;
}

/* Searching and sets, built on the core's ops (no kernels of their own, so every backend
 * has them): ct_nonzero (the running count of a mask gives each selected element its slot,
 * a scatter puts the positions there), ct_searchsorted (a stable sort of x1 with x2 merges
 * them; an element of x2 lands after the x1 elements before it), and ct_unique (sort, mark
 * where the value changes, count; complex values in NumPy's order). A result whose size depends on
 * the data reads that size back: one implicit transfer on a device. */
#include <string.h>

#include "ops/op_impl.h"

/* Release n tensors. */
static void drop(int n, ct_tensor **ts) {
    for (int i = 0; i < n; i++) {
        ct_release(ts[i]);
        ts[i] = NULL;
    }
}

/* An int64 count held by a 0-d tensor, read back; -1 on failure. */
static int64_t read_count(const ct_tensor *t) {
    double v;
    if (!t || ct_item(t, &v) != CT_OK) return -1;
    return (int64_t)v;
}

/* The positions (CT_I64, 1-D) where the 1-D bool mask is true, in order. */
static ct_tensor *true_positions(const ct_tensor *mask, ct_device device) {
    ct_tensor *t[7] = {NULL};
    t[0] = ct_sum(mask, 0, NULL, false);
    int64_t count = read_count(t[0]), n = ct_numel(mask);
    ct_tensor *out = NULL;
    if (count >= 0) {
        /* slot of a selected element: its rank among them; others go to slot `count` */
        t[1] = ct_cumulative_sum(mask, 0, CT_I64, false);
        t[2] = ct_sub_scalar(t[1], 1.0);
        t[3] = ct__full_on(device, 0, NULL, (double)count, CT_I64);
        t[4] = ct_where(mask, t[2], t[3]);
        t[5] = ct_arange(0, (double)n, 1, CT_I64, device);
        t[6] = ct__full_on(device, 1, (int64_t[]){count + 1}, 0.0, CT_I64);
        ct_tensor *filled = ct_scatter_add(t[6], 0, t[4], t[5]);
        out = filled ? ct_slice(filled, 0, 0, count, 1) : NULL;
        ct_release(filled);
    }
    drop(7, t);
    return out;
}

ct_status ct_nonzero(const ct_tensor *x, ct_tensor **out) {
    const char *op = "ct_nonzero";
    ct_device device;
    if (!out) return ct__error(CT_ERR_INVALID_ARG, "%s: out is NULL", op);
    if (!ct__check_args_complex(op, 1, &x, &device)) return ct_last_status();
    if (x->ndim == 0)
        return ct__error(CT_ERR_SHAPE,
                         "%s: x is 0-d; reshape it to 1-D first (the standard "
                         "leaves 0-d input unspecified)",
                         op);
    ct_tensor *flat = ct_reshape(x, 1, (int64_t[]){-1});
    ct_tensor *mask = flat ? ct_ne_scalar(flat, 0.0) : NULL;
    ct_tensor *linear = mask ? true_positions(mask, device) : NULL, *coords[CT_MAX_DIMS] = {0};
    ct_release(flat);
    ct_release(mask);
    int64_t stride = 1;
    bool ok = linear != NULL;
    for (int d = x->ndim - 1; ok && d >= 0; d--) {
        ct_tensor *q = ct_floor_divide_scalar(linear, (double)stride);
        coords[d] = x->shape[d] ? ct_remainder_scalar(q, (double)x->shape[d]) : ct_retain(q);
        ct_release(q);
        ok = coords[d] != NULL;
        stride *= x->shape[d] ? x->shape[d] : 1;
    }
    ct_release(linear);
    if (!ok) {
        drop(x->ndim, coords);
        return ct_last_status();
    }
    memcpy(out, coords, sizeof *out * (size_t)x->ndim);
    return CT_OK;
}

/* Where each of m values (flattened x2) goes among n sorted x1: merge them by a stable sort
 * (x2 first for the left side, so that it precedes equal x1 elements; last for the right),
 * then an x2 element at sorted position p has p - (x2 elements before it) x1 elements
 * before it. */
static ct_tensor *merge_ranks(const ct_tensor *x1, const ct_tensor *flat2, bool right,
                              ct_device device) {
    int64_t n = ct_numel(x1), m = ct_numel(flat2);
    const ct_tensor *parts[2] = {right ? x1 : flat2, right ? flat2 : x1};
    ct_tensor *t[12] = {NULL};
    t[0] = ct_concat(2, parts, 0);
    t[1] = ct_argsort(t[0], 0, false); /* sorted position -> merged position */
    /* merged position of an x2 element, and whether a sorted position holds one */
    t[2] = right ? ct_sub_scalar(t[1], (double)n) : ct_retain(t[1]);
    t[3] = right ? ct_ge_scalar(t[1], (double)n) : ct_lt_scalar(t[1], (double)m);
    t[4] = ct_cumulative_sum(t[3], 0, CT_I64, true); /* x2 elements before each position */
    t[5] = t[4] ? ct_slice(t[4], 0, 0, n + m, 1) : NULL;
    t[6] = ct_arange(0, (double)(n + m), 1, CT_I64, device);
    t[7] = ct_sub(t[6], t[5]);
    t[8] = ct__full_on(device, 0, NULL, (double)m, CT_I64);
    t[9] = ct_where(t[3], t[2], t[8]); /* target slot; non-x2 positions to slot m */
    t[10] = ct__full_on(device, 1, (int64_t[]){m + 1}, 0.0, CT_I64);
    t[11] = ct__full_on(device, 0, NULL, 0.0, CT_I64);
    ct_tensor *counts = ct_where(t[3], t[7], t[11]); /* x1 elements before each x2 one */
    ct_tensor *filled = ct_scatter_add(t[10], 0, t[9], counts);
    ct_tensor *out = filled ? ct_slice(filled, 0, 0, m, 1) : NULL;
    ct_release(counts);
    ct_release(filled);
    drop(12, t);
    return out;
}

ct_tensor *ct_searchsorted(const ct_tensor *x1, const ct_tensor *x2, bool right) {
    const char *op = "ct_searchsorted";
    const ct_tensor *args[2] = {x1, x2};
    ct_device device;
    if (!ct__check_args(op, 2, args, &device)) return NULL;
    if (x1->ndim != 1)
        return ct__fail(CT_ERR_SHAPE, "%s: x1 has rank %d; it must be 1-D (sorted)", op, x1->ndim);
    ct_tensor *flat = ct_reshape(x2, 1, (int64_t[]){-1});
    ct_tensor *ranks = flat ? merge_ranks(x1, flat, right, device) : NULL;
    ct_tensor *out = ranks ? ct_reshape(ranks, x2->ndim, x2->shape) : NULL;
    ct_release(flat);
    ct_release(ranks);
    return out;
}

void ct_unique_release(ct_unique_result *r) {
    if (!r) return;
    ct_tensor *ts[4] = {r->values, r->indices, r->inverse, r->counts};
    drop(4, ts);
    memset(r, 0, sizeof *r);
}

/* The groups of equal values of sorted (1-D, n > 0): their first positions, and each
 * sorted position's group. A value differs from the one before it where ne holds, so each
 * NaN is a group of its own. */
static bool groups_of(const ct_tensor *sorted, ct_device device, ct_tensor **starts,
                      ct_tensor **group) {
    int64_t n = ct_numel(sorted);
    ct_tensor *t[5] = {NULL};
    t[0] = ct_slice(sorted, 0, 1, INT64_MAX, 1);
    t[1] = ct_slice(sorted, 0, 0, n - 1, 1);
    t[2] = ct_ne(t[0], t[1]);
    t[3] = ct__full_on(device, 1, (int64_t[]){1}, 1.0, CT_BOOL);
    const ct_tensor *parts[2] = {t[3], t[2]};
    t[4] = t[2] && t[3] ? ct_concat(2, parts, 0) : NULL; /* a group starts here */
    *starts = t[4] ? true_positions(t[4], device) : NULL;
    ct_tensor *running = *starts ? ct_cumulative_sum(t[4], 0, CT_I64, false) : NULL;
    *group = running ? ct_sub_scalar(running, 1.0) : NULL;
    ct_release(running);
    drop(5, t);
    return *group != NULL;
}

/* counts[g] = starts[g + 1] - starts[g], with starts[groups] = n. */
static ct_tensor *group_counts(const ct_tensor *starts, int64_t n, ct_device device) {
    ct_tensor *end = ct__full_on(device, 1, (int64_t[]){1}, (double)n, CT_I64);
    ct_tensor *tail = ct_slice(starts, 0, 1, INT64_MAX, 1);
    const ct_tensor *parts[2] = {tail, end};
    ct_tensor *next = end && tail ? ct_concat(2, parts, 0) : NULL;
    ct_tensor *out = next ? ct_sub(next, starts) : NULL;
    ct_release(end);
    ct_release(tail);
    ct_release(next);
    return out;
}

/* The stable sorting order of flat (1-D): of a complex flat, by the real parts, ties by the
 * imaginary parts (NumPy's order), as a stable sort by the imaginary parts first. */
static ct_tensor *sorting_order(const ct_tensor *flat) {
    if (!ct__is_complex(flat->dtype)) return ct_argsort(flat, 0, false);
    ct_tensor *t[5] = {NULL};
    t[0] = ct__complex_part_view(flat, 1);
    t[1] = t[0] ? ct_argsort(t[0], 0, false) : NULL;
    t[2] = t[1] ? ct__complex_part_view(flat, 0) : NULL;
    t[3] = t[2] ? ct_index_select(t[2], 0, t[1]) : NULL;
    t[4] = t[3] ? ct_argsort(t[3], 0, false) : NULL;
    ct_tensor *order = t[4] ? ct_index_select(t[1], 0, t[4]) : NULL;
    drop(5, t);
    return order;
}

/* Fill r from flat (1-D, n > 0). */
static bool unique_flat(const ct_tensor *x, const ct_tensor *flat, ct_device device,
                        ct_unique_result *r) {
    int64_t n = ct_numel(flat);
    ct_tensor *order = sorting_order(flat);
    ct_tensor *sorted = order ? ct_index_select(flat, 0, order) : NULL, *starts = NULL,
              *group = NULL;
    if (sorted && groups_of(sorted, device, &starts, &group)) {
        r->values = ct_index_select(sorted, 0, starts);
        r->indices = ct_index_select(order, 0, starts); /* stable: the first occurrence */
        r->counts = group_counts(starts, n, device);
        ct_tensor *zeros = ct__full_on(device, 1, (int64_t[]){n}, 0.0, CT_I64);
        ct_tensor *inv = zeros ? ct_scatter_add(zeros, 0, order, group) : NULL;
        r->inverse = inv ? ct_reshape(inv, x->ndim, x->shape) : NULL;
        ct_release(zeros);
        ct_release(inv);
    }
    ct_release(order);
    ct_release(sorted);
    ct_release(starts);
    ct_release(group);
    return r->values && r->indices && r->counts && r->inverse;
}

ct_status ct_unique(const ct_tensor *x, ct_unique_result *out) {
    const char *op = "ct_unique";
    ct_device device;
    if (!out) return ct__error(CT_ERR_INVALID_ARG, "%s: out is NULL", op);
    memset(out, 0, sizeof *out);
    if (!ct__check_args_complex(op, 1, &x, &device)) return ct_last_status();
    ct_unique_result r = {0};
    ct_tensor *flat = ct_reshape(x, 1, (int64_t[]){-1});
    bool ok;
    if (flat && ct_numel(flat) == 0) {
        r.values = ct_retain(flat);
        r.indices = ct__full_on(device, 1, (int64_t[]){0}, 0.0, CT_I64);
        r.counts = ct__full_on(device, 1, (int64_t[]){0}, 0.0, CT_I64);
        r.inverse = ct__full_on(device, x->ndim, x->shape, 0.0, CT_I64);
        ok = r.values && r.indices && r.counts && r.inverse;
    } else {
        ok = flat && unique_flat(x, flat, device, &r);
    }
    ct_release(flat);
    if (!ok) {
        ct_unique_release(&r);
        return ct_last_status();
    }
    *out = r;
    return CT_OK;
}

/* Sorting and scanning along one axis: ct_argsort and ct_cumulative_sum through the
 * backend's argsort and cumsum kernels, ct_sort as a gather by ct_argsort's order (so its
 * gradient is the gather's), and the backward rule of ct_cumulative_sum (the reversed
 * running sum of the gradient). The kernels see rows: the op axis is moved last and the
 * input made contiguous first. A complex tensor's running sums are those of its parts; sorting
 * refuses complex tensors (they have no order, as the array API standard says). */
#include <string.h>

#include "ops/autocast_impl.h"
#include "ops/grad_impl.h"
#include "ops/op_impl.h"

/* x with `axis` moved last (a contiguous copy unless it is so already), detached: the
 * kernels' rows. perm gets the permutation (its inverse puts the axis back). */
static ct_tensor *rows_of(const ct_tensor *x, int axis, int *perm) {
    int nd = x->ndim, k = 0;
    for (int d = 0; d < nd; d++)
        if (d != axis) perm[k++] = d;
    perm[k] = axis;
    ct_tensor *plain = ct_detach(x);
    ct_tensor *moved = plain ? ct_permute(plain, nd, perm) : NULL;
    ct_tensor *dense = moved ? ct_contiguous(moved) : NULL;
    ct_release(plain);
    ct_release(moved);
    return dense;
}

/* A result made in the rows' layout, its axis put back in place (a view). */
static ct_tensor *unrows(ct_tensor *t, int ndim, const int *perm) {
    if (!t) return NULL;
    int inverse[CT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) inverse[perm[d]] = d;
    ct_tensor *out = ct_permute(t, ndim, inverse);
    ct_release(t);
    return out;
}

typedef ct_status (*sort_kernel)(int device, const ct__sort_args *args);

/* Run kernel on rows (contiguous, op axis last) with the output fields of args set. */
static ct_status run_rows(const char *op, ct_device device, const ct_tensor *rows,
                          ct__sort_args *args, bool cumsum) {
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return ct_last_status();
    sort_kernel kernel = cumsum ? k->cumsum : k->argsort;
    if (!kernel) {
        char name[32];
        return ct__error(CT_ERR_UNSUPPORTED, "%s: %s has no %s kernel", op,
                         ct_device_str(device, name, sizeof name), cumsum ? "cumsum" : "argsort");
    }
    args->n = rows->ndim ? rows->shape[rows->ndim - 1] : 1;
    args->rows = args->n ? rows->numel / args->n : 0;
    args->dtype = rows->dtype;
    args->in = ct__data(rows);
    args->in_row = args->n;
    args->in_stride = 1;
    if (args->rows == 0 || args->n == 0) return CT_OK;
    return kernel(physical, args);
}

ct_tensor *ct_argsort(const ct_tensor *x, int axis, bool descending) {
    const char *op = "ct_argsort";
    ct_device device;
    int a = 0, perm[CT_MAX_DIMS];
    if (!ct__check_args(op, 1, &x, &device)) return NULL;
    if (x->ndim == 0) return ct__full_on(device, 0, NULL, 0.0, CT_I64);
    if (ct__normalize_axis(op, axis, x->ndim, &a) != CT_OK) return NULL;
    ct_tensor *rows = rows_of(x, a, perm);
    ct_tensor *out = rows ? ct__tensor_new(device, CT_I64, rows->ndim, rows->shape) : NULL;
    if (out) {
        ct__sort_args args = {0};
        args.indices = (int64_t *)ct__data(out);
        args.descending = descending;
        if (run_rows(op, device, rows, &args, false) != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(rows);
    return unrows(out, x->ndim, perm);
}

ct_tensor *ct_sort(const ct_tensor *x, int axis, bool descending) {
    if (!x) return ct__null_arg("ct_sort", 1);
    if (x->ndim == 0) return ct_clone(x);
    ct_tensor *order = ct_argsort(x, axis, descending);
    ct_tensor *out = order ? ct_gather(x, axis, order) : NULL;
    ct_release(order);
    return out;
}

/* d(cumsum)/dx: the gradient's running sum from the end, without the initial 0's entry. */
static ct_status cumsum_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    int axis = (int)node->ints[0];
    ct_tensor *tail =
        node->ints[1] ? ct_slice(g, axis, 1, INT64_MAX, 1) : ct_slice(g, axis, 0, INT64_MAX, 1);
    ct_tensor *rev = tail ? ct_slice(tail, axis, INT64_MAX, INT64_MIN, -1) : NULL;
    ct_tensor *sums = rev ? ct_cumulative_sum(rev, axis, g->dtype, false) : NULL;
    grad_in[0] = sums ? ct_slice(sums, axis, INT64_MAX, INT64_MIN, -1) : NULL;
    ct_release(tail);
    ct_release(rev);
    ct_release(sums);
    return grad_in[0] ? CT_OK : ct_last_status();
}

static ct_dtype cumsum_dtype(ct_dtype x, ct_dtype asked) {
    if (asked != CT_CUMSUM_DEFAULT_DTYPE) return asked;
    return ct__is_float(x) ? x : ct__is_unsigned(x) ? CT_U64 : CT_I64;
}

static ct_tensor *cumulative_sum(const ct_tensor *x, int axis, ct_dtype dtype,
                                 bool include_initial);

/* The running sums of the complex x: those of its real and imaginary parts, in the complex
 * dtype asked (x's by default; a real one is refused: the imaginary parts have no place). */
static ct_tensor *complex_cumulative_sum(const char *op, const ct_tensor *x, int axis,
                                         ct_dtype dtype, bool include_initial) {
    if (dtype == CT_CUMSUM_DEFAULT_DTYPE) dtype = x->dtype;
    if (!ct__is_complex(dtype))
        return ct__fail(CT_ERR_DTYPE,
                        "%s: x is %s and the dtype asked, %s, is real; ask for a complex dtype "
                        "or sum ct_real(x) or ct_imag(x)",
                        op, ct_dtype_name(x->dtype), ct_dtype_name(dtype));
    ct_dtype part = ct__complex_part(dtype);
    ct_tensor *xr = ct__complex_part_view(x, 0), *xi = xr ? ct__complex_part_view(x, 1) : NULL;
    ct_tensor *re = xi ? cumulative_sum(xr, axis, part, include_initial) : NULL;
    ct_tensor *im = re ? cumulative_sum(xi, axis, part, include_initial) : NULL;
    ct_tensor *out = ct__complex_from_parts(re, im, dtype, op);
    ct_release(xr);
    ct_release(xi);
    ct_release(re);
    ct_release(im);
    return out;
}

static ct_tensor *cumulative_sum(const ct_tensor *x, int axis, ct_dtype dtype,
                                 bool include_initial) {
    const char *op = "ct_cumulative_sum";
    ct_device device;
    int a = 0, perm[CT_MAX_DIMS];
    if (!ct__check_args_complex(op, 1, &x, &device)) return NULL;
    if (dtype != CT_CUMSUM_DEFAULT_DTYPE && ((int)dtype < 0 || (int)dtype >= CT_DTYPE_COUNT))
        return ct__fail(CT_ERR_DTYPE, "%s: dtype %d is not a ct_dtype", op, (int)dtype);
    if (ct__is_complex(x->dtype) && x->ndim > 0)
        return complex_cumulative_sum(op, x, axis, dtype, include_initial);
    if (ct__is_complex(dtype) && x->ndim > 0) {
        ct_tensor *wide = ct_cast(x, dtype);
        ct_tensor *out =
            wide ? complex_cumulative_sum(op, wide, axis, dtype, include_initial) : NULL;
        ct_release(wide);
        return out;
    }
    if (x->ndim == 0)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: x is 0-d; it needs an axis to sum along (reshape it "
                        "to 1-D)",
                        op);
    if (ct__normalize_axis(op, axis, x->ndim, &a) != CT_OK) return NULL;
    ct_dtype out_dtype = cumsum_dtype(x->dtype, dtype);
    ct_tensor *rows = rows_of(x, a, perm), *out = NULL;
    if (rows) {
        int64_t shape[CT_MAX_DIMS];
        memcpy(shape, rows->shape, sizeof shape);
        shape[x->ndim - 1] += include_initial;
        out = ct__full_on(device, x->ndim, shape, 0.0, out_dtype);
    }
    if (out) {
        ct__sort_args args = {0};
        args.out_dtype = out_dtype;
        args.out_row = out->shape[x->ndim - 1];
        args.out = ct__data(out) + (include_initial ? ct__dtype_size(out_dtype) : 0);
        if (run_rows(op, device, rows, &args, true) != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(rows);
    out = unrows(out, x->ndim, perm);
    if (!out || !ct__is_float(out_dtype) || !ct__grad_needed(1, &x)) return out;
    ct__node *node = ct__node_new(op, cumsum_backward, 1, &x);
    if (node) {
        node->ints[0] = a;
        node->ints[1] = include_initial;
    }
    return ct__record(out, node);
}

/* An explicit dtype makes the op ineligible for autocast, as in PyTorch. */
ct_tensor *ct_cumulative_sum(const ct_tensor *x, int axis, ct_dtype dtype, bool include_initial) {
    if (dtype != CT_CUMSUM_DEFAULT_DTYPE) return cumulative_sum(x, axis, dtype, include_initial);
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_CUMULATIVE_SUM, 1, (const ct_tensor **[]){&x})) return NULL;
    ct_tensor *out = cumulative_sum(x, axis, dtype, include_initial);
    ct__autocast_end(&ac);
    return out;
}

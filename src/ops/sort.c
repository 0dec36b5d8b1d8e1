/* Sorting and scanning along one axis: ct_argsort, ct_cumulative_sum and ct_cumulative_prod
 * through the backend's argsort, cumsum and cumprod kernels, ct_sort as a gather by
 * ct_argsort's order (so its gradient is the gather's), and the backward rules of the scans
 * (the reversed running sum of the gradient; for products, PyTorch's rule, exact with zeros
 * in x). The kernels see rows: the op axis is moved last and the input made contiguous
 * first. A complex tensor's running sums are those of its parts, its running products the
 * kernel's in complex128; sorting refuses complex tensors (they have no order, as the array
 * API standard says). */
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

/* The row kernels of the backend's table. */
typedef enum row_kernel { ROW_ARGSORT, ROW_CUMSUM, ROW_CUMPROD } row_kernel;

/* Run the kernel `which` on rows (contiguous, op axis last) with the output fields of args
 * set. */
static ct_status run_rows(const char *op, ct_device device, const ct_tensor *rows,
                          ct__sort_args *args, row_kernel which) {
    static const char *const names[] = {"argsort", "cumsum", "cumprod"};
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return ct_last_status();
    sort_kernel kernel = which == ROW_CUMSUM    ? k->cumsum
                         : which == ROW_CUMPROD ? k->cumprod
                                                : k->argsort;
    if (!kernel) {
        char name[32];
        return ct__error(CT_ERR_UNSUPPORTED, "%s: %s has no %s kernel", op,
                         ct_device_str(device, name, sizeof name), names[which]);
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
        if (run_rows(op, device, rows, &args, ROW_ARGSORT) != CT_OK) {
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

/* The scan `which` (ROW_CUMSUM, ROW_CUMPROD) of x along axis a into a new tensor of out_dtype,
 * each row led by the scan's identity when include_initial; NULL with the error set. */
static ct_tensor *scan(const char *op, ct_device device, const ct_tensor *x, int a,
                       ct_dtype out_dtype, bool include_initial, row_kernel which) {
    int perm[CT_MAX_DIMS];
    ct_tensor *rows = rows_of(x, a, perm), *out = NULL;
    if (rows) {
        int64_t shape[CT_MAX_DIMS];
        memcpy(shape, rows->shape, sizeof shape);
        shape[x->ndim - 1] += include_initial;
        out = ct__full_on(device, x->ndim, shape, which == ROW_CUMPROD ? 1.0 : 0.0, out_dtype);
    }
    if (out) {
        ct__sort_args args = {0};
        args.out_dtype = out_dtype;
        args.out_row = out->shape[x->ndim - 1];
        args.out = ct__data(out) + (include_initial ? ct__dtype_size(out_dtype) : 0);
        if (run_rows(op, device, rows, &args, which) != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(rows);
    return unrows(out, x->ndim, perm);
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
    int a = 0;
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
    ct_tensor *out = scan(op, device, x, a, out_dtype, include_initial, ROW_CUMSUM);
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

/* t's running sum along axis from the end (sum of t[j] over j >= i), in t's dtype. The
 * helpers of the backward rule run in its scope (which releases what they make) and pass a
 * NULL on, as the ops do. */
static ct_tensor *reverse_cumsum(const ct_tensor *t, int axis) {
    if (!t) return NULL;
    ct_tensor *rev = ct_slice(t, axis, INT64_MAX, INT64_MIN, -1);
    ct_tensor *sums = ct_cumulative_sum(rev, axis, t->dtype, false);
    return ct_slice(sums, axis, INT64_MAX, INT64_MIN, -1);
}

/* g * conj(t) (g * t for real operands). */
static ct_tensor *times_conj(const ct_tensor *g, const ct_tensor *t) {
    if (!g || !t) return NULL;
    return ct_mul(g, ct__is_complex(t->dtype) ? ct_conj(t) : t);
}

/* The gradient of y = cumprod(x) along axis, as PyTorch's cumprod_backward: with
 * R(v) = the reversed running sum of g * conj(v), the element k of a row is
 *   R(y)_k / conj(x_k)             before the row's first zero (x_k != 0 there),
 *   R(cumprod(x, x_z set to 1))_z  at the first zero z (every term's factor but x_z),
 *   0                              after it (each term has the factor x_z = 0).
 * Computed for every row at once, without reading anything back. */
static ct_tensor *cumprod_gradient(const ct_tensor *x, const ct_tensor *y, const ct_tensor *g,
                                   int axis) {
    ct_device device = ct_device_of(g);
    ct_tensor *one = ct__full_on(device, 0, NULL, 1.0, x->dtype);
    ct_tensor *zero = ct__full_on(device, 0, NULL, 0.0, g->dtype);
    ct_tensor *is_zero = ct_eq_scalar(x, 0.0);
    ct_tensor *zeros_so_far = ct_cumulative_sum(is_zero, axis, CT_I64, false);
    ct_tensor *before = ct_eq_scalar(zeros_so_far, 0.0);
    ct_tensor *first = ct_logical_and(is_zero, ct_eq_scalar(zeros_so_far, 1.0));
    ct_tensor *safe_x = ct_where(before, x, one);
    ct_tensor *a = ct_div(reverse_cumsum(times_conj(g, y), axis),
                          ct__is_complex(x->dtype) ? ct_conj(safe_x) : safe_x);
    ct_tensor *y1 = ct_cumulative_prod(ct_where(first, one, x), axis, g->dtype, false);
    ct_tensor *b = reverse_cumsum(times_conj(g, y1), axis);
    ct_tensor *grad = ct_where(before, a, ct_where(first, b, zero));
    return grad && ct__is_complex(grad->dtype) && !ct__is_complex(x->dtype) ? ct_real(grad) : grad;
}

static ct_status cumprod_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    int axis = (int)node->ints[0];
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    const ct_tensor *y = node->saved[1];
    if (node->ints[1]) { /* the initial 1 depends on nothing */
        g = ct_slice(g, axis, 1, INT64_MAX, 1);
        y = ct_slice(y, axis, 1, INT64_MAX, 1);
    }
    ct_tensor *grad = g && y ? cumprod_gradient(node->saved[0], y, g, axis) : NULL;
    grad_in[0] = grad ? ct_keep(grad) : NULL;
    ct_status status = grad_in[0] ? CT_OK : ct_last_status();
    ct_scope_end();
    return status;
}

/* The running product's dtype: the standard's default (as the running sum's; a complex x
 * keeps its dtype), or the one asked. */
static ct_dtype cumprod_dtype(ct_dtype x, ct_dtype asked) {
    if (asked == CT_CUMSUM_DEFAULT_DTYPE && ct__is_complex(x)) return x;
    return cumsum_dtype(x, asked);
}

/* Save x and the detached result in node for cumprod_backward; false (node released) when
 * the result cannot be detached. */
static bool save_cumprod(ct__node *node, const ct_tensor *x, const ct_tensor *out, int axis,
                         bool include_initial) {
    ct_tensor *y = ct_detach(out);
    if (!y) {
        ct__node_release(node);
        return false;
    }
    node->ints[0] = axis;
    node->ints[1] = include_initial;
    ct__node_save(node, 0, x);
    ct__node_save(node, 1, y);
    ct_release(y);
    return true;
}

static ct_tensor *cumulative_prod(const ct_tensor *x, int axis, ct_dtype dtype,
                                  bool include_initial) {
    const char *op = "ct_cumulative_prod";
    ct_device device;
    int a = 0;
    if (!ct__check_args_complex(op, 1, &x, &device)) return NULL;
    if (dtype != CT_CUMSUM_DEFAULT_DTYPE && ((int)dtype < 0 || (int)dtype >= CT_DTYPE_COUNT))
        return ct__fail(CT_ERR_DTYPE, "%s: dtype %d is not a ct_dtype", op, (int)dtype);
    ct_dtype out_dtype = cumprod_dtype(x->dtype, dtype);
    if (ct__is_complex(x->dtype) && !ct__is_complex(out_dtype))
        return ct__fail(CT_ERR_DTYPE,
                        "%s: x is %s and the dtype asked, %s, is real; ask for a complex dtype", op,
                        ct_dtype_name(x->dtype), ct_dtype_name(out_dtype));
    if (x->ndim == 0)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: x is 0-d; it needs an axis to multiply along (reshape it to 1-D)", op);
    if (ct__normalize_axis(op, axis, x->ndim, &a) != CT_OK) return NULL;
    ct_tensor *out = scan(op, device, x, a, out_dtype, include_initial, ROW_CUMPROD);
    if (!out || !ct__grad_dtype(out_dtype) || !ct__grad_needed(1, &x)) return out;
    ct__node *node = ct__node_new(op, cumprod_backward, 1, &x);
    if (node && !save_cumprod(node, x, out, a, include_initial)) node = NULL;
    return ct__record(out, node);
}

/* An explicit dtype makes the op ineligible for autocast, as in PyTorch. */
ct_tensor *ct_cumulative_prod(const ct_tensor *x, int axis, ct_dtype dtype, bool include_initial) {
    if (dtype != CT_CUMSUM_DEFAULT_DTYPE) return cumulative_prod(x, axis, dtype, include_initial);
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_CUMULATIVE_PROD, 1, (const ct_tensor **[]){&x}))
        return NULL;
    ct_tensor *out = cumulative_prod(x, axis, dtype, include_initial);
    ct__autocast_end(&ac);
    return out;
}

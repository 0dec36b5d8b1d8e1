/* Reductions: ct_sum, ct_mean, ct_prod, ct_max, ct_min, ct_all, ct_any, ct_var, ct_std,
 * ct_argmax, ct_argmin. The op layer checks the axes, picks the result dtype, makes the
 * output (keepdim keeps the reduced axes with size 1) and hands the backend the input's
 * kept ("outer") and reduced ("inner") axes with their strides, merged where the memory
 * layout allows, so kernels walk outer × inner without caring about the axis order.
 *
 * Result dtypes (NumPy/PyTorch):
 *   sum, prod       bool and signed integers -> i64, unsigned integers -> u64 (the array API
 *                   standard's and NumPy's); f16, bf16, f32, f64 -> the same dtype
 *   mean, var, std  integers and bool -> f32 (PyTorch's default float); floats -> the same
 *   max, min        the input's dtype (NaN propagates)
 *   all, any        bool
 *   argmax, argmin  i64 (index of the first extremum; a NaN counts as the extremum)
 * Empty reductions: sum 0, prod 1, all true, any false, mean/var/std NaN; max, min,
 * argmax and argmin fail with CT_ERR_SHAPE (they have no identity).
 * var/std divide by max(n - correction, 0), as NumPy's ddof does: when that is 0 the result
 * is inf, or NaN when every deviation is 0 (e.g. one element with correction 1). */
#include <stdlib.h>

#include "ops/grad_impl.h"
#include "ops/autocast_impl.h"
#include "ops/op_impl.h"

/* The reduced axes of x as a mask; false with the error set. */
static bool parse_axes(const char *name, const ct_tensor *x, int naxes, const int *axes,
                       bool *reduced) {
    for (int d = 0; d < CT_MAX_DIMS; d++) reduced[d] = axes == NULL;
    if (!axes) return true;
    if (naxes < 0 || naxes > x->ndim) {
        ct__error(CT_ERR_INVALID_ARG,
                  "%s: naxes is %d but a tensor of rank %d has 0 to %d distinct axes; pass "
                  "axes = NULL to reduce every axis",
                  name, naxes, x->ndim, x->ndim);
        return false;
    }
    for (int i = 0; i < naxes; i++) {
        int a;
        if (ct__normalize_axis(name, axes[i], x->ndim, &a) != CT_OK) return false;
        if (reduced[a]) {
            ct__error(CT_ERR_INVALID_ARG,
                      "%s: axis %d is given twice (axes[%d] = %d names it again); list each "
                      "axis once",
                      name, a, i, axes[i]);
            return false;
        }
        reduced[a] = true;
    }
    return true;
}

static ct_dtype result_dtype(ct__reduce_op op, ct_dtype in) {
    bool fl = ct__is_float(in);
    switch (op) {
    case CT_ROP_SUM:
    case CT_ROP_PROD: return fl ? in : ct__is_unsigned(in) ? CT_U64 : CT_I64;
    case CT_ROP_MEAN:
    case CT_ROP_VAR:
    case CT_ROP_STD: return fl ? in : CT_F32;
    case CT_ROP_ALL:
    case CT_ROP_ANY: return CT_BOOL;
    case CT_ROP_ARGMAX:
    case CT_ROP_ARGMIN: return CT_I64;
    default: return in;
    }
}

/* Append axis (size, in stride, out stride) to a list, dropping size-1 axes and merging it
 * into the previous one when a step of the previous equals a sweep of this one. */
static void push_axis(int *n, int64_t *shape, int64_t *in_strides, int64_t *out_strides,
                      int64_t size, int64_t in_stride, int64_t out_stride) {
    if (size == 1) return;
    int k = *n;
    if (k > 0 && in_strides[k - 1] == in_stride * size &&
        (!out_strides || out_strides[k - 1] == out_stride * size)) {
        shape[k - 1] *= size;
        in_strides[k - 1] = in_stride;
        if (out_strides) out_strides[k - 1] = out_stride;
        return;
    }
    shape[k] = size;
    in_strides[k] = in_stride;
    if (out_strides) out_strides[k] = out_stride;
    *n = k + 1;
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* The reduced axes in the order the kernel walks them: C order for the arg ops (their
 * result is a C-order index), else the largest stride first so memory is read in order. */
static int inner_order(const ct_tensor *x, const bool *reduced, bool keep_c_order, int *order) {
    int n = 0;
    for (int d = 0; d < x->ndim; d++)
        if (reduced[d]) order[n++] = d;
    for (int i = 1; i < n && !keep_c_order; i++)
        for (int j = i; j > 0 && abs64(x->strides[order[j]]) > abs64(x->strides[order[j - 1]]);
             j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    return n;
}

static void build_args(ct__reduce_op op, const ct_tensor *x, const bool *reduced, bool keepdim,
                       const ct_tensor *out, double correction, ct__reduce_args *a) {
    a->outer_ndim = 0;
    a->inner_ndim = 0;
    int out_axis = 0; /* out's axis matching x's kept axis d */
    for (int d = 0; d < x->ndim; d++) {
        if (reduced[d]) {
            if (keepdim) out_axis++;
            continue;
        }
        push_axis(&a->outer_ndim, a->outer_shape, a->in_outer_strides, a->out_strides, x->shape[d],
                  x->strides[d], out->strides[out_axis++]);
    }
    int order[CT_MAX_DIMS];
    int n = inner_order(x, reduced, op == CT_ROP_ARGMAX || op == CT_ROP_ARGMIN, order);
    for (int i = 0; i < n; i++)
        push_axis(&a->inner_ndim, a->inner_shape, a->in_inner_strides, NULL, x->shape[order[i]],
                  x->strides[order[i]], 0);
    a->in = ct__data(x);
    a->in_dtype = x->dtype;
    a->out = ct__data(out);
    a->out_dtype = out->dtype;
    a->correction = correction;
}

static int64_t reduced_numel(const ct_tensor *x, const bool *reduced) {
    int64_t n = 1;
    for (int d = 0; d < x->ndim; d++)
        if (reduced[d]) n *= x->shape[d];
    return n;
}

/* The output: x's shape with the reduced axes removed, or kept with size 1. */
static ct_tensor *make_output(const ct_tensor *x, const bool *reduced, bool keepdim, ct_dtype dtype,
                              ct_device device) {
    int64_t shape[CT_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!reduced[d])
            shape[ndim++] = x->shape[d];
        else if (keepdim)
            shape[ndim++] = 1;
    }
    return ct__tensor_new(device, dtype, ndim, shape);
}

static ct_tensor *reduce(const char *name, ct__reduce_op op, const ct_tensor *x,
                         const bool *reduced, bool keepdim, double correction, ct_device device) {
    bool needs_elements =
        op == CT_ROP_MAX || op == CT_ROP_MIN || op == CT_ROP_ARGMAX || op == CT_ROP_ARGMIN;
    if (needs_elements && reduced_numel(x, reduced) == 0)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: the reduced axes are empty (0 elements) and the op has no "
                        "identity; reduce over non-empty axes or check the size first",
                        name);
    ct_tensor *out = make_output(x, reduced, keepdim, result_dtype(op, x->dtype), device);
    if (!out || out->numel == 0) return out;
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    ct__reduce_args args;
    build_args(op, x, reduced, keepdim, out, correction, &args);
    if (!k || k->reduce(physical, op, &args) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

static ct_tensor *reduce_axes(const char *name, ct__reduce_op op, const ct_tensor *x, int naxes,
                              const int *axes, bool keepdim, double correction) {
    ct_device device;
    if (!ct__check_args_complex(name, 1, &x, &device)) return NULL;
    bool reduced[CT_MAX_DIMS];
    if (!parse_axes(name, x, naxes, axes, reduced)) return NULL;
    ct_tensor *out = ct__is_complex(x->dtype)
                         ? ct__complex_reduce(name, op, x, reduced, keepdim)
                         : reduce(name, op, x, reduced, keepdim, correction, device);
    return ct__grad_needed(1, &x)
               ? ct__record_reduce(out, name, op, x, reduced, keepdim, correction)
               : out;
}

/* reduce_axes through autocast's front door. */
static ct_tensor *reduce_autocast(const char *name, ct__reduce_op op, ct__autocast_op id,
                                  const ct_tensor *x, int naxes, const int *axes, bool keepdim,
                                  double correction) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, id, 1, (const ct_tensor **[]){&x})) return NULL;
    ct_tensor *out = reduce_axes(name, op, x, naxes, axes, keepdim, correction);
    ct__autocast_end(&ac);
    return out;
}

#define CT_DEFINE_REDUCE_(name, NAME, autocast)                                                    \
    ct_tensor *ct_##name(const ct_tensor *x, int naxes, const int *axes, bool keepdim) {           \
        return reduce_autocast("ct_" #name, CT_ROP_##NAME, CT__AC_R_##NAME, x, naxes, axes,        \
                               keepdim, 0.0);                                                      \
    }
CT_REDUCE_OPS(CT_DEFINE_REDUCE_)
#undef CT_DEFINE_REDUCE_

ct_tensor *ct_var(const ct_tensor *x, int naxes, const int *axes, double correction, bool keepdim) {
    return reduce_autocast("ct_var", CT_ROP_VAR, CT__AC_VAR, x, naxes, axes, keepdim, correction);
}

ct_tensor *ct_std(const ct_tensor *x, int naxes, const int *axes, double correction, bool keepdim) {
    return reduce_autocast("ct_std", CT_ROP_STD, CT__AC_STD, x, naxes, axes, keepdim, correction);
}

static ct_tensor *arg_extremum(const char *name, ct__reduce_op op, const ct_tensor *x, int axis,
                               bool keepdim) {
    ct_device device;
    if (!ct__check_args(name, 1, &x, &device)) return NULL;
    bool reduced[CT_MAX_DIMS];
    if (axis == CT_AXIS_NONE) {
        if (!parse_axes(name, x, 0, NULL, reduced)) return NULL;
    } else if (!parse_axes(name, x, 1, &axis, reduced)) {
        return NULL;
    }
    return reduce(name, op, x, reduced, keepdim, 0.0, device);
}

ct_tensor *ct_argmax(const ct_tensor *x, int axis, bool keepdim) {
    return arg_extremum("ct_argmax", CT_ROP_ARGMAX, x, axis, keepdim);
}

ct_tensor *ct_argmin(const ct_tensor *x, int axis, bool keepdim) {
    return arg_extremum("ct_argmin", CT_ROP_ARGMIN, x, axis, keepdim);
}

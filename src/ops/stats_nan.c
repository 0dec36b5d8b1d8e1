/* NaN-aware reductions and elementwise compositions (ctensor/stats.h): ct_nansum (a ct_where
 * of the NaNs to 0, summed), ct_nanmean (that sum over the count of numbers), ct_nan_to_num
 * (ct_where of the replacements) and ct_lerp (PyTorch's two-sided formula, a ct_where of the
 * two). Their gradients are those of the ops they are made of. */
#include <float.h>
#include <math.h>

#include "ctensor/stats.h"
#include "ops/op_impl.h"

static void release_all(int n, ct_tensor **t) {
    for (int i = 0; i < n; i++) ct_release(t[i]);
}

/* x with its NaNs as 0 (x itself, a new reference, when it cannot hold NaN). */
static ct_tensor *nan_as_zero(const ct_tensor *x, ct_device device) {
    if (!ct_dtype_is_floating(x->dtype)) return ct_retain((ct_tensor *)x);
    ct_tensor *nan = ct_isnan(x);
    ct_tensor *zero = nan ? ct__full_on(device, 0, NULL, 0.0, x->dtype) : NULL;
    ct_tensor *out = zero ? ct_where(nan, zero, x) : NULL;
    ct_release(nan);
    ct_release(zero);
    return out;
}

ct_tensor *ct_nansum(const ct_tensor *x, int naxes, const int *axes, bool keepdim) {
    ct_device device;
    if (!ct__check_args("ct_nansum", 1, &x, &device)) return NULL;
    ct_tensor *clean = nan_as_zero(x, device);
    ct_tensor *out = clean ? ct_sum(clean, naxes, axes, keepdim) : NULL;
    ct_release(clean);
    return out;
}

ct_tensor *ct_nanmean(const ct_tensor *x, int naxes, const int *axes, bool keepdim) {
    const char *op = "ct_nanmean";
    ct_device device;
    if (!ct__check_args(op, 1, &x, &device)) return NULL;
    if (!ct_dtype_is_floating(x->dtype))
        return ct__fail(CT_ERR_DTYPE, "%s: x is %s; nanmean needs a floating dtype", op,
                        ct_dtype_name(x->dtype));
    ct_tensor *t[5] = {NULL}, *out = NULL;
    t[0] = ct_nansum(x, naxes, axes, keepdim);
    t[1] = t[0] ? ct_isnan(x) : NULL;
    t[2] = ct_logical_not(t[1]);
    t[3] = ct_cast(t[2], x->dtype);
    t[4] = ct_sum(t[3], naxes, axes, keepdim); /* the numbers counted */
    out = t[4] ? ct_div(t[0], t[4]) : NULL;
    release_all(5, t);
    return out;
}

/* The largest finite value of the floating dtype. */
static double max_finite(ct_dtype dtype) {
    switch (dtype) {
    case CT_F16: return 65504.0;
    case CT_BF16: return 0x1.fep127;
    case CT_F32: return FLT_MAX;
    default: return DBL_MAX;
    }
}

ct_tensor *ct_nan_to_num(const ct_tensor *x, double nan, const double *posinf,
                         const double *neginf) {
    ct_device device;
    if (!ct__check_args("ct_nan_to_num", 1, &x, &device)) return NULL;
    if (!ct_dtype_is_floating(x->dtype)) return ct_clone(x);
    double values[3] = {nan, posinf ? *posinf : max_finite(x->dtype),
                        neginf ? *neginf : -max_finite(x->dtype)};
    ct_tensor *t[9] = {NULL}, *out = NULL;
    t[0] = ct_isnan(x);
    t[1] = ct_eq_scalar(x, INFINITY);
    t[2] = ct_eq_scalar(x, -INFINITY);
    for (int i = 0; i < 3; i++) t[3 + i] = ct__full_on(device, 0, NULL, values[i], x->dtype);
    t[6] = ct_where(t[2], t[5], x);
    t[7] = ct_where(t[1], t[4], t[6]);
    t[8] = ct_where(t[0], t[3], t[7]);
    out = t[8] ? ct_retain(t[8]) : NULL;
    release_all(9, t);
    return out;
}

/* The floating dtype the n operands promote to; CT_ERR_DTYPE (naming op) when it is not one. */
static bool lerp_dtype(const char *op, int n, const ct_tensor *const *args, ct_dtype *dtype) {
    ct_dtype d = args[0]->dtype;
    for (int i = 1; i < n; i++) d = ct_promote_types(d, args[i]->dtype);
    *dtype = d;
    if (ct_dtype_is_floating(d)) return true;
    ct__error(CT_ERR_DTYPE, "%s: the operands promote to %s; lerp needs a real floating dtype", op,
              ct_dtype_name(d));
    return false;
}

ct_tensor *ct_lerp(const ct_tensor *start, const ct_tensor *end, const ct_tensor *weight) {
    const char *op = "ct_lerp";
    const ct_tensor *args[3] = {start, end, weight};
    ct_device device;
    ct_dtype dtype;
    if (!ct__check_args(op, 3, args, &device) || !lerp_dtype(op, 3, args, &dtype)) return NULL;
    ct_tensor *t[11] = {NULL}, *out = NULL;
    t[0] = ct_cast(start, dtype);
    t[1] = ct_cast(end, dtype);
    t[2] = ct_cast(weight, dtype);
    t[3] = ct_sub(t[1], t[0]);        /* end - start */
    t[4] = ct_mul(t[2], t[3]);        /* weight (end - start) */
    t[5] = ct_add(t[0], t[4]);        /* from start */
    t[6] = ct_sub_rscalar(t[2], 1.0); /* 1 - weight */
    t[7] = ct_mul(t[3], t[6]);        /* (end - start) (1 - weight) */
    t[8] = ct_sub(t[1], t[7]);        /* from end */
    t[9] = ct_abs(t[2]);
    t[10] = ct_lt_scalar(t[9], 0.5);
    out = t[10] ? ct_where(t[10], t[5], t[8]) : NULL;
    release_all(11, t);
    return out;
}

ct_tensor *ct_lerp_scalar(const ct_tensor *start, const ct_tensor *end, double weight) {
    const char *op = "ct_lerp_scalar";
    const ct_tensor *args[2] = {start, end};
    ct_device device;
    ct_dtype dtype;
    if (!ct__check_args(op, 2, args, &device) || !lerp_dtype(op, 2, args, &dtype)) return NULL;
    ct_tensor *t[4] = {NULL}, *out = NULL;
    t[0] = ct_cast(start, dtype);
    t[1] = ct_cast(end, dtype);
    t[2] = ct_sub(t[1], t[0]);
    t[3] = fabs(weight) < 0.5 ? ct_mul_scalar(t[2], weight) : ct_mul_scalar(t[2], 1.0 - weight);
    if (t[3]) out = fabs(weight) < 0.5 ? ct_add(t[0], t[3]) : ct_sub(t[1], t[3]);
    release_all(4, t);
    return out;
}

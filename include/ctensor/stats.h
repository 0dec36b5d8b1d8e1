/* ctensor — order statistics and NaN-aware reductions, as PyTorch's: median, nanmedian,
 * quantile, nanquantile, nansum, nanmean, nan_to_num and lerp. Each is composed of the core's
 * ops (ct_argsort, ct_gather, ct_where, ct_isnan, ct_sum ...), so it runs on every device and
 * its gradient is that of the ops it is made of: the gradient of a median or a quantile flows
 * to the elements it picked. Same conventions as ops.h: NULL in gives NULL out, the first
 * error kept; each returns new references; axes may be negative. NaN sorts after every
 * number (sorting.h). */
#ifndef CTENSOR_STATS_H
#define CTENSOR_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/ops.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- medians (any real dtype; complex is CT_ERR_DTYPE) ---- */

/* The median of all elements of x, 0-d in x's dtype: of an even count the lower of the two
 * middle values (PyTorch's, not NumPy's mean of the two). NaN when x holds a NaN; NaN for an
 * empty floating x (an empty integer x is CT_ERR_SHAPE: it has no NaN). */
CT_API ct_tensor *ct_median(const ct_tensor *x);
/* As ct_median over the elements that are not NaN: NaN only when every one is. */
CT_API ct_tensor *ct_nanmedian(const ct_tensor *x);
/* The median along axis: *values (x's dtype) and *indices (CT_I64, the position on axis of
 * the element picked), both of x's shape without axis (keepdim: with it as size 1). A row
 * holding a NaN gives NaN and the index of its first NaN. Of equal values, the one picked is
 * the one a stable sort puts at the middle. indices may be NULL (not wanted). A 0-d x is
 * its own median (index 0). An empty axis is CT_ERR_SHAPE (PyTorch's error); empty other
 * axes give empty results. On failure *values and *indices are NULL. */
CT_API ct_status ct_median_dim(const ct_tensor *x, int axis, bool keepdim, ct_tensor **values,
                               ct_tensor **indices);
/* As ct_median_dim, ignoring NaN: a row's median is that of its other elements; a row of
 * NaNs only gives NaN and index 0. */
CT_API ct_status ct_nanmedian_dim(const ct_tensor *x, int axis, bool keepdim, ct_tensor **values,
                                  ct_tensor **indices);

/* ---- quantiles (real floating x) ---- */

/* How a quantile between two sorted elements i < j (at fractional rank r = q (n - 1)) is
 * read, as PyTorch's and NumPy's `interpolation`: linear x[i] + (r - i) (x[j] - x[i]); lower
 * x[i]; higher x[j]; midpoint (x[i] + x[j]) / 2; nearest the one at r rounded half to even. */
typedef enum ct_quantile_interpolation {
    CT_QUANTILE_LINEAR,
    CT_QUANTILE_LOWER,
    CT_QUANTILE_HIGHER,
    CT_QUANTILE_MIDPOINT,
    CT_QUANTILE_NEAREST
} ct_quantile_interpolation;

/* The q-th quantiles of x along axis (CT_AXIS_NONE: of all elements, x flattened), as
 * torch.quantile: q is 0-d (the result has x's shape without axis; keepdim: with it as size
 * 1, or for CT_AXIS_NONE every axis as size 1) or 1-D (the same, with q's length as a new
 * first axis). x is real floating, q of x's dtype (CT_ERR_DTYPE), on x's device (a 0-d CPU q
 * joins any device); every q in [0, 1], else CT_ERR_INVALID_ARG (checking reads one bool back
 * from the device: an implicit transfer on a GPU). A row holding a NaN gives NaN; an empty x
 * gives NaNs (of the result's shape). Differentiable in x (the picked elements) and in q
 * (through the linear weights). */
CT_API ct_tensor *ct_quantile(const ct_tensor *x, const ct_tensor *q, int axis, bool keepdim,
                              ct_quantile_interpolation interpolation);
/* As ct_quantile over each row's elements that are not NaN (ranks q (count - 1)); a row of
 * NaNs only gives NaN. */
CT_API ct_tensor *ct_nanquantile(const ct_tensor *x, const ct_tensor *q, int axis, bool keepdim,
                                 ct_quantile_interpolation interpolation);

/* ---- NaN-aware reductions and replacements ---- */

/* ct_sum with NaNs counted as 0 (the dtypes of ct_sum: integers and bool sum to int64 or
 * uint64, having no NaN). Differentiable: the gradient is 0 at the NaNs. */
CT_API ct_tensor *ct_nansum(const ct_tensor *x, int naxes, const int *axes, bool keepdim);
/* The mean of the elements that are not NaN (NaN where every one is, or none is there).
 * Floating x only (CT_ERR_DTYPE for integers and bool, as PyTorch). Differentiable. */
CT_API ct_tensor *ct_nanmean(const ct_tensor *x, int naxes, const int *axes, bool keepdim);
/* x with NaN replaced by nan, +inf by *posinf and -inf by *neginf (NULL: the largest and
 * the lowest finite value of x's dtype), each value rounded to x's dtype. Integer and bool x
 * are copied unchanged; complex is CT_ERR_DTYPE. Differentiable: gradient 1 where x is
 * finite, 0 where a value was replaced. */
CT_API ct_tensor *ct_nan_to_num(const ct_tensor *x, double nan, const double *posinf,
                                const double *neginf);
/* Linear interpolation start + weight (end - start), by PyTorch's formula: that one where
 * |weight| < 0.5, else end - (end - start) (1 - weight), exact at weight 0 and 1. The three
 * broadcast together; dtypes are promoted and must give a real floating one (CT_ERR_DTYPE).
 * Differentiable in all three. */
CT_API ct_tensor *ct_lerp(const ct_tensor *start, const ct_tensor *end, const ct_tensor *weight);
/* ct_lerp with a scalar weight. */
CT_API ct_tensor *ct_lerp_scalar(const ct_tensor *start, const ct_tensor *end, double weight);

#ifdef __cplusplus
}
#endif
#endif

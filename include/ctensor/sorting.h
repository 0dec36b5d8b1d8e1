/* ctensor — sorting, searching, scanning and sets (the array API standard's sort, argsort,
 * cumulative_sum, nonzero, unique_*), and the shape ops built on the core's (tril, triu,
 * tile, repeat, tensordot). Same conventions as ops.h: NULL in gives NULL out, the first
 * error kept; each returns a new reference; axes may be negative. */
#ifndef CTENSOR_SORTING_H
#define CTENSOR_SORTING_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The positions (CT_I64) that sort x along axis: stable, equal elements keep their order
 * (also when descending); NaN sorts after every number (descending: before); -0.0 equals
 * 0.0. A 0-d x gives a 0-d 0. */
CT_API ct_tensor *ct_argsort(const ct_tensor *x, int axis, bool descending);
/* x sorted along axis (the order of ct_argsort), differentiable. */
CT_API ct_tensor *ct_sort(const ct_tensor *x, int axis, bool descending);

/* For ct_cumulative_sum's dtype: the standard's default (x's dtype for floats, CT_I64 for
 * integers and bool). */
#define CT_CUMSUM_DEFAULT_DTYPE ((ct_dtype)-1)
/* Running sums along axis in dtype (floats summed in float64, integers in int64, wrapping);
 * with include_initial the result starts with a 0 (one more element on axis).
 * Differentiable. x must have rank >= 1 (CT_ERR_SHAPE). */
CT_API ct_tensor *ct_cumulative_sum(const ct_tensor *x, int axis, ct_dtype dtype,
                                    bool include_initial);

#ifdef __cplusplus
}
#endif
#endif

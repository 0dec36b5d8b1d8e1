/* ctensor — sorting, searching, scanning and sets (the array API standard's sort, argsort,
 * cumulative_sum, cumulative_prod, nonzero, searchsorted, unique_*, isin), and the ops built
 * on the core's (tril, triu, tile, repeat, tensordot, diff). Same conventions as ops.h: NULL
 * in gives NULL out, the first error kept; each returns a new reference; axes may be negative. */
#ifndef CTENSOR_SORTING_H
#define CTENSOR_SORTING_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/ops.h"
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

/* For ct_cumulative_sum's dtype: the standard's default (x's dtype for floats, CT_U64 for
 * unsigned integers, CT_I64 for signed integers and bool), as ct_sum's. */
#define CT_CUMSUM_DEFAULT_DTYPE ((ct_dtype)-1)
/* Running sums along axis in dtype (floats summed in float64, integers in int64, wrapping);
 * with include_initial the result starts with a 0 (one more element on axis).
 * Differentiable. x must have rank >= 1 (CT_ERR_SHAPE). */
CT_API ct_tensor *ct_cumulative_sum(const ct_tensor *x, int axis, ct_dtype dtype,
                                    bool include_initial);
/* Running products along axis in dtype (CT_CUMSUM_DEFAULT_DTYPE: the same default as
 * ct_cumulative_sum's, a complex x keeping its dtype; a real dtype for a complex x is
 * CT_ERR_DTYPE): floats multiplied in float64, integers and bool in int64 (wrapping, as
 * NumPy's), complex in complex128; with include_initial the result starts with a 1 (one more
 * element on axis). Each row is multiplied in order on the CPU (in a tree on CUDA: the same
 * up to rounding). Differentiable, also where x has zeros (PyTorch's cumprod rule; complex:
 * conjugate gradients). x must have rank >= 1 (CT_ERR_SHAPE). */
CT_API ct_tensor *ct_cumulative_prod(const ct_tensor *x, int axis, ct_dtype dtype,
                                     bool include_initial);

/* ---- searching and sets (built on ct_argsort and ct_cumulative_sum; their result sizes
 * depend on the data, so each reads one count back from the device: an implicit transfer
 * on a GPU) ---- */

/* The indices (CT_I64, 1-D each) of x's nonzero elements, one tensor per axis of x, in
 * C order: out[0..ndim) receive new references. x must have rank >= 1 (CT_ERR_SHAPE). On
 * failure nothing is written. */
CT_API ct_status ct_nonzero(const ct_tensor *x, ct_tensor **out);

/* For each element v of x2, the position in the sorted 1-D x1 where v would be inserted to
 * keep it sorted: the first such (right false: x1[i-1] < v <= x1[i]) or the last (right:
 * x1[i-1] <= v < x1[i]). CT_I64, x2's shape; NaN sorts last. */
CT_API ct_tensor *ct_searchsorted(const ct_tensor *x1, const ct_tensor *x2, bool right);

/* The unique elements of x (flattened), sorted (NaNs each distinct, last; -0.0 equals 0.0):
 * values; indices, the position in flattened x of each value's first occurrence; inverse,
 * with x's shape, the position in values of each element of x; counts, how often each
 * value occurs (the three CT_I64). */
typedef struct ct_unique_result {
    ct_tensor *values;
    ct_tensor *indices;
    ct_tensor *inverse;
    ct_tensor *counts;
} ct_unique_result;
/* Fills *out with four new references (ct_unique_release drops them), or on failure
 * leaves every member NULL. */
CT_API ct_status ct_unique(const ct_tensor *x, ct_unique_result *out);
CT_API void ct_unique_release(ct_unique_result *r);

/* Whether each element of elements is among test_elements (any shape; both promoted to one
 * dtype, as ct_eq does): CT_BOOL with elements' shape, negated with invert. NaN is in no
 * tensor; -0.0 equals 0.0. Real dtypes and bool (complex: CT_ERR_DTYPE). assume_unique
 * says test_elements has no repeated values; the result is the same either way. Built on
 * ct_sort and ct_searchsorted; not differentiable (a bool result). */
CT_API ct_tensor *ct_isin(const ct_tensor *elements, const ct_tensor *test_elements,
                          bool assume_unique, bool invert);

/* ---- shape ops built on the core's ---- */

/* x with the elements above the k-th diagonal (tril) / below it (triu) of its last two
 * axes set to zero; k > 0 is above the main diagonal. Rank >= 2 (CT_ERR_SHAPE).
 * Differentiable. */
CT_API ct_tensor *ct_tril(const ct_tensor *x, int64_t k);
CT_API ct_tensor *ct_triu(const ct_tensor *x, int64_t k);
/* x repeated reps[d] times along each axis (numpy.tile: the shorter of x's shape and reps is
 * padded with leading 1s). Differentiable. */
CT_API ct_tensor *ct_tile(const ct_tensor *x, int nreps, const int64_t *reps);
/* Each element of x repeated `repeats` times along axis (CT_AXIS_NONE: x flattened first).
 * Differentiable. */
CT_API ct_tensor *ct_repeat(const ct_tensor *x, int64_t repeats, int axis);
/* As ct_repeat with a count per element along axis: repeats is a 1-D integer tensor of
 * axis's length (or of length 1, broadcast), every count >= 0 (CT_ERR_INVALID_ARG). */
CT_API ct_tensor *ct_repeat_each(const ct_tensor *x, const ct_tensor *repeats, int axis);
/* The n-th discrete difference along axis (numpy.diff): out[i] = x[i+1] - x[i], n times
 * (bool: ct_ne, as NumPy's), after prepend and append (each NULL, or a 0-d tensor broadcast
 * to x's shape with size 1 on axis, or a tensor of x's rank and shape off axis) are joined
 * to x before and after along axis (dtypes promoted as ct_concat does). The axis keeps
 * max(0, size - n) elements. n = 0 gives x itself (a new reference; prepend and append
 * ignored, as NumPy's); n < 0 is CT_ERR_INVALID_ARG; x must have rank >= 1 (CT_ERR_SHAPE).
 * Built on ct_slice, ct_concat and ct_sub: differentiable, on every device. */
CT_API ct_tensor *ct_diff(const ct_tensor *x, int axis, int64_t n, const ct_tensor *prepend,
                          const ct_tensor *append);
/* Sum of products over axes_a of a and axes_b of b (n pairs, equal sizes): the result has
 * a's other axes, then b's. Differentiable. */
CT_API ct_tensor *ct_tensordot(const ct_tensor *a, const ct_tensor *b, int n, const int *axes_a,
                               const int *axes_b);

#ifdef __cplusplus
}
#endif
#endif

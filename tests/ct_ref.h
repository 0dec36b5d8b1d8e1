/* Test helpers for checking ops against float64 references: tensors from double arrays
 * (contiguous or as non-contiguous views), reading tensors back as doubles, a test-only
 * random source (independent of the library's Philox), and dtype-aware tolerances. */
#ifndef CT_REF_H
#define CT_REF_H

#include <stdbool.h>
#include <stdint.h>

#include "ct_test.h"

/* A tensor of dtype on device holding values (C order, numel(shape) of them). */
ct_tensor *ref_tensor(const double *values, int ndim, const int64_t *shape, ct_dtype dtype,
                      ct_device device);
/* The same values as a non-contiguous view: stored with the first two axes swapped
 * (rank >= 2) or with stride 2 (rank 1). A 0-d shape gives a plain tensor. */
ct_tensor *ref_tensor_strided(const double *values, int ndim, const int64_t *shape, ct_dtype dtype,
                              ct_device device);
/* The elements of t in C order as doubles (malloc'd; free()); NULL on failure. */
double *
ref_read(const ct_tensor *t); /* complex: real parts, NaN where the imaginary part is not 0 */
/* The largest |a - b| over the elements (C order; NaN where one differs by NaN), INFINITY
 * when they cannot be read or differ in size; with scale, the largest |b| into *scale. */
double ref_max_diff(const ct_tensor *a, const ct_tensor *b, double *scale);
/* Pooling's window [start, end) of output i along an axis of size n with o outputs, and its
 * divisor: adaptive (PyTorch's floor/ceil bounds) or kernel k, stride s (0: k) and padding p
 * (the divisor counts the padding, as the library's average pool does). */
void ref_pool_window(bool adaptive, int64_t k, int64_t s, int64_t p, int64_t n, int64_t o,
                     int64_t i, int64_t *start, int64_t *end, int64_t *div);
/* n deterministic values uniform in [lo, hi) from seed (splitmix64; test-only). */
void ref_random(double *out, int64_t n, uint64_t seed, double lo, double hi);
/* Round a float64 value to what dtype can hold (the reference's inputs must be
 * representable in the tensor's dtype). */
double ref_round(double v, ct_dtype dtype);
/* Absolute-plus-relative tolerance for results in dtype. */
double ref_tolerance(ct_dtype dtype);
bool ref_close(double actual, double expected, ct_dtype dtype);
int64_t ref_numel(int ndim, const int64_t *shape);
/* The multi-index of C-order linear index i in shape, and back. */
void ref_unravel(int64_t i, int ndim, const int64_t *shape, int64_t *index);
int64_t ref_ravel(int ndim, const int64_t *shape, const int64_t *index);

/* Every element of t is close to expected[i] for t's dtype (NaN matches NaN). */
/* The running sum (product: the running product) of x (C order, shape) along axis, led by
 * the identity when initial, each rounded to out: ct_cumulative_sum's and
 * ct_cumulative_prod's reference. expected holds the result's elements. */
void ref_scan(const double *x, int ndim, const int64_t *shape, int axis, bool initial, bool product,
              ct_dtype out, double *expected);
/* The scans' shared check: values (3 x 4 x 5, representable in dtype; case picks a
 * contiguous or a strided tensor and a negative axis, by parity) through op along every axis,
 * with and without include_initial, in the default dtype (integers widened to int64 or
 * uint64) and in CT_F64, against ref_scan; a mismatch fails the running test. */
typedef ct_tensor *(*ref_scan_op)(const ct_tensor *x, int axis, ct_dtype dtype,
                                  bool include_initial);
void ref_check_scan(ref_scan_op op, bool product, const double *values, ct_dtype dtype, int case_,
                    ct_device device);

#define CHECK_TENSOR(t, expected)                                                                  \
    do {                                                                                           \
        const ct_tensor *check_t_ = (t);                                                           \
        CHECK_NOT_NULL(check_t_);                                                                  \
        double *check_v_ = ref_read(check_t_);                                                     \
        CHECK_NOT_NULL(check_v_);                                                                  \
        int64_t check_n_ = ct_numel(check_t_);                                                     \
        for (int64_t check_i_ = 0; check_i_ < check_n_; check_i_++) {                              \
            if (!ref_close(check_v_[check_i_], (expected)[check_i_], ct_dtype_of(check_t_))) {     \
                ct_test_fail(__FILE__, __LINE__, "%s[%lld] = %.9g, expected %.9g (%s)", #t,        \
                             (long long)check_i_, check_v_[check_i_], (expected)[check_i_],        \
                             ct_dtype_name(ct_dtype_of(check_t_)));                                \
                free(check_v_);                                                                    \
                return;                                                                            \
            }                                                                                      \
        }                                                                                          \
        free(check_v_);                                                                            \
    } while (0)

#endif

/* What the linalg front doors share (src/ops/linalg*.c): the factorizations through the
 * backend's linalg kernel, without autograd (linalg_factor.c), and the recording of their
 * gradients (linalg_grad.c). */
#ifndef CT_LINALG_IMPL_H
#define CT_LINALG_IMPL_H

#include "ctensor/ctensor.h"

/* The dtypes the factorizations take: float32, float64, complex64, complex128. */
bool ct__linalg_dtype(ct_dtype dtype);
/* CT_OK when x is a stack of matrices (at least two axes, square when square) of a
 * ct__linalg_dtype: else the error, led by op. */
ct_status ct__linalg_check(const char *op, const ct_tensor *x, bool square);

/* The factorizations of x's stack as results without history (grad mode plays no part).
 * Each returns CT_OK with new references in its outputs, or the error (led by op, a bad
 * matrix named by its index in the stack) with the outputs NULL. An output pointer may be
 * NULL where the function says so. */
ct_status ct__linalg_cholesky_raw(const char *op, const ct_tensor *x, ct_tensor **l);
/* a (..., n, n) and b (..., n, k) of one batch shape. */
ct_status ct__linalg_solve_raw(const char *op, const ct_tensor *a, const ct_tensor *b,
                               ct_tensor **x);
/* sign, logabsdet and det may each be NULL. */
ct_status ct__linalg_det_raw(const char *op, const ct_tensor *x, ct_tensor **sign,
                             ct_tensor **logabsdet, ct_tensor **det);
/* v NULL: the values only. */
ct_status ct__linalg_eigh_raw(const char *op, const ct_tensor *x, ct_tensor **w, ct_tensor **v);
/* u and vh both NULL: the values only. */
ct_status ct__linalg_svd_raw(const char *op, const ct_tensor *x, bool full, ct_tensor **u,
                             ct_tensor **s, ct_tensor **vh);
ct_status ct__linalg_qr_raw(const char *op, const ct_tensor *x, bool full, ct_tensor **q,
                            ct_tensor **r);

/* Gradient records (linalg_grad.c): each takes its result (consumed: returned, or released
 * on failure) and what its backward needs, and returns the result with its node. */
/* x: the solution (out's elements); vector: b was a vector. */
ct_tensor *ct__linalg_record_solve(ct_tensor *out, const ct_tensor *a, const ct_tensor *b,
                                   const ct_tensor *x, bool vector);
ct_tensor *ct__linalg_record_inv(ct_tensor *out, const ct_tensor *x, const ct_tensor *inv);
/* det's result (CT__DET_VALUE), slogdet's logabsdet or the sign of a complex x (a real one's
 * is piecewise constant: not recorded); det: that result. The gradient of each is a multiple
 * of inv(x)^H. */
enum { CT__DET_VALUE, CT__DET_LOGABS, CT__DET_SIGN };
ct_tensor *ct__linalg_record_det(ct_tensor *out, const ct_tensor *x, const ct_tensor *det,
                                 int which);
/* The lower factor's (an upper one is its transposed view, recorded by ct_transpose). */
ct_tensor *ct__linalg_record_cholesky(ct_tensor *out, const ct_tensor *x, const ct_tensor *l);
/* eigh's result `which` (0: eigenvalues, 1: eigenvectors). */
ct_tensor *ct__linalg_record_eigh(ct_tensor *out, int which, const ct_tensor *x, const ct_tensor *w,
                                  const ct_tensor *v);
/* svd's result `which` (0: U, 1: S, 2: Vh) of a real x, whose reduced factorization is (u, s,
 * vh): out may be a full U or Vh, whose gradient is narrowed to u's columns or vh's rows. */
ct_tensor *ct__linalg_record_svd(ct_tensor *out, int which, const ct_tensor *x, const ct_tensor *u,
                                 const ct_tensor *s, const ct_tensor *vh);
/* A complex x's reduced factorization (u, s, vh) on one node, whose rule sees the gradients
 * of U, S and Vh together (a full U's or Vh's narrowed to u's columns or vh's rows): returns a
 * hidden scalar whose grad_fn is that node (NULL on failure), to which ct__linalg_record_svd_output
 * attaches result `which` (0: U, 1: S, 2: Vh; joint NULL: out is released and NULL returned). */
ct_tensor *ct__linalg_record_svd_joint(const ct_tensor *x, const ct_tensor *u, const ct_tensor *s,
                                       const ct_tensor *vh);
ct_tensor *ct__linalg_record_svd_output(ct_tensor *out, int which, const ct_tensor *joint);
/* qr's result `which` (0: Q, 1: R) of a reduced factorization with m >= n. */
ct_tensor *ct__linalg_record_qr(ct_tensor *out, int which, const ct_tensor *x, const ct_tensor *q,
                                const ct_tensor *r);

#endif

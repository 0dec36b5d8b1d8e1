/* The arguments of the linalg kernel slot (backend/kernel_slots.h): the LAPACK factorizations
 * behind ct_linalg_* (src/ops/linalg*.c), each run on every matrix of a stack.
 *
 * Layout: every matrix is column-major (LAPACK's and cuSOLVER's layout) and contiguous, the
 * matrices of a stack one after the other, except SOLVE's and DET's input a: each of its
 * matrices is row-major (its transpose column-major), which the op layer copies without a
 * transposition (det(a^T) = det(a); SOLVE solves with the LU factors of a^T); a vector stack
 * (eigenvalues, singular values, determinants) is contiguous too. The op layer gives `a` as a copy
 * of its own, which the kernel may overwrite, and allocates every output. dtype: f32, f64, c64 or
 * c128; for a complex dtype the symmetric matrices are Hermitian, orthogonal ones unitary, ^T is
 * the conjugate transpose ^H, and the eigenvalues, the singular values and log|det| have the real
 * dtype of the same precision (every other output has dtype). */
#ifndef CT_LINALG_ARGS_IMPL_H
#define CT_LINALG_ARGS_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/dtype.h"

typedef enum ct__linalg_op {
    /* a (n x n; its lower triangle read), which is out0: out0 = L, lower, zero above, with
     * a = L L^T. A matrix that is not positive-definite is a bad matrix. */
    CT_LINALG_CHOLESKY,
    /* a (n x n, row-major), out0 (n x k) holding b on entry: out0 = x with a x = b, from the
     * LU factors of a^T (getrf of the column-major a^T, then getrs with its transpose, not
     * conjugated). A singular a (an exactly zero pivot) is a bad matrix. */
    CT_LINALG_SOLVE,
    /* a (n x n, row-major): out0 = the sign of det(a), det / |det| (0 when singular), out1 =
     * log|det(a)|
     * (-inf when singular), out2 = det(a); each may be NULL. Never a bad matrix. */
    CT_LINALG_DET,
    /* a (n x n; its lower triangle read), which is out1 when out1 is not NULL: out0 = the
     * eigenvalues (n) in ascending order, out1 = the eigenvectors (n x n, one per column, in
     * the same order) or NULL for the values only. No convergence is a bad matrix. */
    CT_LINALG_EIGH,
    /* a (m x n), k = min(m, n): out0 = the singular values (k) in descending order; out1 = U
     * (m x m when full, else m x k) and out2 = V^T (n x n when full, else k x n), both NULL
     * for the values only. No convergence is a bad matrix. */
    CT_LINALG_SVD,
    /* a (m x n), k = min(m, n): a = Q R with out0 = Q (m x m when full, else m x k; its
     * columns orthonormal) and out1 = R (m x n when full, else k x n; zero below the
     * diagonal). Never a bad matrix. */
    CT_LINALG_QR,
} ct__linalg_op;

typedef struct ct__linalg_args {
    ct__linalg_op op;
    ct_dtype dtype;
    int64_t count;   /* matrices in the stack (may be 0) */
    int64_t m, n, k; /* a is m x n (m == n where the op says n x n); k: SOLVE's columns of b */
    bool full;       /* SVD: full_matrices; QR: mode "complete" */
    char *a;
    char *out0, *out1, *out2;
} ct__linalg_args;

#endif

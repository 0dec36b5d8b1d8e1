/* ctensor — linear algebra: the array API standard's linalg extension (2023.12) on stacks of
 * matrices (..., M, N), for float32, float64, complex64 and complex128 on every device whose
 * backend has the linalg kernels (the CPU through LAPACK; a device without them says
 * CT_ERR_UNSUPPORTED naming the op). matmul, matrix_transpose and the products are ct_matmul
 * and ct_transpose (ops.h); ct_tensordot (sorting.h) takes complex tensors too. ct_einsum,
 * at the end, is the products' general form, for every dtype ct_matmul takes.
 *
 * Complex: symmetric reads Hermitian, orthogonal unitary and ^T the conjugate transpose ^H;
 * eigenvalues, singular values, log|det| and every norm are real (float32 for complex64,
 * float64 for complex128), the sign of a determinant is det / |det|; every other result has
 * x's dtype. solve promotes x1 and x2 as the standard does (complex when either is).
 *
 * Errors: a dtype other than those four is CT_ERR_DTYPE; a shape the function does
 * not take (fewer than two axes, a matrix that must be square and is not, stacks that do not
 * broadcast) CT_ERR_SHAPE; a matrix the function cannot take is CT_ERR_INVALID_ARG naming the
 * function and the index of the first such matrix in the stack (its C-order position over
 * the batch axes): a singular matrix for ct_linalg_inv and ct_linalg_solve (LAPACK's exactly
 * zero pivot), one that is not positive-definite for ct_linalg_cholesky, one whose
 * eigenvalues or singular values did not converge. Results never hold a NaN a failure made.
 *
 * Gradients (autograd.h) flow through solve, inv, det, slogdet (logabsdet, and the sign of a
 * complex matrix), cholesky, eigh (both results; distinct eigenvalues), eigvalsh, svd
 * (singular values; U and Vh with distinct nonzero singular values: of a full factorization
 * of a non-square matrix, as PyTorch's, only the first K columns of U and rows of Vh are
 * differentiated, the others being arbitrary bases of the complements, whose gradients are
 * ignored), svdvals, qr (M >= N, reduced), pinv, the norms, matrix_power, trace, diagonal,
 * cross and outer; a backward through a result outside those (qr's results otherwise) is
 * CT_ERR_UNSUPPORTED naming the function. A function that reads one triangle (cholesky,
 * eigh, eigvalsh: the lower, and of a complex matrix not the imaginary parts of its
 * diagonal) gives the gradient of that triangle.
 * Complex matrices take PyTorch's convention (the gradient of a real loss with respect to z
 * is dL/dRe z + i dL/dIm z). Complex eigenvectors and singular vectors are each defined up
 * to a phase e^{i phi} (shared by the k-th columns of U and V): a loss that depends on it
 * has no gradient, and is refused at backward (CT_ERR_INVALID_ARG naming the function, with
 * PyTorch's lax tolerance). svd's U, S and Vh of one call are differentiated together, as
 * PyTorch's, so a loss of U and Vh that does not depend on the phases (U Vh, U diag(S) Vh,
 * pinv, |U|) gets its gradient; U of one call and Vh of another are two factorizations,
 * whose phases do not cancel. */
#ifndef CTENSOR_LINALG_H
#define CTENSOR_LINALG_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/status.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The Cholesky factor of each symmetric positive-definite matrix (its lower triangle read):
 * L lower with x = L L^T, or U = L^T when upper. */
CT_API ct_tensor *ct_linalg_cholesky(const ct_tensor *x, bool upper);
/* det of each square matrix: shape (...). */
CT_API ct_tensor *ct_linalg_det(const ct_tensor *x);
/* The sign (0 for a singular matrix) and log|det| (-inf for one) of each square matrix. */
CT_API ct_status ct_linalg_slogdet(const ct_tensor *x, ct_tensor **sign, ct_tensor **logabsdet);
/* Eigenvalues (..., M) in ascending order and eigenvectors (..., M, M), one per column, of
 * each symmetric matrix (its lower triangle read). eigenvectors may be NULL. */
CT_API ct_status ct_linalg_eigh(const ct_tensor *x, ct_tensor **eigenvalues,
                                ct_tensor **eigenvectors);
CT_API ct_tensor *ct_linalg_eigvalsh(const ct_tensor *x);
CT_API ct_tensor *ct_linalg_inv(const ct_tensor *x);
/* x with x1 @ x = x2: x1 (..., M, M); x2 (..., M, K), or (M,) taken as one vector (then the
 * result is (..., M)); the stacks broadcast. */
CT_API ct_tensor *ct_linalg_solve(const ct_tensor *x1, const ct_tensor *x2);
/* x = U diag(S) Vh, K = min(M, N): U (..., M, M or K), S (..., K) descending, Vh (..., N or
 * K, N) by full_matrices. u and vh may both be NULL (the values only). */
CT_API ct_status ct_linalg_svd(const ct_tensor *x, bool full_matrices, ct_tensor **u, ct_tensor **s,
                               ct_tensor **vh);
CT_API ct_tensor *ct_linalg_svdvals(const ct_tensor *x);
/* x = Q R: mode "reduced" (Q (..., M, K), R (..., K, N)) or "complete" (Q (..., M, M), R
 * (..., M, N)); NULL is "reduced". */
CT_API ct_status ct_linalg_qr(const ct_tensor *x, const char *mode, ct_tensor **q, ct_tensor **r);
/* The pseudo-inverse (..., N, M): singular values at most rtol times the largest are taken
 * as zero; rtol < 0 means the standard's default, max(M, N) * the dtype's epsilon. */
CT_API ct_tensor *ct_linalg_pinv(const ct_tensor *x, double rtol);
/* The number of singular values above rtol times the largest (rtol < 0: as pinv), int64. */
CT_API ct_tensor *ct_linalg_matrix_rank(const ct_tensor *x, double rtol);
/* ord: "fro", "nuc", "inf", "-inf", "1", "-1", "2" or "-2" (NULL is "fro"), over the last two
 * axes, kept as size 1 when keepdims. */
CT_API ct_tensor *ct_linalg_matrix_norm(const ct_tensor *x, const char *ord, bool keepdims);
/* The ord-norm (any ord: inf, -inf, 0 counts the nonzero elements, p) of x over axes (naxes
 * 0 and axes NULL: all of them, as one vector). */
CT_API ct_tensor *ct_linalg_vector_norm(const ct_tensor *x, int naxes, const int *axes, double ord,
                                        bool keepdims);
/* x @ x @ ... n times for square matrices; n 0 gives the identity, n < 0 the inverse's power. */
CT_API ct_tensor *ct_linalg_matrix_power(const ct_tensor *x, int64_t n);
/* The diagonal offset of each matrix (above the main one when offset > 0): (..., L). */
CT_API ct_tensor *ct_linalg_diagonal(const ct_tensor *x, int64_t offset);
/* The sum of ct_linalg_diagonal: (...). */
CT_API ct_tensor *ct_linalg_trace(const ct_tensor *x, int64_t offset);
/* The cross product along axis (size 3 in both; the other axes broadcast). */
CT_API ct_tensor *ct_linalg_cross(const ct_tensor *x1, const ct_tensor *x2, int axis);
/* x1 (M,) and x2 (N,): (M, N). */
CT_API ct_tensor *ct_linalg_outer(const ct_tensor *x1, const ct_tensor *x2);
/* The last two axes swapped (a view). */
CT_API ct_tensor *ct_linalg_matrix_transpose(const ct_tensor *x);

/* ---- Einstein summation (numpy.einsum, torch.einsum) ----
 *
 * The n operands' product summed as equation says: one term of subscripts per operand,
 * separated by commas, then optionally "->" and the output's. Subscripts are the letters a-z
 * and A-Z (spaces are ignored) and at most one "..." per term, which stands for the axes no
 * letter names, broadcast over the operands as NumPy broadcasts (right-aligned). A letter
 * repeated in one term takes that operand's diagonal ("ii->i"; "ii" is the trace); a letter
 * the output lacks is summed over; sizes of one letter must match or be 1 (broadcast). With
 * no "->" the output is "..." then the letters that occur once, in ASCII order (upper case
 * first). An explicit output without "..." sums the ellipsis' axes (as PyTorch does). An
 * equation that changes nothing ("ij->ij") gives the operand itself (a new reference), one
 * that only permutes axes ("ij->ji") a view.
 *
 * Operands are contracted left to right, two at a time, by one batched ct_matmul each (one
 * broadcasting ct_mul where nothing is contracted; a letter only one operand has is summed
 * out of it first), so every dtype and device ct_matmul takes works, the dtypes promoted as
 * it promotes them (sums of integers and bools as NumPy's: bool results are logical), and
 * gradients flow through the ops it is made of.
 * Errors name the equation and the operand: a character other than those, a letter repeated
 * in the output or absent from every operand, a term or output of more than CT_MAX_DIMS
 * axes, a count of terms other than n: CT_ERR_INVALID_ARG; a term naming more or fewer axes
 * than its operand has, sizes that do not match, an intermediate product of more than
 * CT_MAX_DIMS axes: CT_ERR_SHAPE; operands on two devices: CT_ERR_DEVICE_MISMATCH. */
CT_API ct_tensor *ct_einsum(const char *equation, int n, const ct_tensor *const *operands);

#ifdef __cplusplus
}
#endif
#endif

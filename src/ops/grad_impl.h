/* Recording of the array core's differentiable ops: each op's front door calls its record
 * function on the result when ct__grad_needed says so. Each takes the result (consumed: it
 * is returned, or released on failure) and what the backward needs. */
#ifndef CT_GRAD_IMPL_H
#define CT_GRAD_IMPL_H

#include "autograd/tape_impl.h"
#include "backend/backend_impl.h"
#include "core/dtype_impl.h"

/* A result of this dtype carries a gradient: floating and complex (complex rules follow
 * PyTorch's convention: the gradient of a real loss L with respect to z = x + iy is
 * dL/dx + i dL/dy, so a holomorphic f passes grad_out * conj(f'(z)) to z). */
static inline bool ct__grad_dtype(ct_dtype dtype) {
    return ct__is_float(dtype) || ct__is_complex(dtype);
}

/* name: the op ("ct_relu"); p0, p1: clamp's bounds. */
ct_tensor *ct__record_unary(ct_tensor *out, const char *name, ct__unary_op op, const ct_tensor *x,
                            double p0, double p1);
/* b NULL: the op's second operand is the scalar s. */
ct_tensor *ct__record_binary(ct_tensor *out, const char *name, ct__binary_op op, const ct_tensor *a,
                             const ct_tensor *b, double s);
ct_tensor *ct__record_where(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a,
                            const ct_tensor *b);
/* reduced[d]: axis d of x was reduced; correction for var and std. */
ct_tensor *ct__record_reduce(ct_tensor *out, const char *name, ct__reduce_op op, const ct_tensor *x,
                             const bool *reduced, bool keepdim, double correction);
ct_tensor *ct__record_matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);

/* Shape ops. A view-like op whose gradient is the output gradient reshaped back (reshape,
 * view, flatten, squeeze, unsqueeze), or passed through as is (expand, contiguous, clone,
 * cast, to: the engine sums, casts and moves it). */
ct_tensor *ct__record_reshape(ct_tensor *out, const ct_tensor *x, const char *name);
ct_tensor *ct__record_identity(ct_tensor *out, const ct_tensor *x, const char *name);
/* ct_real (part 0), ct_imag (1) and ct_conj (2) of a complex x. */
ct_tensor *ct__record_complex_part(ct_tensor *out, const ct_tensor *x, int part);
ct_tensor *ct__record_permute(ct_tensor *out, const ct_tensor *x, int ndim, const int *perm);
ct_tensor *ct__record_slice(ct_tensor *out, const ct_tensor *x, int axis, int64_t start,
                            int64_t step);
ct_tensor *ct__record_index_select(ct_tensor *out, const ct_tensor *x, int axis,
                                   const ct_tensor *index);
ct_tensor *ct__record_gather(ct_tensor *out, const ct_tensor *x, int axis, const ct_tensor *index);
/* concat and stack (stacked: the inputs were joined along a new axis). */
ct_tensor *ct__record_concat(ct_tensor *out, int n, const ct_tensor *const *tensors, int axis,
                             bool stacked);

#endif

/* ctensor — ops. Each op checks its inputs (NULL, shapes, dtypes, devices), promotes dtypes,
 * broadcasts (NumPy rules), and runs on the device its inputs share; 0-d CPU tensors join
 * ops on any device as scalars. A NULL input gives NULL and keeps the first error, so
 * ct_relu(ct_add(ct_matmul(x, w), b)) can be checked once at the end. Each op returns a new
 * tensor (a new reference), except ct_fill and ct_copy, which write into their first
 * argument and return a status. Axes may be negative (counting from the end). */
#ifndef CTENSOR_OPS_H
#define CTENSOR_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/op_list.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "No axis": all axes for ct_argmax/ct_argmin (on the flattened tensor), every size-1 axis
 * for ct_squeeze. */
#define CT_AXIS_NONE (-1000)

/* ---- elementwise (op_list.h gives the result dtypes) ---- */

#define CT_DECLARE_UNARY_(name, NAME, kind, grad, autocast)                                        \
    CT_API ct_tensor *ct_##name(const ct_tensor *x);
CT_UNARY_OPS(CT_DECLARE_UNARY_)
#undef CT_DECLARE_UNARY_

/* ct_sub(a, b), ct_sub_scalar(a, 2.0) (a - 2) and its reflected form ct_sub_rscalar(b, 2.0)
 * (2 - b: the scalar on the left, as Python's __rsub__); the scalar is weakly typed
 * (dtype.h), with the same rules on either side. */
#define CT_DECLARE_BINARY_(name, NAME, kind, grad, autocast)                                       \
    CT_API ct_tensor *ct_##name(const ct_tensor *a, const ct_tensor *b);                           \
    CT_API ct_tensor *ct_##name##_scalar(const ct_tensor *a, double b);                            \
    CT_API ct_tensor *ct_##name##_rscalar(const ct_tensor *b, double a);
CT_BINARY_OPS(CT_DECLARE_BINARY_)
#undef CT_DECLARE_BINARY_

/* cond ? a : b elementwise; cond is bool, all three broadcast together. */
CT_API ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);
/* min(max(x, lo), hi); pass -INFINITY or INFINITY for no bound. NaN stays NaN. */
CT_API ct_tensor *ct_clamp(const ct_tensor *x, double lo, double hi);

/* ---- reductions: axes == NULL reduces every axis; otherwise naxes distinct axes ---- */

#define CT_DECLARE_REDUCE_(name, NAME, autocast)                                                   \
    CT_API ct_tensor *ct_##name(const ct_tensor *x, int naxes, const int *axes, bool keepdim);
CT_REDUCE_OPS(CT_DECLARE_REDUCE_)
#undef CT_DECLARE_REDUCE_

/* Variance and standard deviation with the given correction (0: population, 1: sample). */
CT_API ct_tensor *ct_var(const ct_tensor *x, int naxes, const int *axes, double correction,
                         bool keepdim);
CT_API ct_tensor *ct_std(const ct_tensor *x, int naxes, const int *axes, double correction,
                         bool keepdim);
/* Index (int64) of the first maximum/minimum along axis, or of the flattened tensor for
 * CT_AXIS_NONE. CT_ERR_SHAPE on an empty axis. */
CT_API ct_tensor *ct_argmax(const ct_tensor *x, int axis, bool keepdim);
CT_API ct_tensor *ct_argmin(const ct_tensor *x, int axis, bool keepdim);

/* ---- linear algebra ---- */

/* numpy.matmul: 1-D operands are promoted to matrices and the added axis removed after;
 * batch axes broadcast. f32 and f64 go through BLAS; other dtypes are computed exactly
 * (integers) or in f32 (f16, bf16). */
CT_API ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b);

/* The precision of f32 matmul and convolution on devices with a faster reduced-precision
 * mode (PyTorch's torch.set_float32_matmul_precision, which PyTorch's cuDNN convolutions
 * leave to torch.backends.cudnn.allow_tf32): "highest" (the default) computes in full f32;
 * "high" lets CUDA use TF32 tensor cores (10-bit mantissa inputs, f32 accumulation) in
 * cuBLAS and cuDNN alike, and lets the CPU run f32 3x3 stride-1 convolutions of 32 channels
 * and more with oneDNN's Winograd algorithm (f32 throughout, deterministic, about 4x the
 * rounding error of the direct sum); the CPU's matmul is full f32 always. Any other value (or NULL)
 * is CT_ERR_INVALID_ARG and keeps the setting. Process-wide; safe to call from any thread. */
CT_API ct_status ct_set_matmul_precision(const char *precision);
/* The current setting: "highest" or "high" (a static string). */
CT_API const char *ct_get_matmul_precision(void);

/* Deterministic algorithms (PyTorch's torch.use_deterministic_algorithms): when on, every
 * op picks an algorithm whose result does not depend on scheduling, so the same inputs on the
 * same device and thread count give the same bits: only deterministic cuDNN algorithms, no
 * atomic accumulation of floats in reductions, scatter-adds or pooling backward, one cuBLAS
 * workspace per stream. Off by default (as in PyTorch); `ctensor train` turns it on.
 * Process-wide; safe to call from any thread. The CPU's kernels are deterministic either way. */
CT_API void ct_use_deterministic_algorithms(bool enabled);
/* Whether deterministic algorithms are on. */
CT_API bool ct_are_deterministic_algorithms_enabled(void);

/* ---- shape and indexing: views where possible ---- */

/* One entry of shape may be -1 (inferred). A view when the strides allow, else a copy. */
CT_API ct_tensor *ct_reshape(const ct_tensor *x, int ndim, const int64_t *shape);
/* As ct_reshape, but CT_ERR_SHAPE instead of a copy when a view is impossible. */
CT_API ct_tensor *ct_view(const ct_tensor *x, int ndim, const int64_t *shape);
/* Merge axes start..end (inclusive) into one. */
CT_API ct_tensor *ct_flatten(const ct_tensor *x, int start_axis, int end_axis);
/* Remove axis (which must have size 1), or every size-1 axis for CT_AXIS_NONE. */
CT_API ct_tensor *ct_squeeze(const ct_tensor *x, int axis);
/* Insert a size-1 axis at position axis (-1: at the end). */
CT_API ct_tensor *ct_unsqueeze(const ct_tensor *x, int axis);
CT_API ct_tensor *ct_transpose(const ct_tensor *x, int axis0, int axis1);
CT_API ct_tensor *ct_permute(const ct_tensor *x, int ndim, const int *perm);
/* Broadcast to shape (size-1 axes stretch with stride 0; -1 keeps an axis). A view. */
CT_API ct_tensor *ct_expand(const ct_tensor *x, int ndim, const int64_t *shape);
/* Python slicing x[..., start:stop:step, ...] on one axis; out-of-range bounds are clamped,
 * negative bounds count from the end, step may be negative but not 0. Use INT64_MAX /
 * INT64_MIN for an open end. A view. */
CT_API ct_tensor *ct_slice(const ct_tensor *x, int axis, int64_t start, int64_t stop, int64_t step);
/* Rows of x along axis picked by a 1-D integer index tensor (negative indices count from
 * the end). CT_ERR_INVALID_ARG for an index out of range. */
CT_API ct_tensor *ct_index_select(const ct_tensor *x, int axis, const ct_tensor *index);
/* torch.gather: out[i][j] = x[index[i][j]][j] for axis 0, and so on; index has x's rank. */
CT_API ct_tensor *ct_gather(const ct_tensor *x, int axis, const ct_tensor *index);
/* torch.index_add: a copy of x with source's slices added at the positions a 1-D integer
 * index gives along axis: out[.., index[k], ..] += source[.., k, ..]. source has x's shape
 * with the index's length on axis, and x's dtype; repeated indices accumulate; negative
 * indices count from the end. CT_ERR_INVALID_ARG for an index out of range. */
CT_API ct_tensor *ct_index_add(const ct_tensor *x, int axis, const ct_tensor *index,
                               const ct_tensor *source);
/* torch.index_copy_, in place: dst[.., index[k], ..] = source[.., k, ..] along axis. source
 * has dst's shape with the index's length on axis, and dst's dtype; negative indices count
 * from the end. Of repeated indices the last (highest k) one's value stays, on every device.
 * Every index is checked before anything is written: CT_ERR_INVALID_ARG for one out of
 * range leaves dst unchanged. Not recorded for autograd: a dst that requires grad is
 * CT_ERR_STATE, as for ct_copy. */
CT_API ct_status ct_index_copy(ct_tensor *dst, int axis, const ct_tensor *index,
                               const ct_tensor *source);
/* torch.scatter_add: a copy of x with out[i][j] += src[i][j] at i = index[i][j] for axis
 * 0, and so on. index, src and x have one rank; index is no larger than src, nor than x
 * off axis; src has x's dtype. Repeated indices accumulate. */
CT_API ct_tensor *ct_scatter_add(const ct_tensor *x, int axis, const ct_tensor *index,
                                 const ct_tensor *src);
/* Join n tensors along an existing axis / a new axis. Dtypes are promoted. */
CT_API ct_tensor *ct_concat(int n, const ct_tensor *const *tensors, int axis);
CT_API ct_tensor *ct_stack(int n, const ct_tensor *const *tensors, int axis);
/* Views of pieces of split_size along axis (the last may be shorter). Writes at most
 * capacity tensors to out and their number to *count; CT_ERR_INVALID_ARG when more are
 * needed (nothing is written then). */
CT_API ct_status ct_split(const ct_tensor *x, int64_t split_size, int axis, ct_tensor **out,
                          int capacity, int *count);
/* x itself (a new reference) when contiguous, else a contiguous copy. */
CT_API ct_tensor *ct_contiguous(const ct_tensor *x);
/* x itself (a new reference) when it is already laid out in format and, for
 * CT_FORMAT_CHANNELS_LAST, made channels-last (its strides say so, where a single channel or
 * a 1x1 image makes both layouts one), else a copy in format, as PyTorch's
 * x.contiguous(memory_format=...) and x.to(memory_format=...). Differentiable (the gradient
 * passes through as it is). CT_ERR_SHAPE: channels-last of a tensor that is not 4-d;
 * CT_ERR_INVALID_ARG: an unknown format. */
CT_API ct_tensor *ct_contiguous_format(const ct_tensor *x, ct_memory_format format);
/* A contiguous copy. */
CT_API ct_tensor *ct_clone(const ct_tensor *x);
/* Convert to dtype (x itself when it has that dtype already); the result is contiguous, or
 * channels-last when x is (so that autocast keeps a channels-last network's layout, as
 * PyTorch's .to(dtype) does). Float to integer truncates
 * toward zero; to bool is x != 0; a real value to complex has imaginary part 0; complex to a
 * real dtype is CT_ERR_DTYPE (take ct_real, ct_imag or ct_abs first). */
CT_API ct_tensor *ct_cast(const ct_tensor *x, ct_dtype dtype);
/* Write value into every element of dst (a complex dst gets imaginary part 0). */
CT_API ct_status ct_fill(ct_tensor *dst, double value);
/* Write value into every element of the complex dst (CT_ERR_DTYPE for a real one). */
CT_API ct_status ct_fill_complex(ct_tensor *dst, ct_complex128 value);
/* The real and imaginary parts of a complex tensor, as views of its storage in the parts'
 * dtype (float32 for complex64, float64 for complex128): a write into them changes x; of a
 * real tensor, x itself and new zeros. */
CT_API ct_tensor *ct_real(const ct_tensor *x);
CT_API ct_tensor *ct_imag(const ct_tensor *x);
/* The complex conjugate (re - im j); of a real tensor, x itself (a new reference). */
CT_API ct_tensor *ct_conj(const ct_tensor *x);
/* Copy src into dst (src broadcast to dst's shape, converted to dst's dtype, moved from
 * src's device: an explicit transfer when they differ). */
CT_API ct_status ct_copy(ct_tensor *dst, const ct_tensor *src);
/* x on device (x itself when already there; otherwise an explicit transfer). */
CT_API ct_tensor *ct_to(const ct_tensor *x, ct_device device);
/* Move t to device in place (PyTorch's `param.data = param.data.to(device)`): t, and every
 * view of its storage, then hold a copy of its data on device, and its gradient moves too;
 * whoever holds t (an optimiser) follows. A leaf spanning its whole storage only:
 * CT_ERR_STATE for a tensor an op recorded, CT_ERR_UNSUPPORTED for a view of part of a
 * storage (use ct_to). On failure t is unchanged. */
CT_API ct_status ct_move_to(ct_tensor *t, ct_device device);
/* A new CPU tensor with t's values in pinned (page-locked) host memory, like
 * torch.Tensor.pin_memory(): copies between it and a GPU are one direct DMA, and ct_to from
 * it to a GPU returns once the DMA is queued (the memory stays reserved for the DMA even when
 * the tensor is released at once). Until that copy has ended (ct_synchronize on the GPU),
 * do not write into the pinned tensor. It is an ordinary tensor of t's CPU device for every
 * op. t itself (a new reference) when already pinned. Needs a CUDA device (the driver pins
 * the memory): CT_ERR_DEVICE_UNAVAILABLE, with the reason, without one; t on a GPU:
 * CT_ERR_DEVICE_MISMATCH. Copying t's values is no transfer (host to host). */
CT_API ct_tensor *ct_pin_memory(const ct_tensor *t);
/* Whether t's data is pinned host memory (false for NULL). */
CT_API bool ct_is_pinned(const ct_tensor *t);

#ifdef __cplusplus
}
#endif
#endif

/* The op layer's shared front door: argument checks (NULL propagation, devices), shape
 * broadcasting, building kernel arguments; and, through backend/dispatch_impl.h, finding the
 * kernels of a device. Every op file uses these, so the checks and their messages are the same
 * everywhere. */
#ifndef CT_OP_IMPL_H
#define CT_OP_IMPL_H

#include <stdbool.h>

#include "backend/dispatch_impl.h"
#include "core/device_impl.h"
#include "core/error_impl.h"
#include "core/tensor_impl.h"

/* Check the tensor arguments of op: a NULL argument gives false, keeping an earlier error
 * (or recording CT_ERR_INVALID_ARG when there is none); arguments on different devices
 * give CT_ERR_DEVICE_MISMATCH (0-d CPU tensors are scalars and join any device). Writes
 * the device the op runs on. */
bool ct__check_args(const char *op, int n, const ct_tensor *const *args, ct_device *device);
/* Every op checks its arguments with ct__check_args, which also refuses complex tensors
 * (CT_ERR_DTYPE naming the op and saying to take ct_real, ct_imag or ct_abs first), except
 * the ops that have a complex form or move elements whatever their dtype (views, copies,
 * selections): those check with ct__check_args_complex, which allows every dtype. */
bool ct__check_args_complex(const char *op, int n, const ct_tensor *const *args, ct_device *device);
/* That refusal alone: true, with the error set, when one of the n (non-NULL) arguments is
 * complex. */
bool ct__refuse_complex(const char *op, int n, const ct_tensor *const *args);

/* Part `part` (0: real, 1: imaginary) of the complex x as a view of its storage, of the parts'
 * real dtype (complex_parts.c). */
ct_tensor *ct__complex_part_view(const ct_tensor *x, int part);
/* The complex tensor re + i im of dtype (re and im: one real dtype and shape, on one device),
 * new and contiguous; NULL (with the error, led by op) on failure or when re or im is NULL. */
ct_tensor *ct__complex_from_parts(const ct_tensor *re, const ct_tensor *im, ct_dtype dtype,
                                  const char *op);

/* The reduction op of the complex x over the axes where reduced[d] (complex_reduce.c): sum,
 * mean, prod, all and any; the others refuse it, naming `name`. */
ct_tensor *ct__complex_reduce(const char *name, ct__reduce_op op, const ct_tensor *x,
                              const bool *reduced, bool keepdim);

/* Room for a shape's (or strides') text in a message, "(s0, s1, ...)" with every one of
 * CT_MAX_DIMS numbers at its longest ("-9223372036854775808"), and ",)" and a NUL. */
#define CT__SHAPE_TEXT_SIZE (CT_MAX_DIMS * 22 + 4)

/* The NumPy broadcast of n shapes; CT_ERR_SHAPE naming both sides when they clash. */
ct_status ct__broadcast_shapes(const char *op, int n, const ct_tensor *const *args, int *ndim,
                               int64_t *shape);

/* Normalise a possibly negative axis for a rank; CT_ERR_INVALID_ARG when out of range. */
ct_status ct__normalize_axis(const char *op, int axis, int ndim, int *out);

/* Kernel arguments: start an iteration space, add operands (right-aligned broadcasting:
 * missing leading axes and size-1 axes get stride 0), then coalesce axes. */
void ct__ew_init(ct__ew_args *args, int ndim, const int64_t *shape);
void ct__ew_add(ct__ew_args *args, const ct_tensor *t);
void ct__ew_coalesce(ct__ew_args *args);
/* When every tensor is shaped like the first and all are contiguous or all share one dense
 * layout (channels-last, say: ct__same_dense_layout), start a one-axis iteration over them
 * all (out first) in memory order and return true; else leave args alone and return false.
 * The common case of an op skips broadcasting and coalescing this way. */
bool ct__ew_flat(ct__ew_args *args, int n, const ct_tensor *const *tensors);
/* Add an operand with explicit strides over the iteration space (no broadcasting rules);
 * strides NULL broadcasts one element (all strides 0). */
void ct__ew_add_strided(ct__ew_args *args, char *data, ct_dtype dtype, const int64_t *strides);

/* t as an operand on device: t itself (a new reference) when there already; a 0-d CPU
 * tensor is copied there as an implicit transfer. */
ct_tensor *ct__operand_on(const ct_tensor *t, ct_device device, const char *op);

/* A new tensor of the given shape and dtype on device, filled with value. */
ct_tensor *ct__full_on(ct_device device, int ndim, const int64_t *shape, double value,
                       ct_dtype dtype);

/* Copy src into dst elementwise (broadcasting src, converting dtypes, same device). */
ct_status ct__copy_into(ct_tensor *dst, const ct_tensor *src, const char *op);

/* a @ b + bias (bias 1-D, b's columns), recording no history (for ops that record their
 * own node; arguments on one device, checked by the caller): on the CPU, for f32 and f64 with
 * b a matrix and bias contiguous, each thread adds the bias to its slab of the product right
 * after its GEMM, in place; otherwise ct_matmul, then ct_add. The same bits either way. */
ct_tensor *ct__matmul_bias(const ct_tensor *a, const ct_tensor *b, const ct_tensor *bias);

/* ReLU's backward in one pass: grad where x > 0, else 0 (same shapes, float). */
ct_tensor *ct__relu_backward(const ct_tensor *grad, const ct_tensor *x);
/* gelu_tanh's backward in one pass: grad * gelu_tanh'(x) (same shapes, float). */
ct_tensor *ct__gelu_tanh_backward(const ct_tensor *grad, const ct_tensor *x);

#endif

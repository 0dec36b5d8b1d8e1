/* ctensor — tensors: creation, queries, ownership, scopes, host access, printing.
 *
 * ct_tensor is opaque and reference counted: a view (dtype, shape, strides in elements,
 * offset, rank <= CT_MAX_DIMS) of a storage on one device. Views share storage.
 *
 * Ownership: every function that returns a tensor returns a new reference. Outside a scope
 * the caller releases it with ct_release(). Inside a scope (ct_scope_begin ... ct_scope_end)
 * the scope holds that reference and releases it at ct_scope_end(), unless the tensor was
 * passed to ct_keep(), which moves it to the enclosing scope (or, at the outermost scope, to
 * the caller). Calling ct_release() on a scope-held tensor is allowed: it releases the scope's
 * reference and takes the tensor out of the scope. Tensors may be shared across threads;
 * reference counts are atomic, scopes are per thread. */
#ifndef CTENSOR_TENSOR_H
#define CTENSOR_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctensor/device.h"
#include "ctensor/dtype.h"
#include "ctensor/export.h"
#include "ctensor/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most axes a tensor may have. Kernels of every backend take this many; a larger rank is
 * CT_ERR_SHAPE, naming the limit. */
#define CT_MAX_DIMS 16

typedef struct ct_tensor ct_tensor;

/* ---- creation: all take a device; CT_DEFAULT means the default placement ---- */

/* Uninitialised contents. shape may be NULL when ndim is 0. */
CT_API ct_tensor *ct_empty(int ndim, const int64_t *shape, ct_dtype dtype, ct_device device);
CT_API ct_tensor *ct_zeros(int ndim, const int64_t *shape, ct_dtype dtype, ct_device device);
CT_API ct_tensor *ct_ones(int ndim, const int64_t *shape, ct_dtype dtype, ct_device device);
CT_API ct_tensor *ct_full(int ndim, const int64_t *shape, double value, ct_dtype dtype,
                          ct_device device);
/* A complex tensor (dtype CT_C64 or CT_C128) filled with value. */
CT_API ct_tensor *ct_full_complex(int ndim, const int64_t *shape, ct_complex128 value,
                                  ct_dtype dtype, ct_device device);
/* [start, stop) in steps of step (step != 0), as numpy.arange (bool: CT_ERR_DTYPE). */
CT_API ct_tensor *ct_arange(double start, double stop, double step, ct_dtype dtype,
                            ct_device device);
/* num evenly spaced values from start to stop inclusive, as numpy.linspace (integer dtypes
 * truncate toward zero, as ct_cast does). */
CT_API ct_tensor *ct_linspace(double start, double stop, int64_t num, ct_dtype dtype,
                              ct_device device);
/* The same between complex endpoints (each part evenly spaced), dtype CT_C64 or CT_C128. */
CT_API ct_tensor *ct_linspace_complex(ct_complex128 start, ct_complex128 stop, int64_t num,
                                      ct_dtype dtype, ct_device device);
/* An n x m matrix with ones on the diagonal. */
CT_API ct_tensor *ct_eye(int64_t n, int64_t m, ct_dtype dtype, ct_device device);
/* Uniform [0, 1) and standard normal values from the global Philox stream (ct_manual_seed);
 * floating dtypes only. */
CT_API ct_tensor *ct_rand(int ndim, const int64_t *shape, ct_dtype dtype, ct_device device);
CT_API ct_tensor *ct_randn(int ndim, const int64_t *shape, ct_dtype dtype, ct_device device);
/* A copy of numel(shape) contiguous elements of dtype at data (an explicit transfer when the
 * device is not the CPU). */
CT_API ct_tensor *ct_from_data(const void *data, int ndim, const int64_t *shape, ct_dtype dtype,
                               ct_device device);
/* A 0-d tensor holding value. */
CT_API ct_tensor *ct_scalar(double value, ct_dtype dtype, ct_device device);

/* ---- queries (NULL-safe: 0, NULL or an invalid value for a NULL tensor) ---- */

CT_API int ct_ndim(const ct_tensor *t);
/* The shape array (ct_ndim entries), valid while t lives. */
CT_API const int64_t *ct_shape(const ct_tensor *t);
/* Strides in elements (ct_ndim entries), valid while t lives. */
CT_API const int64_t *ct_strides(const ct_tensor *t);
CT_API int64_t ct_size(const ct_tensor *t, int axis); /* negative axes count from the end */
CT_API int64_t ct_numel(const ct_tensor *t);
CT_API ct_dtype ct_dtype_of(const ct_tensor *t);
CT_API ct_device ct_device_of(const ct_tensor *t);
CT_API bool ct_is_contiguous(const ct_tensor *t);

/* The order in which a dense tensor's elements lie in memory (PyTorch's memory_format).
 * CT_FORMAT_CONTIGUOUS: C order (row-major), what ct_is_contiguous means.
 * CT_FORMAT_CHANNELS_LAST: a 4-d (N, C, H, W) tensor whose elements lie as (N, H, W, C) would
 * (torch.channels_last): the shape and indexing stay NCHW, the strides are NHWC's. The
 * convolution, batch norm, pooling and elementwise ops keep a channels-last input's layout in
 * their result, and the CPU computes convolutions and batch norms on it without reordering. */
typedef enum ct_memory_format {
    CT_FORMAT_CONTIGUOUS = 0,
    CT_FORMAT_CHANNELS_LAST = 1
} ct_memory_format;

/* Whether t is dense in memory in format (as PyTorch's is_contiguous(memory_format=...):
 * size-1 axes' strides do not matter, so a tensor may be both). False for a channels-last
 * query on a tensor that is not 4-d, an unknown format, or NULL. */
CT_API bool ct_is_contiguous_format(const ct_tensor *t, ct_memory_format format);
/* Whether a and b are views of the same storage. */
CT_API bool ct_shares_storage(const ct_tensor *a, const ct_tensor *b);

/* ---- references and scopes ---- */

CT_API ct_tensor *ct_retain(ct_tensor *t); /* returns t */
CT_API void ct_release(ct_tensor *t);      /* NULL is ignored */

CT_API ct_status ct_scope_begin(void);
/* Releases every tensor made since the matching ct_scope_begin and not kept.
 * CT_ERR_STATE when no scope is open. */
CT_API ct_status ct_scope_end(void);
/* Move t out of the current scope into the enclosing one (or to the caller). Returns t; t
 * itself unchanged when the current scope does not hold it; NULL with CT_ERR_OUT_OF_MEMORY
 * when the enclosing scope cannot grow (t then stays in the current scope). */
CT_API ct_tensor *ct_keep(ct_tensor *t);
CT_API int ct_scope_depth(void);
/* Tensors alive in the process (made and not yet freed, views included): what a loop that
 * leaks nothing leaves where it found it. */
CT_API int64_t ct_live_tensor_count(void);

/* ---- host access ---- */

/* Copy the elements in C order, as dtype of t, into dst (size bytes at least
 * numel * element size). An explicit transfer for a device tensor. */
CT_API ct_status ct_copy_to_host(const ct_tensor *t, void *dst, size_t size);
/* The value of a one-element tensor as a double (an implicit transfer from a device);
 * CT_ERR_DTYPE for a complex tensor (ct_item_complex reads it). */
CT_API ct_status ct_item(const ct_tensor *t, double *out);
/* The value of a one-element tensor of any dtype as a complex number (a real one with
 * imaginary part 0). */
CT_API ct_status ct_item_complex(const ct_tensor *t, ct_complex128 *out);

/* ---- memory shared with other libraries (DLPack, Python's buffer protocol) ---- */

/* The address of element (0, ..., 0) of t on its device: a device pointer for a GPU tensor;
 * NULL for NULL. Element (i0, i1, ...) is at this address plus sum(i_d * strides[d])
 * elements (ct_strides). Valid while t, or a view of its storage, lives. Work queued on the
 * device may still be writing it: ct_synchronize(ct_device_of(t)) before another library
 * reads it on another stream or the host. Writing through it bypasses autograd's checks. */
CT_API void *ct_data_ptr(const ct_tensor *t);

/* Gives memory lent to ctensor back to its owner (ct_from_external). */
typedef void (*ct_external_free_fn)(void *context);

/* A tensor over memory that ctensor does not own (another library's array: DLPack import),
 * without a copy: data is element (0, ..., 0) on device (a CUDA device pointer for a GPU),
 * strides are in elements (NULL: C order; negative strides allowed). When the last view of
 * it dies, release(context) is called once, on the thread that released it (release may be
 * NULL). The memory is outside every pool: memory statistics and limits do not count it.
 * On failure (a bad shape, dtype or device: the status and message as ct_empty's) NULL is
 * returned and release is not called: the caller still owns the memory. */
CT_API ct_tensor *ct_from_external(void *data, int ndim, const int64_t *shape,
                                   const int64_t *strides, ct_dtype dtype, ct_device device,
                                   ct_external_free_fn release, void *context);

/* ---- printing (NumPy layout; summarised past 1000 elements; implicit transfers) ---- */

/* A new string (release with ct_free), or NULL on failure. */
CT_API char *ct_format(const ct_tensor *t);
/* ct_format to stdout, followed by a newline. */
CT_API ct_status ct_print(const ct_tensor *t);

#ifdef __cplusplus
}
#endif
#endif

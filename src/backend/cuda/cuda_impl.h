/* The CUDA plugin's internals, shared by its C and CUDA files: the host services, the
 * checking macro every CUDA call goes through, per-device streams, and the kernel launchers
 * (one .cu file per op family; C-callable; they take the kernel-table arguments of
 * backend_impl.h, run on the device's stream and return a status). Names here avoid double
 * underscores, which C++ reserves. */
#ifndef CT_CUDA_IMPL_H
#define CT_CUDA_IMPL_H

#include <cuda_runtime.h>

#include "backend/plugin_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Set by the plugin entry point. */
extern const ct__plugin_host *ct_cuda_host;

/* Record status with a printf-style message through the host; returns status. */
ct_status ct_cuda_fail(ct_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Turn a CUDA error into a recorded CT_ERR_BACKEND (CT_ERR_OUT_OF_MEMORY for
 * cudaErrorMemoryAllocation) naming the statement, file:line, device and CUDA's message. */
ct_status ct_cuda_check_result(cudaError_t result, const char *statement, const char *file,
                               int line, int device);

#define CT_CUDA_CHECK(device, statement)                                                           \
    do {                                                                                           \
        cudaError_t ct_cuda_result_ = (statement);                                                 \
        if (ct_cuda_result_ != cudaSuccess)                                                        \
            return ct_cuda_check_result(ct_cuda_result_, #statement, __FILE__, __LINE__,           \
                                        (device));                                                 \
    } while (0)

/* The compute stream of a device (created on first use; makes the device current). NULL
 * with the error recorded on failure. */
cudaStream_t ct_cuda_stream(int device);

/* The compute stream of a device, with the failure's status (CT_ERR_DEVICE_UNAVAILABLE for
 * a device this build cannot run on, CT_ERR_BACKEND for a CUDA error), recorded. */
ct_status ct_cuda_stream_get(int device, cudaStream_t *out);

/* Make device current on this thread. */
ct_status ct_cuda_set_device(int device);

/* Waits for the work queued so far on stream (for the work before event), polling it under
 * the device wait (cuda_wait.c): CT_OK; CT_ERR_BACKEND with CUDA's error, or past
 * CT_DEVICE_TIMEOUT naming `what` (the work then stays queued). Recorded. */
ct_status ct_cuda_stream_wait(int device, cudaStream_t stream, const char *what);
ct_status ct_cuda_event_wait(int device, cudaEvent_t event, const char *what);

/* Reads size bytes of device memory src into host memory dst after the work queued on stream
 * (a kernel's result): waits for the stream first, so that the copy, which into pageable
 * memory returns only once it ended, does not wait behind the kernel without a deadline; then
 * copies through a host buffer of its own, so that a copy past the deadline (the buffer then
 * leaked) never writes dst after the call returned. Errors as ct_cuda_stream_wait's. */
ct_status ct_cuda_read_back(int device, cudaStream_t stream, void *dst, const void *src,
                            size_t size, const char *what);

/* Copy host memory to the device through a pinned staging slot (cuda_memory.c): returns once
 * the source has been read, without waiting for the stream, the DMA queued on it. */
ct_status ct_cuda_copy_from_host(int device, void *dst, const void *src, size_t size);

/* The elementwise ops on complex operands (cuda_complex.cu), which the unary and binary
 * launchers hand over: a is the launch's args with byte strides (ct_ew_begin's). */
ct_status ct_cuda_complex_unary(int device, cudaStream_t stream, const ct__ew_args *a,
                                ct__unary_op op);
ct_status ct_cuda_complex_binary(int device, cudaStream_t stream, const ct__ew_args *a,
                                 ct__binary_op op, ct__ew_scalar scalar);

/* The kernel launchers: ct_cuda_NAME for every row of backend/kernel_slots.h, defined in the
 * .cu file of its family; the plugin defines every required slot and the optional ones
 * CT_CUDA_OPTIONAL_SLOTS lists (cuda_device.c puts them in its table). */
#define CT_CUDA_DECLARE_(name, need, sync, ret, parameters, arguments)                             \
    ret ct_cuda_##name parameters;
CT_KERNEL_SLOTS(CT_CUDA_DECLARE_)
#undef CT_CUDA_DECLARE_
#define CT_CUDA_OPTIONAL_SLOTS(X)                                                                  \
    X(conv2d_native)                                                                               \
    X(conv2d_channels_last) X(pool2d_channels_last) X(batch_norm_channels_last) X(linalg)

#ifdef __cplusplus
}
#endif
#endif

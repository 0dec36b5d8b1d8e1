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

/* Copy host memory to the device through a pinned staging slot (cuda_memory.c): returns once
 * the source has been read, without waiting for the stream, the DMA queued on it. */
ct_status ct_cuda_copy_from_host(int device, void *dst, const void *src, size_t size);

/* Kernel launchers (the ct__kernel_table table of the CUDA backend). */
ct_status ct_cuda_unary(int device, ct__unary_op op, const ct__ew_args *args, double p0, double p1);
ct_status ct_cuda_binary(int device, ct__binary_op op, const ct__ew_args *args);
ct_status ct_cuda_where(int device, const ct__ew_args *args);
ct_status ct_cuda_copy(int device, const ct__ew_args *args);
ct_status ct_cuda_fill(int device, const ct__ew_args *args, double value);
ct_status ct_cuda_iota(int device, const ct__ew_args *args, double start, double step);
ct_status ct_cuda_random(int device, const ct__ew_args *args, ct__random_kind kind, uint64_t seed,
                         uint64_t offset);
ct_status ct_cuda_reduce(int device, ct__reduce_op op, const ct__reduce_args *args);
ct_status ct_cuda_matmul(int device, const ct__matmul_args *args);
ct_status ct_cuda_gather(int device, const ct__gather_args *args);
/* Sorting and scanning (cuda_sort.cu). */
ct_status ct_cuda_argsort(int device, const ct__sort_args *args);
ct_status ct_cuda_cumsum(int device, const ct__sort_args *args);
/* Convolution (cuda_conv.cu, cuDNN) and pooling (cuda_pool.cu); backend/conv_args_impl.h. */
ct_status ct_cuda_conv2d_workspace(int device, const struct ct__conv2d_args *args, bool backward,
                                   size_t *bytes);
ct_status ct_cuda_conv2d_forward(int device, const struct ct__conv2d_args *args);
ct_status ct_cuda_conv2d_backward(int device, const struct ct__conv2d_args *args);
bool ct_cuda_conv2d_native(int device, const struct ct__conv2d_args *args);
ct_status ct_cuda_pool2d_forward(int device, const struct ct__pool2d_args *args);
ct_status ct_cuda_pool2d_backward(int device, const struct ct__pool2d_args *args);

/* Optimisers (cuda_optim.cu). */
ct_status ct_cuda_optim_step(int device, const ct__optim_args *args);
ct_status ct_cuda_list_norm(int device, const ct__list_args *args, double p, double *out);
ct_status ct_cuda_list_scale(int device, const ct__list_args *args, double factor);
ct_status ct_cuda_list_unscale(int device, const ct__list_args *args, double inv_scale,
                               int32_t *first_bad);

#ifdef __cplusplus
}
#endif
#endif

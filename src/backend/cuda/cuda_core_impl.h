/* The CUDA plugin's core, shared by cuda_device.c, cuda_stream.c and cuda_memory.c (not by
 * the kernel files, which use cuda_impl.h): the device table filled at load, the stream
 * without the usability check, and the backend entry points of the memory file. */
#ifndef CT_CUDA_CORE_IMPL_H
#define CT_CUDA_CORE_IMPL_H

#include "backend/cuda/cuda_impl.h"

/* Devices the plugin handles: as many as the core can name (cuda:0 .. cuda:15). */
#define CT_CUDA_MAX_DEVICES CT_MAX_LOGICAL_DEVICES

/* Devices found when the plugin loaded (CUDA ordinals 0 .. count - 1). */
int ct_cuda_device_total(void);

/* Why a device present cannot run this build's kernels (its architecture is not in the
 * build), or NULL when it can. */
const char *ct_cuda_unusable_reason(int device);

ct_status ct_cuda_synchronize(int device);

ct_status ct_cuda_raw_alloc(int device, size_t size, void **out);
void ct_cuda_raw_free(int device, void *ptr, size_t size);
ct_status ct_cuda_copy_to_host(int device, void *dst, const void *src, size_t size);
ct_status ct_cuda_copy_between(int dst_device, void *dst, int src_device, const void *src,
                               size_t size);

/* Pinned host memory and its copies (cuda_pinned.c; the contract is in backend_impl.h). */
ct_status ct_cuda_pinned_alloc(size_t size, void **out);
void ct_cuda_pinned_free(void *ptr);
ct_status ct_cuda_copy_from_pinned(int device, void *dst, const void *src, size_t size,
                                   void **fence);
ct_status ct_cuda_copy_to_pinned(int device, void *dst, const void *src, size_t size);
bool ct_cuda_fence_done(void *fence, bool wait);
void ct_cuda_fence_free(void *fence);

#endif

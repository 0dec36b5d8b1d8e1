/* The CUDA plugin's pinned host memory: page-locked blocks (which the core caches, see
 * src/mem/pinned.c), direct DMAs from and into them, and the fences that tell when a DMA
 * from a block has ended.
 *
 * A copy from pinned memory needs no staging: the DMA reads the block itself, so the call
 * returns as soon as the DMA is queued. The block must then stay untouched until the DMA has
 * read it; a fence (a CUDA event recorded after the DMA on the device's stream) tells when. An
 * event belongs to one device, so a block last copied to another device first waits for
 * that device's DMA and gets an event made on the new one. */
#include <stdlib.h>

#include "backend/cuda/cuda_core_impl.h"

typedef struct pinned_fence {
    cudaEvent_t event;
    int device; /* where the event was made (and is recorded) */
} pinned_fence;

ct_status ct_cuda_pinned_alloc(size_t size, void **out) {
    /* Portable: the block is pinned for every device, not only the current one. As with
     * raw_alloc, the core writes the out-of-memory message; the runtime's error is cleared. */
    if (cudaHostAlloc(out, size ? size : 1, cudaHostAllocPortable) != cudaSuccess) {
        (void)cudaGetLastError();
        return CT_ERR_OUT_OF_MEMORY;
    }
    return CT_OK;
}

void ct_cuda_pinned_free(void *ptr) {
    /* Nothing to undo on failure; clear it so a later check does not report it. */
    if (cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
}

static void fence_destroy(pinned_fence *f) {
    if (cudaEventDestroy(f->event) != cudaSuccess) (void)cudaGetLastError();
    free(f);
}

/* The block's fence as an event of device (current), made when it has none or one of
 * another device, whose DMA is waited for first. */
static ct_status fence_for(int device, void **fence, pinned_fence **out) {
    pinned_fence *f = *fence;
    if (f && f->device == device) {
        *out = f;
        return CT_OK;
    }
    if (f) {
        /* Past the deadline the fence stays, so that the block is not taken as free. */
        ct_status waited = ct_cuda_event_wait(f->device, f->event, "a pinned block's last copy");
        if (waited != CT_OK) return waited;
        fence_destroy(f);
        *fence = NULL;
    }
    f = malloc(sizeof *f);
    if (!f)
        return ct_cuda_fail(CT_ERR_OUT_OF_MEMORY,
                            "cuda:%d: out of host memory for a pinned block's fence", device);
    cudaError_t made = cudaEventCreateWithFlags(&f->event, cudaEventDisableTiming);
    if (made != cudaSuccess) {
        free(f);
        CT_CUDA_CHECK(device, made);
    }
    f->device = device;
    *fence = *out = f;
    return CT_OK;
}

ct_status ct_cuda_copy_from_pinned(int device, void *dst, const void *src, size_t size,
                                   void **fence) {
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream); /* makes device current */
    pinned_fence *f = NULL;
    if (status == CT_OK) status = fence_for(device, fence, &f);
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, cudaMemcpyAsync(dst, src, size, cudaMemcpyHostToDevice, stream));
    CT_CUDA_CHECK(device, cudaEventRecord(f->event, stream));
    return CT_OK;
}

ct_status ct_cuda_copy_to_pinned(int device, void *dst, const void *src, size_t size) {
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    status = ct_cuda_stream_wait(device, stream, "the work queued before a copy to the host");
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToHost, stream));
    return ct_cuda_stream_wait(device, stream, "a copy to pinned host memory");
}

bool ct_cuda_fence_done(void *fence, bool wait) {
    pinned_fence *f = fence;
    if (!f) return true;
    /* With wait, under the deadline (its error recorded when it passes); then a query says
     * whether it ended. */
    if (wait && ct_cuda_event_wait(f->device, f->event, "a pinned block's last copy") == CT_OK)
        return true;
    cudaError_t result = cudaEventQuery(f->event);
    if (result == cudaSuccess) return true;
    (void)cudaGetLastError(); /* "not ready" is no failure; it must not be reported later */
    /* A failed wait leaves nothing to wait for (the device is in error): the block is free. */
    return result != cudaErrorNotReady;
}

void ct_cuda_fence_free(void *fence) {
    if (fence) fence_destroy(fence);
}

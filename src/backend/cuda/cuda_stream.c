/* One compute stream per device: every kernel and copy of the plugin goes on it, so work on
 * a device runs in the order it was queued and the host waits only where it reads.
 * Streams are non-blocking (they do not wait on the legacy default stream, which other code
 * in the process may use) and made on first use, once, under a lock. */
#include <pthread.h>
#include <stdatomic.h>

#include "backend/cuda/cuda_core_impl.h"

static pthread_mutex_t stream_lock = PTHREAD_MUTEX_INITIALIZER;
/* Read without the lock on every launch; written once under it. */
static _Atomic(cudaStream_t) streams[CT_CUDA_MAX_DEVICES];

static ct_status check_index(int device) {
    if (device >= 0 && device < ct_cuda_device_total()) return CT_OK;
    return ct_cuda_fail(CT_ERR_DEVICE_UNAVAILABLE,
                        "cuda:%d does not exist: %d CUDA device%s present", device,
                        ct_cuda_device_total(), ct_cuda_device_total() == 1 ? " is" : "s are");
}

ct_status ct_cuda_set_device(int device) {
    ct_status status = check_index(device);
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, cudaSetDevice(device));
    return CT_OK;
}

static ct_status create_stream(int device, cudaStream_t *out) {
    CT_CUDA_CHECK(device, cudaStreamCreateWithFlags(out, cudaStreamNonBlocking));
    return CT_OK;
}

ct_status ct_cuda_stream_get(int device, cudaStream_t *out) {
    ct_status status = ct_cuda_set_device(device);
    if (status != CT_OK) return status;
    *out = atomic_load_explicit(&streams[device], memory_order_acquire);
    if (*out) return CT_OK;
    pthread_mutex_lock(&stream_lock);
    *out = atomic_load_explicit(&streams[device], memory_order_relaxed);
    if (!*out) {
        status = create_stream(device, out);
        if (status == CT_OK) atomic_store_explicit(&streams[device], *out, memory_order_release);
    }
    pthread_mutex_unlock(&stream_lock);
    return status;
}

cudaStream_t ct_cuda_stream(int device) {
    const char *why = ct_cuda_unusable_reason(device);
    if (why) {
        ct_cuda_fail(CT_ERR_DEVICE_UNAVAILABLE, "%s", why);
        return NULL;
    }
    cudaStream_t stream = NULL;
    return ct_cuda_stream_get(device, &stream) == CT_OK ? stream : NULL;
}

ct_status ct_cuda_synchronize(int device) {
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    return ct_cuda_stream_wait(device, stream, "the work queued on its stream");
}

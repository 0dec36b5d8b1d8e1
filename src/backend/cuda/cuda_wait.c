/* The CUDA plugin's waits for a device: every host wait for a stream or an event polls it
 * (cudaStreamQuery, cudaEventQuery) through the device wait (backend/device_wait_impl.h),
 * never cudaStreamSynchronize or cudaEventSynchronize, which block without a deadline. Work
 * already done costs one query; past CT_DEVICE_TIMEOUT the wait fails with CT_ERR_BACKEND
 * naming what it waited for, and the work stays queued. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_core_impl.h"
#include "backend/device_wait_impl.h"

typedef struct cuda_wait {
    cudaStream_t stream; /* what is waited for: a stream's work, or */
    cudaEvent_t event;   /* the work before an event (when not NULL) */
    cudaError_t result;  /* the last query's */
} cuda_wait;

/* cudaStreamQuery / cudaEventQuery: cudaSuccess once the work is done, cudaErrorNotReady
 * while it runs (not an error: cleared so that no later check reports it), another error
 * (possibly of an earlier asynchronous launch) as a failure. */
static ct__wait_state look(void *arg, double nap) {
    cuda_wait *w = arg;
    ct__device_nap(nap);
    w->result = w->event ? cudaEventQuery(w->event) : cudaStreamQuery(w->stream);
    if (w->result == cudaSuccess) return CT__WAIT_DONE;
    if (w->result != cudaErrorNotReady) return CT__WAIT_FAILED;
    (void)cudaGetLastError();
    return CT__WAIT_PENDING;
}

/* Waits for w: CT_OK, CUDA's error, or the deadline's naming what. */
static ct_status wait_for(int device, cuda_wait *w, const char *what) {
    double timeout;
    ct__wait_state state = ct__device_wait(look, w, ct_cuda_host, &timeout);
    if (state == CT__WAIT_DONE) return CT_OK;
    if (state == CT__WAIT_FAILED)
        return ct_cuda_check_result(w->result, w->event ? "cudaEventQuery" : "cudaStreamQuery",
                                    __FILE__, __LINE__, device);
    char name[32];
    snprintf(name, sizeof name, "cuda:%d", device);
    return ct__device_timed_out(ct_cuda_host, name, what, timeout);
}

ct_status ct_cuda_stream_wait(int device, cudaStream_t stream, const char *what) {
    cuda_wait w = {.stream = stream};
    return wait_for(device, &w, what);
}

ct_status ct_cuda_event_wait(int device, cudaEvent_t event, const char *what) {
    cuda_wait w = {.event = event};
    return wait_for(device, &w, what);
}

ct_status ct_cuda_read_back(int device, cudaStream_t stream, void *dst, const void *src,
                            size_t size, const char *what) {
    ct_status status = ct_cuda_stream_wait(device, stream, what);
    if (status != CT_OK) return status;
    void *bounce = malloc(size ? size : 1);
    if (!bounce)
        return ct_cuda_fail(CT_ERR_OUT_OF_MEMORY, "cuda:%d: out of host memory reading %s back",
                            device, what);
    cudaError_t copied = cudaMemcpyAsync(bounce, src, size, cudaMemcpyDeviceToHost, stream);
    if (copied != cudaSuccess) {
        free(bounce);
        return ct_cuda_check_result(copied, "cudaMemcpyAsync", __FILE__, __LINE__, device);
    }
    status = ct_cuda_stream_wait(device, stream, what);
    if (status != CT_OK) return status; /* bounce leaked: the copy may still write it */
    memcpy(dst, bounce, size);
    free(bounce);
    return CT_OK;
}

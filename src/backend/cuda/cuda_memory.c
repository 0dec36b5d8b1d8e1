/* The CUDA plugin's raw memory and copies.
 *
 * Raw device memory comes from cudaMalloc (the core's pool caches it). Host-to-device copies
 * go through pinned staging buffers: the host data is copied into a pinned slot and a DMA
 * from it is queued on the device's stream, so the call returns as soon as the source has
 * been read (the caller may free it) while the DMA overlaps the next slot's copy and the
 * device's work. Each slot has an event recorded after its last DMA; a slot is reused only
 * once that event has completed. Device-to-host copies are host reads, so they wait: they
 * take the driver's path for pageable memory and synchronise. Each device has a ring of
 * small slots (for small copies, so that one does not wait for a large copy's slot) and a
 * ring of large ones, made on first use and kept for the life of the process. When pinned
 * memory cannot be had, copies fall back to pageable memory and synchronise. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_core_impl.h"

#define SMALL_COPY ((size_t)64 << 10) /* copies below this use the small slots */
#define SMALL_SLOTS 16
#define LARGE_SLOT ((size_t)8 << 20)
#define LARGE_SLOTS 2

typedef struct ring {
    int count;
    int next;
    size_t slot_size;
    char *base; /* count * slot_size pinned bytes */
    cudaEvent_t done[SMALL_SLOTS];
} ring;

typedef struct staging {
    pthread_mutex_t lock; /* one copy at a time per device uses its rings */
    bool tried, ready;
    ring small, large;
} staging;

static staging stagings[CT_CUDA_MAX_DEVICES];
static pthread_once_t staging_once = PTHREAD_ONCE_INIT;

static void init_staging_locks(void) {
    for (int d = 0; d < CT_CUDA_MAX_DEVICES; d++) pthread_mutex_init(&stagings[d].lock, NULL);
}

/* ---- raw memory ---- */

ct_status ct_cuda_raw_alloc(int device, size_t size, void **out) {
    /* The pool writes the out-of-memory message (with its own figures), so nothing is
     * recorded here; the runtime's last error is cleared so later checks do not see it. */
    if (device < 0 || device >= ct_cuda_device_total()) return CT_ERR_OUT_OF_MEMORY;
    if (cudaSetDevice(device) != cudaSuccess || cudaMalloc(out, size ? size : 1) != cudaSuccess) {
        (void)cudaGetLastError();
        return CT_ERR_OUT_OF_MEMORY;
    }
    return CT_OK;
}

void ct_cuda_raw_free(int device, void *ptr, size_t size) {
    /* cudaFree waits for the device's queued work, so memory still read is not reused; that
     * work is waited for first under the deadline, and a stream stuck past it keeps the
     * memory, leaked, rather than block here (its error stays recorded). A failure of cudaFree
     * leaves nothing to undo; clear it so it is not reported later. */
    cudaStream_t stream;
    if (ct_cuda_stream_get(device, &stream) == CT_OK &&
        ct_cuda_stream_wait(device, stream, "the work queued before a free") != CT_OK) {
        char message[160];
        snprintf(message, sizeof message,
                 "cuda:%d: %zu bytes of device memory leaked: the work queued before their free "
                 "did not finish within CT_DEVICE_TIMEOUT and may still use them",
                 device, size);
        ct_cuda_host->log(CT_LOG_WARNING, message);
        return;
    }
    if (cudaSetDevice(device) != cudaSuccess || cudaFree(ptr) != cudaSuccess)
        (void)cudaGetLastError();
}

/* ---- staging rings ---- */

/* Makes a ring with the device current; false (nothing recorded) when pinned memory or
 * events cannot be had. */
static bool ring_init(ring *r, int count, size_t slot_size) {
    r->count = count;
    r->next = 0;
    r->slot_size = slot_size;
    void *base = NULL;
    if (cudaHostAlloc(&base, (size_t)count * slot_size, cudaHostAllocPortable) != cudaSuccess)
        return false;
    r->base = base;
    for (int i = 0; i < count; i++)
        if (cudaEventCreateWithFlags(&r->done[i], cudaEventDisableTiming) != cudaSuccess) {
            while (i-- > 0) cudaEventDestroy(r->done[i]);
            cudaFreeHost(r->base);
            r->base = NULL;
            return false;
        }
    return true;
}

/* The device's rings, made on first use (the device is current); false when pinned memory
 * is not available, logged once. Called with the staging lock held. */
static bool staging_ready(int device, staging *st) {
    if (st->tried) return st->ready;
    st->tried = true;
    st->ready = ring_init(&st->small, SMALL_SLOTS, SMALL_COPY);
    if (st->ready && !ring_init(&st->large, LARGE_SLOTS, LARGE_SLOT)) {
        for (int i = 0; i < st->small.count; i++) cudaEventDestroy(st->small.done[i]);
        cudaFreeHost(st->small.base);
        st->ready = false;
    }
    if (!st->ready) {
        (void)cudaGetLastError();
        char message[200];
        snprintf(message, sizeof message,
                 "cuda:%d: no pinned host memory for staging buffers; host<->device copies "
                 "will use pageable memory and synchronise",
                 device);
        ct_cuda_host->log(CT_LOG_WARNING, message);
    }
    return st->ready;
}

static ct_status ring_upload(int device, cudaStream_t stream, ring *r, char *dst, const char *src,
                             size_t size) {
    for (size_t off = 0; off < size;) {
        size_t n = size - off < r->slot_size ? size - off : r->slot_size;
        int slot = r->next;
        char *buf = r->base + (size_t)slot * r->slot_size;
        r->next = (slot + 1) % r->count;
        ct_status waited =
            ct_cuda_event_wait(device, r->done[slot], "a staging buffer's last copy");
        if (waited != CT_OK) return waited;
        memcpy(buf, src + off, n);
        CT_CUDA_CHECK(device, cudaMemcpyAsync(dst + off, buf, n, cudaMemcpyHostToDevice, stream));
        CT_CUDA_CHECK(device, cudaEventRecord(r->done[slot], stream));
        off += n;
    }
    return CT_OK;
}

/* Without staging: the copy from or to pageable memory, then a wait, so the source may be
 * freed and the destination read when this returns. The queued work is waited for first: a
 * copy into pageable memory returns only once it ended, so it would wait behind that work
 * without a deadline. */
static ct_status pageable_copy(int device, cudaStream_t stream, void *dst, const void *src,
                               size_t size, enum cudaMemcpyKind kind) {
    const char *what =
        kind == cudaMemcpyDeviceToHost ? "a copy to the host" : "a copy to the device";
    ct_status status = ct_cuda_stream_wait(device, stream, what);
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, cudaMemcpyAsync(dst, src, size, kind, stream));
    return ct_cuda_stream_wait(device, stream, what);
}

/* ---- the backend's copies ---- */

ct_status ct_cuda_copy_from_host(int device, void *dst, const void *src, size_t size) {
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    pthread_once(&staging_once, init_staging_locks);
    staging *st = &stagings[device];
    pthread_mutex_lock(&st->lock);
    if (staging_ready(device, st))
        status = ring_upload(device, stream, size < SMALL_COPY ? &st->small : &st->large, dst, src,
                             size);
    else
        status = pageable_copy(device, stream, dst, src, size, cudaMemcpyHostToDevice);
    pthread_mutex_unlock(&st->lock);
    return status;
}

/* A download must have arrived before the call returns, so staging cannot return early as an
 * upload does; the driver's own path for pageable memory (what PyTorch's copies take) measured
 * faster than copying out of pinned slots (docs/PERFORMANCE.md, the H200 run). */
ct_status ct_cuda_copy_to_host(int device, void *dst, const void *src, size_t size) {
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    return pageable_copy(device, stream, dst, src, size, cudaMemcpyDeviceToHost);
}

/* The peer copy runs on the destination's stream after the source's queued work (which may
 * still be writing the source), and the source's stream waits for the copy before anything
 * queued later there (which may reuse the source's memory). */
static ct_status peer_copy(int dst_device, void *dst, int src_device, const void *src, size_t size,
                           cudaEvent_t src_ready, cudaEvent_t copied) {
    cudaStream_t src_stream, dst_stream;
    ct_status status = ct_cuda_stream_get(dst_device, &dst_stream);
    if (status == CT_OK) status = ct_cuda_stream_get(src_device, &src_stream);
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(src_device, cudaEventRecord(src_ready, src_stream));
    CT_CUDA_CHECK(dst_device, cudaSetDevice(dst_device));
    CT_CUDA_CHECK(dst_device, cudaStreamWaitEvent(dst_stream, src_ready, 0));
    CT_CUDA_CHECK(dst_device,
                  cudaMemcpyPeerAsync(dst, dst_device, src, src_device, size, dst_stream));
    CT_CUDA_CHECK(dst_device, cudaEventRecord(copied, dst_stream));
    CT_CUDA_CHECK(src_device, cudaSetDevice(src_device));
    CT_CUDA_CHECK(src_device, cudaStreamWaitEvent(src_stream, copied, 0));
    return CT_OK;
}

static ct_status make_event(int device, cudaEvent_t *out) {
    ct_status status = ct_cuda_set_device(device);
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, cudaEventCreateWithFlags(out, cudaEventDisableTiming));
    return CT_OK;
}

ct_status ct_cuda_copy_between(int dst_device, void *dst, int src_device, const void *src,
                               size_t size) {
    cudaStream_t stream;
    if (dst_device == src_device) {
        ct_status status = ct_cuda_stream_get(dst_device, &stream);
        if (status != CT_OK) return status;
        CT_CUDA_CHECK(dst_device,
                      cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToDevice, stream));
        return CT_OK;
    }
    /* An event is recorded on a stream of its own device, so each is made there. */
    cudaEvent_t src_ready, copied;
    ct_status status = make_event(src_device, &src_ready);
    if (status != CT_OK) return status;
    status = make_event(dst_device, &copied);
    if (status == CT_OK) {
        status = peer_copy(dst_device, dst, src_device, src, size, src_ready, copied);
        cudaEventDestroy(copied); /* released by CUDA once the work using it is done */
    }
    cudaEventDestroy(src_ready);
    return status;
}

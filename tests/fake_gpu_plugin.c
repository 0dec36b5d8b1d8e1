/* A test-only stand-in for libctensor_cuda.so: one "GPU" whose memory is host memory, with
 * memory, copies and pinned memory, and whose work runs on a stream (fake_gpu_queue.c): a
 * worker thread per device that runs the queued work in order, as late as a stream allows.
 * A copy from pinned memory is only queued, as a DMA is, and reads its source when it runs;
 * a copy from pageable memory takes its source at once (as cudaMemcpy returns once the host
 * buffer has been read) and is queued; the other copies wait for the queue first. A pinned
 * block written, reused or freed before its copy ran thus shows up as wrong values on the
 * device (and, freed, as a use-after-free under AddressSanitizer). ctest runs test_pinned
 * with CT_CUDA_PLUGIN pointing here as test_pinned_fake_gpu.
 *
 * Built with CT_FAKE_GPU_KERNELS (and fake_gpu_kernels.c), the GPU has the CPU's kernels,
 * queued on the same stream; ctest runs the test programs on it as test_*_on_fake_gpu. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_gpu_queue.h"
#include "fake_gpu_uuid.h"

#ifdef CT_FAKE_GPU_KERNELS
const ct__kernel_table *fake_gpu_kernels(const ct__plugin_host *host); /* fake_gpu_kernels.c */
#else
static const ct__kernel_table no_kernels;
#endif

/* The fence of a device's queue: done once the work up to number seq ran. */
typedef struct fake_fence {
    int device;
    uint64_t seq;
} fake_fence;

/* A queued copy; a copy from pageable memory holds its source's bytes (src == bytes). */
typedef struct queued_copy {
    void *dst;
    const void *src;
    size_t size;
    char bytes[];
} queued_copy;

static ct_status run_copy(void *payload, char *message, size_t size) {
    (void)message, (void)size;
    queued_copy *q = payload;
    memcpy(q->dst, q->src, q->size);
    return CT_OK;
}

static int device_count(void) { return 1; }

/* The UUID is a hash of a text: "fake GPU <device>" by default, so every process sees the
 * same GPU, as ranks on a machine with one GPU do; CT_FAKE_GPU_UUID=<text> another (a test
 * gives each rank of mpirun its own text: a GPU each); CT_FAKE_GPU_UUID=per-thread one per
 * calling thread, for ranks that are threads of one process on GPUs of their own. */
static ct_status properties(int device, ct_device_properties *out) {
    memset(out, 0, sizeof *out);
    const char *env = getenv("CT_FAKE_GPU_UUID");
    unsigned char text[160];
    size_t length = (size_t)snprintf((char *)text, sizeof text, "%s %d",
                                     env && *env ? env : FAKE_GPU_UUID_TEXT, device);
    if (env && !strcmp(env, "per-thread")) {
        pthread_t self = pthread_self();
        memcpy(text, &self, sizeof self);
        length = sizeof self;
    }
    fake_gpu_uuid(text, length < sizeof text ? length : sizeof text, out->uuid);
    out->device = (ct_device){CT_DEVICE_CUDA, device};
#ifdef CT_FAKE_GPU_KERNELS
    snprintf(out->name, sizeof out->name, "fake GPU (host memory, the CPU's kernels)");
#else
    snprintf(out->name, sizeof out->name, "fake GPU (host memory, deferred DMAs)");
#endif
    out->memory_total = out->memory_free = (size_t)1 << 30;
    out->compute_capability_major = 9;
    out->multiprocessors = 1;
    return CT_OK;
}

static ct_status raw_alloc(int device, size_t size, void **out) {
    (void)device;
    *out = aligned_alloc(256, (size + 255) / 256 * 256 + 256);
    return *out ? CT_OK : CT_ERR_OUT_OF_MEMORY;
}

/* As the CUDA plugin's: the memory goes back once the device's work ended (cudaFree waits
 * for it); a stream stuck past the deadline keeps it, leaked, since queued work may use it. */
static void raw_free(int device, void *ptr, size_t size) {
    if (fake_queue_done(device, UINT64_MAX, true)) {
        free(ptr);
        return;
    }
    char message[160];
    snprintf(message, sizeof message,
             "cuda:%d: %zu bytes of device memory leaked: the work queued before their free did "
             "not finish within CT_DEVICE_TIMEOUT and may still use them",
             device, size);
    fake_queue_host()->log(CT_LOG_WARNING, message);
}

/* A synchronous copy: after the queued work, as on one stream. */
static ct_status ordered_copy(int device, void *dst, const void *src, size_t size) {
    ct_status status = fake_queue_drain(device);
    if (status == CT_OK) memcpy(dst, src, size);
    return status;
}

static ct_status copy_to_host(int device, void *dst, const void *src, size_t size) {
    return ordered_copy(device, dst, src, size);
}

/* Up to this size a copy from pageable memory is queued with a copy of its source; a larger
 * one (or one that finds no memory for that copy) waits for the queue and copies at once. */
#define QUEUED_UPLOAD_MAX ((size_t)64 << 20)

static ct_status copy_from_host(int device, void *dst, const void *src, size_t size) {
    queued_copy *q = size <= QUEUED_UPLOAD_MAX ? malloc(sizeof *q + size) : NULL;
    if (!q) return ordered_copy(device, dst, src, size);
    memcpy(q->bytes, src, size);
    *q = (queued_copy){dst, q->bytes, size};
    return fake_queue_submit(device, "copy_from_host", run_copy, q, size, NULL);
}

static ct_status copy_between(int dst_device, void *dst, int src_device, const void *src,
                              size_t size) {
    ct_status status = fake_queue_drain(src_device);
    return status == CT_OK ? ordered_copy(dst_device, dst, src, size) : status;
}

static ct_status synchronize(int device) { return fake_queue_drain(device); }

/* Pinned blocks carry their size in front, so a freed one can be overwritten first. */
static ct_status pinned_alloc(size_t size, void **out) {
    char *p = malloc(size + 64);
    if (!p) return CT_ERR_OUT_OF_MEMORY;
    memcpy(p, &size, sizeof size);
    *out = p + 64;
    return CT_OK;
}

static void pinned_free(void *ptr) {
    char *p = (char *)ptr - 64;
    size_t size;
    memcpy(&size, p, sizeof size);
    memset(ptr, 0xA5, size); /* a copy still to come would carry this */
    free(p);
}

static ct_status copy_from_pinned(int device, void *dst, const void *src, size_t size,
                                  void **fence) {
    queued_copy *q = malloc(sizeof *q);
    fake_fence *f = *fence ? *fence : malloc(sizeof *f);
    if (!q || !f) {
        free(q);
        if (f != *fence) free(f);
        return CT_ERR_OUT_OF_MEMORY;
    }
    *q = (queued_copy){dst, src, size};
    uint64_t seq = 0;
    ct_status status = fake_queue_submit(device, "copy_from_pinned", run_copy, q, 0, &seq);
    if (status != CT_OK) {
        if (f != *fence) free(f);
        return status;
    }
    *f = (fake_fence){device, seq};
    *fence = f;
    return CT_OK;
}

static ct_status copy_to_pinned(int device, void *dst, const void *src, size_t size) {
    return ordered_copy(device, dst, src, size);
}

static bool fence_done(void *fence, bool wait) {
    fake_fence *f = fence;
    return !f || fake_queue_done(f->device, f->seq, wait);
}

static void fence_free(void *fence) { free(fence); }

static ct__backend_table fake_backend = {
    .name = "cuda",
    .type = CT_DEVICE_CUDA,
    .device_count = device_count,
    .properties = properties,
    .raw_alloc = raw_alloc,
    .raw_free = raw_free,
    .copy_to_host = copy_to_host,
    .copy_from_host = copy_from_host,
    .copy_between = copy_between,
    .synchronize = synchronize,
#ifndef CT_FAKE_GPU_KERNELS
    .kernels = &no_kernels,
#endif
    .pinned_alloc = pinned_alloc,
    .pinned_free = pinned_free,
    .copy_from_pinned = copy_from_pinned,
    .copy_to_pinned = copy_to_pinned,
    .fence_done = fence_done,
    .fence_free = fence_free,
};

static const ct__backend_table *start(const ct__plugin_host *host, char *reason,
                                      size_t reason_size) {
    (void)reason, (void)reason_size;
    fake_queue_init(host);
#ifdef CT_FAKE_GPU_KERNELS
    fake_backend.kernels = fake_gpu_kernels(host);
#endif
    return &fake_backend;
}

/* No build facts: ct_cuda_get_build_info leaves them zero. */
static const ct__device_plugin_api api = {CT_PLUGIN_ABI_VERSION, start, NULL};

__attribute__((visibility("default"))) const void *ct_cuda_plugin_api(void) { return &api; }

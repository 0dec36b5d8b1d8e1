/* A test-only stand-in for libctensor_cuda.so: one "GPU" whose memory is host memory, with
 * memory, copies and pinned memory but no kernels. It models what matters for pinned memory:
 * a copy from a pinned block is only queued, as a DMA is, and runs when its fence is waited
 * for, when the device synchronises, or before any later copy on the device (stream order).
 * A pinned block written, reused or freed before its copy ran thus shows up as wrong values
 * on the device (and, freed, as a use-after-free under AddressSanitizer). ctest runs
 * test_pinned with CT_CUDA_PLUGIN pointing here as test_pinned_fake_gpu.
 *
 * Built with CT_FAKE_GPU_KERNELS (and fake_gpu_kernels.c), the GPU has the CPU's kernels
 * and copies at once; ctest runs the test programs on it as test_*_on_fake_gpu. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/plugin_impl.h"

#ifdef CT_FAKE_GPU_KERNELS
/* Kernels run at once on the host, so no copy may stay queued before them. */
static const bool defer_copies = false;
const ct__kernel_table *fake_gpu_kernels(const ct__plugin_host *host); /* fake_gpu_kernels.c */
#else
static const bool defer_copies = true;
static const ct__kernel_table no_kernels;
#endif

/* A queued copy from pinned memory, and a fence: done once `seq` copies have run. */
typedef struct queued_copy {
    void *dst;
    const void *src;
    size_t size;
    struct queued_copy *next;
} queued_copy;

typedef struct fake_fence {
    uint64_t seq;
} fake_fence;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static queued_copy *queue_head, *queue_tail;
static uint64_t queued, completed;

/* Run the queued copies up to number seq (lock held). */
static void run_queue(uint64_t seq) {
    while (queue_head && completed < seq) {
        queued_copy *q = queue_head;
        queue_head = q->next;
        if (!queue_head) queue_tail = NULL;
        memcpy(q->dst, q->src, q->size);
        free(q);
        completed++;
    }
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
                                     env && *env ? env : "fake GPU", device);
    if (env && !strcmp(env, "per-thread")) {
        pthread_t self = pthread_self();
        memcpy(text, &self, sizeof self);
        length = sizeof self;
    }
    for (size_t half = 0; half < 2; half++) { /* FNV-1a, 64 bits per half */
        uint64_t h = 14695981039346656037ull ^ half;
        for (size_t i = 0; i < length && i < sizeof text; i++) h = (h ^ text[i]) * 1099511628211ull;
        memcpy(out->uuid + 8 * half, &h, 8);
    }
    out->device = (ct_device){CT_DEVICE_CUDA, device};
    snprintf(out->name, sizeof out->name, "%s",
             defer_copies ? "fake GPU (host memory, deferred DMAs)"
                          : "fake GPU (host memory, the CPU's kernels)");
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

static void raw_free(int device, void *ptr, size_t size) {
    (void)device, (void)size;
    pthread_mutex_lock(&lock);
    run_queue(queued); /* cudaFree waits for the device's queued work */
    pthread_mutex_unlock(&lock);
    free(ptr);
}

/* Every synchronous copy runs after the queued ones, as on one stream. */
static ct_status ordered_copy(void *dst, const void *src, size_t size) {
    pthread_mutex_lock(&lock);
    run_queue(queued);
    memcpy(dst, src, size);
    pthread_mutex_unlock(&lock);
    return CT_OK;
}

static ct_status copy_to_host(int device, void *dst, const void *src, size_t size) {
    (void)device;
    return ordered_copy(dst, src, size);
}

static ct_status copy_between(int dst_device, void *dst, int src_device, const void *src,
                              size_t size) {
    (void)dst_device, (void)src_device;
    return ordered_copy(dst, src, size);
}

static ct_status synchronize(int device) {
    (void)device;
    pthread_mutex_lock(&lock);
    run_queue(queued);
    pthread_mutex_unlock(&lock);
    return CT_OK;
}

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
    (void)device;
    if (!defer_copies) {
        *fence = NULL;
        return ordered_copy(dst, src, size);
    }
    queued_copy *q = malloc(sizeof *q);
    fake_fence *f = *fence ? *fence : malloc(sizeof *f);
    if (!q || !f) {
        free(q);
        if (f != *fence) free(f);
        return CT_ERR_OUT_OF_MEMORY;
    }
    *q = (queued_copy){dst, src, size, NULL};
    pthread_mutex_lock(&lock);
    if (queue_tail)
        queue_tail->next = q;
    else
        queue_head = q;
    queue_tail = q;
    f->seq = ++queued;
    pthread_mutex_unlock(&lock);
    *fence = f;
    return CT_OK;
}

static ct_status copy_to_pinned(int device, void *dst, const void *src, size_t size) {
    (void)device;
    return ordered_copy(dst, src, size);
}

static bool fence_done(void *fence, bool wait) {
    fake_fence *f = fence;
    if (!f) return true;
    pthread_mutex_lock(&lock);
    if (wait) run_queue(f->seq);
    bool done = completed >= f->seq;
    pthread_mutex_unlock(&lock);
    return done;
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
    .copy_from_host = copy_to_host, /* a plain copy, ordered after the queued ones */
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

__attribute__((visibility("default"))) const ct__backend_table *
ct_cuda_plugin_entry(const ct__plugin_host *host, char *reason, size_t reason_size) {
    (void)host, (void)reason, (void)reason_size;
#ifdef CT_FAKE_GPU_KERNELS
    fake_backend.kernels = fake_gpu_kernels(host);
#endif
    return &fake_backend;
}

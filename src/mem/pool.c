/* The caching pool (see pool_impl.h). Each class keeps a list of cached blocks; a request
 * takes a cached block of its class or asks the backend for a new one. When the backend or
 * the limit refuses, the pool frees its cache and tries once more before failing. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "core/device_impl.h"
#include "core/error_impl.h"
#include "mem/pool_impl.h"

#define SMALL_LIMIT (1u << 20)
#define SMALL_QUANTUM 512u
#define SMALL_CLASSES (SMALL_LIMIT / SMALL_QUANTUM)
#define LARGE_CLASSES (8 * 44) /* 1 MiB .. 2^64 */
#define CLASS_COUNT (SMALL_CLASSES + LARGE_CLASSES)

typedef struct cached_block {
    void *ptr;
    struct cached_block *next;
} cached_block;

typedef struct ct_pool {
    pthread_mutex_t lock;
    bool ready;
    cached_block *classes[CLASS_COUNT];
    cached_block *spare_nodes;
    size_t cached_bytes;
    ct_memory_statistics stats;
} ct_pool;

static ct_pool pools[CT_DEVICE_SLOTS];
static pthread_mutex_t pools_init_lock = PTHREAD_MUTEX_INITIALIZER;

/* Round size up to its class; writes the class index. */
static size_t round_to_class(size_t size, size_t *class_index) {
    *class_index = 0; /* also on overflow, where the caller fails before using it */
    if (size == 0) size = 1;
    if (size < SMALL_LIMIT) {
        size_t rounded = (size + SMALL_QUANTUM - 1) / SMALL_QUANTUM * SMALL_QUANTUM;
        *class_index = rounded / SMALL_QUANTUM - 1;
        return rounded;
    }
    int log2 = 63 - __builtin_clzll((unsigned long long)size);
    size_t step = (size_t)1 << (log2 - 3); /* eight classes per power of two */
    size_t rounded = (size + step - 1) / step * step;
    if (rounded < size) return 0; /* overflow */
    int rlog2 = 63 - __builtin_clzll((unsigned long long)rounded);
    size_t sub = (rounded >> (rlog2 - 3)) & 7u;
    *class_index = SMALL_CLASSES + (size_t)(rlog2 - 20) * 8 + sub;
    return rounded;
}

static ct_pool *pool_of(ct_device device) {
    ct_pool *pool = &pools[ct__device_slot(device)];
    if (!__atomic_load_n(&pool->ready, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&pools_init_lock);
        if (!pool->ready) {
            pthread_mutex_init(&pool->lock, NULL);
            __atomic_store_n(&pool->ready, true, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&pools_init_lock);
    }
    return pool;
}

/* Give every cached block back to the backend. Caller holds the lock. */
static void release_cache(ct_pool *pool, ct_device device, const ct_backend *backend) {
    int physical = ct__physical_index(device);
    for (size_t c = 0; c < CLASS_COUNT; c++) {
        while (pool->classes[c]) {
            cached_block *node = pool->classes[c];
            pool->classes[c] = node->next;
            size_t size = c < SMALL_CLASSES ? (c + 1) * SMALL_QUANTUM : 0;
            if (c >= SMALL_CLASSES) {
                size_t k = c - SMALL_CLASSES;
                size = ((size_t)8 + k % 8) << (k / 8 + 20 - 3);
            }
            backend->raw_free(physical, node->ptr, size);
            pool->stats.reserved -= size;
            pool->stats.segments--;
            node->next = pool->spare_nodes;
            pool->spare_nodes = node;
        }
    }
    pool->cached_bytes = 0;
}

static ct_status out_of_memory(ct_device device, const ct_pool *pool, size_t request,
                               const char *cause) {
    char name[32], limit[64];
    ct_device_str(device, name, sizeof name);
    const ct_memory_statistics *s = &pool->stats;
    if (s->limit) snprintf(limit, sizeof limit, "limit %.2f MiB", s->limit / 1048576.0);
    else snprintf(limit, sizeof limit, "no limit");
    return ct__error(CT_ERR_OUT_OF_MEMORY,
                     "out of memory on %s: asked for %zu bytes (%.2f MiB) with %.2f MiB "
                     "allocated, %.2f MiB reserved, %s (%s); free tensors you no longer need, "
                     "use a smaller batch, or raise the limit (ct_set_memory_limit)",
                     name, request, request / 1048576.0, s->allocated / 1048576.0,
                     s->reserved / 1048576.0, limit, cause);
}

/* Ask the backend for a new segment, respecting the limit. Caller holds the lock. */
static ct_status new_segment(ct_pool *pool, ct_device device, const ct_backend *backend,
                             size_t rounded, void **out) {
    size_t limit = pool->stats.limit;
    if (limit && pool->stats.reserved + rounded > limit) return CT_ERR_OUT_OF_MEMORY;
    if (backend->raw_alloc(ct__physical_index(device), rounded, out) != CT_OK)
        return CT_ERR_OUT_OF_MEMORY;
    pool->stats.reserved += rounded;
    pool->stats.segments++;
    return CT_OK;
}

ct_status ct__pool_alloc(ct_device device, size_t size, void **out) {
    const ct_backend *backend = ct__backend(device.type);
    if (!backend) return ct_last_status();
    size_t class_index;
    size_t rounded = round_to_class(size, &class_index);
    ct_pool *pool = pool_of(device);
    pthread_mutex_lock(&pool->lock);
    if (rounded == 0) {
        pool->stats.oom_count++;
        ct_status s = out_of_memory(device, pool, size, "the size overflows");
        pthread_mutex_unlock(&pool->lock);
        return s;
    }
    cached_block *node = pool->classes[class_index];
    if (node) {
        pool->classes[class_index] = node->next;
        *out = node->ptr;
        node->next = pool->spare_nodes;
        pool->spare_nodes = node;
        pool->cached_bytes -= rounded;
        pool->stats.cache_hits++;
    } else if (new_segment(pool, device, backend, rounded, out) != CT_OK) {
        release_cache(pool, device, backend); /* free the cache and retry once */
        if (new_segment(pool, device, backend, rounded, out) != CT_OK) {
            pool->stats.oom_count++;
            ct_status s = out_of_memory(device, pool, size,
                                        pool->stats.limit &&
                                                pool->stats.reserved + rounded > pool->stats.limit
                                            ? "the request would pass the limit"
                                            : "the device refused the allocation");
            pthread_mutex_unlock(&pool->lock);
            return s;
        }
    }
    pool->stats.allocated += rounded;
    pool->stats.alloc_count++;
    if (pool->stats.allocated > pool->stats.peak_allocated)
        pool->stats.peak_allocated = pool->stats.allocated;
    pthread_mutex_unlock(&pool->lock);
    return CT_OK;
}

void ct__pool_free(ct_device device, void *ptr, size_t size) {
    if (!ptr) return;
    size_t class_index;
    size_t rounded = round_to_class(size, &class_index);
    ct_pool *pool = pool_of(device);
    pthread_mutex_lock(&pool->lock);
    cached_block *node = pool->spare_nodes;
    if (node) pool->spare_nodes = node->next;
    else node = ct__malloc(sizeof *node);
    pool->stats.allocated -= rounded;
    pool->stats.free_count++;
    if (node) {
        node->ptr = ptr;
        node->next = pool->classes[class_index];
        pool->classes[class_index] = node;
        pool->cached_bytes += rounded;
    } else {
        /* No memory for bookkeeping: give the block back rather than lose it. */
        const ct_backend *backend = ct__backend(device.type);
        if (backend) backend->raw_free(ct__physical_index(device), ptr, rounded);
        pool->stats.reserved -= rounded;
        pool->stats.segments--;
    }
    pthread_mutex_unlock(&pool->lock);
}

size_t ct__pool_live_bytes(ct_device device) {
    if ((unsigned)device.type > CT_DEVICE_CUDA || (unsigned)device.index >= CT_MAX_LOGICAL_DEVICES)
        return 0;
    ct_pool *pool = pool_of(device);
    pthread_mutex_lock(&pool->lock);
    size_t live = pool->stats.allocated;
    pthread_mutex_unlock(&pool->lock);
    return live;
}

static ct_status check_device(const char *op, ct_device device) {
    if (ct_device_check(device) != CT_OK) {
        char message[900];
        snprintf(message, sizeof message, "%s", ct_last_error());
        return ct__error(ct_last_status(), "%s: %s", op, message);
    }
    return CT_OK;
}

ct_status ct_memory_stats(ct_device device, ct_memory_statistics *out) {
    if (!out) return ct__error(CT_ERR_INVALID_ARG, "ct_memory_stats: out must not be NULL");
    if (check_device("ct_memory_stats", device) != CT_OK) return ct_last_status();
    ct_pool *pool = pool_of(device);
    pthread_mutex_lock(&pool->lock);
    *out = pool->stats;
    pthread_mutex_unlock(&pool->lock);
    return CT_OK;
}

ct_status ct_reset_peak_memory(ct_device device) {
    if (check_device("ct_reset_peak_memory", device) != CT_OK) return ct_last_status();
    ct_pool *pool = pool_of(device);
    pthread_mutex_lock(&pool->lock);
    pool->stats.peak_allocated = pool->stats.allocated;
    pthread_mutex_unlock(&pool->lock);
    return CT_OK;
}

ct_status ct_empty_cache(ct_device device) {
    if (check_device("ct_empty_cache", device) != CT_OK) return ct_last_status();
    const ct_backend *backend = ct__backend(device.type);
    if (!backend) return ct_last_status();
    ct_pool *pool = pool_of(device);
    pthread_mutex_lock(&pool->lock);
    release_cache(pool, device, backend);
    pthread_mutex_unlock(&pool->lock);
    return CT_OK;
}

ct_status ct_set_memory_limit(ct_device device, size_t bytes) {
    if (check_device("ct_set_memory_limit", device) != CT_OK) return ct_last_status();
    ct_pool *pool = pool_of(device);
    pthread_mutex_lock(&pool->lock);
    if (bytes && pool->stats.allocated > bytes) {
        size_t allocated = pool->stats.allocated;
        pthread_mutex_unlock(&pool->lock);
        return ct__error(CT_ERR_STATE,
                         "ct_set_memory_limit: %zu bytes are allocated already, more than the "
                         "limit of %zu; free tensors first or choose a larger limit",
                         allocated, bytes);
    }
    pool->stats.limit = bytes;
    pthread_mutex_unlock(&pool->lock);
    return CT_OK;
}

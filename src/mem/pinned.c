/* Pinned host memory: the cache of blocks from the CUDA plugin and the direct copies from and
 * into them (see pinned_impl.h). Blocks handed out are kept in a list so that a copy, which
 * sees only addresses, can tell pinned memory from pageable; the list is short (a loader
 * holds a few batches), and empty lists are not even locked. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/device_impl.h"
#include "core/error_impl.h"
#include "mem/pinned_impl.h"

#define ROUND ((size_t)4096) /* blocks are whole pages */

typedef struct pinned_block {
    char *ptr;
    size_t size; /* rounded */
    void *fence; /* the backend's fence of the last DMA from the block, or NULL */
    struct pinned_block *next;
} pinned_block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pinned_block *live;   /* handed out */
static pinned_block *cached; /* free, kept for reuse */
static pinned_block *stuck;  /* given up on: a copy from them did not end (never reused) */
static size_t cached_bytes;
static atomic_int live_count;                   /* read without the lock */
static const ct__backend_table *pinned_backend; /* set with the first block */
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static ct_status backend_for(const char *op, const ct__backend_table **out) {
    ct_device_type type;
    const char *why = ct__pinning_device_type(&type) ? ct__device_type_unavailable_reason(type)
                                                     : "no device type allocates it";
    if (why[0])
        return ct__error(CT_ERR_DEVICE_UNAVAILABLE,
                         "%s: pinned (page-locked) host memory needs a CUDA device, since the "
                         "CUDA driver allocates it and only GPUs copy from it by DMA; CUDA is "
                         "unavailable: %s; use ordinary CPU tensors here",
                         op, why);
    const ct__backend_table *b = ct__backend(type);
    if (!b) return ct_last_status();
    if (!b->pinned_alloc)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "%s: the CUDA plugin provides no pinned memory; rebuild it with this "
                         "version of ctensor",
                         op);
    *out = b;
    return CT_OK;
}

/* Waits for the block's copies, then gives it to the driver. A copy that did not end by the
 * device's deadline (CT_DEVICE_TIMEOUT) may still read the block: it is leaked, with its
 * fence, onto the stuck list, and a warning. */
static void release_block(pinned_block *block) {
    if (!pinned_backend->fence_done(block->fence, true)) {
        ct__log(CT_LOG_WARNING,
                "%zu bytes of pinned host memory leaked: a copy from them did not finish within "
                "CT_DEVICE_TIMEOUT and may still read them",
                block->size);
        pthread_mutex_lock(&lock);
        block->next = stuck;
        stuck = block;
        pthread_mutex_unlock(&lock);
        return;
    }
    pinned_backend->fence_free(block->fence);
    pinned_backend->pinned_free(block->ptr);
    ct__free_mem(block);
}

void ct__pinned_empty_cache(void) {
    pthread_mutex_lock(&lock);
    pinned_block *list = cached;
    cached = NULL;
    cached_bytes = 0;
    pthread_mutex_unlock(&lock);
    while (list) {
        pinned_block *next = list->next;
        release_block(list);
        list = next;
    }
}

/* At exit the cache goes back before the CUDA runtime's own teardown, which was registered
 * earlier (the plugin used CUDA before any block was made) and so runs later. */
static void register_exit(void) { atexit(ct__pinned_empty_cache); }

/* The smallest cached block of at least size and at most twice it whose copies ended, moved
 * to the live list (lock held); NULL when none. */
static pinned_block *take_cached(size_t size) {
    pinned_block **best = NULL;
    for (pinned_block **at = &cached; *at; at = &(*at)->next) {
        pinned_block *b = *at;
        if (b->size < size || b->size - size > size || (best && (*best)->size <= b->size)) continue;
        if (pinned_backend->fence_done(b->fence, false)) best = at;
    }
    if (!best) return NULL;
    pinned_block *b = *best;
    *best = b->next;
    cached_bytes -= b->size;
    return b;
}

static void add_live(pinned_block *b) {
    b->next = live;
    live = b;
    atomic_fetch_add(&live_count, 1);
}

/* A new block from the driver; once more after giving the cache back. */
static ct_status fresh_block(const char *op, const ct__backend_table *backend, size_t size,
                             pinned_block **out) {
    void *ptr = NULL;
    if (backend->pinned_alloc(size, &ptr) != CT_OK) {
        ct__pinned_empty_cache();
        if (backend->pinned_alloc(size, &ptr) != CT_OK)
            return ct__error(CT_ERR_OUT_OF_MEMORY,
                             "%s: the CUDA driver refused %zu bytes of pinned host memory "
                             "(page-locked memory is bounded by the RAM and `ulimit -l`); use "
                             "smaller tensors or ordinary (pageable) ones",
                             op, size);
    }
    pinned_block *b = ct__malloc(sizeof *b);
    if (!b) {
        backend->pinned_free(ptr);
        return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    }
    *b = (pinned_block){.ptr = ptr, .size = size};
    *out = b;
    return CT_OK;
}

ct_status ct__pinned_alloc(const char *op, size_t size, void **out) {
    const ct__backend_table *backend = NULL;
    if (backend_for(op, &backend) != CT_OK) return ct_last_status();
    if (size > SIZE_MAX - ROUND)
        return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: %zu bytes of pinned memory is too many", op,
                         size);
    size_t rounded = size ? (size + ROUND - 1) / ROUND * ROUND : ROUND;
    pthread_mutex_lock(&lock);
    pinned_backend = backend;
    pinned_block *b = take_cached(rounded);
    if (b) add_live(b);
    pthread_mutex_unlock(&lock);
    if (!b) {
        if (fresh_block(op, backend, rounded, &b) != CT_OK) return ct_last_status();
        pthread_once(&exit_once, register_exit);
        pthread_mutex_lock(&lock);
        add_live(b);
        pthread_mutex_unlock(&lock);
    }
    *out = b->ptr;
    return CT_OK;
}

void ct__pinned_free(void *ptr) {
    pthread_mutex_lock(&lock);
    pinned_block *b = NULL;
    for (pinned_block **at = &live; *at; at = &(*at)->next)
        if ((*at)->ptr == ptr) {
            b = *at;
            *at = b->next;
            atomic_fetch_sub(&live_count, 1);
            break;
        }
    bool keep = b && b->size <= CT_PINNED_CACHE_BYTES - cached_bytes;
    if (keep) {
        b->next = cached;
        cached = b;
        cached_bytes += b->size;
    }
    pthread_mutex_unlock(&lock);
    if (b && !keep) release_block(b);
}

/* The live block holding [p, p + size) (lock held), or NULL. */
static pinned_block *live_block_of(const void *p, size_t size) {
    uintptr_t start = (uintptr_t)p;
    for (pinned_block *b = live; b; b = b->next) {
        uintptr_t base = (uintptr_t)b->ptr;
        if (start >= base && start - base <= b->size && size <= b->size - (start - base)) return b;
    }
    return NULL;
}

bool ct__pinned_upload(const ct__backend_table *backend, int device, void *dst, const void *src,
                       size_t size, ct_status *status) {
    if (!backend->copy_from_pinned || atomic_load(&live_count) == 0) return false;
    pthread_mutex_lock(&lock);
    pinned_block *b = live_block_of(src, size);
    /* Under the lock: the fence is replaced when the block's device changes. */
    if (b) *status = backend->copy_from_pinned(device, dst, src, size, &b->fence);
    pthread_mutex_unlock(&lock);
    return b != NULL;
}

bool ct__pinned_download(const ct__backend_table *backend, int device, void *dst, const void *src,
                         size_t size, ct_status *status) {
    if (!backend->copy_to_pinned || atomic_load(&live_count) == 0) return false;
    pthread_mutex_lock(&lock);
    bool pinned = live_block_of(dst, size) != NULL;
    pthread_mutex_unlock(&lock);
    /* The caller holds the tensor, so the block stays live through the copy. */
    if (pinned) *status = backend->copy_to_pinned(device, dst, src, size);
    return pinned;
}

/* The caching allocator's core (see pool_impl.h): best-fit allocation with splitting,
 * freeing with merging, segments from the backend, out-of-memory handling with one retry
 * after giving the cache back, and the audit used by tests. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/device_impl.h"
#include "core/error_impl.h"
#include "mem/pool_state_impl.h"

#define ROUND 512u                      /* request granularity and minimum split */
#define SMALL_MAX ((size_t)1 << 20)     /* largest small-pool request */
#define SMALL_SEGMENT ((size_t)2 << 20) /* small-pool segment size */
#define MID_MAX ((size_t)10 << 20)      /* large requests below this share ... */
#define MID_SEGMENT ((size_t)20 << 20)  /* ... segments of this size */
#define LARGE_ROUND ((size_t)2 << 20)   /* larger segments are rounded to this */

static atomic_long raw_fail_countdown; /* 0: off; k: the kth raw allocation from now fails */
static atomic_int raw_fail_sticky;

long ct__pool_fail_raw_after(long n, int sticky) {
    atomic_store(&raw_fail_sticky, sticky);
    return atomic_exchange(&raw_fail_countdown, n);
}

static bool raw_failure_injected(void) {
    long k = atomic_load_explicit(&raw_fail_countdown, memory_order_relaxed);
    if (k == 0) return false;
    if (k == 1) {
        if (!atomic_load(&raw_fail_sticky)) atomic_store(&raw_fail_countdown, 0);
        return true;
    }
    atomic_fetch_sub(&raw_fail_countdown, 1);
    return false;
}

/* ---- nodes ---- */

static ct__block *node_get(ct__pool *pool) {
    ct__block *node = pool->spare;
    if (node)
        pool->spare = node->next;
    else
        node = ct__malloc(sizeof *node);
    if (node) memset(node, 0, sizeof *node);
    return node;
}

static void node_put(ct__pool *pool, ct__block *node) {
    node->next = pool->spare;
    pool->spare = node;
}

/* Free-index insertion and removal that keep the inactive-split count. */
static void free_insert(ct__pool *pool, ct__block *block) {
    block->counted_split = block->prev || block->next;
    if (block->counted_split) pool->inactive_split += block->size;
    ct__free_index_insert(&pool->free_blocks[block->kind], block);
}

static void free_remove(ct__pool *pool, ct__block *block) {
    if (block->counted_split) pool->inactive_split -= block->size;
    block->counted_split = false;
    ct__free_index_remove(&pool->free_blocks[block->kind], block);
}

/* ---- segments ---- */

ct_status ct__pool_new_segment(ct__pool *pool, ct_device device, const ct__backend_table *backend,
                               size_t size, int kind, const char **why) {
    size_t limit = pool->stats.limit;
    if (limit && (pool->stats.reserved > limit || size > limit - pool->stats.reserved)) {
        *why = "the request would pass the limit";
        return CT_ERR_OUT_OF_MEMORY;
    }
    void *ptr = NULL;
    int physical = ct__physical_index(device);
    if (raw_failure_injected() || backend->raw_alloc(physical, size, &ptr) != CT_OK) {
        *why = "the device refused the allocation";
        return CT_ERR_OUT_OF_MEMORY;
    }
    ct__block *head = node_get(pool);
    if (!head) {
        backend->raw_free(physical, ptr, size);
        *why = "out of host memory for the pool's bookkeeping";
        return CT_ERR_OUT_OF_MEMORY;
    }
    head->ptr = ptr;
    head->size = size;
    head->kind = (unsigned char)kind;
    head->physical = physical;
    head->seg_next = pool->segments;
    if (pool->segments) pool->segments->seg_prev = head;
    pool->segments = head;
    pool->stats.reserved += size;
    pool->stats.segments++;
    free_insert(pool, head);
    return CT_OK;
}

void ct__pool_release_cache(ct__pool *pool, const ct__backend_table *backend) {
    ct__pool_flush_fast(pool);
    ct__block *head = pool->segments;
    while (head) {
        ct__block *following = head->seg_next;
        if (!head->allocated && !head->next) { /* one free block spans the segment */
            free_remove(pool, head);
            if (head->seg_prev)
                head->seg_prev->seg_next = following;
            else
                pool->segments = following;
            if (following) following->seg_prev = head->seg_prev;
            backend->raw_free(head->physical, head->ptr, head->size);
            pool->stats.reserved -= head->size;
            pool->stats.segments--;
            ct__free_mem(head);
        }
        head = following;
    }
    while (pool->spare) { /* spare nodes are host memory the cache holds too */
        ct__block *node = pool->spare;
        pool->spare = node->next;
        ct__free_mem(node);
    }
}

/* The segment size for a request that no free block fits, or 0 on overflow. */
static size_t segment_size(const ct__pool *pool, size_t rounded, int kind) {
    size_t limit = pool->stats.limit, reserved = pool->stats.reserved;
    if (pool->no_growth && limit)
        return reserved < limit && limit - reserved >= rounded ? limit - reserved : rounded;
    size_t size = kind == CT_BLOCK_SMALL ? SMALL_SEGMENT
                  : rounded < MID_MAX    ? MID_SEGMENT
                                         : (rounded + LARGE_ROUND - 1) / LARGE_ROUND * LARGE_ROUND;
    if (size < rounded) return 0;
    /* Near the limit, a segment of just the request may still fit where the usual size
     * would not. */
    if (limit && (reserved > limit || size > limit - reserved)) size = rounded;
    return size;
}

/* ---- allocation ---- */

static ct__block *find_free(ct__pool *pool, size_t rounded, int kind) {
    ct__block *block = ct__free_index_best_fit(&pool->free_blocks[kind], rounded);
    /* Without growth, the reservation (a large segment) serves small requests too. */
    if (!block && kind == CT_BLOCK_SMALL && pool->no_growth)
        block = ct__free_index_best_fit(&pool->free_blocks[CT_BLOCK_LARGE], rounded);
    return block;
}

/* Count a block as handed out for a rounded request. */
static void hand_out(ct__pool *pool, ct__block *block, size_t rounded) {
    block->requested = rounded;
    ct_memory_statistics *s = &pool->stats;
    s->allocated += rounded;
    s->active += block->size;
    s->alloc_count++;
    if (s->allocated > s->peak_allocated) s->peak_allocated = s->allocated;
}

/* Hand out free block for a rounded request, splitting off a worthwhile rest. */
static void take_block(ct__pool *pool, ct__block *block, size_t rounded) {
    free_remove(pool, block);
    size_t rest = block->size - rounded;
    /* A large block keeps a rest of 1 MiB or less (useless to large requests), unless it
     * serves small requests too, as the reservation does without growth. */
    bool worth = rest >= ROUND && (block->kind == CT_BLOCK_SMALL || pool->no_growth ||
                                   rounded <= SMALL_MAX || rest > SMALL_MAX);
    ct__block *tail = worth ? node_get(pool) : NULL; /* no node: hand out the whole block */
    if (tail) {
        tail->ptr = block->ptr + rounded;
        tail->size = rest;
        tail->kind = block->kind;
        tail->prev = block;
        tail->next = block->next;
        if (block->next) block->next->prev = tail;
        block->next = tail;
        block->size = rounded;
        free_insert(pool, tail);
    }
    block->allocated = true;
    ct__live_insert(&pool->live, block);
    hand_out(pool, block, rounded);
}

static void fmt_mib(char *buf, size_t size, size_t bytes) {
    snprintf(buf, size, "%.2f MiB", (double)bytes / 1048576.0);
}

/* Record the out-of-memory error (lock held). */
static ct_status out_of_memory(ct__pool *pool, ct_device device, const ct__backend_table *backend,
                               size_t request, const char *why) {
    char name[32], alloc[32], reserved[32], limit[48], free_text[64], req[32];
    const ct_memory_statistics *s = &pool->stats;
    pool->stats.oom_count++;
    ct_device_str(device, name, sizeof name);
    fmt_mib(req, sizeof req, request);
    fmt_mib(alloc, sizeof alloc, s->allocated);
    fmt_mib(reserved, sizeof reserved, s->reserved);
    if (s->limit)
        snprintf(limit, sizeof limit, "limit %.2f MiB", (double)s->limit / 1048576.0);
    else
        snprintf(limit, sizeof limit, "no limit");
    ct_device_properties props;
    if (backend->properties(ct__physical_index(device), &props) == CT_OK && props.memory_free)
        snprintf(free_text, sizeof free_text, "%.2f MiB free on the device",
                 (double)props.memory_free / 1048576.0);
    else
        snprintf(free_text, sizeof free_text, "free memory on the device unknown");
    return ct__error(CT_ERR_OUT_OF_MEMORY,
                     "out of memory on %s: asked for %zu bytes (%s) with %s allocated, %s "
                     "reserved, %s, %s (%s); free tensors you no longer need, use a smaller "
                     "batch, or raise the limit with ct_set_memory_limit",
                     name, request, req, alloc, reserved, limit, free_text, why);
}

/* Find or make a block for a rounded request (lock held); *why on failure. */
static ct__block *obtain(ct__pool *pool, ct_device device, const ct__backend_table *backend,
                         size_t rounded, const char **why) {
    int kind = rounded <= SMALL_MAX ? CT_BLOCK_SMALL : CT_BLOCK_LARGE;
    ct__block *block = find_free(pool, rounded, kind);
    if (!block && pool->fast_bytes) {
        ct__pool_flush_fast(pool); /* merging the parked blocks may make room */
        block = find_free(pool, rounded, kind);
    }
    if (block) {
        pool->stats.cache_hits++;
        return block;
    }
    int seg_kind = pool->no_growth && pool->stats.limit ? CT_BLOCK_LARGE : kind;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt == 1) ct__pool_release_cache(pool, backend); /* then retry once */
        size_t size = segment_size(pool, rounded, kind);
        if (size == 0) {
            *why = "the size overflows";
            return NULL;
        }
        if (ct__pool_new_segment(pool, device, backend, size, seg_kind, why) == CT_OK)
            return find_free(pool, rounded, kind);
    }
    return NULL;
}

ct_status ct__pool_alloc(ct_device device, size_t size, void **out) {
    const ct__backend_table *backend = ct__backend(device.type);
    if (!backend) return ct_last_status();
    ct__pool *pool = ct__pool_of(device);
    size_t rounded = size <= ROUND             ? ROUND
                     : size > SIZE_MAX - ROUND ? 0 /* overflows */
                                               : (size + ROUND - 1) / ROUND * ROUND;
    const char *why = "the size overflows";
    ct__pool_lock(pool);
    ct__block *block = rounded && rounded <= CT_FAST_MAX ? pool->fast[rounded / ROUND - 1] : NULL;
    if (block) { /* a parked block of this size: still in the live table */
        pool->fast[rounded / ROUND - 1] = block->left;
        block->left = NULL;
        block->in_fast = false;
        pool->fast_bytes -= block->size;
        pool->stats.cache_hits++;
        hand_out(pool, block, rounded);
        *out = block->ptr;
        ct__pool_unlock(pool);
        return CT_OK;
    }
    if (rounded && !ct__live_reserve(&pool->live))
        why = "out of host memory for the pool's bookkeeping";
    else if (rounded)
        block = obtain(pool, device, backend, rounded, &why);
    if (!block) {
        ct_status status = out_of_memory(pool, device, backend, size, why);
        ct__pool_unlock(pool);
        return status;
    }
    take_block(pool, block, rounded);
    *out = block->ptr;
    ct__pool_unlock(pool);
    return CT_OK;
}

/* ---- freeing ---- */

/* Join right, a block just after left, into left; neither is in a free index. */
static void join(ct__pool *pool, ct__block *left, ct__block *right) {
    left->size += right->size;
    left->next = right->next;
    if (right->next) right->next->prev = left;
    node_put(pool, right);
}

/* Make a block that left the live table free: merge it with free neighbours and index it. */
static void release_block(ct__pool *pool, ct__block *block) {
    block->allocated = false;
    ct__block *next = block->next, *prev = block->prev;
    if (next && !next->allocated) {
        free_remove(pool, next);
        join(pool, block, next);
    }
    if (prev && !prev->allocated) {
        free_remove(pool, prev);
        join(pool, prev, block);
        block = prev;
    }
    free_insert(pool, block);
}

void ct__pool_flush_fast(ct__pool *pool) {
    for (unsigned bin = 0; bin < CT_FAST_BINS; bin++) {
        while (pool->fast[bin]) {
            ct__block *block = pool->fast[bin];
            pool->fast[bin] = block->left;
            block->left = NULL;
            block->in_fast = false;
            ct__live_take(&pool->live, block->ptr);
            release_block(pool, block);
        }
    }
    pool->fast_bytes = 0;
}

void ct__pool_free(ct_device device, void *ptr, size_t size) {
    (void)size; /* the block knows its size */
    if (!ptr) return;
    ct__pool *pool = ct__pool_of(device);
    ct__pool_lock(pool);
    ct__block *block = ct__live_find(&pool->live, ptr);
    if (block && !block->in_fast) {
        pool->stats.allocated -= block->requested;
        pool->stats.active -= block->size;
        pool->stats.free_count++;
        block->requested = 0;
        if (block->kind == CT_BLOCK_SMALL && block->size <= CT_FAST_MAX) {
            unsigned bin = (unsigned)(block->size / ROUND - 1);
            block->in_fast = true;
            block->left = pool->fast[bin];
            pool->fast[bin] = block;
            pool->fast_bytes += block->size;
        } else {
            ct__live_take(&pool->live, ptr);
            release_block(pool, block);
        }
    }
    ct__pool_unlock(pool);
}

size_t ct__pool_live_bytes(ct_device device) {
    if (!ct__device_type_known(device.type) || (unsigned)device.index >= CT_MAX_LOGICAL_DEVICES)
        return 0;
    ct__pool *pool = ct__pool_of(device);
    ct__pool_lock(pool);
    size_t live = pool->stats.allocated;
    ct__pool_unlock(pool);
    return live;
}

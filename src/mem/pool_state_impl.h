/* The state of one pool, shared by the allocator (pool.c) and its configuration and
 * reporting functions (pool_config.c). Everything here is guarded by the pool's lock. */
#ifndef CT_POOL_STATE_IMPL_H
#define CT_POOL_STATE_IMPL_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "backend/backend_impl.h"
#include "core/device_impl.h"
#include "mem/block_impl.h"
#include "mem/pool_impl.h"

/* Small blocks of up to CT_FAST_MAX bytes are parked on free in a LIFO bin of their size
 * without merging (dlmalloc's fast bins), so a loop that makes and drops small tensors
 * costs a hash lookup and a push/pop; bins are merged back when a request finds no free
 * block, before the pool grows, and when the cache is given back. */
#define CT_FAST_MAX 8192u
#define CT_FAST_BINS (CT_FAST_MAX / 512u)

typedef struct ct__pool {
    atomic_int lock;               /* 0 free, 1 held; zero-initialised pools are usable */
    bool no_growth;                /* reserve the limit up front instead of growing on demand */
    ct__free_index free_blocks[2]; /* by kind: CT_BLOCK_SMALL, CT_BLOCK_LARGE */
    ct__live_table live;
    ct__block *segments;           /* heads of the segments held */
    ct__block *spare;              /* unused nodes, linked by next */
    ct__block *fast[CT_FAST_BINS]; /* parked blocks by size / 512 - 1, linked by left */
    size_t fast_bytes;
    size_t inactive_split; /* free bytes in segments that also hold allocated blocks */
    ct_memory_statistics stats;
} ct__pool;

/* The pool of a logical device (the device must be valid); reads the environment the first
 * time any pool is asked for. */
ct__pool *ct__pool_of_slow(ct_device device);
extern ct__pool ct__pools[CT_DEVICE_SLOTS];
extern atomic_bool ct__pools_ready;
static inline ct__pool *ct__pool_of(ct_device device) {
    if (atomic_load_explicit(&ct__pools_ready, memory_order_acquire))
        return &ct__pools[ct__device_slot(device)];
    return ct__pool_of_slow(device);
}

/* A spinlock: the critical sections are short, and an uncontended exchange costs less than a
 * mutex. A waiter that spins long yields the processor to the holder. */
static inline void ct__pool_lock(ct__pool *pool) {
    if (!atomic_exchange_explicit(&pool->lock, 1, memory_order_acquire)) return;
    for (unsigned spins = 0;; spins++) {
        if (!atomic_load_explicit(&pool->lock, memory_order_relaxed) &&
            !atomic_exchange_explicit(&pool->lock, 1, memory_order_acquire))
            return;
        if (spins >= 100) sched_yield();
    }
}

static inline void ct__pool_unlock(ct__pool *pool) {
    atomic_store_explicit(&pool->lock, 0, memory_order_release);
}

/* Merge the parked blocks back into the free index (lock held). */
void ct__pool_flush_fast(ct__pool *pool);
/* Give every wholly free segment back to the backend (lock held). */
void ct__pool_release_cache(ct__pool *pool, const ct__backend_table *backend);
/* Make a segment of size bytes of the given kind and put it in the free index (lock held).
 * CT_OK, or CT_ERR_OUT_OF_MEMORY without a message; *why says which resource refused. */
ct_status ct__pool_new_segment(ct__pool *pool, ct_device device, const ct__backend_table *backend,
                               size_t size, int kind, const char **why);

#endif

/* The caching allocator: one pool per (logical) device, over the backend's raw allocations.
 * The same code serves the CPU, CUDA devices and (later) pinned host memory.
 *
 * Requests are rounded up to 512 bytes. Requests up to 1 MiB come from the small pool,
 * whose segments are 2 MiB; larger ones from the large pool, whose segments are 20 MiB for
 * requests under 10 MiB (so several mid-sized tensors share one) and the request rounded up
 * to 2 MiB above. A request takes the best-fitting free block (smallest not smaller than it)
 * and splits off the rest when the rest is worth keeping (512 bytes and up in the small pool,
 * more than 1 MiB in the large pool); a freed block merges with free neighbours, except that
 * blocks of up to 8 KiB are first parked for reuse by a request of their size (see
 * pool_state_impl.h). Whole free
 * segments go back to the backend on ct_empty_cache, on out-of-memory (then the request is
 * tried once more), and when a lower limit is set. Block addresses keep the alignment of the
 * backend's (64 bytes on the CPU): every offset in a segment is a multiple of 512.
 *
 * With growth off (ct_set_memory_growth, CT_MEMORY_GROWTH=false) and a limit, the pool
 * reserves all the room left under the limit as one segment and serves every request from
 * it, splitting at 512 bytes; it makes no other segment.
 *
 * Limits come from ct_set_memory_limit, ct_configure_logical_devices, or CT_MEMORY_LIMIT
 * (read on the first use of any pool). Thread-safe: one lock per pool. */
#ifndef CT_POOL_IMPL_H
#define CT_POOL_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "ctensor/ctensor.h"

/* Allocate size bytes on a logical device. On failure sets CT_ERR_OUT_OF_MEMORY (or the
 * backend's status) with a message naming the request, the pool's state and what to do. */
ct_status ct__pool_alloc(ct_device device, size_t size, void **out);
/* Return a block of size bytes (the size it was allocated with) to its pool. */
void ct__pool_free(ct_device device, void *ptr, size_t size);
/* Bytes live (allocated, rounded) on a logical device. */
size_t ct__pool_live_bytes(ct_device device);

/* The limit CT_MEMORY_LIMIT sets for a logical device: its own entry ("cpu:1=1GiB"), else
 * its physical device's ("cpu=2GiB", the same as "cpu:0=2GiB"), so that every logical device
 * of a split gets the whole limit, as every process of an mpirun does; 0: none. */
size_t ct__env_memory_limit(ct_device device);

/* ---- for tests ---- */

/* Make the nth raw (backend) allocation from now fail (n >= 1), and every later one while
 * sticky; 0 switches it off. Returns the countdown it replaces: 0 when the failure armed
 * before happened (or none was armed), k > 0 when it was still k allocations away. */
long ct__pool_fail_raw_after(long n, int sticky);

/* What ct__pool_audit found by walking every segment and block of a pool. */
typedef struct ct__pool_audit_result {
    size_t segment_bytes;   /* sum of segment sizes */
    size_t requested_bytes; /* sum of the rounded requests of allocated blocks */
    size_t active_bytes;    /* sum of the sizes of allocated blocks */
    size_t free_bytes;      /* sum of the sizes of free (indexed) blocks */
    size_t parked_bytes;    /* sum of the sizes of small blocks parked for reuse */
    size_t segments, allocated_blocks, free_blocks, parked_blocks;
} ct__pool_audit_result;

/* Check a pool's structure (blocks tile their segments, free neighbours are merged, the
 * indexes hold exactly the free and the allocated blocks, the statistics match the sums).
 * CT_OK, or CT_ERR_STATE with a message naming the first inconsistency. */
ct_status ct__pool_audit(ct_device device, ct__pool_audit_result *out);

/* Parse a CT_MEMORY_LIMIT value ("cuda:0=8GiB,cpu=2GiB") into limits indexed by device
 * slot (untouched where the text names no device). CT_OK, or CT_ERR_INVALID_ARG with a
 * message naming the variable and the bad part; the good parts are stored anyway. */
ct_status ct__parse_memory_limits(const char *text, size_t *limits, size_t count);
/* Parse a CT_MEMORY_GROWTH value: "true"/"1" or "false"/"0" (any case). CT_OK, or
 * CT_ERR_INVALID_ARG with a message naming the variable and the value. */
ct_status ct__parse_memory_growth(const char *text, bool *grow);

#endif

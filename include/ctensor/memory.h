/* ctensor — device memory pools: statistics, limits, growth and cache control.
 *
 * Each (logical) device has a caching pool: a best-fit allocator that splits large raw
 * allocations (segments) into blocks and merges freed neighbours; freed blocks are kept for
 * reuse, so the steady state of a training loop touches no fresh pages and makes no system
 * calls. Requests are rounded up to 512 bytes.
 *
 * Environment (read on the first use of any pool):
 *   CT_MEMORY_LIMIT   per-device limits, e.g. "cuda:0=8GiB,cpu=2GiB" (units B, KB, MB, GB,
 *                     KiB, MiB, GiB; none = bytes). A malformed part is ignored and reported
 *                     as CT_ERR_INVALID_ARG through ct_last_error() and the log hook.
 *                     ct_set_memory_limit and ct_configure_logical_devices' limits
 *                     override it; logical devices made without limits get their own
 *                     entry, else the whole limit of their physical device ("cpu=2GiB"
 *                     under --devices cpu:0,cpu:1 is 2 GiB each, as for mpirun's ranks).
 *   CT_MEMORY_GROWTH  "false" or "0": every pool with a limit reserves it up front.
 *
 * When a request does not fit, the pool gives its wholly free segments back and tries once
 * more; then it fails with CT_ERR_OUT_OF_MEMORY and a message naming the request, what is
 * allocated, reserved and free, and the limit. Nothing is left half-made. All functions
 * here are thread-safe. */
#ifndef CTENSOR_MEMORY_H
#define CTENSOR_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctensor/device.h"
#include "ctensor/export.h"
#include "ctensor/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_memory_statistics {
    size_t allocated;      /* bytes in live blocks (rounded sizes) */
    size_t reserved;       /* bytes held from the system, live or cached */
    size_t peak_allocated; /* high-water mark of allocated since start or reset */
    size_t limit;          /* 0 = none */
    uint64_t segments;     /* raw allocations held */
    uint64_t alloc_count;
    uint64_t free_count;
    uint64_t cache_hits; /* allocations served from the cache */
    uint64_t oom_count;
    /* the blocks and the cache */
    size_t active;             /* bytes in blocks handed out: allocated plus unsplit tails */
    size_t inactive_split;     /* free bytes inside segments that hold live blocks (with small
                                * blocks parked for reuse by requests of their size) */
    size_t largest_free_block; /* the largest request the cache can serve without growing */
    int growth;                /* 1: grows on demand; 0: the limit is reserved up front */
} ct_memory_statistics;

CT_API ct_status ct_memory_stats(ct_device device, ct_memory_statistics *out);
CT_API ct_status ct_reset_peak_memory(ct_device device);
/* Give cached (unused) blocks back to the system. */
CT_API ct_status ct_empty_cache(ct_device device);
/* Limit a device's pool to bytes (0 = none); CT_ERR_STATE when more is allocated now. When
 * more than bytes is reserved, the cache is given back first. */
CT_API ct_status ct_set_memory_limit(ct_device device, size_t bytes);
/* grow = true (the default): segments are made on demand up to the limit. grow = false:
 * the room left under the limit is reserved now as one segment (and again at the next
 * allocation after ct_empty_cache gave it back), and every request is served from it.
 * Removing the limit (ct_set_memory_limit(device, 0)) turns growth back on. CT_ERR_STATE
 * when the device has no limit; CT_ERR_OUT_OF_MEMORY when the reservation fails (growth
 * stays on). */
CT_API ct_status ct_set_memory_growth(ct_device device, bool grow);
/* A readable table of the pool's state (like torch.cuda.memory_summary); a new string to
 * release with ct_free, or NULL on failure. */
CT_API char *ct_memory_summary(ct_device device);

#ifdef __cplusplus
}
#endif
#endif

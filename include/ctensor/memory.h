/* ctensor — device memory pools: statistics and cache control.
 *
 * Each (logical) device has a caching pool; freed blocks are kept for reuse, so the
 * steady state of a training loop touches no fresh pages and makes no system calls. */
#ifndef CTENSOR_MEMORY_H
#define CTENSOR_MEMORY_H

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
    uint64_t cache_hits;   /* allocations served from the cache */
    uint64_t oom_count;
} ct_memory_statistics;

CT_API ct_status ct_memory_stats(ct_device device, ct_memory_statistics *out);
CT_API ct_status ct_reset_peak_memory(ct_device device);
/* Give cached (unused) blocks back to the system. */
CT_API ct_status ct_empty_cache(ct_device device);
/* Limit a device's pool to bytes (0 = none); CT_ERR_STATE when more is allocated now. */
CT_API ct_status ct_set_memory_limit(ct_device device, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif

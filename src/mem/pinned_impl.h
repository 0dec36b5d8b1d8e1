/* Pinned (page-locked) host memory: blocks from the CUDA plugin, cached for reuse, and the
 * direct copies from and into them (src/mem/pinned.c).
 *
 * cudaHostAlloc takes milliseconds, so a freed block is kept (up to CT_PINNED_CACHE_BYTES in
 * all) and handed to a later request of its size or up to twice smaller. A copy from a block to a
 * device returns before its DMA ends; the block keeps the backend's fence of that DMA, and a
 * cached block is neither reused nor given back before its fence is done. ct_empty_cache
 * gives the cache back, as does the end of the process.
 *
 * Pinned blocks are outside the device pools (like ct__host_tensor_new's memory): the CPU
 * pool's limit and statistics describe its own segments and are audited against them, and a
 * pinned block is not one of them. Thread-safe. */
#ifndef CT_PINNED_IMPL_H
#define CT_PINNED_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend_impl.h"

#define CT_PINNED_CACHE_BYTES ((size_t)256 << 20)

/* size bytes of pinned host memory. CT_ERR_DEVICE_UNAVAILABLE when CUDA is not (the message,
 * led by `op`, says why pinned memory needs it), CT_ERR_OUT_OF_MEMORY when the driver
 * refuses even after the cache was given back. */
ct_status ct__pinned_alloc(const char *op, size_t size, void **out);
/* Give back a block from ct__pinned_alloc (to the cache, or to the driver once its copies
 * ended). */
void ct__pinned_free(void *ptr);
/* Give every cached block back to the driver, waiting for its copies. */
void ct__pinned_empty_cache(void);

/* When src lies in a live pinned block: the copy of size bytes to dst on the backend's
 * physical device as one DMA that returns before it ends (the block keeps its fence), and
 * true with the copy's status in *status. false (nothing done) otherwise. */
bool ct__pinned_upload(const ct__backend_table *backend, int device, void *dst, const void *src,
                       size_t size, ct_status *status);
/* When dst lies in a live pinned block: the copy from the device into it as one DMA, waited
 * for, and true with its status in *status. false (nothing done) otherwise. */
bool ct__pinned_download(const ct__backend_table *backend, int device, void *dst, const void *src,
                         size_t size, ct_status *status);

#endif

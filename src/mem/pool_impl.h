/* The caching pool: one per (logical) device, over the backend's raw allocations.
 *
 * Sizes are rounded to a class (multiples of 512 bytes below 1 MiB, eight classes per power
 * of two above), freed blocks are cached per class and reused, so a loop that makes and
 * drops tensors of the same sizes touches no fresh memory. CPU blocks are 64-byte aligned.
 * Thread-safe. */
#ifndef CT_POOL_IMPL_H
#define CT_POOL_IMPL_H

#include <stddef.h>

#include "ctensor/ctensor.h"

/* Allocate size bytes on a logical device. On failure sets CT_ERR_OUT_OF_MEMORY (or the
 * backend's status) with a message naming the request, the pool's state and what to do. */
ct_status ct__pool_alloc(ct_device device, size_t size, void **out);
/* Return a block of size bytes (the size it was allocated with) to its pool. */
void ct__pool_free(ct_device device, void *ptr, size_t size);
/* Bytes live (allocated, rounded) on a logical device. */
size_t ct__pool_live_bytes(ct_device device);

#endif

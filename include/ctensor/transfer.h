/* ctensor — transfer accounting and the transfer guard.
 *
 * Every copy between host and device, or between two devices, goes through one function
 * that counts it and applies the guard. Explicit transfers are the ones the user asked
 * for (ct_to, ct_from_data, ct_copy_to_host); implicit ones are what the library moves on
 * the user's behalf (ct_item, printing, a host scalar joining a device op), and what a
 * device's kernels read back to the host, waiting for the device: their check of the values
 * of operands (cross-entropy targets, unless the caller vouches for them:
 * ct_cross_entropy_options.unchecked_targets; the indices of gather, index_select, index_add,
 * scatter_add and embeddings; integer pow and remainder), so that a bad value is an error
 * from the call that met it, and the norm ct_clip_grad_norm returns. Copies between
 * user memory and a CPU device are not transfers; copies between two logical CPU devices
 * are device-to-device transfers. */
#ifndef CTENSOR_TRANSFER_H
#define CTENSOR_TRANSFER_H

#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_transfer_direction {
    CT_TRANSFER_H2D = 0,
    CT_TRANSFER_D2H = 1,
    CT_TRANSFER_D2D = 2,
} ct_transfer_direction;

typedef struct ct_transfer_counter {
    uint64_t count;
    uint64_t bytes;
} ct_transfer_counter;

typedef struct ct_transfer_statistics {
    /* [direction][0 = explicit, 1 = implicit] */
    ct_transfer_counter counters[3][2];
    uint64_t refused; /* transfers the guard refused */
} ct_transfer_statistics;

/* Process-wide counters since start or the last reset. */
CT_API void ct_transfer_stats(ct_transfer_statistics *out);
CT_API void ct_transfer_stats_reset(void);

typedef enum ct_transfer_guard {
    CT_GUARD_ALLOW = 0,            /* count, say nothing */
    CT_GUARD_LOG = 1,              /* count and log every implicit transfer */
    CT_GUARD_DISALLOW_IMPLICIT = 2 /* refuse implicit transfers with CT_ERR_TRANSFER_GUARD */
} ct_transfer_guard;

/* The guard of this thread (default CT_GUARD_ALLOW, or CT_TRANSFER_GUARD=allow|log|disallow
 * from the environment; another value is one warning through the log hook, at the first
 * discovery of devices at the latest, and allow). Returns the previous setting. */
CT_API ct_transfer_guard ct_set_transfer_guard(ct_transfer_guard guard);
CT_API ct_transfer_guard ct_get_transfer_guard(void);

#ifdef __cplusplus
}
#endif
#endif

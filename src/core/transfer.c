/* Transfer accounting and the transfer guard (see include/ctensor/transfer.h). Counters are
 * process-wide atomics; the guard is per thread. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error_impl.h"
#include "core/transfer_impl.h"

static atomic_ullong counts[3][2];
static atomic_ullong bytes_moved[3][2];
static atomic_ullong refused;

static _Thread_local int guard_mode = -1; /* -1: read CT_TRANSFER_GUARD on first use */

static const char *const direction_names[3] = {"host-to-device", "device-to-host",
                                               "device-to-device"};

ct_transfer_guard ct_get_transfer_guard(void) {
    if (guard_mode < 0) {
        const char *env = getenv("CT_TRANSFER_GUARD");
        guard_mode = CT_GUARD_ALLOW;
        if (env && strcmp(env, "log") == 0) guard_mode = CT_GUARD_LOG;
        if (env && strcmp(env, "disallow") == 0) guard_mode = CT_GUARD_DISALLOW_IMPLICIT;
        /* Garbage is said once per process (each thread reads the variable), not obeyed. */
        static atomic_bool warned;
        if (env && *env && strcmp(env, "allow") && strcmp(env, "log") && strcmp(env, "disallow") &&
            !atomic_exchange(&warned, true))
            ct__log(CT_LOG_WARNING,
                    "CT_TRANSFER_GUARD=\"%.64s\" is not a transfer guard; expected allow, log or "
                    "disallow: using allow",
                    env);
    }
    return (ct_transfer_guard)guard_mode;
}

ct_transfer_guard ct_set_transfer_guard(ct_transfer_guard guard) {
    ct_transfer_guard previous = ct_get_transfer_guard();
    guard_mode = (int)guard;
    return previous;
}

static void count(ct_transfer_direction direction, size_t bytes, bool implicit) {
    atomic_fetch_add(&counts[direction][implicit], 1);
    atomic_fetch_add(&bytes_moved[direction][implicit], bytes);
}

ct_status ct__transfer_account(ct_transfer_direction direction, size_t bytes, bool implicit,
                               const char *what) {
    ct_transfer_guard guard = ct_get_transfer_guard();
    if (implicit && guard == CT_GUARD_DISALLOW_IMPLICIT) {
        atomic_fetch_add(&refused, 1);
        return ct__error(CT_ERR_TRANSFER_GUARD,
                         "%s: implicit %s transfer of %zu bytes refused by the transfer guard "
                         "(CT_GUARD_DISALLOW_IMPLICIT); move the data explicitly with ct_to() "
                         "or ct_copy_to_host(), or relax the guard with ct_set_transfer_guard()",
                         what, direction_names[direction], bytes);
    }
    if (implicit && guard == CT_GUARD_LOG)
        ct__log(CT_LOG_WARNING, "%s: implicit %s transfer of %zu bytes", what,
                direction_names[direction], bytes);
    count(direction, bytes, implicit);
    return CT_OK;
}

ct_status ct__transfer_account_readback(ct_device device, size_t bytes, const char *what) {
    if (device.type == CT_DEVICE_CPU) return CT_OK;
    ct_transfer_guard guard = ct_get_transfer_guard();
    char where[64] = ""; /* named only for a message: this runs once a training step */
    if (guard != CT_GUARD_ALLOW) ct_device_str(device, where, sizeof where);
    if (guard == CT_GUARD_DISALLOW_IMPLICIT) {
        atomic_fetch_add(&refused, 1);
        return ct__error(CT_ERR_TRANSFER_GUARD,
                         "%s on %s reads %zu bytes back to the host and waits for the device: "
                         "an implicit device-to-host transfer, refused by the transfer guard "
                         "(CT_GUARD_DISALLOW_IMPLICIT); relax the guard with "
                         "ct_set_transfer_guard() around the call",
                         what, where, bytes);
    }
    if (guard == CT_GUARD_LOG)
        ct__log(CT_LOG_WARNING, "%s on %s: implicit device-to-host transfer of %zu bytes", what,
                where, bytes);
    count(CT_TRANSFER_D2H, bytes, true);
    return CT_OK;
}

void ct_transfer_stats(ct_transfer_statistics *out) {
    if (!out) return;
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 2; k++) {
            out->counters[d][k].count = atomic_load(&counts[d][k]);
            out->counters[d][k].bytes = atomic_load(&bytes_moved[d][k]);
        }
    out->refused = atomic_load(&refused);
}

void ct_transfer_stats_reset(void) {
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 2; k++) {
            atomic_store(&counts[d][k], 0);
            atomic_store(&bytes_moved[d][k], 0);
        }
    atomic_store(&refused, 0);
}

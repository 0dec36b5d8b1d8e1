/* The profiler's core (core/profile.c; the public side in ctensor/profile.h): whether the
 * calling thread profiles, its clock, and where kernels and transfers add their time. The
 * kernel tables that time each kernel are backend/profile_kernels.c's. */
#ifndef CT_PROFILE_IMPL_H
#define CT_PROFILE_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "ctensor/ctensor.h"
#include "ctensor/profile.h"

/* Non-zero while some thread profiles: the one branch a kernel lookup pays when off. */
extern atomic_int ct__profile_on;

static inline bool ct__profile_maybe(void) {
    return __builtin_expect(atomic_load_explicit(&ct__profile_on, memory_order_relaxed), 0);
}

/* Whether the calling thread profiles. */
bool ct__profile_here(void);

/* A monotonic clock in seconds. */
double ct__profile_now(void);

/* Add one call of kind to the calling thread's current phase: host seconds to return,
 * device seconds until the device finished it (device_timed: it ran on a device backend and
 * was waited for). Nothing when the thread does not profile. */
void ct__profile_add(ct_profile_kind kind, double host_seconds, double device_seconds,
                     bool device_timed);

#endif

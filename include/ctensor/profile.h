/* ctensor — where the time goes: a profiler of the kernels a thread runs, by kind of work and
 * by phase of a training step.
 *
 * Off by default. ct_profile_begin() starts it on the calling thread; from then on every
 * kernel that thread runs (through any backend) is counted under its kind (convolution,
 * matrix product, normalisation, elementwise, ...) and under the phase the thread is in
 * (ct_profile_set_phase; ct_backward marks its own pass as the backward phase and the
 * optimisers their step and zero_grad as the optimiser phase), and so is every copy between
 * host and device. ct_profile_end() stops it; ct_profile_report() reads what it counted.
 *
 * Host and device time: a kernel's host time is how long its call took to return (on the
 * CPU, its whole run; on a device, the time to issue it). On a device backend the profiler
 * then waits for the device, so that the kernel's device time is its own, from the call until
 * the device finished it: profiled steps are slower than unprofiled ones by these waits, and
 * the split between kinds is what a profile is for. On the CPU device time equals host time.
 * Kernels that other threads run (a data loader's workers) are not counted. Off, the
 * profiler costs one predictable branch per kernel lookup. One thread profiles at a time. */
#ifndef CTENSOR_PROFILE_H
#define CTENSOR_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The phases of a training step. Wall time between ct_profile_begin() and ct_profile_end()
 * goes to the phase the thread was in, so the phases' times add up to the whole. */
typedef enum ct_profile_phase {
    CT_PROFILE_OTHER = 0, /* outside the phases below (the start; logging; evaluation) */
    CT_PROFILE_FORWARD,   /* the forward pass and the loss */
    CT_PROFILE_BACKWARD,  /* ct_backward and ct_backward_with set it while they run */
    CT_PROFILE_OPTIMIZER, /* ct_optimizer_step and ct_optimizer_zero_grad set it */
    CT_PROFILE_DATA,      /* waiting for the next batch */
    CT_PROFILE_PHASES
} ct_profile_phase;

/* Kinds of kernel work. */
typedef enum ct_profile_kind {
    CT_PROFILE_CONV = 0,    /* convolution forward and backward */
    CT_PROFILE_MATMUL,      /* matrix products */
    CT_PROFILE_NORM,        /* batch and layer normalisation, forward and backward */
    CT_PROFILE_POOL,        /* pooling forward and backward */
    CT_PROFILE_ELEMENTWISE, /* unary, binary, where, fill, iota, random draws, dropout */
    CT_PROFILE_REDUCTION,   /* sums, means, maxima, argmax ... over axes */
    CT_PROFILE_LOSS,        /* softmax and cross-entropy, forward and backward */
    CT_PROFILE_UPDATE,      /* the optimisers' fused updates, gradient norms, scaling */
    CT_PROFILE_COPY,        /* copies and casts on a device */
    CT_PROFILE_TRANSFER,    /* copies between host and device, or between devices */
    CT_PROFILE_INDEX,       /* gather, index_add (embeddings, indexing) */
    CT_PROFILE_SORT,        /* argsort, cumsum, cumprod */
    CT_PROFILE_KINDS
} ct_profile_kind;

typedef struct ct_profile_entry {
    int64_t calls;
    double host_seconds;   /* the calls' time to return */
    double device_seconds; /* until the device finished them (equal to host_seconds on the CPU) */
} ct_profile_entry;

typedef struct ct_profile_stats {
    double seconds;                          /* begin to end (to now while it runs) */
    double phase_seconds[CT_PROFILE_PHASES]; /* wall time in each phase; they add up to seconds */
    ct_profile_entry entries[CT_PROFILE_PHASES][CT_PROFILE_KINDS]; /* each phase's kernels */
    bool device_timed; /* a kernel ran on a device backend and was waited for */
} ct_profile_stats;

/* Start profiling on the calling thread, from zero (phase CT_PROFILE_OTHER).
 * CT_ERR_STATE when another thread profiles. */
CT_API ct_status ct_profile_begin(void);
/* Stop profiling (what it counted stays readable until the next begin). CT_ERR_STATE when
 * the calling thread does not profile. */
CT_API ct_status ct_profile_end(void);
/* What the profile counted since the last begin (zeros when none ran). */
CT_API void ct_profile_report(ct_profile_stats *out);
/* Enter phase on the calling thread and return the one it was in; nothing (and
 * CT_PROFILE_OTHER) when the thread does not profile. An out-of-range phase counts as
 * CT_PROFILE_OTHER. */
CT_API ct_profile_phase ct_profile_set_phase(ct_profile_phase phase);
/* Short names for tables: "conv", "matmul", ...; "forward", "backward", ... ("?" when out
 * of range). */
CT_API const char *ct_profile_kind_name(ct_profile_kind kind);
CT_API const char *ct_profile_phase_name(ct_profile_phase phase);

#ifdef __cplusplus
}
#endif
#endif

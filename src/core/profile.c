/* The profiler (ctensor/profile.h): one profiling thread at a time, its phases' wall time and
 * its kernels' calls and times by phase and kind. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "core/error_impl.h"
#include "core/profile_impl.h"

atomic_int ct__profile_on;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local bool profiling_here;
static ct_profile_stats stats;      /* what the profile counted; under lock */
static ct_profile_phase phase;      /* the profiling thread's phase */
static double started, phase_start; /* when the profile and the current phase began */
static bool running;

double ct__profile_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool ct__profile_here(void) { return profiling_here; }

ct_status ct_profile_begin(void) {
    pthread_mutex_lock(&lock);
    if (running && !profiling_here) {
        pthread_mutex_unlock(&lock);
        return ct__error(CT_ERR_STATE, "ct_profile_begin: another thread profiles; one thread "
                                       "profiles at a time (ct_profile_end there first)");
    }
    memset(&stats, 0, sizeof stats);
    phase = CT_PROFILE_OTHER;
    started = phase_start = ct__profile_now();
    running = profiling_here = true;
    atomic_store(&ct__profile_on, 1);
    pthread_mutex_unlock(&lock);
    return CT_OK;
}

/* Close the current phase's wall time at `now` (under lock). */
static void close_phase(double now) {
    stats.phase_seconds[phase] += now - phase_start;
    phase_start = now;
    stats.seconds = now - started;
}

ct_status ct_profile_end(void) {
    if (!profiling_here)
        return ct__error(CT_ERR_STATE, "ct_profile_end: this thread does not profile; call "
                                       "ct_profile_begin first");
    pthread_mutex_lock(&lock);
    close_phase(ct__profile_now());
    running = profiling_here = false;
    atomic_store(&ct__profile_on, 0);
    pthread_mutex_unlock(&lock);
    return CT_OK;
}

void ct_profile_report(ct_profile_stats *out) {
    if (!out) return;
    pthread_mutex_lock(&lock);
    if (running) close_phase(ct__profile_now());
    *out = stats;
    pthread_mutex_unlock(&lock);
}

ct_profile_phase ct_profile_set_phase(ct_profile_phase next) {
    if (!profiling_here) return CT_PROFILE_OTHER;
    if ((unsigned)next >= CT_PROFILE_PHASES) next = CT_PROFILE_OTHER;
    pthread_mutex_lock(&lock);
    ct_profile_phase previous = phase;
    close_phase(ct__profile_now());
    phase = next;
    pthread_mutex_unlock(&lock);
    return previous;
}

void ct__profile_add(ct_profile_kind kind, double host_seconds, double device_seconds,
                     bool device_timed) {
    if (!profiling_here || (unsigned)kind >= CT_PROFILE_KINDS) return;
    pthread_mutex_lock(&lock);
    ct_profile_entry *e = &stats.entries[phase][kind];
    e->calls++;
    e->host_seconds += host_seconds;
    e->device_seconds += device_seconds;
    stats.device_timed |= device_timed;
    pthread_mutex_unlock(&lock);
}

const char *ct_profile_kind_name(ct_profile_kind kind) {
    static const char *const names[CT_PROFILE_KINDS] = {
        [CT_PROFILE_CONV] = "conv",
        [CT_PROFILE_MATMUL] = "matmul",
        [CT_PROFILE_NORM] = "norm",
        [CT_PROFILE_POOL] = "pool",
        [CT_PROFILE_ELEMENTWISE] = "elementwise",
        [CT_PROFILE_REDUCTION] = "reduction",
        [CT_PROFILE_LOSS] = "loss",
        [CT_PROFILE_UPDATE] = "optimizer update",
        [CT_PROFILE_COPY] = "copy",
        [CT_PROFILE_TRANSFER] = "transfer",
        [CT_PROFILE_INDEX] = "index",
        [CT_PROFILE_SORT] = "sort",
    };
    return (unsigned)kind < CT_PROFILE_KINDS ? names[kind] : "?";
}

const char *ct_profile_phase_name(ct_profile_phase p) {
    static const char *const names[CT_PROFILE_PHASES] = {
        [CT_PROFILE_OTHER] = "other",       [CT_PROFILE_FORWARD] = "forward",
        [CT_PROFILE_BACKWARD] = "backward", [CT_PROFILE_OPTIMIZER] = "optimizer",
        [CT_PROFILE_DATA] = "data wait",
    };
    return (unsigned)p < CT_PROFILE_PHASES ? names[p] : "?";
}

/* The bounded device wait of device_wait_impl.h. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/device_wait_impl.h"

/* Looks without a nap for this long, then naps doubling from the first to the longest. */
#define SPIN_SECONDS 20e-6
#define FIRST_NAP 10e-6
#define LONGEST_NAP 250e-6

static double smaller(double a, double b) { return a < b ? a : b; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double ct__device_timeout(const ct__plugin_host *host) {
    static atomic_bool warned;
    const char *env = getenv("CT_DEVICE_TIMEOUT");
    if (!env || !*env) return CT__DEVICE_DEFAULT_TIMEOUT;
    char *end;
    double seconds = strtod(env, &end);
    if (!*end && seconds > 0 && isfinite(seconds)) return seconds;
    if (host && !atomic_exchange(&warned, true)) {
        char message[256];
        snprintf(message, sizeof message,
                 "CT_DEVICE_TIMEOUT=\"%.64s\" is not a positive number of seconds; using %g", env,
                 CT__DEVICE_DEFAULT_TIMEOUT);
        host->log(CT_LOG_WARNING, message);
    }
    return CT__DEVICE_DEFAULT_TIMEOUT;
}

void ct__device_nap(double seconds) {
    if (!(seconds > 0)) return;
    if (seconds > 1) seconds = 1;
    struct timespec ts = {0, (long)(seconds * 1e9)};
    nanosleep(&ts, NULL);
}

ct__wait_state ct__device_wait(ct__wait_look look, void *arg, const ct__plugin_host *host,
                               double *out_timeout) {
    *out_timeout = 0;
    ct__wait_state state = look(arg, 0);
    if (state != CT__WAIT_PENDING) return state;
    double timeout = *out_timeout = ct__device_timeout(host);
    double start = now(), nap = 0;
    for (;;) {
        double elapsed = now() - start;
        if (elapsed >= timeout) return CT__WAIT_PENDING;
        if (elapsed >= SPIN_SECONDS) nap = nap ? smaller(nap * 2, LONGEST_NAP) : FIRST_NAP;
        state = look(arg, smaller(nap, timeout - elapsed));
        if (state != CT__WAIT_PENDING) return state;
    }
}

ct_status ct__device_timed_out(const ct__plugin_host *host, const char *device, const char *what,
                               double timeout) {
    char message[512];
    snprintf(message, sizeof message,
             "%s: %s did not finish within %g s (CT_DEVICE_TIMEOUT): the device's queued work "
             "is stuck (a kernel that does not end, or a lost device); the work stays queued, "
             "so later calls on the device may fail the same way; raise CT_DEVICE_TIMEOUT if "
             "it is only slow",
             device, what, timeout);
    return host ? host->set_error(CT_ERR_BACKEND, message) : CT_ERR_BACKEND;
}

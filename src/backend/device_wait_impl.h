/* A bounded wait for a device's asynchronous work (a stream, an event, a queue), shared by the
 * device plugins: the CUDA plugin (libctensor_cuda.so) and the fake GPU the tests load, each
 * of which compiles device_wait.c. No wait of the host for a device is unbounded: a stream
 * that does not finish (a kernel that never ends, a lost device) fails the wait at the
 * deadline, CT_DEVICE_TIMEOUT seconds, with CT_ERR_BACKEND naming what was waited for. */
#ifndef CT_DEVICE_WAIT_IMPL_H
#define CT_DEVICE_WAIT_IMPL_H

#include "backend/plugin_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The deadline of a device wait when CT_DEVICE_TIMEOUT is unset, as CT_COMM_TIMEOUT's. */
#define CT__DEVICE_DEFAULT_TIMEOUT 300.0

typedef enum { CT__WAIT_DONE, CT__WAIT_PENDING, CT__WAIT_FAILED } ct__wait_state;

/* One look at what a wait waits for, after waiting for it at most `nap` seconds (0: a look
 * that does not wait): DONE, PENDING, or FAILED with the failure recorded by the look. */
typedef ct__wait_state (*ct__wait_look)(void *arg, double nap);

/* CT_DEVICE_TIMEOUT when it is a positive number of seconds, else the default (a value that
 * is not one is warned about once through host->log; host may be NULL). Read at each call,
 * so a program may change it between waits. */
double ct__device_timeout(const ct__plugin_host *host);

/* Waits until look says DONE or FAILED: one look without a nap first (the fast path: work
 * already done costs that look alone), then looks without naps for a few microseconds, then
 * naps that grow to at most 250 us, until ct__device_timeout(host) seconds have passed (read
 * only once the first look found the work pending; *timeout gets it, or 0). Returns the last
 * look's state: PENDING means the deadline passed with the work still running, and nothing
 * is recorded (the caller names what it waited for, with ct__device_timed_out). */
ct__wait_state ct__device_wait(ct__wait_look look, void *arg, const ct__plugin_host *host,
                               double *timeout);

/* Records through host CT_ERR_BACKEND for a wait that passed its deadline: "<device>: <what>
 * did not finish within <timeout> s (CT_DEVICE_TIMEOUT) ...". Returns CT_ERR_BACKEND. */
ct_status ct__device_timed_out(const ct__plugin_host *host, const char *device, const char *what,
                               double timeout);

/* Sleeps `seconds` (at most a second): the nap of a look that cannot be woken. */
void ct__device_nap(double seconds);

#ifdef __cplusplus
}
#endif
#endif

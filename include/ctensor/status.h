/* ctensor — status codes and the thread-local error message.
 *
 * Every failure has a ct_status and a message. Functions that make a tensor return NULL on
 * failure; a NULL tensor argument makes an op return NULL without overwriting the first
 * error, so a chain of calls can be checked once at its end. Functions that make no tensor
 * return a ct_status. The library never aborts, exits or prints on a user's error. */
#ifndef CTENSOR_STATUS_H
#define CTENSOR_STATUS_H

#include "ctensor/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The table of codes: X(code, value, short description). */
#define CT_STATUS_MAP(X)                                                                           \
    X(CT_OK, 0, "no error")                                                                        \
    X(CT_ERR_INVALID_ARG, 1, "invalid argument")                                                   \
    X(CT_ERR_SHAPE, 2, "shape mismatch")                                                           \
    X(CT_ERR_DTYPE, 3, "unsupported or mismatched dtype")                                          \
    X(CT_ERR_DEVICE_MISMATCH, 4, "tensors on different devices")                                   \
    X(CT_ERR_DEVICE_UNAVAILABLE, 5, "device unavailable")                                          \
    X(CT_ERR_OUT_OF_MEMORY, 6, "out of memory")                                                    \
    X(CT_ERR_TRANSFER_GUARD, 7, "transfer refused by the transfer guard")                          \
    X(CT_ERR_IO, 8, "input/output error")                                                          \
    X(CT_ERR_FORMAT, 9, "malformed data")                                                          \
    X(CT_ERR_BACKEND, 10, "backend failure")                                                       \
    X(CT_ERR_UNSUPPORTED, 11, "unsupported operation")                                             \
    X(CT_ERR_STATE, 12, "call not allowed in the current state")                                   \
    X(CT_ERR_COMM, 13, "communication failure")

typedef enum ct_status {
#define CT_STATUS_ENUM_(code, value, text) code = value,
    CT_STATUS_MAP(CT_STATUS_ENUM_)
#undef CT_STATUS_ENUM_
} ct_status;

/* The status of the last failure on this thread (CT_OK when none since ct_clear_error). */
CT_API ct_status ct_last_status(void);

/* The message of the last failure on this thread: what was expected, what was given, and
 * what to do. Never NULL; "" when there is none. Valid until the next failing call on this
 * thread. */
CT_API const char *ct_last_error(void);

/* "CT_ERR_SHAPE" for CT_ERR_SHAPE; "CT_UNKNOWN_STATUS" for a value outside the table. */
CT_API const char *ct_status_name(ct_status status);

/* A short description of a status ("shape mismatch"). */
CT_API const char *ct_status_description(ct_status status);

/* Forget the last failure on this thread. */
CT_API void ct_clear_error(void);

/* Log levels for the log hook. */
typedef enum ct_log_level { CT_LOG_DEBUG = 0, CT_LOG_INFO = 1, CT_LOG_WARNING = 2 } ct_log_level;

typedef void (*ct_log_fn)(ct_log_level level, const char *message, void *user_data);

/* Route the library's warnings (soft placement, the transfer guard in CT_GUARD_LOG mode)
 * to fn. NULL restores the default, which writes warnings to stderr. Not thread-safe
 * against concurrent logging: set it at start-up. */
CT_API void ct_set_log_hook(ct_log_fn fn, void *user_data);

/* Release a string the library allocated (ct_format). NULL is ignored. */
CT_API void ct_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif

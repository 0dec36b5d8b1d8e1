/* Internal error helpers: set the thread-local status and message in one call.
 * ct__fail returns NULL so tensor-making functions can `return ct__fail(...)`. */
#ifndef CT_ERROR_IMPL_H
#define CT_ERROR_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "ctensor/status.h"

#if defined(__GNUC__)
#define CT_PRINTF_(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#else
#define CT_PRINTF_(fmt_index, args_index)
#endif

/* Record status and a printf-style message; returns status. */
ct_status ct__error(ct_status status, const char *fmt, ...) CT_PRINTF_(2, 3);
/* Record status and message; returns NULL. */
void *ct__fail(ct_status status, const char *fmt, ...) CT_PRINTF_(2, 3);
/* Record that argument `position` of op was NULL (CT_ERR_INVALID_ARG), keeping an earlier
 * error (NULL propagation); returns NULL. */
void *ct__null_arg(const char *op, int position);
/* The thread's last failure, set aside while the library asks a backend a question whose
 * "no" may come with an error (whether cuDNN has a plan), then put back: what the caller
 * sees as the last failure is not a question the library asked itself. */
#define CT_MESSAGE_CAPACITY 2048
typedef struct ct__kept_error {
    ct_status status;
    char message[CT_MESSAGE_CAPACITY];
} ct__kept_error;
void ct__error_keep(ct__kept_error *kept);
void ct__error_put_back(const ct__kept_error *kept);
/* Send a warning through the log hook. */
void ct__log(ct_log_level level, const char *fmt, ...) CT_PRINTF_(2, 3);

/* Host allocation seam: every host allocation of the library goes through these, so tests
 * can make the Nth one fail (ct__malloc_fail_after). They do not set an error. */
void *ct__malloc(size_t size);
void *ct__calloc(size_t count, size_t size);
void *ct__realloc(void *ptr, size_t size);
void ct__free_mem(void *ptr);
/* A 64-byte aligned block for tensors' data (one of 2 MiB or more on huge pages where the
 * kernel allows), freed with ct__free_mem; ct__aligned_host_block is the same without the
 * injected failures, for the CPU backend's raw memory, whose failures the pool injects. */
void *ct__host_alloc_large(size_t size);
void *ct__aligned_host_block(size_t size);
/* Make the nth allocation from now fail (n >= 1), and every later one while sticky;
 * n = 0 switches injection off. For tests. */
void ct__malloc_fail_after(long n, int sticky);

/* Checked size arithmetic: false on overflow. */
static inline int ct__mul_overflow_size(size_t a, size_t b, size_t *out) {
    return __builtin_mul_overflow(a, b, out);
}
static inline int ct__mul_overflow_i64(int64_t a, int64_t b, int64_t *out) {
    return __builtin_mul_overflow(a, b, out);
}

#endif

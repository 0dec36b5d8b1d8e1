/* Status codes, the thread-local last error, the log hook and the host allocation seam. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/error_impl.h"

static _Thread_local ct_status tls_status = CT_OK;
static _Thread_local char tls_message[CT_MESSAGE_CAPACITY];

ct_status ct_last_status(void) { return tls_status; }

const char *ct_last_error(void) { return tls_status == CT_OK ? "" : tls_message; }

void ct_clear_error(void) {
    tls_status = CT_OK;
    tls_message[0] = '\0';
}

/* Only a failure's message is kept: with none, ct_last_error reads "" whatever the buffer. */
void ct__error_keep(ct__kept_error *kept) {
    kept->status = tls_status;
    if (tls_status != CT_OK) snprintf(kept->message, sizeof kept->message, "%s", tls_message);
}

void ct__error_put_back(const ct__kept_error *kept) {
    tls_status = kept->status;
    if (kept->status != CT_OK) snprintf(tls_message, sizeof tls_message, "%s", kept->message);
}

const char *ct_status_name(ct_status status) {
    switch (status) {
#define CT_STATUS_NAME_(code, value, text)                                                         \
    case code: return #code;
        CT_STATUS_MAP(CT_STATUS_NAME_)
#undef CT_STATUS_NAME_
    }
    return "CT_UNKNOWN_STATUS";
}

const char *ct_status_description(ct_status status) {
    switch (status) {
#define CT_STATUS_TEXT_(code, value, text)                                                         \
    case code: return text;
        CT_STATUS_MAP(CT_STATUS_TEXT_)
#undef CT_STATUS_TEXT_
    }
    return "unknown status";
}

static void set_error_v(ct_status status, const char *fmt, va_list ap) {
    tls_status = status;
    vsnprintf(tls_message, sizeof tls_message, fmt, ap);
}

ct_status ct__error(ct_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

void *ct__fail(ct_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error_v(status, fmt, ap);
    va_end(ap);
    return NULL;
}

void *ct__null_arg(const char *op, int position) {
    if (ct_last_status() == CT_OK)
        ct__error(CT_ERR_INVALID_ARG, "%s: argument %d is NULL", op, position);
    return NULL;
}

/* ---- log hook ---- */

static void default_log(ct_log_level level, const char *message, void *user_data) {
    (void)user_data;
    if (level >= CT_LOG_WARNING) fprintf(stderr, "ctensor: warning: %s\n", message);
}

static ct_log_fn log_fn = default_log;
static void *log_user_data;

void ct_set_log_hook(ct_log_fn fn, void *user_data) {
    log_fn = fn ? fn : default_log;
    log_user_data = fn ? user_data : NULL;
}

void ct__log(ct_log_level level, const char *fmt, ...) {
    char message[CT_MESSAGE_CAPACITY];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    log_fn(level, message, log_user_data);
}

/* ---- host allocation seam ---- */

static atomic_long fail_countdown; /* 0: off; k: the kth allocation from now fails */
static atomic_int fail_sticky;

void ct__malloc_fail_after(long n, int sticky) {
    atomic_store(&fail_countdown, n);
    atomic_store(&fail_sticky, sticky);
}

static int injected_failure(void) {
    long k = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    if (k == 0) return 0;
    if (k == 1) {
        if (!atomic_load(&fail_sticky)) atomic_store(&fail_countdown, 0);
        return 1;
    }
    atomic_fetch_sub(&fail_countdown, 1);
    return 0;
}

void *ct__malloc(size_t size) { return injected_failure() ? NULL : malloc(size ? size : 1); }

/* Blocks this large start on a 2 MiB boundary and ask for transparent huge pages (where
 * the kernel leaves that to madvise, as Debian's does): one fault instead of 512 when first
 * touched, and far fewer TLB misses when read at random, as a loader reads a dataset. */
#define CT_HUGE_PAGE ((size_t)2 << 20)

void *ct__aligned_host_block(size_t size) {
    size_t align = size < CT_HUGE_PAGE ? 64 : CT_HUGE_PAGE;
    size_t rounded = (size + align - 1) / align * align;
    if (rounded < size) return NULL;
    void *p = aligned_alloc(align, rounded ? rounded : align);
#ifdef MADV_HUGEPAGE
    if (p && align == CT_HUGE_PAGE) madvise(p, rounded, MADV_HUGEPAGE); /* only a hint */
#endif
    return p;
}

void *ct__host_alloc_large(size_t size) {
    return injected_failure() ? NULL : ct__aligned_host_block(size);
}

void *ct__calloc(size_t count, size_t size) {
    return injected_failure() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *ct__realloc(void *ptr, size_t size) {
    return injected_failure() ? NULL : realloc(ptr, size ? size : 1);
}

void ct__free_mem(void *ptr) { free(ptr); }

void ct_free(void *ptr) { free(ptr); }

/* ctensor's test framework: TEST(name) registers a test, DEVICE_TEST(name) registers one
 * that runs once per device present (cpu, then cuda:N), and a device that is absent is
 * reported as skipped by name with the reason. CHECK* record a failure with file:line and
 * leave the test. After each test the runner checks that no tensor leaked and no scope or
 * placement was left open. The closing line is "N passed, N failed, N skipped". */
#ifndef CT_TEST_H
#define CT_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctensor/ctensor.h"

typedef void (*ct_test_fn)(void);
typedef void (*ct_device_test_fn)(ct_device device);

void ct_test_register(const char *name, ct_test_fn fn, ct_device_test_fn device_fn);
void ct_test_fail(const char *file, int line, const char *fmt, ...);
bool ct_test_failed(void);
/* Mark the running test skipped with a reason (a test that cannot run here). */
void ct_test_skip(const char *reason);

/* A log hook (ct_set_log_hook(ct_test_record_warning, &warnings)) that counts the warnings it
 * receives and keeps the last one. */
typedef struct ct_test_warnings {
    int count;
    char last[1024];
} ct_test_warnings;
void ct_test_record_warning(ct_log_level level, const char *message, void *warnings);

/* Every real dtype (bool, integer and float), one per row of ctensor/dtype.h's table, in its
 * order: the lists of the tests of every op. The complex rows, whose ops are fewer, have
 * their own tests (test_dtype_complex.c). */
#define CT_TEST_DTYPE_BOOL(NAME) CT_##NAME,
#define CT_TEST_DTYPE_INT(NAME) CT_##NAME,
#define CT_TEST_DTYPE_UINT(NAME) CT_##NAME,
#define CT_TEST_DTYPE_FLOAT(NAME) CT_##NAME,
#define CT_TEST_DTYPE_COMPLEX(NAME)
#define CT_TEST_DTYPE_(name, NAME, value, size, kind, ...) CT_TEST_DTYPE_##kind(NAME)
static const ct_dtype ct_test_dtypes[] = {CT_DTYPES(CT_TEST_DTYPE_)};
#undef CT_TEST_DTYPE_
#define CT_TEST_DTYPE_COUNT ((int)(sizeof ct_test_dtypes / sizeof ct_test_dtypes[0]))

#define TEST(name)                                                                                 \
    static void name(void);                                                                        \
    __attribute__((constructor)) static void register_##name(void) {                               \
        ct_test_register(#name, name, NULL);                                                       \
    }                                                                                              \
    static void name(void)

#define DEVICE_TEST(name)                                                                          \
    static void name(ct_device device);                                                            \
    __attribute__((constructor)) static void register_##name(void) {                               \
        ct_test_register(#name, NULL, name);                                                       \
    }                                                                                              \
    static void name(ct_device device)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            ct_test_fail(__FILE__, __LINE__, "CHECK(%s) failed; last error: %s %s", #cond,         \
                         ct_status_name(ct_last_status()), ct_last_error());                       \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* A call that must succeed (CT_OK), or a tensor that must not be NULL. */
#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        ct_status check_ok_status_ = (expr);                                                       \
        if (check_ok_status_ != CT_OK) {                                                           \
            ct_test_fail(__FILE__, __LINE__, "%s returned %s: %s", #expr,                          \
                         ct_status_name(check_ok_status_), ct_last_error());                       \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_NOT_NULL(expr)                                                                       \
    do {                                                                                           \
        if ((expr) == NULL) {                                                                      \
            ct_test_fail(__FILE__, __LINE__, "%s is NULL: %s %s", #expr,                           \
                         ct_status_name(ct_last_status()), ct_last_error());                       \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* The last call failed with `status` and its message contains `needle`. Clears the error. */
#define CHECK_ERROR(status, needle)                                                                \
    do {                                                                                           \
        if (ct_last_status() != (status) || !strstr(ct_last_error(), (needle))) {                  \
            ct_test_fail(__FILE__, __LINE__, "expected %s with \"%s\", got %s: \"%s\"",            \
                         ct_status_name(status), (needle), ct_status_name(ct_last_status()),       \
                         ct_last_error());                                                         \
            return;                                                                                \
        }                                                                                          \
        ct_clear_error();                                                                          \
    } while (0)

#define CHECK_NEAR(actual, expected, tol)                                                          \
    do {                                                                                           \
        double check_a_ = (actual), check_e_ = (expected);                                         \
        if (!(fabs(check_a_ - check_e_) <= (tol)) && !(isnan(check_a_) && isnan(check_e_)) &&      \
            !(check_a_ == check_e_)) {                                                             \
            ct_test_fail(__FILE__, __LINE__, "%s = %.17g, expected %.17g (tolerance %g)", #actual, \
                         check_a_, check_e_, (double)(tol));                                       \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#endif

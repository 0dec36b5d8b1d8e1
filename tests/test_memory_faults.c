/* Raw allocation failures: make the Nth raw (backend) allocation fail, for every N over a
 * workload of tensors and ops that makes segments of every kind, and check that nothing
 * crashes or leaks (no live tensor, allocated back where it was, a sound pool) and that the
 * status is right. A single failure is absorbed by the pool's retry after freeing its cache;
 * a sticky one (that allocation and every later one) surfaces as CT_ERR_OUT_OF_MEMORY. */
#include <stdint.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ct_test.h"
#include "mem/pool_impl.h"

/* Temporaries of a nested scope, freed before the outer scope goes on. */
static ct_status inner(ct_tensor *a) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    int64_t big[1] = {3 << 20}; /* 12 MiB of f32: a large segment of its own */
    ct_tensor *f = ct_zeros(1, big, CT_F32, CT_CPU);
    ct_tensor *g = ct_add(a, a);
    ct_tensor *m = ct_matmul(g, a);
    ct_status s = f && m ? CT_OK : ct_last_status();
    ct_scope_end();
    return s;
}

static ct_status outer(void) {
    int64_t sq[2] = {256, 256}, mid[2] = {1024, 1024}, tiny[2] = {4, 5};
    ct_tensor *a = ct_rand(2, sq, CT_F32, CT_CPU); /* small pool */
    if (!a) return ct_last_status();
    ct_status s = inner(a);
    if (s != CT_OK) return s;
    if (ct_empty_cache(CT_CPU) != CT_OK) return ct_last_status(); /* later ones start afresh */
    ct_tensor *b = ct_ones(2, mid, CT_F32, CT_CPU);               /* 4 MiB: a 20 MiB segment */
    ct_tensor *c = ct_clone(b);
    ct_tensor *d = ct_cast(c, CT_F64);
    ct_tensor *t = ct_add(ct_ones(2, tiny, CT_I32, CT_CPU), ct_zeros(2, tiny, CT_F32, CT_CPU));
    ct_tensor *e = ct_contiguous(ct_transpose(d, 0, 1));
    return t && e ? CT_OK : ct_last_status();
}

static ct_status workload(void) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    ct_status s = outer();
    ct_scope_end();
    return s;
}

/* Run the workload with the nth raw allocation failing; *fired: the failure happened. */
static ct_status run_failing(long n, int sticky, bool *fired) {
    ct_empty_cache(CT_CPU);
    ct__pool_fail_raw_after(n, sticky);
    ct_status s = workload();
    long left = ct__pool_fail_raw_after(0, 0);
    *fired = sticky ? left == 1 && s != CT_OK : left == 0;
    return s;
}

static void check_every_n(int sticky) {
    ct_memory_statistics base;
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK_OK(ct_memory_stats(CT_CPU, &base));
    long live = ct__live_tensors();
    long n;
    int failures = 0;
    for (n = 1; n < 64; n++) {
        bool fired;
        ct_status s = run_failing(n, sticky, &fired);
        ct_memory_statistics st;
        CHECK_OK(ct_memory_stats(CT_CPU, &st));
        CHECK_OK(ct__pool_audit(CT_CPU, NULL));
        CHECK(ct__live_tensors() == live);
        CHECK(ct_scope_depth() == 0);
        CHECK(st.allocated == base.allocated && st.active == base.active);
        if (!fired) { /* the workload makes fewer than n raw allocations */
            CHECK_OK(s);
            break;
        }
        if (!sticky) {
            if (s != CT_OK) {
                ct_test_fail(__FILE__, __LINE__,
                             "raw allocation %ld failed once and was not "
                             "retried: %s",
                             n, ct_last_error());
                return;
            }
            continue;
        }
        failures += s != CT_OK;
        if (s != CT_ERR_OUT_OF_MEMORY || !strstr(ct_last_error(), "out of memory on cpu:0") ||
            !strstr(ct_last_error(), "the device refused the allocation")) {
            ct_test_fail(__FILE__, __LINE__, "raw allocation %ld: %s: %s", n, ct_status_name(s),
                         ct_last_error());
            return;
        }
        ct_clear_error();
    }
    CHECK(n > 4 && n < 64); /* four raw allocations at least (small, mid, large, mid) */
    CHECK(!sticky || failures == n - 1);
    CHECK_OK(workload());
    CHECK_OK(ct_empty_cache(CT_CPU));
}

TEST(test_memory_faults_single_raw_failure_is_retried) { check_every_n(0); }

TEST(test_memory_faults_sticky_raw_failure_fails_cleanly) { check_every_n(1); }

/* The out-of-memory count follows: one per failed request, none for a retried one. */
TEST(test_memory_faults_oom_count) {
    ct_memory_statistics s0, s1, s2;
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK_OK(ct_memory_stats(CT_CPU, &s0));
    void *p = NULL;
    ct__pool_fail_raw_after(1, 0);
    CHECK_OK(ct__pool_alloc(CT_CPU, 100, &p));
    ct__pool_free(CT_CPU, p, 100);
    CHECK_OK(ct_memory_stats(CT_CPU, &s1));
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct__pool_fail_raw_after(1, 1);
    ct_status s = ct__pool_alloc(CT_CPU, 100, &p);
    ct__pool_fail_raw_after(0, 0);
    CHECK(s == CT_ERR_OUT_OF_MEMORY);
    CHECK_ERROR(CT_ERR_OUT_OF_MEMORY, "asked for 100 bytes");
    CHECK_OK(ct_memory_stats(CT_CPU, &s2));
    CHECK(s1.oom_count == s0.oom_count && s2.oom_count == s0.oom_count + 1);
    CHECK(s2.reserved == 0 && s2.segments == 0);
}

/* Whether the armed host failure (the nth allocation) is still pending: probe with up to n
 * host allocations; one of them fails when it is. */
static bool host_failure_pending(long n) {
    bool pending = false;
    void *probes[256];
    long made = 0;
    for (; made < n && made < 256; made++) {
        probes[made] = ct__malloc(1);
        if (!probes[made]) {
            pending = true;
            break;
        }
    }
    for (long i = 0; i < made; i++) ct__free_mem(probes[i]);
    return pending;
}

/* Host allocations fail too (tensor headers, scopes, the pool's own nodes, which the cache
 * gives back when emptied): every N fails cleanly with "out of host memory". */
TEST(test_memory_faults_host_failure_in_bookkeeping) {
    ct_memory_statistics base;
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK_OK(ct_memory_stats(CT_CPU, &base));
    long live = ct__live_tensors(), n;
    for (n = 1; n < 256; n++) {
        ct_empty_cache(CT_CPU);
        ct__malloc_fail_after(n, 0);
        ct_status s = workload();
        bool pending = host_failure_pending(n);
        ct__malloc_fail_after(0, 0);
        ct_memory_statistics st;
        CHECK_OK(ct_memory_stats(CT_CPU, &st));
        CHECK_OK(ct__pool_audit(CT_CPU, NULL));
        CHECK(ct__live_tensors() == live && ct_scope_depth() == 0);
        CHECK(st.allocated == base.allocated);
        if (pending) {
            CHECK_OK(s);
            break;
        }
        if (s != CT_OK &&
            (s != CT_ERR_OUT_OF_MEMORY || !strstr(ct_last_error(), "out of host memory"))) {
            ct_test_fail(__FILE__, __LINE__, "host allocation %ld: %s: %s", n, ct_status_name(s),
                         ct_last_error());
            return;
        }
        ct_clear_error();
    }
    CHECK(n > 4 && n < 256);
}

TEST(test_memory_faults_size_overflow) {
    void *p = NULL;
    CHECK(ct__pool_alloc(CT_CPU, SIZE_MAX - 3, &p) == CT_ERR_OUT_OF_MEMORY);
    CHECK_ERROR(CT_ERR_OUT_OF_MEMORY, "the size overflows");
    CHECK(ct__pool_alloc(CT_CPU, SIZE_MAX - (1u << 20), &p) == CT_ERR_OUT_OF_MEMORY);
    CHECK_ERROR(CT_ERR_OUT_OF_MEMORY, "the size overflows");
    CHECK_OK(ct__pool_audit(CT_CPU, NULL));
}

/* The CPU pool: caching and reuse, statistics, peak reset, emptying the cache, limits and
 * recovery from out-of-memory, alignment, and allocation-failure injection (fail the Nth
 * host allocation for N = 1, 2, 3, ... and check that nothing crashes or leaks). */
#include <stdint.h>
#include <stdlib.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ct_test.h"

static ct_memory_statistics cpu_stats(void) {
    ct_memory_statistics s;
    memset(&s, 0, sizeof s);
    ct_memory_stats(CT_CPU, &s);
    return s;
}

static ct_tensor *bytes_tensor(int64_t bytes) {
    int64_t shape[1] = {bytes};
    return ct_empty(1, shape, CT_U8, CT_CPU);
}

TEST(test_memory_pool_reuses_freed_blocks) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_memory_statistics s0 = cpu_stats();
    ct_tensor *a = bytes_tensor(12000);
    CHECK_NOT_NULL(a);
    ct_release(a);
    ct_memory_statistics s1 = cpu_stats();
    ct_tensor *b = bytes_tensor(12000);
    CHECK_NOT_NULL(b);
    ct_memory_statistics s2 = cpu_stats();
    ct_release(b);
    CHECK(s1.reserved == s0.reserved + 12288); /* the first one came from the system */
    CHECK(s1.segments == s0.segments + 1);
    CHECK(s2.cache_hits == s1.cache_hits + 1); /* the second one from the cache */
    CHECK(s2.reserved == s1.reserved);
    CHECK(s2.segments == s1.segments);
}

TEST(test_memory_stats_add_up) {
    ct_memory_statistics s0 = cpu_stats();
    ct_tensor *a = bytes_tensor(1000);            /* 512-byte classes below 1 MiB */
    ct_tensor *b = bytes_tensor(3 * 1048576 + 1); /* eight classes per power of two above */
    CHECK(a && b);
    ct_memory_statistics s1 = cpu_stats();
    ct_release(a);
    ct_memory_statistics s2 = cpu_stats();
    ct_release(b);
    ct_memory_statistics s3 = cpu_stats();
    size_t big = 3 * 1048576 + 262144;
    CHECK(s1.allocated == s0.allocated + 1024 + big);
    CHECK(s1.peak_allocated >= s1.allocated);
    CHECK(s1.alloc_count == s0.alloc_count + 2);
    CHECK(s2.allocated == s0.allocated + big);
    CHECK(s2.free_count == s0.free_count + 1);
    CHECK(s3.allocated == s0.allocated);
    CHECK(s3.free_count == s0.free_count + 2);
    CHECK(s3.peak_allocated == s1.peak_allocated);
    CHECK(s3.reserved >= s3.allocated);
    CHECK(s3.oom_count == s0.oom_count);
}

TEST(test_memory_reset_peak) {
    ct_tensor *a = bytes_tensor(1 << 20);
    CHECK_NOT_NULL(a);
    ct_release(a);
    ct_memory_statistics before = cpu_stats();
    CHECK(before.peak_allocated >= before.allocated + (1 << 20));
    CHECK_OK(ct_reset_peak_memory(CT_CPU));
    ct_memory_statistics after = cpu_stats();
    CHECK(after.peak_allocated == after.allocated);
    ct_tensor *b = bytes_tensor(4096);
    CHECK_NOT_NULL(b);
    ct_memory_statistics with_b = cpu_stats();
    ct_release(b);
    CHECK(with_b.peak_allocated == after.allocated + 4096);
}

TEST(test_memory_empty_cache) {
    ct_tensor *keep = bytes_tensor(5000);
    ct_tensor *drop1 = bytes_tensor(70000), *drop2 = bytes_tensor(2 << 20);
    CHECK(keep && drop1 && drop2);
    ct_release(drop1);
    ct_release(drop2);
    ct_memory_statistics before = cpu_stats();
    CHECK(before.reserved > before.allocated); /* the two freed blocks are cached */
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_memory_statistics after = cpu_stats();
    ct_release(keep);
    CHECK(after.reserved == after.allocated);
    CHECK(after.allocated == before.allocated);
    CHECK(after.segments < before.segments);
}

TEST(test_memory_limit_below_allocated_refused) {
    ct_tensor *t = bytes_tensor(100000);
    CHECK_NOT_NULL(t);
    ct_status s = ct_set_memory_limit(CT_CPU, 4096);
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_release(t);
    CHECK(s == CT_ERR_STATE);
    CHECK(strstr(message, "ct_set_memory_limit") == message);
    CHECK(strstr(message, "limit of 4096") != NULL);
    ct_clear_error();
    CHECK(cpu_stats().limit == 0);
}

TEST(test_memory_limit_enforced_then_recovery) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_memory_statistics s0 = cpu_stats();
    CHECK_OK(ct_set_memory_limit(CT_CPU, s0.allocated + 65536));
    CHECK(cpu_stats().limit == s0.allocated + 65536);
    ct_tensor *too_big = bytes_tensor(1 << 20);
    ct_status status = ct_last_status();
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_clear_error();
    ct_tensor *fits = bytes_tensor(16384); /* a smaller request still works */
    ct_memory_statistics s1 = cpu_stats();
    ct_release(fits);
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    CHECK(too_big == NULL && status == CT_ERR_OUT_OF_MEMORY);
    CHECK(strstr(message, "asked for 1048576 bytes") != NULL);
    CHECK(strstr(message, "allocated") != NULL && strstr(message, "reserved") != NULL);
    CHECK(strstr(message, "limit") != NULL && strstr(message, "ct_set_memory_limit") != NULL);
    CHECK(fits != NULL);
    CHECK(s1.oom_count == s0.oom_count + 1);
    CHECK(s1.reserved <= s0.allocated + 65536);
}

TEST(test_memory_data_is_64_byte_aligned) {
    int64_t sizes[5] = {1, 3, 100, 1000, 300000};
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++)
        for (int i = 0; i < 5; i++) {
            ct_tensor *t = ct_empty(1, &sizes[i], (ct_dtype)dt, CT_CPU);
            CHECK_NOT_NULL(t);
            uintptr_t address = (uintptr_t)ct__data(t);
            ct_release(t);
            CHECK(address % 64 == 0);
        }
}

TEST(test_memory_stats_errors) {
    ct_memory_statistics s;
    CHECK(ct_memory_stats(CT_CPU, NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_memory_stats");
    CHECK(ct_memory_stats((ct_device){CT_DEVICE_CPU, 5}, &s) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_memory_stats: device cpu:5");
    CHECK(ct_empty_cache((ct_device){CT_DEVICE_CPU, 5}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_empty_cache");
    CHECK(ct_reset_peak_memory((ct_device){CT_DEVICE_CPU, 5}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_reset_peak_memory");
    CHECK(ct_set_memory_limit((ct_device){CT_DEVICE_CPU, 5}, 0) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_set_memory_limit");
    if (ct_cuda_is_available()) return;
    CHECK(ct_memory_stats((ct_device){CT_DEVICE_CUDA, 0}, &s) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "cuda:0");
}

/* ---- allocation-failure injection ---- */

/* A kept tensor from a nested scope, then a few ops; the outer scope releases it all. */
static ct_status inner_workload(void) {
    int64_t shape[2] = {4, 5};
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    ct_tensor *ones = ct_keep(ct_ones(2, shape, CT_F32, CT_CPU));
    ct_scope_end();
    ct_tensor *z = ct_zeros(2, shape, CT_F32, CT_CPU);
    ct_tensor *c = ct_clone(z);
    ct_tensor *k = ct_cast(c, CT_F64);
    ct_tensor *o = ct_cast(ones, CT_I32);
    return k && o ? CT_OK : ct_last_status();
}

static ct_status workload(void) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    ct_status s = inner_workload();
    ct_scope_end();
    return s;
}

/* Whether the armed failure (the nth allocation) is still pending: probe with up to n
 * allocations; one of them fails when it is. */
static bool failure_still_pending(long n) {
    bool pending = false;
    void *probes[64];
    long made = 0;
    for (; made < n && made < 64; made++) {
        probes[made] = ct__malloc(1);
        if (!probes[made]) {
            pending = true;
            break;
        }
    }
    for (long i = 0; i < made; i++) ct__free_mem(probes[i]);
    return pending;
}

TEST(test_memory_fault_injection_fails_cleanly) {
    ct_memory_statistics base = cpu_stats();
    long live = ct__live_tensors();
    long n;
    int failures = 0;
    for (n = 1; n < 64; n++) {
        ct__malloc_fail_after(n, 0);
        ct_status s = workload();
        bool pending = failure_still_pending(n);
        ct__malloc_fail_after(0, 0);
        CHECK(ct__live_tensors() == live);
        CHECK(ct_scope_depth() == 0);
        CHECK(cpu_stats().allocated == base.allocated); /* no storage left behind */
        if (pending) {
            CHECK_OK(s); /* no failure was injected: the workload must succeed */
            break;
        }
        if (s != CT_OK) {
            failures++;
            if (s != CT_ERR_OUT_OF_MEMORY || !strstr(ct_last_error(), "out of host memory")) {
                ct_test_fail(__FILE__, __LINE__, "failing allocation %ld: %s: %s", n,
                             ct_status_name(s), ct_last_error());
                return;
            }
        }
        ct_clear_error();
    }
    CHECK(n < 64); /* the workload ends within 64 allocations */
    CHECK(n > 5);  /* and makes several, each of which was made to fail */
    CHECK(failures > 0);
    CHECK_OK(workload());
}

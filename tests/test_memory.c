/* The CPU pool: caching and reuse, splitting and coalescing, statistics, peak reset,
 * emptying the cache, limits, growth, the summary, recovery from out-of-memory, alignment,
 * threads, and host allocation-failure injection (fail the Nth host allocation for
 * N = 1, 2, 3, ... and check that nothing crashes or leaks). Random workloads, raw
 * allocation failures and the environment have programs of their own. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ct_test.h"
#include "mem/pool_impl.h"

static ct_memory_statistics cpu_stats(void) {
    ct_memory_statistics s;
    memset(&s, 0, sizeof s);
    ct_memory_stats(CT_CPU, &s);
    return s;
}

#define SMALL_SEGMENT ((size_t)2 << 20)
#define MID_SEGMENT ((size_t)20 << 20)
#define MIB ((size_t)1 << 20)

static ct_tensor *bytes_tensor(int64_t bytes) {
    int64_t shape[1] = {bytes};
    return ct_empty(1, shape, CT_U8, CT_CPU);
}

TEST(test_memory_pool_reuses_freed_blocks) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_memory_statistics s0 = cpu_stats();
    ct_tensor *a = bytes_tensor(12000);
    CHECK_NOT_NULL(a);
    void *a_data = ct__data(a);
    ct_release(a);
    ct_memory_statistics s1 = cpu_stats();
    ct_tensor *b = bytes_tensor(12000);
    CHECK_NOT_NULL(b);
    void *b_data = ct__data(b);
    ct_memory_statistics s2 = cpu_stats();
    ct_release(b);
    CHECK(s1.reserved == s0.reserved + SMALL_SEGMENT); /* the first one made a segment */
    CHECK(s1.segments == s0.segments + 1);
    CHECK(s2.cache_hits == s1.cache_hits + 1); /* the second one came from the cache */
    CHECK(s2.reserved == s1.reserved);
    CHECK(s2.segments == s1.segments);
    CHECK(b_data == a_data); /* the best fit is the merged block at the segment's start */
}

TEST(test_memory_stats_add_up) {
    ct_memory_statistics s0 = cpu_stats();
    ct_tensor *a = bytes_tensor(1000);            /* rounded up to 512 bytes */
    ct_tensor *b = bytes_tensor(3 * 1048576 + 1); /* also above 1 MiB */
    CHECK(a && b);
    ct_memory_statistics s1 = cpu_stats();
    ct_release(a);
    ct_memory_statistics s2 = cpu_stats();
    ct_release(b);
    ct_memory_statistics s3 = cpu_stats();
    size_t big = 3 * 1048576 + 512;
    CHECK(s1.allocated == s0.allocated + 1024 + big);
    CHECK(s1.active == s0.active + 1024 + big); /* both blocks were split from segments */
    CHECK(s1.peak_allocated >= s1.allocated);
    CHECK(s1.alloc_count == s0.alloc_count + 2);
    CHECK(s2.allocated == s0.allocated + big);
    CHECK(s2.free_count == s0.free_count + 1);
    CHECK(s3.allocated == s0.allocated);
    CHECK(s3.active == s0.active);
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
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_tensor *keep = bytes_tensor(5000);
    ct_tensor *drop1 = bytes_tensor(70000), *drop2 = bytes_tensor(2 << 20);
    CHECK(keep && drop1 && drop2);
    ct_release(drop1);
    ct_release(drop2);
    ct_memory_statistics before = cpu_stats();
    CHECK(before.reserved == SMALL_SEGMENT + MID_SEGMENT);
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_memory_statistics after = cpu_stats();
    ct_release(keep);
    /* The large segment is wholly free and goes; the small one holds keep and stays. */
    CHECK(after.segments == before.segments - 1);
    CHECK(after.reserved == SMALL_SEGMENT);
    CHECK(after.allocated == before.allocated);
    CHECK(after.inactive_split == SMALL_SEGMENT - 5120);
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK(cpu_stats().reserved == 0);
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

/* ---- splitting and coalescing ---- */

/* A, B, C fill one segment; freeing B then A merges them, and a request of A + B's size is
 * served from the merged block, at A's address, with no new segment. */
static void check_coalescing(size_t a_size, size_t b_size, size_t c_size) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_tensor *a = bytes_tensor((int64_t)a_size), *b = bytes_tensor((int64_t)b_size);
    ct_tensor *c = bytes_tensor((int64_t)c_size);
    CHECK(a && b && c);
    char *a_data = ct__data(a);
    bool tiled =
        (char *)ct__data(b) == a_data + a_size && (char *)ct__data(c) == a_data + a_size + b_size;
    ct_release(b);
    ct_release(a);
    ct_memory_statistics s0 = cpu_stats();
    ct_tensor *ab = bytes_tensor((int64_t)(a_size + b_size));
    ct_memory_statistics s1 = cpu_stats();
    char *ab_data = ab ? ct__data(ab) : NULL;
    ct_release(ab);
    ct_release(c);
    CHECK(tiled);
    CHECK(s0.segments == 1);
    CHECK(s0.largest_free_block == a_size + b_size); /* the segment is full otherwise */
    CHECK(s0.inactive_split == a_size + b_size);
    CHECK(ab_data == a_data);
    CHECK(s1.segments == 1 && s1.reserved == s0.reserved);
    CHECK(s1.cache_hits == s0.cache_hits + 1);
    CHECK(s1.inactive_split == 0);
}

TEST(test_memory_coalescing_small_pool) {
    check_coalescing(512 * 1024, 512 * 1024, MIB); /* fills a 2 MiB small segment */
}

TEST(test_memory_coalescing_large_pool) {
    check_coalescing(4 * MIB, 4 * MIB, 12 * MIB); /* fills a 20 MiB large segment */
}

TEST(test_memory_splitting) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_tensor *t1 = bytes_tensor(1000), *t2 = bytes_tensor(1000);
    CHECK(t1 && t2);
    ct_memory_statistics s = cpu_stats();
    bool adjacent = (char *)ct__data(t2) == (char *)ct__data(t1) + 1024;
    ct_release(t1);
    ct_release(t2);
    CHECK(adjacent); /* both split from the front of one 2 MiB segment */
    CHECK(s.segments == 1 && s.reserved == SMALL_SEGMENT);
    CHECK(s.active == 2048 && s.allocated == 2048);
    CHECK(s.largest_free_block == SMALL_SEGMENT - 2048);
    CHECK_OK(ct_empty_cache(CT_CPU));
    /* In the large pool a rest of 1 MiB or less is not split off: it stays with the block. */
    ct_tensor *big = bytes_tensor((int64_t)(19 * MIB));
    CHECK_NOT_NULL(big);
    ct_memory_statistics l = cpu_stats();
    ct_release(big);
    CHECK(l.reserved == MID_SEGMENT && l.allocated == 19 * MIB && l.active == MID_SEGMENT);
    ct_tensor *mid = bytes_tensor((int64_t)(3 * MIB) / 2); /* the rest, 18.5 MiB, is split */
    CHECK_NOT_NULL(mid);
    ct_memory_statistics m = cpu_stats();
    ct_release(mid);
    CHECK(m.active == 3 * MIB / 2 && m.largest_free_block == MID_SEGMENT - 3 * MIB / 2);
}

TEST(test_memory_parked_small_blocks_merge_before_growing) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    enum { COUNT = 4096 }; /* 512-byte tensors that fill a 2 MiB segment */
    ct_tensor **ts = calloc(COUNT, sizeof *ts);
    CHECK_NOT_NULL(ts);
    int made = 0;
    while (made < COUNT && (ts[made] = bytes_tensor(4))) made++;
    ct_memory_statistics full = cpu_stats();
    for (int i = 0; i < made; i += 2) ct_release(ts[i]); /* every other one: no merging */
    for (int i = 1; i < made; i += 2) ct_release(ts[i]);
    free(ts);
    ct_tensor *again = bytes_tensor(4); /* a parked block of its size */
    ct_memory_statistics parked = cpu_stats();
    ct_release(again);
    ct_tensor *large = bytes_tensor((int64_t)MIB); /* needs the parked blocks merged */
    ct_memory_statistics merged = cpu_stats();
    ct_release(large);
    CHECK(made == COUNT);
    CHECK(full.segments == 1 && full.largest_free_block == 0);
    CHECK(parked.cache_hits == full.cache_hits + 1 && parked.segments == 1);
    CHECK(parked.inactive_split == SMALL_SEGMENT - 512);
    CHECK(merged.segments == 1 && merged.reserved == SMALL_SEGMENT);
    CHECK(merged.largest_free_block == SMALL_SEGMENT - MIB);
}

/* ---- limits, out of memory, growth ---- */

TEST(test_memory_oom_retries_after_freeing_the_cache) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK_OK(ct_set_memory_limit(CT_CPU, 4 * MIB));
    ct_tensor *a = bytes_tensor((int64_t)(3 * MIB)); /* a segment of just 3 MiB fits */
    ct_memory_statistics s0 = cpu_stats();
    ct_release(a);
    ct_tensor *b = bytes_tensor((int64_t)(7 * MIB) / 2); /* only after a's segment goes */
    ct_memory_statistics s1 = cpu_stats();
    ct_release(b);
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    CHECK(s0.reserved == 3 * MIB);
    CHECK(b != NULL);
    CHECK(s1.segments == 1 && s1.reserved == 7 * MIB / 2);
    CHECK(s1.oom_count == s0.oom_count);
}

TEST(test_memory_oom_message_and_carry_on) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK_OK(ct_set_memory_limit(CT_CPU, 8 * MIB));
    ct_tensor *a = bytes_tensor((int64_t)(5 * MIB));
    ct_tensor *b = bytes_tensor((int64_t)(5 * MIB)); /* does not fit next to a */
    ct_status status = ct_last_status();
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_clear_error();
    ct_release(a);
    ct_tensor *c = bytes_tensor((int64_t)(5 * MIB)); /* fits now that a is gone */
    ct_release(c);
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    CHECK(a && !b && c);
    CHECK(status == CT_ERR_OUT_OF_MEMORY);
    CHECK(strstr(message, "out of memory on cpu:0") == message);
    CHECK(strstr(message, "asked for 5242880 bytes") != NULL);
    CHECK(strstr(message, "5.00 MiB allocated") != NULL);
    CHECK(strstr(message, "limit 8.00 MiB") != NULL);
    CHECK(strstr(message, "free on the device") != NULL);
    CHECK(strstr(message, "ct_set_memory_limit") != NULL);
}

TEST(test_memory_growth_off_reserves_the_limit) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK(ct_set_memory_growth(CT_CPU, false) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "ct_set_memory_limit");
    CHECK_OK(ct_set_memory_limit(CT_CPU, 8 * MIB));
    CHECK_OK(ct_set_memory_growth(CT_CPU, false));
    ct_memory_statistics s0 = cpu_stats();
    ct_tensor *small = bytes_tensor(100), *mid = bytes_tensor((int64_t)(5 * MIB));
    ct_memory_statistics s1 = cpu_stats();
    ct_tensor *more = bytes_tensor((int64_t)(3 * MIB)); /* 8 MiB - 5 MiB - 512 B is left */
    CHECK_ERROR(CT_ERR_OUT_OF_MEMORY, "limit 8.00 MiB");
    ct_release(small);
    ct_release(mid);
    ct_memory_statistics s2 = cpu_stats();
    CHECK_OK(ct_set_memory_growth(CT_CPU, true));
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK(s0.reserved == 8 * MIB && s0.segments == 1 && s0.growth == 0);
    CHECK(small && mid && !more);
    CHECK(s1.reserved == 8 * MIB && s1.segments == 1); /* both came from the reservation */
    CHECK(s1.allocated == 5 * MIB + 512 && s1.active == 5 * MIB + 512);
    CHECK(s2.reserved == 8 * MIB && s2.largest_free_block == 8 * MIB);
    CHECK(cpu_stats().growth == 1 && cpu_stats().reserved == 0);
}

TEST(test_memory_growth_off_after_empty_cache_reserves_again) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK_OK(ct_set_memory_limit(CT_CPU, 4 * MIB));
    CHECK_OK(ct_set_memory_growth(CT_CPU, false));
    CHECK_OK(ct_empty_cache(CT_CPU)); /* gives the unused reservation back */
    ct_memory_statistics empty = cpu_stats();
    ct_tensor *t = bytes_tensor(10);
    ct_memory_statistics again = cpu_stats();
    ct_release(t);
    CHECK_OK(ct_set_memory_growth(CT_CPU, true));
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK(empty.reserved == 0);
    CHECK(t && again.reserved == 4 * MIB && again.segments == 1);
}

TEST(test_memory_growth_off_fails_cleanly_when_the_reservation_fails) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK_OK(ct_set_memory_limit(CT_CPU, 4 * MIB));
    ct__pool_fail_raw_after(1, 0);
    ct_status s = ct_set_memory_growth(CT_CPU, false);
    ct__pool_fail_raw_after(0, 0);
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_clear_error();
    ct_memory_statistics st = cpu_stats();
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    CHECK(s == CT_ERR_OUT_OF_MEMORY);
    CHECK(strstr(message, "ct_set_memory_growth: cannot reserve 4194304 bytes") == message);
    CHECK(st.growth == 1 && st.reserved == 0);
}

TEST(test_memory_lower_limit_gives_the_cache_back) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_tensor *t = bytes_tensor((int64_t)(2 * MIB));
    CHECK_NOT_NULL(t);
    ct_release(t);
    CHECK(cpu_stats().reserved == MID_SEGMENT);
    CHECK_OK(ct_set_memory_limit(CT_CPU, 4 * MIB));
    ct_memory_statistics s = cpu_stats();
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    CHECK(s.reserved == 0 && s.limit == 4 * MIB);
}

TEST(test_memory_growth_errors) {
    CHECK(ct_set_memory_growth((ct_device){CT_DEVICE_CPU, 5}, true) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_set_memory_growth");
    CHECK(ct_memory_summary((ct_device){CT_DEVICE_CPU, 5}) == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_memory_summary");
}

TEST(test_memory_removing_the_limit_turns_growth_on) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK_OK(ct_set_memory_limit(CT_CPU, 4 * MIB));
    CHECK_OK(ct_set_memory_growth(CT_CPU, false));
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    ct_memory_statistics unlimited = cpu_stats();
    CHECK_OK(ct_set_memory_limit(CT_CPU, 4 * MIB)); /* a new limit is not reserved */
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_tensor *t = bytes_tensor(10);
    ct_memory_statistics limited = cpu_stats();
    ct_release(t);
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    CHECK(unlimited.growth == 1 && limited.growth == 1);
    CHECK(t && limited.reserved == SMALL_SEGMENT);
}

TEST(test_memory_logical_devices_have_their_own_pools) {
    size_t limits[2] = {4 * MIB, 8 * MIB};
    ct_device cpu1 = {CT_DEVICE_CPU, 1};
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 2, limits));
    int64_t six[1] = {6 << 20};
    ct_tensor *on0 = ct_empty(1, six, CT_U8, CT_CPU);
    ct_status status0 = ct_last_status();
    ct_clear_error();
    ct_tensor *on1 = ct_empty(1, six, CT_U8, cpu1);
    ct_memory_statistics s0 = cpu_stats(), s1;
    CHECK_OK(ct_memory_stats(cpu1, &s1));
    ct_release(on1);
    CHECK_OK(ct_empty_cache(cpu1));
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 1, NULL));
    CHECK(!on0 && status0 == CT_ERR_OUT_OF_MEMORY);
    CHECK(on1 != NULL);
    CHECK(s0.limit == 4 * MIB && s1.limit == 8 * MIB);
    CHECK(s1.allocated == 6 * MIB && s0.allocated == 0);
    CHECK(cpu_stats().limit == 0);
}

/* ---- the summary ---- */

TEST(test_memory_summary) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK_OK(ct_set_memory_limit(CT_CPU, 64 * MIB));
    ct_tensor *t = bytes_tensor((int64_t)(3 * MIB));
    char *text = ct_memory_summary(CT_CPU);
    ct_release(t);
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    CHECK_NOT_NULL(text);
    bool ok = strstr(text, "memory of cpu:0: limit 64.00 MiB, growth on demand") == text &&
              strstr(text, "\n  allocated ") && strstr(text, " 3.00 MiB   peak ") &&
              strstr(text, "\n  reserved ") &&
              strstr(text, " 20.00 MiB   1 segment from the device") &&
              strstr(text, "largest free block 17.00 MiB") && strstr(text, "out of memory");
    if (!ok) printf("%s", text);
    ct_free(text);
    CHECK(ok);
}

/* ---- threads ---- */

static void *thread_workload(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    void *held[16] = {0};
    size_t sizes[16] = {0};
    for (int i = 0; i < 20000; i++) {
        seed = seed * 1103515245u + 12345u;
        int slot = (int)((seed >> 16) % 16);
        if (held[slot]) {
            ct__pool_free(CT_CPU, held[slot], sizes[slot]);
            held[slot] = NULL;
        } else {
            sizes[slot] = 1 + (seed >> 8) % (3u << 20);
            if (ct__pool_alloc(CT_CPU, sizes[slot], &held[slot]) != CT_OK) return arg;
            memset(held[slot], slot, 1);
        }
    }
    for (int slot = 0; slot < 16; slot++)
        if (held[slot]) ct__pool_free(CT_CPU, held[slot], sizes[slot]);
    return NULL;
}

TEST(test_memory_threads) {
    ct_memory_statistics s0 = cpu_stats();
    pthread_t threads[4];
    for (uintptr_t i = 0; i < 4; i++)
        CHECK(pthread_create(&threads[i], NULL, thread_workload, (void *)(i + 1)) == 0);
    bool failed = false;
    for (int i = 0; i < 4; i++) {
        void *result;
        pthread_join(threads[i], &result);
        failed |= result != NULL;
    }
    ct__pool_audit_result audit;
    CHECK_OK(ct__pool_audit(CT_CPU, &audit));
    ct_memory_statistics s1 = cpu_stats();
    CHECK(!failed);
    CHECK(s1.allocated == s0.allocated);
    CHECK(s1.alloc_count - s0.alloc_count == s1.free_count - s0.free_count);
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
        CHECK(ct_live_tensor_count() == live); /* the public count is the same */
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

/* The pool under random workloads: 10k allocations and frees of random sizes (fixed seeds),
 * with the cache emptied and limits changed now and then. After every step the pool's
 * structure is audited and the statistics are checked against what the test holds:
 * allocated is the sum of the live requests rounded to 512 bytes, reserved the sum of the
 * segments, and no two live blocks overlap (each block carries a tag at both ends). */
#include <stdint.h>
#include <stdlib.h>

#include "ct_test.h"
#include "mem/pool_impl.h"

#define SLOTS 64
#define MIB ((size_t)1 << 20)

typedef struct {
    unsigned char *ptr[SLOTS];
    size_t size[SLOTS];
    size_t live_rounded; /* sum of the live requests rounded up to 512 */
    int live;
    uint64_t rng;
} workload;

static uint64_t next(workload *w) {
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

/* Mostly small sizes, some mid-sized, a few large ones. */
static size_t random_size(workload *w) {
    uint64_t r = next(w);
    switch (r % 16) {
    case 0: return 1 + (size_t)(r >> 8) % (24 * MIB);
    case 1:
    case 2:
    case 3: return 1 + (size_t)(r >> 8) % (4 * MIB);
    case 4: return 1 + (size_t)(r >> 8) % 64;
    default: return 1 + (size_t)(r >> 8) % (256 * 1024);
    }
}

static size_t rounded(size_t size) { return size <= 512 ? 512 : (size + 511) / 512 * 512; }

static unsigned char tag(int slot) { return (unsigned char)(slot * 7 + 1); }

static bool tags_intact(const workload *w) {
    for (int i = 0; i < SLOTS; i++)
        if (w->ptr[i] && (w->ptr[i][0] != tag(i) || w->ptr[i][w->size[i] - 1] != tag(i)))
            return false;
    return true;
}

/* One step: allocate into an empty slot or free a full one, now and then empty the cache. */
static ct_status step(workload *w, int slot, bool *oom) {
    *oom = false;
    if (next(w) % 100 == 0) return ct_empty_cache(CT_CPU);
    if (w->ptr[slot]) {
        ct__pool_free(CT_CPU, w->ptr[slot], w->size[slot]);
        w->ptr[slot] = NULL;
        w->live_rounded -= rounded(w->size[slot]);
        w->live--;
        return CT_OK;
    }
    size_t size = random_size(w);
    void *p = NULL;
    ct_status s = ct__pool_alloc(CT_CPU, size, &p);
    if (s == CT_ERR_OUT_OF_MEMORY) {
        *oom = true;
        return CT_OK;
    }
    if (s != CT_OK) return s;
    w->ptr[slot] = p;
    w->size[slot] = size;
    w->ptr[slot][0] = w->ptr[slot][size - 1] = tag(slot);
    w->live_rounded += rounded(size);
    w->live++;
    return CT_OK;
}

static void release_all(workload *w) {
    for (int i = 0; i < SLOTS; i++)
        if (w->ptr[i]) ct__pool_free(CT_CPU, w->ptr[i], w->size[i]);
}

/* Run steps and check the invariants after each; a test failure names the first broken
 * step. */
static void run(uint64_t seed, int steps, size_t limit, bool growth) {
    CHECK_OK(ct_empty_cache(CT_CPU));
    ct_memory_statistics base;
    CHECK_OK(ct_memory_stats(CT_CPU, &base));
    CHECK_OK(ct_set_memory_limit(CT_CPU, limit));
    if (!growth) CHECK_OK(ct_set_memory_growth(CT_CPU, false));
    workload w = {.rng = seed};
    uint64_t ooms = 0;
    int i;
    bool ok = true;
    for (i = 0; i < steps && ok; i++) {
        bool oom;
        ct_status s = step(&w, (int)(next(&w) % SLOTS), &oom);
        ooms += oom;
        ct_memory_statistics st;
        ct__pool_audit_result audit;
        ok = s == CT_OK && ct__pool_audit(CT_CPU, &audit) == CT_OK &&
             ct_memory_stats(CT_CPU, &st) == CT_OK && tags_intact(&w) &&
             st.allocated == base.allocated + w.live_rounded &&
             st.reserved == audit.segment_bytes && st.active >= st.allocated &&
             st.reserved >= st.active && st.peak_allocated >= st.allocated &&
             st.oom_count == base.oom_count + ooms && (!limit || st.reserved <= limit) &&
             st.alloc_count - base.alloc_count ==
                 st.free_count - base.free_count + (uint64_t)w.live &&
             st.largest_free_block <= st.reserved - st.active;
    }
    release_all(&w);
    ct_memory_statistics end;
    ct_memory_stats(CT_CPU, &end);
    if (!growth) ct_set_memory_growth(CT_CPU, true);
    ct_set_memory_limit(CT_CPU, 0);
    ct_empty_cache(CT_CPU);
    if (!ok) {
        ct_test_fail(__FILE__, __LINE__, "seed %llu: invariant broken at step %d: %s",
                     (unsigned long long)seed, i - 1, ct_last_error());
        return;
    }
    CHECK(end.allocated == base.allocated && end.active == base.active);
    CHECK(limit ? ooms > 0 : ooms == 0); /* the limits are tight enough to be reached */
}

TEST(test_memory_random_workload_grows_on_demand) { run(0x9E3779B97F4A7C15ull, 10000, 0, true); }

TEST(test_memory_random_workload_under_a_limit) { run(12345, 10000, 48 * MIB, true); }

TEST(test_memory_random_workload_limit_reserved_up_front) { run(777, 10000, 64 * MIB, false); }

/* Reporting on the pools: ct_memory_stats, ct_reset_peak_memory, ct_memory_summary, and the
 * structural audit tests run after every step of a workload. */
#include <stdio.h>
#include <string.h>

#include "core/device_impl.h"
#include "core/error_impl.h"
#include "mem/pool_state_impl.h"

static ct_status check_device(const char *op, ct_device device) {
    if (ct_device_check(device) != CT_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ct_last_error());
        return ct__error(ct_last_status(), "%s: %s", op, message);
    }
    return CT_OK;
}

/* The statistics with the derived fields filled in (lock held). */
static ct_memory_statistics snapshot(const ct__pool *pool) {
    ct_memory_statistics s = pool->stats;
    s.inactive_split = pool->inactive_split + pool->fast_bytes;
    s.largest_free_block = 0;
    for (int kind = 0; kind < 2; kind++) {
        const ct__block *largest = ct__free_index_largest(&pool->free_blocks[kind]);
        if (largest && largest->size > s.largest_free_block) s.largest_free_block = largest->size;
    }
    s.growth = !(pool->no_growth && s.limit);
    return s;
}

ct_status ct_memory_stats(ct_device device, ct_memory_statistics *out) {
    if (!out) return ct__error(CT_ERR_INVALID_ARG, "ct_memory_stats: out must not be NULL");
    if (check_device("ct_memory_stats", device) != CT_OK) return ct_last_status();
    ct__pool *pool = ct__pool_of(device);
    ct__pool_lock(pool);
    *out = snapshot(pool);
    ct__pool_unlock(pool);
    return CT_OK;
}

ct_status ct_reset_peak_memory(ct_device device) {
    if (check_device("ct_reset_peak_memory", device) != CT_OK) return ct_last_status();
    ct__pool *pool = ct__pool_of(device);
    ct__pool_lock(pool);
    pool->stats.peak_allocated = pool->stats.allocated;
    ct__pool_unlock(pool);
    return CT_OK;
}

/* ---- the summary ---- */

/* bytes in the largest binary unit that keeps the figure at 1 or more. */
static const char *human(char *buf, size_t size, size_t bytes) {
    static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = (double)bytes;
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        unit++;
    }
    if (unit == 0)
        snprintf(buf, size, "%zu B", bytes);
    else
        snprintf(buf, size, "%.2f %s", value, names[unit]);
    return buf;
}

char *ct_memory_summary(ct_device device) {
    ct_memory_statistics s;
    if (check_device("ct_memory_summary", device) != CT_OK) return NULL;
    ct__pool *pool = ct__pool_of(device);
    ct__pool_lock(pool);
    s = snapshot(pool);
    ct__pool_unlock(pool);
    enum { CAPACITY = 1024 };
    char *text = ct__malloc(CAPACITY);
    if (!text) return ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_memory_summary: out of host memory");
    char name[32], a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32];
    ct_device_str(device, name, sizeof name);
    snprintf(text, CAPACITY,
             "memory of %s: limit %s, growth %s\n"
             "  allocated       %12s   peak %s (requests rounded to 512 B)\n"
             "  active          %12s   blocks handed out\n"
             "  reserved        %12s   %llu segment%s from the device\n"
             "  cached free     %12s   largest free block %s\n"
             "  inactive split  %12s   free inside segments in use\n"
             "  allocations %llu (%llu from the cache), frees %llu, out of memory %llu\n",
             name, s.limit ? human(a, sizeof a, s.limit) : "none",
             s.growth ? "on demand" : "off (limit reserved up front)",
             human(b, sizeof b, s.allocated), human(c, sizeof c, s.peak_allocated),
             human(d, sizeof d, s.active), human(e, sizeof e, s.reserved),
             (unsigned long long)s.segments, s.segments == 1 ? "" : "s",
             human(f, sizeof f, s.reserved - s.active), human(g, sizeof g, s.largest_free_block),
             human(h, sizeof h, s.inactive_split), (unsigned long long)s.alloc_count,
             (unsigned long long)s.cache_hits, (unsigned long long)s.free_count,
             (unsigned long long)s.oom_count);
    return text;
}

/* ---- the audit ---- */

/* Check one segment's blocks and add them up (lock held); NULL or what is wrong. */
static const char *audit_segment(ct__pool *pool, ct__block *head, ct__pool_audit_result *r,
                                 size_t *split_free) {
    if (head->prev) return "a segment head has a left neighbour";
    r->segments++;
    for (ct__block *b = head; b; b = b->next) {
        r->segment_bytes += b->size;
        if (b->kind != head->kind) return "blocks of one segment differ in kind";
        if ((size_t)(b->ptr - head->ptr) % 512 != 0)
            return "a block offset is not a multiple of 512";
        if (b->next && (b->next->prev != b || b->next->ptr != b->ptr + b->size))
            return "blocks do not tile their segment";
        if (!b->allocated) {
            if (b->next && !b->next->allocated) return "two free neighbours are not merged";
            if (!ct__free_index_contains(&pool->free_blocks[b->kind], b))
                return "a free block is missing from the free index";
            r->free_blocks++;
            r->free_bytes += b->size;
            if (b->prev || b->next) *split_free += b->size;
            continue;
        }
        if (ct__live_find(&pool->live, b->ptr) != b)
            return "an allocated block is not in the table";
        if (b->in_fast) {
            if (b->requested || b->kind != CT_BLOCK_SMALL || b->size > CT_FAST_MAX)
                return "a parked block is not a free small block";
            r->parked_blocks++;
            r->parked_bytes += b->size;
            continue;
        }
        if (b->requested > b->size || b->requested == 0)
            return "a block is smaller than its request";
        r->allocated_blocks++;
        r->requested_bytes += b->requested;
        r->active_bytes += b->size;
    }
    return NULL;
}

static const char *audit_pool(ct__pool *pool, ct__pool_audit_result *r) {
    size_t split_free = 0;
    for (ct__block *head = pool->segments; head; head = head->seg_next) {
        if (head->seg_next && head->seg_next->seg_prev != head) return "the segment list is broken";
        const char *problem = audit_segment(pool, head, r, &split_free);
        if (problem) return problem;
    }
    const ct_memory_statistics *s = &pool->stats;
    if (r->segment_bytes != s->reserved) return "reserved differs from the sum of segments";
    if (r->segments != s->segments) return "the segment count differs";
    if (r->requested_bytes != s->allocated) return "allocated differs from the live requests";
    if (r->active_bytes != s->active) return "active differs from the live blocks";
    if (r->allocated_blocks + r->parked_blocks != pool->live.count)
        return "the live table holds other blocks";
    if (r->parked_bytes != pool->fast_bytes) return "the parked bytes differ from the bins";
    size_t parked = 0;
    for (unsigned bin = 0; bin < CT_FAST_BINS; bin++)
        for (const ct__block *b = pool->fast[bin]; b; b = b->left) {
            if (!b->in_fast || b->size != (bin + 1) * 512u) return "a fast bin holds a wrong block";
            parked++;
        }
    if (parked != r->parked_blocks) return "the fast bins hold other blocks";
    if (r->free_blocks !=
        ct__free_index_count(&pool->free_blocks[0]) + ct__free_index_count(&pool->free_blocks[1]))
        return "the free index holds other blocks";
    if (split_free != pool->inactive_split) return "inactive split differs from its blocks";
    if (s->peak_allocated < s->allocated) return "peak is below allocated";
    if (s->limit && s->reserved > s->limit && s->allocated > s->limit) return "the limit is passed";
    return NULL;
}

ct_status ct__pool_audit(ct_device device, ct__pool_audit_result *out) {
    if (check_device("ct__pool_audit", device) != CT_OK) return ct_last_status();
    ct__pool_audit_result r;
    memset(&r, 0, sizeof r);
    ct__pool *pool = ct__pool_of(device);
    ct__pool_lock(pool);
    const char *problem = audit_pool(pool, &r);
    ct__pool_unlock(pool);
    if (out) *out = r;
    if (problem) return ct__error(CT_ERR_STATE, "ct__pool_audit: %s", problem);
    return CT_OK;
}

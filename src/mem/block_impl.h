/* Blocks of the caching allocator and the two indexes over them.
 *
 * A segment is one raw allocation from the backend. It is cut into blocks that tile it in
 * address order (prev/next); a block is either allocated (in the pool's live table, found by
 * its address when freed) or free (in the free index of its kind, ordered by size then
 * address, so the best fit is the first block not smaller than the request). Free neighbours
 * are always merged, so the neighbours of a free block are allocated. The first block of a
 * segment (its head) stays the same node for the segment's life and links the pool's list of
 * segments. Nodes live in host memory, apart from the memory they describe, which may be on a
 * device. */
#ifndef CT_BLOCK_IMPL_H
#define CT_BLOCK_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { CT_BLOCK_SMALL = 0, CT_BLOCK_LARGE = 1 };

typedef struct ct__block {
    char *ptr;
    size_t size;
    size_t requested;                      /* rounded request while allocated, else 0 */
    struct ct__block *prev, *next;         /* address neighbours in the segment */
    struct ct__block *left, *right;        /* free index (treap) links */
    struct ct__block *seg_prev, *seg_next; /* the pool's segment list, heads only */
    uint64_t priority;                     /* treap heap key */
    int physical;       /* heads: the physical device the segment came from (a later split of the
                         * device may map the logical device elsewhere) */
    unsigned char kind; /* CT_BLOCK_SMALL or CT_BLOCK_LARGE */
    bool allocated;     /* handed out, or parked in a fast bin (then requested is 0) */
    bool in_fast;       /* parked in a fast bin, linked by left */
    bool counted_split; /* free and counted in the pool's inactive-split bytes */
} ct__block;

/* Free blocks of one kind: a treap keyed by (size, address), expected O(log n). */
typedef struct ct__free_index {
    ct__block *root;
    uint64_t seed;
} ct__free_index;

void ct__free_index_insert(ct__free_index *index, ct__block *block);
void ct__free_index_remove(ct__free_index *index, ct__block *block);
/* The smallest free block of at least size bytes (lowest address among equals), or NULL. */
ct__block *ct__free_index_best_fit(const ct__free_index *index, size_t size);
/* The largest free block, or NULL. */
ct__block *ct__free_index_largest(const ct__free_index *index);
/* Number of blocks (walks the tree; for audits). */
size_t ct__free_index_count(const ct__free_index *index);
/* Whether block is in the index (by key search; for audits). */
bool ct__free_index_contains(const ct__free_index *index, const ct__block *block);

/* Allocated blocks by address: open addressing with linear probing, at most half full. */
typedef struct ct__live_table {
    ct__block **slots;
    size_t capacity; /* a power of two, or 0 before the first use */
    size_t count;
} ct__live_table;

/* Make room for one more block; false when host memory for the table ran out. */
bool ct__live_reserve(ct__live_table *table);
/* Insert a block (after ct__live_reserve succeeded). */
void ct__live_insert(ct__live_table *table, ct__block *block);
/* The block at ptr, or NULL when no live block starts there. */
ct__block *ct__live_find(const ct__live_table *table, const void *ptr);
/* Remove and return the block at ptr, or NULL when no live block starts there. */
ct__block *ct__live_take(ct__live_table *table, const void *ptr);

#endif

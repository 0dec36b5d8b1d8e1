/* The indexes of the caching allocator (see block_impl.h): a treap of free blocks ordered by
 * (size, address) for best-fit lookup, and an address-keyed hash table of allocated blocks,
 * so that freeing (which gets only the address) finds its block in O(1). */
#include <stdint.h>
#include <string.h>

#include "core/error_impl.h"
#include "core/philox_impl.h"
#include "mem/block_impl.h"

/* ---- the free index ---- */

static bool key_less(const ct__block *a, const ct__block *b) {
    return a->size != b->size ? a->size < b->size : (uintptr_t)a->ptr < (uintptr_t)b->ptr;
}

/* splitmix64: well-spread priorities from a counter keep the treap balanced. */
static uint64_t next_priority(ct__free_index *index) {
    return ct__splitmix64(index->seed += 0x9E3779B97F4A7C15ull);
}

/* Split tree t into the keys before block (*lo) and the rest (*hi). */
static void split(ct__block *t, const ct__block *block, ct__block **lo, ct__block **hi) {
    if (!t) {
        *lo = *hi = NULL;
    } else if (key_less(t, block)) {
        split(t->right, block, &t->right, hi);
        *lo = t;
    } else {
        split(t->left, block, lo, &t->left);
        *hi = t;
    }
}

/* Join two trees, every key of a before every key of b. */
static ct__block *merge(ct__block *a, ct__block *b) {
    if (!a) return b;
    if (!b) return a;
    if (a->priority > b->priority) {
        a->right = merge(a->right, b);
        return a;
    }
    b->left = merge(a, b->left);
    return b;
}

void ct__free_index_insert(ct__free_index *index, ct__block *block) {
    ct__block *lo, *hi;
    block->left = block->right = NULL;
    block->priority = next_priority(index);
    split(index->root, block, &lo, &hi);
    index->root = merge(merge(lo, block), hi);
}

void ct__free_index_remove(ct__free_index *index, ct__block *block) {
    ct__block **link = &index->root;
    while (*link && *link != block)
        link = key_less(block, *link) ? &(*link)->left : &(*link)->right;
    if (*link) *link = merge(block->left, block->right);
    block->left = block->right = NULL;
}

ct__block *ct__free_index_best_fit(const ct__free_index *index, size_t size) {
    ct__block *best = NULL;
    for (ct__block *t = index->root; t;) {
        if (t->size >= size) {
            best = t; /* a fit; a smaller one may lie to the left */
            t = t->left;
        } else {
            t = t->right;
        }
    }
    return best;
}

ct__block *ct__free_index_largest(const ct__free_index *index) {
    ct__block *t = index->root;
    while (t && t->right) t = t->right;
    return t;
}

static size_t count_tree(const ct__block *t) {
    return t ? 1 + count_tree(t->left) + count_tree(t->right) : 0;
}

size_t ct__free_index_count(const ct__free_index *index) { return count_tree(index->root); }

bool ct__free_index_contains(const ct__free_index *index, const ct__block *block) {
    const ct__block *t = index->root;
    while (t && t != block) t = key_less(block, t) ? t->left : t->right;
    return t != NULL;
}

/* ---- the live table ---- */

static size_t slot_of(const ct__live_table *table, const void *ptr) {
    uint64_t h = (uint64_t)(uintptr_t)ptr * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (table->capacity - 1);
}

static void place(ct__live_table *table, ct__block *block) {
    size_t i = slot_of(table, block->ptr);
    while (table->slots[i]) i = (i + 1) & (table->capacity - 1);
    table->slots[i] = block;
}

bool ct__live_reserve(ct__live_table *table) {
    if ((table->count + 1) * 2 <= table->capacity) return true;
    size_t capacity = table->capacity ? table->capacity * 2 : 64;
    ct__block **slots = ct__calloc(capacity, sizeof *slots);
    if (!slots) return false;
    ct__live_table grown = {slots, capacity, table->count};
    for (size_t i = 0; i < table->capacity; i++)
        if (table->slots[i]) place(&grown, table->slots[i]);
    ct__free_mem(table->slots);
    *table = grown;
    return true;
}

void ct__live_insert(ct__live_table *table, ct__block *block) {
    place(table, block);
    table->count++;
}

ct__block *ct__live_find(const ct__live_table *table, const void *ptr) {
    if (table->capacity == 0) return NULL;
    size_t mask = table->capacity - 1, i = slot_of(table, ptr);
    while (table->slots[i] && table->slots[i]->ptr != (const char *)ptr) i = (i + 1) & mask;
    return table->slots[i];
}

ct__block *ct__live_take(ct__live_table *table, const void *ptr) {
    if (table->capacity == 0) return NULL;
    size_t mask = table->capacity - 1, i = slot_of(table, ptr);
    while (table->slots[i] && table->slots[i]->ptr != (const char *)ptr) i = (i + 1) & mask;
    ct__block *block = table->slots[i];
    if (!block) return NULL;
    table->slots[i] = NULL;
    table->count--;
    /* Backward-shift deletion: move later entries of the probe run into the hole when their
     * home slot does not lie (cyclically) between the hole and them. */
    for (size_t hole = i, j = (i + 1) & mask; table->slots[j]; j = (j + 1) & mask) {
        size_t home = slot_of(table, table->slots[j]->ptr);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            table->slots[hole] = table->slots[j];
            table->slots[j] = NULL;
            hole = j;
        }
    }
    return block;
}

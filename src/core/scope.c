/* Scopes: a thread-local stack of frames, each holding references to the tensors made while
 * it was the innermost frame. ct_scope_end releases them; ct_keep moves one to the
 * enclosing frame, or hands it to the caller at the outermost frame.
 *
 * A frame holds at most one entry per tensor, with a count of the references it holds: a
 * function that returns its argument as a new reference (ct_to to the same device, ct_cast
 * to the same dtype) adds a reference to the entry, so the scope releases it too, and the
 * ct_release of such a temporary gives back that reference without taking the tensor out
 * of the scope. A tensor's entries in nested frames form a chain from the innermost frame
 * outwards: t->scope/t->scope_slot name the innermost entry and each entry names the next
 * one out, so ct_release always gives back a reference of the innermost scope. */
#include "core/error_impl.h"
#include "core/tensor_impl.h"

typedef struct scope_entry {
    ct_tensor *tensor; /* NULL once the entry is removed */
    long refs;         /* references this frame holds */
    struct ct_scope_frame *outer_frame; /* the tensor's entry in an enclosing frame, or NULL */
    size_t outer_slot;
} scope_entry;

typedef struct ct_scope_frame {
    scope_entry *items;
    size_t count;
    size_t capacity;
    struct ct_scope_frame *parent;
} ct_scope_frame;

static _Thread_local ct_scope_frame *top;
static _Thread_local int depth;

void ct__tensor_drop(ct_tensor *t);

int ct_scope_depth(void) { return depth; }

ct_status ct_scope_begin(void) {
    ct_scope_frame *frame = ct__calloc(1, sizeof *frame);
    if (!frame) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_scope_begin: out of host memory");
    frame->parent = top;
    top = frame;
    depth++;
    return CT_OK;
}

/* Room for one more entry in frame; false when the host is out of memory. */
static bool frame_reserve(ct_scope_frame *frame) {
    if (frame->count < frame->capacity) return true;
    size_t capacity = frame->capacity ? frame->capacity * 2 : 64;
    scope_entry *items = ct__realloc(frame->items, capacity * sizeof *items);
    if (!items) return false;
    frame->items = items;
    frame->capacity = capacity;
    return true;
}

static scope_entry *entry_at(ct_scope_frame *frame, size_t slot) {
    return frame ? &frame->items[slot] : NULL;
}

/* Add one reference of t to frame, where (*link_frame, *link_slot) is the link (the tensor's
 * innermost entry, or an entry's outer link) that should lead to frame's entry. The caller
 * has reserved room in frame. */
static void frame_hold(ct_scope_frame *frame, ct_tensor *t, ct_scope_frame **link_frame,
                       size_t *link_slot) {
    if (*link_frame == frame) {
        frame->items[*link_slot].refs++;
        return;
    }
    size_t slot = frame->count++;
    frame->items[slot] = (scope_entry){t, 1, *link_frame, *link_slot};
    *link_frame = frame;
    *link_slot = slot;
}

ct_status ct__scope_adopt(ct_tensor *t) {
    if (!top) return CT_OK;
    if (t->scope != top && !frame_reserve(top))
        return ct__error(CT_ERR_OUT_OF_MEMORY, "out of host memory for a scope entry");
    frame_hold(top, t, &t->scope, &t->scope_slot);
    return CT_OK;
}

/* Give back one reference of t's innermost entry (the caller drops the reference). */
void ct__scope_forget(ct_tensor *t) {
    scope_entry *e = entry_at(t->scope, t->scope_slot);
    if (!e || --e->refs > 0) return;
    e->tensor = NULL;
    t->scope = e->outer_frame;
    t->scope_slot = e->outer_slot;
}

ct_tensor *ct_keep(ct_tensor *t) {
    if (!t || !top || t->scope != top) return t; /* not held by the current scope */
    ct_scope_frame *parent = top->parent;
    if (!parent) {
        ct__scope_forget(t); /* the outermost scope hands the reference to the caller */
        return t;
    }
    scope_entry *e = &top->items[t->scope_slot];
    if (e->outer_frame != parent && !frame_reserve(parent))
        return ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_keep: out of host memory for a scope entry; "
                                              "the tensor stays in the current scope");
    if (e->refs > 1) {
        /* One of several references moves; the parent's entry goes between this entry and
         * the next one out. */
        e->refs--;
        frame_hold(parent, t, &e->outer_frame, &e->outer_slot);
    } else {
        ct__scope_forget(t);
        frame_hold(parent, t, &t->scope, &t->scope_slot);
    }
    return t;
}

ct_status ct_scope_end(void) {
    if (!top)
        return ct__error(CT_ERR_STATE,
                         "ct_scope_end: no scope is open; pair it with ct_scope_begin");
    ct_scope_frame *frame = top;
    top = frame->parent;
    depth--;
    for (size_t i = 0; i < frame->count; i++) {
        scope_entry *e = &frame->items[i];
        ct_tensor *t = e->tensor;
        if (!t) continue;
        /* This frame was the innermost, so this entry is the tensor's innermost one. */
        t->scope = e->outer_frame;
        t->scope_slot = e->outer_slot;
        for (long k = e->refs; k > 0; k--) ct__tensor_drop(t);
    }
    ct__free_mem(frame->items);
    ct__free_mem(frame);
    return CT_OK;
}

/* Scopes: a thread-local stack of frames, each holding the references to the tensors made
 * while it was the innermost frame. ct_scope_end releases them; ct_keep moves one to the
 * enclosing frame, or hands it to the caller at the outermost frame. */
#include "core/error_impl.h"
#include "core/tensor_impl.h"

typedef struct ct_scope_frame {
    ct_tensor **items;
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

/* Add t to frame; on failure to grow, the tensor is left to the caller (a leak at worst,
 * never a double release). */
static void frame_add(ct_scope_frame *frame, ct_tensor *t) {
    if (frame->count == frame->capacity) {
        size_t capacity = frame->capacity ? frame->capacity * 2 : 64;
        ct_tensor **items = ct__realloc(frame->items, capacity * sizeof *items);
        if (!items) return;
        frame->items = items;
        frame->capacity = capacity;
    }
    t->scope = frame;
    t->scope_slot = frame->count;
    frame->items[frame->count++] = t;
}

void ct__scope_adopt(ct_tensor *t) {
    if (top) frame_add(top, t);
}

void ct__scope_forget(ct_tensor *t) {
    ct_scope_frame *frame = t->scope;
    if (!frame) return;
    frame->items[t->scope_slot] = NULL;
    t->scope = NULL;
}

ct_tensor *ct_keep(ct_tensor *t) {
    if (!t || !t->scope) return t;
    ct_scope_frame *parent = t->scope->parent;
    ct__scope_forget(t);
    if (parent) frame_add(parent, t);
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
        ct_tensor *t = frame->items[i];
        if (!t) continue;
        t->scope = NULL;
        ct__tensor_drop(t);
    }
    ct__free_mem(frame->items);
    ct__free_mem(frame);
    return CT_OK;
}

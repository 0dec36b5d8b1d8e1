/* Scopes: a thread-local stack of frames, each holding references to the tensors made while
 * it was the innermost frame. ct_scope_end releases them; ct_keep moves one to the
 * enclosing frame, or hands it to the caller at the outermost frame.
 *
 * A frame holds two kinds of references. Each new tensor has one creation entry, in the
 * frame that was innermost when it was made; the tensor records that frame and slot, so
 * ct_release and ct_keep find it at once. Functions that return an existing tensor as a new
 * reference (ct_to to the same device, ct_cast to the same dtype) add an extra reference
 * instead, kept in the frame's own list and never recorded in the tensor: the tensor may be
 * shared with other threads, whose scopes must not see this thread's bookkeeping. ct_release
 * gives back the innermost reference this thread's scopes hold, extra ones first, so the
 * ct_release of such a temporary leaves the tensor in its scope. */
#include "core/error_impl.h"
#include "core/tensor_impl.h"

typedef struct extra_ref {
    ct_tensor *tensor;
    long refs;
} extra_ref;

typedef struct ct__scope_frame {
    ct_tensor **items; /* creation entries; NULL once released or kept */
    size_t count, capacity;
    extra_ref *extras; /* extra references, packed */
    size_t extra_count, extra_capacity;
    struct ct__scope_frame *parent;
} ct__scope_frame;

static _Thread_local ct__scope_frame *top;
static _Thread_local int depth;

int ct_scope_depth(void) { return depth; }

ct_status ct_scope_begin(void) {
    ct__scope_frame *frame = ct__calloc(1, sizeof *frame);
    if (!frame) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_scope_begin: out of host memory");
    frame->parent = top;
    top = frame;
    depth++;
    return CT_OK;
}

/* Room for one more element in a growable array; false when the host is out of memory. */
static bool reserve(void **items, size_t count, size_t *capacity, size_t element_size) {
    if (count < *capacity) return true;
    size_t grown = *capacity ? *capacity * 2 : 64;
    void *p = ct__realloc(*items, grown * element_size);
    if (!p) return false;
    *items = p;
    *capacity = grown;
    return true;
}

static bool add_creation_entry(ct__scope_frame *frame, ct_tensor *t) {
    if (!reserve((void **)&frame->items, frame->count, &frame->capacity, sizeof *frame->items))
        return false;
    t->scope = frame;
    t->scope_slot = frame->count;
    frame->items[frame->count++] = t;
    return true;
}

static extra_ref *find_extra(ct__scope_frame *frame, const ct_tensor *t) {
    for (size_t i = frame->extra_count; i > 0; i--) /* the newest are the likeliest */
        if (frame->extras[i - 1].tensor == t) return &frame->extras[i - 1];
    return NULL;
}

static bool add_extra(ct__scope_frame *frame, ct_tensor *t) {
    extra_ref *e = find_extra(frame, t);
    if (e) {
        e->refs++;
        return true;
    }
    if (!reserve((void **)&frame->extras, frame->extra_count, &frame->extra_capacity,
                 sizeof *frame->extras))
        return false;
    frame->extras[frame->extra_count++] = (extra_ref){t, 1};
    return true;
}

/* Give back one extra reference (the caller drops it). */
static void remove_extra(ct__scope_frame *frame, extra_ref *e) {
    if (--e->refs > 0) return;
    *e = frame->extras[--frame->extra_count];
}

ct_status ct__scope_adopt(ct_tensor *t) {
    if (top && !add_creation_entry(top, t))
        return ct__error(CT_ERR_OUT_OF_MEMORY, "out of host memory for a scope entry");
    return CT_OK;
}

ct_tensor *ct__new_ref(const ct_tensor *t) {
    ct_tensor *ref = ct_retain((ct_tensor *)t);
    if (top && !add_extra(top, ref)) {
        atomic_fetch_sub_explicit(&ref->refcount, 1, memory_order_relaxed);
        return ct__fail(CT_ERR_OUT_OF_MEMORY, "out of host memory for a scope entry");
    }
    return ref;
}

/* Give back the innermost reference this thread's scopes hold on t, if any (the caller
 * drops it). */
void ct__scope_forget(ct_tensor *t) {
    for (ct__scope_frame *frame = top; frame; frame = frame->parent) {
        extra_ref *e = find_extra(frame, t);
        if (e) {
            remove_extra(frame, e);
            return;
        }
        if (t->scope == frame) break;
    }
    if (!t->scope) return;
    t->scope->items[t->scope_slot] = NULL;
    t->scope = NULL;
}

ct_tensor *ct_keep(ct_tensor *t) {
    if (!t || !top) return t;
    extra_ref *e = find_extra(top, t);
    if (!e && t->scope != top) return t; /* not held by the current scope */
    ct__scope_frame *parent = top->parent;
    size_t slot = t->scope_slot;
    bool moved = !parent || (e ? add_extra(parent, t) : add_creation_entry(parent, t));
    if (!moved)
        return ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_keep: out of host memory for a scope entry; "
                                              "the tensor stays in the current scope");
    if (e)
        remove_extra(top, e);
    else if (parent)
        top->items[slot] = NULL; /* replaced by the parent's entry */
    else
        ct__scope_forget(t); /* the outermost scope hands the reference to the caller */
    return t;
}

ct_status ct_scope_end(void) {
    if (!top)
        return ct__error(CT_ERR_STATE,
                         "ct_scope_end: no scope is open; pair it with ct_scope_begin");
    ct__scope_frame *frame = top;
    top = frame->parent;
    depth--;
    for (size_t i = 0; i < frame->extra_count; i++)
        for (long k = frame->extras[i].refs; k > 0; k--) ct__tensor_drop(frame->extras[i].tensor);
    for (size_t i = 0; i < frame->count; i++) {
        ct_tensor *t = frame->items[i];
        if (!t) continue;
        t->scope = NULL;
        ct__tensor_drop(t);
    }
    ct__free_mem(frame->extras);
    ct__free_mem(frame->items);
    ct__free_mem(frame);
    return CT_OK;
}

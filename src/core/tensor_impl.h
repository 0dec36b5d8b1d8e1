/* The tensor and storage structs, and the constructors the op layer uses.
 *
 * A storage is a reference-counted buffer on one (logical) device, taken from that device's
 * pool. A tensor is a view of a storage: dtype, shape, strides (in elements) and offset. */
#ifndef CT_TENSOR_IMPL_H
#define CT_TENSOR_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/dtype_impl.h"
#include "ctensor/ctensor.h"

typedef struct ct__storage {
    atomic_int refcount;
    ct_device device;
    void *data;
    size_t size; /* bytes */
    /* The heap block holding this header: a fresh tensor and its storage header share one
     * allocation (one malloc per op instead of two), freed when both are dead. */
    void *block;
    /* The data is host memory from ct__malloc, outside every pool (ct__host_tensor_new). */
    bool host_owned;
    /* The data is page-locked host memory from ct__pinned_alloc (ct__pinned_tensor_new). */
    bool pinned;
    /* The data belongs to someone else (ct_from_external): external_free(external_context)
     * gives it back when the storage dies; NULL for ctensor's own memory. */
    ct_external_free_fn external_free;
    void *external_context;
    /* In-place writes so far (ct_fill, ct_copy, optimiser steps, running statistics): an
     * autograd node records it for each tensor it saves, and backward refuses a saved tensor
     * written since, as PyTorch's version counter does. */
    atomic_uint_fast64_t version;
} ct__storage;

struct ct__scope_frame;
struct ct__node;

struct ct_tensor {
    atomic_int refcount;
    ct_dtype dtype;
    int ndim;
    int64_t numel;
    int64_t shape[CT_MAX_DIMS];
    int64_t strides[CT_MAX_DIMS];
    int64_t offset;  /* elements from the start of the storage */
    bool contiguous; /* C-contiguous; computed once, since shape and strides never change */
    ct__storage *storage;
    struct ct__scope_frame *scope; /* the scope holding a reference, or NULL */
    size_t scope_slot;
    /* Autograd (src/autograd): whether gradients flow to this tensor, the node that made it
     * (NULL for leaves), and a leaf's accumulated gradient (an unscoped reference). */
    bool requires_grad;
    struct ct__node *grad_fn;
    struct ct_tensor *grad;
};

/* Address of element (0, ..., 0). */
static inline char *ct__data(const ct_tensor *t) {
    return (char *)t->storage->data + t->offset * (int64_t)ct__dtype_size(t->dtype);
}

/* A new contiguous tensor on device (a concrete device, not CT_DEFAULT), contents
 * uninitialised. Checks ndim, shape and size overflow; NULL with the error set. */
ct_tensor *ct__tensor_new(ct_device device, ct_dtype dtype, int ndim, const int64_t *shape);

/* A new tensor as ct__tensor_new, with strides that lay its elements out densely in some
 * order of the axes (ct__is_dense; a channels-last layout, say), not checked. */
ct_tensor *ct__tensor_new_strided(ct_device device, ct_dtype dtype, int ndim, const int64_t *shape,
                                  const int64_t *strides);

/* Whether t's elements fill numel consecutive elements from element (0, ..., 0), in some
 * order of its axes (all steps positive): contiguous, channels-last and any permutation of
 * a contiguous tensor. Size-1 axes' strides do not matter. */
bool ct__is_dense(const ct_tensor *t);

/* Whether t and u have one dense layout: the same shape, ct__is_dense, and equal strides
 * along every axis longer than 1. */
bool ct__same_dense_layout(const ct_tensor *t, const ct_tensor *u);

/* A new tensor shaped like t, of dtype, on device: with t's strides when t is dense and not
 * contiguous (an elementwise result keeps its operands' layout, as PyTorch's), else
 * contiguous. */
ct_tensor *ct__tensor_new_like(ct_device device, ct_dtype dtype, const ct_tensor *t);

/* The strides of a channels-last (N, H, W, C in memory) 4-d tensor of shape (N, C, H, W). */
void ct__channels_last_strides(const int64_t *shape, int64_t *strides);

/* Whether kernels should treat t as channels-last: 4-d, channels-last contiguous, and not
 * also contiguous with NCHW's stride on the channel axis (where both layouts are one, as
 * with a single channel, the strides of size-1 axes tell which one t was made in, as in
 * PyTorch's suggest_memory_format). */
bool ct__is_channels_last(const ct_tensor *t);

/* A new contiguous CPU tensor whose data is plain host memory outside the device pools, so
 * pool limits and statistics do not count it: for datasets read from files, which live in
 * host memory as a PyTorch dataset's arrays do. Contents uninitialised. */
ct_tensor *ct__host_tensor_new(ct_dtype dtype, int ndim, const int64_t *shape);

/* A new contiguous tensor on a CPU device whose data is pinned host memory
 * (src/mem/pinned_impl.h), so that copies to a GPU are one direct DMA: for ct_pin_memory and
 * the loader's batches. Contents uninitialised. NULL with the error (led by `op`) when
 * pinned memory cannot be had. */
ct_tensor *ct__pinned_tensor_new(const char *op, ct_device device, ct_dtype dtype, int ndim,
                                 const int64_t *shape);

/* A new view of base's storage. Shape and strides are not checked against the storage
 * (the op layer computes them). */
ct_tensor *ct__tensor_view(const ct_tensor *base, ct_dtype dtype, int ndim, const int64_t *shape,
                           const int64_t *strides, int64_t offset);

/* Whether a and b have the same shape. */
static inline bool ct__same_shape(const ct_tensor *a, const ct_tensor *b) {
    for (int d = 0; d < a->ndim && a->ndim == b->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return a->ndim == b->ndim;
}

/* C-order strides for shape; returns numel. */
int64_t ct__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
/* The product of shape's sizes counting a size of 0 as 1 (what bounds its contiguous
 * strides: a tensor with a 0-size axis has no elements, but its other axes still get
 * strides), or -1 when it passes ct__check_shape's bound on element counts (2^59). */
int64_t ct__shape_extent(int ndim, const int64_t *shape);

/* Check a shape (ndim in 0..CT_MAX_DIMS, sizes >= 0, numel fits); error names `op`. */
ct_status ct__check_shape(const char *op, int ndim, const int64_t *shape, int64_t *numel);

/* How core drops a dying tensor's grad_fn, a node of the autograd tape: core includes no
 * layer above it, so the tape registers its release function, as it makes each node
 * (src/autograd/tape.c); a tensor has a grad_fn only after that. */
typedef void (*ct__node_release_fn)(struct ct__node *node);
void ct__register_node_release(ct__node_release_fn release);

/* Number of tensors alive in the process (for leak checks in tests). */
long ct__live_tensors(void);

/* Register a new reference with the current scope, if any (CT_ERR_OUT_OF_MEMORY when the
 * scope cannot grow). */
ct_status ct__scope_adopt(ct_tensor *t);
/* Drop one reference without touching scopes: for references a scope never held (those
 * ct_retain took for a struct that keeps a tensor). */
void ct__tensor_drop(ct_tensor *t);
/* Give back the innermost reference this thread's scopes hold on t, without dropping it. */
void ct__scope_forget(ct_tensor *t);

/* Whether t is contiguous and covers its whole storage (no other view sees other data). */
bool ct__spans_storage(const ct_tensor *t);

/* Give t, in place, the data of moved (a contiguous copy of t on another device, unscoped,
 * whose reference this takes), when t spans its whole storage: t and every view of its
 * storage then hold the moved data. Returns false, leaving both alone, otherwise. */
bool ct__adopt_moved(ct_tensor *t, ct_tensor *moved);

/* t itself as a new reference, owned like a new tensor (by the current scope when one is
 * open): what a function returns when its result is its argument. NULL on failure. */
ct_tensor *ct__new_ref(const ct_tensor *t);

/* t's storage was written in place: saved copies of it no longer hold what was saved. */
static inline void ct__storage_written(const ct_tensor *t) {
    atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed);
}

/* The in-place writes t's storage has had. */
static inline uint64_t ct__storage_version(const ct_tensor *t) {
    return atomic_load_explicit(&t->storage->version, memory_order_relaxed);
}

#endif

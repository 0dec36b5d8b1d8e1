/* Tensors and storages: construction, views, reference counting and queries. */
#include <stdatomic.h>
#include <string.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "mem/pinned_impl.h"
#include "mem/pool_impl.h"

static atomic_long live_tensors;

long ct__live_tensors(void) { return atomic_load(&live_tensors); }

int64_t ct_live_tensor_count(void) { return (int64_t)atomic_load(&live_tensors); }

int64_t ct__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = stride;
        stride *= shape[i] > 0 ? shape[i] : 1;
    }
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= shape[i];
    return numel;
}

/* The bound on element counts and strides: far below INT64_MAX, so that byte offsets (an
 * element count times an element size of at most 8) cannot overflow either. */
#define CT_MAX_EXTENT (INT64_MAX >> 4)

int64_t ct__shape_extent(int ndim, const int64_t *shape) {
    int64_t extent = 1;
    for (int i = 0; i < ndim; i++)
        if (ct__mul_overflow_i64(extent, shape[i] > 0 ? shape[i] : 1, &extent) ||
            extent > CT_MAX_EXTENT)
            return -1;
    return extent;
}

ct_status ct__check_shape(const char *op, int ndim, const int64_t *shape, int64_t *numel) {
    if (ndim < 0 || ndim > CT_MAX_DIMS)
        return ct__error(CT_ERR_SHAPE, "%s: rank %d is outside 0..%d", op, ndim, CT_MAX_DIMS);
    if (ndim > 0 && !shape)
        return ct__error(CT_ERR_INVALID_ARG, "%s: shape is NULL for rank %d", op, ndim);
    bool empty = false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return ct__error(CT_ERR_SHAPE, "%s: size %lld of axis %d is negative", op,
                             (long long)shape[i], i);
        empty |= shape[i] == 0;
    }
    int64_t extent = ct__shape_extent(ndim, shape);
    if (extent < 0)
        return empty ? ct__error(CT_ERR_SHAPE,
                                 "%s: the shape's sizes other than 0 multiply past 2^59; even "
                                 "with no elements its strides would overflow",
                                 op)
                     : ct__error(CT_ERR_SHAPE, "%s: the shape's element count overflows", op);
    *numel = empty ? 0 : extent;
    return CT_OK;
}

static bool strides_are_contiguous(const ct_tensor *t);

/* A tensor header and its storage header in one heap block. */
typedef struct tensor_block {
    ct_tensor tensor;
    ct__storage storage;
} tensor_block;

/* Where a storage's data comes from. */
typedef enum storage_kind { FROM_POOL, FROM_HOST, FROM_PINNED } storage_kind;

/* The storage's data of its size, from where kind says: CT_OK, or the status with the error
 * set (`op` leads the pinned memory's messages). */
static ct_status storage_data_alloc(ct__storage *storage, storage_kind kind, const char *op) {
    storage->host_owned = kind == FROM_HOST;
    storage->pinned = kind == FROM_PINNED;
    size_t bytes = storage->size;
    if (kind == FROM_PINNED) return ct__pinned_alloc(op, bytes, &storage->data);
    if (kind == FROM_POOL) return ct__pool_alloc(storage->device, bytes, &storage->data);
    storage->data = ct__host_alloc_large(bytes);
    return storage->data
               ? CT_OK
               : ct__error(CT_ERR_OUT_OF_MEMORY, "out of host memory for %zu bytes", bytes);
}

static void storage_data_free(ct__storage *storage) {
    if (storage->external_free)
        storage->external_free(storage->external_context);
    else if (storage->pinned)
        ct__pinned_free(storage->data);
    else if (storage->host_owned)
        ct__free_mem(storage->data);
    else
        ct__pool_free(storage->device, storage->data, storage->size);
}

static void storage_release(ct__storage *storage) {
    if (atomic_fetch_sub_explicit(&storage->refcount, 1, memory_order_acq_rel) != 1) return;
    storage_data_free(storage);
    ct__free_mem(storage->block);
}

/* Fill a tensor header and hand it to the current scope; the caller has taken the storage
 * reference it holds. On failure (no memory to grow the scope) the caller undoes both. */
static ct_status tensor_init(ct_tensor *t, ct_dtype dtype, int ndim, const int64_t *shape,
                             const int64_t *strides, int64_t offset, ct__storage *storage) {
    atomic_init(&t->refcount, 1);
    t->dtype = dtype;
    t->ndim = ndim;
    t->numel = 1;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->strides[i] = strides[i];
        t->numel *= shape[i];
    }
    t->offset = offset;
    t->contiguous = strides_are_contiguous(t);
    t->storage = storage;
    t->scope = NULL;
    t->scope_slot = 0;
    t->requires_grad = false;
    t->grad_fn = NULL;
    t->grad = NULL;
    if (ct__scope_adopt(t) != CT_OK) return ct_last_status();
    atomic_fetch_add_explicit(&live_tensors, 1, memory_order_relaxed);
    return CT_OK;
}

/* A tensor of dtype and shape on device in one block, its data from where kind says, with
 * the given dense strides (NULL: contiguous ones). */
static ct_tensor *tensor_new(ct_device device, ct_dtype dtype, int ndim, const int64_t *shape,
                             const int64_t *dense_strides, storage_kind kind, const char *op) {
    int64_t numel, strides[CT_MAX_DIMS];
    if (!ct_dtype_is_valid(dtype))
        return ct__fail(CT_ERR_DTYPE, "invalid dtype %d; use one of CT_F32 .. CT_C128", dtype);
    if (ct__check_shape("tensor", ndim, shape, &numel) != CT_OK) return NULL;
    size_t bytes;
    if (ct__mul_overflow_size((size_t)numel, ct__dtype_size(dtype), &bytes))
        return ct__fail(CT_ERR_OUT_OF_MEMORY, "tensor of %lld elements is too large",
                        (long long)numel);
    tensor_block *block = ct__malloc(sizeof *block);
    if (!block) return ct__fail(CT_ERR_OUT_OF_MEMORY, "out of host memory for a tensor header");
    ct__storage *storage = &block->storage;
    storage->device = device;
    storage->size = bytes;
    storage->external_free = NULL;
    storage->external_context = NULL;
    if (storage_data_alloc(storage, kind, op) != CT_OK) {
        ct__free_mem(block);
        return NULL;
    }
    atomic_init(&storage->refcount, 1);
    atomic_init(&storage->version, 0);
    storage->block = block;
    ct__contiguous_strides(ndim, shape, strides);
    if (dense_strides) memcpy(strides, dense_strides, sizeof(int64_t) * (size_t)ndim);
    if (tensor_init(&block->tensor, dtype, ndim, shape, strides, 0, storage) != CT_OK) {
        storage_data_free(storage);
        ct__free_mem(block);
        return NULL;
    }
    return &block->tensor;
}

ct_tensor *ct__tensor_new(ct_device device, ct_dtype dtype, int ndim, const int64_t *shape) {
    return tensor_new(device, dtype, ndim, shape, NULL, FROM_POOL, "tensor");
}

ct_tensor *ct__tensor_new_strided(ct_device device, ct_dtype dtype, int ndim, const int64_t *shape,
                                  const int64_t *strides) {
    return tensor_new(device, dtype, ndim, shape, strides, FROM_POOL, "tensor");
}

ct_tensor *ct__host_tensor_new(ct_dtype dtype, int ndim, const int64_t *shape) {
    return tensor_new(CT_CPU, dtype, ndim, shape, NULL, FROM_HOST, "tensor");
}

ct_tensor *ct__pinned_tensor_new(const char *op, ct_device device, ct_dtype dtype, int ndim,
                                 const int64_t *shape) {
    return tensor_new(device, dtype, ndim, shape, NULL, FROM_PINNED, op);
}

ct_tensor *ct__tensor_view(const ct_tensor *base, ct_dtype dtype, int ndim, const int64_t *shape,
                           const int64_t *strides, int64_t offset) {
    ct_tensor *t = ct__malloc(sizeof *t);
    if (!t) return ct__fail(CT_ERR_OUT_OF_MEMORY, "out of host memory for a tensor header");
    atomic_fetch_add_explicit(&base->storage->refcount, 1, memory_order_relaxed);
    if (tensor_init(t, dtype, ndim, shape, strides, offset, base->storage) != CT_OK) {
        storage_release(base->storage);
        ct__free_mem(t);
        return NULL;
    }
    return t;
}

ct_tensor *ct_retain(ct_tensor *t) {
    if (t) atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
    return t;
}

static _Atomic(ct__node_release_fn) node_release;

void ct__register_node_release(ct__node_release_fn release) {
    atomic_store_explicit(&node_release, release, memory_order_release);
}

/* Drop one reference without touching scopes. */
static void drop_reference(ct_tensor *t) {
    if (atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) != 1) return;
    atomic_fetch_sub_explicit(&live_tensors, 1, memory_order_relaxed);
    if (t->grad_fn) atomic_load_explicit(&node_release, memory_order_acquire)(t->grad_fn);
    if (t->grad) ct__tensor_drop(t->grad);
    /* A tensor that shares its block with its storage goes when the storage goes. */
    bool shares_block = t->storage->block == (void *)t;
    storage_release(t->storage);
    if (!shares_block) ct__free_mem(t);
}

void ct_release(ct_tensor *t) {
    if (!t) return;
    ct__scope_forget(t);
    drop_reference(t);
}

void ct__tensor_drop(ct_tensor *t) { drop_reference(t); }

/* ---- queries ---- */

int ct_ndim(const ct_tensor *t) { return t ? t->ndim : 0; }
const int64_t *ct_shape(const ct_tensor *t) { return t ? t->shape : NULL; }
const int64_t *ct_strides(const ct_tensor *t) { return t ? t->strides : NULL; }
int64_t ct_numel(const ct_tensor *t) { return t ? t->numel : 0; }
ct_dtype ct_dtype_of(const ct_tensor *t) { return t ? t->dtype : (ct_dtype)-1; }

ct_device ct_device_of(const ct_tensor *t) {
    return t ? t->storage->device : (ct_device){CT_DEVICE_DEFAULT, -1};
}

int64_t ct_size(const ct_tensor *t, int axis) {
    if (!t) return 0;
    if (axis < 0) axis += t->ndim;
    return axis >= 0 && axis < t->ndim ? t->shape[axis] : 0;
}

bool ct_is_contiguous(const ct_tensor *t) { return t && t->contiguous; }

static bool strides_are_contiguous(const ct_tensor *t) {
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 1) continue;
        if (t->shape[i] == 0) return true;
        if (t->strides[i] != expected) return false;
        expected *= t->shape[i];
    }
    return true;
}

bool ct_shares_storage(const ct_tensor *a, const ct_tensor *b) {
    return a && b && a->storage == b->storage;
}

/* ---- memory shared with other libraries ---- */

void *ct_data_ptr(const ct_tensor *t) { return t ? ct__data(t) : NULL; }

/* What an external storage given no release function does when it dies. */
static void keep_external(void *context) { (void)context; }

/* The lowest and highest element offsets from element (0, ..., 0) that a view with these
 * sizes and strides reaches (0 and 0 without elements). */
static void view_span(int ndim, const int64_t *shape, const int64_t *strides, int64_t *low,
                      int64_t *high) {
    *low = *high = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            *low = *high = 0;
            return;
        }
        int64_t reach = (shape[d] - 1) * strides[d];
        if (reach < 0)
            *low += reach;
        else
            *high += reach;
    }
}

ct_tensor *ct_from_external(void *data, int ndim, const int64_t *shape, const int64_t *strides,
                            ct_dtype dtype, ct_device device, ct_external_free_fn release,
                            void *context) {
    int64_t numel, own_strides[CT_MAX_DIMS];
    if (!ct_dtype_is_valid(dtype))
        return ct__fail(CT_ERR_DTYPE,
                        "ct_from_external: invalid dtype %d; use one of CT_F32 .. "
                        "CT_BOOL",
                        dtype);
    if (ct__check_shape("ct_from_external", ndim, shape, &numel) != CT_OK) return NULL;
    if (!data && numel > 0)
        return ct__fail(CT_ERR_INVALID_ARG, "ct_from_external: data is NULL for %lld elements",
                        (long long)numel);
    if (device.type == CT_DEVICE_DEFAULT) device = ct_default_device();
    if (ct_device_check(device) != CT_OK) return NULL;
    if (!strides) {
        ct__contiguous_strides(ndim, shape, own_strides);
        strides = own_strides;
    }
    int64_t low, high;
    view_span(ndim, shape, strides, &low, &high);
    tensor_block *block = ct__malloc(sizeof *block);
    if (!block) return ct__fail(CT_ERR_OUT_OF_MEMORY, "out of host memory for a tensor header");
    ct__storage *storage = &block->storage;
    size_t element = ct__dtype_size(dtype);
    storage->device = device;
    storage->data = (char *)data + low * (int64_t)element;
    storage->size = (size_t)(high - low + 1) * element;
    storage->block = block;
    storage->host_owned = false;
    storage->pinned = false;
    storage->external_free = release ? release : keep_external;
    storage->external_context = context;
    atomic_init(&storage->refcount, 1);
    atomic_init(&storage->version, 0);
    if (tensor_init(&block->tensor, dtype, ndim, shape, strides, -low, storage) != CT_OK) {
        ct__free_mem(block);
        return NULL;
    }
    return &block->tensor;
}

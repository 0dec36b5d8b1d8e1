/* CPU gather kernel: out[i] = src[i with its `axis` coordinate replaced by index[i]], for
 * ct_gather and ct_index_select. Elements are copied as raw bytes (src and out share a
 * dtype); every index is bounds-checked, and the first bad one is reported. */
#include <stdatomic.h>
#include <string.h>

#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"

typedef struct {
    size_t elem_size;
    ct_dtype index_dtype;
    int64_t axis_size;
    int64_t axis_stride_bytes;
    atomic_int failed; /* set once by the first row that meets a bad index */
    int64_t bad_index; /* written only by the row that set `failed` */
} gather_ctx;

static inline int64_t load_index(const char *p, ct_dtype dtype) {
    return dtype == CT_I32 ? *(const int32_t *)p : *(const int64_t *)p;
}

static void report_bad(gather_ctx *c, int64_t index) {
    int expected = 0;
    if (atomic_compare_exchange_strong(&c->failed, &expected, 1)) c->bad_index = index;
}

/* Wrap and check one index; false (and the index reported) when it is out of range. */
static inline bool resolve(gather_ctx *c, int64_t idx, int64_t *at) {
    *at = idx < 0 ? idx + c->axis_size : idx;
    if (*at >= 0 && *at < c->axis_size) return true;
    report_bad(c, idx);
    return false;
}

/* The row loop with a compile-time element size (when inlined with a constant), so the
 * memcpy becomes a single load and store. */
static inline void gather_row_sized(char *const *ptrs, const int64_t *strides, int64_t n,
                                    gather_ctx *c, size_t size) {
    char *out = ptrs[0];
    const char *index = ptrs[1], *src = ptrs[2];
    for (int64_t i = 0; i < n; i++) {
        int64_t at;
        if (!resolve(c, load_index(index + i * strides[1], c->index_dtype), &at)) return;
        memcpy(out + i * strides[0], src + i * strides[2] + at * c->axis_stride_bytes, size);
    }
}

static void gather_row(char *const *ptrs, const int64_t *strides, int64_t n, void *vctx) {
    gather_ctx *c = vctx;
    if (atomic_load_explicit(&c->failed, memory_order_relaxed)) return;
    int64_t size = (int64_t)c->elem_size, at;
    if (strides[1] == 0 && strides[0] == size && strides[2] == size) {
        /* One index for a dense row (index_select's rows, an embedding lookup): copy it
         * whole. */
        if (resolve(c, load_index(ptrs[1], c->index_dtype), &at))
            memcpy(ptrs[0], ptrs[2] + at * c->axis_stride_bytes, (size_t)(n * size));
        return;
    }
    switch (c->elem_size) {
    case 1: gather_row_sized(ptrs, strides, n, c, 1); break;
    case 2: gather_row_sized(ptrs, strides, n, c, 2); break;
    case 4: gather_row_sized(ptrs, strides, n, c, 4); break;
    case 8: gather_row_sized(ptrs, strides, n, c, 8); break;
    default: gather_row_sized(ptrs, strides, n, c, 16); break; /* complex128 */
    }
}

ct_status ct__cpu_gather(int device, const ct__gather_args *args) {
    (void)device;
    const ct__ew_args *it = &args->it;
    gather_ctx ctx;
    ctx.elem_size = ct__dtype_size(it->dtype[0]);
    ctx.index_dtype = it->dtype[1];
    ctx.axis_size = args->src_axis_size;
    ctx.axis_stride_bytes = args->src_axis_stride * (int64_t)ctx.elem_size;
    atomic_init(&ctx.failed, 0);
    ctx.bad_index = 0;
    ct__cpu_parallel_rows(it, gather_row, &ctx);
    if (!atomic_load(&ctx.failed)) return CT_OK;
    if (ctx.axis_size == 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         "index %lld is out of range for an axis of size 0 (it has no elements "
                         "to pick)",
                         (long long)ctx.bad_index);
    return ct__error(CT_ERR_INVALID_ARG,
                     "index %lld is out of range for an axis of size %lld (valid indices are "
                     "-%lld to %lld)",
                     (long long)ctx.bad_index, (long long)ctx.axis_size, (long long)ctx.axis_size,
                     (long long)ctx.axis_size - 1);
}

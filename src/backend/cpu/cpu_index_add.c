/* CPU index_add / scatter_add / index_copy kernel: dst[..., index, ...] += src (or = src)
 * along one axis. Threads
 * split the positions off the indexed axis, and each walks the indexed axis itself, in
 * order: two positions that differ off the axis never meet in dst, so repeated indices
 * accumulate without races (and in the same order for any thread count). */
#include <stdatomic.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/cpu_norm_impl.h"
#include "core/error_impl.h"

typedef struct {
    const ct__index_add_args *a;
    ct_dtype dtype;
    bool index_i32;
    int64_t element_size, index_stride, src_stride, dst_axis_stride; /* bytes */
    atomic_int failed;
    int64_t bad_index; /* written by the row that set `failed` */
} add_ctx;

/* *dst += *src in dtype: floats round once, integers wrap, bool is a logical or. */
static inline void add_element(char *dst, const char *src, ct_dtype dtype) {
    switch (dtype) {
    case CT_F32: *(float *)dst += *(const float *)src; break;
    case CT_F64: *(double *)dst += *(const double *)src; break;
    case CT_F16:
    case CT_BF16:
        ct__stf(dst, 0, dtype,
                (double)((float)ct__ldf(dst, 0, dtype) + (float)ct__ldf(src, 0, dtype)));
        break;
    case CT_I32: *(uint32_t *)dst += *(const uint32_t *)src; break;
    case CT_I64: *(uint64_t *)dst += *(const uint64_t *)src; break;
    case CT_U8:
    case CT_I8: *(uint8_t *)dst = (uint8_t)(*(uint8_t *)dst + *(const uint8_t *)src); break;
    case CT_I16:
    case CT_U16: *(uint16_t *)dst = (uint16_t)(*(uint16_t *)dst + *(const uint16_t *)src); break;
    case CT_U32: *(uint32_t *)dst += *(const uint32_t *)src; break;
    case CT_U64: *(uint64_t *)dst += *(const uint64_t *)src; break;
    case CT_BOOL: *(uint8_t *)dst = *(uint8_t *)dst || *(const uint8_t *)src; break;
    case CT_C64:
        ((float *)dst)[0] += ((const float *)src)[0];
        ((float *)dst)[1] += ((const float *)src)[1];
        break;
    case CT_C128:
        ((double *)dst)[0] += ((const double *)src)[0];
        ((double *)dst)[1] += ((const double *)src)[1];
        break;
    }
}

static void add_row(char *const *ptrs, const int64_t *strides, int64_t n, void *vctx) {
    add_ctx *c = vctx;
    int64_t size = c->a->dst_axis_size;
    for (int64_t k = 0; k < c->a->k; k++) {
        if (atomic_load_explicit(&c->failed, memory_order_relaxed)) return;
        const char *index = ptrs[1] + k * c->index_stride, *src = ptrs[2] + k * c->src_stride;
        for (int64_t i = 0; i < n; i++) {
            const char *ip = index + i * strides[1];
            int64_t v = c->index_i32 ? *(const int32_t *)ip : *(const int64_t *)ip;
            int64_t at = v < 0 ? v + size : v;
            if (at < 0 || at >= size) {
                int expected = 0;
                if (atomic_compare_exchange_strong(&c->failed, &expected, 1)) c->bad_index = v;
                return;
            }
            char *dst = ptrs[0] + i * strides[0] + at * c->dst_axis_stride;
            if (c->a->assign)
                memcpy(dst, src + i * strides[2], (size_t)c->element_size);
            else
                add_element(dst, src + i * strides[2], c->dtype);
        }
    }
}

/* Walk the positions off the axis, split over threads on 64-position boundaries. */
static void walk(add_ctx *c) {
    const ct__ew_args *rest = &c->a->rest;
    int64_t numel = rest->numel;
#ifdef _OPENMP
    int threads = omp_get_max_threads();
    if (numel > 1 && numel * c->a->k >= CT_CPU_PARALLEL_THRESHOLD && threads > 1) {
#pragma omp parallel num_threads(threads)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            int64_t chunk = ((numel + nt - 1) / nt + 63) / 64 * 64;
            int64_t begin = (int64_t)t * chunk;
            int64_t end = begin + chunk < numel ? begin + chunk : numel;
            ct__cpu_rows(rest, begin, end, add_row, c);
        }
        return;
    }
#endif
    ct__cpu_rows(rest, 0, numel, add_row, c);
}

ct_status ct__cpu_index_add(int device, const ct__index_add_args *args) {
    (void)device;
    if (args->rest.numel == 0 || args->k == 0) return CT_OK;
    add_ctx c;
    c.a = args;
    c.dtype = args->rest.dtype[0];
    c.index_i32 = args->rest.dtype[1] == CT_I32;
    c.index_stride = args->index_stride * (int64_t)ct__dtype_size(args->rest.dtype[1]);
    c.element_size = (int64_t)ct__dtype_size(c.dtype);
    c.src_stride = args->src_stride * c.element_size;
    c.dst_axis_stride = args->dst_axis_stride * c.element_size;
    atomic_init(&c.failed, 0);
    c.bad_index = 0;
    walk(&c);
    if (!atomic_load(&c.failed)) return CT_OK;
    if (args->dst_axis_size == 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         "index %lld is out of range for an axis of size 0 (it has no elements "
                         "to add into)",
                         (long long)c.bad_index);
    return ct__error(CT_ERR_INVALID_ARG,
                     "index %lld is out of range for an axis of size %lld (valid indices are "
                     "-%lld to %lld)",
                     (long long)c.bad_index, (long long)args->dst_axis_size,
                     (long long)args->dst_axis_size, (long long)args->dst_axis_size - 1);
}

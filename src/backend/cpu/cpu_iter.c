/* The CPU backend's strided row iterator and its OpenMP split (see cpu_impl.h). */
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"

int ct__cpu_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* ct__cpu_rows with the operands' base addresses taken from data rather than args->data. */
static void rows_at(const ct__ew_args *args, char *const *data, int64_t begin, int64_t end,
                    ct__cpu_row_fn fn, void *ctx) {
    if (begin >= end) return;
    int nops = args->nops, ndim = args->ndim;
    char *ptrs[CT_EW_MAX_OPERANDS];
    int64_t inner_strides[CT_EW_MAX_OPERANDS];
    if (ndim == 0) {
        for (int k = 0; k < nops; k++) {
            ptrs[k] = data[k];
            inner_strides[k] = 0;
        }
        fn(ptrs, inner_strides, 1, ctx);
        return;
    }
    int64_t elem_size[CT_EW_MAX_OPERANDS];
    for (int k = 0; k < nops; k++) {
        elem_size[k] = (int64_t)ct__dtype_size(args->dtype[k]);
        inner_strides[k] = args->strides[k][ndim - 1] * elem_size[k];
    }
    /* Multi-index of `begin`. */
    int64_t index[CT_MAX_DIMS];
    int64_t rest = begin;
    for (int d = ndim - 1; d >= 0; d--) {
        index[d] = rest % args->shape[d];
        rest /= args->shape[d];
    }
    int64_t row_len = args->shape[ndim - 1];
    int64_t position = begin;
    while (position < end) {
        for (int k = 0; k < nops; k++) {
            int64_t offset = 0;
            for (int d = 0; d < ndim; d++) offset += index[d] * args->strides[k][d];
            ptrs[k] = data[k] + offset * elem_size[k];
        }
        int64_t n = row_len - index[ndim - 1];
        if (n > end - position) n = end - position;
        fn(ptrs, inner_strides, n, ctx);
        position += n;
        /* Advance to the start of the next row. */
        index[ndim - 1] = 0;
        for (int d = ndim - 2; d >= 0; d--) {
            if (++index[d] < args->shape[d]) break;
            index[d] = 0;
        }
    }
}

void ct__cpu_rows(const ct__ew_args *args, int64_t begin, int64_t end, ct__cpu_row_fn fn,
                  void *ctx) {
    rows_at(args, args->data, begin, end, fn, ctx);
}

void ct__cpu_parallel_rows_at(const ct__ew_args *args, char *const *data, ct__cpu_row_fn fn,
                              void *ctx) {
    int64_t numel = args->numel;
    if (numel == 0) return;
    if (args->ndim <= 1 && numel < 2 * CT_CPU_MIN_SPLIT) {
        /* One row: no index arithmetic, no thread query (the path of small ops). */
        char *ptrs[CT_EW_MAX_OPERANDS];
        int64_t byte_strides[CT_EW_MAX_OPERANDS];
        for (int k = 0; k < args->nops; k++) {
            ptrs[k] = data[k];
            byte_strides[k] =
                args->ndim == 0 ? 0 : args->strides[k][0] * (int64_t)ct__dtype_size(args->dtype[k]);
        }
        fn(ptrs, byte_strides, numel, ctx);
        return;
    }
#ifdef _OPENMP
    int threads = ct__cpu_threads_for_elements(numel);
    if (threads > 1) {
#pragma omp parallel num_threads(threads)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            /* Split on 64-element boundaries so threads do not share cache lines. */
            int64_t chunk = (numel + nt - 1) / nt;
            chunk = (chunk + 63) / 64 * 64;
            int64_t begin = (int64_t)t * chunk;
            int64_t end = begin + chunk < numel ? begin + chunk : numel;
            rows_at(args, data, begin, end, fn, ctx);
        }
        return;
    }
#endif
    rows_at(args, data, 0, numel, fn, ctx);
}

void ct__cpu_parallel_rows(const ct__ew_args *args, ct__cpu_row_fn fn, void *ctx) {
    ct__cpu_parallel_rows_at(args, args->data, fn, ctx);
}

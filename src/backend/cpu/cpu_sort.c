/* CPU sorting and scanning kernels (contract in backend_impl.h, ct__sort_args): a stable
 * merge sort of each row's positions by its keys (read once as float64 or int64, exact for
 * every dtype; uint64 biased so that signed order is its order), and the running sum and the
 * running product of each row (in order, element by element: the same result whatever the
 * thread count). Rows are split over the threads when there are enough of them. */
#include <math.h>
#include <stdatomic.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/complex_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"

/* Orders: whether key a goes before key b (strictly), for ascending and descending sorts.
 * NaN is the largest float key. */
static inline bool before_f64_asc(double a, double b) { return a < b || (isnan(b) && !isnan(a)); }
static inline bool before_f64_desc(double a, double b) { return a > b || (isnan(a) && !isnan(b)); }
static inline bool before_i64_asc(int64_t a, int64_t b) { return a < b; }
static inline bool before_i64_desc(int64_t a, int64_t b) { return a > b; }

/* A stable bottom-up merge sort of idx[0..n) by key[idx[.]], with tmp as scratch (n
 * positions): on return the order is in idx. */
#define MERGE_SORT_(NAME, KEY, BEFORE)                                                             \
    static void NAME(const KEY *key, int64_t *idx, int64_t *tmp, int64_t n) {                      \
        int64_t *src = idx, *dst = tmp;                                                            \
        for (int64_t width = 1; width < n; width *= 2) {                                           \
            for (int64_t lo = 0; lo < n; lo += 2 * width) {                                        \
                int64_t mid = lo + width < n ? lo + width : n;                                     \
                int64_t hi = lo + 2 * width < n ? lo + 2 * width : n, i = lo, j = mid, o = lo;     \
                while (i < mid && j < hi)                                                          \
                    dst[o++] = BEFORE(key[src[j]], key[src[i]]) ? src[j++] : src[i++];             \
                while (i < mid) dst[o++] = src[i++];                                               \
                while (j < hi) dst[o++] = src[j++];                                                \
            }                                                                                      \
            int64_t *swap = src;                                                                   \
            src = dst;                                                                             \
            dst = swap;                                                                            \
        }                                                                                          \
        if (src != idx)                                                                            \
            for (int64_t i = 0; i < n; i++) idx[i] = src[i];                                       \
    }
MERGE_SORT_(sort_f64_asc, double, before_f64_asc)
MERGE_SORT_(sort_f64_desc, double, before_f64_desc)
MERGE_SORT_(sort_i64_asc, int64_t, before_i64_asc)
MERGE_SORT_(sort_i64_desc, int64_t, before_i64_desc)
#undef MERGE_SORT_

/* Sort row r: its keys into keys (n of 8 bytes), its order into args->indices. */
static void sort_row(const ct__sort_args *a, int64_t r, void *keys, int64_t *tmp) {
    size_t size = ct__dtype_size(a->dtype);
    const char *row = a->in + (size_t)(r * a->in_row) * size;
    int64_t *idx = a->indices + r * a->n;
    bool is_float = ct__is_float(a->dtype);
    for (int64_t i = 0; i < a->n; i++) {
        const char *p = row + (size_t)(i * a->in_stride) * size;
        if (is_float)
            ((double *)keys)[i] = ct__load_f64(p, a->dtype);
        else
            ((int64_t *)keys)[i] = ct__load_i64(p, a->dtype) ^ ct__order_bias(a->dtype);
        idx[i] = i;
    }
    if (is_float)
        (a->descending ? sort_f64_desc : sort_f64_asc)(keys, idx, tmp, a->n);
    else
        (a->descending ? sort_i64_desc : sort_i64_asc)(keys, idx, tmp, a->n);
}

/* Rows [begin, end) with scratch of their own; false when it could not be allocated. */
static bool sort_rows(const ct__sort_args *a, int64_t begin, int64_t end) {
    void *keys = ct__malloc((size_t)a->n * 8);
    int64_t *tmp = ct__malloc((size_t)a->n * sizeof *tmp);
    bool ok = keys && tmp;
    for (int64_t r = begin; ok && r < end; r++) sort_row(a, r, keys, tmp);
    ct__free_mem(keys);
    ct__free_mem(tmp);
    return ok;
}

/* Every row sorted, the rows split over the threads where the policy says it pays; false
 * when a thread found no scratch memory. */
static bool sort_all_rows(const ct__sort_args *args) {
#ifdef _OPENMP
    int threads = args->rows > 1 ? ct__cpu_threads_for_elements(args->rows * args->n) : 1;
    if (threads > 1) {
        atomic_bool failed = false;
#pragma omp parallel num_threads(threads)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            int64_t chunk = (args->rows + nt - 1) / nt, begin = t * chunk;
            int64_t end = begin + chunk < args->rows ? begin + chunk : args->rows;
            if (begin < end && !sort_rows(args, begin, end)) atomic_store(&failed, true);
        }
        return !atomic_load(&failed);
    }
#endif
    return sort_rows(args, 0, args->rows);
}

ct_status ct__cpu_argsort(int device, const ct__sort_args *args) {
    (void)device;
    if (args->rows == 0 || args->n == 0) return CT_OK;
    if (sort_all_rows(args)) return CT_OK;
    return ct__error(CT_ERR_OUT_OF_MEMORY,
                     "argsort: no host memory for the scratch of rows of "
                     "%lld elements",
                     (long long)args->n);
}

/* The running sum of row r. */
static void cumsum_row(const ct__sort_args *a, int64_t r) {
    size_t in_size = ct__dtype_size(a->dtype), out_size = ct__dtype_size(a->out_dtype);
    const char *in = a->in + (size_t)(r * a->in_row) * in_size;
    char *out = a->out + (size_t)(r * a->out_row) * out_size;
    if (ct__is_float(a->out_dtype) || ct__is_float(a->dtype)) {
        double acc = 0.0;
        for (int64_t i = 0; i < a->n; i++) {
            acc += ct__load_f64(in + (size_t)(i * a->in_stride) * in_size, a->dtype);
            ct__store_f64(out + (size_t)i * out_size, a->out_dtype, acc);
        }
        return;
    }
    uint64_t acc = 0; /* unsigned: wraps as the int64 result is defined to */
    for (int64_t i = 0; i < a->n; i++) {
        acc += (uint64_t)ct__load_i64(in + (size_t)(i * a->in_stride) * in_size, a->dtype);
        ct__store_i64(out + (size_t)i * out_size, a->out_dtype, (int64_t)acc);
    }
}

/* Each row by row(), the rows split over the team (a row's result does not depend on it). */
static void scan_rows(const ct__sort_args *args, void (*row)(const ct__sort_args *, int64_t)) {
    int threads = args->rows > 1 ? ct__cpu_threads_for_elements(args->rows * args->n) : 1;
    (void)threads; /* read by OpenMP's clauses only */
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (int64_t r = 0; r < args->rows; r++) row(args, r);
}

ct_status ct__cpu_cumsum(int device, const ct__sort_args *args) {
    (void)device;
    scan_rows(args, cumsum_row);
    return CT_OK;
}

/* The running product of row r. */
static void cumprod_row(const ct__sort_args *a, int64_t r) {
    size_t in_size = ct__dtype_size(a->dtype), out_size = ct__dtype_size(a->out_dtype);
    const char *in = a->in + (size_t)(r * a->in_row) * in_size;
    char *out = a->out + (size_t)(r * a->out_row) * out_size;
    if (ct__is_complex(a->out_dtype) || ct__is_complex(a->dtype)) {
        ct__z acc = ct__z_make(1.0, 0.0);
        for (int64_t i = 0; i < a->n; i++) {
            acc =
                ct__z_mul(acc, ct__load_c128(in + (size_t)(i * a->in_stride) * in_size, a->dtype));
            ct__store_c128(out + (size_t)i * out_size, a->out_dtype, acc);
        }
        return;
    }
    if (ct__is_float(a->out_dtype) || ct__is_float(a->dtype)) {
        double acc = 1.0;
        for (int64_t i = 0; i < a->n; i++) {
            acc *= ct__load_f64(in + (size_t)(i * a->in_stride) * in_size, a->dtype);
            ct__store_f64(out + (size_t)i * out_size, a->out_dtype, acc);
        }
        return;
    }
    uint64_t acc = 1; /* unsigned: wraps as the int64 result is defined to */
    for (int64_t i = 0; i < a->n; i++) {
        acc *= (uint64_t)ct__load_i64(in + (size_t)(i * a->in_stride) * in_size, a->dtype);
        ct__store_i64(out + (size_t)i * out_size, a->out_dtype, (int64_t)acc);
    }
}

ct_status ct__cpu_cumprod(int device, const ct__sort_args *args) {
    (void)device;
    scan_rows(args, cumprod_row);
    return CT_OK;
}

/* CPU reduction accumulators (see cpu_reduce_impl.h): how each kind of reduction takes in
 * a row of elements, and how the results of consecutive pieces merge.
 *
 * Float sums go through blocks of at most 128 elements, each summed in double with eight
 * independent accumulators (so the contiguous f32/f64 loops vectorise), and the block sums
 * are combined pairwise. Accumulating f32, f16 and bf16 in double makes their sums exact to
 * well below their own precision; f64 sums get the pairwise bound of O(log n) roundings. */
#include <math.h>

#include "backend/cpu/cpu_reduce_impl.h"
#include "core/dtype_impl.h"

#define BLOCK 128

static void pairwise_push(ct__pairwise *p, double v) {
    int l = 0;
    for (uint64_t c = p->count; c & 1u; c >>= 1, l++) v = p->level[l] + v;
    p->level[l] = v;
    p->count++;
}

static double pairwise_total(const ct__pairwise *p) {
    double total = 0.0;
    int l = 0;
    for (uint64_t c = p->count; c; c >>= 1, l++)
        if (c & 1u) total += p->level[l];
    return total;
}

/* Sum of TERM(x[i]) for i < n (n <= BLOCK) of a contiguous array of T, in double. */
#define DEFINE_BLOCK_SUM(name, T, TERM)                                                            \
    static double name(const T *x, int64_t n, double mean) {                                       \
        double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                    \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int k = 0; k < 8; k++) s[k] += TERM((double)x[i + k], mean);                      \
        double tail = 0.0;                                                                         \
        for (; i < n; i++) tail += TERM((double)x[i], mean);                                       \
        return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + tail;           \
    }

#define TERM_VALUE(v, mean) (v)
#define TERM_SQDEV(v, mean) (((v) - (mean)) * ((v) - (mean)))
DEFINE_BLOCK_SUM(block_sum_f32, float, TERM_VALUE)
DEFINE_BLOCK_SUM(block_sum_f64, double, TERM_VALUE)
DEFINE_BLOCK_SUM(block_sqdev_f32, float, TERM_SQDEV)
DEFINE_BLOCK_SUM(block_sqdev_f64, double, TERM_SQDEV)

static double block_generic(ct_dtype dtype, const char *p, int64_t stride, int64_t n, bool sqdev,
                            double mean) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double v = ct__load_f64(p + i * stride, dtype);
        s += sqdev ? (v - mean) * (v - mean) : v;
    }
    return s;
}

static void sum_row(ct_dtype dtype, const char *p, int64_t stride, int64_t n, bool sqdev,
                    double mean, ct__pairwise *acc) {
    int64_t size = (int64_t)ct__dtype_size(dtype);
    for (int64_t i = 0; i < n; i += BLOCK) {
        int64_t m = n - i < BLOCK ? n - i : BLOCK;
        const char *q = p + i * stride;
        double s;
        if (stride == size && dtype == CT_F32)
            s = sqdev ? block_sqdev_f32((const float *)q, m, mean)
                      : block_sum_f32((const float *)q, m, mean);
        else if (stride == size && dtype == CT_F64)
            s = sqdev ? block_sqdev_f64((const double *)q, m, mean)
                      : block_sum_f64((const double *)q, m, mean);
        else
            s = block_generic(dtype, q, stride, m, sqdev, mean);
        pairwise_push(acc, s);
    }
}

/* Float extrema: a NaN never wins a comparison, so it stays out of the running extremum and
 * a flag remembers it instead. The contiguous f32/f64 loops keep eight independent lanes,
 * which breaks the dependency chain of one running value. */
#define DEFINE_EXTREMUM(name, T, CMP)                                                              \
    static void name(const T *x, int64_t n, ct__reduce_part *r) {                                  \
        T lane[8];                                                                                 \
        int nan[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                     \
        for (int k = 0; k < 8; k++) lane[k] = (T)r->f;                                             \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int k = 0; k < 8; k++) {                                                          \
                T v = x[i + k];                                                                    \
                nan[k] |= v != v;                                                                  \
                lane[k] = v CMP lane[k] ? v : lane[k];                                             \
            }                                                                                      \
        for (; i < n; i++) {                                                                       \
            T v = x[i];                                                                            \
            nan[0] |= v != v;                                                                      \
            lane[0] = v CMP lane[0] ? v : lane[0];                                                 \
        }                                                                                          \
        for (int k = 0; k < 8; k++) {                                                              \
            r->f = (double)lane[k] CMP r->f ? lane[k] : r->f;                                      \
            r->flag |= nan[k] != 0;                                                                \
        }                                                                                          \
    }

DEFINE_EXTREMUM(max_f32, float, >)
DEFINE_EXTREMUM(min_f32, float, <)
DEFINE_EXTREMUM(max_f64, double, >)
DEFINE_EXTREMUM(min_f64, double, <)

static void extremum_row(bool is_max, ct_dtype dtype, const char *p, int64_t stride, int64_t n,
                         ct__reduce_part *r) {
    int64_t size = (int64_t)ct__dtype_size(dtype);
    if (stride == size && dtype == CT_F32) {
        (is_max ? max_f32 : min_f32)((const float *)p, n, r);
        return;
    }
    if (stride == size && dtype == CT_F64) {
        (is_max ? max_f64 : min_f64)((const double *)p, n, r);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double v = ct__load_f64(p + i * stride, dtype);
        r->flag |= v != v;
        if (is_max ? v > r->f : v < r->f) r->f = v;
    }
}

static void int_extremum_row(bool is_max, ct_dtype dtype, const char *p, int64_t stride, int64_t n,
                             ct__reduce_part *r) {
    int64_t bias = ct__order_bias(dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = ct__load_i64(p + i * stride, dtype) ^ bias;
        if (is_max ? v > r->i : v < r->i) r->i = v;
    }
}

/* Whether v replaces the current best of a float arg-extremum: the first NaN wins and
 * stays; otherwise a strictly better value (so ties keep the first index). */
static bool float_arg_better(bool is_max, double v, double best) {
    if (best != best) return false;
    if (v != v) return true;
    return is_max ? v > best : v < best;
}

static void arg_row(bool is_max, bool is_float, ct_dtype dtype, const char *p, int64_t stride,
                    int64_t n, int64_t first, ct__reduce_part *r) {
    for (int64_t i = 0; i < n; i++) {
        const char *q = p + i * stride;
        if (is_float) {
            double v = ct__load_f64(q, dtype);
            if (r->index < 0 || float_arg_better(is_max, v, r->f)) r->f = v, r->index = first + i;
        } else {
            int64_t v = ct__load_i64(q, dtype) ^ ct__order_bias(dtype);
            if (r->index < 0 || (is_max ? v > r->i : v < r->i)) r->i = v, r->index = first + i;
        }
    }
}

static void logical_row(bool is_all, ct_dtype dtype, const char *p, int64_t stride, int64_t n,
                        ct__reduce_part *r) {
    /* all stops at the first zero, any at the first non-zero: the answer is then known. */
    for (int64_t i = 0; i < n && r->flag == is_all; i++)
        if ((ct__load_f64(p + i * stride, dtype) != 0.0) != is_all) r->flag = !is_all;
}

void ct__reduce_acc_init(ct__reduce_kind kind, ct__reduce_acc *acc) {
    acc->sum.count = 0;
    ct__reduce_part *r = &acc->part;
    r->f = 0.0;
    r->u = 0;
    r->i = 0;
    r->index = -1;
    r->flag = false;
    switch (kind) {
    case CT_RK_FPROD: r->f = 1.0; break;
    case CT_RK_IPROD: r->u = 1; break;
    case CT_RK_FMAX: r->f = -INFINITY; break;
    case CT_RK_FMIN: r->f = INFINITY; break;
    case CT_RK_IMAX: r->i = INT64_MIN; break;
    case CT_RK_IMIN: r->i = INT64_MAX; break;
    case CT_RK_ALL: r->flag = true; break;
    default: break;
    }
}

void ct__reduce_acc_row(ct__reduce_kind kind, ct_dtype dtype, const char *p, int64_t stride,
                        int64_t n, int64_t first, double mean, ct__reduce_acc *acc) {
    ct__reduce_part *r = &acc->part;
    switch (kind) {
    case CT_RK_FSUM: sum_row(dtype, p, stride, n, false, mean, &acc->sum); break;
    case CT_RK_SQDEV: sum_row(dtype, p, stride, n, true, mean, &acc->sum); break;
    case CT_RK_ISUM:
        for (int64_t i = 0; i < n; i++) r->u += (uint64_t)ct__load_i64(p + i * stride, dtype);
        break;
    case CT_RK_FPROD:
        for (int64_t i = 0; i < n; i++) r->f *= ct__load_f64(p + i * stride, dtype);
        break;
    case CT_RK_IPROD:
        for (int64_t i = 0; i < n; i++) r->u *= (uint64_t)ct__load_i64(p + i * stride, dtype);
        break;
    case CT_RK_FMAX: extremum_row(true, dtype, p, stride, n, r); break;
    case CT_RK_FMIN: extremum_row(false, dtype, p, stride, n, r); break;
    case CT_RK_IMAX: int_extremum_row(true, dtype, p, stride, n, r); break;
    case CT_RK_IMIN: int_extremum_row(false, dtype, p, stride, n, r); break;
    case CT_RK_ALL: logical_row(true, dtype, p, stride, n, r); break;
    case CT_RK_ANY: logical_row(false, dtype, p, stride, n, r); break;
    case CT_RK_FARGMAX: arg_row(true, true, dtype, p, stride, n, first, r); break;
    case CT_RK_FARGMIN: arg_row(false, true, dtype, p, stride, n, first, r); break;
    case CT_RK_IARGMAX: arg_row(true, false, dtype, p, stride, n, first, r); break;
    case CT_RK_IARGMIN: arg_row(false, false, dtype, p, stride, n, first, r); break;
    }
}

ct__reduce_part ct__reduce_acc_result(ct__reduce_kind kind, const ct__reduce_acc *acc) {
    ct__reduce_part r = acc->part;
    if (kind == CT_RK_FSUM || kind == CT_RK_SQDEV) r.f = pairwise_total(&acc->sum);
    return r;
}

void ct__reduce_acc_merge(ct__reduce_kind kind, ct__reduce_acc *acc, const ct__reduce_part *next) {
    ct__reduce_part *r = &acc->part;
    bool is_max = kind == CT_RK_FARGMAX || kind == CT_RK_IARGMAX;
    switch (kind) {
    case CT_RK_FSUM:
    case CT_RK_SQDEV: pairwise_push(&acc->sum, next->f); break;
    case CT_RK_ISUM: r->u += next->u; break;
    case CT_RK_FPROD: r->f *= next->f; break;
    case CT_RK_IPROD: r->u *= next->u; break;
    case CT_RK_FMAX:
        r->flag |= next->flag;
        if (next->f > r->f) r->f = next->f;
        break;
    case CT_RK_FMIN:
        r->flag |= next->flag;
        if (next->f < r->f) r->f = next->f;
        break;
    case CT_RK_IMAX:
        if (next->i > r->i) r->i = next->i;
        break;
    case CT_RK_IMIN:
        if (next->i < r->i) r->i = next->i;
        break;
    case CT_RK_ALL: r->flag = r->flag && next->flag; break;
    case CT_RK_ANY: r->flag = r->flag || next->flag; break;
    case CT_RK_FARGMAX:
    case CT_RK_FARGMIN:
        if (next->index >= 0 && (r->index < 0 || float_arg_better(is_max, next->f, r->f)))
            *r = *next;
        break;
    case CT_RK_IARGMAX:
    case CT_RK_IARGMIN:
        if (next->index >= 0 && (r->index < 0 || (is_max ? next->i > r->i : next->i < r->i)))
            *r = *next;
        break;
    }
}

void ct__reduce_tile_init(ct__reduce_tile *tile, int w, const double *mean) {
    tile->w = w;
    tile->in_block = 0;
    tile->mean = mean;
    for (int k = 0; k < w; k++) {
        tile->block[k] = 0.0;
        tile->sum[k].count = 0;
    }
}

static void tile_flush(ct__reduce_tile *tile) {
    for (int k = 0; k < tile->w; k++) {
        pairwise_push(&tile->sum[k], tile->block[k]);
        tile->block[k] = 0.0;
    }
    tile->in_block = 0;
}

/* One step: block[k] += TERM(x[k]) for the tile's w outputs. */
#define DEFINE_TILE_STEP(name, T)                                                                  \
    static void name(ct__reduce_tile *tile, const T *x) {                                          \
        int w = tile->w;                                                                           \
        double *block = tile->block;                                                               \
        const double *mean = tile->mean;                                                           \
        if (mean)                                                                                  \
            for (int k = 0; k < w; k++) block[k] += TERM_SQDEV((double)x[k], mean[k]);             \
        else                                                                                       \
            for (int k = 0; k < w; k++) block[k] += (double)x[k];                                  \
    }
DEFINE_TILE_STEP(tile_step_f32, float)
DEFINE_TILE_STEP(tile_step_f64, double)

void ct__reduce_tile_feed(ct__reduce_tile *tile, ct_dtype dtype, const char *p, int64_t stride,
                          int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        const char *q = p + j * stride;
        if (dtype == CT_F32)
            tile_step_f32(tile, (const float *)q);
        else
            tile_step_f64(tile, (const double *)q);
        if (++tile->in_block == BLOCK) tile_flush(tile);
    }
}

void ct__reduce_tile_totals(ct__reduce_tile *tile, double *totals) {
    if (tile->in_block) tile_flush(tile);
    for (int k = 0; k < tile->w; k++) totals[k] = pairwise_total(&tile->sum[k]);
}

/* CPU batch normalisation over channels-last x (args->channels_last: element (b, ch, j) at
 * row b * inner + j, column ch of a rows x c matrix), forward and backward, with the fused ReLU
 * as cpu_batch_norm.c. Channels are innermost, so the loops run along a row over all channels
 * at once (one vector lane per channel, each with its own accumulator) and the rows split into
 * blocks of at most ROW_BLOCK elements, the blocks into at most MAX_CHUNKS chunks of
 * consecutive blocks (both counts depend on the shape alone). The chunks go over the OpenMP
 * team, each through its blocks in order into its own per-channel partial results, and each
 * channel's partials are combined in chunk order, so the result never depends on the thread
 * count: two runs give the same bits. The partials take a few KiB of heap, never whole pages.
 *
 * Training statistics: each block's per-channel mean and sum of squared deviations are
 * two-pass over the block (the second pass reads it from cache; the deviations' own sum
 * corrects the mean's rounding), merged into the chunk's and then across chunks by Chan, Golub
 * and LeVeque's update, as the NCHW kernel merges its blocks. Arithmetic is in double. */
#include <math.h>

#include "backend/cpu/cpu_batch_norm_impl.h"
#include "core/error_impl.h"

/* Elements of a block of rows (at least one row): 16 KiB of f64, inside L1. */
#define ROW_BLOCK 2048
/* Chunks of blocks at most: enough for any thread count, few enough partials. */
#define MAX_CHUNKS 64

/* The rows, rows per block, blocks and chunks of a. */
typedef struct blocking {
    int64_t rows, per_block, blocks, chunks;
} blocking;

static blocking blocking_of(const ct__batch_norm_args *a) {
    blocking b = {a->n * a->inner, ROW_BLOCK / a->c, 0, 0};
    if (b.per_block < 1) b.per_block = 1;
    b.blocks = (b.rows + b.per_block - 1) / b.per_block;
    b.chunks = b.blocks < MAX_CHUNKS ? b.blocks : MAX_CHUNKS;
    return b;
}

/* Blocks [*b0, *b1) of chunk k. */
static void chunk_blocks(const blocking *b, int64_t k, int64_t *b0, int64_t *b1) {
    *b0 = k * b->blocks / b->chunks;
    *b1 = (k + 1) * b->blocks / b->chunks;
}

/* Rows [*r0, *r1) of block i. */
static void block_rows(const blocking *b, int64_t i, int64_t *r0, int64_t *r1) {
    *r0 = i * b->per_block;
    *r1 = *r0 + b->per_block < b->rows ? *r0 + b->per_block : b->rows;
}

static void zero(double *p, int64_t n) {
    for (int64_t i = 0; i < n; i++) p[i] = 0.0;
}

/* The per-channel mean and sum of squared deviations of rows [r0, r1), into mean[c] and
 * m2[c] (dev[c] is scratch). */
CT_CPU_INLINE void block_moments(const ct__batch_norm_args *a, int64_t r0, int64_t r1, double *mean,
                                 double *dev, double *m2, ct_dtype dtype) {
    const char *x = a->x;
    const int64_t c = a->c;
    const double count = (double)(r1 - r0);
    zero(mean, c), zero(dev, c), zero(m2, c);
    for (int64_t r = r0; r < r1; r++) {
        SIMD()
        for (int64_t ch = 0; ch < c; ch++) mean[ch] += ct__ldf(x, r * c + ch, dtype);
    }
    for (int64_t ch = 0; ch < c; ch++) mean[ch] /= count;
    for (int64_t r = r0; r < r1; r++) {
        SIMD()
        for (int64_t ch = 0; ch < c; ch++) {
            double d = ct__ldf(x, r * c + ch, dtype) - mean[ch];
            dev[ch] += d;
            m2[ch] += d * d;
        }
    }
    for (int64_t ch = 0; ch < c; ch++) {
        double sq = m2[ch] - dev[ch] * dev[ch] / count;
        mean[ch] += dev[ch] / count;
        m2[ch] = sq > 0.0 ? sq : 0.0;
    }
}

/* y = x * scale + shift over rows [r0, r1), then relu when relu. */
CT_CPU_INLINE void normalise_rows(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                                  const double *scale, const double *shift, bool relu,
                                  ct_dtype dtype) {
    const char *x = a->x;
    char *y = a->y;
    const int64_t c = a->c;
    for (int64_t r = r0; r < r1; r++) {
        if (relu) {
            SIMD()
            for (int64_t ch = 0; ch < c; ch++)
                store_relu(y, r * c + ch, dtype,
                           ct__ldf(x, r * c + ch, dtype) * scale[ch] + shift[ch]);
        } else {
            SIMD()
            for (int64_t ch = 0; ch < c; ch++)
                ct__stf(y, r * c + ch, dtype,
                        ct__ldf(x, r * c + ch, dtype) * scale[ch] + shift[ch]);
        }
    }
}

/* Per-channel sums of g and g * (x - mean) over rows [r0, r1) into sum_g[c] and sum_gd[c]. */
CT_CPU_INLINE void block_grad_sums(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                                   double *sum_g, double *sum_gd, bool relu, ct_dtype dtype) {
    const char *x = a->x, *grad_out = a->grad_out, *y = a->y;
    const double *mean = (const double *)a->mean;
    const int64_t c = a->c;
    zero(sum_g, c), zero(sum_gd, c);
    for (int64_t r = r0; r < r1; r++) {
        SIMD()
        for (int64_t ch = 0; ch < c; ch++) {
            double g = grad_at(grad_out, y, relu, r * c + ch, dtype);
            sum_g[ch] += g;
            sum_gd[ch] += g * (ct__ldf(x, r * c + ch, dtype) - mean[ch]);
        }
    }
}

/* grad_x = k * (g - mean_g - (x - mean) * slope) over rows [r0, r1), per channel. */
CT_CPU_INLINE void grad_x_rows(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                               const double *k, const double *mean_g, const double *slope,
                               bool relu, ct_dtype dtype) {
    const char *x = a->x, *grad_out = a->grad_out, *y = a->y;
    const double *mean = (const double *)a->mean;
    const int64_t c = a->c;
    for (int64_t r = r0; r < r1; r++) {
        SIMD()
        for (int64_t ch = 0; ch < c; ch++) {
            double g = grad_at(grad_out, y, relu, r * c + ch, dtype);
            double d = ct__ldf(x, r * c + ch, dtype) - mean[ch];
            ct__stf(a->grad_x, r * c + ch, dtype, k[ch] * (g - mean_g[ch] - d * slope[ch]));
        }
    }
}

CT_CPU_CLONES_AVX512 static void moments_of(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                                            double *part) {
    double *mean = part, *dev = part + a->c, *m2 = part + 2 * a->c;
    CT_CPU_BY_FLOAT_DTYPE(a->dtype, block_moments, a, r0, r1, mean, dev, m2);
}

/* Chunk k's per-channel moments: its blocks' (each into block[3c]) merged in order into
 * mean[c] and m2[c], of count rows. */
static void chunk_moments(const ct__batch_norm_args *a, const blocking *b, int64_t k, double *block,
                          double *mean, double *m2) {
    int64_t b0, b1, count = 0;
    chunk_blocks(b, k, &b0, &b1);
    for (int64_t i = b0; i < b1; i++) {
        int64_t r0, r1;
        block_rows(b, i, &r0, &r1);
        moments_of(a, r0, r1, block);
        for (int64_t ch = 0; ch < a->c; ch++) {
            moments acc = {(double)count, count ? mean[ch] : 0.0, count ? m2[ch] : 0.0};
            merge(&acc, (double)(r1 - r0), block[ch], block[2 * a->c + ch]);
            mean[ch] = acc.mean, m2[ch] = acc.m2;
        }
        count += r1 - r0;
    }
}

CT_CPU_CLONES_AVX512 static void normalise_of(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                                              const double *scale, const double *shift) {
    if (a->relu)
        CT_CPU_BY_FLOAT_DTYPE(a->dtype, normalise_rows, a, r0, r1, scale, shift, true);
    else
        CT_CPU_BY_FLOAT_DTYPE(a->dtype, normalise_rows, a, r0, r1, scale, shift, false);
}

CT_CPU_CLONES_AVX512 static void grad_sums_of(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                                              double *part) {
    if (a->relu)
        CT_CPU_BY_FLOAT_DTYPE(a->dtype, block_grad_sums, a, r0, r1, part, part + a->c, true);
    else
        CT_CPU_BY_FLOAT_DTYPE(a->dtype, block_grad_sums, a, r0, r1, part, part + a->c, false);
}

CT_CPU_CLONES_AVX512 static void grad_x_of(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                                           const double *coef) {
    const double *k = coef, *mean_g = coef + a->c, *slope = coef + 2 * a->c;
    if (a->relu)
        CT_CPU_BY_FLOAT_DTYPE(a->dtype, grad_x_rows, a, r0, r1, k, mean_g, slope, true);
    else
        CT_CPU_BY_FLOAT_DTYPE(a->dtype, grad_x_rows, a, r0, r1, k, mean_g, slope, false);
}

/* The rows of chunk k. */
static int64_t chunk_row_count(const blocking *b, int64_t k) {
    int64_t b0, b1, r0, r1, unused;
    chunk_blocks(b, k, &b0, &b1);
    block_rows(b, b0, &r0, &unused);
    block_rows(b, b1 - 1, &unused, &r1);
    return r1 - r0;
}

/* Channel ch's mean and invstd (the batch's, merged over the chunks' moments in chunk order,
 * each chunk's 5c partials holding its mean and m2 at 3c and 4c; or the running ones), stored
 * with its scale and shift. */
static void channel_stats(const ct__batch_norm_args *a, const blocking *b, const double *parts,
                          int64_t ch, double *scale, double *shift) {
    double mean, invstd;
    if (a->training) {
        moments acc = {0.0, 0.0, 0.0};
        for (int64_t k = 0; k < b->chunks; k++) {
            const double *part = parts + k * 5 * a->c;
            merge(&acc, (double)chunk_row_count(b, k), part[3 * a->c + ch], part[4 * a->c + ch]);
        }
        mean = acc.mean;
        invstd = 1.0 / sqrt(acc.m2 / acc.count + a->eps);
        update_running(a, ch, mean, acc.m2);
    } else {
        mean = ct__ldf(a->running_mean, ch * a->running_mean_stride, a->running_mean_dtype);
        double var = ct__ldf(a->running_var, ch * a->running_var_stride, a->running_var_dtype);
        invstd = 1.0 / sqrt(var + a->eps);
    }
    ((double *)a->mean)[ch] = mean;
    ((double *)a->invstd)[ch] = invstd;
    scale[ch] = invstd * param_or(a->weight, ch, a->dtype, 1.0);
    shift[ch] = param_or(a->bias, ch, a->dtype, 0.0) - mean * scale[ch];
}

/* Scratch of n doubles, or NULL with the error set. */
static double *scratch(int64_t n) {
    double *p = ct__malloc((size_t)n * sizeof(double));
    if (!p) ct__error(CT_ERR_OUT_OF_MEMORY, "batch norm: out of host memory for its partial sums");
    return p;
}

ct_status ct__cpu_batch_norm_nhwc(const ct__batch_norm_args *a) {
    blocking b = blocking_of(a);
    bool parallel = a->n * a->c * a->inner >= CT_CPU_PARALLEL_THRESHOLD;
    const int64_t c = a->c, part_size = a->training ? b.chunks * 5 * c : 0;
    double *work = scratch(part_size + 2 * c);
    if (!work) return ct_last_status();
    double *scale = work + part_size, *shift = scale + c;
    if (a->training) {
#ifdef _OPENMP
#pragma omp parallel for if (parallel) schedule(static)
#endif
        for (int64_t k = 0; k < b.chunks; k++) {
            double *part = work + k * 5 * c;
            chunk_moments(a, &b, k, part, part + 3 * c, part + 4 * c);
        }
    }
    for (int64_t ch = 0; ch < a->c; ch++) channel_stats(a, &b, work, ch, scale, shift);
#ifdef _OPENMP
#pragma omp parallel for if (parallel) schedule(static)
#endif
    for (int64_t i = 0; i < b.blocks; i++) {
        int64_t r0, r1;
        block_rows(&b, i, &r0, &r1);
        normalise_of(a, r0, r1, scale, shift);
    }
    ct__free_mem(work);
    return CT_OK;
}

/* Training: dx = w * invstd * (g - mean(g) - (x - mean) * invstd^2 * mean(g * (x - mean)));
 * evaluation: dx = g * w * invstd. dw = sum(g * xhat), db = sum(g); g masked by the ReLU's
 * output when relu. The sums go per block, then per channel in block order. */
ct_status ct__cpu_batch_norm_nhwc_backward(const ct__batch_norm_args *a) {
    blocking b = blocking_of(a);
    bool parallel = a->n * a->c * a->inner >= CT_CPU_PARALLEL_THRESHOLD;
    const int64_t c = a->c, part_size = b.chunks * 2 * c;
    double *work = scratch(part_size + 3 * c);
    if (!work) return ct_last_status();
    double *coef = work + part_size;
#ifdef _OPENMP
#pragma omp parallel for if (parallel) schedule(static)
#endif
    for (int64_t k = 0; k < b.chunks; k++) {
        int64_t b0, b1, r0, r1, unused;
        chunk_blocks(&b, k, &b0, &b1);
        block_rows(&b, b0, &r0, &unused);
        block_rows(&b, b1 - 1, &unused, &r1);
        grad_sums_of(a, r0, r1, work + k * 2 * c);
    }
    const double count = (double)b.rows;
    for (int64_t ch = 0; ch < c; ch++) {
        double sum_g = 0.0, sum_gd = 0.0;
        for (int64_t k = 0; k < b.chunks; k++) {
            sum_g += work[k * 2 * c + ch];
            sum_gd += work[k * 2 * c + c + ch];
        }
        const double invstd = ((const double *)a->invstd)[ch];
        if (a->grad_weight) ct__stf(a->grad_weight, ch, a->dtype, sum_gd * invstd);
        if (a->grad_bias) ct__stf(a->grad_bias, ch, a->dtype, sum_g);
        coef[ch] = param_or(a->weight, ch, a->dtype, 1.0) * invstd;
        coef[c + ch] = a->training ? sum_g / count : 0.0;
        coef[2 * c + ch] = a->training ? sum_gd * invstd * invstd / count : 0.0;
    }
    if (a->grad_x) {
#ifdef _OPENMP
#pragma omp parallel for if (parallel) schedule(static)
#endif
        for (int64_t i = 0; i < b.blocks; i++) {
            int64_t r0, r1;
            block_rows(&b, i, &r0, &r1);
            grad_x_of(a, r0, r1, coef);
        }
    }
    ct__free_mem(work);
    return CT_OK;
}

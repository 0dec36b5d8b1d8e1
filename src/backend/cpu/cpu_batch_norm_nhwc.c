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

/* Channels per group of the accumulating loops: each group's sums stay in registers (16
 * doubles: two AVX-512 vectors) while the loop walks the rows. */
#define GROUP 16

/* The sums of x over rows [r0, r1), channels [ch0, ch0 + n) (n <= GROUP), into sum[n]; with
 * centre (not NULL), the sums of d = x - centre[ch] into sum and of d * d into sq. N is n when
 * it is a constant (the full groups), so that the loops unroll into vectors. */
CT_CPU_INLINE void group_sums(const char *x, int64_t c, int64_t r0, int64_t r1, int64_t ch0,
                              int64_t n, const double *centre, double *sum, double *sq,
                              ct_dtype dtype) {
    double s[GROUP] = {0.0}, q[GROUP] = {0.0}, m[GROUP] = {0.0};
    if (centre)
        for (int64_t j = 0; j < n; j++) m[j] = centre[ch0 + j];
    for (int64_t r = r0; r < r1; r++) {
        const int64_t base = r * c + ch0;
        SIMD()
        for (int64_t j = 0; j < n; j++) {
            double d = ct__ldf(x, base + j, dtype) - m[j];
            s[j] += d;
            q[j] += d * d;
        }
    }
    for (int64_t j = 0; j < n; j++) sum[j] = s[j];
    if (sq)
        for (int64_t j = 0; j < n; j++) sq[j] = q[j];
}

/* The per-channel mean and sum of squared deviations of rows [r0, r1), into mean[c] and
 * m2[c] (dev[c] is scratch). */
CT_CPU_INLINE void block_moments(const ct__batch_norm_args *a, int64_t r0, int64_t r1, double *mean,
                                 double *dev, double *m2, ct_dtype dtype) {
    const int64_t c = a->c;
    const double count = (double)(r1 - r0);
    for (int64_t ch0 = 0; ch0 < c; ch0 += GROUP) {
        if (c - ch0 >= GROUP)
            group_sums(a->x, c, r0, r1, ch0, GROUP, NULL, mean + ch0, NULL, dtype);
        else
            group_sums(a->x, c, r0, r1, ch0, c - ch0, NULL, mean + ch0, NULL, dtype);
    }
    for (int64_t ch = 0; ch < c; ch++) mean[ch] /= count;
    for (int64_t ch0 = 0; ch0 < c; ch0 += GROUP) {
        if (c - ch0 >= GROUP)
            group_sums(a->x, c, r0, r1, ch0, GROUP, mean, dev + ch0, m2 + ch0, dtype);
        else
            group_sums(a->x, c, r0, r1, ch0, c - ch0, mean, dev + ch0, m2 + ch0, dtype);
    }
    for (int64_t ch = 0; ch < c; ch++) {
        double sq = m2[ch] - dev[ch] * dev[ch] / count;
        mean[ch] += dev[ch] / count;
        m2[ch] = sq > 0.0 ? sq : 0.0;
    }
}

/* y = x * scale + shift over rows [r0, r1), channels [ch0, ch0 + n) (n <= GROUP), then relu
 * when relu; N as group_sums'. */
CT_CPU_INLINE void group_normalise(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                                   int64_t ch0, int64_t n, const double *scale, const double *shift,
                                   bool relu, ct_dtype dtype) {
    const char *x = a->x;
    char *y = a->y;
    const int64_t c = a->c;
    double sc[GROUP] = {0.0}, sh[GROUP] = {0.0};
    for (int64_t j = 0; j < n; j++) sc[j] = scale[ch0 + j], sh[j] = shift[ch0 + j];
    for (int64_t r = r0; r < r1; r++) {
        const int64_t base = r * c + ch0;
        if (relu) {
            SIMD()
            for (int64_t j = 0; j < n; j++)
                store_relu(y, base + j, dtype, ct__ldf(x, base + j, dtype) * sc[j] + sh[j]);
        } else {
            SIMD()
            for (int64_t j = 0; j < n; j++)
                ct__stf(y, base + j, dtype, ct__ldf(x, base + j, dtype) * sc[j] + sh[j]);
        }
    }
}

/* y = x * scale + shift over rows [r0, r1), then relu when relu. */
CT_CPU_INLINE void normalise_rows(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                                  const double *scale, const double *shift, bool relu,
                                  ct_dtype dtype) {
    for (int64_t ch0 = 0; ch0 < a->c; ch0 += GROUP) {
        if (a->c - ch0 >= GROUP)
            group_normalise(a, r0, r1, ch0, GROUP, scale, shift, relu, dtype);
        else
            group_normalise(a, r0, r1, ch0, a->c - ch0, scale, shift, relu, dtype);
    }
}

/* The sums of g and g * (x - mean) over rows [r0, r1), channels [ch0, ch0 + n) (n <= GROUP),
 * into sum_g[n] and sum_gd[n]; N as group_sums'. */
CT_CPU_INLINE void group_grad_sums(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                                   int64_t ch0, int64_t n, double *sum_g, double *sum_gd, bool relu,
                                   ct_dtype dtype) {
    const char *x = a->x, *grad_out = a->grad_out, *y = a->y;
    const int64_t c = a->c;
    double sg[GROUP] = {0.0}, sgd[GROUP] = {0.0}, m[GROUP] = {0.0};
    for (int64_t j = 0; j < n; j++) m[j] = ((const double *)a->mean)[ch0 + j];
    for (int64_t r = r0; r < r1; r++) {
        const int64_t base = r * c + ch0;
        SIMD()
        for (int64_t j = 0; j < n; j++) {
            double g = grad_at(grad_out, y, relu, base + j, dtype);
            sg[j] += g;
            sgd[j] += g * (ct__ldf(x, base + j, dtype) - m[j]);
        }
    }
    for (int64_t j = 0; j < n; j++) sum_g[j] = sg[j], sum_gd[j] = sgd[j];
}

/* Per-channel sums of g and g * (x - mean) over rows [r0, r1) into sum_g[c] and sum_gd[c]. */
CT_CPU_INLINE void block_grad_sums(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                                   double *sum_g, double *sum_gd, bool relu, ct_dtype dtype) {
    for (int64_t ch0 = 0; ch0 < a->c; ch0 += GROUP) {
        if (a->c - ch0 >= GROUP)
            group_grad_sums(a, r0, r1, ch0, GROUP, sum_g + ch0, sum_gd + ch0, relu, dtype);
        else
            group_grad_sums(a, r0, r1, ch0, a->c - ch0, sum_g + ch0, sum_gd + ch0, relu, dtype);
    }
}

/* grad_x = k * (g - mean_g - (x - mean) * slope) over rows [r0, r1), channels
 * [ch0, ch0 + n) (n <= GROUP); N as group_sums'. */
CT_CPU_INLINE void group_grad_x(const ct__batch_norm_args *a, int64_t r0, int64_t r1, int64_t ch0,
                                int64_t n, const double *k, const double *mean_g,
                                const double *slope, bool relu, ct_dtype dtype) {
    const char *x = a->x, *grad_out = a->grad_out, *y = a->y;
    const int64_t c = a->c;
    double kk[GROUP] = {0.0}, mg[GROUP] = {0.0}, sl[GROUP] = {0.0}, m[GROUP] = {0.0};
    for (int64_t j = 0; j < n; j++) {
        kk[j] = k[ch0 + j], mg[j] = mean_g[ch0 + j], sl[j] = slope[ch0 + j];
        m[j] = ((const double *)a->mean)[ch0 + j];
    }
    for (int64_t r = r0; r < r1; r++) {
        const int64_t base = r * c + ch0;
        SIMD()
        for (int64_t j = 0; j < n; j++) {
            double g = grad_at(grad_out, y, relu, base + j, dtype);
            double d = ct__ldf(x, base + j, dtype) - m[j];
            ct__stf(a->grad_x, base + j, dtype, kk[j] * (g - mg[j] - d * sl[j]));
        }
    }
}

/* grad_x = k * (g - mean_g - (x - mean) * slope) over rows [r0, r1), per channel. */
CT_CPU_INLINE void grad_x_rows(const ct__batch_norm_args *a, int64_t r0, int64_t r1,
                               const double *k, const double *mean_g, const double *slope,
                               bool relu, ct_dtype dtype) {
    for (int64_t ch0 = 0; ch0 < a->c; ch0 += GROUP) {
        if (a->c - ch0 >= GROUP)
            group_grad_x(a, r0, r1, ch0, GROUP, k, mean_g, slope, relu, dtype);
        else
            group_grad_x(a, r0, r1, ch0, a->c - ch0, k, mean_g, slope, relu, dtype);
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
    moments acc = {0.0, 0.0, 0.0};
    if (a->training) {
        for (int64_t k = 0; k < b->chunks; k++) {
            const double *part = parts + k * 5 * a->c;
            merge(&acc, (double)chunk_row_count(b, k), part[3 * a->c + ch], part[4 * a->c + ch]);
        }
    }
    channel_affine(a, ch, acc, a->dtype, &scale[ch], &shift[ch]);
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

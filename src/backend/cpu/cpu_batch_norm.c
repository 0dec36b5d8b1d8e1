/* CPU batch normalisation, forward and backward, with the ReLU that follows it fused when
 * args->relu (contracts in backend/norm_args_impl.h). Channels split over the OpenMP team;
 * one thread does a channel's whole work, in an order fixed by the shapes, so two runs give
 * the same bits.
 *
 * Arithmetic is in double, as the other kernels of the family (cpu_norm_impl.h), on vectors:
 * the inner loops' sums are OpenMP simd reductions (each lane sums its own elements, the
 * lanes added at the end), and the channel functions are compiled for AVX-512, AVX2 and the
 * baseline, picked at load time (CT_CPU_CLONES_AVX512).
 *
 * Training statistics take one pass over the data from memory: the channel's elements go in
 * blocks of at most BLOCK elements, each block's mean and sum of squared deviations two-pass
 * (its second pass reads the block from the L1 cache; the deviations' own sum corrects the
 * rounding of the block's mean), and the blocks are merged by Chan, Golub and LeVeque's
 * pairwise update, so no sum of squares cancels against a squared sum. */
#include <math.h>

#include "backend/cpu/cpu_batch_norm_impl.h"

/* Elements of a block of the statistics: 16 KiB of f64, 8 KiB of f32, inside L1. */
#define BLOCK 2048

/* Elements [off, off + len) of planes [b0, b1) of channel ch, merged into acc: the block's
 * mean, then its squared deviations from that mean, corrected by their sum. */
CT_CPU_INLINE void block_moments(const ct__batch_norm_args *a, int64_t ch, int64_t b0, int64_t b1,
                                 int64_t off, int64_t len, moments *acc, ct_dtype dtype) {
    const char *x = a->x;
    const int64_t stride = a->c * a->inner, first = ch * a->inner + off;
    double sum = 0.0, dev = 0.0, sq = 0.0, count = (double)((b1 - b0) * len);
    for (int64_t b = b0; b < b1; b++) {
        const int64_t base = b * stride + first;
        SIMD_SUM(sum)
        for (int64_t j = 0; j < len; j++) sum += ct__ldf(x, base + j, dtype);
    }
    const double mean = sum / count;
    for (int64_t b = b0; b < b1; b++) {
        const int64_t base = b * stride + first;
        SIMD_SUM(dev, sq)
        for (int64_t j = 0; j < len; j++) {
            double d = ct__ldf(x, base + j, dtype) - mean;
            dev += d;
            sq += d * d;
        }
    }
    double m2 = sq - dev * dev / count;
    merge(acc, count, mean + dev / count, m2 > 0.0 ? m2 : 0.0);
}

/* The training statistics of channel ch: its mean and sum of squared deviations. A block is
 * a run of whole planes (n's elements of the channel, `inner` each) when they are short,
 * else a piece of one plane. */
CT_CPU_INLINE moments channel_moments(const ct__batch_norm_args *a, int64_t ch, ct_dtype dtype) {
    moments acc = {0.0, 0.0, 0.0};
    int64_t s = a->inner, planes = s >= BLOCK ? 1 : BLOCK / s;
    for (int64_t b0 = 0; b0 < a->n; b0 += planes) {
        int64_t b1 = b0 + planes < a->n ? b0 + planes : a->n;
        for (int64_t off = 0; off < s; off += BLOCK)
            block_moments(a, ch, b0, b1, off, s - off < BLOCK ? s - off : BLOCK, &acc, dtype);
    }
    return acc;
}

/* y = x * scale + shift over the channel, then relu when a->relu. */
CT_CPU_INLINE void normalise(const ct__batch_norm_args *a, int64_t ch, double scale, double shift,
                             ct_dtype dtype) {
    const char *x = a->x;
    char *y = a->y;
    const int64_t n = a->n, s = a->inner, stride = a->c * s;
    for (int64_t b = 0; b < n; b++) {
        const int64_t base = b * stride + ch * s;
        if (a->relu) {
            SIMD()
            for (int64_t j = 0; j < s; j++)
                store_relu(y, base + j, dtype, ct__ldf(x, base + j, dtype) * scale + shift);
        } else {
            SIMD()
            for (int64_t j = 0; j < s; j++)
                ct__stf(y, base + j, dtype, ct__ldf(x, base + j, dtype) * scale + shift);
        }
    }
}

CT_CPU_INLINE void forward_channel(const ct__batch_norm_args *a, int64_t ch, ct_dtype dtype) {
    moments m = a->training ? channel_moments(a, ch, dtype) : (moments){0.0, 0.0, 0.0};
    double scale, shift;
    channel_affine(a, ch, m, dtype, &scale, &shift);
    normalise(a, ch, scale, shift, dtype);
}

/* The sums of g and g * (x - mean) over elements [base, base + s), g as grad_at's; relu is a
 * constant where the callers pass one. */
CT_CPU_INLINE void grad_sums(const char *x, const char *grad_out, const char *y, bool relu,
                             int64_t base, int64_t s, double mean, double *sum_g, double *sum_gd,
                             ct_dtype dtype) {
    double sg = 0.0, sgd = 0.0;
    SIMD_SUM(sg, sgd)
    for (int64_t j = 0; j < s; j++) {
        double g = grad_at(grad_out, y, relu, base + j, dtype);
        sg += g;
        sgd += g * (ct__ldf(x, base + j, dtype) - mean);
    }
    *sum_g += sg;
    *sum_gd += sgd;
}

/* grad_x = k * (g - mean_g - (x - mean) * slope) over elements [base, base + s). */
CT_CPU_INLINE void grad_x_plane(const char *x, const char *grad_out, const char *y, bool relu,
                                char *grad_x, int64_t base, int64_t s, double mean, double k,
                                double mean_g, double slope, ct_dtype dtype) {
    SIMD()
    for (int64_t j = 0; j < s; j++) {
        double g = grad_at(grad_out, y, relu, base + j, dtype);
        double d = ct__ldf(x, base + j, dtype) - mean;
        ct__stf(grad_x, base + j, dtype, k * (g - mean_g - d * slope));
    }
}

/* Training: dx = w * invstd * (g - mean(g) - (x - mean) * invstd^2 * mean(g * (x - mean)));
 * evaluation (the statistics are constants): dx = g * w * invstd. dw = sum(g * xhat),
 * db = sum(g); g masked by the ReLU's output when relu. */
CT_CPU_INLINE void backward_channel(const ct__batch_norm_args *a, int64_t ch, ct_dtype dtype) {
    const char *x = a->x, *grad_out = a->grad_out, *y = a->y;
    const int64_t n = a->n, s = a->inner, stride = a->c * s;
    const double mean = ((const double *)a->mean)[ch], invstd = ((const double *)a->invstd)[ch];
    double sum_g = 0.0, sum_gd = 0.0, count = (double)(n * s);
    for (int64_t b = 0; b < n; b++) {
        const int64_t base = b * stride + ch * s;
        if (a->relu)
            grad_sums(x, grad_out, y, true, base, s, mean, &sum_g, &sum_gd, dtype);
        else
            grad_sums(x, grad_out, y, false, base, s, mean, &sum_g, &sum_gd, dtype);
    }
    if (a->grad_weight) ct__stf(a->grad_weight, ch, dtype, sum_gd * invstd);
    if (a->grad_bias) ct__stf(a->grad_bias, ch, dtype, sum_g);
    if (!a->grad_x) return;
    const double k = param_or(a->weight, ch, dtype, 1.0) * invstd;
    const double mean_g = a->training ? sum_g / count : 0.0;
    const double slope = a->training ? sum_gd * invstd * invstd / count : 0.0;
    for (int64_t b = 0; b < n; b++) {
        const int64_t base = b * stride + ch * s;
        if (a->relu)
            grad_x_plane(x, grad_out, y, true, a->grad_x, base, s, mean, k, mean_g, slope, dtype);
        else
            grad_x_plane(x, grad_out, y, false, a->grad_x, base, s, mean, k, mean_g, slope, dtype);
    }
}

CT_CPU_CLONES_AVX512 static void forward_one(const ct__batch_norm_args *a, int64_t ch) {
    CT_CPU_BY_FLOAT_DTYPE(a->dtype, forward_channel, a, ch);
}

CT_CPU_CLONES_AVX512 static void backward_one(const ct__batch_norm_args *a, int64_t ch) {
    CT_CPU_BY_FLOAT_DTYPE(a->dtype, backward_channel, a, ch);
}

bool ct__cpu_batch_norm_channels_last(int device, const ct__batch_norm_args *args) {
    (void)device, (void)args;
    return true;
}

ct_status ct__cpu_batch_norm(int device, const ct__batch_norm_args *args) {
    (void)device;
    if (args->channels_last) return ct__cpu_batch_norm_nhwc(args);
#ifdef _OPENMP
#pragma omp parallel for if (args->n * args->c * args->inner >= CT_CPU_PARALLEL_THRESHOLD)         \
    schedule(static)
#endif
    for (int64_t ch = 0; ch < args->c; ch++) forward_one(args, ch);
    return CT_OK;
}

ct_status ct__cpu_batch_norm_backward(int device, const ct__batch_norm_args *args) {
    (void)device;
    if (args->channels_last) return ct__cpu_batch_norm_nhwc_backward(args);
#ifdef _OPENMP
#pragma omp parallel for if (args->n * args->c * args->inner >= CT_CPU_PARALLEL_THRESHOLD)         \
    schedule(static)
#endif
    for (int64_t ch = 0; ch < args->c; ch++) backward_one(args, ch);
    return CT_OK;
}

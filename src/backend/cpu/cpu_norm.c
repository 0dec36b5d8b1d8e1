/* CPU batch and layer normalisation kernels, forward and backward, fused: one kernel reads
 * a channel's (or row's) elements for its statistics and writes the normalised result, so
 * nothing is made of small ops. Batch norm splits channels over OpenMP threads; layer norm
 * splits rows, and its weight and bias gradients split columns (each thread sums its
 * columns over every row, so no two threads add into one element). Statistics are two-pass
 * (mean, then squared deviations) in double. */
#include <math.h>

#include "backend/cpu/cpu_norm_impl.h"

/* Columns per block of the layer-norm parameter gradients. */
#define COLUMN_BLOCK 64

static inline double param_or(const char *p, int64_t i, ct_dtype dtype, double absent) {
    return p ? ct__ldf(p, i, dtype) : absent;
}

/* The training statistics of channel ch: mean and sum of squared deviations. */
CT_CPU_INLINE void bn_stats(const ct__batch_norm_args *a, int64_t ch, double *mean, double *sq,
                            ct_dtype dtype) {
    int64_t s = a->inner, count = a->n * s;
    double sum = 0.0, dev = 0.0;
    for (int64_t b = 0; b < a->n; b++) {
        int64_t base = (b * a->c + ch) * s;
        for (int64_t j = 0; j < s; j++) sum += ct__ldf(a->x, base + j, dtype);
    }
    double m = sum / (double)count;
    for (int64_t b = 0; b < a->n; b++) {
        int64_t base = (b * a->c + ch) * s;
        for (int64_t j = 0; j < s; j++) {
            double d = ct__ldf(a->x, base + j, dtype) - m;
            dev += d * d;
        }
    }
    *mean = m;
    *sq = dev;
}

/* Fold the batch statistics into the running ones (unbiased variance, as PyTorch). */
static void bn_update_running(const ct__batch_norm_args *a, int64_t ch, double mean, double sq) {
    double count = (double)(a->n * a->inner), mom = a->momentum;
    if (a->running_mean) {
        int64_t i = ch * a->running_mean_stride;
        double old = ct__ldf(a->running_mean, i, a->running_mean_dtype);
        ct__stf(a->running_mean, i, a->running_mean_dtype, (1.0 - mom) * old + mom * mean);
    }
    if (a->running_var) {
        int64_t i = ch * a->running_var_stride;
        double old = ct__ldf(a->running_var, i, a->running_var_dtype);
        ct__stf(a->running_var, i, a->running_var_dtype,
                (1.0 - mom) * old + mom * sq / (count - 1.0));
    }
}

CT_CPU_INLINE void bn_channel(const ct__batch_norm_args *a, int64_t ch, ct_dtype dtype) {
    double mean, invstd;
    if (a->training) {
        double sq;
        bn_stats(a, ch, &mean, &sq, dtype);
        invstd = 1.0 / sqrt(sq / (double)(a->n * a->inner) + a->eps);
        bn_update_running(a, ch, mean, sq);
    } else {
        mean = ct__ldf(a->running_mean, ch * a->running_mean_stride, a->running_mean_dtype);
        double var = ct__ldf(a->running_var, ch * a->running_var_stride, a->running_var_dtype);
        invstd = 1.0 / sqrt(var + a->eps);
    }
    ((double *)a->mean)[ch] = mean;
    ((double *)a->invstd)[ch] = invstd;
    double scale = invstd * param_or(a->weight, ch, dtype, 1.0);
    double shift = param_or(a->bias, ch, dtype, 0.0) - mean * scale;
    for (int64_t b = 0; b < a->n; b++) {
        int64_t base = (b * a->c + ch) * a->inner;
        for (int64_t j = 0; j < a->inner; j++)
            ct__stf(a->y, base + j, dtype, ct__ldf(a->x, base + j, dtype) * scale + shift);
    }
}

ct_status ct__cpu_batch_norm(int device, const ct__batch_norm_args *args) {
    (void)device;
#ifdef _OPENMP
#pragma omp parallel for if (args->n * args->c * args->inner >= CT_CPU_PARALLEL_THRESHOLD)         \
    schedule(static)
#endif
    for (int64_t ch = 0; ch < args->c; ch++)
        CT_CPU_BY_FLOAT_DTYPE(args->dtype, bn_channel, args, ch);
    return CT_OK;
}

/* Training: dx = w * invstd * (g - mean(g) - xhat * mean(g * xhat)); evaluation (the
 * statistics are constants): dx = g * w * invstd. dw = sum(g * xhat), db = sum(g). */
CT_CPU_INLINE void bn_channel_backward(const ct__batch_norm_args *a, int64_t ch, ct_dtype dtype) {
    double mean = ((const double *)a->mean)[ch], invstd = ((const double *)a->invstd)[ch];
    double w = param_or(a->weight, ch, dtype, 1.0), sum_g = 0.0, sum_gd = 0.0;
    int64_t s = a->inner;
    double count = (double)(a->n * s);
    for (int64_t b = 0; b < a->n; b++) {
        int64_t base = (b * a->c + ch) * s;
        for (int64_t j = 0; j < s; j++) {
            double g = ct__ldf(a->grad_out, base + j, dtype);
            sum_g += g;
            sum_gd += g * (ct__ldf(a->x, base + j, dtype) - mean);
        }
    }
    if (a->grad_weight) ct__stf(a->grad_weight, ch, dtype, sum_gd * invstd);
    if (a->grad_bias) ct__stf(a->grad_bias, ch, dtype, sum_g);
    if (!a->grad_x) return;
    double k = w * invstd;
    double mean_g = a->training ? sum_g / count : 0.0;
    double slope = a->training ? sum_gd * invstd * invstd / count : 0.0;
    for (int64_t b = 0; b < a->n; b++) {
        int64_t base = (b * a->c + ch) * s;
        for (int64_t j = 0; j < s; j++) {
            double g = ct__ldf(a->grad_out, base + j, dtype);
            double d = ct__ldf(a->x, base + j, dtype) - mean;
            ct__stf(a->grad_x, base + j, dtype, k * (g - mean_g - d * slope));
        }
    }
}

ct_status ct__cpu_batch_norm_backward(int device, const ct__batch_norm_args *args) {
    (void)device;
#ifdef _OPENMP
#pragma omp parallel for if (args->n * args->c * args->inner >= CT_CPU_PARALLEL_THRESHOLD)         \
    schedule(static)
#endif
    for (int64_t ch = 0; ch < args->c; ch++)
        CT_CPU_BY_FLOAT_DTYPE(args->dtype, bn_channel_backward, args, ch);
    return CT_OK;
}

/* A row's input: x, or with a residual the sum x + residual, stored rounded to dtype (the
 * sum of two values of dtype in double rounds once to dtype, as ct_add's float sum does)
 * and read back from there. Its elements' total is added to *total. */
CT_CPU_INLINE const char *ln_input(const ct__layer_norm_args *a, int64_t base, double *total,
                                   ct_dtype dtype) {
    double sum = 0.0;
    if (!a->residual) {
        for (int64_t j = 0; j < a->n; j++) sum += ct__ldf(a->x, base + j, dtype);
        *total = sum;
        return a->x;
    }
    for (int64_t j = 0; j < a->n; j++) {
        double v = ct__ldf(a->x, base + j, dtype) + ct__ldf(a->residual, base + j, dtype);
        ct__stf(a->sum, base + j, dtype, v);
        sum += ct__ldf(a->sum, base + j, dtype);
    }
    *total = sum;
    return a->sum;
}

CT_CPU_INLINE void ln_row(const ct__layer_norm_args *a, int64_t r, ct_dtype dtype) {
    int64_t n = a->n, base = r * n;
    double sum = 0.0, sq = 0.0;
    const char *x = ln_input(a, base, &sum, dtype);
    double mean = sum / (double)n;
    for (int64_t j = 0; j < n; j++) {
        double d = ct__ldf(x, base + j, dtype) - mean;
        sq += d * d;
    }
    double invstd = 1.0 / sqrt(sq / (double)n + a->eps);
    ((double *)a->mean)[r] = mean;
    ((double *)a->invstd)[r] = invstd;
    for (int64_t j = 0; j < n; j++) {
        double v = (ct__ldf(x, base + j, dtype) - mean) * invstd;
        v = v * param_or(a->weight, j, dtype, 1.0) + param_or(a->bias, j, dtype, 0.0);
        ct__stf(a->y, base + j, dtype, v);
    }
}

ct_status ct__cpu_layer_norm(int device, const ct__layer_norm_args *args) {
    (void)device;
#ifdef _OPENMP
#pragma omp parallel for if (args->rows * args->n >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t r = 0; r < args->rows; r++) CT_CPU_BY_FLOAT_DTYPE(args->dtype, ln_row, args, r);
    return CT_OK;
}

/* dx = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = g * w. */
CT_CPU_INLINE void ln_row_backward(const ct__layer_norm_args *a, int64_t r, ct_dtype dtype) {
    int64_t n = a->n, base = r * n;
    double mean = ((const double *)a->mean)[r], invstd = ((const double *)a->invstd)[r];
    double sum_d = 0.0, sum_dx = 0.0;
    for (int64_t j = 0; j < n; j++) {
        double dxhat = ct__ldf(a->grad_out, base + j, dtype) * param_or(a->weight, j, dtype, 1.0);
        sum_d += dxhat;
        sum_dx += dxhat * (ct__ldf(a->x, base + j, dtype) - mean) * invstd;
    }
    double mean_d = sum_d / (double)n, mean_dx = sum_dx / (double)n;
    for (int64_t j = 0; j < n; j++) {
        double dxhat = ct__ldf(a->grad_out, base + j, dtype) * param_or(a->weight, j, dtype, 1.0);
        double xhat = (ct__ldf(a->x, base + j, dtype) - mean) * invstd;
        ct__stf(a->grad_x, base + j, dtype, invstd * (dxhat - mean_d - xhat * mean_dx));
    }
}

/* dw[j] = sum over rows of g * xhat, db[j] = sum of g, for columns [j0, j1). */
CT_CPU_INLINE void ln_columns_backward(const ct__layer_norm_args *a, int64_t j0, int64_t j1,
                                       ct_dtype dtype) {
    double dw[COLUMN_BLOCK] = {0}, db[COLUMN_BLOCK] = {0};
    for (int64_t r = 0; r < a->rows; r++) {
        double mean = ((const double *)a->mean)[r], invstd = ((const double *)a->invstd)[r];
        for (int64_t j = j0; j < j1; j++) {
            double g = ct__ldf(a->grad_out, r * a->n + j, dtype);
            dw[j - j0] += g * (ct__ldf(a->x, r * a->n + j, dtype) - mean) * invstd;
            db[j - j0] += g;
        }
    }
    for (int64_t j = j0; j < j1; j++) {
        if (a->grad_weight) ct__stf(a->grad_weight, j, dtype, dw[j - j0]);
        if (a->grad_bias) ct__stf(a->grad_bias, j, dtype, db[j - j0]);
    }
}

ct_status ct__cpu_layer_norm_backward(int device, const ct__layer_norm_args *args) {
    (void)device;
    const ct__layer_norm_args *a = args;
    bool parallel = a->rows * a->n >= CT_CPU_PARALLEL_THRESHOLD;
    (void)parallel; /* read by OpenMP's if clauses only */
    if (a->grad_x) {
#ifdef _OPENMP
#pragma omp parallel for if (parallel) schedule(static)
#endif
        for (int64_t r = 0; r < a->rows; r++)
            CT_CPU_BY_FLOAT_DTYPE(a->dtype, ln_row_backward, a, r);
    }
    if (!a->grad_weight && !a->grad_bias) return CT_OK;
    int64_t blocks = (a->n + COLUMN_BLOCK - 1) / COLUMN_BLOCK;
#ifdef _OPENMP
#pragma omp parallel for if (parallel) schedule(static)
#endif
    for (int64_t blk = 0; blk < blocks; blk++) {
        int64_t j0 = blk * COLUMN_BLOCK, j1 = j0 + COLUMN_BLOCK < a->n ? j0 + COLUMN_BLOCK : a->n;
        CT_CPU_BY_FLOAT_DTYPE(a->dtype, ln_columns_backward, a, j0, j1);
    }
    return CT_OK;
}

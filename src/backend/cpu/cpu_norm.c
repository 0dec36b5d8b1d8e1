/* CPU layer normalisation kernels, forward and backward, fused: one kernel reads a row's
 * elements for its statistics and writes the normalised result, so nothing is made of small
 * ops (batch norm is cpu_batch_norm.c). Rows split over OpenMP threads, and the weight and
 * bias gradients split columns (each thread sums its columns over every row, so no two
 * threads add into one element). Statistics are two-pass (mean, then squared deviations) in
 * double. */
#include <math.h>

#include "backend/cpu/cpu_norm_impl.h"

/* Columns per block of the layer-norm parameter gradients. */
#define COLUMN_BLOCK 64

static inline double param_or(const char *p, int64_t i, ct_dtype dtype, double absent) {
    return p ? ct__ldf(p, i, dtype) : absent;
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

/* CPU cross-entropy kernels (fused log-softmax), forward and backward. Rows split over
 * OpenMP threads; the forward sums row losses in double through an OpenMP reduction. A
 * target out of range is reported with its value (the first one a thread meets). */
#include <math.h>
#include <stdatomic.h>

#include "backend/cpu/cpu_norm_impl.h"
#include "core/error_impl.h"

static inline int64_t load_target(const ct__cross_entropy_args *a, int64_t i) {
    return a->target_dtype == CT_I32 ? ((const int32_t *)a->target)[i]
                                     : ((const int64_t *)a->target)[i];
}

/* The row's log-sum-exp (its maximum subtracted first, so large logits are safe). */
CT_CPU_INLINE double row_lse(const char *x, int64_t base, int64_t c, ct_dtype dtype) {
    if (dtype == CT_F32) {
        const float *row = (const float *)x + base;
        float m = ct__row_max_f32(row, c);
        return m + log(ct__row_exp_sum_f32(row, NULL, c, m, false));
    }
    double m = -INFINITY, sum = 0.0;
    for (int64_t k = 0; k < c; k++) m = fmax(m, ct__ldf(x, base + k, dtype));
    for (int64_t k = 0; k < c; k++) sum += ct__exp_for(ct__ldf(x, base + k, dtype) - m, dtype);
    return m + log(sum);
}

/* Row i's loss against class t (in range). */
CT_CPU_INLINE void row_loss(const ct__cross_entropy_args *a, int64_t i, int64_t t, double *loss,
                            ct_dtype dtype) {
    int64_t base = i * a->c;
    double lse = row_lse(a->logits, base, a->c, dtype);
    ((double *)a->lse)[i] = lse;
    double nll = lse - ct__ldf(a->logits, base + t, dtype);
    if (a->label_smoothing == 0.0) {
        *loss = nll;
        return;
    }
    double sum = 0.0;
    for (int64_t k = 0; k < a->c; k++) sum += ct__ldf(a->logits, base + k, dtype);
    double smooth = lse - sum / (double)a->c;
    *loss = (1.0 - a->label_smoothing) * nll + a->label_smoothing * smooth;
}

static ct_status bad_target(const ct__cross_entropy_args *a, int64_t t) {
    return ct__error(CT_ERR_INVALID_ARG,
                     "ct_cross_entropy: target %lld is out of range for %lld classes (valid "
                     "labels are 0 to %lld, or ignore_index %lld for a row that counts for "
                     "nothing)",
                     (long long)t, (long long)a->c, (long long)a->c - 1,
                     (long long)a->ignore_index);
}

ct_status ct__cpu_cross_entropy(int device, const ct__cross_entropy_args *args) {
    (void)device;
    const ct__cross_entropy_args *a = args;
    bool per_row = a->reduction == CT_REDUCTION_NONE;
    double total = 0.0;
    int64_t count = 0;
    atomic_int failed;
    atomic_init(&failed, 0);
    int64_t bad = 0;
#ifdef _OPENMP
#pragma omp parallel for if (a->n * a->c >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)            \
    reduction(+ : total, count)
#endif
    for (int64_t i = 0; i < a->n; i++) {
        int64_t t = load_target(a, i);
        double loss = 0.0;
        if (t != a->ignore_index) {
            if (t < 0 || t >= a->c) {
                int expected = 0;
                if (atomic_compare_exchange_strong(&failed, &expected, 1)) bad = t;
                continue;
            }
            CT_CPU_BY_FLOAT_DTYPE(a->dtype, row_loss, a, i, t, &loss);
            total += loss;
            count++;
        }
        if (per_row) ct__stf(a->out, i, a->dtype, loss);
    }
    if (atomic_load(&failed)) return bad_target(a, bad);
    *(double *)a->count = (double)count;
    if (a->reduction == CT_REDUCTION_SUM) ct__stf(a->out, 0, a->dtype, total);
    if (a->reduction == CT_REDUCTION_MEAN)
        ct__stf(a->out, 0, a->dtype, count ? total / (double)count : NAN);
    return CT_OK;
}

/* dlogits[i, k] = (softmax[i, k] - ((1 - ls) * [k == t] + ls / c)) * scale, 0 for an
 * ignored row. */
CT_CPU_INLINE void row_backward(const ct__cross_entropy_args *a, int64_t i, double scale,
                                ct_dtype dtype) {
    int64_t base = i * a->c, t = load_target(a, i);
    if (t == a->ignore_index) {
        for (int64_t k = 0; k < a->c; k++) ct__stf(a->out, base + k, dtype, 0.0);
        return;
    }
    double lse = ((const double *)a->lse)[i], ls = a->label_smoothing;
    double uniform = ls / (double)a->c;
    if (dtype == CT_F32) { /* every class as a non-target (a vectorized loop), then the target */
        const float *x = (const float *)a->logits + base;
        float *out = (float *)a->out + base;
        for (int64_t k = 0; k < a->c; k++)
            out[k] = (float)((ct__expf((float)(x[k] - lse)) - uniform) * scale);
        out[t] = (float)((ct__expf((float)(x[t] - lse)) - uniform - (1.0 - ls)) * scale);
        return;
    }
    for (int64_t k = 0; k < a->c; k++) {
        double p = ct__exp_for(ct__ldf(a->logits, base + k, dtype) - lse, dtype);
        double target = (k == t ? 1.0 - ls : 0.0) + uniform;
        ct__stf(a->out, base + k, dtype, (p - target) * scale);
    }
}

ct_status ct__cpu_cross_entropy_backward(int device, const ct__cross_entropy_args *args) {
    (void)device;
    const ct__cross_entropy_args *a = args;
    double divisor = a->reduction == CT_REDUCTION_MEAN ? *(const double *)a->count : 1.0;
#ifdef _OPENMP
#pragma omp parallel for if (a->n * a->c >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t i = 0; i < a->n; i++) {
        double scale = ct__ldf(a->grad, i * a->grad_stride, a->dtype) / divisor;
        CT_CPU_BY_FLOAT_DTYPE(a->dtype, row_backward, a, i, scale);
    }
    return CT_OK;
}

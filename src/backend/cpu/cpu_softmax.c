/* CPU softmax and log-softmax kernels, forward and backward, along the middle axis of a
 * contiguous (outer, n, inner) array. Each "line" (one outer and one inner position) is
 * independent, so lines split over OpenMP threads. The maximum is subtracted before the
 * exponentials, so large logits (1e4) neither overflow nor lose the answer. */
#include <math.h>

#include "backend/cpu/cpu_norm_impl.h"

/* A contiguous float32 row: the same arithmetic in vectorized loops. */
static void softmax_row_f32(const float *x, float *y, int64_t n, bool log_softmax) {
    float m = ct__row_max_f32(x, n);
    if (log_softmax) {
        double lse = m + log(ct__row_exp_sum_f32(x, y, n, m, false));
        for (int64_t k = 0; k < n; k++) y[k] = (float)(x[k] - lse);
        return;
    }
    double inv = 1.0 / ct__row_exp_sum_f32(x, y, n, m, true);
    for (int64_t k = 0; k < n; k++) y[k] = (float)(y[k] * inv);
}

CT_CPU_INLINE void softmax_line(const ct__softmax_args *a, int64_t line, ct_dtype dtype) {
    int64_t s = a->inner, base = line / s * a->n * s + line % s;
    if (dtype == CT_F32 && s == 1) {
        softmax_row_f32((const float *)a->in + base, (float *)a->out + base, a->n, a->log);
        return;
    }
    double m = -INFINITY;
    for (int64_t k = 0; k < a->n; k++) m = fmax(m, ct__ldf(a->in, base + k * s, dtype));
    /* Softmax in f32 and f64 keeps each exponential in the output until the sum is known
     * (one exp per element, not two); the 16-bit dtypes would round them too coarsely. */
    bool keep = !a->log && (dtype == CT_F32 || dtype == CT_F64);
    double sum = 0.0;
    for (int64_t k = 0; k < a->n; k++) {
        double e = ct__exp_for(ct__ldf(a->in, base + k * s, dtype) - m, dtype);
        sum += e;
        if (keep) ct__stf(a->out, base + k * s, dtype, e);
    }
    if (a->log) {
        double lse = m + log(sum);
        for (int64_t k = 0; k < a->n; k++)
            ct__stf(a->out, base + k * s, dtype, ct__ldf(a->in, base + k * s, dtype) - lse);
        return;
    }
    double inv = 1.0 / sum;
    for (int64_t k = 0; k < a->n; k++) {
        double e = keep ? ct__ldf(a->out, base + k * s, dtype)
                        : ct__exp_for(ct__ldf(a->in, base + k * s, dtype) - m, dtype);
        ct__stf(a->out, base + k * s, dtype, e * inv);
    }
}

/* dx = y * (g - sum(g * y)) for softmax, g - exp(y) * sum(g) for log-softmax (y the
 * forward's output). */
CT_CPU_INLINE void softmax_backward_line(const ct__softmax_args *a, int64_t line, ct_dtype dtype) {
    int64_t s = a->inner, base = line / s * a->n * s + line % s;
    double dot = 0.0;
    for (int64_t k = 0; k < a->n; k++) {
        double g = ct__ldf(a->grad, base + k * s, dtype);
        dot += a->log ? g : g * ct__ldf(a->in, base + k * s, dtype);
    }
    for (int64_t k = 0; k < a->n; k++) {
        int64_t i = base + k * s;
        double g = ct__ldf(a->grad, i, dtype), y = ct__ldf(a->in, i, dtype);
        ct__stf(a->out, i, dtype, a->log ? g - ct__exp_for(y, dtype) * dot : y * (g - dot));
    }
}

ct_status ct__cpu_softmax(int device, const ct__softmax_args *args) {
    (void)device;
    int64_t lines = args->outer * args->inner;
#ifdef _OPENMP
#pragma omp parallel for if (lines * args->n >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t line = 0; line < lines; line++)
        CT_CPU_BY_FLOAT_DTYPE(args->dtype, softmax_line, args, line);
    return CT_OK;
}

ct_status ct__cpu_softmax_backward(int device, const ct__softmax_args *args) {
    (void)device;
    int64_t lines = args->outer * args->inner;
#ifdef _OPENMP
#pragma omp parallel for if (lines * args->n >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t line = 0; line < lines; line++)
        CT_CPU_BY_FLOAT_DTYPE(args->dtype, softmax_backward_line, args, line);
    return CT_OK;
}

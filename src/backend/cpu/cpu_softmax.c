/* CPU softmax and log-softmax kernels, forward and backward, along the middle axis of a
 * contiguous (outer, n, inner) array. Each "line" (one outer and one inner position) is
 * independent, so lines split over OpenMP threads. The maximum is subtracted before the
 * exponentials, so large logits (1e4) neither overflow nor lose the answer. */
#include <math.h>

#include "backend/cpu/cpu_norm_impl.h"

CT_CPU_INLINE void softmax_line(const ct_softmax_args *a, int64_t line, ct_dtype dtype) {
    int64_t s = a->inner, base = line / s * a->n * s + line % s;
    double m = -INFINITY;
    for (int64_t k = 0; k < a->n; k++) m = fmax(m, ct__ldf(a->in, base + k * s, dtype));
    double sum = 0.0;
    for (int64_t k = 0; k < a->n; k++) sum += exp(ct__ldf(a->in, base + k * s, dtype) - m);
    if (a->log) {
        double lse = m + log(sum);
        for (int64_t k = 0; k < a->n; k++)
            ct__stf(a->out, base + k * s, dtype, ct__ldf(a->in, base + k * s, dtype) - lse);
        return;
    }
    double inv = 1.0 / sum;
    for (int64_t k = 0; k < a->n; k++)
        ct__stf(a->out, base + k * s, dtype, exp(ct__ldf(a->in, base + k * s, dtype) - m) * inv);
}

/* dx = y * (g - sum(g * y)) for softmax, g - exp(y) * sum(g) for log-softmax (y the
 * forward's output). */
CT_CPU_INLINE void softmax_backward_line(const ct_softmax_args *a, int64_t line, ct_dtype dtype) {
    int64_t s = a->inner, base = line / s * a->n * s + line % s;
    double dot = 0.0;
    for (int64_t k = 0; k < a->n; k++) {
        double g = ct__ldf(a->grad, base + k * s, dtype);
        dot += a->log ? g : g * ct__ldf(a->in, base + k * s, dtype);
    }
    for (int64_t k = 0; k < a->n; k++) {
        int64_t i = base + k * s;
        double g = ct__ldf(a->grad, i, dtype), y = ct__ldf(a->in, i, dtype);
        ct__stf(a->out, i, dtype, a->log ? g - exp(y) * dot : y * (g - dot));
    }
}

ct_status ct__cpu_softmax(int device, const ct_softmax_args *args) {
    (void)device;
    int64_t lines = args->outer * args->inner;
#ifdef _OPENMP
#pragma omp parallel for if (lines * args->n >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t line = 0; line < lines; line++)
        CT_CPU_BY_FLOAT_DTYPE(args->dtype, softmax_line, args, line);
    return CT_OK;
}

ct_status ct__cpu_softmax_backward(int device, const ct_softmax_args *args) {
    (void)device;
    int64_t lines = args->outer * args->inner;
#ifdef _OPENMP
#pragma omp parallel for if (lines * args->n >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t line = 0; line < lines; line++)
        CT_CPU_BY_FLOAT_DTYPE(args->dtype, softmax_backward_line, args, line);
    return CT_OK;
}

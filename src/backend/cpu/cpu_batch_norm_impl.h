/* What the CPU's two batch norm kernels share (cpu_batch_norm.c over NCHW planes,
 * cpu_batch_norm_nhwc.c over channels-last rows): parameters, the moments and their merge, the
 * running statistics' update, and the fused ReLU's store and mask. */
#ifndef CT_CPU_BATCH_NORM_IMPL_H
#define CT_CPU_BATCH_NORM_IMPL_H

#include "backend/cpu/cpu_norm_impl.h"

#define PRAGMA(...) _Pragma(#__VA_ARGS__)
#ifdef _OPENMP
#define SIMD_SUM(...) PRAGMA(omp simd reduction(+ : __VA_ARGS__))
#define SIMD() PRAGMA(omp simd)
#else
#define SIMD_SUM(...)
#define SIMD()
#endif

static inline double param_or(const char *p, int64_t i, ct_dtype dtype, double absent) {
    return p ? ct__ldf(p, i, dtype) : absent;
}

/* The count, mean and sum of squared deviations of the elements seen so far. */
typedef struct moments {
    double count, mean, m2;
} moments;

/* Merge into acc the moments of `count` more elements (Chan, Golub, LeVeque). */
static inline void merge(moments *acc, double count, double mean, double m2) {
    double total = acc->count + count, delta = mean - acc->mean;
    acc->mean += delta * (count / total);
    acc->m2 += m2 + delta * delta * (acc->count * count / total);
    acc->count = total;
}

/* Fold the batch statistics into the running ones (unbiased variance, as PyTorch). */
static inline void update_running(const ct__batch_norm_args *a, int64_t ch, double mean,
                                  double m2) {
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
                (1.0 - mom) * old + mom * m2 / (count - 1.0));
    }
}

/* Channel ch's mean and invstd, from the batch's moments m in training (the running
 * statistics updated) or from the running statistics in evaluation (m unused), stored in
 * a->mean and a->invstd; gives the affine form y = x * scale + shift. */
static inline void channel_affine(const ct__batch_norm_args *a, int64_t ch, moments m,
                                  ct_dtype dtype, double *scale, double *shift) {
    double mean, invstd;
    if (a->training) {
        mean = m.mean;
        invstd = 1.0 / sqrt(m.m2 / m.count + a->eps);
        update_running(a, ch, mean, m.m2);
    } else {
        mean = ct__ldf(a->running_mean, ch * a->running_mean_stride, a->running_mean_dtype);
        double var = ct__ldf(a->running_var, ch * a->running_var_stride, a->running_var_dtype);
        invstd = 1.0 / sqrt(var + a->eps);
    }
    ((double *)a->mean)[ch] = mean;
    ((double *)a->invstd)[ch] = invstd;
    *scale = invstd * param_or(a->weight, ch, dtype, 1.0);
    *shift = param_or(a->bias, ch, dtype, 0.0) - mean * *scale;
}

/* Element i of y = relu(v): v rounded to dtype, then clamped at 0 as ct_relu clamps (NaN
 * stays NaN), so that the result is ct_relu's of the rounded batch norm. f32 and f64 clamp
 * in their own type (a select the compiler vectorises); f16 and bf16 clamp v first, which
 * differs only in the sign of a zero. */
CT_CPU_INLINE void store_relu(char *y, int64_t i, ct_dtype dtype, double v) {
    if (dtype == CT_F32) {
        float f = (float)v;
        ((float *)y)[i] = f < 0.0f ? 0.0f : f;
    } else if (dtype == CT_F64) {
        ((double *)y)[i] = v < 0.0 ? 0.0 : v;
    } else {
        ct__stf(y, i, dtype, v < 0.0 ? 0.0 : v);
    }
}

/* The incoming gradient of element i: grad_out, or 0 where the fused ReLU's output y is not
 * positive (relu), both read unconditionally so that the loops stay branch-free. */
CT_CPU_INLINE double grad_at(const char *grad_out, const char *y, bool relu, int64_t i,
                             ct_dtype dtype) {
    if (!relu) return ct__ldf(grad_out, i, dtype);
    if (dtype == CT_F32) { /* a select of bits: GCC turns a select of floats into branches */
        float out = ((const float *)y)[i];
        uint32_t keep = out > 0.0f ? 0xffffffffu : 0u;
        return ct__bits_f32(ct__f32_bits(((const float *)grad_out)[i]) & keep);
    }
    double g = ct__ldf(grad_out, i, dtype), out = ct__ldf(y, i, dtype);
    return out > 0.0 ? g : 0.0;
}

/* Batch norm forward and backward over channels-last x (args->channels_last;
 * cpu_batch_norm_nhwc.c). */
ct_status ct__cpu_batch_norm_nhwc(const ct__batch_norm_args *args);
ct_status ct__cpu_batch_norm_nhwc_backward(const ct__batch_norm_args *args);

#endif

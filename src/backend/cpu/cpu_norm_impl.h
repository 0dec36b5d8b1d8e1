/* What the CPU kernels of the nn family (backend/norm_args_impl.h gives their contracts)
 * share: element access.
 *
 * These kernels compute in double whatever the floating dtype (exponentials excepted, see
 * ct__exp_for): their reductions (a row's
 * sum of exponentials, a channel's variance) then lose nothing to the data's precision.
 * ct__ldf and ct__stf read and write element i of a floating array; called with a constant
 * dtype from an inlined loop (the CT_CPU_BY_FLOAT_DTYPE dispatch), the switch disappears
 * and f32 and f64 loops become plain loads and stores. */
#ifndef CT_CPU_NORM_IMPL_H
#define CT_CPU_NORM_IMPL_H

#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/cpu_math_impl.h"
#include "backend/norm_args_impl.h"
#include "core/dtype_impl.h"

#define CT_CPU_INLINE static inline __attribute__((always_inline))

CT_CPU_INLINE double ct__ldf(const char *p, int64_t i, ct_dtype dtype) {
    switch (dtype) {
    case CT_F32: return ((const float *)p)[i];
    case CT_F64: return ((const double *)p)[i];
    case CT_F16: return ct__f16_to_f32(((const uint16_t *)p)[i]);
    default: return ct__bf16_to_f32(((const uint16_t *)p)[i]);
    }
}

CT_CPU_INLINE void ct__stf(char *p, int64_t i, ct_dtype dtype, double v) {
    switch (dtype) {
    case CT_F32: ((float *)p)[i] = (float)v; break;
    case CT_F64: ((double *)p)[i] = v; break;
    case CT_F16: ((uint16_t *)p)[i] = ct__f32_to_f16(ct__f64_to_f32_odd(v)); break;
    default: ((uint16_t *)p)[i] = ct__f32_to_bf16(ct__f64_to_f32_odd(v)); break;
    }
}

/* e^v for a result stored in dtype: libm's exp for f64; for the narrower dtypes the
 * branch-free float exp of cpu_math_impl.h (1.1 ulp of float), several times faster. */
CT_CPU_INLINE double ct__exp_for(double v, ct_dtype dtype) {
    return dtype == CT_F64 ? exp(v) : (double)ct__expf((float)v);
}

/* Contiguous float32 rows (the common case of softmax and cross-entropy) take loops GCC
 * vectorizes: reductions over CT_CPU_LANES independent lanes (no reassociation needed),
 * exponentials by ct__expf, sums of exponentials in double lanes. */
#define CT_CPU_LANES 8

/* The row's maximum (NaNs are skipped; they reach the result through the exponentials). */
CT_CPU_INLINE float ct__row_max_f32(const float *x, int64_t n) {
    float lanes[CT_CPU_LANES], m = -INFINITY;
    for (int l = 0; l < CT_CPU_LANES; l++) lanes[l] = -INFINITY;
    int64_t k = 0;
    for (; k + CT_CPU_LANES <= n; k += CT_CPU_LANES)
        for (int l = 0; l < CT_CPU_LANES; l++) lanes[l] = x[k + l] > lanes[l] ? x[k + l] : lanes[l];
    for (; k < n; k++) m = x[k] > m ? x[k] : m;
    for (int l = 0; l < CT_CPU_LANES; l++) m = lanes[l] > m ? lanes[l] : m;
    return m;
}

/* sum(e^(x - m)) over the row; with `store` each exponential is also written to out. */
CT_CPU_INLINE double ct__row_exp_sum_f32(const float *x, float *out, int64_t n, float m,
                                         bool store) {
    double lanes[CT_CPU_LANES] = {0}, sum = 0.0;
    int64_t k = 0;
    for (; k + CT_CPU_LANES <= n; k += CT_CPU_LANES)
        for (int l = 0; l < CT_CPU_LANES; l++) {
            float e = ct__expf(x[k + l] - m);
            if (store) out[k + l] = e;
            lanes[l] += e;
        }
    for (; k < n; k++) {
        float e = ct__expf(x[k] - m);
        if (store) out[k] = e;
        sum += e;
    }
    for (int l = 0; l < CT_CPU_LANES; l++) sum += lanes[l];
    return sum;
}

/* Call fn(args..., dtype) with dtype a compile-time constant for f32 and f64 (fn must be
 * CT_CPU_INLINE for the constant to reach its loops). */
#define CT_CPU_BY_FLOAT_DTYPE(dtype, fn, ...)                                                      \
    do {                                                                                           \
        switch (dtype) {                                                                           \
        case CT_F32: fn(__VA_ARGS__, CT_F32); break;                                               \
        case CT_F64: fn(__VA_ARGS__, CT_F64); break;                                               \
        default: fn(__VA_ARGS__, dtype); break;                                                    \
        }                                                                                          \
    } while (0)

#endif

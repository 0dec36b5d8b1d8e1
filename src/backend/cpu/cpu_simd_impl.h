/* The CPU kernels that exist in versions for wider vectors than the build's baseline, and
 * the run-time test of the processor that picks them: one binary serves every x86-64
 * (AVX2-only, AVX-512, AVX512_BF16, AMX machines). */
#ifndef CT_CPU_SIMD_IMPL_H
#define CT_CPU_SIMD_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CT_CPU_AVX512_KERNELS 1
#else
#define CT_CPU_AVX512_KERNELS 0
#endif

/* Whether the processor (and the operating system, which must save the 512-bit registers)
 * runs AVX-512 F, DQ and VL code. */
static inline bool ct__cpu_has_avx512(void) {
#if CT_CPU_AVX512_KERNELS
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

#if CT_CPU_AVX512_KERNELS
/* o[i] = e^x[i] with ct__expf_fma's results (cpu_math_impl.h); call only when
 * ct__cpu_has_avx512(). */
void ct__cpu_exp_f32_avx512(float *restrict o, const float *restrict x, int64_t n);
#endif

#endif

/* The CPU kernels that exist in versions for wider vectors than the build's baseline, and
 * the run-time test of the processor that picks them: one binary serves every x86-64
 * (AVX2-only, AVX-512, AVX512_BF16, AMX machines). */
#ifndef CT_CPU_SIMD_IMPL_H
#define CT_CPU_SIMD_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether this build has them: GCC on x86-64 (their intrinsics and target attributes). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CT_CPU_SIMD_KERNELS 1
#else
#define CT_CPU_SIMD_KERNELS 0
#endif

/* Whether the processor runs AVX2 code. */
static inline bool ct__cpu_has_avx2(void) {
#if CT_CPU_SIMD_KERNELS
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

/* Whether the processor (and the operating system, which must save the 512-bit registers)
 * runs AVX-512 F, DQ and VL code. */
static inline bool ct__cpu_has_avx512(void) {
#if CT_CPU_SIMD_KERNELS
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

/* ct__cpu_has_avx512, and BW (16-bit lanes) as well. */
static inline bool ct__cpu_has_avx512bw(void) {
#if CT_CPU_SIMD_KERNELS
    return ct__cpu_has_avx512() && __builtin_cpu_supports("avx512bw");
#else
    return false;
#endif
}

/* ct__cpu_has_avx512bw, and AVX512_BF16 (VDPBF16PS) as well. */
static inline bool ct__cpu_has_avx512bf16(void) {
#if CT_CPU_SIMD_KERNELS
    return ct__cpu_has_avx512bw() && __builtin_cpu_supports("avx512bf16");
#else
    return false;
#endif
}

#if CT_CPU_SIMD_KERNELS
/* c (m x n, leading dimension ldc) = op(a) @ op(b), plus c when accumulate: a and b f32
 * (row-major, leading dimensions lda and ldb) rounded to bf16 (nearest even), the products
 * on the AVX512_BF16 units summed in f32 (cpu_attention_bf16.c). scratch holds
 * ct__cpu_attention_bf16_scratch(most) words, most >= m, n and k. Call only when
 * ct__cpu_has_avx512bf16(). */
void ct__cpu_attention_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                                 int64_t lda, const float *b, int64_t ldb, bool accumulate,
                                 float *c, int64_t ldc, uint32_t *scratch);
size_t ct__cpu_attention_bf16_scratch(int64_t most);

/* One output row of 2x2 max pooling at stride 2 (cpu_pool_simd.c): inputs rows x0 and x1, ow_n
 * outputs y and their in-plane indices idx (at0: x0's first index, w the row length). Returns
 * whether the row held a NaN, which these results do not place as PyTorch does. */
typedef int ct__cpu_max_row_f32_fn(const float *x0, const float *x1, float *y, int32_t *idx,
                                   int64_t ow_n, int64_t at0, int64_t w);
/* The rows on 16 lanes, f32 and bf16; call only when ct__cpu_has_avx512bw(). */
int ct__cpu_max_row_2x2_f32_avx512(const float *x0, const float *x1, float *y, int32_t *idx,
                                   int64_t ow_n, int64_t at0, int64_t w);
int ct__cpu_max_row_2x2_bf16_avx512(const uint16_t *x0, const uint16_t *x1, uint16_t *y,
                                    int32_t *idx, int64_t ow_n, int64_t at0, int64_t w);
/* The same f32 row, 8 outputs per step; call only when ct__cpu_has_avx2(). */
int ct__cpu_max_row_2x2_f32_avx2(const float *x0, const float *x1, float *y, int32_t *idx,
                                 int64_t ow_n, int64_t at0, int64_t w);

/* o[i] = e^x[i] with ct__expf_fma's results (cpu_math_impl.h); call only when
 * ct__cpu_has_avx512(). */
void ct__cpu_exp_f32_avx512(float *restrict o, const float *restrict x, int64_t n);
#endif

#endif

/* exp on float32 for processors with AVX-512 (cpu_simd_impl.h), 16 floats per instruction.
 *
 * The same formula as CT_EXPF_BODY with fused multiply-adds (ct__expf_fma, cpu_math_impl.h),
 * giving the same bits, in half the instructions that the compiler makes of the scalar
 * body: n is taken as the float t - shift (exact where the integer path is; past that both
 * clamp to the same end of [-150, 128]), and the two-factor scaling by 2^n is one VSCALEFPS,
 * which also rounds once into a subnormal or to inf. With AVX2 the polynomial, not the
 * memory, bounds exp on two cores; with these instructions the loop keeps up with memory.
 * MXCSR is the C default (no flush-to-zero), as for every kernel. */
#include "backend/cpu/cpu_simd_impl.h"

#if CT_CPU_SIMD_KERNELS
#include <immintrin.h>

#define CT_AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512vl")))

CT_AVX512_TARGET static inline __m512 exp16(__m512 x) {
    const __m512 shift = _mm512_set1_ps(0x1.8p23f);
    __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504f), shift);
    __m512 n = _mm512_sub_ps(t, shift);
    /* max/min return their second operand for a NaN first: a NaN x gives n = -150 and
     * then r = NaN, as the scalar body's integer clamp does. */
    n = _mm512_min_ps(_mm512_max_ps(n, _mm512_set1_ps(-150.0f)), _mm512_set1_ps(128.0f));
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 r2 = _mm512_mul_ps(r, r);
    __m512 q01 = _mm512_fmadd_ps(_mm512_set1_ps(0.166665211f), r, _mm512_set1_ps(0.499999940f));
    __m512 q23 = _mm512_fmadd_ps(_mm512_set1_ps(0.00836871006f), r, _mm512_set1_ps(0.0416683890f));
    __m512 q = _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0.00138146128f), r2, q23), r2, q01);
    __m512 p = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(r2, q, r));
    /* Lanes with x < -104 give 0 (the scalar body's final select); NaN compares false. */
    __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-104.0f), _CMP_NLT_UQ);
    return _mm512_maskz_scalef_ps(keep, p, n);
}

CT_AVX512_TARGET void ct__cpu_exp_f32_avx512(float *restrict o, const float *restrict x,
                                             int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, exp16(_mm512_loadu_ps(x + i)));
    if (i < n) {
        __mmask16 tail = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(o + i, tail, exp16(_mm512_maskz_loadu_ps(tail, x + i)));
    }
}
#endif

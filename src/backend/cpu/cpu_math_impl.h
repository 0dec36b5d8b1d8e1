/* Branch-free float math for the CPU kernels: written so that GCC vectorizes the loops that
 * call it (no libm calls, no data-dependent branches, only selects), which libm's expf does
 * not allow. Used by exp and sigmoid on float32, float16 and bfloat16. */
#ifndef CT_CPU_MATH_IMPL_H
#define CT_CPU_MATH_IMPL_H

#include <stdint.h>

#include "core/dtype_impl.h"

/* cond ? a : b through bit masks: GCC keeps a branch for a plain ?: on floats in some
 * contexts (it specialises a constant arm), and a branch stops vectorization. */
CT_BITS_FN float ct__select_f32(int cond, float a, float b) {
    uint32_t mask = 0u - (uint32_t)cond;
    return ct__bits_f32((ct__f32_bits(a) & mask) | (ct__f32_bits(b) & ~mask));
}

/* e^x for float, within 1.1 ulp over the whole range (checked on every float), with IEEE
 * results at the edges: overflow gives +inf, results below the smallest subnormal give 0,
 * subnormal results are rounded once, NaN gives NaN.
 *
 * x = n ln2 + r with |r| <= ln2/2; e^r = 1 + r + r^2 q(r) with q a degree-4 near-minimax fit
 * of (e^r - 1 - r) / r^2 (relative error 3e-9, fitted for this file), evaluated in Estrin's
 * order for instruction-level parallelism; e^x = e^r 2^n. n is clamped to [-150, 128], where
 * the results end anyway: above, r grows and the result overflows to inf as it should;
 * below x = -104 the final select gives 0. 2^n is applied as two factors 2^(n/2) and
 * 2^(n - n/2), which stay normal floats for every such n, so only the last multiplication
 * rounds (into a subnormal or to inf).
 *
 * MADD(a, b, c) is a * b + c: separate operations in ct__expf, a fused multiply-add in
 * ct__expf_fma (for code compiled for FMA processors only: elsewhere it is a libm call) and
 * in the CUDA kernels (fmaf), which therefore give ct__expf_fma's results exactly. */
#define CT_EXPF_BODY(x, MADD)                                                                      \
    const float shift = 0x1.8p23f;     /* adding it rounds |v| < 2^22 to an integer */             \
    const float ln2_hi = 0.693359375f; /* 9 significant bits: n * ln2_hi is exact */               \
    const float ln2_lo = -2.12194440e-4f;                                                          \
    float t = MADD(x, 1.44269504f, shift);                                                         \
    /* n from t's low mantissa bits (exact for |x| < 2^21); for huge or NaN x the bits are junk    \
     * but defined (unsigned arithmetic) and the clamp, r or the final select decide. */           \
    int32_t ni = (int32_t)(ct__f32_bits(t) - ct__f32_bits(shift));                                 \
    ni = ni < -150 ? -150 : ni;                                                                    \
    ni = ni > 128 ? 128 : ni;                                                                      \
    float n = (float)ni;                                                                           \
    float r = MADD(n, -ln2_lo, MADD(n, -ln2_hi, x));                                               \
    float r2 = r * r;                                                                              \
    float q01 = MADD(0.166665211f, r, 0.499999940f);                                               \
    float q23 = MADD(0.00836871006f, r, 0.0416683890f);                                            \
    float q = MADD(MADD(0.00138146128f, r2, q23), r2, q01);                                        \
    float p = 1.0f + MADD(r2, q, r);                                                               \
    int32_t n1 = ni / 2, n2 = ni - n1;                                                             \
    float s1 = ct__bits_f32((uint32_t)(n1 + 127) << 23);                                           \
    float s2 = ct__bits_f32((uint32_t)(n2 + 127) << 23);                                           \
    return ct__select_f32(x < -104.0f, 0.0f, (p * s1) * s2);

#define CT_MADD_SEPARATE_(a, b, c) ((a) * (b) + (c))
static inline float ct__expf(float x) { CT_EXPF_BODY(x, CT_MADD_SEPARATE_) }

#if defined(__GNUC__)
static inline float ct__expf_fma(float x) { CT_EXPF_BODY(x, __builtin_fmaf) }
#endif

/* 1 / (1 + e^-x): no cancellation, so the relative error stays that of ct__expf. */
static inline float ct__sigmoidf(float x) { return 1.0f / (1.0f + ct__expf(-x)); }

#endif

/* The per-element formulas of the elementwise ops of op_list.h, written once for the CPU and
 * the CUDA backend (header-only; device functions under nvcc), as optim_update_impl.h is for
 * the optimisers. Each backend generates its kernels from the table rows and calls
 * ct__ew_NAME_S for the op NAME in compute domain S, so a row without its formula fails to
 * compile with "'ct__ew_NAME_S' undeclared".
 *
 * Domains (S): f32 (float32, and float16/bfloat16 computed in float), f64, i32 (integers and
 * bool of at most 32 bits but uint32; results wrap when stored), i64 (int64, uint32 and
 * mixes of signed and unsigned), u64 (uint64 results: its operands are unsigned or bool),
 * and `test` (the predicates of the BOOL kind, on the input converted to double, exact for
 * the properties they test). Which domains a row needs follows from its kind:
 *
 *     unary  FLOAT: f32 f64   SAME: f32 f64 i32 i64 u64   BOOL: test   INT: i32 i64 u64
 *     binary ARITH: f32 f64 i32 i64 u64   FLOAT: f32 f64   COMPARE, LOGICAL: every domain
 *            INT, SHIFT: i32 i64 u64
 *
 * Integer binary formulas take `int *err` and set it to a ct__ew_error on operands the op
 * rejects (a zero divisor, a negative exponent); the result is then discarded. NumPy's
 * semantics throughout: integers wrap (computed on the unsigned type), maximum and minimum
 * propagate NaN, remainder and floor_divide follow Python's % and //. */
#ifndef CT_EW_FORMULA_IMPL_H
#define CT_EW_FORMULA_IMPL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend_impl.h"
#include "core/dtype_impl.h"

#ifdef __CUDACC__
#define CT_EW_FN static __device__ __forceinline__
/* a * b + c rounded once (fused), and rounded twice (nvcc would otherwise fuse it). */
#define CT_EW_MADD_FAST_(a, b, c) fmaf(a, b, c)
#define CT_EW_MADD_RN_(a, b, c) __fadd_rn(__fmul_rn(a, b), c)
#else
#define CT_EW_FN static inline
/* The CPU's generic code has no fused multiply-add (libm's fmaf is a call); its FMA
 * processors get ct__expf_fma (cpu_math_impl.h), whose results equal CUDA's. */
#define CT_EW_MADD_FAST_(a, b, c) ((a) * (b) + (c))
#define CT_EW_MADD_RN_(a, b, c) ((a) * (b) + (c))
#endif

/* Which family of compute domains a kind runs in (the table above), for the backends'
 * generated switches: CT_EW_<U|B>_<FAMILY>_<kind>(yes, no) is yes where rows of that kind
 * have formulas in that family (FLOATS: f32 f64; INTS: i32 i64; TESTS: test; COMPARES: every
 * domain, 0/1 results), else no. */
/* clang-format off */
#define CT_EW_U_FLOATS_FLOAT(yes, no) yes
#define CT_EW_U_FLOATS_SAME(yes, no) yes
#define CT_EW_U_FLOATS_BOOL(yes, no) no
#define CT_EW_U_FLOATS_INT(yes, no) no
#define CT_EW_U_INTS_FLOAT(yes, no) no
#define CT_EW_U_INTS_SAME(yes, no) yes
#define CT_EW_U_INTS_BOOL(yes, no) no
#define CT_EW_U_INTS_INT(yes, no) yes
#define CT_EW_U_TESTS_FLOAT(yes, no) no
#define CT_EW_U_TESTS_SAME(yes, no) no
#define CT_EW_U_TESTS_BOOL(yes, no) yes
#define CT_EW_U_TESTS_INT(yes, no) no
#define CT_EW_B_FLOATS_ARITH(yes, no) yes
#define CT_EW_B_FLOATS_FLOAT(yes, no) yes
#define CT_EW_B_FLOATS_COMPARE(yes, no) no
#define CT_EW_B_FLOATS_LOGICAL(yes, no) no
#define CT_EW_B_FLOATS_INT(yes, no) no
#define CT_EW_B_FLOATS_SHIFT(yes, no) no
#define CT_EW_B_INTS_ARITH(yes, no) yes
#define CT_EW_B_INTS_FLOAT(yes, no) no
#define CT_EW_B_INTS_COMPARE(yes, no) no
#define CT_EW_B_INTS_LOGICAL(yes, no) no
#define CT_EW_B_INTS_INT(yes, no) yes
#define CT_EW_B_INTS_SHIFT(yes, no) yes
#define CT_EW_B_COMPARES_ARITH(yes, no) no
#define CT_EW_B_COMPARES_FLOAT(yes, no) no
#define CT_EW_B_COMPARES_COMPARE(yes, no) yes
#define CT_EW_B_COMPARES_LOGICAL(yes, no) yes
#define CT_EW_B_COMPARES_INT(yes, no) no
#define CT_EW_B_COMPARES_SHIFT(yes, no) no
/* clang-format on */

/* What an integer formula can reject. */
typedef enum ct__ew_error {
    CT_EW_OK = 0,
    CT_EW_REMAINDER_BY_ZERO,
    CT_EW_DIVISION_BY_ZERO,
    CT_EW_NEGATIVE_POWER
} ct__ew_error;

/* The message of an error (after "ct_op: "), the same on every backend. */
static inline const char *ct__ew_error_text(ct__ew_error error) {
    switch (error) {
    case CT_EW_REMAINDER_BY_ZERO:
        return "integer remainder by zero (a divisor element is 0); use a floating dtype to get "
               "NaN instead";
    case CT_EW_DIVISION_BY_ZERO:
        return "integer division by zero (a divisor element is 0); use a floating dtype to get "
               "inf or NaN instead";
    case CT_EW_NEGATIVE_POWER:
        return "integers to negative integer powers are not allowed (an exponent element is "
               "negative); use a floating dtype";
    case CT_EW_OK: break;
    }
    return "no error";
}

/* The integer ops whose formula can set *err: the op layer counts the device's answer as a
 * read-back, and the CUDA backend gives them a flag in device memory. */
static inline bool ct__ew_int_op_can_fail(ct__binary_op op) {
    return op == CT_BOP_POW || op == CT_BOP_REMAINDER || op == CT_BOP_FLOOR_DIVIDE;
}

/* The public name of a binary op, for messages. */
static inline const char *ct__ew_binary_name(ct__binary_op op) {
    switch (op) {
#define CT_EW_NAME_(name, NAME, kind, grad, autocast)                                              \
    case CT_BOP_##NAME: return "ct_" #name;
        CT_BINARY_OPS(CT_EW_NAME_)
#undef CT_EW_NAME_
    case CT_BOP_RELU_GRAD: return "ReLU's backward";
    case CT_BOP_GELU_TANH_GRAD: return "GELU's backward";
    case CT_BOP_COUNT: break;
    }
    return "an unknown binary op";
}

/* ---- float32 exp: one algorithm for both backends ----
 *
 * e^x within 1.1 ulp over the whole range (checked on every float), with IEEE results at the
 * edges: overflow gives +inf, results below the smallest subnormal give 0, subnormal results
 * are rounded once, NaN gives NaN.
 *
 * x = n ln2 + r with |r| <= ln2/2; e^r = 1 + r + r^2 q(r) with q a degree-4 near-minimax fit
 * of (e^r - 1 - r) / r^2 (relative error 3e-9, fitted for this file), evaluated in Estrin's
 * order for instruction-level parallelism; e^x = e^r 2^n. n is clamped to [-150, 128], where
 * the results end anyway: above, r grows and the result overflows to inf as it should;
 * below x = -104 the final select gives 0. 2^n is applied as two factors 2^(n/2) and
 * 2^(n - n/2), which stay normal floats for every such n, so only the last multiplication
 * rounds (into a subnormal or to inf). MADD(a, b, c) is a * b + c, fused or not. */
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

/* cond ? a : b through bit masks: GCC keeps a branch for a plain ?: on floats in some
 * contexts (it specialises a constant arm), and a branch stops vectorization. */
CT_DTYPE_FN float ct__select_f32(int cond, float a, float b) {
    uint32_t mask = 0u - (uint32_t)cond;
    return ct__bits_f32((ct__f32_bits(a) & mask) | (ct__f32_bits(b) & ~mask));
}

CT_EW_FN float ct__ew_exp_f32(float x){CT_EXPF_BODY(x, CT_EW_MADD_FAST_)} CT_EW_FN
    double ct__ew_exp_f64(double x) {
    return exp(x);
}
/* 1 / (1 + e^-x) with separately rounded steps on both backends: no cancellation, so the
 * relative error stays that of exp. */
CT_EW_FN float ct__ew_exp_rn_f32(float x){CT_EXPF_BODY(x, CT_EW_MADD_RN_)} CT_EW_FN
    float ct__ew_sigmoid_f32(float x) {
    return 1.0f / (1.0f + ct__ew_exp_rn_f32(-x));
}
CT_EW_FN double ct__ew_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }

/* GPT-2's GELU, PyTorch's approximate='tanh': x/2 (1 + tanh u), u = sqrt(2/pi) (x + 0.044715
 * x^3), computed as x sigmoid(2u) = x / (1 + e^-2u), equal in exact arithmetic: one exp, no
 * cancellation, and no branch, so that the CPU's loops vectorise it. Its derivative (the
 * backward's b = x, times the output's gradient a), from e = e^-2u and s = 1 / (1 + e):
 *     d/dx x s = s + x s (1 - s) 2u',  2u' = 2 sqrt(2/pi) (1 + 3 * 0.044715 x^2),
 * with 1 - s taken as e s where e <= 1 (no cancellation near s = 1), and the second term 0
 * where s (1 - s) is (|x| large: the derivative is then 1 or 0, where x 2u' alone would
 * overflow to inf and give NaN). */
#define CT_GELU_K2 1.5957691216057307118 /* 2 sqrt(2/pi) */
#define CT_GELU_C 0.044715
CT_EW_FN float ct__ew_gelu_tanh_f32(float x) {
    float two_u = (float)CT_GELU_K2 * (x + (float)CT_GELU_C * x * x * x);
    return x / (1.0f + ct__ew_exp_rn_f32(-two_u));
}
CT_EW_FN double ct__ew_gelu_tanh_f64(double x) {
    double two_u = CT_GELU_K2 * (x + CT_GELU_C * x * x * x);
    return x / (1.0 + exp(-two_u));
}
CT_EW_FN float ct__ew_gelu_tanh_grad_f32(float a, float x) {
    float x2 = x * x;
    float e = ct__ew_exp_rn_f32(-(float)CT_GELU_K2 * (x + (float)CT_GELU_C * x * x2));
    float s = 1.0f / (1.0f + e);
    float w = s * ct__select_f32(e > 1.0f, 1.0f - s, e * s);
    float du2 = (float)CT_GELU_K2 * (1.0f + (float)(3.0 * CT_GELU_C) * x2);
    return a * (s + ct__select_f32(w == 0.0f, 0.0f, x * w * du2));
}
CT_EW_FN double ct__ew_gelu_tanh_grad_f64(double a, double x) {
    double x2 = x * x;
    double e = exp(-CT_GELU_K2 * (x + CT_GELU_C * x * x2));
    double s = 1.0 / (1.0 + e);
    double w = s * (e > 1.0 ? 1.0 - s : e * s);
    double du2 = CT_GELU_K2 * (1.0 + 3.0 * CT_GELU_C * x2);
    return a * (s + (w == 0.0 ? 0.0 : x * w * du2));
}
#undef CT_GELU_K2
#undef CT_GELU_C

/* The libm function f for float (ff) or double (f). */
#define CT_EW_M_f32(fn) fn##f
#define CT_EW_M_f64(fn) fn

/* ---- unary, floating domains: T float or double, M(f) its libm function f ---- */
#define CT_EW_UNARY_FLOAT_(T, S, M)                                                                \
    CT_EW_FN T ct__ew_neg_##S(T x) { return -x; }                                                  \
    CT_EW_FN T ct__ew_abs_##S(T x) { return M(fabs)(x); }                                          \
    /* +0 for either zero (NumPy, PyTorch); NaN as it is */                                        \
    CT_EW_FN T ct__ew_sign_##S(T x) {                                                              \
        return x > (T)0 ? (T)1 : (x < (T)0 ? (T)-1 : x == x ? (T)0 : x);                           \
    }                                                                                              \
    CT_EW_FN T ct__ew_sqrt_##S(T x) { return M(sqrt)(x); }                                         \
    CT_EW_FN T ct__ew_rsqrt_##S(T x) { return (T)1 / M(sqrt)(x); }                                 \
    CT_EW_FN T ct__ew_expm1_##S(T x) { return M(expm1)(x); }                                       \
    CT_EW_FN T ct__ew_log_##S(T x) { return M(log)(x); }                                           \
    CT_EW_FN T ct__ew_log1p_##S(T x) { return M(log1p)(x); }                                       \
    CT_EW_FN T ct__ew_sin_##S(T x) { return M(sin)(x); }                                           \
    CT_EW_FN T ct__ew_cos_##S(T x) { return M(cos)(x); }                                           \
    CT_EW_FN T ct__ew_tanh_##S(T x) { return M(tanh)(x); }                                         \
    CT_EW_FN T ct__ew_relu_##S(T x) { return x < (T)0 ? (T)0 : x; }                                \
    /* erfc(-x/sqrt 2) = 1 + erf(x/sqrt 2), which does not cancel for negative x */                \
    CT_EW_FN T ct__ew_gelu_##S(T x) {                                                              \
        return (T)0.5 * x * M(erfc)(-x * (T)0.70710678118654752440);                               \
    }                                                                                              \
    CT_EW_FN T ct__ew_erf_##S(T x) { return M(erf)(x); }                                           \
    CT_EW_FN T ct__ew_floor_##S(T x) { return M(floor)(x); }                                       \
    CT_EW_FN T ct__ew_ceil_##S(T x) { return M(ceil)(x); }                                         \
    CT_EW_FN T ct__ew_round_##S(T x) { return M(nearbyint)(x); }                                   \
    CT_EW_FN T ct__ew_trunc_##S(T x) { return M(trunc)(x); }                                       \
    CT_EW_FN T ct__ew_square_##S(T x) { return x * x; }                                            \
    CT_EW_FN T ct__ew_reciprocal_##S(T x) { return (T)1 / x; }                                     \
    CT_EW_FN T ct__ew_log2_##S(T x) { return M(log2)(x); }                                         \
    CT_EW_FN T ct__ew_log10_##S(T x) { return M(log10)(x); }                                       \
    CT_EW_FN T ct__ew_tan_##S(T x) { return M(tan)(x); }                                           \
    CT_EW_FN T ct__ew_asin_##S(T x) { return M(asin)(x); }                                         \
    CT_EW_FN T ct__ew_acos_##S(T x) { return M(acos)(x); }                                         \
    CT_EW_FN T ct__ew_atan_##S(T x) { return M(atan)(x); }                                         \
    CT_EW_FN T ct__ew_sinh_##S(T x) { return M(sinh)(x); }                                         \
    CT_EW_FN T ct__ew_cosh_##S(T x) { return M(cosh)(x); }                                         \
    CT_EW_FN T ct__ew_asinh_##S(T x) { return M(asinh)(x); }                                       \
    CT_EW_FN T ct__ew_acosh_##S(T x) { return M(acosh)(x); }                                       \
    CT_EW_FN T ct__ew_atanh_##S(T x) { return M(atanh)(x); }                                       \
    CT_EW_FN T ct__ew_exp2_##S(T x) { return M(exp2)(x); }                                         \
    /* clamp (not a row: it takes bounds): comparisons, which keep NaN */                          \
    CT_EW_FN T ct__ew_clamp_##S(T x, T lo, T hi) {                                                 \
        T t = x < lo ? lo : x;                                                                     \
        return t > hi ? hi : t;                                                                    \
    }
CT_EW_UNARY_FLOAT_(float, f32, CT_EW_M_f32)
CT_EW_UNARY_FLOAT_(double, f64, CT_EW_M_f64)

/* ---- unary, integer domains: T int32_t or int64_t, UT its unsigned type ---- */
#define CT_EW_UNARY_INT_(T, S, UT)                                                                 \
    CT_EW_FN T ct__ew_neg_##S(T x) { return (T)((UT)0 - (UT)x); }                                  \
    CT_EW_FN T ct__ew_abs_##S(T x) { return x < 0 ? (T)((UT)0 - (UT)x) : x; }                      \
    CT_EW_FN T ct__ew_sign_##S(T x) { return (T)((x > 0) - (x < 0)); }                             \
    CT_EW_FN T ct__ew_relu_##S(T x) { return x < 0 ? (T)0 : x; }                                   \
    CT_EW_FN T ct__ew_floor_##S(T x) { return x; }                                                 \
    CT_EW_FN T ct__ew_ceil_##S(T x) { return x; }                                                  \
    CT_EW_FN T ct__ew_round_##S(T x) { return x; }                                                 \
    CT_EW_FN T ct__ew_trunc_##S(T x) { return x; }                                                 \
    CT_EW_FN T ct__ew_square_##S(T x) { return (T)((UT)x * (UT)x); }                               \
    CT_EW_FN T ct__ew_bitwise_invert_##S(T x) { return (T) ~(UT)x; }                               \
    CT_EW_FN T ct__ew_clamp_##S(T x, T lo, T hi) {                                                 \
        T t = x < lo ? lo : x;                                                                     \
        return t > hi ? hi : t;                                                                    \
    }
CT_EW_UNARY_INT_(int32_t, i32, uint32_t)
CT_EW_UNARY_INT_(int64_t, i64, uint64_t)

/* ---- unary, the uint64 domain: nothing is negative ---- */
CT_EW_FN uint64_t ct__ew_neg_u64(uint64_t x) { return (uint64_t)0 - x; }
CT_EW_FN uint64_t ct__ew_abs_u64(uint64_t x) { return x; }
CT_EW_FN uint64_t ct__ew_sign_u64(uint64_t x) { return x != 0; }
CT_EW_FN uint64_t ct__ew_relu_u64(uint64_t x) { return x; }
CT_EW_FN uint64_t ct__ew_floor_u64(uint64_t x) { return x; }
CT_EW_FN uint64_t ct__ew_ceil_u64(uint64_t x) { return x; }
CT_EW_FN uint64_t ct__ew_round_u64(uint64_t x) { return x; }
CT_EW_FN uint64_t ct__ew_trunc_u64(uint64_t x) { return x; }
CT_EW_FN uint64_t ct__ew_square_u64(uint64_t x) { return x * x; }
CT_EW_FN uint64_t ct__ew_bitwise_invert_u64(uint64_t x) { return ~x; }
CT_EW_FN uint64_t ct__ew_clamp_u64(uint64_t x, uint64_t lo, uint64_t hi) {
    uint64_t t = x < lo ? lo : x;
    return t > hi ? hi : t;
}

/* ---- unary predicates (BOOL kind), on the input as double ---- */
CT_EW_FN uint8_t ct__ew_logical_not_test(double x) { return x == 0.0; }
CT_EW_FN uint8_t ct__ew_signbit_test(double x) { return signbit(x) != 0; }
CT_EW_FN uint8_t ct__ew_isnan_test(double x) { return x != x; }
CT_EW_FN uint8_t ct__ew_isinf_test(double x) { return isinf(x) != 0; }
CT_EW_FN uint8_t ct__ew_isfinite_test(double x) { return isfinite(x) != 0; }

/* ---- binary, floating domains ---- */
#define CT_EW_BINARY_FLOAT_(T, S, M)                                                               \
    CT_EW_FN T ct__ew_add_##S(T a, T b) { return a + b; }                                          \
    CT_EW_FN T ct__ew_sub_##S(T a, T b) { return a - b; }                                          \
    CT_EW_FN T ct__ew_mul_##S(T a, T b) { return a * b; }                                          \
    CT_EW_FN T ct__ew_div_##S(T a, T b) { return a / b; }                                          \
    CT_EW_FN T ct__ew_pow_##S(T a, T b) { return M(pow)(a, b); }                                   \
    /* a when it wins or is NaN, so NaN in either wins; | keeps the select branch-free */          \
    CT_EW_FN T ct__ew_maximum_##S(T a, T b) { return ((a > b) | (a != a)) ? a : b; }               \
    CT_EW_FN T ct__ew_minimum_##S(T a, T b) { return ((a < b) | (a != a)) ? a : b; }               \
    /* Python's float %: fmod moved into the divisor's sign; a zero takes the divisor's sign */    \
    CT_EW_FN T ct__ew_remainder_##S(T a, T b) {                                                    \
        T r = M(fmod)(a, b);                                                                       \
        if (r == 0) return M(copysign)((T)0, b);                                                   \
        return (r < 0) != (b < 0) ? r + b : r;                                                     \
    }                                                                                              \
    CT_EW_FN T ct__ew_hypot_##S(T a, T b) { return M(hypot)(a, b); }                               \
    CT_EW_FN T ct__ew_copysign_##S(T a, T b) { return M(copysign)(a, b); }                         \
    CT_EW_FN T ct__ew_atan2_##S(T a, T b) { return M(atan2)(a, b); }                               \
    CT_EW_FN T ct__ew_nextafter_##S(T a, T b) { return M(nextafter)(a, b); }                       \
    /* equal operands (infinities too) give a + log 2; NaN propagates through d */                 \
    CT_EW_FN T ct__ew_logaddexp_##S(T a, T b) {                                                    \
        if (a == b) return a + (T)0.693147180559945309417;                                         \
        T d = a - b;                                                                               \
        if (d > 0) return a + M(log1p)(M(exp)(-d));                                                \
        if (d <= 0) return b + M(log1p)(M(exp)(d));                                                \
        return d;                                                                                  \
    }                                                                                              \
    /* Python's float //, as NumPy: from fmod so that floor(a / b) * b + a % b == a, rounded to    \
     * the nearest integer; a zero divisor gives a / b (inf or NaN) */                             \
    CT_EW_FN T ct__ew_floor_divide_##S(T a, T b) {                                                 \
        if (b == 0) return a / b;                                                                  \
        T mod = M(fmod)(a, b);                                                                     \
        T q = (a - mod) / b;                                                                       \
        if (mod != 0 && (b < 0) != (mod < 0)) q -= (T)1;                                           \
        if (q == 0) return M(copysign)((T)0, a / b);                                               \
        T f = M(floor)(q);                                                                         \
        return q - f > (T)0.5 ? f + (T)1 : f;                                                      \
    }                                                                                              \
    /* ReLU's backward (not a row): a where b > 0, else 0 */                                       \
    CT_EW_FN T ct__ew_relu_grad_##S(T a, T b) { return b > 0 ? a : (T)0; }
CT_EW_BINARY_FLOAT_(float, f32, CT_EW_M_f32)
CT_EW_BINARY_FLOAT_(double, f64, CT_EW_M_f64)

/* ---- binary, integer domains: wrapping, on the unsigned type UT; BITS the width ---- */
#define CT_EW_BINARY_INT_(T, S, UT, BITS)                                                          \
    CT_EW_FN T ct__ew_add_##S(T a, T b, int *err) { return (void)err, (T)((UT)a + (UT)b); }        \
    CT_EW_FN T ct__ew_sub_##S(T a, T b, int *err) { return (void)err, (T)((UT)a - (UT)b); }        \
    CT_EW_FN T ct__ew_mul_##S(T a, T b, int *err) { return (void)err, (T)((UT)a * (UT)b); }        \
    CT_EW_FN T ct__ew_maximum_##S(T a, T b, int *err) { return (void)err, a > b ? a : b; }         \
    CT_EW_FN T ct__ew_minimum_##S(T a, T b, int *err) { return (void)err, a < b ? a : b; }         \
    /* base^exponent by squaring, wrapping */                                                      \
    CT_EW_FN T ct__ew_pow_##S(T a, T b, int *err) {                                                \
        if (b < 0) {                                                                               \
            *err = CT_EW_NEGATIVE_POWER;                                                           \
            return 0;                                                                              \
        }                                                                                          \
        UT result = 1, square = (UT)a;                                                             \
        for (UT e = (UT)b; e; e >>= 1) {                                                           \
            if (e & 1u) result *= square;                                                          \
            square *= square;                                                                      \
        }                                                                                          \
        return (T)result;                                                                          \
    }                                                                                              \
    /* Python's %: the divisor's sign; b == -1 apart, as T_MIN % -1 overflows in C */              \
    CT_EW_FN T ct__ew_remainder_##S(T a, T b, int *err) {                                          \
        if (b == 0) {                                                                              \
            *err = CT_EW_REMAINDER_BY_ZERO;                                                        \
            return 0;                                                                              \
        }                                                                                          \
        if (b == -1) return 0;                                                                     \
        T r = a % b;                                                                               \
        return r != 0 && (r < 0) != (b < 0) ? r + b : r;                                           \
    }                                                                                              \
    /* Python's //: toward -inf; T_MIN // -1 wraps to T_MIN, as NumPy */                           \
    CT_EW_FN T ct__ew_floor_divide_##S(T a, T b, int *err) {                                       \
        if (b == 0) {                                                                              \
            *err = CT_EW_DIVISION_BY_ZERO;                                                         \
            return 0;                                                                              \
        }                                                                                          \
        if (b == -1) return (T)((UT)0 - (UT)a);                                                    \
        T q = a / b;                                                                               \
        return a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q;                                       \
    }                                                                                              \
    CT_EW_FN T ct__ew_bitwise_and_##S(T a, T b, int *err) { return (void)err, a & b; }             \
    CT_EW_FN T ct__ew_bitwise_or_##S(T a, T b, int *err) { return (void)err, a | b; }              \
    CT_EW_FN T ct__ew_bitwise_xor_##S(T a, T b, int *err) { return (void)err, a ^ b; }             \
    /* shifts by a count outside [0, BITS) give 0 (or -1 for a negative a shifted right) */        \
    CT_EW_FN T ct__ew_bitwise_left_shift_##S(T a, T b, int *err) {                                 \
        (void)err;                                                                                 \
        return (UT)b < (UT)(BITS) ? (T)((UT)a << (UT)b) : (T)0;                                    \
    }                                                                                              \
    CT_EW_FN T ct__ew_bitwise_right_shift_##S(T a, T b, int *err) {                                \
        (void)err;                                                                                 \
        if ((UT)b < (UT)(BITS)) return (T)(a >> (UT)b);                                            \
        return a < 0 ? (T)-1 : (T)0;                                                               \
    }                                                                                              \
    CT_EW_FN T ct__ew_relu_grad_##S(T a, T b, int *err) { return (void)err, b > 0 ? a : (T)0; }
CT_EW_BINARY_INT_(int32_t, i32, uint32_t, 32)
CT_EW_BINARY_INT_(int64_t, i64, uint64_t, 64)

/* ---- binary, the uint64 domain: wrapping; division truncates (no sign to floor toward) ---- */
CT_EW_FN uint64_t ct__ew_add_u64(uint64_t a, uint64_t b, int *err) { return (void)err, a + b; }
CT_EW_FN uint64_t ct__ew_sub_u64(uint64_t a, uint64_t b, int *err) { return (void)err, a - b; }
CT_EW_FN uint64_t ct__ew_mul_u64(uint64_t a, uint64_t b, int *err) { return (void)err, a * b; }
CT_EW_FN uint64_t ct__ew_maximum_u64(uint64_t a, uint64_t b, int *err) {
    return (void)err, a > b ? a : b;
}
CT_EW_FN uint64_t ct__ew_minimum_u64(uint64_t a, uint64_t b, int *err) {
    return (void)err, a < b ? a : b;
}
CT_EW_FN uint64_t ct__ew_pow_u64(uint64_t a, uint64_t b, int *err) {
    (void)err;
    uint64_t result = 1, square = a;
    for (uint64_t e = b; e; e >>= 1) {
        if (e & 1u) result *= square;
        square *= square;
    }
    return result;
}
CT_EW_FN uint64_t ct__ew_remainder_u64(uint64_t a, uint64_t b, int *err) {
    if (b == 0) {
        *err = CT_EW_REMAINDER_BY_ZERO;
        return 0;
    }
    return a % b;
}
CT_EW_FN uint64_t ct__ew_floor_divide_u64(uint64_t a, uint64_t b, int *err) {
    if (b == 0) {
        *err = CT_EW_DIVISION_BY_ZERO;
        return 0;
    }
    return a / b;
}
CT_EW_FN uint64_t ct__ew_bitwise_and_u64(uint64_t a, uint64_t b, int *err) {
    return (void)err, a & b;
}
CT_EW_FN uint64_t ct__ew_bitwise_or_u64(uint64_t a, uint64_t b, int *err) {
    return (void)err, a | b;
}
CT_EW_FN uint64_t ct__ew_bitwise_xor_u64(uint64_t a, uint64_t b, int *err) {
    return (void)err, a ^ b;
}
CT_EW_FN uint64_t ct__ew_bitwise_left_shift_u64(uint64_t a, uint64_t b, int *err) {
    return (void)err, b < 64 ? a << b : 0;
}
CT_EW_FN uint64_t ct__ew_bitwise_right_shift_u64(uint64_t a, uint64_t b, int *err) {
    return (void)err, b < 64 ? a >> b : 0;
}
CT_EW_FN uint64_t ct__ew_relu_grad_u64(uint64_t a, uint64_t b, int *err) {
    return (void)err, b > 0 ? a : 0;
}

/* ---- comparisons and logical ops, in every domain: 0 or 1; & and | keep them branch-free;
 * NaN compares false except with ne ---- */
#define CT_EW_COMPARE_(T, S)                                                                       \
    CT_EW_FN uint8_t ct__ew_eq_##S(T a, T b) { return a == b; }                                    \
    CT_EW_FN uint8_t ct__ew_ne_##S(T a, T b) { return a != b; }                                    \
    CT_EW_FN uint8_t ct__ew_lt_##S(T a, T b) { return a < b; }                                     \
    CT_EW_FN uint8_t ct__ew_le_##S(T a, T b) { return a <= b; }                                    \
    CT_EW_FN uint8_t ct__ew_gt_##S(T a, T b) { return a > b; }                                     \
    CT_EW_FN uint8_t ct__ew_ge_##S(T a, T b) { return a >= b; }                                    \
    CT_EW_FN uint8_t ct__ew_logical_and_##S(T a, T b) { return (a != 0) & (b != 0); }              \
    CT_EW_FN uint8_t ct__ew_logical_or_##S(T a, T b) { return (a != 0) | (b != 0); }
CT_EW_COMPARE_(float, f32)
CT_EW_COMPARE_(double, f64)
CT_EW_COMPARE_(int32_t, i32)
CT_EW_COMPARE_(int64_t, i64)
CT_EW_COMPARE_(uint64_t, u64)

#endif

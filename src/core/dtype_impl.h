/* Internal dtype helpers: inline 16-bit float conversions and generic element load/store,
 * used by kernels that handle every dtype through a double or int64 compute domain. */
#ifndef CT_DTYPE_IMPL_H
#define CT_DTYPE_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ctensor/dtype.h"

/* The bit casts are device code too under nvcc, so that float algorithms written with them
 * (cpu_math_impl.h's exp) also run in the CUDA kernels, bit for bit. */
#if defined(__CUDACC__)
#define CT_BITS_FN static inline __host__ __device__
#else
#define CT_BITS_FN static inline
#endif

CT_BITS_FN uint32_t ct__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

CT_BITS_FN float ct__bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float ct__bf16_to_f32(uint16_t h) { return ct__bits_f32((uint32_t)h << 16); }

static inline uint16_t ct__f32_to_bf16(float f) {
    uint32_t u = ct__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static inline float ct__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1f) return ct__bits_f32(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {
        /* zero or subnormal: mantissa * 2^-24 is exact in float */
        float magnitude = (float)mantissa * 0x1p-24f;
        return sign ? -magnitude : magnitude;
    }
    return ct__bits_f32(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static inline uint16_t ct__f32_to_f16(float f) {
    uint32_t u = ct__f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs_bits = u & 0x7fffffffu;
    if (abs_bits > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((abs_bits >> 13) & 0x3ffu));
    if (abs_bits >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (abs_bits < 0x38800000u) {
        /* result is subnormal or zero: add 0.5 (exponent bias trick) so the FPU rounds the
         * value to a multiple of 2^-24 with round-to-nearest-even */
        float magic = ct__bits_f32(abs_bits) + 0.5f;
        return (uint16_t)(sign | (uint16_t)(ct__f32_bits(magic) - 0x3f000000u));
    }
    uint32_t mantissa_odd = (abs_bits >> 13) & 1u;
    abs_bits += 0xc8000fffu + mantissa_odd; /* rebias exponent (-112 << 23) and round */
    return (uint16_t)(sign | (uint16_t)(abs_bits >> 13));
}

/* v rounded to float with round-to-odd (toward zero, then the last bit set when inexact):
 * rounding that float to nearest even in a narrower format (f16, bf16) gives the correctly
 * rounded result, which rounding to nearest twice does not. */
static inline float ct__f64_to_f32_odd(double v) {
    float f = (float)v;
    if ((double)f == v || v != v) return f;
    uint32_t u = ct__f32_bits(f);
    if (fabs((double)f) > fabs(v)) u -= 1; /* rounded away from zero: step back */
    return ct__bits_f32(u | 1u);
}

/* Load element p of dtype as a double (integers above 2^53 lose precision: use the int64
 * domain for integer math). */
static inline double ct__load_f64(const char *p, ct_dtype dtype) {
    switch (dtype) {
    case CT_F32: return *(const float *)p;
    case CT_F64: return *(const double *)p;
    case CT_F16: return ct__f16_to_f32(*(const uint16_t *)p);
    case CT_BF16: return ct__bf16_to_f32(*(const uint16_t *)p);
    case CT_I32: return *(const int32_t *)p;
    case CT_I64: return (double)*(const int64_t *)p;
    case CT_U8: return *(const uint8_t *)p;
    case CT_BOOL: return *(const uint8_t *)p != 0;
    }
    return 0.0;
}

/* Convert a double to an int64 the way C casts do, but defined for every input:
 * NaN gives 0 and out-of-range values saturate. */
static inline int64_t ct__f64_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static inline int64_t ct__load_i64(const char *p, ct_dtype dtype) {
    switch (dtype) {
    case CT_I32: return *(const int32_t *)p;
    case CT_I64: return *(const int64_t *)p;
    case CT_U8: return *(const uint8_t *)p;
    case CT_BOOL: return *(const uint8_t *)p != 0;
    default: return ct__f64_to_i64(ct__load_f64(p, dtype));
    }
}

/* Store a double into dtype: floats round to nearest, integers truncate toward zero and
 * wrap modulo 2^bits (through int64, as NumPy's casts do on x86), bool is v != 0. */
static inline void ct__store_f64(char *p, ct_dtype dtype, double v) {
    switch (dtype) {
    case CT_F32: *(float *)p = (float)v; break;
    case CT_F64: *(double *)p = v; break;
    case CT_F16: *(uint16_t *)p = ct__f32_to_f16(ct__f64_to_f32_odd(v)); break;
    case CT_BF16: *(uint16_t *)p = ct__f32_to_bf16(ct__f64_to_f32_odd(v)); break;
    case CT_I32: *(int32_t *)p = (int32_t)(uint32_t)(uint64_t)ct__f64_to_i64(v); break;
    case CT_I64: *(int64_t *)p = ct__f64_to_i64(v); break;
    case CT_U8: *(uint8_t *)p = (uint8_t)(uint64_t)ct__f64_to_i64(v); break;
    case CT_BOOL: *(uint8_t *)p = v != 0.0; break;
    }
}

/* Store an int64 into dtype (integers wrap, floats round). */
static inline void ct__store_i64(char *p, ct_dtype dtype, int64_t v) {
    switch (dtype) {
    case CT_I32: *(int32_t *)p = (int32_t)(uint32_t)(uint64_t)v; break;
    case CT_I64: *(int64_t *)p = v; break;
    case CT_U8: *(uint8_t *)p = (uint8_t)(uint64_t)v; break;
    case CT_BOOL: *(uint8_t *)p = v != 0; break;
    case CT_F32: *(float *)p = (float)v; break; /* one rounding, not two through double */
    default: ct__store_f64(p, dtype, (double)v); break;
    }
}

static inline size_t ct__dtype_size(ct_dtype dtype) {
    static const unsigned char sizes[CT_DTYPE_COUNT] = {4, 8, 2, 2, 4, 8, 1, 1};
    return (unsigned)dtype < CT_DTYPE_COUNT ? sizes[dtype] : 0;
}

static inline int ct__is_float(ct_dtype dtype) {
    return dtype == CT_F32 || dtype == CT_F64 || dtype == CT_F16 || dtype == CT_BF16;
}

#endif

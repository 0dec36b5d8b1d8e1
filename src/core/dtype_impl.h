/* Internal dtype helpers: inline 16-bit float conversions and generic element load/store,
 * used by kernels that handle every dtype through a double or int64 compute domain. Under
 * nvcc every helper is host and device code, so the CUDA kernels convert with the same rules
 * as the CPU (cuda_load_impl.cuh includes this header). */
#ifndef CT_DTYPE_IMPL_H
#define CT_DTYPE_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ctensor/dtype.h"

/* Device code too under nvcc, so that float algorithms written with these helpers
 * (cpu_math_impl.h's exp) also run in the CUDA kernels, bit for bit. */
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define CT_DTYPE_FN static inline __host__ __device__
#else
#define CT_DTYPE_FN static inline
#endif

CT_DTYPE_FN uint32_t ct__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

CT_DTYPE_FN float ct__bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

CT_DTYPE_FN float ct__bf16_to_f32(uint16_t h) { return ct__bits_f32((uint32_t)h << 16); }

CT_DTYPE_FN uint16_t ct__f32_to_bf16(float f) {
    uint32_t u = ct__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
#if defined(__CUDA_ARCH__)
    return __bfloat16_as_ushort(__float2bfloat16_rn(f)); /* the same rounding, one instruction */
#else
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
#endif
}

CT_DTYPE_FN float ct__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1f) return ct__bits_f32(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {
        /* zero or subnormal: mantissa * 2^-24 is exact in float */
        float magnitude = (float)mantissa * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -magnitude : magnitude;
    }
    return ct__bits_f32(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

CT_DTYPE_FN uint16_t ct__f32_to_f16(float f) {
    uint32_t u = ct__f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs_bits = u & 0x7fffffffu;
    if (abs_bits > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((abs_bits >> 13) & 0x3ffu));
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(f)); /* the same rounding, one instruction */
#else
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
#endif
}

/* v rounded to float with round-to-odd (toward zero, then the last bit set when inexact):
 * rounding that float to nearest even in a narrower format (f16, bf16) gives the correctly
 * rounded result, which rounding to nearest twice does not. */
CT_DTYPE_FN float ct__f64_to_f32_odd(double v) {
    float f = (float)v;
    if ((double)f == v || v != v) return f;
    uint32_t u = ct__f32_bits(f);
    if (fabs((double)f) > fabs(v)) u -= 1; /* rounded away from zero: step back */
    return ct__bits_f32(u | 1u);
}

CT_DTYPE_FN int ct__is_float_dtype_(ct_dtype dtype) {
    return dtype == CT_F32 || dtype == CT_F64 || dtype == CT_F16 || dtype == CT_BF16;
}

/* Load element p of dtype as a double (integers above 2^53 lose precision: use the int64
 * domain for integer math). */
CT_DTYPE_FN double ct__load_f64(const char *p, ct_dtype dtype) {
    switch (dtype) {
    case CT_F32: return *(const float *)p;
    case CT_F64: return *(const double *)p;
    case CT_F16: return ct__f16_to_f32(*(const uint16_t *)p);
    case CT_BF16: return ct__bf16_to_f32(*(const uint16_t *)p);
    case CT_I32: return *(const int32_t *)p;
    case CT_I64: return (double)*(const int64_t *)p;
    case CT_U8: return *(const uint8_t *)p;
    case CT_BOOL: return *(const uint8_t *)p != 0;
    case CT_I8: return *(const int8_t *)p;
    case CT_I16: return *(const int16_t *)p;
    case CT_U16: return *(const uint16_t *)p;
    case CT_U32: return *(const uint32_t *)p;
    case CT_U64: return (double)*(const uint64_t *)p;
    }
    return 0.0;
}

/* Convert a double to an int64 the way C casts do, but defined for every input:
 * NaN gives 0 and out-of-range values saturate. */
CT_DTYPE_FN int64_t ct__f64_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

/* A double to the 64 bits of a uint64: values in [2^63, 2^64) convert as unsigned, larger
 * ones saturate, the rest as ct__f64_to_i64 (negative values wrap, as NumPy's casts do on
 * x86). */
CT_DTYPE_FN uint64_t ct__f64_to_u64(double v) {
    if (v >= 18446744073709551616.0) return UINT64_MAX;
    if (v >= 9223372036854775808.0) return (uint64_t)v;
    return (uint64_t)ct__f64_to_i64(v);
}

/* Element p of an integer or bool dtype as int64 (a uint64 keeps its 64 bits: values above
 * INT64_MAX read negative); a float truncates toward zero and saturates. */
CT_DTYPE_FN int64_t ct__load_i64(const char *p, ct_dtype dtype) {
    switch (dtype) {
    case CT_I32: return *(const int32_t *)p;
    case CT_I64: return *(const int64_t *)p;
    case CT_U8: return *(const uint8_t *)p;
    case CT_BOOL: return *(const uint8_t *)p != 0;
    case CT_I8: return *(const int8_t *)p;
    case CT_I16: return *(const int16_t *)p;
    case CT_U16: return *(const uint16_t *)p;
    case CT_U32: return *(const uint32_t *)p;
    case CT_U64: return (int64_t) * (const uint64_t *)p;
    default: return ct__f64_to_i64(ct__load_f64(p, dtype));
    }
}

/* What an int64 from ct__load_i64 is XORed with so that signed comparisons order dtype's
 * values: the sign bit for uint64 (0 is then INT64_MIN), 0 for every other dtype. */
CT_DTYPE_FN int64_t ct__order_bias(ct_dtype dtype) { return dtype == CT_U64 ? INT64_MIN : 0; }

/* Element p as uint64: integers wrap modulo 2^64, floats as ct__f64_to_u64. */
CT_DTYPE_FN uint64_t ct__load_u64(const char *p, ct_dtype dtype) {
    if (ct__is_float_dtype_(dtype)) return ct__f64_to_u64(ct__load_f64(p, dtype));
    return (uint64_t)ct__load_i64(p, dtype);
}

/* Store a double into dtype: floats round to nearest, integers truncate toward zero and
 * wrap modulo 2^bits (through int64, as NumPy's casts do on x86), bool is v != 0. */
CT_DTYPE_FN void ct__store_f64(char *p, ct_dtype dtype, double v) {
    switch (dtype) {
    case CT_F32: *(float *)p = (float)v; break;
    case CT_F64: *(double *)p = v; break;
    case CT_F16: *(uint16_t *)p = ct__f32_to_f16(ct__f64_to_f32_odd(v)); break;
    case CT_BF16: *(uint16_t *)p = ct__f32_to_bf16(ct__f64_to_f32_odd(v)); break;
    case CT_I32: *(int32_t *)p = (int32_t)(uint32_t)(uint64_t)ct__f64_to_i64(v); break;
    case CT_I64: *(int64_t *)p = ct__f64_to_i64(v); break;
    case CT_U8: *(uint8_t *)p = (uint8_t)(uint64_t)ct__f64_to_i64(v); break;
    case CT_BOOL: *(uint8_t *)p = v != 0.0; break;
    case CT_I8: *(int8_t *)p = (int8_t)(uint8_t)(uint64_t)ct__f64_to_i64(v); break;
    case CT_I16: *(int16_t *)p = (int16_t)(uint16_t)(uint64_t)ct__f64_to_i64(v); break;
    case CT_U16: *(uint16_t *)p = (uint16_t)(uint64_t)ct__f64_to_i64(v); break;
    case CT_U32: *(uint32_t *)p = (uint32_t)(uint64_t)ct__f64_to_i64(v); break;
    case CT_U64: *(uint64_t *)p = ct__f64_to_u64(v); break;
    }
}

/* Store an int64 into dtype (integers wrap, floats round). */
CT_DTYPE_FN void ct__store_i64(char *p, ct_dtype dtype, int64_t v) {
    switch (dtype) {
    case CT_I32: *(int32_t *)p = (int32_t)(uint32_t)(uint64_t)v; break;
    case CT_I64: *(int64_t *)p = v; break;
    case CT_U8: *(uint8_t *)p = (uint8_t)(uint64_t)v; break;
    case CT_BOOL: *(uint8_t *)p = v != 0; break;
    case CT_I8: *(int8_t *)p = (int8_t)(uint8_t)(uint64_t)v; break;
    case CT_I16: *(int16_t *)p = (int16_t)(uint16_t)(uint64_t)v; break;
    case CT_U16: *(uint16_t *)p = (uint16_t)(uint64_t)v; break;
    case CT_U32: *(uint32_t *)p = (uint32_t)(uint64_t)v; break;
    case CT_U64: *(uint64_t *)p = (uint64_t)v; break;
    case CT_F32: *(float *)p = (float)v; break; /* one rounding, not two through double */
    default: ct__store_f64(p, dtype, (double)v); break;
    }
}

/* Store a uint64 into dtype: integers wrap, floats round from the unsigned value. */
CT_DTYPE_FN void ct__store_u64(char *p, ct_dtype dtype, uint64_t v) {
    switch (dtype) {
    case CT_F32: *(float *)p = (float)v; break;
    case CT_F64: *(double *)p = (double)v; break;
    case CT_F16:
    case CT_BF16: ct__store_f64(p, dtype, (double)v); break;
    default: ct__store_i64(p, dtype, (int64_t)v); break;
    }
}

CT_DTYPE_FN size_t ct__dtype_size(ct_dtype dtype) {
    switch (dtype) {
    case CT_F64:
    case CT_I64:
    case CT_U64: return 8;
    case CT_F32:
    case CT_I32:
    case CT_U32: return 4;
    case CT_F16:
    case CT_BF16:
    case CT_I16:
    case CT_U16: return 2;
    case CT_U8:
    case CT_BOOL:
    case CT_I8: return 1;
    }
    return 0;
}

CT_DTYPE_FN int ct__is_float(ct_dtype dtype) { return ct__is_float_dtype_(dtype); }

CT_DTYPE_FN int ct__is_unsigned(ct_dtype dtype) {
    return dtype == CT_U8 || dtype == CT_U16 || dtype == CT_U32 || dtype == CT_U64;
}

/* An integer dtype (signed or unsigned; not bool). */
CT_DTYPE_FN int ct__is_int(ct_dtype dtype) {
    return ct__is_unsigned(dtype) || dtype == CT_I8 || dtype == CT_I16 || dtype == CT_I32 ||
           dtype == CT_I64;
}

#endif

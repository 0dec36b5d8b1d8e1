// Device-side element loads and stores for every dtype, in the double and int64 compute
// domains, with the rounding rules of the CPU's core/dtype_impl.h (whose helpers are host
// only): floats round to nearest even, f16/bf16 from double round once (through an f32
// rounded to odd), integers from floats truncate toward zero and saturate (NaN gives 0),
// integers wrap modulo 2^bits, bool is v != 0. Used by every CUDA kernel file.
#ifndef CT_CUDA_LOAD_IMPL_CUH
#define CT_CUDA_LOAD_IMPL_CUH

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ctensor/dtype.h"

static __host__ __device__ inline int64_t ct_cuda_dtype_size(ct_dtype dtype) {
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
    default: return 1;
    }
}

// What ct_cuda_load_i64's value is XORed with so that signed comparisons order the dtype's
// values (the sign bit for uint64), as core/dtype_impl.h's ct__order_bias.
static __host__ __device__ inline int64_t ct_cuda_order_bias(ct_dtype dtype) {
    return dtype == CT_U64 ? INT64_MIN : 0;
}

static __host__ __device__ inline bool ct_cuda_is_float(ct_dtype dtype) {
    return dtype == CT_F32 || dtype == CT_F64 || dtype == CT_F16 || dtype == CT_BF16;
}

// Exact; written out (not __half2float) so that NaN payloads convert as on the CPU.
static __device__ inline float ct_cuda_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {
        float magnitude = (float)mantissa * 5.9604644775390625e-8f; // 2^-24, exact
        return sign ? -magnitude : magnitude;
    }
    return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static __device__ inline float ct_cuda_bf16_to_f32(uint16_t h) {
    return __uint_as_float((uint32_t)h << 16);
}

// NaNs keep their sign and payload bits as the CPU's conversions do (the intrinsics would
// give a canonical NaN); everything else rounds to nearest even in hardware.
static __device__ inline uint16_t ct_cuda_f32_to_f16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu));
    return __half_as_ushort(__float2half_rn(f));
}

static __device__ inline uint16_t ct_cuda_f32_to_bf16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

// v rounded to float with round-to-odd: toward zero, then the last bit set when inexact.
// Rounding that float to f16/bf16 then gives the correctly rounded result.
static __device__ inline float ct_cuda_f64_to_f32_odd(double v) {
    float f = __double2float_rz(v);
    if ((double)f == v || v != v) return f;
    return __uint_as_float(__float_as_uint(f) | 1u);
}

static __device__ inline int64_t ct_cuda_f64_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static __device__ inline uint64_t ct_cuda_f64_to_u64(double v) {
    if (v >= 18446744073709551616.0) return UINT64_MAX;
    if (v >= 9223372036854775808.0) return (uint64_t)v;
    return (uint64_t)ct_cuda_f64_to_i64(v);
}

static __device__ inline double ct_cuda_load_f64(const char *p, ct_dtype dtype) {
    switch (dtype) {
    case CT_F32: return *(const float *)p;
    case CT_F64: return *(const double *)p;
    case CT_F16: return ct_cuda_f16_to_f32(*(const uint16_t *)p);
    case CT_BF16: return ct_cuda_bf16_to_f32(*(const uint16_t *)p);
    case CT_I32: return *(const int32_t *)p;
    case CT_I64: return (double)*(const int64_t *)p;
    case CT_U8: return *(const uint8_t *)p;
    case CT_I8: return *(const int8_t *)p;
    case CT_I16: return *(const int16_t *)p;
    case CT_U16: return *(const uint16_t *)p;
    case CT_U32: return *(const uint32_t *)p;
    case CT_U64: return (double)*(const uint64_t *)p;
    default: return *(const uint8_t *)p != 0;
    }
}

static __device__ inline int64_t ct_cuda_load_i64(const char *p, ct_dtype dtype) {
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
    default: return ct_cuda_f64_to_i64(ct_cuda_load_f64(p, dtype));
    }
}

static __device__ inline uint64_t ct_cuda_load_u64(const char *p, ct_dtype dtype) {
    if (ct_cuda_is_float(dtype)) return ct_cuda_f64_to_u64(ct_cuda_load_f64(p, dtype));
    return (uint64_t)ct_cuda_load_i64(p, dtype);
}

static __device__ inline void ct_cuda_store_f64(char *p, ct_dtype dtype, double v) {
    switch (dtype) {
    case CT_F32: *(float *)p = (float)v; break;
    case CT_F64: *(double *)p = v; break;
    case CT_F16: *(uint16_t *)p = ct_cuda_f32_to_f16(ct_cuda_f64_to_f32_odd(v)); break;
    case CT_BF16: *(uint16_t *)p = ct_cuda_f32_to_bf16(ct_cuda_f64_to_f32_odd(v)); break;
    case CT_I32: *(int32_t *)p = (int32_t)(uint32_t)(uint64_t)ct_cuda_f64_to_i64(v); break;
    case CT_I64: *(int64_t *)p = ct_cuda_f64_to_i64(v); break;
    case CT_U8: *(uint8_t *)p = (uint8_t)(uint64_t)ct_cuda_f64_to_i64(v); break;
    case CT_I8: *(int8_t *)p = (int8_t)(uint8_t)(uint64_t)ct_cuda_f64_to_i64(v); break;
    case CT_I16: *(int16_t *)p = (int16_t)(uint16_t)(uint64_t)ct_cuda_f64_to_i64(v); break;
    case CT_U16: *(uint16_t *)p = (uint16_t)(uint64_t)ct_cuda_f64_to_i64(v); break;
    case CT_U32: *(uint32_t *)p = (uint32_t)(uint64_t)ct_cuda_f64_to_i64(v); break;
    case CT_U64: *(uint64_t *)p = ct_cuda_f64_to_u64(v); break;
    default: *(uint8_t *)p = v != 0.0; break;
    }
}

static __device__ inline void ct_cuda_store_i64(char *p, ct_dtype dtype, int64_t v) {
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
    case CT_F32: *(float *)p = (float)v; break; // one rounding, not two through double
    default: ct_cuda_store_f64(p, dtype, (double)v); break;
    }
}

// A uint64 into dtype: integers wrap, floats round from the unsigned value.
static __device__ inline void ct_cuda_store_u64(char *p, ct_dtype dtype, uint64_t v) {
    switch (dtype) {
    case CT_F32: *(float *)p = (float)v; break;
    case CT_F64: *(double *)p = (double)v; break;
    case CT_F16:
    case CT_BF16: ct_cuda_store_f64(p, dtype, (double)v); break;
    default: ct_cuda_store_i64(p, dtype, (int64_t)v); break;
    }
}

#endif

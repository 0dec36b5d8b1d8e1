/* Internal dtype helpers, generated from the rows of ctensor/dtype.h's CT_DTYPES: each row's
 * size, kind and interchange codes, its conversions, and the element loads and stores of
 * every compute domain (double, float, int64, uint64) used by kernels that handle every
 * dtype. Under nvcc every helper is host and device code (but the interchange codes), so
 * the CUDA kernels convert with the CPU's rules from this one header. */
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

/* ---- facts of each row ---- */

#if defined(__cplusplus)
#define CT__STATIC_ASSERT(cond, message) static_assert(cond, message)
#else
#define CT__STATIC_ASSERT(cond, message) _Static_assert(cond, message)
#endif

/* Each row's size is its storage type's. */
#define CT__DTYPE_SIZE_CHECK(name, NAME, value, size, kind, T, ...)                                \
    CT__STATIC_ASSERT(sizeof(T) == size, "the size of " #name " is sizeof its ctype");
CT_DTYPES(CT__DTYPE_SIZE_CHECK)
#undef CT__DTYPE_SIZE_CHECK

typedef enum {
    CT__KIND_NONE,
    CT__KIND_BOOL,
    CT__KIND_INT,
    CT__KIND_UINT,
    CT__KIND_FLOAT,
    CT__KIND_COMPLEX
} ct__kind;

/* The row's kind column; CT__KIND_NONE for a value outside the enum. */
CT_DTYPE_FN ct__kind ct__dtype_kind(ct_dtype dtype) {
    switch (dtype) {
#define CT__DTYPE_KIND_CASE(name, NAME, value, size, kind, ...)                                    \
    case CT_##NAME: return CT__KIND_##kind;
        CT_DTYPES(CT__DTYPE_KIND_CASE)
#undef CT__DTYPE_KIND_CASE
    }
    return CT__KIND_NONE;
}

/* Bytes per element; 0 for a value outside the enum. */
CT_DTYPE_FN size_t ct__dtype_size(ct_dtype dtype) {
    switch (dtype) {
#define CT__DTYPE_SIZE_CASE(name, NAME, value, size, ...)                                          \
    case CT_##NAME: return size;
        CT_DTYPES(CT__DTYPE_SIZE_CASE)
#undef CT__DTYPE_SIZE_CASE
    }
    return 0;
}

/* The interchange columns (host code): NumPy's typestr ("<f4"; NULL where NumPy has no such
 * dtype) and the safetensors header's name ("F32"); NULL for a value outside the enum. */
#define CT__DTYPE_NUMPY(name, NAME, value, size, kind, T, numpy, ...)                              \
    case CT_##NAME:                                                                                \
        return numpy;
#define CT__DTYPE_SAFETENSORS(name, NAME, value, size, kind, T, numpy, buffer, dl_code, dl_bits,   \
                              safetensors)                                                         \
    case CT_##NAME:                                                                                \
        return safetensors;
#define CT__DTYPE_COLUMN_FN(fn, column)                                                            \
    static inline const char *fn(ct_dtype dtype) {                                                 \
        switch (dtype) { CT_DTYPES(column) }                                                       \
        return NULL;                                                                               \
    }
CT__DTYPE_COLUMN_FN(ct__dtype_numpy, CT__DTYPE_NUMPY)
CT__DTYPE_COLUMN_FN(ct__dtype_safetensors, CT__DTYPE_SAFETENSORS)

CT_DTYPE_FN int ct__is_float(ct_dtype dtype) { return ct__dtype_kind(dtype) == CT__KIND_FLOAT; }

CT_DTYPE_FN int ct__is_unsigned(ct_dtype dtype) { return ct__dtype_kind(dtype) == CT__KIND_UINT; }

CT_DTYPE_FN int ct__is_complex(ct_dtype dtype) { return ct__dtype_kind(dtype) == CT__KIND_COMPLEX; }

/* The real dtype of a complex dtype's parts (float32 for complex64, float64 for complex128);
 * any other dtype is its own. */
CT_DTYPE_FN ct_dtype ct__complex_part(ct_dtype dtype) {
    return dtype == CT_C64 ? CT_F32 : dtype == CT_C128 ? CT_F64 : dtype;
}

/* The complex dtype whose parts are dtype's float (complex64 for float32, float16 and
 * bfloat16, complex128 for float64); a complex dtype is its own. */
CT_DTYPE_FN ct_dtype ct__complex_of(ct_dtype dtype) {
    return dtype == CT_F64 || dtype == CT_C128 ? CT_C128 : CT_C64;
}

/* An integer dtype (signed or unsigned; not bool). */
CT_DTYPE_FN int ct__is_int(ct_dtype dtype) {
    return ct__dtype_kind(dtype) == CT__KIND_INT || ct__dtype_kind(dtype) == CT__KIND_UINT;
}

/* ---- each row's conversions ----
 * A row converts between its storage type T and the compute domains (double, float, int64,
 * uint64) with six functions (and a float row has ct__NAME_digits): double ct__NAME_to_f64(T),
 * float ct__NAME_to_f32(T), T ct__NAME_from_f64(double), T ct__NAME_from_f32(float), T
 * ct__NAME_from_i64(int64_t) and T ct__NAME_from_u64(uint64_t). The integer and bool kinds convert
 * as C does, through the CT__*_INT, _UINT and _BOOL rules below; a FLOAT row (and a row of a kind
 * to come) has its own six, so a row without them does not compile and the compiler names
 * ct__NAME_... . Rules: floats round to nearest; integers truncate toward zero and wrap modulo
 * 2^bits (through int64, as NumPy's casts do on x86; NaN gives 0, out-of-range values saturate);
 * bool is v != 0. */

/* float32 and float64: C's own conversions (one rounding from int64 and uint64). digits is
 * the significand's width with its hidden bit (ct__NAME_digits). */
#define CT__NATIVE_FLOAT_CONVERSIONS(NAME, T, digits)                                              \
    enum { ct__##NAME##_digits = digits };                                                         \
    CT_DTYPE_FN double ct__##NAME##_to_f64(T v) { return (double)v; }                              \
    CT_DTYPE_FN float ct__##NAME##_to_f32(T v) { return (float)v; }                                \
    CT_DTYPE_FN T ct__##NAME##_from_f64(double x) { return (T)x; }                                 \
    CT_DTYPE_FN T ct__##NAME##_from_f32(float x) { return (T)x; }                                  \
    CT_DTYPE_FN T ct__##NAME##_from_i64(int64_t x) { return (T)x; }                                \
    CT_DTYPE_FN T ct__##NAME##_from_u64(uint64_t x) { return (T)x; }

/* The 16-bit floats, stored as uint16_t, through float: a double rounds to float with
 * round-to-odd first, so that the result is correctly rounded. */
#define CT__FLOAT16_CONVERSIONS(NAME, fmt, digits)                                                 \
    enum { ct__##NAME##_digits = digits };                                                         \
    CT_DTYPE_FN double ct__##NAME##_to_f64(uint16_t v) { return ct__##fmt##_to_f32(v); }           \
    CT_DTYPE_FN float ct__##NAME##_to_f32(uint16_t v) { return ct__##fmt##_to_f32(v); }            \
    CT_DTYPE_FN uint16_t ct__##NAME##_from_f64(double x) {                                         \
        return ct__f32_to_##fmt(ct__f64_to_f32_odd(x));                                            \
    }                                                                                              \
    CT_DTYPE_FN uint16_t ct__##NAME##_from_f32(float x) { return ct__f32_to_##fmt(x); }            \
    CT_DTYPE_FN uint16_t ct__##NAME##_from_i64(int64_t x) {                                        \
        return ct__##NAME##_from_f64((double)x);                                                   \
    }                                                                                              \
    CT_DTYPE_FN uint16_t ct__##NAME##_from_u64(uint64_t x) {                                       \
        return ct__##NAME##_from_f64((double)x);                                                   \
    }

/* complex64 and complex128 from the compute domains: a real value has imaginary part 0. Reading
 * one into a real domain takes its real part, which only ct_real and the copies the op layer
 * allows (complex to complex) rely on: the op layer refuses complex tensors elsewhere (a cast
 * to a real dtype is CT_ERR_DTYPE), so the imaginary part is never dropped silently. */
#define CT__COMPLEX_CONVERSIONS(NAME, T, R, digits)                                                \
    enum { ct__##NAME##_digits = digits };                                                         \
    CT_DTYPE_FN double ct__##NAME##_to_f64(T v) { return (double)v.re; }                           \
    CT_DTYPE_FN float ct__##NAME##_to_f32(T v) { return (float)v.re; }                             \
    CT_DTYPE_FN T ct__##NAME##_from_f64(double x) {                                                \
        T z = {(R)x, 0};                                                                           \
        return z;                                                                                  \
    }                                                                                              \
    CT_DTYPE_FN T ct__##NAME##_from_f32(float x) {                                                 \
        T z = {(R)x, 0};                                                                           \
        return z;                                                                                  \
    }                                                                                              \
    CT_DTYPE_FN T ct__##NAME##_from_i64(int64_t x) {                                               \
        T z = {(R)x, 0};                                                                           \
        return z;                                                                                  \
    }                                                                                              \
    CT_DTYPE_FN T ct__##NAME##_from_u64(uint64_t x) {                                              \
        T z = {(R)x, 0};                                                                           \
        return z;                                                                                  \
    }

CT__NATIVE_FLOAT_CONVERSIONS(F32, float, 24)
CT__NATIVE_FLOAT_CONVERSIONS(F64, double, 53)
CT__FLOAT16_CONVERSIONS(F16, f16, 11)
CT__FLOAT16_CONVERSIONS(BF16, bf16, 8)
CT__COMPLEX_CONVERSIONS(C64, ct_complex64, float, 24)
CT__COMPLEX_CONVERSIONS(C128, ct_complex128, double, 53)

/* A float dtype's significand width with its hidden bit (24 for float32; a complex dtype's
 * parts' width); 0 for the others. */
CT_DTYPE_FN int ct__float_digits(ct_dtype dtype) {
    switch (dtype) {
#define CT__DIGITS_BOOL(NAME) 0
#define CT__DIGITS_INT(NAME) 0
#define CT__DIGITS_UINT(NAME) 0
#define CT__DIGITS_FLOAT(NAME) (ct__##NAME##_digits)
#define CT__DIGITS_COMPLEX(NAME) (ct__##NAME##_digits)
#define CT__FLOAT_DIGITS_CASE(name, NAME, value, size, kind, ...)                                  \
    case CT_##NAME: return CT__DIGITS_##kind(NAME);
        CT_DTYPES(CT__FLOAT_DIGITS_CASE)
#undef CT__FLOAT_DIGITS_CASE
    }
    return 0;
}

/* The rules per kind: v is an element of storage type T, x a value of the compute domain. A
 * FLOAT row calls its own functions (the parentheses make a missing one an error, not an
 * implicit declaration). */
#define CT__TO_F64_BOOL(NAME, T, v) ((v) != 0 ? 1.0 : 0.0)
#define CT__TO_F64_INT(NAME, T, v) ((double)(v))
#define CT__TO_F64_UINT(NAME, T, v) ((double)(v))
#define CT__TO_F64_FLOAT(NAME, T, v) (ct__##NAME##_to_f64)(v)
#define CT__TO_F64_COMPLEX(NAME, T, v) CT__TO_F64_FLOAT(NAME, T, v)

/* (float)(double)v, as the float32 domain has always read integers: two roundings for
 * 64-bit integers, the same on CPU and CUDA. */
#define CT__TO_F32_BOOL(NAME, T, v) ((v) != 0 ? 1.0f : 0.0f)
#define CT__TO_F32_INT(NAME, T, v) ((float)(double)(v))
#define CT__TO_F32_UINT(NAME, T, v) ((float)(double)(v))
#define CT__TO_F32_FLOAT(NAME, T, v) (ct__##NAME##_to_f32)(v)
#define CT__TO_F32_COMPLEX(NAME, T, v) CT__TO_F32_FLOAT(NAME, T, v)

/* uint64 reads back negative: an int64 keeps its 64 bits. A float truncates and saturates. */
#define CT__TO_I64_BOOL(NAME, T, v) ((int64_t)((v) != 0))
#define CT__TO_I64_INT(NAME, T, v) ((int64_t)(v))
#define CT__TO_I64_UINT(NAME, T, v) ((int64_t)(v))
#define CT__TO_I64_FLOAT(NAME, T, v) ct__f64_to_i64((ct__##NAME##_to_f64)(v))
#define CT__TO_I64_COMPLEX(NAME, T, v) CT__TO_I64_FLOAT(NAME, T, v)

#define CT__TO_U64_BOOL(NAME, T, v) ((uint64_t)((v) != 0))
#define CT__TO_U64_INT(NAME, T, v) ((uint64_t)(int64_t)(v))
#define CT__TO_U64_UINT(NAME, T, v) ((uint64_t)(v))
#define CT__TO_U64_FLOAT(NAME, T, v) ct__f64_to_u64((ct__##NAME##_to_f64)(v))
#define CT__TO_U64_COMPLEX(NAME, T, v) CT__TO_U64_FLOAT(NAME, T, v)

/* uint64 takes [2^63, 2^64) as unsigned (ct__f64_to_u64); narrower types wrap from int64. */
#define CT__FROM_F64_BOOL(NAME, T, x) ((T)((x) != 0.0))
#define CT__FROM_F64_INT(NAME, T, x) ((T)(uint64_t)ct__f64_to_i64(x))
#define CT__FROM_F64_UINT(NAME, T, x)                                                              \
    ((T)(sizeof(T) == sizeof(uint64_t) ? ct__f64_to_u64(x) : (uint64_t)ct__f64_to_i64(x)))
#define CT__FROM_F64_FLOAT(NAME, T, x) (ct__##NAME##_from_f64)(x)
#define CT__FROM_F64_COMPLEX(NAME, T, x) CT__FROM_F64_FLOAT(NAME, T, x)

#define CT__FROM_F32_BOOL(NAME, T, x) CT__FROM_F64_BOOL(NAME, T, (double)(x))
#define CT__FROM_F32_INT(NAME, T, x) CT__FROM_F64_INT(NAME, T, (double)(x))
#define CT__FROM_F32_UINT(NAME, T, x) CT__FROM_F64_UINT(NAME, T, (double)(x))
#define CT__FROM_F32_FLOAT(NAME, T, x) (ct__##NAME##_from_f32)(x)
#define CT__FROM_F32_COMPLEX(NAME, T, x) CT__FROM_F32_FLOAT(NAME, T, x)

#define CT__FROM_I64_BOOL(NAME, T, x) ((T)((x) != 0))
#define CT__FROM_I64_INT(NAME, T, x) ((T)(uint64_t)(x))
#define CT__FROM_I64_UINT(NAME, T, x) ((T)(uint64_t)(x))
#define CT__FROM_I64_FLOAT(NAME, T, x) (ct__##NAME##_from_i64)(x)
#define CT__FROM_I64_COMPLEX(NAME, T, x) CT__FROM_I64_FLOAT(NAME, T, x)

#define CT__FROM_U64_BOOL(NAME, T, x) ((T)((x) != 0))
#define CT__FROM_U64_INT(NAME, T, x) ((T)(x))
#define CT__FROM_U64_UINT(NAME, T, x) ((T)(x))
#define CT__FROM_U64_FLOAT(NAME, T, x) (ct__##NAME##_from_u64)(x)
#define CT__FROM_U64_COMPLEX(NAME, T, x) CT__FROM_U64_FLOAT(NAME, T, x)

/* ---- element loads and stores: one case per row ---- */

#define CT__LOAD_CASE(domain, NAME, kind, T)                                                       \
    case CT_##NAME:                                                                                \
        return CT__TO_##domain##_##kind(NAME, T, *(const T *)p);
#define CT__STORE_CASE(domain, NAME, kind, T)                                                      \
    case CT_##NAME:                                                                                \
        *(T *)p = CT__FROM_##domain##_##kind(NAME, T, x);                                          \
        return;
#define CT__LOAD_F64_CASE(name, NAME, value, size, kind, T, ...) CT__LOAD_CASE(F64, NAME, kind, T)
#define CT__LOAD_F32_CASE(name, NAME, value, size, kind, T, ...) CT__LOAD_CASE(F32, NAME, kind, T)
#define CT__LOAD_I64_CASE(name, NAME, value, size, kind, T, ...) CT__LOAD_CASE(I64, NAME, kind, T)
#define CT__LOAD_U64_CASE(name, NAME, value, size, kind, T, ...) CT__LOAD_CASE(U64, NAME, kind, T)
#define CT__STORE_F64_CASE(name, NAME, value, size, kind, T, ...) CT__STORE_CASE(F64, NAME, kind, T)
#define CT__STORE_F32_CASE(name, NAME, value, size, kind, T, ...) CT__STORE_CASE(F32, NAME, kind, T)
#define CT__STORE_I64_CASE(name, NAME, value, size, kind, T, ...) CT__STORE_CASE(I64, NAME, kind, T)
#define CT__STORE_U64_CASE(name, NAME, value, size, kind, T, ...) CT__STORE_CASE(U64, NAME, kind, T)

/* R ct__load_<domain>(p, dtype): element p of dtype in the domain's type R; 0 for a value
 * outside the enum. void ct__store_<domain>(p, dtype, x): x stored into dtype; nothing for a
 * value outside the enum. */
#define CT__DEFINE_LOAD_STORE(domain, DOMAIN, R)                                                   \
    CT_DTYPE_FN R ct__load_##domain(const char *p, ct_dtype dtype) {                               \
        switch (dtype) { CT_DTYPES(CT__LOAD_##DOMAIN##_CASE) }                                     \
        return 0;                                                                                  \
    }                                                                                              \
    CT_DTYPE_FN void ct__store_##domain(char *p, ct_dtype dtype, R x) {                            \
        switch (dtype) { CT_DTYPES(CT__STORE_##DOMAIN##_CASE) }                                    \
    }

/* double: integers above 2^53 lose precision (use the int64 domain for integer math). */
CT__DEFINE_LOAD_STORE(f64, F64, double)
/* float: the float formats convert directly (one rounding), the rest through double. */
CT__DEFINE_LOAD_STORE(f32, F32, float)
/* int64: a uint64 keeps its 64 bits (values above INT64_MAX read negative); a float
 * truncates toward zero and saturates; float32 and float64 round once from the int64. */
CT__DEFINE_LOAD_STORE(i64, I64, int64_t)
/* uint64: integers wrap modulo 2^64, floats load as ct__f64_to_u64 and round once from the
 * unsigned value. */
CT__DEFINE_LOAD_STORE(u64, U64, uint64_t)

/* The complex domains: element p of any dtype as a complex number (a real one with imaginary
 * part 0; complex64 into complex128 exactly), and a complex number stored into a complex dtype
 * (its real part into a real dtype: only where the op layer asked for the real part). */
CT_DTYPE_FN ct_complex128 ct__load_c128(const char *p, ct_dtype dtype) {
    ct_complex128 z = {0, 0};
    if (dtype == CT_C128) {
        memcpy(&z, p, sizeof z);
    } else if (dtype == CT_C64) {
        ct_complex64 h;
        memcpy(&h, p, sizeof h);
        z.re = h.re;
        z.im = h.im;
    } else {
        z.re = ct__load_f64(p, dtype);
    }
    return z;
}

CT_DTYPE_FN ct_complex64 ct__load_c64(const char *p, ct_dtype dtype) {
    ct_complex64 z = {0, 0};
    if (dtype == CT_C64) {
        memcpy(&z, p, sizeof z);
    } else if (dtype == CT_C128) {
        ct_complex128 w;
        memcpy(&w, p, sizeof w);
        z.re = (float)w.re;
        z.im = (float)w.im;
    } else {
        z.re = ct__load_f32(p, dtype);
    }
    return z;
}

CT_DTYPE_FN void ct__store_c128(char *p, ct_dtype dtype, ct_complex128 z) {
    if (dtype == CT_C128) {
        memcpy(p, &z, sizeof z);
    } else if (dtype == CT_C64) {
        ct_complex64 h = {(float)z.re, (float)z.im};
        memcpy(p, &h, sizeof h);
    } else {
        ct__store_f64(p, dtype, z.re);
    }
}

CT_DTYPE_FN void ct__store_c64(char *p, ct_dtype dtype, ct_complex64 z) {
    if (dtype == CT_C64) {
        memcpy(p, &z, sizeof z);
    } else if (dtype == CT_C128) {
        ct_complex128 w = {z.re, z.im};
        memcpy(p, &w, sizeof w);
    } else {
        ct__store_f32(p, dtype, z.re);
    }
}

/* What an int64 from ct__load_i64 is XORed with so that signed comparisons order dtype's
 * values: the sign bit for uint64 (0 is then INT64_MIN), 0 for every other dtype. */
CT_DTYPE_FN int64_t ct__order_bias(ct_dtype dtype) { return dtype == CT_U64 ? INT64_MIN : 0; }

#endif

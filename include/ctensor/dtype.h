/* ctensor — element types, promotion and the 16-bit float conversions.
 *
 * Promotion follows NumPy's promote_types table, which within each kind is the array API
 * standard's (bool < i8 < i16 < i32 < i64 and bool < u8 < u16 < u32 < u64; a signed with an
 * unsigned integer gives the smallest signed integer that holds both: u8 with i8 is i16,
 * u32 with i32 is i64; f16 < f32 < f64). Where the standard leaves it unspecified NumPy's
 * answer is taken: u64 with any signed integer is f64, and an integer with a float gives
 * the smallest float that holds both exactly (u8 and i8 with f16 is f16, i16 and u16 with
 * f16 is f32, i32 with f32 is f64). bf16 sits beside f16: bf16 with f16 is f32,
 * u8 with bf16 is bf16. Complex: c64 < c128 as the standard's table (c64 with f64 is c128, with
 * f32, f16 or bf16 c64); an integer or bool with a complex dtype gives the complex dtype that
 * holds the integer's float (NumPy: i8, u8, i16, u16 with c64 is c64; i32, u32, i64, u64 with
 * c64 is c128). Python-style scalars (the *_scalar and *_rscalar ops) are weak: they keep
 * the tensor's dtype, except that a non-integral scalar with an integer tensor gives f32. */
#ifndef CTENSOR_DTYPE_H
#define CTENSOR_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctensor/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dtypes, one row each: everything below and the library's per-dtype facts (sizes,
 * names, kinds, conversions, the interchange codes of NumPy, DLPack and safetensors, the
 * tests' dtype lists) are generated from these rows. A row's value is part of the ABI (files
 * and other programs hold it): rows are only appended. A row whose conversions are missing
 * does not compile, the compiler naming the row (src/core/dtype_impl.h; CI checks it with
 * tools/check-dtype-table.sh).
 *
 * Columns: X(name, NAME, value, size, kind, ctype, numpy, buffer, dl_code, dl_bits, safetensors)
 *   name         ct_dtype_name's string, as an identifier (float32); only ever stringified
 *                (`bool` is a macro in C), generated identifiers use NAME
 *   NAME         the enum is CT_NAME
 *   value        the enum's value
 *   size         bytes per element (sizeof ctype)
 *   kind         BOOL, INT (signed), UINT (unsigned), FLOAT or COMPLEX
 *   ctype        the storage type of one element (the 16-bit floats are stored as uint16_t;
 *                a type of two parts, as a complex number's, is a struct)
 *   numpy        NumPy's array-interface typestr, little-endian ("<f4"); NULL: NumPy has none
 *   buffer       the buffer protocol's (struct module's) format; NULL: none
 *   dl_code      DLPack's type code (DLDataTypeCode, without kDL: Int, UInt, Float, Bfloat, Bool,
 *                Complex)
 *   dl_bits      DLPack's bits per lane (a complex number is one lane of both parts)
 *   safetensors  the dtype's name in a safetensors header; NULL: the format has none (its
 *                specification has C64 but no 128-bit complex) */
/* One element of complex64 and complex128: the real part, then the imaginary part (the layout
 * of C99's float _Complex and double _Complex, NumPy's, DLPack's and the BLAS's). */
typedef struct ct_complex64 {
    float re, im;
} ct_complex64;
typedef struct ct_complex128 {
    double re, im;
} ct_complex128;

/* clang-format off */
#define CT_DTYPES(X)                                                                               \
    X(float32,  F32,   0, 4, FLOAT, float,    "<f4", "f", Float,  32, "F32")                       \
    X(float64,  F64,   1, 8, FLOAT, double,   "<f8", "d", Float,  64, "F64")                       \
    X(float16,  F16,   2, 2, FLOAT, uint16_t, "<f2", "e", Float,  16, "F16")                       \
    X(bfloat16, BF16,  3, 2, FLOAT, uint16_t, NULL,  NULL, Bfloat, 16, "BF16")                     \
    X(int32,    I32,   4, 4, INT,   int32_t,  "<i4", "i", Int,    32, "I32")                       \
    X(int64,    I64,   5, 8, INT,   int64_t,  "<i8", "q", Int,    64, "I64")                       \
    X(uint8,    U8,    6, 1, UINT,  uint8_t,  "|u1", "B", UInt,   8,  "U8")                        \
    X(bool,     BOOL,  7, 1, BOOL,  uint8_t,  "|b1", "?", Bool,   8,  "BOOL")                      \
    X(int8,     I8,    8, 1, INT,   int8_t,   "|i1", "b", Int,    8,  "I8")                        \
    X(int16,    I16,   9, 2, INT,   int16_t,  "<i2", "h", Int,    16, "I16")                       \
    X(uint16,   U16,  10, 2, UINT,  uint16_t, "<u2", "H", UInt,   16, "U16")                       \
    X(uint32,   U32,  11, 4, UINT,  uint32_t, "<u4", "I", UInt,   32, "U32")                       \
    X(uint64,   U64,  12, 8, UINT,  uint64_t, "<u8", "Q", UInt,   64, "U64")                       \
    X(complex64, C64, 13, 8, COMPLEX, ct_complex64, "<c8", "Zf", Complex, 64, "C64")             \
    X(complex128, C128, 14, 16, COMPLEX, ct_complex128, "<c16", "Zd", Complex, 128, NULL)
/* clang-format on */

#define CT_DTYPE_ENUM_(name, NAME, value, ...) CT_##NAME = value,
typedef enum ct_dtype { CT_DTYPES(CT_DTYPE_ENUM_) } ct_dtype;
#undef CT_DTYPE_ENUM_

/* The number of rows (the values are 0 ... CT_DTYPE_COUNT - 1): an enum constant, so that
 * code generated from the rows can use it too. */
#define CT_DTYPE_ONE_(...) +1
enum { CT_DTYPE_COUNT_ = 0 CT_DTYPES(CT_DTYPE_ONE_) };
#undef CT_DTYPE_ONE_
#define CT_DTYPE_COUNT CT_DTYPE_COUNT_

/* Bytes per element; 0 for a value outside the enum. */
CT_API size_t ct_dtype_size(ct_dtype dtype);

/* "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool", "int8",
 * "int16", "uint16", "uint32", "uint64", "complex64", "complex128"; "invalid" for a value
 * outside the enum. */
CT_API const char *ct_dtype_name(ct_dtype dtype);

CT_API bool ct_dtype_is_valid(ct_dtype dtype);
CT_API bool ct_dtype_is_floating(ct_dtype dtype); /* the real floats (not complex) */
CT_API bool ct_dtype_is_complex(ct_dtype dtype);  /* complex64, complex128 */
CT_API bool ct_dtype_is_integer(ct_dtype dtype);  /* i8 ... i64, u8 ... u64 (not bool) */
CT_API bool ct_dtype_is_unsigned(ct_dtype dtype); /* u8, u16, u32, u64 (not bool) */

/* The dtype a binary op on a and b computes in (the header's comment gives the rules). */
CT_API ct_dtype ct_promote_types(ct_dtype a, ct_dtype b);

/* IEEE half and bfloat16 conversions: round to nearest even; inf and NaN are kept
 * (a NaN stays a NaN, quiet). */
CT_API uint16_t ct_f32_to_f16(float value);
CT_API float ct_f16_to_f32(uint16_t bits);
CT_API uint16_t ct_f32_to_bf16(float value);
CT_API float ct_bf16_to_f32(uint16_t bits);

#ifdef __cplusplus
}
#endif
#endif

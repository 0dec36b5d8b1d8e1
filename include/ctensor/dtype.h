/* ctensor — element types, promotion and the 16-bit float conversions.
 *
 * Promotion follows NumPy's promote_types table, which within each kind is the array API
 * standard's (bool < i8 < i16 < i32 < i64 and bool < u8 < u16 < u32 < u64; a signed with an
 * unsigned integer gives the smallest signed integer that holds both: u8 with i8 is i16,
 * u32 with i32 is i64; f16 < f32 < f64). Where the standard leaves it unspecified NumPy's
 * answer is taken: u64 with any signed integer is f64, and an integer with a float gives
 * the smallest float that holds both exactly (u8 and i8 with f16 is f16, i16 and u16 with
 * f16 is f32, i32 with f32 is f64). bf16 sits beside f16: bf16 with f16 is f32,
 * u8 with bf16 is bf16. Python-style scalars (the *_scalar ops) are weak: they keep the
 * tensor's dtype, except that a non-integral scalar with an integer tensor gives f32. */
#ifndef CTENSOR_DTYPE_H
#define CTENSOR_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctensor/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_dtype {
    CT_F32 = 0,
    CT_F64 = 1,
    CT_F16 = 2,
    CT_BF16 = 3,
    CT_I32 = 4,
    CT_I64 = 5,
    CT_U8 = 6,
    CT_BOOL = 7,
    CT_I8 = 8,
    CT_I16 = 9,
    CT_U16 = 10,
    CT_U32 = 11,
    CT_U64 = 12,
} ct_dtype;

#define CT_DTYPE_COUNT 13

/* Bytes per element; 0 for a value outside the enum. */
CT_API size_t ct_dtype_size(ct_dtype dtype);

/* "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool", "int8",
 * "int16", "uint16", "uint32", "uint64"; "invalid" for a value outside the enum. */
CT_API const char *ct_dtype_name(ct_dtype dtype);

CT_API bool ct_dtype_is_valid(ct_dtype dtype);
CT_API bool ct_dtype_is_floating(ct_dtype dtype);
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

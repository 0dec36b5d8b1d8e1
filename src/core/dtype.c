/* dtypes: names, sizes, the promotion table and the exported 16-bit float conversions. */
#include "core/dtype_impl.h"

size_t ct_dtype_size(ct_dtype dtype) { return ct__dtype_size(dtype); }

const char *ct_dtype_name(ct_dtype dtype) {
    static const char *const names[CT_DTYPE_COUNT] = {
        "float32", "float64", "float16", "bfloat16", "int32",  "int64", "uint8",
        "bool",    "int8",    "int16",   "uint16",   "uint32", "uint64"};
    return (unsigned)dtype < CT_DTYPE_COUNT ? names[dtype] : "invalid";
}

bool ct_dtype_is_valid(ct_dtype dtype) { return (unsigned)dtype < CT_DTYPE_COUNT; }
bool ct_dtype_is_floating(ct_dtype dtype) { return ct__is_float(dtype); }
bool ct_dtype_is_integer(ct_dtype dtype) { return ct__is_int(dtype); }
bool ct_dtype_is_unsigned(ct_dtype dtype) { return ct__is_unsigned(dtype); }

/* NumPy's promote_types restricted to ctensor's dtypes, with bf16 beside f16. Rows and
 * columns in enum order: f32 f64 f16 bf16 i32 i64 u8 bool i8 i16 u16 u32 u64. */
ct_dtype ct_promote_types(ct_dtype a, ct_dtype b) {
    enum {
        F32 = CT_F32,
        F64 = CT_F64,
        F16 = CT_F16,
        B16 = CT_BF16,
        I32 = CT_I32,
        I64 = CT_I64,
        U8 = CT_U8,
        BO = CT_BOOL,
        I8 = CT_I8,
        I16 = CT_I16,
        U16 = CT_U16,
        U32 = CT_U32,
        U64 = CT_U64
    };
    static const unsigned char table[CT_DTYPE_COUNT][CT_DTYPE_COUNT] = {
        /* f32  */ {F32, F64, F32, F32, F64, F64, F32, F32, F32, F32, F32, F64, F64},
        /* f64  */ {F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64},
        /* f16  */ {F32, F64, F16, F32, F64, F64, F16, F16, F16, F32, F32, F64, F64},
        /* bf16 */ {F32, F64, F32, B16, F64, F64, B16, B16, B16, F32, F32, F64, F64},
        /* i32  */ {F64, F64, F64, F64, I32, I64, I32, I32, I32, I32, I32, I64, F64},
        /* i64  */ {F64, F64, F64, F64, I64, I64, I64, I64, I64, I64, I64, I64, F64},
        /* u8   */ {F32, F64, F16, B16, I32, I64, U8, U8, I16, I16, U16, U32, U64},
        /* bool */ {F32, F64, F16, B16, I32, I64, U8, BO, I8, I16, U16, U32, U64},
        /* i8   */ {F32, F64, F16, B16, I32, I64, I16, I8, I8, I16, I32, I64, F64},
        /* i16  */ {F32, F64, F32, F32, I32, I64, I16, I16, I16, I16, I32, I64, F64},
        /* u16  */ {F32, F64, F32, F32, I32, I64, U16, U16, I32, I32, U16, U32, U64},
        /* u32  */ {F64, F64, F64, F64, I64, I64, U32, U32, I64, I64, U32, U32, U64},
        /* u64  */ {F64, F64, F64, F64, F64, F64, U64, U64, F64, F64, U64, U64, U64},
    };
    if (!ct_dtype_is_valid(a) || !ct_dtype_is_valid(b)) return CT_F32;
    return (ct_dtype)table[a][b];
}

uint16_t ct_f32_to_f16(float value) { return ct__f32_to_f16(value); }
float ct_f16_to_f32(uint16_t bits) { return ct__f16_to_f32(bits); }
uint16_t ct_f32_to_bf16(float value) { return ct__f32_to_bf16(value); }
float ct_bf16_to_f32(uint16_t bits) { return ct__bf16_to_f32(bits); }

/* dtypes: names, sizes, the promotion table and the exported 16-bit float conversions. */
#include "core/dtype_impl.h"

size_t ct_dtype_size(ct_dtype dtype) { return ct__dtype_size(dtype); }

const char *ct_dtype_name(ct_dtype dtype) {
    switch (dtype) {
#define NAME_CASE(name, NAME, ...)                                                                 \
    case CT_##NAME: return #name;
        CT_DTYPES(NAME_CASE)
#undef NAME_CASE
    }
    return "invalid";
}

bool ct_dtype_is_valid(ct_dtype dtype) { return (unsigned)dtype < CT_DTYPE_COUNT; }
bool ct_dtype_is_floating(ct_dtype dtype) { return ct__is_float(dtype); }
bool ct_dtype_is_complex(ct_dtype dtype) { return ct__is_complex(dtype); }
bool ct_dtype_is_integer(ct_dtype dtype) { return ct__is_int(dtype); }
bool ct_dtype_is_unsigned(ct_dtype dtype) { return ct__is_unsigned(dtype); }

/* NumPy's promote_types restricted to ctensor's dtypes, with bf16 beside f16: one row per
 * dtype, its columns in enum order (f32 f64 f16 bf16 i32 i64 u8 bool i8 i16 u16 u32 u64 c64
 * c128). A
 * new dtype needs its row here (promote_NAME) and a column in every row. */
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
    U64 = CT_U64,
    C64 = CT_C64,
    Z16 = CT_C128
};
/* clang-format off */
#define PROMOTION_ROW(NAME, ...) static const unsigned char promote_##NAME[] = {__VA_ARGS__};
PROMOTION_ROW(F32, F32, F64, F32, F32, F64, F64, F32, F32, F32, F32, F32, F64, F64, C64, Z16)
PROMOTION_ROW(F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, Z16, Z16)
PROMOTION_ROW(F16, F32, F64, F16, F32, F64, F64, F16, F16, F16, F32, F32, F64, F64, C64, Z16)
PROMOTION_ROW(BF16, F32, F64, F32, B16, F64, F64, B16, B16, B16, F32, F32, F64, F64, C64, Z16)
PROMOTION_ROW(I32, F64, F64, F64, F64, I32, I64, I32, I32, I32, I32, I32, I64, F64, Z16, Z16)
PROMOTION_ROW(I64, F64, F64, F64, F64, I64, I64, I64, I64, I64, I64, I64, I64, F64, Z16, Z16)
PROMOTION_ROW(U8,  F32, F64, F16, B16, I32, I64, U8 , U8 , I16, I16, U16, U32, U64, C64, Z16)
PROMOTION_ROW(BOOL, F32, F64, F16, B16, I32, I64, U8 , BO , I8 , I16, U16, U32, U64, C64, Z16)
PROMOTION_ROW(I8,  F32, F64, F16, B16, I32, I64, I16, I8 , I8 , I16, I32, I64, F64, C64, Z16)
PROMOTION_ROW(I16, F32, F64, F32, F32, I32, I64, I16, I16, I16, I16, I32, I64, F64, C64, Z16)
PROMOTION_ROW(U16, F32, F64, F32, F32, I32, I64, U16, U16, I32, I32, U16, U32, U64, C64, Z16)
PROMOTION_ROW(U32, F64, F64, F64, F64, I64, I64, U32, U32, I64, I64, U32, U32, U64, Z16, Z16)
PROMOTION_ROW(U64, F64, F64, F64, F64, F64, F64, U64, U64, F64, F64, U64, U64, U64, Z16, Z16)
PROMOTION_ROW(C64, C64, Z16, C64, C64, Z16, Z16, C64, C64, C64, C64, C64, Z16, Z16, C64, Z16)
PROMOTION_ROW(C128, Z16, Z16, Z16, Z16, Z16, Z16, Z16, Z16, Z16, Z16, Z16, Z16, Z16, Z16, Z16)
#undef PROMOTION_ROW
/* clang-format on */

#define PROMOTE_ROW_CHECK(name, NAME, ...)                                                         \
    _Static_assert(sizeof promote_##NAME == CT_DTYPE_COUNT,                                        \
                   "the promotion row of " #name " has a column per dtype");
CT_DTYPES(PROMOTE_ROW_CHECK)
#undef PROMOTE_ROW_CHECK

ct_dtype ct_promote_types(ct_dtype a, ct_dtype b) {
#define PROMOTE_ROW(name, NAME, ...) [CT_##NAME] = promote_##NAME,
    static const unsigned char *const table[CT_DTYPE_COUNT] = {CT_DTYPES(PROMOTE_ROW)};
#undef PROMOTE_ROW
    if (!ct_dtype_is_valid(a) || !ct_dtype_is_valid(b)) return CT_F32;
    return (ct_dtype)table[a][b];
}

uint16_t ct_f32_to_f16(float value) { return ct__f32_to_f16(value); }
float ct_f16_to_f32(uint16_t bits) { return ct__f16_to_f32(bits); }
uint16_t ct_f32_to_bf16(float value) { return ct__f32_to_bf16(value); }
float ct_bf16_to_f32(uint16_t bits) { return ct__bf16_to_f32(bits); }

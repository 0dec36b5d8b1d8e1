/* dtypes: sizes, names, the promotion table (NumPy's for the dtypes NumPy has, plus the
 * bf16 rules), and the f16/bf16 conversions against references computed in double with
 * explicit round-to-nearest-even. */
#include <stdint.h>
#include <stdlib.h>

#include "ct_test.h"

TEST(test_dtype_sizes_and_names) {
    static const struct {
        ct_dtype dtype;
        size_t size;
        const char *name;
        bool floating, integer;
    } expected[CT_DTYPE_COUNT] = {
        {CT_F32, 4, "float32", true, false},       {CT_F64, 8, "float64", true, false},
        {CT_F16, 2, "float16", true, false},       {CT_BF16, 2, "bfloat16", true, false},
        {CT_I32, 4, "int32", false, true},         {CT_I64, 8, "int64", false, true},
        {CT_U8, 1, "uint8", false, true},          {CT_BOOL, 1, "bool", false, false},
        {CT_I8, 1, "int8", false, true},           {CT_I16, 2, "int16", false, true},
        {CT_U16, 2, "uint16", false, true},        {CT_U32, 4, "uint32", false, true},
        {CT_U64, 8, "uint64", false, true},        {CT_C64, 8, "complex64", false, false},
        {CT_C128, 16, "complex128", false, false},
    };
    for (int i = 0; i < CT_DTYPE_COUNT; i++) {
        CHECK(ct_dtype_size(expected[i].dtype) == expected[i].size);
        CHECK(strcmp(ct_dtype_name(expected[i].dtype), expected[i].name) == 0);
        CHECK(ct_dtype_is_valid(expected[i].dtype));
        CHECK(ct_dtype_is_floating(expected[i].dtype) == expected[i].floating);
        CHECK(ct_dtype_is_integer(expected[i].dtype) == expected[i].integer);
        bool is_unsigned = expected[i].integer && expected[i].name[0] == 'u';
        CHECK(ct_dtype_is_unsigned(expected[i].dtype) == is_unsigned);
        CHECK(ct_dtype_is_complex(expected[i].dtype) == (expected[i].name[0] == 'c'));
    }
}

/* The enum's values are public (files and other programs hold them): the first eight stay
 * where they were, the integer dtypes added later follow. */
TEST(test_dtype_enum_values_are_stable) {
    CHECK(CT_F32 == 0 && CT_F64 == 1 && CT_F16 == 2 && CT_BF16 == 3);
    CHECK(CT_I32 == 4 && CT_I64 == 5 && CT_U8 == 6 && CT_BOOL == 7);
    CHECK(CT_I8 == 8 && CT_I16 == 9 && CT_U16 == 10 && CT_U32 == 11 && CT_U64 == 12);
    CHECK(CT_C64 == 13 && CT_C128 == 14);
}

TEST(test_dtype_invalid_values) {
    ct_dtype invalid[3] = {(ct_dtype)CT_DTYPE_COUNT, (ct_dtype)-1, (ct_dtype)99};
    for (int i = 0; i < 3; i++) {
        CHECK(ct_dtype_size(invalid[i]) == 0);
        CHECK(strcmp(ct_dtype_name(invalid[i]), "invalid") == 0);
        CHECK(!ct_dtype_is_valid(invalid[i]));
        CHECK(!ct_dtype_is_floating(invalid[i]));
        CHECK(!ct_dtype_is_integer(invalid[i]));
    }
}

/* NumPy's promotion rules for the integer and float dtypes it shares with ctensor: within a
 * kind the larger type; bool joins anything as that thing; a signed with an unsigned integer
 * gives the smallest signed integer that holds both (the array API standard's table too);
 * u64 with a signed integer, which the standard leaves out, gives f64; an integer with a
 * float gives the smallest float that holds every value of both (u8 and i8 fit f16, i16
 * and u16 need f32, 32- and 64-bit integers f64). This is np.promote_types (NumPy 1.24). */
TEST(test_dtype_promotion_matches_numpy) {
    enum { N = 12 };
    static const ct_dtype order[N] = {CT_BOOL, CT_U8,  CT_U16, CT_U32, CT_U64, CT_I8,
                                      CT_I16,  CT_I32, CT_I64, CT_F16, CT_F32, CT_F64};
    /* clang-format off */
    static const ct_dtype table[N][N] = {
        /* bool */ {CT_BOOL, CT_U8, CT_U16, CT_U32, CT_U64, CT_I8, CT_I16, CT_I32, CT_I64, CT_F16, CT_F32, CT_F64},
        /* u8   */ {CT_U8, CT_U8, CT_U16, CT_U32, CT_U64, CT_I16, CT_I16, CT_I32, CT_I64, CT_F16, CT_F32, CT_F64},
        /* u16  */ {CT_U16, CT_U16, CT_U16, CT_U32, CT_U64, CT_I32, CT_I32, CT_I32, CT_I64, CT_F32, CT_F32, CT_F64},
        /* u32  */ {CT_U32, CT_U32, CT_U32, CT_U32, CT_U64, CT_I64, CT_I64, CT_I64, CT_I64, CT_F64, CT_F64, CT_F64},
        /* u64  */ {CT_U64, CT_U64, CT_U64, CT_U64, CT_U64, CT_F64, CT_F64, CT_F64, CT_F64, CT_F64, CT_F64, CT_F64},
        /* i8   */ {CT_I8, CT_I16, CT_I32, CT_I64, CT_F64, CT_I8, CT_I16, CT_I32, CT_I64, CT_F16, CT_F32, CT_F64},
        /* i16  */ {CT_I16, CT_I16, CT_I32, CT_I64, CT_F64, CT_I16, CT_I16, CT_I32, CT_I64, CT_F32, CT_F32, CT_F64},
        /* i32  */ {CT_I32, CT_I32, CT_I32, CT_I64, CT_F64, CT_I32, CT_I32, CT_I32, CT_I64, CT_F64, CT_F64, CT_F64},
        /* i64  */ {CT_I64, CT_I64, CT_I64, CT_I64, CT_F64, CT_I64, CT_I64, CT_I64, CT_I64, CT_F64, CT_F64, CT_F64},
        /* f16  */ {CT_F16, CT_F16, CT_F32, CT_F64, CT_F64, CT_F16, CT_F32, CT_F64, CT_F64, CT_F16, CT_F32, CT_F64},
        /* f32  */ {CT_F32, CT_F32, CT_F32, CT_F64, CT_F64, CT_F32, CT_F32, CT_F64, CT_F64, CT_F32, CT_F32, CT_F64},
        /* f64  */ {CT_F64, CT_F64, CT_F64, CT_F64, CT_F64, CT_F64, CT_F64, CT_F64, CT_F64, CT_F64, CT_F64, CT_F64},
    };
    /* clang-format on */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            ct_dtype got = ct_promote_types(order[i], order[j]);
            if (got != table[i][j]) {
                ct_test_fail(__FILE__, __LINE__, "promote(%s, %s) = %s, expected %s",
                             ct_dtype_name(order[i]), ct_dtype_name(order[j]), ct_dtype_name(got),
                             ct_dtype_name(table[i][j]));
                return;
            }
        }
}

TEST(test_dtype_promotion_bf16) {
    static const struct {
        ct_dtype other, result;
    } rules[] = {
        {CT_BF16, CT_BF16}, {CT_F16, CT_F32}, {CT_F32, CT_F32}, {CT_F64, CT_F64},
        {CT_BOOL, CT_BF16}, {CT_U8, CT_BF16}, {CT_I32, CT_F64}, {CT_I64, CT_F64},
        {CT_I8, CT_BF16},   {CT_I16, CT_F32}, {CT_U16, CT_F32}, {CT_U32, CT_F64},
        {CT_U64, CT_F64},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        CHECK(ct_promote_types(CT_BF16, rules[i].other) == rules[i].result);
        CHECK(ct_promote_types(rules[i].other, CT_BF16) == rules[i].result);
    }
}

/* ---- references for the 16-bit formats, in double ---- */

typedef struct {
    int exponent_bits, mantissa_bits;
} float_format;

static const float_format HALF = {5, 10}, BFLOAT = {8, 7};

static double decode_ref(uint16_t bits, float_format f) {
    int bias = (1 << (f.exponent_bits - 1)) - 1;
    int exponent = (bits >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
    double mantissa = bits & ((1u << f.mantissa_bits) - 1);
    double sign = bits & 0x8000u ? -1.0 : 1.0;
    if (exponent == (1 << f.exponent_bits) - 1) return mantissa ? NAN : sign * INFINITY;
    if (exponent == 0) return sign * ldexp(mantissa, 1 - bias - f.mantissa_bits);
    return sign * ldexp(1.0 + ldexp(mantissa, -f.mantissa_bits), exponent - bias);
}

/* Round-to-nearest-even of a finite non-negative value in units of quantum (a power of
 * two, so a / quantum is exact in double for float inputs). */
static double round_even(double a, double quantum) {
    double n = a / quantum, whole = floor(n), fraction = n - whole;
    if (fraction > 0.5 || (fraction == 0.5 && fmod(whole, 2.0) != 0.0)) whole += 1.0;
    return whole * quantum;
}

/* The bits of value (not NaN) in format f, rounding to nearest even. */
static uint16_t encode_ref(float value, float_format f) {
    int bias = (1 << (f.exponent_bits - 1)) - 1, min_exponent = 1 - bias;
    uint16_t sign = signbit(value) ? 0x8000u : 0;
    uint16_t inf = (uint16_t)(((1u << f.exponent_bits) - 1) << f.mantissa_bits);
    double a = fabs((double)value);
    if (isinf(a)) return sign | inf;
    double quantum = ldexp(1.0, min_exponent - f.mantissa_bits); /* subnormal spacing */
    if (a >= ldexp(1.0, min_exponent)) {
        int e;
        frexp(a, &e);
        quantum = ldexp(1.0, e - 1 - f.mantissa_bits);
    }
    double v = round_even(a, quantum);
    if (v >= ldexp(1.0, bias + 1)) return sign | inf;
    if (v < ldexp(1.0, min_exponent))
        return sign | (uint16_t)(v / ldexp(1.0, min_exponent - f.mantissa_bits));
    int e;
    frexp(v, &e);
    double fraction = ldexp(v, -(e - 1)) - 1.0;
    return sign | (uint16_t)((unsigned)(e - 1 + bias) << f.mantissa_bits) |
           (uint16_t)ldexp(fraction, f.mantissa_bits);
}

static float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

TEST(test_dtype_f16_to_f32_every_pattern) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ct_f16_to_f32((uint16_t)h);
        double expected = decode_ref((uint16_t)h, HALF);
        if (isnan(expected)) {
            CHECK(isnan(f));
            continue;
        }
        if ((double)f != expected || !signbit(f) != !signbit(expected)) {
            ct_test_fail(__FILE__, __LINE__, "f16 0x%04x -> %.9g, expected %.9g", h, (double)f,
                         expected);
            return;
        }
    }
}

TEST(test_dtype_f16_roundtrip_every_pattern) {
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t back = ct_f32_to_f16(ct_f16_to_f32((uint16_t)h));
        bool nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
        /* NaNs come back quiet (the top mantissa bit set) with their sign and payload. */
        uint16_t expected = nan ? (uint16_t)(h | 0x200u) : (uint16_t)h;
        if (back != expected) {
            ct_test_fail(__FILE__, __LINE__, "f16 0x%04x -> f32 -> 0x%04x, expected 0x%04x", h,
                         back, expected);
            return;
        }
    }
}

TEST(test_dtype_f32_to_f16_special_values) {
    static const struct {
        float value;
        uint16_t bits;
    } cases[] = {
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
        {1.0f, 0x3c00},
        {-2.0f, 0xc000},
        {65504.0f, 0x7bff}, /* the largest half */
        {65519.0f, 0x7bff}, /* below the halfway point to 65536 */
        {65520.0f, 0x7c00}, /* halfway: rounds to even, which is 2^16: inf */
        {-65520.0f, 0xfc00},
        {1e10f, 0x7c00},
        {INFINITY, 0x7c00},
        {-INFINITY, 0xfc00},
        {1.0f + 0x1p-11f, 0x3c00},            /* halfway between 1 and 1 + 2^-10: even is 1 */
        {1.0f + 3 * 0x1p-11f, 0x3c02},        /* halfway, the even neighbour is above */
        {1.0f + 0x1p-11f + 0x1p-23f, 0x3c01}, /* just above halfway */
        {0x1p-14f, 0x0400},                   /* smallest normal */
        {0x1p-24f, 0x0001},                   /* smallest subnormal */
        {0x1p-25f, 0x0000},                   /* halfway to the smallest subnormal: even is 0 */
        {0x1p-25f + 0x1p-40f, 0x0001},
        {3 * 0x1p-25f, 0x0002},        /* halfway between 1 and 2 units: even is 2 */
        {-5 * 0x1p-25f, 0x8002},       /* halfway between 2 and 3 units: even is 2 */
        {0x1p-14f - 0x1p-25f, 0x0400}, /* subnormal rounding up to the smallest normal */
        {0x1p-30f, 0x0000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = ct_f32_to_f16(cases[i].value);
        if (got != cases[i].bits) {
            ct_test_fail(__FILE__, __LINE__, "f32 %.9g -> f16 0x%04x, expected 0x%04x",
                         (double)cases[i].value, got, cases[i].bits);
            return;
        }
    }
}

TEST(test_dtype_f32_to_f16_nan_stays_quiet_nan) {
    uint32_t nans[4] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa00000u};
    for (int i = 0; i < 4; i++) {
        uint16_t h = ct_f32_to_f16(bits_to_float(nans[i]));
        CHECK((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0); /* a NaN */
        CHECK(h & 0x200u);                                    /* quiet */
        CHECK((h & 0x8000u) == ((nans[i] >> 16) & 0x8000u));  /* sign kept */
        CHECK(isnan(ct_f16_to_f32(h)));
    }
}

/* Compare a conversion with the reference for random floats: half of them random bit
 * patterns (every exponent), half with exponents near the format's range. */
static bool compare_random(uint16_t (*convert)(float), float_format f, int center_low,
                           int center_high, long n, uint64_t seed) {
    uint64_t state = seed;
    for (long i = 0; i < n; i++) {
        uint32_t u = (uint32_t)splitmix(&state);
        if (i % 2) {
            uint32_t exponent = (uint32_t)center_low +
                                (uint32_t)(splitmix(&state) % (uint64_t)(center_high - center_low));
            u = (u & 0x807fffffu) | (exponent << 23);
        }
        float value = bits_to_float(u);
        if (isnan(value)) continue;
        uint16_t got = convert(value), expected = encode_ref(value, f);
        if (got != expected) {
            ct_test_fail(__FILE__, __LINE__, "0x%08x (%.9g) -> 0x%04x, expected 0x%04x", u,
                         (double)value, got, expected);
            return false;
        }
    }
    return true;
}

TEST(test_dtype_f32_to_f16_random_vs_reference) {
    /* f32 biased exponents 97..143 cover f16's subnormals to its overflow. */
    compare_random(ct_f32_to_f16, HALF, 97, 144, 1000000, 42);
}

TEST(test_dtype_bf16_to_f32_every_pattern) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ct_bf16_to_f32((uint16_t)h);
        double expected = decode_ref((uint16_t)h, BFLOAT);
        if (isnan(expected)) {
            CHECK(isnan(f));
            CHECK(ct_f32_to_bf16(f) == (uint16_t)(h | 0x40u)); /* quiet, payload kept */
            continue;
        }
        CHECK((double)f == expected && !signbit(f) == !signbit(expected));
        CHECK(ct_f32_to_bf16(f) == h);
    }
}

TEST(test_dtype_f32_to_bf16_special_values) {
    static const struct {
        uint32_t value; /* f32 bits */
        uint16_t bits;
    } cases[] = {
        {0x00000000u, 0x0000}, {0x80000000u, 0x8000},
        {0x3f800000u, 0x3f80}, {0x3f808000u, 0x3f80}, /* 1 + 2^-8: halfway, even is 1 */
        {0x3f818000u, 0x3f82},                        /* 1 + 3 * 2^-8: halfway, even is above */
        {0x3f808001u, 0x3f81},                        /* just above halfway */
        {0x7f7fffffu, 0x7f80},                        /* FLT_MAX rounds up to inf */
        {0x7f7f7fffu, 0x7f7f},                        /* below halfway: the largest bfloat16 */
        {0x7f800000u, 0x7f80}, {0xff800000u, 0xff80},
        {0x00000001u, 0x0000}, /* the smallest f32 subnormal */
        {0x00008000u, 0x0000}, /* halfway to bf16's smallest subnormal: even is 0 */
        {0x00018000u, 0x0002}, /* halfway between 1 and 2 units */
        {0x00010000u, 0x0001},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = ct_f32_to_bf16(bits_to_float(cases[i].value));
        if (got != cases[i].bits) {
            ct_test_fail(__FILE__, __LINE__, "f32 0x%08x -> bf16 0x%04x, expected 0x%04x",
                         cases[i].value, got, cases[i].bits);
            return;
        }
    }
    uint32_t nans[3] = {0x7fc00000u, 0xff800001u, 0x7f800100u};
    for (int i = 0; i < 3; i++) {
        uint16_t h = ct_f32_to_bf16(bits_to_float(nans[i]));
        CHECK((h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0 && (h & 0x40u));
        CHECK((h & 0x8000u) == ((nans[i] >> 16) & 0x8000u));
    }
    CHECK(float_to_bits(ct_bf16_to_f32(0x3f80)) == 0x3f800000u);
}

TEST(test_dtype_f32_to_bf16_random_vs_reference) {
    /* The whole f32 range matters for bf16; the second half stresses subnormals. */
    compare_random(ct_f32_to_bf16, BFLOAT, 0, 12, 1000000, 7);
}

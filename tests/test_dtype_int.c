/* The integer dtypes at the ends of their ranges, on every device, with exact expected bits
 * (the table-driven op tests use small values that a double reference holds): uint64 above
 * INT64_MAX through the uint64 domain (order, division, shifts, extrema, reductions, casts,
 * printing), and the wrap-around of int8, int16, uint16 and uint32 as NumPy's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"

/* Run a check; stop the test at its first failure. */
#define RUN(call)                                                                                  \
    do {                                                                                           \
        call;                                                                                      \
        if (ct_test_failed()) return;                                                              \
    } while (0)

#define N 4
static const uint64_t big_a[N] = {UINT64_MAX, (uint64_t)1 << 63, ((uint64_t)1 << 63) - 1, 5};
static const uint64_t big_b[N] = {5, ((uint64_t)1 << 63) - 1, (uint64_t)1 << 63, UINT64_MAX};

/* t's bytes into out, t released; false with the test failed. */
static bool read_back(ct_tensor *t, void *out, size_t bytes) {
    ct_status s = t ? ct_copy_to_host(t, out, bytes) : ct_last_status();
    ct_release(t);
    if (s != CT_OK) ct_test_fail(__FILE__, __LINE__, "%s: %s", ct_status_name(s), ct_last_error());
    return s == CT_OK;
}

static bool same_u64(ct_tensor *t, const uint64_t *want, int n, const char *what) {
    uint64_t got[N] = {0};
    if (ct_dtype_of(t) != CT_U64) {
        ct_test_fail(__FILE__, __LINE__, "%s: dtype %s, expected uint64", what,
                     ct_dtype_name(ct_dtype_of(t)));
        ct_release(t);
        return false;
    }
    if (!read_back(t, got, sizeof(uint64_t) * (size_t)n)) return false;
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            ct_test_fail(__FILE__, __LINE__, "%s: [%d] = %llu, expected %llu", what, i,
                         (unsigned long long)got[i], (unsigned long long)want[i]);
            return false;
        }
    return true;
}

DEVICE_TEST(test_dtype_int_uint64_arithmetic_above_int64_max) {
    ct_tensor *a = ct_from_data(big_a, 1, (int64_t[]){N}, CT_U64, device);
    ct_tensor *b = ct_from_data(big_b, 1, (int64_t[]){N}, CT_U64, device);
    CHECK_NOT_NULL(a);
    CHECK_NOT_NULL(b);
    uint64_t want_max[N], want_div[N], want_mod[N], want_shift[N], want_sub[N];
    for (int i = 0; i < N; i++) {
        want_max[i] = big_a[i] > big_b[i] ? big_a[i] : big_b[i];
        want_div[i] = big_a[i] / big_b[i];
        want_mod[i] = big_a[i] % big_b[i];
        want_shift[i] = big_a[i] >> 1;
        want_sub[i] = big_a[i] - big_b[i];
    }
    bool ok = same_u64(ct_maximum(a, b), want_max, N, "maximum") &&
              same_u64(ct_floor_divide(a, b), want_div, N, "floor_divide") &&
              same_u64(ct_remainder(a, b), want_mod, N, "remainder") &&
              same_u64(ct_bitwise_right_shift_scalar(a, 1), want_shift, N, "right shift") &&
              same_u64(ct_sub(a, b), want_sub, N, "sub (wraps)") &&
              same_u64(ct_abs(a), big_a, N, "abs") && same_u64(ct_relu(a), big_a, N, "relu");
    uint8_t lt[N] = {0}, gt[N] = {0};
    ok = ok && read_back(ct_lt(a, b), lt, sizeof lt) && read_back(ct_gt_scalar(a, 7.0), gt, N);
    ct_release(a);
    ct_release(b);
    CHECK(ok);
    for (int i = 0; i < N; i++) {
        CHECK(lt[i] == (big_a[i] < big_b[i]));
        CHECK(gt[i] == (big_a[i] > 7));
    }
}

DEVICE_TEST(test_dtype_int_uint64_reductions_and_casts) {
    ct_tensor *a = ct_from_data(big_a, 1, (int64_t[]){N}, CT_U64, device);
    CHECK_NOT_NULL(a);
    uint64_t sum = 0, max = 0, min = 0;
    int64_t argmax = -1, argmin = -1, as_i64[N] = {0};
    double as_f64[N] = {0};
    float as_f32[N] = {0};
    bool ok = read_back(ct_sum(a, 0, NULL, false), &sum, 8) &&
              read_back(ct_max(a, 0, NULL, false), &max, 8) &&
              read_back(ct_min(a, 0, NULL, false), &min, 8) &&
              read_back(ct_argmax(a, 0, false), &argmax, 8) &&
              read_back(ct_argmin(a, 0, false), &argmin, 8) &&
              read_back(ct_cast(a, CT_I64), as_i64, sizeof as_i64) &&
              read_back(ct_cast(a, CT_F64), as_f64, sizeof as_f64) &&
              read_back(ct_cast(a, CT_F32), as_f32, sizeof as_f32);
    ct_release(a);
    CHECK(ok);
    CHECK(sum == big_a[0] + big_a[1] + big_a[2] + big_a[3]); /* wraps modulo 2^64 */
    CHECK(max == UINT64_MAX && min == 5 && argmax == 0 && argmin == 3);
    for (int i = 0; i < N; i++) {
        CHECK(as_i64[i] == (int64_t)big_a[i]);
        CHECK(as_f64[i] == (double)big_a[i]);
        CHECK(as_f32[i] == (float)big_a[i]);
    }
    /* and back from floats: values in [2^63, 2^64) keep their value */
    double d[3] = {0x1p63, 1.5e19, 0x1p64};
    uint64_t want[3] = {(uint64_t)1 << 63, 15000000000000000000u, UINT64_MAX};
    ct_tensor *f = ct_from_data(d, 1, (int64_t[]){3}, CT_F64, device);
    CHECK(same_u64(ct_cast(f, CT_U64), want, 3, "f64 -> u64"));
    ct_release(f);
}

DEVICE_TEST(test_dtype_int_uint64_prints_unsigned) {
    ct_tensor *a = ct_from_data(big_a, 1, (int64_t[]){N}, CT_U64, device);
    char *text = a ? ct_format(a) : NULL;
    bool has = text && strstr(text, "18446744073709551615") &&
               strstr(text, "9223372036854775808") && strstr(text, "uint64");
    ct_free(text);
    ct_release(a);
    CHECK(has);
}

/* x op y in dtype from int64 values, compared bit for bit with int64 expectations stored in
 * that dtype (the wrap is what NumPy gives). */
static void check_wrap(ct_device device, ct_dtype dtype, const int64_t *x, const int64_t *y,
                       ct_tensor *(*op)(const ct_tensor *, const ct_tensor *), const int64_t *want,
                       int n) {
    int64_t shape[1] = {n};
    ct_tensor *xi = ct_from_data(x, 1, shape, CT_I64, device);
    ct_tensor *yi = ct_from_data(y, 1, shape, CT_I64, device);
    ct_tensor *wi = ct_from_data(want, 1, shape, CT_I64, device);
    ct_tensor *xt = ct_cast(xi, dtype), *yt = ct_cast(yi, dtype), *wt = ct_cast(wi, dtype);
    ct_tensor *r = op(xt, yt);
    size_t size = ct_dtype_size(dtype);
    unsigned char got[8 * 8] = {0}, expect[8 * 8] = {0};
    bool same_dtype = ct_dtype_of(r) == dtype;
    bool ok = read_back(r, got, size * (size_t)n) && read_back(wt, expect, size * (size_t)n);
    ct_release(xi);
    ct_release(yi);
    ct_release(wi);
    ct_release(xt);
    ct_release(yt);
    CHECK(ok && same_dtype);
    if (memcmp(got, expect, size * (size_t)n) != 0)
        ct_test_fail(__FILE__, __LINE__, "%s: the wrapped result differs from NumPy's",
                     ct_dtype_name(dtype));
}

DEVICE_TEST(test_dtype_int_narrow_integers_wrap) {
    RUN(check_wrap(device, CT_I8, (int64_t[]){127, -128, 100, -7}, (int64_t[]){1, -1, 100, 3},
                   ct_add, (int64_t[]){-128, 127, -56, -4}, 4));
    RUN(check_wrap(device, CT_I8, (int64_t[]){-128, 16, -3, 7}, (int64_t[]){-1, 16, 2, -2},
                   ct_floor_divide, (int64_t[]){-128, 1, -2, -4}, 4));
    RUN(check_wrap(device, CT_I16, (int64_t[]){32767, -32768, 300, -5}, (int64_t[]){1, 1, 300, 3},
                   ct_mul, (int64_t[]){32767, -32768, 24464, -15}, 4));
    RUN(check_wrap(device, CT_U16, (int64_t[]){0, 65535, 7, 40000}, (int64_t[]){1, 1, 9, 40000},
                   ct_sub, (int64_t[]){65535, 65534, 65534, 0}, 4));
    RUN(check_wrap(device, CT_U32, (int64_t[]){4294967295, 65536, 3, 4000000000},
                   (int64_t[]){1, 65536, 5, 2}, ct_add,
                   (int64_t[]){0, 131072, 8, 4000000002 - 4294967296}, 4));
    RUN(check_wrap(device, CT_U32, (int64_t[]){4294967295, 65536, 3, 4000000000},
                   (int64_t[]){1, 65536, 5, 3}, ct_maximum,
                   (int64_t[]){4294967295, 65536, 5, 4000000000}, 4));
    RUN(check_wrap(device, CT_U16, (int64_t[]){65535, 8, 3, 40000}, (int64_t[]){2, 3, 5, 7},
                   ct_remainder, (int64_t[]){1, 2, 3, 40000 % 7}, 4));
}

DEVICE_TEST(test_dtype_int_unary_at_the_ends) {
    int64_t v[4] = {-128, 127, -1, 0};
    ct_tensor *i = ct_from_data(v, 1, (int64_t[]){4}, CT_I64, device);
    ct_tensor *x = ct_cast(i, CT_I8);
    int8_t abs8[4] = {0}, neg8[4] = {0}, clamp8[4] = {0};
    bool ok = read_back(ct_abs(x), abs8, 4) && read_back(ct_neg(x), neg8, 4) &&
              read_back(ct_clamp(x, -1000, 5.5), clamp8, 4);
    ct_tensor *u = ct_cast(i, CT_U32);
    uint32_t neg32[4] = {0}, inv32[4] = {0};
    ok = ok && read_back(ct_neg(u), neg32, 16) && read_back(ct_bitwise_invert(u), inv32, 16);
    ct_release(i);
    ct_release(x);
    ct_release(u);
    CHECK(ok);
    CHECK(abs8[0] == -128 && abs8[1] == 127 && abs8[2] == 1 && abs8[3] == 0);
    CHECK(neg8[0] == -128 && neg8[1] == -127 && neg8[2] == 1 && neg8[3] == 0);
    CHECK(clamp8[0] == -128 && clamp8[1] == 5 && clamp8[2] == -1 && clamp8[3] == 0);
    /* -128 and -1 as uint32 are 4294967168 and 4294967295 */
    CHECK(neg32[0] == 128u && neg32[1] == 4294967169u && neg32[2] == 1u && neg32[3] == 0u);
    CHECK(inv32[0] == 127u && inv32[1] == ~127u && inv32[2] == 0u && inv32[3] == UINT32_MAX);
}

/* ct_use_deterministic_algorithms / ct_are_deterministic_algorithms_enabled: off by default,
 * set and read back; and, with the switch on, on every device, the ops whose GPU kernels
 * otherwise accumulate with atomics give the same bits from call to call, the bits of adding
 * in the order of the indexed axis (the CPU's): ct_index_add (the index shared by every
 * position off the axis: the sorted path on CUDA) and ct_scatter_add with an index that
 * varies off the axis (the serial walk); and ct_matmul gives the same bits twice. Every test
 * that turns the switch on turns it off before its checks. */
#include "ct_test.h"

enum { ROWS = 3, COLS = 4, K = 96 };

/* Addends whose sum into one element depends on the order: +-big, whose ulp is 4 (2^25 in
 * f32, 2^54 in f64), absorbs the 1, 1.5 and 2 that follow it until the opposite big cancels
 * it; every value is exact in dtype. */
static double addend(int k, int c, ct_dtype dtype) {
    double big = dtype == CT_F32 ? 0x1p25 : 0x1p54;
    if (k % 4 == 0) return (k / 4 + c) % 2 ? big : -big;
    return 1.0 + 0.5 * ((k + c) % 3);
}

static int64_t row_of(int k, int c) { return (k * 5 + c * (k % 2)) % ROWS; }

TEST(test_deterministic_algorithms_off_by_default) {
    CHECK(!ct_are_deterministic_algorithms_enabled());
}

TEST(test_deterministic_algorithms_set_and_get) {
    ct_use_deterministic_algorithms(true);
    bool on = ct_are_deterministic_algorithms_enabled();
    ct_use_deterministic_algorithms(true);
    bool still_on = ct_are_deterministic_algorithms_enabled();
    ct_use_deterministic_algorithms(false);
    CHECK(on);
    CHECK(still_on);
    CHECK(!ct_are_deterministic_algorithms_enabled());
}

/* x (ROWS, COLS) of zeros with addend(k, c, dtype) added at row index[k] (index_add: the same row
 * for every column) or index[k][c] (scatter_add), in dtype, twice with the switch on: both
 * results in `out` (2 * ROWS * COLS). */
static ct_status add_twice(ct_device device, ct_dtype dtype, bool scatter, double *out) {
    static double src[K * COLS];
    static int64_t index[K * COLS]; /* scatter_add's (K, COLS), or index_add's (K) */
    for (int k = 0; k < K; k++)
        for (int c = 0; c < COLS; c++) {
            src[k * COLS + c] = addend(k, c, dtype);
            if (scatter)
                index[k * COLS + c] = row_of(k, c);
            else
                index[k] = row_of(k, 0);
        }
    int64_t x_shape[2] = {ROWS, COLS}, src_shape[2] = {K, COLS};
    ct_tensor *src64 = ct_from_data(src, 2, src_shape, CT_F64, device);
    ct_tensor *source = src64 ? ct_cast(src64, dtype) : NULL;
    ct_tensor *x = ct_zeros(2, x_shape, dtype, device);
    ct_tensor *idx = ct_from_data(index, scatter ? 2 : 1, src_shape, CT_I64, device);
    ct_status status = source && x && idx ? CT_OK : ct_last_status();
    ct_use_deterministic_algorithms(true);
    for (int run = 0; run < 2 && status == CT_OK; run++) {
        ct_tensor *sum =
            scatter ? ct_scatter_add(x, 0, idx, source) : ct_index_add(x, 0, idx, source);
        ct_tensor *sum64 = sum ? ct_cast(sum, CT_F64) : NULL;
        status = sum64
                     ? ct_copy_to_host(sum64, out + run * ROWS * COLS, sizeof(double) * ROWS * COLS)
                     : ct_last_status();
        ct_release(sum64);
        ct_release(sum);
    }
    ct_use_deterministic_algorithms(false);
    ct_release(idx);
    ct_release(x);
    ct_release(source);
    ct_release(src64);
    return status;
}

/* What adding in the order of the axis gives, one rounding to dtype each. */
static void expected_sums(ct_dtype dtype, bool scatter, double *want) {
    for (int i = 0; i < ROWS * COLS; i++) want[i] = 0;
    for (int k = 0; k < K; k++)
        for (int c = 0; c < COLS; c++) {
            double *w = &want[row_of(k, scatter ? c : 0) * COLS + c];
            if (dtype == CT_F32)
                *w = (double)((float)*w + (float)addend(k, c, dtype));
            else
                *w += addend(k, c, dtype);
        }
}

static void check_in_index_order(ct_device device, ct_dtype dtype, bool scatter) {
    double got[2 * ROWS * COLS], want[ROWS * COLS];
    CHECK_OK(add_twice(device, dtype, scatter, got));
    expected_sums(dtype, scatter, want);
    for (int i = 0; i < ROWS * COLS; i++) {
        if (got[i] != want[i] || got[ROWS * COLS + i] != want[i])
            ct_test_fail(__FILE__, __LINE__, "%s %s element %d: %.17g then %.17g, expected %.17g",
                         scatter ? "scatter_add" : "index_add", ct_dtype_name(dtype), i, got[i],
                         got[ROWS * COLS + i], want[i]);
        if (ct_test_failed()) return;
    }
}

DEVICE_TEST(test_deterministic_index_add_adds_in_index_order) {
    check_in_index_order(device, CT_F32, false);
    check_in_index_order(device, CT_F64, false);
}

DEVICE_TEST(test_deterministic_scatter_add_adds_in_index_order) {
    check_in_index_order(device, CT_F32, true);
    check_in_index_order(device, CT_F64, true);
}

/* A product large enough for cuBLAS to use its workspace: the same bits twice. */
DEVICE_TEST(test_deterministic_matmul_same_bits_twice) {
    enum { M = 96, N = 80, KK = 1000 };
    int64_t sa[2] = {M, KK}, sb[2] = {KK, N};
    ct_manual_seed(7);
    ct_tensor *a = ct_randn(2, sa, CT_F32, device);
    ct_tensor *b = ct_randn(2, sb, CT_F32, device);
    static float out[2][M * N];
    ct_status status = a && b ? CT_OK : ct_last_status();
    ct_use_deterministic_algorithms(true);
    for (int run = 0; run < 2 && status == CT_OK; run++) {
        ct_tensor *c = ct_matmul(a, b);
        status = c ? ct_copy_to_host(c, out[run], sizeof out[run]) : ct_last_status();
        ct_release(c);
    }
    ct_use_deterministic_algorithms(false);
    ct_release(a);
    ct_release(b);
    CHECK_OK(status);
    CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
}

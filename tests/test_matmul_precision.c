/* ct_set_matmul_precision / ct_get_matmul_precision: the default, setting and reading back,
 * the error for values it does not know, that the CPU computes f32 matmul in full f32
 * whatever the setting, and that "highest" means full f32 on every device. Every test that
 * changes the setting restores "highest". */
#include "ct_test.h"

TEST(test_matmul_precision_default_is_highest) {
    CHECK(strcmp(ct_get_matmul_precision(), "highest") == 0);
}

TEST(test_matmul_precision_set_and_get) {
    CHECK_OK(ct_set_matmul_precision("high"));
    bool high = strcmp(ct_get_matmul_precision(), "high") == 0;
    CHECK_OK(ct_set_matmul_precision("highest"));
    CHECK(high);
    CHECK(strcmp(ct_get_matmul_precision(), "highest") == 0);
}

TEST(test_matmul_precision_rejects_unknown_values) {
    CHECK(ct_set_matmul_precision("medium") == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_set_matmul_precision: unknown precision \"medium\"");
    CHECK(ct_set_matmul_precision("HIGH") == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "accepted values are \"highest\" (full f32, the default) "
                                    "and \"high\" (TF32 allowed)");
    CHECK(ct_set_matmul_precision(NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_set_matmul_precision: precision is NULL");
    CHECK(strcmp(ct_get_matmul_precision(), "highest") == 0);
}

TEST(test_matmul_precision_failed_set_keeps_the_setting) {
    CHECK_OK(ct_set_matmul_precision("high"));
    ct_status status = ct_set_matmul_precision("low");
    bool kept = strcmp(ct_get_matmul_precision(), "high") == 0;
    CHECK_OK(ct_set_matmul_precision("highest"));
    CHECK(status == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "unknown precision \"low\"");
    CHECK(kept);
}

/* 1 + 2^-20 needs 20 mantissa bits: TF32 (10 bits) would round the product to 1. */
TEST(test_matmul_precision_cpu_ignores_high) {
    float a[2] = {1.0f + 0x1p-20f, 0.0f}, b[2] = {1.0f, 1.0f}, c[1] = {0.0f};
    int64_t shape[1] = {2};
    CHECK_OK(ct_set_matmul_precision("high"));
    ct_tensor *ta = ct_from_data(a, 1, shape, CT_F32, CT_CPU);
    ct_tensor *tb = ct_from_data(b, 1, shape, CT_F32, CT_CPU);
    ct_tensor *tc = ct_matmul(ta, tb);
    ct_status status = tc ? ct_copy_to_host(tc, c, sizeof c) : ct_last_status();
    ct_release(ta);
    ct_release(tb);
    ct_release(tc);
    CHECK_OK(ct_set_matmul_precision("highest"));
    CHECK_OK(status);
    CHECK(c[0] == 1.0f + 0x1p-20f);
}

/* Under the default "highest", f32 matmul is full f32 on every device (no TF32): each
 * product (1 + 2^-12) * 1 and every partial sum of up to 64 of them is exact in f32, in any
 * order, while TF32 inputs (10-bit mantissa) would round 1 + 2^-12 to 1. */
DEVICE_TEST(test_matmul_precision_highest_is_full_f32) {
    enum { M = 4, K = 64, N = 4 };
    static float a[M * K], b[K * N];
    float c[M * N];
    for (int i = 0; i < M * K; i++) a[i] = 1.0f + 0x1p-12f;
    for (int i = 0; i < K * N; i++) b[i] = 1.0f;
    int64_t sa[2] = {M, K}, sb[2] = {K, N};
    CHECK(strcmp(ct_get_matmul_precision(), "highest") == 0);
    ct_tensor *ta = ct_from_data(a, 2, sa, CT_F32, device);
    ct_tensor *tb = ct_from_data(b, 2, sb, CT_F32, device);
    ct_tensor *tc = ct_matmul(ta, tb);
    ct_status status = tc ? ct_copy_to_host(tc, c, sizeof c) : ct_last_status();
    ct_release(ta);
    ct_release(tb);
    ct_release(tc);
    CHECK_OK(status);
    for (int i = 0; i < M * N; i++) CHECK(c[i] == (float)K * (1.0f + 0x1p-12f));
}

/* Memory shared with other libraries: ct_data_ptr (the address DLPack and Python's buffer
 * protocol hand out) and ct_from_external (a tensor over memory ctensor does not own, as
 * a DLPack import makes). */
#include "ct_test.h"

/* Counts the calls of the release function given to ct_from_external. */
static void count_release(void *context) { (*(int *)context)++; }

DEVICE_TEST(test_tensor_data_ptr_follows_views) {
    ct_tensor *t = ct_arange(0, 12, 1, CT_F32, device);
    ct_tensor *m = ct_reshape(t, 2, (int64_t[]){3, 4});
    ct_tensor *s = ct_slice(m, 1, 1, 4, 2); /* columns 1 and 3 */
    CHECK(t && m && s);
    bool ok = ct_data_ptr(m) == ct_data_ptr(t) &&
              (char *)ct_data_ptr(s) == (char *)ct_data_ptr(t) + sizeof(float) &&
              ct_data_ptr(NULL) == NULL;
    if (device.type == CT_DEVICE_CPU) ok = ok && ((float *)ct_data_ptr(s))[ct_strides(s)[0]] == 5;
    ct_release(s);
    ct_release(m);
    ct_release(t);
    CHECK(ok);
}

TEST(test_tensor_from_external_shares_and_releases_once) {
    double data[6] = {0, 1, 2, 3, 4, 5};
    int released = 0;
    ct_tensor *t = ct_from_external(data, 2, (int64_t[]){2, 3}, NULL, CT_F64, CT_CPU, count_release,
                                    &released);
    CHECK_NOT_NULL(t);
    ct_tensor *col = ct_slice(t, 1, 2, 3, 1);
    CHECK_NOT_NULL(col);
    ct_release(t);
    bool alive = released == 0;
    CHECK_OK(ct_fill(col, 9));
    ct_release(col);
    CHECK(alive && released == 1 && data[2] == 9 && data[5] == 9 && data[0] == 0);
}

TEST(test_tensor_from_external_strided_and_negative_strides) {
    float data[6] = {0, 1, 2, 3, 4, 5};
    int released = 0;
    /* The transpose of a 2x3 matrix, then its rows reversed: element (0, 0) is data[2]. */
    ct_tensor *t = ct_from_external(data + 2, 2, (int64_t[]){3, 2}, (int64_t[]){-1, 3}, CT_F32,
                                    CT_CPU, count_release, &released);
    CHECK_NOT_NULL(t);
    float out[6];
    CHECK_OK(ct_copy_to_host(t, out, sizeof out));
    ct_tensor *sum = ct_sum(t, 0, NULL, false);
    double total = 0;
    CHECK_OK(ct_item(sum, &total));
    ct_release(sum);
    bool ok = ct_data_ptr(t) == data + 2 && !ct_is_contiguous(t);
    ct_release(t);
    float expected[6] = {2, 5, 1, 4, 0, 3};
    CHECK(ok && released == 1 && total == 15 && memcmp(out, expected, sizeof out) == 0);
}

TEST(test_tensor_from_external_counts_no_pool_memory) {
    ct_memory_statistics before, after;
    CHECK_OK(ct_memory_stats(CT_CPU, &before));
    int32_t data[4] = {1, 2, 3, 4};
    ct_tensor *t = ct_from_external(data, 1, (int64_t[]){4}, NULL, CT_I32, CT_CPU, NULL, NULL);
    CHECK_NOT_NULL(t);
    CHECK_OK(ct_memory_stats(CT_CPU, &after));
    ct_release(t);
    CHECK(after.allocated == before.allocated && data[3] == 4);
}

TEST(test_tensor_from_external_bad_input_keeps_ownership) {
    float data[4] = {0};
    int released = 0;
    CHECK(!ct_from_external(data, 1, (int64_t[]){-1}, NULL, CT_F32, CT_CPU, count_release,
                            &released));
    CHECK_ERROR(CT_ERR_SHAPE, "ct_from_external");
    CHECK(!ct_from_external(data, 1, (int64_t[]){4}, NULL, (ct_dtype)99, CT_CPU, count_release,
                            &released));
    CHECK_ERROR(CT_ERR_DTYPE, "ct_from_external");
    CHECK(
        !ct_from_external(NULL, 1, (int64_t[]){4}, NULL, CT_F32, CT_CPU, count_release, &released));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "NULL");
    CHECK(!ct_from_external(data, 1, (int64_t[]){4}, NULL, CT_F32, (ct_device){CT_DEVICE_CPU, 7},
                            count_release, &released));
    CHECK(ct_last_status() == CT_ERR_DEVICE_UNAVAILABLE);
    ct_clear_error();
    CHECK(released == 0);
}

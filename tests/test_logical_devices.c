/* Logical devices: the CPU split into cpu:0 and cpu:1 with memory limits, placement on
 * them, transfers and device checks between them, and the limit's out-of-memory error.
 * Its own program, because configuring is refused while CPU tensors are alive; the first
 * test configures and the others rely on it. */
#include <stdlib.h>

#include "core/transfer_impl.h"
#include "ct_ref.h"
#include "ops/op_impl.h"

#define CPU1 ((ct_device){CT_DEVICE_CPU, 1})
#define LIMIT_1 (1u << 20) /* cpu:1's limit: 1 MiB */

static const size_t limits[2] = {0, LIMIT_1};

TEST(test_logical_devices_configure_two_cpus) {
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 2, limits));
    CHECK(ct_device_count(CT_DEVICE_CPU) == 2);
    CHECK_OK(ct_device_check(CPU1));
    ct_device parsed;
    CHECK_OK(ct_device_parse("/device:CPU:1", &parsed));
    CHECK(ct_device_equal(parsed, CPU1));
    ct_device_properties p;
    CHECK_OK(ct_device_info(CPU1, &p));
    CHECK(ct_device_equal(p.device, CPU1));
    CHECK(p.is_logical && p.physical_index == 0);
    CHECK(p.memory_limit == LIMIT_1);
    CHECK_OK(ct_device_info(CT_CPU, &p));
    CHECK(p.is_logical && p.memory_limit == 0);
    ct_memory_statistics stats;
    CHECK_OK(ct_memory_stats(CPU1, &stats));
    CHECK(stats.limit == LIMIT_1);
}

TEST(test_logical_devices_missing_device) {
    ct_device cpu2 = {CT_DEVICE_CPU, 2};
    CHECK(ct_device_check(cpu2) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "cpu:2 does not exist: there are 2 cpu devices");
    int64_t shape[1] = {4};
    CHECK(ct_zeros(1, shape, CT_F32, cpu2) == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_zeros: device cpu:2 does not exist");
    CHECK(ct_device_push(cpu2) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "(indices 0 to 1)");
}

TEST(test_logical_devices_configure_bad_arguments) {
    CHECK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 0, NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "asked for 0 logical devices; give 1 to 16");
    CHECK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, CT_MAX_LOGICAL_DEVICES + 1, NULL) ==
          CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "asked for 17");
    CHECK(ct_configure_logical_devices(CT_DEVICE_CPU, 1, 2, NULL) == CT_ERR_UNSUPPORTED);
    CHECK_ERROR(CT_ERR_UNSUPPORTED, "only physical device 0");
    CHECK(ct_configure_logical_devices((ct_device_type)5, 0, 2, NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "device type");
    CHECK(ct_device_count(CT_DEVICE_CPU) == 2); /* unchanged by the refusals */
}

TEST(test_logical_devices_reconfigure_refused_while_tensor_lives) {
    int64_t shape[1] = {8};
    ct_tensor *t = ct_zeros(1, shape, CT_F32, CT_CPU);
    CHECK_NOT_NULL(t);
    ct_status s = ct_configure_logical_devices(CT_DEVICE_CPU, 0, 3, NULL);
    ct_release(t);
    CHECK(s == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "cpu:0 holds tensors already");
    CHECK(ct_device_count(CT_DEVICE_CPU) == 2);
    ct_tensor *u = ct_zeros(1, shape, CT_F32, CPU1);
    CHECK_NOT_NULL(u);
    s = ct_configure_logical_devices(CT_DEVICE_CPU, 0, 2, limits);
    ct_release(u);
    CHECK(s == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "cpu:1 holds tensors already");
    /* Once released (cached memory does not count), configuring is allowed again. */
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 3, NULL));
    CHECK(ct_device_count(CT_DEVICE_CPU) == 3);
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 2, limits));
    CHECK(ct_device_count(CT_DEVICE_CPU) == 2);
}

TEST(test_logical_devices_tensor_on_cpu1) {
    double values[6] = {1, -2, 3.5, 4, 5, -6};
    int64_t shape[2] = {2, 3};
    ct_tensor *t = ref_tensor(values, 2, shape, CT_F32, CPU1);
    CHECK_NOT_NULL(t);
    bool on_cpu1 = ct_device_equal(ct_device_of(t), CPU1);
    ct_tensor *c = ct_clone(t); /* an op keeps its input's device */
    bool clone_on_cpu1 = c && ct_device_equal(ct_device_of(c), CPU1);
    ct_release(t);
    CHECK(on_cpu1 && clone_on_cpu1);
    CHECK_TENSOR(c, values);
    ct_release(c);
}

TEST(test_logical_devices_placement_stack_nesting) {
    int64_t shape[1] = {2};
    CHECK_OK(ct_device_push_str("cpu:1"));
    ct_tensor *a = ct_zeros(1, shape, CT_F32, CT_DEFAULT);
    CHECK_OK(ct_device_push(CT_CPU));
    ct_tensor *b = ct_zeros(1, shape, CT_F32, CT_DEFAULT);
    CHECK_OK(ct_device_pop());
    ct_tensor *c = ct_zeros(1, shape, CT_F32, CT_DEFAULT);
    ct_tensor *d = ct_zeros(1, shape, CT_F32, CT_CPU); /* an explicit device wins */
    CHECK_OK(ct_device_pop());
    bool ok = a && b && c && d && ct_device_equal(ct_device_of(a), CPU1) &&
              ct_device_equal(ct_device_of(b), CT_CPU) && ct_device_equal(ct_device_of(c), CPU1) &&
              ct_device_equal(ct_device_of(d), CT_CPU);
    ct_release(a);
    ct_release(b);
    ct_release(c);
    ct_release(d);
    CHECK(ok);
}

TEST(test_logical_devices_to_counts_device_to_device) {
    double values[5] = {1, 2, 3, 4, 5};
    int64_t shape[1] = {5};
    ct_tensor *a = ref_tensor(values, 1, shape, CT_F64, CT_CPU);
    CHECK_NOT_NULL(a);
    ct_transfer_stats_reset();
    ct_tensor *b = ct_to(a, CPU1);
    ct_tensor *back = ct_to(b, CT_CPU);
    ct_transfer_statistics s;
    ct_transfer_stats(&s);
    ct_release(a);
    CHECK_NOT_NULL(b);
    bool b_on_cpu1 = ct_device_equal(ct_device_of(b), CPU1);
    ct_release(b);
    CHECK(b_on_cpu1);
    CHECK_TENSOR(back, values);
    CHECK(ct_device_equal(ct_device_of(back), CT_CPU));
    ct_release(back);
    CHECK(s.counters[CT_TRANSFER_D2D][0].count == 2);
    CHECK(s.counters[CT_TRANSFER_D2D][0].bytes == 2 * 5 * sizeof(double));
    CHECK(s.counters[CT_TRANSFER_D2D][1].count == 0);
    CHECK(s.counters[CT_TRANSFER_H2D][0].count == 0 && s.counters[CT_TRANSFER_D2H][0].count == 0);
}

TEST(test_logical_devices_copy_across_devices) {
    double values[4] = {1, 2, 3, 4};
    int64_t shape[2] = {2, 2}, row_shape[1] = {2};
    ct_tensor *dst = ct_zeros(2, shape, CT_F32, CT_CPU);
    ct_tensor *src = ref_tensor(values, 1, row_shape, CT_I32, CPU1);
    ct_transfer_stats_reset();
    ct_status status = ct_copy(dst, src); /* broadcast, converted, moved explicitly */
    ct_transfer_statistics s;
    ct_transfer_stats(&s);
    ct_release(src);
    CHECK_OK(status);
    double expected[4] = {1, 2, 1, 2};
    CHECK_TENSOR(dst, expected);
    ct_release(dst);
    CHECK(s.counters[CT_TRANSFER_D2D][0].count == 1);
    CHECK(s.counters[CT_TRANSFER_D2D][0].bytes == 2 * sizeof(int32_t));
}

TEST(test_logical_devices_check_args_mismatch) {
    int64_t shape[1] = {3};
    ct_tensor *a = ct_zeros(1, shape, CT_F32, CT_CPU);
    ct_tensor *b = ct_zeros(1, shape, CT_F32, CPU1);
    ct_tensor *s1 = ct_scalar(2.0, CT_F32, CPU1); /* a 0-d CPU tensor joins any device */
    const ct_tensor *mixed[2] = {a, b}, *with_scalar[3] = {s1, a, a}, *with_null[2] = {a, NULL};
    ct_device device = {CT_DEVICE_DEFAULT, -1};
    bool mixed_ok = ct__check_args("ct_test_op", 2, mixed, &device);
    ct_status mixed_status = ct_last_status();
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_clear_error();
    bool scalar_ok = ct__check_args("ct_test_op", 3, with_scalar, &device);
    bool null_ok = ct__check_args("ct_test_op", 2, with_null, &device);
    ct_release(a);
    ct_release(b);
    ct_release(s1);
    CHECK(!mixed_ok && mixed_status == CT_ERR_DEVICE_MISMATCH);
    CHECK(strstr(message, "ct_test_op: argument 2 is on cpu:1, argument 1 on cpu:0") == message);
    CHECK(strstr(message, "ct_to()") != NULL);
    CHECK(scalar_ok && ct_device_equal(device, CT_CPU));
    CHECK(!null_ok);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_test_op: argument 2 is NULL");
}

TEST(test_logical_devices_memory_limit_enforced) {
    ct_memory_statistics before, after;
    CHECK_OK(ct_empty_cache(CPU1));
    CHECK_OK(ct_memory_stats(CPU1, &before));
    CHECK(before.allocated == 0);
    int64_t half[1] = {(int64_t)(LIMIT_1 / 2 / sizeof(float))};
    int64_t whole[1] = {(int64_t)(LIMIT_1 / sizeof(float))};
    int64_t quarter[1] = {(int64_t)(LIMIT_1 / 4 / sizeof(float))};
    ct_tensor *a = ct_zeros(1, half, CT_F32, CPU1);
    CHECK_NOT_NULL(a);
    ct_tensor *too_big = ct_zeros(1, whole, CT_F32, CPU1);
    ct_status status = ct_last_status();
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_clear_error();
    ct_tensor *small = ct_ones(1, quarter, CT_F32, CPU1); /* the program carries on */
    CHECK_OK(ct_memory_stats(CPU1, &after));
    ct_release(a);
    ct_release(small);
    CHECK(too_big == NULL && status == CT_ERR_OUT_OF_MEMORY);
    CHECK(strstr(message, "cpu:1") != NULL);
    CHECK(strstr(message, "asked for 1048576 bytes") != NULL);
    CHECK(strstr(message, "0.50 MiB allocated") != NULL);
    CHECK(strstr(message, "MiB reserved") != NULL);
    CHECK(strstr(message, "limit 1.00 MiB") != NULL);
    CHECK(small != NULL);
    CHECK(after.oom_count == before.oom_count + 1);
    CHECK(after.allocated == LIMIT_1 / 2 + LIMIT_1 / 4);
    CHECK(after.reserved <= LIMIT_1);
}

TEST(test_logical_devices_set_limit_overrides_configured) {
    int64_t whole[1] = {(int64_t)(LIMIT_1 / sizeof(float))};
    CHECK_OK(ct_set_memory_limit(CPU1, 2 * LIMIT_1));
    ct_tensor *t = ct_zeros(1, whole, CT_F32, CPU1);
    ct_status restored = ct_set_memory_limit(CPU1, LIMIT_1 + LIMIT_1 / 2);
    ct_release(t);
    CHECK_OK(ct_set_memory_limit(CPU1, LIMIT_1));
    CHECK_NOT_NULL(t);
    CHECK_OK(restored);
}

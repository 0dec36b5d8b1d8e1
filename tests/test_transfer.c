/* Transfer accounting and the transfer guard, on the CPU split into cpu:0 and cpu:1 (copies
 * between them are device-to-device transfers; copies between user memory and a CPU device
 * are not transfers at all). Its own program: the first test configures the devices. */
#include <pthread.h>
#include <stdlib.h>

#include "ct_ref.h"
#include "ops/op_impl.h"

#define CPU1 ((ct_device){CT_DEVICE_CPU, 1})

static uint64_t total_count(const ct_transfer_statistics *s) {
    uint64_t n = 0;
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 2; k++) n += s->counters[d][k].count;
    return n;
}

static ct_transfer_statistics stats_now(void) {
    ct_transfer_statistics s;
    memset(&s, 0xff, sizeof s);
    ct_transfer_stats(&s);
    return s;
}

TEST(test_transfer_configure_devices) {
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 2, NULL));
    CHECK(ct_device_count(CT_DEVICE_CPU) == 2);
}

TEST(test_transfer_stats_reset) {
    int64_t shape[1] = {3};
    ct_tensor *a = ct_zeros(1, shape, CT_F32, CT_CPU);
    ct_tensor *b = ct_to(a, CPU1);
    ct_release(a);
    ct_release(b);
    ct_transfer_statistics s = stats_now();
    CHECK(total_count(&s) > 0);
    ct_transfer_stats_reset();
    s = stats_now();
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 2; k++)
            CHECK(s.counters[d][k].count == 0 && s.counters[d][k].bytes == 0);
    CHECK(s.refused == 0);
    ct_transfer_stats(NULL); /* ignored */
}

TEST(test_transfer_host_copies_on_cpu_are_not_transfers) {
    float data[6] = {1, 2, 3, 4, 5, 6}, back[6];
    int64_t shape[2] = {2, 3};
    ct_transfer_stats_reset();
    ct_tensor *a = ct_from_data(data, 2, shape, CT_F32, CT_CPU);
    ct_tensor *b = ct_from_data(data, 2, shape, CT_F32, CPU1);
    ct_status copied_a = a ? ct_copy_to_host(a, back, sizeof back) : CT_ERR_STATE;
    ct_status copied_b = b ? ct_copy_to_host(b, back, sizeof back) : CT_ERR_STATE;
    ct_transfer_statistics s = stats_now();
    ct_release(a);
    ct_release(b);
    CHECK_OK(copied_a);
    CHECK_OK(copied_b);
    CHECK(memcmp(back, data, sizeof data) == 0);
    CHECK(total_count(&s) == 0);
}

TEST(test_transfer_item_on_logical_cpu_is_not_a_transfer) {
    ct_tensor *x = ct_scalar(2.5, CT_F32, CPU1);
    CHECK_NOT_NULL(x);
    ct_transfer_stats_reset();
    ct_transfer_guard previous = ct_set_transfer_guard(CT_GUARD_DISALLOW_IMPLICIT);
    double value = 0;
    ct_status s = ct_item(x, &value); /* CPU memory is host memory: nothing moves */
    ct_set_transfer_guard(previous);
    ct_transfer_statistics stats = stats_now();
    ct_release(x);
    CHECK_OK(s);
    CHECK(value == 2.5);
    CHECK(total_count(&stats) == 0 && stats.refused == 0);
}

TEST(test_transfer_explicit_between_logical_cpus) {
    double values[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    ct_tensor *a = ref_tensor(values, 1, shape, CT_I64, CT_CPU);
    CHECK_NOT_NULL(a);
    ct_transfer_stats_reset();
    ct_tensor *b = ct_to(a, CPU1);
    ct_tensor *same = b ? ct_to(b, CPU1) : NULL; /* already there: not a transfer */
    ct_transfer_statistics s = stats_now();
    ct_release(a);
    bool same_is_b = same == b;
    ct_release(same);
    CHECK(same_is_b);
    CHECK_TENSOR(b, values);
    ct_release(b);
    CHECK(s.counters[CT_TRANSFER_D2D][0].count == 1);
    CHECK(s.counters[CT_TRANSFER_D2D][0].bytes == 4 * sizeof(int64_t));
    CHECK(total_count(&s) == 1);
}

TEST(test_transfer_implicit_scalar_operand) {
    ct_tensor *s1 = ct_scalar(3.0, CT_F64, CPU1);
    CHECK_NOT_NULL(s1);
    ct_transfer_stats_reset();
    ct_tensor *here = ct__operand_on(s1, CT_CPU, "ct_test_op");
    ct_tensor *there = ct__operand_on(s1, CPU1, "ct_test_op"); /* already there */
    ct_transfer_statistics s = stats_now();
    double value = 0;
    ct_status read = here ? ct_item(here, &value) : CT_ERR_STATE;
    bool here_on_cpu0 = here && ct_device_equal(ct_device_of(here), CT_CPU);
    bool there_is_s1 = there == s1;
    ct_release(here);
    ct_release(there);
    ct_release(s1);
    CHECK(here_on_cpu0 && there_is_s1);
    CHECK_OK(read);
    CHECK(value == 3.0);
    CHECK(s.counters[CT_TRANSFER_D2D][1].count == 1);
    CHECK(s.counters[CT_TRANSFER_D2D][1].bytes == sizeof(double));
    CHECK(total_count(&s) == 1);
}

TEST(test_transfer_guard_disallow_implicit) {
    ct_tensor *s1 = ct_scalar(1.0, CT_F32, CPU1);
    CHECK_NOT_NULL(s1);
    ct_transfer_stats_reset();
    ct_transfer_guard previous = ct_set_transfer_guard(CT_GUARD_DISALLOW_IMPLICIT);
    ct_transfer_guard now = ct_get_transfer_guard();
    ct_tensor *refused = ct__operand_on(s1, CT_CPU, "ct_test_op");
    ct_status status = ct_last_status();
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_clear_error();
    ct_tensor *explicit_copy = ct_to(s1, CT_CPU); /* explicit transfers still pass */
    ct_set_transfer_guard(previous);
    ct_transfer_statistics s = stats_now();
    ct_release(s1);
    bool explicit_ok = explicit_copy && ct_device_equal(ct_device_of(explicit_copy), CT_CPU);
    ct_release(explicit_copy);
    CHECK(previous == CT_GUARD_ALLOW && now == CT_GUARD_DISALLOW_IMPLICIT);
    CHECK(refused == NULL && status == CT_ERR_TRANSFER_GUARD);
    CHECK(strstr(message, "ct_test_op: implicit device-to-device transfer of 4 bytes") == message);
    CHECK(strstr(message, "ct_to()") != NULL); /* what to do */
    CHECK(strstr(message, "ct_set_transfer_guard") != NULL);
    CHECK(explicit_ok);
    CHECK(s.refused == 1);
    CHECK(s.counters[CT_TRANSFER_D2D][1].count == 0); /* the refused copy is not counted */
    CHECK(s.counters[CT_TRANSFER_D2D][0].count == 1);
}

TEST(test_transfer_guard_log) {
    ct_tensor *s1 = ct_scalar(1.0, CT_I32, CPU1);
    CHECK_NOT_NULL(s1);
    ct_test_warnings record = {0, ""};
    ct_set_log_hook(ct_test_record_warning, &record);
    ct_transfer_stats_reset();
    ct_transfer_guard previous = ct_set_transfer_guard(CT_GUARD_LOG);
    ct_tensor *moved = ct__operand_on(s1, CT_CPU, "ct_test_op");
    ct_tensor *explicit_copy = ct_to(s1, CT_CPU); /* explicit: not logged */
    ct_set_transfer_guard(previous);
    ct_set_log_hook(NULL, NULL);
    ct_transfer_statistics s = stats_now();
    ct_release(s1);
    bool ok = moved && explicit_copy;
    ct_release(moved);
    ct_release(explicit_copy);
    CHECK(ok);
    CHECK(record.count == 1);
    CHECK(strstr(record.last, "ct_test_op") != NULL);
    CHECK(strstr(record.last, "implicit device-to-device transfer of 4 bytes") != NULL);
    CHECK(s.counters[CT_TRANSFER_D2D][1].count == 1);
    CHECK(s.counters[CT_TRANSFER_D2D][0].count == 1);
}

static void *read_guard(void *arg) {
    *(ct_transfer_guard *)arg = ct_get_transfer_guard();
    return NULL;
}

TEST(test_transfer_guard_is_per_thread) {
    ct_transfer_guard previous = ct_set_transfer_guard(CT_GUARD_DISALLOW_IMPLICIT);
    ct_transfer_guard seen = CT_GUARD_LOG;
    pthread_t thread;
    int created = pthread_create(&thread, NULL, read_guard, &seen);
    if (created == 0) pthread_join(thread, NULL);
    ct_set_transfer_guard(previous);
    CHECK(created == 0);
    CHECK(seen == CT_GUARD_ALLOW);
    CHECK(ct_get_transfer_guard() == previous);
}

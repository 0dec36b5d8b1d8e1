/* The reads that a device's kernels make back to the host: the verdict of their check of
 * the operands (cross-entropy targets, gather and index_add indices, integer pow and
 * remainder) or the value the call returns (the gradients' norm). On a device other than the
 * CPU each is one implicit device-to-host transfer, counted, logged and refused by the
 * transfer guard like any other, and refused before the kernel runs, so that nothing
 * changes. On the CPU they are no transfer at all. */
#include "ct_ref.h"

/* Implicit device-to-host transfers since the last reset. */
static ct_transfer_counter implicit_reads(void) {
    ct_transfer_statistics s;
    ct_transfer_stats(&s);
    return s.counters[CT_TRANSFER_D2H][1];
}

static ct_tensor *int64_tensor(const int64_t *values, int64_t n, ct_device device) {
    return ct_from_data(values, 1, &n, CT_I64, device);
}

/* One read of `bytes` on a device, none on the CPU. */
static bool one_read_off_the_cpu(ct_device device, ct_transfer_counter reads, uint64_t bytes) {
    if (device.type == CT_DEVICE_CPU) return reads.count == 0 && reads.bytes == 0;
    return reads.count == 1 && reads.bytes == bytes;
}

DEVICE_TEST(test_readback_counted_per_checking_op) {
    ct_scope_begin();
    const double logit_values[6] = {0.5, -1, 2, 0, 1, 3};
    ct_tensor *logits = ref_tensor(logit_values, 2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *target = int64_tensor((int64_t[]){2, 0}, 2, device);
    ct_tensor *index = int64_tensor((int64_t[]){1, 0, 1}, 3, device);
    ct_tensor *src = ref_tensor((double[]){1, 2, 3, 4, 5, 6}, 2, (int64_t[]){2, 3}, CT_F32, device);
    const double int_values[3] = {2, 7, 5};
    ct_tensor *ints = ref_tensor(int_values, 1, (int64_t[]){3}, CT_I32, device);
    CHECK(logits && target && index && src && ints);

    ct_transfer_stats_reset();
    CHECK_NOT_NULL(ct_cross_entropy(logits, target, NULL));
    CHECK(one_read_off_the_cpu(device, implicit_reads(), 16));

    ct_transfer_stats_reset();
    CHECK_NOT_NULL(ct_index_select(logits, 1, index));
    CHECK(one_read_off_the_cpu(device, implicit_reads(), 8));

    ct_transfer_stats_reset();
    CHECK_NOT_NULL(ct_index_add(logits, 1, index, src));
    CHECK(one_read_off_the_cpu(device, implicit_reads(), 16));

    ct_transfer_stats_reset();
    CHECK_NOT_NULL(ct_pow(ints, ints));
    CHECK(one_read_off_the_cpu(device, implicit_reads(), 4));
    ct_transfer_stats_reset();
    CHECK_NOT_NULL(ct_remainder_scalar(ints, 3));
    CHECK(one_read_off_the_cpu(device, implicit_reads(), 4));
    ct_transfer_stats_reset();
    CHECK_NOT_NULL(ct_pow(logits, logits)); /* floats need no check */
    CHECK(implicit_reads().count == 0);
    ct_scope_end();
}

DEVICE_TEST(test_readback_counted_for_the_gradient_norm) {
    ct_scope_begin();
    ct_tensor *p = ref_tensor((double[]){3, 4}, 1, (int64_t[]){2}, CT_F32, device);
    CHECK_NOT_NULL(p);
    CHECK_OK(ct_set_requires_grad(p, true));
    CHECK_OK(ct_backward(ct_sum(ct_mul_scalar(p, 0.5), 0, NULL, false)));
    ct_transfer_stats_reset();
    double norm = 0;
    CHECK_OK(ct_clip_grad_norm(1, &p, 10.0, 2.0, &norm));
    CHECK(fabs(norm - sqrt(0.5)) < 1e-6);
    CHECK(one_read_off_the_cpu(device, implicit_reads(), 8));
    ct_scope_end();
}

/* Under CT_GUARD_DISALLOW_IMPLICIT a device's check is refused by name before its kernel
 * runs; the CPU's passes. Explicit copies for the test's own reads are not refused. */
DEVICE_TEST(test_readback_refused_by_the_guard) {
    ct_scope_begin();
    ct_tensor *logits =
        ref_tensor((double[]){0.5, -1, 2, 0, 1, 3}, 2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *target = int64_tensor((int64_t[]){2, 0}, 2, device);
    ct_tensor *p = ref_tensor((double[]){3, 4}, 1, (int64_t[]){2}, CT_F32, device);
    CHECK(logits && target && p);
    CHECK_OK(ct_set_requires_grad(p, true));
    CHECK_OK(ct_backward(ct_sum(ct_mul_scalar(p, 2.0), 0, NULL, false)));
    ct_transfer_stats_reset();
    ct_transfer_guard previous = ct_set_transfer_guard(CT_GUARD_DISALLOW_IMPLICIT);
    ct_tensor *loss = ct_cross_entropy(logits, target, NULL);
    ct_status loss_status = ct_last_status();
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_clear_error();
    ct_status clip_status = ct_clip_grad_norm(1, &p, 1.0, 2.0, NULL); /* would scale by 1/5 */
    ct_set_transfer_guard(previous);
    ct_clear_error();
    ct_transfer_statistics s;
    ct_transfer_stats(&s);
    float grad[2] = {0, 0};
    CHECK_OK(ct_copy_to_host(ct_grad(p), grad, sizeof grad));
    if (device.type == CT_DEVICE_CPU) {
        CHECK(loss && clip_status == CT_OK);
        CHECK(s.refused == 0);
        CHECK(fabsf(grad[0] - 2.0f / sqrtf(8.0f)) < 1e-5f);
    } else {
        char expected[160];
        char where[32];
        snprintf(expected, sizeof expected,
                 "ct_cross_entropy (its check of the targets) on %s reads 16 bytes back",
                 ct_device_str(device, where, sizeof where));
        CHECK(loss == NULL && loss_status == CT_ERR_TRANSFER_GUARD);
        CHECK(strstr(message, expected) == message);
        CHECK(strstr(message, "ct_set_transfer_guard") != NULL);
        CHECK(clip_status == CT_ERR_TRANSFER_GUARD);
        CHECK(grad[0] == 2.0f && grad[1] == 2.0f); /* not clipped: nothing changed */
        CHECK(s.refused == 2);
        CHECK(s.counters[CT_TRANSFER_D2H][1].count == 0);
    }
    ct_scope_end();
}

DEVICE_TEST(test_readback_logged_by_the_guard) {
    ct_scope_begin();
    ct_tensor *x = ref_tensor((double[]){1, 2, 3}, 1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *index = int64_tensor((int64_t[]){2, 2}, 2, device);
    CHECK(x && index);
    ct_test_warnings record = {0, ""};
    ct_set_log_hook(ct_test_record_warning, &record);
    ct_transfer_guard previous = ct_set_transfer_guard(CT_GUARD_LOG);
    ct_tensor *picked = ct_index_select(x, 0, index);
    ct_set_transfer_guard(previous);
    ct_set_log_hook(NULL, NULL);
    CHECK_NOT_NULL(picked);
    if (device.type == CT_DEVICE_CPU) {
        CHECK(record.count == 0);
    } else {
        CHECK(record.count == 1);
        CHECK(strstr(record.last, "ct_index_select on ") == record.last);
        CHECK(strstr(record.last, "implicit device-to-host transfer of 8 bytes") != NULL);
    }
    ct_scope_end();
}

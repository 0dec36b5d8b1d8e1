/* Elementwise ops across devices, on two logical CPU devices (cpu:0 and cpu:1): operands on
 * different devices are refused with a message naming both, and 0-d CPU tensors join an op
 * on another device as scalars. The split must happen before the CPU holds memory, so this
 * is its own test program and every test makes sure of the split first. */
#include <stdlib.h>

#include "ct_ref.h"

static const ct_device cpu1 = {CT_DEVICE_CPU, 1};

/* Split the CPU into two logical devices (once, before any CPU memory is used). */
static ct_status two_cpus(void) {
    if (ct_device_count(CT_DEVICE_CPU) >= 2) return CT_OK;
    return ct_configure_logical_devices(CT_DEVICE_CPU, 0, 2, NULL);
}

TEST(test_ops_devices_mismatch_is_refused) {
    CHECK_OK(two_cpus());
    ct_tensor *a = ct_ones(1, (const int64_t[]){3}, CT_F32, CT_CPU);
    ct_tensor *b = ct_ones(1, (const int64_t[]){3}, CT_F32, cpu1);
    CHECK(a && b);
    CHECK(ct_add(a, b) == NULL);
    CHECK(strstr(ct_last_error(), "cpu:1") != NULL);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "ct_add: argument 2 is on cpu:1");
    CHECK(ct_lt(b, a) == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "ct_to()");
    ct_tensor *c = ct_ones(1, (const int64_t[]){3}, CT_BOOL, CT_CPU);
    CHECK(ct_where(c, a, b) == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "ct_where");
    ct_release(a);
    ct_release(b);
    ct_release(c);
}

/* A 0-d tensor on cpu:0 is a scalar: it joins an op on cpu:1, and the result is there. */
TEST(test_ops_devices_cpu_scalar_joins_other_device) {
    CHECK_OK(two_cpus());
    static const double v[4] = {1, -2, 3, -4};
    ct_tensor *x = ref_tensor(v, 1, (const int64_t[]){4}, CT_F32, cpu1);
    ct_tensor *s = ct_scalar(10.0, CT_F64, CT_CPU);
    CHECK(x && s);
    ct_tensor *y = ct_mul(s, x);
    CHECK_NOT_NULL(y);
    CHECK(ct_device_equal(ct_device_of(y), cpu1));
    CHECK(ct_dtype_of(y) == CT_F64);
    static const double product[4] = {10, -20, 30, -40};
    CHECK_TENSOR(y, product);
    ct_tensor *zero = ct_scalar(0.0, CT_F32, CT_CPU);
    ct_tensor *mask = ct_gt(x, zero);
    ct_tensor *w = ct_where(mask, x, s);
    CHECK_NOT_NULL(w);
    CHECK(ct_device_equal(ct_device_of(w), cpu1));
    static const double picked[4] = {1, 10, 3, 10};
    CHECK_TENSOR(w, picked);
    ct_tensor *z = ct_add_scalar(x, 0.5);
    CHECK(z && ct_device_equal(ct_device_of(z), cpu1));
    static const double shifted[4] = {1.5, -1.5, 3.5, -3.5};
    CHECK_TENSOR(z, shifted);
    ct_release(x);
    ct_release(s);
    ct_release(y);
    ct_release(zero);
    ct_release(mask);
    ct_release(w);
    ct_release(z);
}

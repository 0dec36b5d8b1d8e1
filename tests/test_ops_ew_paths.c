/* Elementwise kernel paths that a device backend specialises, checked on every device against
 * references computed here: contiguous float32 views at every 16-byte alignment and lengths
 * around multiples of four (vectorised loads with a scalar tail), broadcast scalars on either
 * side of the fast path, fills of every dtype into contiguous and strided destinations
 * (byte-pattern and element-pattern fills), same-dtype strided copies of every element size,
 * arange values rounded as start + i * step (no fused multiply-add), and integer errors
 * raised by one element deep inside a large tensor, after which the next op succeeds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_ref.h"

/* Run a helper that may fail a check, and leave the test when it did. */
#define RUN(call)                                                                                  \
    do {                                                                                           \
        call;                                                                                      \
        if (ct_test_failed()) return;                                                              \
    } while (0)

/* exp(x), x + y, 1.5 * x and 0.25 - x for x, y float32 views of n elements starting at
 * element offsets ox and oy of their buffers. */
static void check_f32_views(ct_device device, int64_t ox, int64_t oy, int64_t n) {
    int64_t total = n + 4;
    double *vx = malloc(sizeof(double) * (size_t)total);
    double *vy = malloc(sizeof(double) * (size_t)total);
    double *want = malloc(sizeof(double) * (size_t)n);
    CHECK(vx && vy && want);
    ref_random(vx, total, (uint64_t)(n * 16 + ox * 4 + oy), -3.0, 3.0);
    ref_random(vy, total, (uint64_t)(n * 16 + ox * 4 + oy + 7), -3.0, 3.0);
    for (int64_t i = 0; i < total; i++) vx[i] = ref_round(vx[i], CT_F32);
    for (int64_t i = 0; i < total; i++) vy[i] = ref_round(vy[i], CT_F32);
    ct_tensor *bx = ref_tensor(vx, 1, &total, CT_F32, device);
    ct_tensor *by = ref_tensor(vy, 1, &total, CT_F32, device);
    ct_tensor *x = ct_slice(bx, 0, ox, ox + n, 1);
    ct_tensor *y = ct_slice(by, 0, oy, oy + n, 1);
    ct_tensor *quarter = ct_full(0, NULL, 0.25, CT_F32, device);
    ct_tensor *e = ct_exp(x), *s = ct_add(x, y), *m = ct_mul_scalar(x, 1.5);
    ct_tensor *d = ct_sub(quarter, x);
    CHECK_NOT_NULL(d);
    for (int64_t i = 0; i < n; i++) want[i] = exp(vx[ox + i]);
    CHECK_TENSOR(e, want);
    for (int64_t i = 0; i < n; i++) want[i] = vx[ox + i] + vy[oy + i];
    CHECK_TENSOR(s, want);
    for (int64_t i = 0; i < n; i++) want[i] = 1.5 * vx[ox + i];
    CHECK_TENSOR(m, want);
    for (int64_t i = 0; i < n; i++) want[i] = 0.25 - vx[ox + i];
    CHECK_TENSOR(d, want);
    ct_tensor *all[9] = {bx, by, x, y, quarter, e, s, m, d};
    for (int i = 0; i < 9; i++) ct_release(all[i]);
    free(vx);
    free(vy);
    free(want);
}

DEVICE_TEST(test_ops_ew_paths_f32_views_at_every_alignment) {
    static const int64_t lengths[] = {1, 3, 4, 5, 8, 1027, 4099};
    for (int64_t ox = 0; ox < 4; ox++)
        for (int l = 0; l < 7; l++) RUN(check_f32_views(device, ox, (ox + 1) % 4, lengths[l]));
}

/* The value a fill of v stores into dtype, as ct_cast converts (v here is a float value
 * every dtype holds after truncation). */
static double stored(double v, ct_dtype dtype) {
    if (dtype == CT_BOOL) return v != 0;
    if (ct_dtype_is_integer(dtype)) return trunc(v);
    return ref_round(v, dtype);
}

/* ct_full of shape (5, 7) and ct_fill of its transposed view and of a stride-2 slice. */
static void check_fill(ct_device device, ct_dtype dtype, double value) {
    static const int64_t shape[2] = {5, 7};
    double want[35], filled = stored(value, dtype);
    ct_tensor *t = ct_full(2, shape, value, dtype, device);
    for (int i = 0; i < 35; i++) want[i] = filled;
    CHECK_TENSOR(t, want);
    ct_tensor *zeros = ct_full(2, shape, 0.0, dtype, device);
    ct_tensor *view = ct_transpose(zeros, 0, 1);
    CHECK_NOT_NULL(view);
    CHECK_OK(ct_fill(view, value));
    CHECK_TENSOR(zeros, want);
    ct_tensor *cols = ct_slice(zeros, 1, 0, 7, 2);
    CHECK_NOT_NULL(cols);
    CHECK_OK(ct_fill(cols, 0.0));
    for (int i = 0; i < 35; i++) want[i] = (i % 7) % 2 == 0 ? 0.0 : filled;
    CHECK_TENSOR(zeros, want);
    ct_release(t);
    ct_release(zeros);
    ct_release(view);
    ct_release(cols);
}

DEVICE_TEST(test_ops_ew_paths_fill_every_dtype_and_layout) {
    static const double values[] = {0.0, 1.0, 2.5, 100.75};
    for (int d = 0; d < CT_TEST_DTYPE_COUNT; d++) {
        ct_dtype dtype = ct_test_dtypes[d];
        for (int v = 0; v < 4; v++) RUN(check_fill(device, dtype, values[v]));
        /* Negative values for the signed and floating dtypes. */
        if (!ct_dtype_is_unsigned(dtype) && dtype != CT_BOOL) RUN(check_fill(device, dtype, -7.25));
    }
}

DEVICE_TEST(test_ops_ew_paths_strided_copies_every_element_size) {
    static const int64_t shape[2] = {6, 5};
    double base[30], values[30], want[30];
    ref_random(base, 30, 31, 0.0, 100.0);
    for (int d = 0; d < CT_TEST_DTYPE_COUNT; d++) {
        ct_dtype dtype = ct_test_dtypes[d];
        for (int i = 0; i < 30; i++) values[i] = stored(floor(base[i]) + 0.5, dtype);
        ct_tensor *x = ref_tensor(values, 2, shape, dtype, device);
        ct_tensor *xt = ct_transpose(x, 0, 1);
        ct_tensor *c = ct_contiguous(xt);
        CHECK_NOT_NULL(c);
        CHECK(ct_is_contiguous(c));
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 6; j++) want[i * 6 + j] = values[j * 5 + i];
        CHECK_TENSOR(c, want);
        ct_release(x);
        ct_release(xt);
        ct_release(c);
    }
}

DEVICE_TEST(test_ops_ew_paths_arange_rounds_multiply_and_add_separately) {
    ct_tensor *t = ct_arange(0.1, 300.1, 0.3, CT_F64, device);
    CHECK_NOT_NULL(t);
    int64_t n = ct_numel(t);
    CHECK(n == (int64_t)ceil((300.1 - 0.1) / 0.3));
    double *v = ref_read(t);
    CHECK_NOT_NULL(v);
    for (int64_t i = 0; i < n; i++) {
        volatile double product = (double)i * 0.3; /* rounded on its own */
        if (v[i] != 0.1 + product) {
            ct_test_fail(__FILE__, __LINE__, "element %lld = %.17g, expected %.17g", (long long)i,
                         v[i], 0.1 + product);
            break;
        }
    }
    free(v);
    ct_release(t);
}

/* a op b over n elements where b holds bad (0 or negative) at one element only; the op must
 * fail with message, and succeed once the element is fixed. */
static void check_integer_error(ct_device device, ct_dtype dtype, bool remainder,
                                const char *message) {
    int64_t n = 100003, at = 99991;
    double *va = malloc(sizeof(double) * (size_t)n), *vb = malloc(sizeof(double) * (size_t)n);
    double *want = malloc(sizeof(double) * (size_t)n);
    CHECK(va && vb && want);
    for (int64_t i = 0; i < n; i++) {
        va[i] = (double)(i % 13) - 6;
        vb[i] = (double)(i % 3) + 1;
    }
    vb[at] = remainder ? 0 : -2;
    ct_tensor *a = ref_tensor(va, 1, &n, dtype, device);
    ct_tensor *b = ref_tensor(vb, 1, &n, dtype, device);
    CHECK(remainder ? ct_remainder(a, b) == NULL : ct_pow(a, b) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, message);
    ct_release(b);
    vb[at] = 2;
    b = ref_tensor(vb, 1, &n, dtype, device);
    ct_tensor *r = remainder ? ct_remainder(a, b) : ct_pow(a, b);
    for (int64_t i = 0; i < n; i++) {
        double q = remainder ? fmod(va[i], vb[i]) : pow(va[i], vb[i]);
        want[i] = remainder && q != 0 && (q < 0) != (vb[i] < 0) ? q + vb[i] : q;
    }
    CHECK_TENSOR(r, want);
    ct_release(a);
    ct_release(b);
    ct_release(r);
    free(va);
    free(vb);
    free(want);
}

DEVICE_TEST(test_ops_ew_paths_integer_error_deep_inside_a_large_tensor) {
    RUN(check_integer_error(device, CT_I32, true, "ct_remainder: integer remainder by zero"));
    RUN(check_integer_error(device, CT_I64, true, "ct_remainder: integer remainder by zero"));
    RUN(check_integer_error(device, CT_I32, false,
                            "ct_pow: integers to negative integer powers are not allowed"));
    RUN(check_integer_error(device, CT_I64, false,
                            "ct_pow: integers to negative integer powers are not allowed"));
}

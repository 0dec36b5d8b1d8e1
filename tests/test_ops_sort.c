/* Sorting and scanning ops (ct_argsort, ct_sort, ct_cumulative_sum) against references
 * computed here in doubles: every dtype, ranks 0..3, every axis (as given and negative),
 * non-contiguous inputs, ties (stability, ascending and descending), NaN and -0.0, empty
 * axes, include_initial and the result dtypes, gradients by finite differences, and the
 * errors. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

/* n values of dtype with many ties (a small range), and for floats NaN and -0.0 among them. */
static void tie_values(double *v, int64_t n, ct_dtype dtype, uint64_t seed) {
    ref_random(v, n, seed, -4.0, 4.0);
    for (int64_t i = 0; i < n; i++) {
        v[i] = floor(v[i]);
        if (dtype == CT_BOOL) v[i] = v[i] > 0;
        if (ct_dtype_is_unsigned(dtype)) v[i] = fabs(v[i]);
        if (ct_dtype_is_floating(dtype) && i % 7 == 3) v[i] = NAN;
        if (ct_dtype_is_floating(dtype) && i % 5 == 1) v[i] = -0.0;
    }
}

/* Whether key a goes strictly before key b (NaN largest; -0.0 equals 0.0). */
static bool before(double a, double b, bool descending) {
    if (descending) return a > b || (isnan(a) && !isnan(b));
    return a < b || (isnan(b) && !isnan(a));
}

/* The stable order of row values v[0], v[s], ..., v[(n-1)s], by insertion. */
static void reference_order(const double *v, int64_t n, int64_t s, bool descending,
                            int64_t *order) {
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i;
        while (j > 0 && before(v[i * s], v[order[j - 1] * s], descending)) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
}

/* For every position of x (shape), the expected argsort index and sorted value on axis. */
static void reference_sort(const double *x, int ndim, const int64_t *shape, int axis,
                           bool descending, double *index, double *sorted) {
    static int64_t order[1024];
    int64_t total = ref_numel(ndim, shape), n = shape[axis], at[8];
    int64_t stride = 1;
    for (int d = axis + 1; d < ndim; d++) stride *= shape[d];
    for (int64_t i = 0; i < total; i++) {
        ref_unravel(i, ndim, shape, at);
        if (at[axis] != 0) continue;
        reference_order(x + i, n, stride, descending, order);
        for (int64_t k = 0; k < n; k++) {
            index[i + k * stride] = (double)order[k];
            sorted[i + k * stride] = x[i + order[k] * stride];
        }
    }
}

static void check_sort_case(ct_device device, int ndim, const int64_t *shape, ct_dtype dtype,
                            uint64_t seed) {
    double x_values[256], index[256], sorted[256];
    tie_values(x_values, ref_numel(ndim, shape), dtype, seed);
    for (int i = 0; i < ref_numel(ndim, shape); i++) x_values[i] = ref_round(x_values[i], dtype);
    for (int axis = 0; axis < ndim; axis++) {
        for (int desc = 0; desc < 2; desc++) {
            bool odd = (axis + desc + (int)seed) % 2;
            ct_tensor *x =
                (odd ? ref_tensor_strided : ref_tensor)(x_values, ndim, shape, dtype, device);
            reference_sort(x_values, ndim, shape, axis, desc, index, sorted);
            ct_tensor *order = ct_argsort(x, axis - (odd ? ndim : 0), desc);
            ct_tensor *values = ct_sort(x, axis, desc);
            CHECK_TENSOR(order, index);
            CHECK_TENSOR(values, sorted);
            CHECK(ct_dtype_of(order) == CT_I64 && ct_dtype_of(values) == dtype);
            ct_release(order);
            ct_release(values);
            ct_release(x);
        }
    }
}

DEVICE_TEST(test_sort_every_dtype_axis_and_direction) {
    static const int64_t shapes[][3] = {{17, 0, 0}, {4, 9, 0}, {3, 5, 6}, {1, 33, 2}};
    static const int ranks[] = {1, 2, 3, 3};
    for (int s = 0; s < 4; s++)
        for (int t = 0; t < CT_TEST_DTYPE_COUNT; t++) {
            check_sort_case(device, ranks[s], shapes[s], ct_test_dtypes[t], (uint64_t)(s * 10 + t));
            if (ct_test_failed()) return;
        }
}

DEVICE_TEST(test_sort_empty_and_0d) {
    ct_tensor *e = ct_zeros(2, (int64_t[]){3, 0}, CT_F32, device);
    ct_tensor *order = ct_argsort(e, 1, false), *values = ct_sort(e, 0, true);
    CHECK(order && ct_numel(order) == 0 && ct_ndim(order) == 2 && ct_shape(order)[0] == 3);
    CHECK(values && ct_numel(values) == 0);
    ct_tensor *s = ct_full(0, NULL, 2.5, CT_F32, device);
    ct_tensor *o0 = ct_argsort(s, 0, false), *s0 = ct_sort(s, -1, false);
    double first = -1, only = 0;
    CHECK(o0 && ct_ndim(o0) == 0 && ct_item(o0, &first) == CT_OK && first == 0.0);
    CHECK(s0 && ct_item(s0, &only) == CT_OK && only == 2.5);
    ct_release(e);
    ct_release(order);
    ct_release(values);
    ct_release(s);
    ct_release(o0);
    ct_release(s0);
}

DEVICE_TEST(test_sort_long_rows_and_many_rows) {
    /* Rows long enough for several merge passes, and enough of them to split over threads. */
    enum { ROWS = 64, N = 1000 };
    double *v = malloc(sizeof(double) * ROWS * N), *idx = malloc(sizeof(double) * ROWS * N);
    double *sorted = malloc(sizeof(double) * ROWS * N);
    CHECK(v && idx && sorted);
    ref_random(v, ROWS * N, 7, -1000.0, 1000.0);
    for (int i = 0; i < ROWS * N; i++) v[i] = ref_round(floor(v[i]), CT_F32);
    ct_tensor *x = ref_tensor(v, 2, (int64_t[]){ROWS, N}, CT_F32, device);
    reference_sort(v, 2, (int64_t[]){ROWS, N}, 1, true, idx, sorted);
    ct_tensor *order = ct_argsort(x, -1, true);
    CHECK_TENSOR(order, idx);
    ct_release(order);
    ct_release(x);
    free(v);
    free(idx);
    free(sorted);
}

DEVICE_TEST(test_cumulative_sum_every_dtype_axis_and_initial) {
    double x_values[60];
    for (int t = 0; t < CT_TEST_DTYPE_COUNT; t++) {
        ct_dtype dtype = ct_test_dtypes[t];
        tie_values(x_values, 60, dtype, (uint64_t)t);
        for (int i = 0; i < 60; i++) {
            if (isnan(x_values[i])) x_values[i] = 1.0;
            x_values[i] = ref_round(x_values[i], dtype);
        }
        ref_check_scan(ct_cumulative_sum, false, x_values, dtype, t, device);
        if (ct_test_failed()) return;
    }
}

DEVICE_TEST(test_cumulative_sum_long_rows_wrap_and_empty) {
    /* A row longer than a CUDA tile, summed exactly in int64. */
    enum { N = 1000 };
    double v[N], expected[N];
    for (int i = 0; i < N; i++) v[i] = (double)(i % 13) - 6.0;
    ct_tensor *x = ref_tensor(v, 1, (int64_t[]){N}, CT_I32, device);
    ref_scan(v, 1, (int64_t[]){N}, 0, false, false, CT_I64, expected);
    ct_tensor *y = ct_cumulative_sum(x, 0, CT_CUMSUM_DEFAULT_DTYPE, false);
    CHECK_TENSOR(y, expected);
    ct_release(y);
    ct_release(x);
    ct_tensor *e = ct_zeros(2, (int64_t[]){0, 3}, CT_F32, device);
    ct_tensor *z = ct_cumulative_sum(e, 0, CT_CUMSUM_DEFAULT_DTYPE, true);
    CHECK(z && ct_shape(z)[0] == 1 && ct_shape(z)[1] == 3);
    double zeros[3] = {0, 0, 0};
    CHECK_TENSOR(z, zeros);
    ct_release(z);
    ct_release(e);
}

static ct_tensor *sort_fn(ct_tensor *const *in, void *ctx) {
    return ct_sort(in[0], *(int *)ctx, *(int *)ctx == 0);
}

static ct_tensor *cumsum_fn(ct_tensor *const *in, void *ctx) {
    return ct_cumulative_sum(in[0], *(int *)ctx, CT_CUMSUM_DEFAULT_DTYPE, *(int *)ctx == 1);
}

DEVICE_TEST(test_sort_and_cumulative_sum_gradients) {
    for (int axis = 0; axis < 2; axis++) {
        ct_tensor *x =
            ct_gradcheck_leaf(device, 2, (int64_t[]){4, 5}, 3 + (uint64_t)axis, -2, 2, true);
        CHECK(ct_gradcheck(sort_fn, 1, &x, &axis, 1e-6, 1e-7, 1e-5));
        CHECK(ct_gradcheck(cumsum_fn, 1, &x, &axis, 1e-6, 1e-7, 1e-5));
        ct_release(x);
    }
}

DEVICE_TEST(test_sort_and_cumulative_sum_errors) {
    ct_tensor *x = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *s = ct_zeros(0, NULL, CT_F32, device);
    CHECK(ct_argsort(x, 2, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "axis");
    CHECK(ct_cumulative_sum(s, 0, CT_CUMSUM_DEFAULT_DTYPE, false) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "0-d");
    CHECK(ct_cumulative_sum(x, 0, (ct_dtype)99, false) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "not a ct_dtype");
    CHECK(ct_sort(NULL, 0, false) == NULL);
    CHECK(ct_argsort(NULL, 0, false) == NULL);
    ct_release(x);
    ct_release(s);
}

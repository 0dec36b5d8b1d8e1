/* Range creation: ct_arange, ct_linspace and ct_eye against references computed here and
 * against values NumPy 1.24 gives (quoted in comments), for every dtype where it makes
 * sense, plus the error paths. */
#include <stdlib.h>

#include "ct_ref.h"

/* t is 1-D with n elements matching expected. */
static void check_1d(ct_tensor *t, int64_t n, const double *expected) {
    CHECK_NOT_NULL(t);
    CHECK(ct_ndim(t) == 1);
    CHECK(ct_shape(t)[0] == n);
    CHECK_TENSOR(t, expected);
}

/* ---- arange ---- */

DEVICE_TEST(test_creation_arange_float_dtypes) {
    static const double cases[][3] = {{0, 5, 1},        {1, 2, 0.3}, {5, 0, -1.5},
                                      {-2.5, 2.5, 0.5}, {0, 1, 0.1}, {0, 100000, 1}};
    static const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double start = cases[c][0], stop = cases[c][1], step = cases[c][2];
        int64_t n = (int64_t)ceil((stop - start) / step);
        double *expected = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++) expected[i] = start + (double)i * step;
        for (int d = 0; d < 4; d++) {
            /* f16 and bf16 cannot hold long ranges of integers: keep them short. */
            if (n > 1000 && dtypes[d] != CT_F32 && dtypes[d] != CT_F64) continue;
            ct_tensor *t = ct_arange(start, stop, step, dtypes[d], device);
            check_1d(t, n, expected);
            ct_release(t);
        }
        free(expected);
    }
}

DEVICE_TEST(test_creation_arange_matches_numpy) {
    ct_tensor *t = ct_arange(1, 2, 0.3, CT_F64, device);
    check_1d(t, 4, (double[]){1, 1.3, 1.6, 1.9}); /* np.arange(1, 2, 0.3) */
    ct_release(t);
    t = ct_arange(5, 0, -1.5, CT_F32, device);
    check_1d(t, 4, (double[]){5, 3.5, 2, 0.5}); /* np.arange(5, 0, -1.5) */
    ct_release(t);
}

DEVICE_TEST(test_creation_arange_integer_dtypes) {
    static const ct_dtype dtypes[] = {CT_I32, CT_I64, CT_U8};
    for (int d = 0; d < 3; d++) {
        ct_dtype dt = dtypes[d];
        bool is_u8 = dt == CT_U8;
        ct_tensor *t = ct_arange(is_u8 ? 3 : -3, 7, 2, dt, device);
        /* np.arange(-3, 7, 2) is -3 -1 1 3 5 */
        check_1d(t, is_u8 ? 2 : 5, is_u8 ? (double[]){3, 5} : (double[]){-3, -1, 1, 3, 5});
        ct_release(t);
        /* np.arange(0.5, 3, 0.5, dtype=int32) is 0 1 2 3 4: NumPy steps by the difference of
         * the first two truncated values. */
        t = ct_arange(0.5, 3, 0.5, dt, device);
        check_1d(t, 5, (double[]){0, 1, 2, 3, 4});
        ct_release(t);
    }
    /* np.arange(-1.5, 2, 0.7, dtype=int64) is -1 0 1 2 3 */
    ct_tensor *t = ct_arange(-1.5, 2, 0.7, CT_I64, device);
    check_1d(t, 5, (double[]){-1, 0, 1, 2, 3});
    ct_release(t);
}

DEVICE_TEST(test_creation_arange_empty) {
    static const double cases[][3] = {{0, 0, 1}, {3, 0, 1}, {0, 3, -1}, {1, 1, -0.5}};
    for (int c = 0; c < 4; c++) {
        ct_tensor *t = ct_arange(cases[c][0], cases[c][1], cases[c][2], CT_F32, device);
        CHECK_NOT_NULL(t);
        CHECK(ct_ndim(t) == 1 && ct_shape(t)[0] == 0);
        ct_release(t);
    }
}

DEVICE_TEST(test_creation_arange_errors) {
    CHECK(ct_arange(0, 5, 0, CT_F32, device) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_arange: step is 0");
    CHECK(ct_arange(0, NAN, 1, CT_F32, device) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_arange: start 0, stop nan and step 1 must all be finite");
    CHECK(ct_arange(0, INFINITY, 1, CT_F64, device) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "must all be finite");
    CHECK(ct_arange(0, 2, 1, CT_BOOL, device) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_arange: bool has no ranges");
    CHECK(ct_arange(0, 2, 1, (ct_dtype)-1, device) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_arange: invalid dtype -1");
    CHECK(ct_arange(-1e300, 1e300, 1e-300, CT_F64, device) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "that is too many");
    CHECK(ct_arange(0, 1e18, 1, CT_F64, device) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_arange: the shape's element count overflows");
}

/* ---- linspace ---- */

/* The reference: start + i * (stop - start) / (num - 1), the last value exactly stop. */
static double *linspace_ref(double start, double stop, int64_t num) {
    double *v = malloc(sizeof(double) * (size_t)(num + 1));
    double step = num > 1 ? (stop - start) / (double)(num - 1) : 0;
    for (int64_t i = 0; i < num; i++) v[i] = start + (double)i * step;
    if (num > 1) v[num - 1] = stop;
    return v;
}

DEVICE_TEST(test_creation_linspace_every_dtype) {
    static const double cases[][3] = {{0, 1, 5}, {2.5, -3.5, 4}, {0.1, 3.3, 4}, {-4, 4, 9},
                                      {3, 3, 4}, {7, 9, 1},      {0, 1, 0},     {0, 1, 50001}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t num = (int64_t)cases[c][2];
        double *expected = linspace_ref(cases[c][0], cases[c][1], num);
        for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
            double *e = malloc(sizeof(double) * (size_t)(num + 1));
            for (int64_t i = 0; i < num; i++) e[i] = ref_round(expected[i], (ct_dtype)dt);
            ct_tensor *t = ct_linspace(cases[c][0], cases[c][1], num, (ct_dtype)dt, device);
            check_1d(t, num, e);
            free(e);
            ct_release(t);
        }
        free(expected);
    }
}

DEVICE_TEST(test_creation_linspace_endpoints_exact) {
    /* np.linspace(0.1, 3.3, 4) ends exactly at 3.3, though 0.1 + 3 * step is
     * 3.3000000000000003 */
    ct_tensor *t = ct_linspace(0.1, 3.3, 4, CT_F64, device);
    CHECK_NOT_NULL(t);
    double v[4];
    CHECK_OK(ct_copy_to_host(t, v, sizeof v));
    CHECK(v[0] == 0.1);
    CHECK(v[3] == 3.3);
    ct_release(t);
    t = ct_linspace(2.5, -3.5, 1, CT_F64, device);
    CHECK_NOT_NULL(t);
    CHECK_OK(ct_copy_to_host(t, v, sizeof(double)));
    CHECK(v[0] == 2.5); /* num == 1 gives start */
    ct_release(t);
}

DEVICE_TEST(test_creation_linspace_matches_numpy) {
    ct_tensor *t = ct_linspace(0, 10, 5, CT_I32, device);
    check_1d(t, 5, (double[]){0, 2, 5, 7, 10}); /* np.linspace(0, 10, 5, dtype=int32) */
    ct_release(t);
    t = ct_linspace(0, 1, 3, CT_BOOL, device);
    check_1d(t, 3, (double[]){0, 1, 1}); /* np.linspace(0, 1, 3, dtype=bool) */
    ct_release(t);
    t = ct_linspace(2.5, -3.5, 4, CT_F64, device);
    check_1d(t, 4, (double[]){2.5, 0.5, -1.5, -3.5}); /* np.linspace(2.5, -3.5, 4) */
    ct_release(t);
}

DEVICE_TEST(test_creation_linspace_errors) {
    CHECK(ct_linspace(0, 1, -1, CT_F32, device) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG,
                "ct_linspace: num is -1; the number of values must be 0 or more");
    CHECK(ct_linspace(0, 1, 3, (ct_dtype)99, device) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_linspace: invalid dtype 99");
}

/* ---- eye ---- */

DEVICE_TEST(test_creation_eye_every_dtype) {
    static const int64_t sizes[][2] = {{3, 3}, {2, 4}, {4, 2}, {1, 1}, {0, 3}, {3, 0}, {200, 300}};
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        int64_t n = sizes[c][0], m = sizes[c][1];
        double *expected = calloc((size_t)(n * m + 1), sizeof(double));
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++) expected[i * m + j] = i == j;
        for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
            ct_tensor *t = ct_eye(n, m, (ct_dtype)dt, device);
            CHECK_NOT_NULL(t);
            CHECK(ct_ndim(t) == 2 && ct_shape(t)[0] == n && ct_shape(t)[1] == m);
            CHECK(ct_dtype_of(t) == (ct_dtype)dt);
            CHECK_TENSOR(t, expected);
            ct_release(t);
        }
        free(expected);
    }
}

DEVICE_TEST(test_creation_eye_errors) {
    CHECK(ct_eye(-1, 3, CT_F32, device) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_eye: sizes -1 x 3; both must be 0 or more");
    CHECK(ct_eye(2, -2, CT_F32, device) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_eye: sizes 2 x -2");
    CHECK(ct_eye(2, 2, (ct_dtype)CT_DTYPE_COUNT, device) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_eye: invalid dtype 15");
}

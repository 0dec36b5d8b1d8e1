/* Searching, sets and composed shape ops (ct_nonzero, ct_searchsorted, ct_unique, ct_tril,
 * ct_triu, ct_tile, ct_repeat, ct_repeat_each, ct_tensordot) against references computed
 * here in doubles: every dtype, several ranks, ties, NaN, empty inputs, gradients by finite
 * differences, and the errors. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

/* Small values with ties and zeros (and NaN at every 9th for floats when nan). */
static void small_values(double *v, int64_t n, ct_dtype dtype, uint64_t seed, bool nan) {
    ref_random(v, n, seed, -3.0, 3.0);
    for (int64_t i = 0; i < n; i++) {
        v[i] = floor(v[i]);
        if (dtype == CT_BOOL) v[i] = v[i] > 0;
        if (ct_dtype_is_unsigned(dtype)) v[i] = fabs(v[i]);
        if (nan && ct_dtype_is_floating(dtype) && i % 9 == 4) v[i] = NAN;
    }
}

DEVICE_TEST(test_nonzero_every_dtype_and_rank) {
    static const int64_t shape[3] = {3, 4, 5};
    double v[60], expected[60];
    for (int t = 0; t < CT_TEST_DTYPE_COUNT; t++)
        for (int ndim = 1; ndim <= 3; ndim++) {
            int64_t n = ref_numel(ndim, shape), at[3];
            small_values(v, n, ct_test_dtypes[t], (uint64_t)(t * 3 + ndim), true);
            ct_tensor *x = (ndim % 2 ? ref_tensor_strided : ref_tensor)(v, ndim, shape,
                                                                        ct_test_dtypes[t], device);
            ct_tensor *out[3] = {NULL};
            CHECK_OK(ct_nonzero(x, out));
            for (int d = 0; d < ndim; d++) {
                int64_t k = 0;
                for (int64_t i = 0; i < n; i++) {
                    if (v[i] == 0) continue;
                    ref_unravel(i, ndim, shape, at);
                    expected[k++] = (double)at[d];
                }
                CHECK(ct_ndim(out[d]) == 1 && ct_shape(out[d])[0] == k);
                CHECK(ct_dtype_of(out[d]) == CT_I64);
                CHECK_TENSOR(out[d], expected);
                ct_release(out[d]);
            }
            ct_release(x);
        }
}

DEVICE_TEST(test_nonzero_empty_none_and_0d) {
    ct_tensor *z = ct_zeros(2, (int64_t[]){3, 4}, CT_F32, device), *out[2] = {NULL};
    CHECK_OK(ct_nonzero(z, out));
    CHECK(ct_numel(out[0]) == 0 && ct_numel(out[1]) == 0);
    ct_release(out[0]);
    ct_release(out[1]);
    ct_tensor *e = ct_zeros(2, (int64_t[]){0, 4}, CT_F32, device);
    CHECK_OK(ct_nonzero(e, out));
    CHECK(ct_numel(out[0]) == 0);
    ct_release(out[0]);
    ct_release(out[1]);
    ct_tensor *s = ct_ones(0, NULL, CT_F32, device);
    CHECK(ct_nonzero(s, out) == CT_ERR_SHAPE);
    ct_clear_error();
    ct_release(z);
    ct_release(e);
    ct_release(s);
}

/* Insertion point of v among sorted x[0..n) (NaN last, equal to NaN). */
static double insertion(const double *x, int64_t n, double v, bool right) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        bool less = isnan(v) ? !isnan(x[i]) : x[i] < v;
        bool equal = (isnan(v) && isnan(x[i])) || x[i] == v;
        if (less || (right && equal)) k = i + 1;
    }
    return (double)k;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}

DEVICE_TEST(test_searchsorted_every_dtype_and_side) {
    double x1[20], x2[12], expected[12];
    for (int t = 0; t < CT_TEST_DTYPE_COUNT; t++) {
        ct_dtype dtype = ct_test_dtypes[t];
        small_values(x1, 20, dtype, (uint64_t)t, true);
        small_values(x2, 12, dtype, (uint64_t)t + 50, true);
        for (int i = 0; i < 20; i++) x1[i] = ref_round(x1[i], dtype);
        qsort(x1, 20, sizeof *x1, cmp_double);
        ct_tensor *a = ref_tensor(x1, 1, (int64_t[]){20}, dtype, device);
        ct_tensor *b = ref_tensor_strided(x2, 2, (int64_t[]){3, 4}, dtype, device);
        for (int right = 0; right < 2; right++) {
            for (int i = 0; i < 12; i++) expected[i] = insertion(x1, 20, x2[i], right);
            ct_tensor *y = ct_searchsorted(a, b, right);
            CHECK_TENSOR(y, expected);
            CHECK(ct_ndim(y) == 2 && ct_dtype_of(y) == CT_I64);
            ct_release(y);
        }
        ct_release(a);
        ct_release(b);
    }
}

DEVICE_TEST(test_unique_every_dtype) {
    double v[40], sorted[40], values[40], counts[40], first[40], inverse[40];
    for (int t = 0; t < CT_TEST_DTYPE_COUNT; t++) {
        ct_dtype dtype = ct_test_dtypes[t];
        small_values(v, 40, dtype, (uint64_t)t + 9, true);
        for (int i = 0; i < 40; i++) v[i] = ref_round(v[i], dtype);
        memcpy(sorted, v, sizeof sorted);
        qsort(sorted, 40, sizeof *sorted, cmp_double);
        int64_t k = 0;
        for (int i = 0; i < 40; i++)
            if (i == 0 || isnan(sorted[i]) || sorted[i] != sorted[i - 1]) {
                values[k] = sorted[i];
                counts[k] = 0;
                first[k] = -1;
                k++;
            }
        for (int i = 0; i < 40; i++) {
            int64_t g = 0;
            for (int64_t j = 0; j < k; j++) {
                bool hit = isnan(v[i]) ? isnan(values[j]) && first[j] < 0 : values[j] == v[i];
                if (hit) {
                    g = j;
                    break;
                }
            }
            counts[g]++;
            if (first[g] < 0) first[g] = i;
            inverse[i] = (double)g;
        }
        ct_tensor *x = ref_tensor(v, 2, (int64_t[]){5, 8}, dtype, device);
        ct_unique_result r;
        CHECK_OK(ct_unique(x, &r));
        CHECK(ct_numel(r.values) == k && ct_dtype_of(r.values) == dtype);
        CHECK_TENSOR(r.values, values);
        CHECK_TENSOR(r.counts, counts);
        CHECK_TENSOR(r.indices, first);
        CHECK_TENSOR(r.inverse, inverse);
        CHECK(ct_ndim(r.inverse) == 2);
        ct_unique_release(&r);
        ct_release(x);
    }
}

DEVICE_TEST(test_unique_empty) {
    ct_tensor *e = ct_zeros(2, (int64_t[]){0, 3}, CT_I32, device);
    ct_unique_result r;
    CHECK_OK(ct_unique(e, &r));
    CHECK(ct_numel(r.values) == 0 && ct_numel(r.counts) == 0 && ct_ndim(r.inverse) == 2);
    ct_unique_release(&r);
    ct_release(e);
}

DEVICE_TEST(test_tril_triu_every_dtype_and_k) {
    double v[2 * 3 * 4], expected[24];
    for (int t = 0; t < CT_TEST_DTYPE_COUNT; t++) {
        small_values(v, 24, ct_test_dtypes[t], (uint64_t)t, false);
        ct_tensor *x = ref_tensor_strided(v, 3, (int64_t[]){2, 3, 4}, ct_test_dtypes[t], device);
        for (int64_t k = -3; k <= 4; k++)
            for (int upper = 0; upper < 2; upper++) {
                for (int i = 0; i < 24; i++) {
                    int64_t row = (i / 4) % 3, col = i % 4;
                    bool keep = upper ? col - row >= k : col - row <= k;
                    expected[i] = keep ? v[i] : 0.0;
                }
                ct_tensor *y = upper ? ct_triu(x, k) : ct_tril(x, k);
                CHECK_TENSOR(y, expected);
                CHECK(ct_dtype_of(y) == ct_test_dtypes[t]);
                ct_release(y);
            }
        ct_release(x);
    }
}

DEVICE_TEST(test_tile_and_repeat) {
    double v[6] = {1, 2, 3, 4, 5, 6};
    ct_tensor *x = ref_tensor(v, 2, (int64_t[]){2, 3}, CT_F32, device);
    /* tile((2,3), (2,1,2)) -> (2, 2, 6) */
    double tiled[24];
    for (int i = 0; i < 24; i++) {
        int r = (i / 6) % 2, c = i % 6;
        tiled[i] = v[r * 3 + c % 3];
    }
    ct_tensor *y = ct_tile(x, 3, (int64_t[]){2, 1, 2});
    CHECK(y && ct_ndim(y) == 3 && ct_shape(y)[0] == 2 && ct_shape(y)[2] == 6);
    CHECK_TENSOR(y, tiled);
    ct_release(y);
    /* repeat along axis 1 by 2, along none by 3, and each by counts */
    double rep1[12], rep0[18], each[9] = {1, 1, 3, 3, 3, 4, 4, 6, 6};
    for (int i = 0; i < 12; i++) rep1[i] = v[(i / 6) * 3 + (i % 6) / 2];
    for (int i = 0; i < 18; i++) rep0[i] = v[i / 3];
    ct_tensor *r1 = ct_repeat(x, 2, -1), *r0 = ct_repeat(x, 3, CT_AXIS_NONE);
    CHECK_TENSOR(r1, rep1);
    CHECK(ct_shape(r1)[1] == 6);
    CHECK_TENSOR(r0, rep0);
    ct_tensor *counts = ref_tensor((double[]){2, 0, 3}, 1, (int64_t[]){3}, CT_I64, device);
    ct_tensor *e = ct_repeat_each(x, counts, 1);
    double each2[10] = {1, 1, 3, 3, 3, 4, 4, 6, 6, 6};
    CHECK(e && ct_shape(e)[1] == 5);
    CHECK_TENSOR(e, each2);
    (void)each;
    ct_tensor *bad = ref_tensor((double[]){1, -1, 1}, 1, (int64_t[]){3}, CT_I64, device);
    CHECK(ct_repeat_each(x, bad, 1) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, ">= 0");
    CHECK(ct_repeat(x, -1, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, ">= 0");
    /* a length that would overflow int64: refused before it is computed */
    CHECK(ct_tile(x, 1, (int64_t[]){INT64_MAX}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "overflow int64");
    CHECK(ct_repeat(x, INT64_MAX / 2, 1) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "overflow int64");
    ct_release(bad);
    ct_release(counts);
    ct_release(e);
    ct_release(r1);
    ct_release(r0);
    ct_release(x);
}

DEVICE_TEST(test_tensordot_against_loops) {
    /* a (2,3,4) . b (4,3,5) over a's (1,2) and b's (1,0) -> (2,5) */
    double av[24], bv[60], expected[10];
    ref_random(av, 24, 1, -1, 1);
    ref_random(bv, 60, 2, -1, 1);
    for (int i = 0; i < 2; i++)
        for (int l = 0; l < 5; l++) {
            double s = 0;
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 4; k++) s += av[(i * 3 + j) * 4 + k] * bv[(k * 3 + j) * 5 + l];
            expected[i * 5 + l] = s;
        }
    ct_tensor *a = ref_tensor(av, 3, (int64_t[]){2, 3, 4}, CT_F64, device);
    ct_tensor *b = ref_tensor_strided(bv, 3, (int64_t[]){4, 3, 5}, CT_F64, device);
    ct_tensor *y = ct_tensordot(a, b, 2, (int[]){1, -1}, (int[]){1, 0});
    CHECK(y && ct_ndim(y) == 2 && ct_shape(y)[1] == 5);
    CHECK_TENSOR(y, expected);
    ct_release(y);
    ct_tensor *outer = ct_tensordot(a, b, 0, NULL, NULL);
    CHECK(outer && ct_ndim(outer) == 6);
    ct_release(outer);
    CHECK(ct_tensordot(a, b, 1, (int[]){0}, (int[]){0}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "paired axes must match");
    ct_release(a);
    ct_release(b);
}

static ct_tensor *composed_fn(ct_tensor *const *in, void *ctx) {
    switch (*(int *)ctx) {
    case 0: return ct_tril(in[0], 0);
    case 1: return ct_triu(in[0], 1);
    case 2: return ct_tile(in[0], 2, (int64_t[]){2, 3});
    case 3: return ct_repeat(in[0], 2, 0);
    default: return ct_tensordot(in[0], in[1], 1, (int[]){1}, (int[]){0});
    }
}

DEVICE_TEST(test_composed_shape_ops_gradients) {
    ct_tensor *x[2] = {ct_gradcheck_leaf(device, 2, (int64_t[]){3, 4}, 5, -1, 1, true),
                       ct_gradcheck_leaf(device, 2, (int64_t[]){4, 2}, 6, -1, 1, true)};
    for (int which = 0; which < 5; which++)
        CHECK(ct_gradcheck(composed_fn, which == 4 ? 2 : 1, x, &which, 1e-6, 1e-7, 1e-5));
    ct_release(x[0]);
    ct_release(x[1]);
}

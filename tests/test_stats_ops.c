/* Order statistics and NaN-aware ops (ctensor/stats.h) against references computed here in
 * doubles (rows sorted by hand): ct_median, ct_nanmedian and their _dim forms (odd and even
 * lengths, NaN rows, every axis as given and negative, keepdim, non-contiguous inputs, the
 * float dtypes and an integer one), ct_quantile and ct_nanquantile (every interpolation, 0-d
 * and 1-D q, CT_AXIS_NONE), ct_nansum, ct_nanmean, ct_nan_to_num, ct_lerp; empty inputs and
 * the errors; gradients by finite differences and, at NaNs, by hand. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

static const ct_dtype float_dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};

/* Whether a goes strictly before b in an ascending sort (NaN last). */
static bool before(double a, double b) { return a < b || (isnan(b) && !isnan(a)); }

/* The stable ascending order of v[0], v[s], ..., v[(n-1)s], by insertion. */
static void row_order(const double *v, int64_t n, int64_t s, int64_t *order) {
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i;
        while (j > 0 && before(v[i * s], v[order[j - 1] * s])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
}

/* x's values (n of them) in [-4, 4) rounded to dtype; for floats NaN at the positions
 * nan_every picks (every k-th from 2; 0: none). */
static void values_of(double *v, int64_t n, ct_dtype dtype, uint64_t seed, int nan_every) {
    ref_random(v, n, seed, -4.0, 4.0);
    for (int64_t i = 0; i < n; i++) {
        if (!ct_dtype_is_floating(dtype)) v[i] = floor(v[i]);
        v[i] = ref_round(v[i], dtype);
        if (ct_dtype_is_floating(dtype) && nan_every && i % nan_every == 2) v[i] = NAN;
    }
}

/* The reference median of a row: the value and its index (PyTorch's rules: the lower middle;
 * a row with NaN gives its first NaN; ignoring NaN, the lower middle of the numbers, and a
 * row of NaNs gives NaN at index 0). */
static void row_median(const double *v, int64_t n, int64_t s, bool ignore_nan, double *value,
                       int64_t *index) {
    int64_t order[64], nans = 0, k;
    row_order(v, n, s, order);
    for (int64_t i = 0; i < n; i++) nans += isnan(v[i * s]);
    if (ignore_nan)
        k = nans == n ? 0 : (n - nans - 1) / 2;
    else
        k = nans ? n - nans : (n - 1) / 2;
    *index = order[k];
    *value = v[order[k] * s];
}

/* The expected values and indices of a median of x (shape) along axis, in the order of the
 * result (x's shape without axis). */
static void reference_median(const double *x, int ndim, const int64_t *shape, int axis,
                             bool ignore_nan, double *values, double *indices) {
    int64_t at[8], stride = 1, out = 0;
    for (int d = axis + 1; d < ndim; d++) stride *= shape[d];
    for (int64_t i = 0; i < ref_numel(ndim, shape); i++) {
        ref_unravel(i, ndim, shape, at);
        if (at[axis] != 0) continue;
        int64_t index;
        row_median(x + i, shape[axis], stride, ignore_nan, &values[out], &index);
        indices[out++] = (double)index;
    }
}

static void check_median_case(ct_device device, int ndim, const int64_t *shape, ct_dtype dtype,
                              uint64_t seed) {
    double x_values[128], values[128], indices[128];
    values_of(x_values, ref_numel(ndim, shape), dtype, seed, 7);
    for (int axis = 0; axis < ndim; axis++)
        for (int nan_mode = 0; nan_mode < 2; nan_mode++)
            for (int keepdim = 0; keepdim < 2; keepdim++) {
                bool odd = (axis + nan_mode + keepdim) % 2;
                ct_tensor *x =
                    (odd ? ref_tensor_strided : ref_tensor)(x_values, ndim, shape, dtype, device);
                reference_median(x_values, ndim, shape, axis, nan_mode, values, indices);
                ct_tensor *v = NULL, *i = NULL;
                int given = odd ? axis - ndim : axis;
                CHECK_OK((nan_mode ? ct_nanmedian_dim : ct_median_dim)(x, given, keepdim, &v, &i));
                CHECK_TENSOR(v, values);
                CHECK_TENSOR(i, indices);
                CHECK(ct_dtype_of(v) == dtype && ct_dtype_of(i) == CT_I64);
                CHECK(ct_ndim(v) == ndim - !keepdim && ct_ndim(i) == ct_ndim(v));
                if (keepdim) CHECK(ct_shape(v)[axis] == 1);
                ct_release(v);
                ct_release(i);
                ct_release(x);
            }
}

DEVICE_TEST(test_median_dim_rows_nan_axes_keepdim) {
    static const int64_t shapes[][3] = {{3, 5, 0}, {4, 6, 0}, {2, 3, 4}, {7, 0, 0}, {1, 8, 0}};
    static const int ranks[] = {2, 2, 3, 1, 2};
    for (int s = 0; s < 5; s++) {
        for (int t = 0; t < 4; t++) {
            check_median_case(device, ranks[s], shapes[s], float_dtypes[t], (uint64_t)(s + 10 * t));
            if (ct_test_failed()) return;
        }
        check_median_case(device, ranks[s], shapes[s], CT_I32, (uint64_t)s);
        if (ct_test_failed()) return;
    }
}

DEVICE_TEST(test_median_all_elements) {
    /* Even count: the lower middle (2), not NumPy's 2.5. */
    double even[4] = {4, 1, 3, 2}, with_nan[5] = {1, NAN, 3, 2, 0}, expect;
    ct_tensor *x = ref_tensor(even, 2, (int64_t[]){2, 2}, CT_F32, device);
    ct_tensor *m = ct_median(x), *nm = ct_nanmedian(x);
    expect = 2.0;
    CHECK_TENSOR(m, &expect);
    CHECK_TENSOR(nm, &expect);
    CHECK(ct_ndim(m) == 0 && ct_dtype_of(m) == CT_F32);
    ct_release(m);
    ct_release(nm);
    ct_release(x);
    x = ref_tensor(with_nan, 1, (int64_t[]){5}, CT_F64, device);
    m = ct_median(x);
    nm = ct_nanmedian(x);
    expect = NAN;
    CHECK_TENSOR(m, &expect);
    expect = 1.0; /* of 0, 1, 2, 3 */
    CHECK_TENSOR(nm, &expect);
    ct_release(m);
    ct_release(nm);
    ct_release(x);
    /* An empty floating x gives NaN; an integer one has none. A 0-d x is its median. */
    x = ct_zeros(2, (int64_t[]){0, 3}, CT_F32, device);
    m = ct_median(x);
    expect = NAN;
    CHECK_TENSOR(m, &expect);
    ct_release(m);
    ct_release(x);
    x = ct_zeros(1, (int64_t[]){0}, CT_I64, device);
    CHECK(ct_median(x) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "no NaN");
    ct_release(x);
    x = ct_full(0, NULL, 2.5, CT_F32, device);
    m = ct_median(x);
    expect = 2.5;
    CHECK_TENSOR(m, &expect);
    ct_tensor *v = NULL, *i = NULL;
    CHECK_OK(ct_median_dim(x, -1, true, &v, &i));
    double zero = 0.0;
    CHECK(ct_ndim(v) == 0 && ct_ndim(i) == 0);
    CHECK_TENSOR(i, &zero);
    ct_release(v);
    ct_release(i);
    ct_release(m);
    ct_release(x);
}

DEVICE_TEST(test_median_empty_and_errors) {
    ct_tensor *x = ct_zeros(2, (int64_t[]){0, 3}, CT_F32, device), *v = NULL, *i = NULL;
    /* An empty reduced axis is PyTorch's error; other empty axes give empty results. */
    CHECK(ct_median_dim(x, 0, false, &v, &i) == CT_ERR_SHAPE && !v && !i);
    CHECK_ERROR(CT_ERR_SHAPE, "size 0");
    CHECK_OK(ct_nanmedian_dim(x, 1, false, &v, &i));
    CHECK(ct_ndim(v) == 1 && ct_shape(v)[0] == 0 && ct_numel(i) == 0);
    ct_release(v);
    ct_release(i);
    CHECK(ct_median_dim(x, 2, false, &v, NULL) == CT_ERR_INVALID_ARG && !v);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "axis");
    CHECK(ct_median_dim(x, 0, false, NULL, NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "values");
    ct_release(x);
    x = ct_zeros(1, (int64_t[]){3}, CT_C64, device);
    CHECK(ct_median(x) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "complex");
    ct_release(x);
    CHECK(ct_median(NULL) == NULL);
    ct_clear_error();
}

/* ---- quantiles ---- */

static const ct_quantile_interpolation methods[] = {CT_QUANTILE_LINEAR, CT_QUANTILE_LOWER,
                                                    CT_QUANTILE_HIGHER, CT_QUANTILE_MIDPOINT,
                                                    CT_QUANTILE_NEAREST};

/* The reference q-quantile of a row (NumPy's definitions, read from the sorted numbers). */
static double row_quantile(const double *v, int64_t n, int64_t s, double q, bool ignore_nan,
                           ct_quantile_interpolation how) {
    int64_t order[64], nans = 0;
    row_order(v, n, s, order);
    for (int64_t i = 0; i < n; i++) nans += isnan(v[i * s]);
    if (nans && (!ignore_nan || nans == n)) return NAN;
    int64_t m = n - nans;
    double rank = q * (double)(m - 1), below = floor(rank), above = ceil(rank);
    double lo = v[order[(int64_t)below] * s], hi = v[order[(int64_t)above] * s];
    switch (how) {
    case CT_QUANTILE_LOWER: return lo;
    case CT_QUANTILE_HIGHER: return hi;
    case CT_QUANTILE_MIDPOINT: return (lo + hi) / 2;
    case CT_QUANTILE_NEAREST: return v[order[(int64_t)nearbyint(rank)] * s];
    default: return lo + (rank - below) * (hi - lo);
    }
}

/* The expected quantiles of x (shape) along axis (axis -1: all of x) for each of nq q, q first. */
static void reference_quantile(const double *x, int ndim, const int64_t *shape, int axis,
                               const double *q, int nq, bool ignore_nan,
                               ct_quantile_interpolation how, double *out) {
    int64_t at[8], stride = 1, total = ref_numel(ndim, shape), rows = 0, k = 0;
    if (axis < 0) {
        for (int j = 0; j < nq; j++) out[j] = row_quantile(x, total, 1, q[j], ignore_nan, how);
        return;
    }
    for (int d = axis + 1; d < ndim; d++) stride *= shape[d];
    rows = total / shape[axis];
    for (int j = 0; j < nq; j++) {
        k = 0;
        for (int64_t i = 0; i < total; i++) {
            ref_unravel(i, ndim, shape, at);
            if (at[axis] != 0) continue;
            out[j * rows + k++] = row_quantile(x + i, shape[axis], stride, q[j], ignore_nan, how);
        }
    }
}

static void check_quantile_case(ct_device device, int ndim, const int64_t *shape, ct_dtype dtype,
                                uint64_t seed) {
    static const double qs[5] = {0.0, 0.25, 0.5, 0.9, 1.0};
    double x_values[128], expected[640];
    values_of(x_values, ref_numel(ndim, shape), dtype, seed, 11);
    ct_tensor *q1 = ref_tensor(qs, 1, (int64_t[]){5}, dtype, device);
    /* a 0-d q on the CPU joins x's device */
    ct_tensor *q0 = ref_tensor(&qs[3], 0, NULL, dtype, CT_CPU);
    for (int m = 0; m < 5; m++)
        for (int axis = -1; axis < ndim; axis++)
            for (int nan_mode = 0; nan_mode < 2; nan_mode++) {
                bool keepdim = (m + axis + nan_mode) % 2, odd = (m + axis) % 2;
                ct_tensor *x =
                    (odd ? ref_tensor_strided : ref_tensor)(x_values, ndim, shape, dtype, device);
                int given = axis < 0 ? CT_AXIS_NONE : odd ? axis - ndim : axis;
                ct_tensor *(*fn)(const ct_tensor *, const ct_tensor *, int, bool,
                                 ct_quantile_interpolation) =
                    nan_mode ? ct_nanquantile : ct_quantile;
                reference_quantile(x_values, ndim, shape, axis, qs, 5, nan_mode, methods[m],
                                   expected);
                ct_tensor *y = fn(x, q1, given, keepdim, methods[m]);
                CHECK_TENSOR(y, expected);
                CHECK(ct_dtype_of(y) == dtype && ct_shape(y)[0] == 5);
                int want = 1 + (keepdim ? ndim : axis < 0 ? 0 : ndim - 1);
                CHECK(ct_ndim(y) == want);
                ct_release(y);
                reference_quantile(x_values, ndim, shape, axis, &qs[3], 1, nan_mode, methods[m],
                                   expected);
                y = fn(x, q0, given, keepdim, methods[m]);
                CHECK_TENSOR(y, expected);
                CHECK(ct_ndim(y) == want - 1);
                ct_release(y);
                ct_release(x);
            }
    ct_release(q0);
    ct_release(q1);
}

DEVICE_TEST(test_quantile_every_interpolation_axis_and_nan) {
    static const int64_t shapes[][3] = {{3, 7, 0}, {4, 6, 0}, {2, 3, 4}, {9, 0, 0}};
    static const int ranks[] = {2, 2, 3, 1};
    for (int s = 0; s < 4; s++)
        for (int t = 0; t < 4; t++) {
            check_quantile_case(device, ranks[s], shapes[s], float_dtypes[t],
                                (uint64_t)(s + 10 * t));
            if (ct_test_failed()) return;
        }
}

DEVICE_TEST(test_quantile_empty_and_errors) {
    double half = 0.5, bad[2] = {0.5, 1.5}, nan_q = NAN;
    ct_tensor *x = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *q = ref_tensor(&half, 0, NULL, CT_F32, device);
    ct_tensor *q64 = ref_tensor(&half, 0, NULL, CT_F64, device);
    ct_tensor *qbad = ref_tensor(bad, 1, (int64_t[]){2}, CT_F32, device);
    ct_tensor *qnan = ref_tensor(&nan_q, 0, NULL, CT_F32, device);
    ct_tensor *q2 = ct_zeros(2, (int64_t[]){1, 1}, CT_F32, device);
    ct_tensor *xi = ct_zeros(1, (int64_t[]){3}, CT_I32, device);
    CHECK(ct_quantile(x, qbad, 0, false, CT_QUANTILE_LINEAR) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "[0, 1]");
    CHECK(ct_nanquantile(x, qnan, 0, false, CT_QUANTILE_LINEAR) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "[0, 1]");
    CHECK(ct_quantile(x, q64, 0, false, CT_QUANTILE_LINEAR) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "x's dtype");
    CHECK(ct_quantile(xi, q, 0, false, CT_QUANTILE_LINEAR) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "floating");
    CHECK(ct_quantile(x, q2, 0, false, CT_QUANTILE_LINEAR) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "1-D");
    CHECK(ct_quantile(x, q, 2, false, CT_QUANTILE_LINEAR) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "axis");
    CHECK(ct_quantile(x, q, 0, false, (ct_quantile_interpolation)9) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "interpolation");
    /* Empty x: NaNs of the result's shape (PyTorch's). */
    ct_tensor *e = ct_zeros(2, (int64_t[]){3, 0}, CT_F32, device);
    ct_tensor *y = ct_quantile(e, q, 1, true, CT_QUANTILE_LINEAR);
    double nans[3] = {NAN, NAN, NAN};
    CHECK(y && ct_ndim(y) == 2 && ct_shape(y)[0] == 3 && ct_shape(y)[1] == 1);
    CHECK_TENSOR(y, nans);
    ct_release(y);
    y = ct_nanquantile(e, q, CT_AXIS_NONE, false, CT_QUANTILE_LOWER);
    CHECK(y && ct_ndim(y) == 0);
    CHECK_TENSOR(y, nans);
    ct_release(y);
    ct_release(e);
    ct_tensor *ts[] = {x, q, q64, qbad, qnan, q2, xi};
    for (int i = 0; i < 7; i++) ct_release(ts[i]);
}

/* ---- NaN-aware reductions, nan_to_num, lerp ---- */

DEVICE_TEST(test_nansum_nanmean_axes_keepdim_dtypes) {
    static const int64_t shape[2] = {3, 4};
    double v[12] = {1, NAN, 3, 4, NAN, NAN, NAN, NAN, -2, 0.5, NAN, 8};
    double sum1[3] = {8, 0, 6.5}, mean1[3] = {8.0 / 3, NAN, 6.5 / 3};
    double sum0[4] = {-1, 0.5, 3, 12}, mean0[4] = {-0.5, 0.5, 3, 6}, all_sum = 14.5;
    for (int t = 0; t < 4; t++) {
        ct_dtype dtype = float_dtypes[t];
        for (int strided = 0; strided < 2; strided++) {
            ct_tensor *x = (strided ? ref_tensor_strided : ref_tensor)(v, 2, shape, dtype, device);
            ct_tensor *s = ct_nansum(x, 1, (int[]){-1}, false);
            ct_tensor *m = ct_nanmean(x, 1, (int[]){1}, true);
            CHECK_TENSOR(s, sum1);
            CHECK_TENSOR(m, mean1);
            CHECK(ct_dtype_of(s) == dtype && ct_ndim(m) == 2 && ct_shape(m)[1] == 1);
            ct_release(s);
            ct_release(m);
            s = ct_nansum(x, 1, (int[]){0}, false);
            m = ct_nanmean(x, 1, (int[]){-2}, false);
            CHECK_TENSOR(s, sum0);
            CHECK_TENSOR(m, mean0);
            ct_release(s);
            ct_release(m);
            s = ct_nansum(x, 0, NULL, false);
            CHECK_TENSOR(s, &all_sum);
            ct_release(s);
            ct_release(x);
        }
    }
    /* Integers have no NaN: nansum is sum (int64), nanmean refuses them (PyTorch's). */
    double iv[4] = {1, 2, 3, 4}, isum = 10;
    ct_tensor *xi = ref_tensor(iv, 1, (int64_t[]){4}, CT_I32, device);
    ct_tensor *s = ct_nansum(xi, 0, NULL, false);
    CHECK_TENSOR(s, &isum);
    CHECK(ct_dtype_of(s) == CT_I64);
    ct_release(s);
    CHECK(ct_nanmean(xi, 0, NULL, false) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "floating");
    ct_release(xi);
    /* Empty: sum 0, mean NaN. */
    ct_tensor *e = ct_zeros(1, (int64_t[]){0}, CT_F32, device);
    ct_tensor *es = ct_nansum(e, 0, NULL, false), *em = ct_nanmean(e, 0, NULL, false);
    double zero = 0.0, nan = NAN;
    CHECK_TENSOR(es, &zero);
    CHECK_TENSOR(em, &nan);
    ct_release(es);
    ct_release(em);
    ct_release(e);
}

DEVICE_TEST(test_nan_to_num_defaults_and_values) {
    double v[5] = {NAN, INFINITY, -INFINITY, 1.5, -0.25};
    static const double maxima[4] = {3.4028234663852886e38, 1.7976931348623157e308, 65504.0,
                                     3.3895313892515355e38};
    for (int t = 0; t < 4; t++) {
        ct_dtype dtype = float_dtypes[t];
        ct_tensor *x = ref_tensor(v, 1, (int64_t[]){5}, dtype, device);
        ct_tensor *y = ct_nan_to_num(x, 0.0, NULL, NULL);
        double want[5] = {0.0, maxima[t], -maxima[t], 1.5, -0.25};
        double *got = ref_read(y);
        CHECK(got && ct_dtype_of(y) == dtype);
        for (int i = 0; i < 5; i++) CHECK(got[i] == want[i]); /* exactly the dtype's extremes */
        free(got);
        ct_release(y);
        double big = 7.0, small = -9.0, custom[5] = {-1.0, 7.0, -9.0, 1.5, -0.25};
        y = ct_nan_to_num(x, -1.0, &big, &small);
        CHECK_TENSOR(y, custom);
        ct_release(y);
        ct_release(x);
    }
    double iv[3] = {1, -2, 3};
    ct_tensor *xi = ref_tensor(iv, 1, (int64_t[]){3}, CT_I16, device);
    ct_tensor *yi = ct_nan_to_num(xi, 0.0, NULL, NULL);
    CHECK_TENSOR(yi, iv);
    CHECK(ct_dtype_of(yi) == CT_I16);
    ct_release(yi);
    ct_release(xi);
}

DEVICE_TEST(test_lerp_formula_broadcast_and_dtypes) {
    double s[6], e[6], w[3] = {-0.5, 0.3, 1.0}, expected[6];
    ref_random(s, 6, 1, -3, 3);
    ref_random(e, 6, 2, -3, 3);
    for (int t = 0; t < 4; t++) {
        ct_dtype dtype = float_dtypes[t];
        double sr[6], er[6], wr[3];
        for (int i = 0; i < 6; i++) sr[i] = ref_round(s[i], dtype), er[i] = ref_round(e[i], dtype);
        for (int i = 0; i < 3; i++) wr[i] = ref_round(w[i], dtype);
        for (int i = 0; i < 6; i++) expected[i] = sr[i] + wr[i % 3] * (er[i] - sr[i]);
        ct_tensor *a = ref_tensor(sr, 2, (int64_t[]){2, 3}, dtype, device);
        ct_tensor *b = ref_tensor_strided(er, 2, (int64_t[]){2, 3}, dtype, device);
        ct_tensor *wt = ref_tensor(wr, 1, (int64_t[]){3}, dtype, device);
        ct_tensor *y = ct_lerp(a, b, wt);
        CHECK_TENSOR(y, expected);
        CHECK(ct_dtype_of(y) == dtype && ct_ndim(y) == 2);
        /* Exact at the ends: weight 1 gives end, weight 0 start. */
        ct_tensor *one = ct_lerp_scalar(a, b, 1.0), *zero = ct_lerp_scalar(a, b, 0.0);
        double *got1 = ref_read(one), *got0 = ref_read(zero);
        CHECK(got1 && got0);
        for (int i = 0; i < 6; i++) CHECK(got1[i] == er[i] && got0[i] == sr[i]);
        free(got1);
        free(got0);
        ct_tensor *mid = ct_lerp_scalar(a, b, 0.75);
        for (int i = 0; i < 6; i++) expected[i] = sr[i] + 0.75 * (er[i] - sr[i]);
        CHECK_TENSOR(mid, expected);
        ct_tensor *ts[] = {a, b, wt, y, one, zero, mid};
        for (int i = 0; i < 7; i++) ct_release(ts[i]);
    }
    ct_tensor *ia = ct_zeros(1, (int64_t[]){2}, CT_I32, device);
    CHECK(ct_lerp_scalar(ia, ia, 0.5) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "floating");
    ct_tensor *f = ct_zeros(1, (int64_t[]){3}, CT_F32, device);
    CHECK(ct_lerp(f, ia, f) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "");
    ct_release(f);
    ct_release(ia);
}

/* ---- gradients ---- */

typedef struct grad_case {
    int axis;
    int which;
    ct_quantile_interpolation how;
} grad_case;

static ct_tensor *median_fn(ct_tensor *const *in, void *ctx) {
    const grad_case *c = ctx;
    if (c->axis == CT_AXIS_NONE) return c->which ? ct_nanmedian(in[0]) : ct_median(in[0]);
    ct_tensor *v = NULL, *i = NULL;
    (c->which ? ct_nanmedian_dim : ct_median_dim)(in[0], c->axis, c->which, &v, &i);
    ct_release(i);
    return v;
}

static ct_tensor *quantile_fn(ct_tensor *const *in, void *ctx) {
    const grad_case *c = ctx;
    return (c->which ? ct_nanquantile : ct_quantile)(in[0], in[1], c->axis, c->which, c->how);
}

static ct_tensor *nan_reduce_fn(ct_tensor *const *in, void *ctx) {
    int axis = *(int *)ctx;
    return axis ? ct_nanmean(in[0], 1, &axis, false) : ct_nansum(in[0], 1, &axis, true);
}

static ct_tensor *lerp_fn(ct_tensor *const *in, void *ctx) {
    return ctx ? ct_lerp_scalar(in[0], in[1], 0.7) : ct_lerp(in[0], in[1], in[2]);
}

static ct_tensor *nan_to_num_fn(ct_tensor *const *in, void *ctx) {
    return ct_nan_to_num(in[0], 0.0, NULL, NULL);
}

DEVICE_TEST(test_stats_gradients) {
    ct_tensor *x = ct_gradcheck_leaf(device, 2, (int64_t[]){4, 5}, 3, -2, 2, true);
    for (int axis = -1; axis < 2; axis++)
        for (int which = 0; which < 2; which++) {
            grad_case c = {axis < 0 ? CT_AXIS_NONE : axis, which, CT_QUANTILE_LINEAR};
            CHECK(ct_gradcheck(median_fn, 1, &x, &c, 1e-6, 1e-7, 1e-5));
        }
    /* quantile: in x, and in q through the linear weights */
    double qs[3] = {0.1, 0.55, 0.9};
    ct_tensor *q = ref_tensor(qs, 1, (int64_t[]){3}, CT_F64, device);
    CHECK_OK(ct_set_requires_grad(q, true));
    ct_tensor *in[2] = {x, q};
    for (int m = 0; m < 5; m++)
        for (int axis = -1; axis < 2; axis++) {
            grad_case c = {axis < 0 ? CT_AXIS_NONE : axis, (m + axis) % 2 != 0, methods[m]};
            CHECK(ct_gradcheck(quantile_fn, 2, in, &c, 1e-6, 1e-7, 1e-5));
        }
    for (int axis = 0; axis < 2; axis++)
        CHECK(ct_gradcheck(nan_reduce_fn, 1, &x, &axis, 1e-6, 1e-7, 1e-5));
    CHECK(ct_gradcheck(nan_to_num_fn, 1, &x, NULL, 1e-6, 1e-7, 1e-5));
    /* lerp in start, end and weight, the weights on both sides of 0.5 */
    ct_tensor *b = ct_gradcheck_leaf(device, 2, (int64_t[]){4, 5}, 4, -2, 2, true);
    ct_tensor *w = ct_gradcheck_leaf(device, 1, (int64_t[]){5}, 5, -1, 2, true);
    ct_tensor *l[3] = {x, b, w};
    CHECK(ct_gradcheck(lerp_fn, 3, l, NULL, 1e-6, 1e-7, 1e-5));
    CHECK(ct_gradcheck(lerp_fn, 2, l, (void *)1, 1e-6, 1e-7, 1e-5));
    ct_release(w);
    ct_release(b);
    ct_release(q);
    ct_release(x);
}

/* The gradient of a sum of f(x) where x holds NaN and infinities, against expected. */
static void check_grad_at_nan(ct_device device, ct_tensor *(*f)(const ct_tensor *),
                              const double *expected) {
    double v[6] = {1.0, NAN, 3.0, INFINITY, -2.0, -INFINITY};
    ct_tensor *x = ref_tensor(v, 1, (int64_t[]){6}, CT_F64, device);
    CHECK_OK(ct_set_requires_grad(x, true));
    ct_tensor *y = f(x);
    ct_tensor *loss = y ? ct_sum(y, 0, NULL, false) : NULL;
    CHECK_OK(ct_backward(loss));
    ct_tensor *g = ct_grad(x);
    CHECK_TENSOR(g, expected);
    ct_release(g);
    ct_release(loss);
    ct_release(y);
    ct_release(x);
}

static ct_tensor *nan_to_num_default(const ct_tensor *x) {
    return ct_nan_to_num(x, 0.0, NULL, NULL);
}

static ct_tensor *nanmedian_all(const ct_tensor *x) { return ct_nanmedian(x); }

static ct_tensor *nansum_all(const ct_tensor *x) { return ct_nansum(x, 0, NULL, false); }

DEVICE_TEST(test_stats_gradients_at_nan_and_inf) {
    /* nan_to_num: 1 where finite, 0 where replaced (PyTorch's) */
    check_grad_at_nan(device, nan_to_num_default, (double[]){1, 0, 1, 0, 1, 0});
    if (ct_test_failed()) return;
    /* nanmedian of -inf, -2, 1, 3, inf picks 1 */
    check_grad_at_nan(device, nanmedian_all, (double[]){1, 0, 0, 0, 0, 0});
    if (ct_test_failed()) return;
    /* nansum: 0 at the NaN */
    check_grad_at_nan(device, nansum_all, (double[]){1, 0, 1, 1, 1, 1});
}

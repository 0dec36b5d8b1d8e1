/* ct_cumulative_prod, ct_diff and ct_isin against references computed here in doubles (and
 * in uint64 for the wrapping integer products): every real dtype, every axis, non-contiguous
 * inputs, include_initial and the result dtypes, complex products, empty and 0-d inputs,
 * gradients by finite differences (with one zero, several zeros and complex zeros in a
 * row), numpy.diff's prepend and append rules, isin's duplicates, NaN, -0.0 and mixed
 * dtypes, and the errors. */
#include <complex.h>
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

/* ---- cumulative_prod ---- */

/* n small values for dtype: integers in [-3, 3] (bool 0/1, unsigned 0..3), floats with
 * halves, zeros among them. */
static void small_values(double *v, int64_t n, ct_dtype dtype, uint64_t seed) {
    ref_random(v, n, seed, -3.0, 3.99);
    for (int64_t i = 0; i < n; i++) {
        v[i] = floor(v[i]);
        if (ct_dtype_is_floating(dtype) && i % 3 == 1) v[i] += 0.5;
        if (dtype == CT_BOOL) v[i] = v[i] != 0;
        if (ct_dtype_is_unsigned(dtype)) v[i] = fabs(v[i]);
        v[i] = ref_round(v[i], dtype);
    }
}

DEVICE_TEST(test_cumulative_prod_every_dtype_axis_and_initial) {
    double x_values[60];
    for (int t = 0; t < CT_TEST_DTYPE_COUNT; t++) {
        ct_dtype dtype = ct_test_dtypes[t];
        small_values(x_values, 60, dtype, (uint64_t)t);
        ref_check_scan(ct_cumulative_prod, true, x_values, dtype, t, device);
        if (ct_test_failed()) return;
    }
}

DEVICE_TEST(test_cumulative_prod_wraps_long_rows_and_empty) {
    /* int64 products wrap modulo 2^64 (NumPy's), over a row longer than a CUDA tile. */
    enum { N = 600 };
    int32_t v[N];
    int64_t got[N], want[N];
    uint64_t acc = 1;
    for (int i = 0; i < N; i++) {
        v[i] = (i % 7) - 3 ? (i % 7) - 3 : 5;
        acc *= (uint64_t)(int64_t)v[i];
        want[i] = (int64_t)acc;
    }
    ct_tensor *x = ct_from_data(v, 1, (int64_t[]){N}, CT_I32, device);
    ct_tensor *y = ct_cumulative_prod(x, 0, CT_CUMSUM_DEFAULT_DTYPE, false);
    CHECK(y && ct_dtype_of(y) == CT_I64);
    CHECK_OK(ct_copy_to_host(y, got, sizeof got));
    for (int i = 0; i < N; i++)
        if (got[i] != want[i]) {
            CHECK(got[i] == want[i]);
            break;
        }
    ct_release(y);
    /* a narrow dtype asked: the int64 product stored with wrapping (int8) */
    ct_tensor *y8 = ct_cumulative_prod(x, 0, CT_I8, false);
    int8_t got8[N];
    CHECK(y8 && ct_dtype_of(y8) == CT_I8);
    CHECK_OK(ct_copy_to_host(y8, got8, sizeof got8));
    for (int i = 0; i < N; i++)
        if (got8[i] != (int8_t)want[i]) {
            CHECK(got8[i] == (int8_t)want[i]);
            break;
        }
    ct_release(y8);
    ct_release(x);
    /* float rows long enough for several CUDA tiles, values near 1 */
    double f[2 * N], fe[2 * N];
    ref_random(f, 2 * N, 11, 0.99, 1.01);
    ct_tensor *xf = ref_tensor(f, 2, (int64_t[]){2, N}, CT_F64, device);
    ref_scan(f, 2, (int64_t[]){2, N}, 1, false, true, CT_F64, fe);
    ct_tensor *yf = ct_cumulative_prod(xf, -1, CT_CUMSUM_DEFAULT_DTYPE, false);
    CHECK_TENSOR(yf, fe);
    ct_release(yf);
    ct_release(xf);
    /* empty: an empty axis gives just the initial 1; an empty other axis stays empty */
    ct_tensor *e = ct_zeros(2, (int64_t[]){0, 3}, CT_F32, device);
    ct_tensor *z = ct_cumulative_prod(e, 0, CT_CUMSUM_DEFAULT_DTYPE, true);
    CHECK(z && ct_shape(z)[0] == 1 && ct_shape(z)[1] == 3);
    double ones[3] = {1, 1, 1};
    CHECK_TENSOR(z, ones);
    ct_release(z);
    z = ct_cumulative_prod(e, 1, CT_CUMSUM_DEFAULT_DTYPE, false);
    CHECK(z && ct_numel(z) == 0 && ct_shape(z)[1] == 3);
    ct_release(z);
    ct_release(e);
}

/* A complex128 tensor holding v (C order). */
static ct_tensor *c128(const double complex *v, int ndim, const int64_t *shape, ct_device device) {
    ct_complex128 z[64];
    int64_t n = ref_numel(ndim, shape);
    for (int64_t i = 0; i < n; i++) z[i] = (ct_complex128){creal(v[i]), cimag(v[i])};
    return ct_from_data(z, ndim, shape, CT_C128, device);
}

/* t's n values as double complex. */
static bool read_c128(const ct_tensor *t, double complex *out, int64_t n) {
    ct_tensor *wide = t ? ct_cast(t, CT_C128) : NULL;
    ct_tensor *dense = wide ? ct_contiguous(wide) : NULL;
    ct_complex128 z[64];
    bool ok = dense && n <= 64 && ct_numel(dense) == n &&
              ct_copy_to_host(dense, z, (size_t)n * sizeof z[0]) == CT_OK;
    ct_release(wide);
    ct_release(dense);
    for (int64_t i = 0; ok && i < n; i++) out[i] = CMPLX(z[i].re, z[i].im);
    return ok;
}

DEVICE_TEST(test_cumulative_prod_complex) {
    double complex v[6] = {CMPLX(1, 2), CMPLX(0.5, -1), CMPLX(-3, 0.5),
                           CMPLX(2, 0), CMPLX(0, 1),    CMPLX(1, -1)};
    ct_tensor *z = c128(v, 2, (int64_t[]){2, 3}, device);
    double complex want[8] = {1, v[0], v[0] * v[1], v[0] * v[1] * v[2],
                              1, v[3], v[3] * v[4], v[3] * v[4] * v[5]};
    for (int k = 0; k < 2; k++) {
        ct_dtype asked = k ? CT_C64 : CT_CUMSUM_DEFAULT_DTYPE;
        ct_tensor *p = ct_cumulative_prod(z, 1, asked, true);
        double complex got[8];
        CHECK(p && ct_dtype_of(p) == (k ? CT_C64 : CT_C128) && ct_shape(p)[1] == 4);
        CHECK(read_c128(p, got, 8));
        for (int i = 0; i < 8; i++) CHECK(cabs(got[i] - want[i]) <= (k ? 1e-5 : 1e-14));
        ct_release(p);
    }
    /* along axis 0 */
    ct_tensor *p0 = ct_cumulative_prod(z, 0, CT_CUMSUM_DEFAULT_DTYPE, false);
    double complex got0[6], want0[6] = {v[0], v[1], v[2], v[0] * v[3], v[1] * v[4], v[2] * v[5]};
    CHECK(read_c128(p0, got0, 6));
    for (int i = 0; i < 6; i++) CHECK(cabs(got0[i] - want0[i]) <= 1e-14);
    ct_release(p0);
    /* a real x with a complex dtype asked; a complex x with a real one is refused */
    ct_tensor *r = ref_tensor((double[]){2, -3, 0.5}, 1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *rc = ct_cumulative_prod(r, 0, CT_C128, false);
    double complex gotr[3];
    CHECK(rc && ct_dtype_of(rc) == CT_C128 && read_c128(rc, gotr, 3));
    CHECK(gotr[0] == 2 && gotr[1] == -6 && gotr[2] == -3);
    ct_release(rc);
    ct_release(r);
    CHECK(ct_cumulative_prod(z, 1, CT_F64, false) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "complex");
    ct_release(z);
}

static ct_tensor *cumprod_fn(ct_tensor *const *in, void *ctx) {
    int axis = *(int *)ctx;
    return ct_cumulative_prod(in[0], axis, CT_CUMSUM_DEFAULT_DTYPE, axis == 1);
}

/* A float64 leaf of shape (3, 5) holding v, requiring grad. */
static ct_tensor *leaf(const double *v, ct_device device) {
    ct_tensor *x = ref_tensor(v, 2, (int64_t[]){3, 5}, CT_F64, device);
    if (x) ct_set_requires_grad(x, true);
    return x;
}

DEVICE_TEST(test_cumulative_prod_gradients_with_zeros) {
    /* no zeros; one zero per row (first, middle, last); several zeros per row */
    static const double values[3][15] = {
        {0.5, -1.2, 0.8, 1.5, -0.7, 1.1, 0.9, -1.3, 0.6, 1.4, -0.4, 1.2, 0.7, -1.1, 0.9},
        {0.0, -1.2, 0.8, 1.5, -0.7, 1.1, 0.9, 0.0, 0.6, 1.4, -0.4, 1.2, 0.7, -1.1, 0.0},
        {0.0, 0.0, 0.8, 1.5, -0.7, 1.1, 0.0, -1.3, 0.0, 1.4, 0.0, 0.0, 0.0, 0.0, 0.0},
    };
    for (int c = 0; c < 3; c++)
        for (int axis = 0; axis < 2; axis++) {
            ct_tensor *x = leaf(values[c], device);
            CHECK(ct_gradcheck(cumprod_fn, 1, &x, &axis, 1e-6, 1e-7, 1e-5));
            ct_release(x);
        }
    /* the value at zeros, against the hand-made rule: y = (x0, x0 x1, x0 x1 x2) with
     * x = (2, 0, 3), g = 1: dx0 = 1, dx1 = x0 + x0 x2 = 8, dx2 = x0 x1 = 0 */
    ct_tensor *x = ref_tensor((double[]){2, 0, 3}, 1, (int64_t[]){3}, CT_F64, device);
    ct_set_requires_grad(x, true);
    ct_tensor *y = ct_cumulative_prod(x, 0, CT_CUMSUM_DEFAULT_DTYPE, false);
    ct_tensor *s = ct_sum(y, 0, NULL, false);
    CHECK_OK(ct_backward(s));
    ct_tensor *g = ct_grad(x);
    CHECK_TENSOR(g, ((double[]){1, 8, 0}));
    ct_release(g);
    ct_release(s);
    ct_release(y);
    ct_release(x);
}

DEVICE_TEST(test_cumulative_prod_complex_gradients) {
    double complex v[15];
    double re[15], im[15];
    ref_random(re, 15, 21, -1.5, 1.5);
    ref_random(im, 15, 22, -1.5, 1.5);
    for (int zeros = 0; zeros < 2; zeros++) {
        for (int i = 0; i < 15; i++) v[i] = CMPLX(re[i], im[i]);
        if (zeros) v[1] = v[7] = v[8] = v[14] = 0;
        for (int axis = 0; axis < 2; axis++) {
            ct_tensor *z = c128(v, 2, (int64_t[]){3, 5}, device);
            ct_set_requires_grad(z, true);
            CHECK(ct_gradcheck_complex(cumprod_fn, 1, &z, &axis, 1e-6, 1e-7, 1e-5));
            ct_release(z);
        }
    }
}

DEVICE_TEST(test_cumulative_prod_errors) {
    ct_tensor *x = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *s = ct_zeros(0, NULL, CT_F32, device);
    CHECK(ct_cumulative_prod(s, 0, CT_CUMSUM_DEFAULT_DTYPE, false) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "0-d");
    CHECK(ct_cumulative_prod(x, 2, CT_CUMSUM_DEFAULT_DTYPE, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "axis");
    CHECK(ct_cumulative_prod(x, 0, (ct_dtype)99, false) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "not a ct_dtype");
    CHECK(ct_cumulative_prod(NULL, 0, CT_CUMSUM_DEFAULT_DTYPE, false) == NULL);
    ct_release(x);
    ct_release(s);
}

/* ---- diff ---- */

/* numpy.diff of the (rows, n) values along axis 1, order `order`, into out; its length. */
static int64_t reference_diff(const double *x, int64_t rows, int64_t n, int order, double *out) {
    double cur[64];
    int64_t len = n;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < n; i++) cur[i] = x[r * n + i];
        len = n;
        for (int k = 0; k < order && len > 0; k++, len--)
            for (int64_t i = 0; i + 1 < len; i++) cur[i] = cur[i + 1] - cur[i];
        for (int64_t i = 0; i < len; i++) out[r * len + i] = cur[i];
    }
    return len;
}

DEVICE_TEST(test_diff_orders_prepend_append) {
    /* x (3, 4); prepend 0-d 10 (broadcast to (3, 1)); append (3, 2) */
    double x_values[12], app[6], joined[3 * 7], expected[3 * 7];
    ref_random(x_values, 12, 5, -4, 4);
    ref_random(app, 6, 6, -4, 4);
    for (int r = 0; r < 3; r++) {
        joined[r * 7] = 10.0;
        for (int i = 0; i < 4; i++) joined[r * 7 + 1 + i] = x_values[r * 4 + i];
        for (int i = 0; i < 2; i++) joined[r * 7 + 5 + i] = app[r * 2 + i];
    }
    for (int odd = 0; odd < 2; odd++) {
        ct_tensor *x =
            (odd ? ref_tensor_strided : ref_tensor)(x_values, 2, (int64_t[]){3, 4}, CT_F64, device);
        ct_tensor *pre = ct_scalar(10.0, CT_F64, ct_device_of(x));
        ct_tensor *post = ref_tensor(app, 2, (int64_t[]){3, 2}, CT_F64, device);
        for (int n = 1; n <= 3; n++) {
            int64_t len = reference_diff(x_values, 3, 4, n, expected);
            ct_tensor *d = ct_diff(x, -1, n, NULL, NULL);
            CHECK(d && ct_shape(d)[0] == 3 && ct_shape(d)[1] == len);
            CHECK_TENSOR(d, expected);
            ct_release(d);
            len = reference_diff(joined, 3, 7, n, expected);
            d = ct_diff(x, 1, n, pre, post);
            CHECK(d && ct_shape(d)[1] == len);
            CHECK_TENSOR(d, expected);
            ct_release(d);
        }
        /* along axis 0 of the transposed values */
        ct_tensor *xt = ct_transpose(x, 0, 1);
        ct_tensor *d0 = ct_diff(xt, 0, 2, NULL, NULL);
        int64_t len = reference_diff(x_values, 3, 4, 2, expected);
        ct_tensor *d0t = ct_transpose(d0, 0, 1);
        CHECK(d0 && ct_shape(d0)[0] == len && ct_shape(d0)[1] == 3);
        CHECK_TENSOR(d0t, expected);
        ct_release(d0t);
        ct_release(d0);
        ct_release(xt);
        /* n = 0 is x; n past the axis leaves it empty */
        ct_tensor *same = ct_diff(x, 1, 0, pre, post);
        CHECK(same == x);
        ct_release(same);
        ct_tensor *empty = ct_diff(x, 1, 9, NULL, NULL);
        CHECK(empty && ct_shape(empty)[0] == 3 && ct_shape(empty)[1] == 0);
        ct_release(empty);
        empty = ct_diff(x, 0, INT64_MAX, pre, NULL); /* stops once the axis is empty */
        CHECK(empty && ct_shape(empty)[0] == 0 && ct_shape(empty)[1] == 4);
        CHECK(ct_dtype_of(empty) == CT_F64);
        ct_release(empty);
        ct_release(pre);
        ct_release(post);
        ct_release(x);
    }
}

DEVICE_TEST(test_diff_dtypes_bool_and_integers) {
    /* bool: not_equal, as NumPy */
    ct_tensor *b = ref_tensor((double[]){1, 1, 0, 1, 0, 0}, 1, (int64_t[]){6}, CT_BOOL, device);
    ct_tensor *db = ct_diff(b, 0, 1, NULL, NULL), *db2 = ct_diff(b, 0, 2, NULL, NULL);
    CHECK(db && ct_dtype_of(db) == CT_BOOL && db2 && ct_dtype_of(db2) == CT_BOOL);
    CHECK_TENSOR(db, ((double[]){0, 1, 1, 1, 0}));
    CHECK_TENSOR(db2, ((double[]){1, 0, 0, 1}));
    ct_release(db);
    ct_release(db2);
    ct_release(b);
    /* uint8 wraps; an int32 prepend promotes to int32 */
    ct_tensor *u = ref_tensor((double[]){5, 3, 200}, 1, (int64_t[]){3}, CT_U8, device);
    ct_tensor *du = ct_diff(u, 0, 1, NULL, NULL);
    CHECK(du && ct_dtype_of(du) == CT_U8);
    CHECK_TENSOR(du, ((double[]){254, 197}));
    ct_tensor *pre = ref_tensor((double[]){7}, 1, (int64_t[]){1}, CT_I32, device);
    ct_tensor *dp = ct_diff(u, 0, 1, pre, NULL);
    CHECK(dp && ct_dtype_of(dp) == CT_I32);
    CHECK_TENSOR(dp, ((double[]){-2, -2, 197}));
    ct_release(dp);
    ct_release(pre);
    ct_release(du);
    ct_release(u);
}

static ct_tensor *diff_fn(ct_tensor *const *in, void *ctx) {
    return ct_diff(in[0], *(int *)ctx, 2, in[1], NULL);
}

DEVICE_TEST(test_diff_gradients_and_errors) {
    for (int axis = 0; axis < 2; axis++) {
        ct_tensor *in[2] = {
            ct_gradcheck_leaf(device, 2, (int64_t[]){4, 5}, 30 + (uint64_t)axis, -2, 2, true),
            ct_gradcheck_leaf(device, 2, (int64_t[]){axis ? 4 : 2, axis ? 2 : 5}, 40, -2, 2, true)};
        CHECK(ct_gradcheck(diff_fn, 2, in, &axis, 1e-6, 1e-7, 1e-5));
        ct_release(in[0]);
        ct_release(in[1]);
    }
    ct_tensor *x = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *s = ct_zeros(0, NULL, CT_F32, device);
    ct_tensor *bad = ct_zeros(2, (int64_t[]){3, 1}, CT_F32, device);
    ct_tensor *flat = ct_zeros(1, (int64_t[]){2}, CT_F32, device);
    CHECK(ct_diff(s, 0, 1, NULL, NULL) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "0-d");
    CHECK(ct_diff(x, 0, -1, NULL, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "order");
    CHECK(ct_diff(x, 2, 1, NULL, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "axis");
    CHECK(ct_diff(x, 1, 1, bad, NULL) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "prepend");
    CHECK(ct_diff(x, 1, 1, NULL, flat) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "append");
    ct_release(x);
    ct_release(s);
    ct_release(bad);
    ct_release(flat);
}

/* ---- isin ---- */

DEVICE_TEST(test_isin_every_dtype) {
    double e[12], t[7];
    for (int k = 0; k < CT_TEST_DTYPE_COUNT; k++) {
        ct_dtype dtype = ct_test_dtypes[k];
        small_values(e, 12, dtype, 50 + (uint64_t)k);
        small_values(t, 7, dtype, 60 + (uint64_t)k);
        t[3] = t[1]; /* a duplicate */
        ct_tensor *te = ref_tensor_strided(e, 2, (int64_t[]){3, 4}, dtype, device);
        ct_tensor *tt = ref_tensor(t, 1, (int64_t[]){7}, dtype, device);
        double want[12], want_not[12];
        for (int i = 0; i < 12; i++) {
            bool in = false;
            for (int j = 0; j < 7; j++) in = in || e[i] == t[j];
            want[i] = in;
            want_not[i] = !in;
        }
        for (int unique = 0; unique < 2; unique++) {
            ct_tensor *r = ct_isin(te, tt, unique, false), *n = ct_isin(te, tt, unique, true);
            CHECK(r && ct_dtype_of(r) == CT_BOOL && ct_ndim(r) == 2 && ct_shape(r)[1] == 4);
            CHECK_TENSOR(r, want);
            CHECK_TENSOR(n, want_not);
            ct_release(r);
            ct_release(n);
        }
        ct_release(te);
        ct_release(tt);
        if (ct_test_failed()) return;
    }
}

DEVICE_TEST(test_isin_nan_mixed_empty_and_errors) {
    ct_tensor *e = ref_tensor((double[]){NAN, 1.5, -0.0, 2, 3}, 1, (int64_t[]){5}, CT_F32, device);
    ct_tensor *t = ref_tensor((double[]){0.0, NAN, 2, 2, 1.5}, 1, (int64_t[]){5}, CT_F64, device);
    ct_tensor *r = ct_isin(e, t, false, false);
    CHECK_TENSOR(r, ((double[]){0, 1, 1, 1, 0}));
    ct_release(r);
    r = ct_isin(e, t, false, true);
    CHECK_TENSOR(r, ((double[]){1, 0, 0, 0, 1}));
    ct_release(r);
    /* int elements among float tests; a 0-d test */
    ct_tensor *i = ref_tensor((double[]){1, 2, 3, 2}, 2, (int64_t[]){2, 2}, CT_I64, device);
    r = ct_isin(i, t, false, false);
    CHECK_TENSOR(r, ((double[]){0, 1, 0, 1}));
    ct_release(r);
    ct_tensor *two = ct_scalar(2.0, CT_I32, (ct_device){CT_DEVICE_CPU, 0});
    r = ct_isin(i, two, true, false);
    CHECK(r && ct_ndim(r) == 2);
    CHECK_TENSOR(r, ((double[]){0, 1, 0, 1}));
    ct_release(r);
    r = ct_isin(two, i, false, false); /* 0-d elements */
    CHECK(r && ct_ndim(r) == 0);
    CHECK_TENSOR(r, ((double[]){1}));
    ct_release(r);
    /* empty tests: nothing is in; empty elements: an empty result */
    ct_tensor *none = ct_zeros(1, (int64_t[]){0}, CT_F32, device);
    r = ct_isin(i, none, false, false);
    CHECK_TENSOR(r, ((double[]){0, 0, 0, 0}));
    ct_release(r);
    r = ct_isin(i, none, false, true);
    CHECK_TENSOR(r, ((double[]){1, 1, 1, 1}));
    ct_release(r);
    r = ct_isin(none, i, false, false);
    CHECK(r && ct_numel(r) == 0 && ct_dtype_of(r) == CT_BOOL);
    ct_release(r);
    ct_tensor *z = ct_zeros(1, (int64_t[]){2}, CT_C64, device);
    CHECK(ct_isin(z, t, false, false) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "complex");
    CHECK(ct_isin(NULL, t, false, false) == NULL);
    ct_release(z);
    ct_release(none);
    ct_release(two);
    ct_release(i);
    ct_release(e);
    ct_release(t);
}

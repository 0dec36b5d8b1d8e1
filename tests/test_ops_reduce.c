/* Reductions: sum, mean, prod, max, min, all, any, var, std, argmax, argmin against float64
 * references computed here, over every subset of axes of 1-D to 4-D shapes (keepdim on and
 * off, negative and unordered axes, contiguous and non-contiguous inputs, every dtype), on
 * empty and 0-d tensors; plus careful summation, var/std on data with a large mean, argmax
 * ties and NaN, and the error paths. */
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "ct_ref.h"

enum { R_SUM, R_MEAN, R_PROD, R_MAX, R_MIN, R_ALL, R_ANY, R_VAR, R_STD, R_ARGMAX, R_ARGMIN };
static const char *const op_names[] = {"sum", "mean", "prod", "max",    "min",   "all",
                                       "any", "var",  "std",  "argmax", "argmin"};

/* One case of the axis sweep: op over the axes in mask of a tensor of shape. */
typedef struct reduce_case {
    int op;
    ct_dtype dtype;
    int ndim;
    const int64_t *shape;
    unsigned mask; /* reduced axes; all of them when null_axes */
    bool null_axes, keepdim, strided;
    double correction;
} reduce_case;

static ct_dtype expected_dtype(int op, ct_dtype in) {
    bool fl = ct_dtype_is_floating(in);
    switch (op) {
    case R_SUM:
    case R_PROD: return fl ? in : ct_dtype_is_unsigned(in) ? CT_U64 : CT_I64;
    case R_MEAN:
    case R_VAR:
    case R_STD: return fl ? in : CT_F32;
    case R_ALL:
    case R_ANY: return CT_BOOL;
    case R_ARGMAX:
    case R_ARGMIN: return CT_I64;
    default: return in;
    }
}

/* Input values that dtype holds exactly and that keep op's result in range: floats in
 * [-1, 1) ([0.5, 1.5) for prod), small integers, for all/any values with many zeros, and
 * for the arg ops few distinct values so that ties are common. */
static void make_values(int op, ct_dtype dtype, int64_t n, uint64_t seed, double *v) {
    ref_random(v, n, seed, 0.0, 1.0);
    for (int64_t i = 0; i < n; i++) {
        double r = v[i];
        if (op == R_ALL || op == R_ANY)
            v[i] = floor(r * 5.0) - 2.0;
        else if (op == R_ARGMAX || op == R_ARGMIN)
            v[i] = floor(r * 7.0) - 3.0; /* ties */
        else if (ct_dtype_is_floating(dtype))
            v[i] = op == R_PROD ? 0.5 + r : 2.0 * r - 1.0;
        else if (op == R_PROD)
            v[i] = floor(r * 5.0) - 2.0;
        else
            v[i] = floor(r * 11.0) - 5.0;
        if (ct_dtype_is_unsigned(dtype)) v[i] = fabs(v[i]);
        if (dtype == CT_BOOL) v[i] = v[i] != 0.0;
        v[i] = ref_round(v[i], dtype);
    }
}

/* Output index (over kept axes) and reduced index (C order over reduced axes) of element
 * i of shape. */
static void split_index(int64_t i, int ndim, const int64_t *shape, unsigned mask, int64_t *out,
                        int64_t *red) {
    int64_t o = 0, r = 0, ostride = 1, rstride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        int64_t k = i % shape[d];
        i /= shape[d];
        if (mask >> d & 1u)
            r += k * rstride, rstride *= shape[d];
        else
            o += k * ostride, ostride *= shape[d];
    }
    *out = o;
    *red = r;
}

static double ref_variance(double sqdev, int64_t n, double correction) {
    if (n == 0) return NAN;
    double divisor = (double)n - correction;
    if (divisor <= 0.0) return sqdev > 0.0 ? INFINITY : NAN;
    return sqdev / divisor;
}

/* First index of the extremum; a NaN is the extremum. */
static bool ref_arg_better(bool is_max, double v, double best) {
    if (isnan(best)) return false;
    if (isnan(v)) return true;
    return is_max ? v > best : v < best;
}

/* Expected results of op over mask (nout outputs, count reduced elements each). */
static void reference(int op, const double *v, int ndim, const int64_t *shape, unsigned mask,
                      double correction, int64_t nout, double *expected) {
    int64_t n = ref_numel(ndim, shape), count = 1;
    for (int d = 0; d < ndim; d++)
        if (mask >> d & 1u) count *= shape[d];
    double *acc = calloc((size_t)nout + 1, sizeof(double));
    int64_t *best = calloc((size_t)nout + 1, sizeof(int64_t));
    for (int64_t o = 0; o < nout; o++) {
        acc[o] = op == R_PROD || op == R_ALL ? 1.0 : 0.0;
        best[o] = -1;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t o, r;
        split_index(i, ndim, shape, mask, &o, &r);
        double x = v[i];
        switch (op) {
        case R_PROD: acc[o] *= x; break;
        case R_ALL: acc[o] = acc[o] != 0.0 && x != 0.0; break;
        case R_ANY: acc[o] = acc[o] != 0.0 || x != 0.0; break;
        case R_MAX:
        case R_MIN:
        case R_ARGMAX:
        case R_ARGMIN:
            if (best[o] < 0 || ref_arg_better(op == R_MAX || op == R_ARGMAX, x, acc[o]))
                acc[o] = x, best[o] = r;
            break;
        default: acc[o] += x; break;
        }
    }
    for (int64_t o = 0; o < nout; o++) {
        double mean = count ? acc[o] / (double)count : NAN;
        expected[o] = op == R_MEAN                       ? mean
                      : op == R_ARGMAX || op == R_ARGMIN ? (double)best[o]
                                                         : acc[o];
        if (op == R_VAR || op == R_STD) acc[o] = mean, expected[o] = 0.0;
    }
    for (int64_t i = 0; i < n && (op == R_VAR || op == R_STD); i++) {
        int64_t o, r;
        split_index(i, ndim, shape, mask, &o, &r);
        expected[o] += (v[i] - acc[o]) * (v[i] - acc[o]);
    }
    for (int64_t o = 0; o < nout && (op == R_VAR || op == R_STD); o++) {
        expected[o] = ref_variance(expected[o], count, correction);
        if (op == R_STD) expected[o] = sqrt(expected[o]);
    }
    free(acc);
    free(best);
}

static ct_tensor *run(const reduce_case *c, const ct_tensor *x, int naxes, const int *axes) {
    switch (c->op) {
    case R_SUM: return ct_sum(x, naxes, axes, c->keepdim);
    case R_MEAN: return ct_mean(x, naxes, axes, c->keepdim);
    case R_PROD: return ct_prod(x, naxes, axes, c->keepdim);
    case R_MAX: return ct_max(x, naxes, axes, c->keepdim);
    case R_MIN: return ct_min(x, naxes, axes, c->keepdim);
    case R_ALL: return ct_all(x, naxes, axes, c->keepdim);
    case R_ANY: return ct_any(x, naxes, axes, c->keepdim);
    case R_VAR: return ct_var(x, naxes, axes, c->correction, c->keepdim);
    case R_STD: return ct_std(x, naxes, axes, c->correction, c->keepdim);
    case R_ARGMAX: return ct_argmax(x, axes ? axes[0] : CT_AXIS_NONE, c->keepdim);
    default: return ct_argmin(x, axes ? axes[0] : CT_AXIS_NONE, c->keepdim);
    }
}

#define CASE_FMT "%s %s shape rank %d mask 0x%x%s keepdim %d strided %d"
#define CASE_ARGS(c)                                                                               \
    op_names[(c)->op], ct_dtype_name((c)->dtype), (c)->ndim, (c)->mask,                            \
        (c)->null_axes ? " (axes NULL)" : "", (c)->keepdim, (c)->strided

/* Check the result's dtype, shape and values against the reference. */
static void check_result(const reduce_case *c, const ct_tensor *y, const double *expected) {
    int64_t shape[CT_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < c->ndim; d++) {
        if (!(c->mask >> d & 1u))
            shape[ndim++] = c->shape[d];
        else if (c->keepdim)
            shape[ndim++] = 1;
    }
    if (ct_dtype_of(y) != expected_dtype(c->op, c->dtype) || ct_ndim(y) != ndim ||
        memcmp(ct_shape(y), shape, sizeof(int64_t) * (size_t)ndim) != 0) {
        ct_test_fail(__FILE__, __LINE__, CASE_FMT ": result dtype %s rank %d", CASE_ARGS(c),
                     ct_dtype_name(ct_dtype_of(y)), ct_ndim(y));
        return;
    }
    double *got = ref_read(y);
    CHECK_NOT_NULL(got);
    for (int64_t i = 0; i < ct_numel(y); i++)
        if (!ref_close(got[i], expected[i], ct_dtype_of(y))) {
            ct_test_fail(__FILE__, __LINE__, CASE_FMT ": [%lld] = %.17g, expected %.17g",
                         CASE_ARGS(c), (long long)i, got[i], expected[i]);
            break;
        }
    free(got);
}

/* Run one case on x (holding values v) and check it. The axes are listed from the last to
 * the first, negative in every other case, to cover unordered and negative axes. */
static void check_case(const reduce_case *c, const ct_tensor *x, const double *v) {
    int axes[CT_MAX_DIMS], naxes = 0;
    for (int d = c->ndim - 1; d >= 0; d--)
        if (c->mask >> d & 1u) axes[naxes++] = (c->mask + c->keepdim) % 2 ? d - c->ndim : d;
    int64_t nout = 1, count = 1;
    for (int d = 0; d < c->ndim; d++) {
        if (c->mask >> d & 1u)
            count *= c->shape[d];
        else
            nout *= c->shape[d];
    }
    ct_tensor *y = run(c, x, naxes, c->null_axes ? NULL : axes);
    if (count == 0 && (c->op == R_MAX || c->op == R_MIN || c->op >= R_ARGMAX)) {
        if (y || ct_last_status() != CT_ERR_SHAPE || !strstr(ct_last_error(), "empty"))
            ct_test_fail(__FILE__, __LINE__, CASE_FMT ": expected CT_ERR_SHAPE, got %s",
                         CASE_ARGS(c), ct_status_name(ct_last_status()));
        ct_release(y);
        ct_clear_error();
        return;
    }
    if (!y) {
        ct_test_fail(__FILE__, __LINE__, CASE_FMT ": %s", CASE_ARGS(c), ct_last_error());
        return;
    }
    double *expected = calloc((size_t)nout + 1, sizeof(double));
    reference(c->op, v, c->ndim, c->shape, c->mask, c->correction, nout, expected);
    check_result(c, y, expected);
    free(expected);
    ct_release(y);
}

/* Every axis subset (and axes == NULL), keepdim on and off (only off for big shapes, which
 * are there for the kernels' parallel paths), contiguous and strided. */
static void sweep_shape(ct_device device, int op, ct_dtype dtype, int ndim, const int64_t *shape,
                        double correction, bool big) {
    int64_t n = ref_numel(ndim, shape);
    double *v = calloc((size_t)n + 1, sizeof(double));
    make_values(op, dtype, n, (uint64_t)(n * 31 + op * 7 + dtype), v);
    for (int strided = 0; strided < 2 && !ct_test_failed(); strided++) {
        ct_tensor *x = strided ? ref_tensor_strided(v, ndim, shape, dtype, device)
                               : ref_tensor(v, ndim, shape, dtype, device);
        if (!x) {
            ct_test_fail(__FILE__, __LINE__, "making the input failed: %s", ct_last_error());
            break;
        }
        bool arg = op == R_ARGMAX || op == R_ARGMIN;
        unsigned all = (1u << ndim) - 1;
        for (unsigned m = 0; m <= all + 1 && !ct_test_failed(); m++) {
            /* arg ops take one axis or every axis (m == all + 1: axes NULL / CT_AXIS_NONE) */
            if (arg && m <= all && (m & (m - 1)) != 0) continue;
            if (arg && m == 0) continue;
            for (int keep = 0; keep < 2 - big && !ct_test_failed(); keep++) {
                reduce_case c = {op,      dtype,     ndim,         shape,     m > all ? all : m,
                                 m > all, keep != 0, strided != 0, correction};
                check_case(&c, x, v);
            }
        }
        ct_release(x);
    }
    free(v);
}

static const int64_t shape_1d[] = {7};
static const int64_t shape_2d[] = {3, 5};
static const int64_t shape_3d[] = {2, 3, 4};
static const int64_t shape_4d[] = {3, 2, 1, 4};
static const int64_t shape_4d_b[] = {2, 3, 2, 3};
static const int64_t shape_empty_1d[] = {0};
static const int64_t shape_empty_3d[] = {2, 0, 3};
static const int64_t shape_big[] = {300, 257};      /* parallel over outputs / chunked */
static const int64_t shape_big_3d[] = {40, 33, 64}; /* 84480 elements */

/* Every shape for every dtype (big shapes for f32 and f64 only). */
static void sweep(ct_device device, int op, double correction) {
    struct {
        int ndim;
        const int64_t *shape;
        bool big;
    } shapes[] = {{0, NULL, false},           {1, shape_1d, false},       {2, shape_2d, false},
                  {3, shape_3d, false},       {4, shape_4d, false},       {4, shape_4d_b, false},
                  {1, shape_empty_1d, false}, {3, shape_empty_3d, false}, {2, shape_big, true},
                  {3, shape_big_3d, true}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int dt = 0; dt < CT_DTYPE_COUNT && !ct_test_failed(); dt++) {
            if (shapes[s].big && dt != CT_F32 && dt != CT_F64) continue;
            if (ct_dtype_is_complex((ct_dtype)dt)) continue; /* test_dtype_complex.c */
            sweep_shape(device, op, (ct_dtype)dt, shapes[s].ndim, shapes[s].shape, correction,
                        shapes[s].big);
        }
}

DEVICE_TEST(test_reduce_sum_matches_reference) { sweep(device, R_SUM, 0.0); }
DEVICE_TEST(test_reduce_mean_matches_reference) { sweep(device, R_MEAN, 0.0); }
DEVICE_TEST(test_reduce_prod_matches_reference) { sweep(device, R_PROD, 0.0); }
DEVICE_TEST(test_reduce_max_matches_reference) { sweep(device, R_MAX, 0.0); }
DEVICE_TEST(test_reduce_min_matches_reference) { sweep(device, R_MIN, 0.0); }
DEVICE_TEST(test_reduce_all_matches_reference) { sweep(device, R_ALL, 0.0); }
DEVICE_TEST(test_reduce_any_matches_reference) { sweep(device, R_ANY, 0.0); }
DEVICE_TEST(test_reduce_var_population_matches_reference) { sweep(device, R_VAR, 0.0); }
DEVICE_TEST(test_reduce_var_sample_matches_reference) { sweep(device, R_VAR, 1.0); }
DEVICE_TEST(test_reduce_std_matches_reference) {
    sweep(device, R_STD, 0.0);
    if (!ct_test_failed()) sweep(device, R_STD, 1.0);
}
DEVICE_TEST(test_reduce_argmax_matches_reference) { sweep(device, R_ARGMAX, 0.0); }
DEVICE_TEST(test_reduce_argmin_matches_reference) { sweep(device, R_ARGMIN, 0.0); }

/* The one value of a reduction to a single element, read back as a double. */
static double single(ct_tensor *y) {
    double v = NAN;
    if (y && ct_item(y, &v) != CT_OK) v = NAN;
    ct_release(y);
    return v;
}

/* 10^6 copies of 0.1 after one 1e8: a naive float32 loop returns 1e8 (every 0.1 is lost)
 * and a naive float64 loop is off by about 6e-3; the exact sum of the inputs is known. */
DEVICE_TEST(test_reduce_sum_is_careful) {
    const int64_t n = 1000001;
    float *f = malloc(sizeof(float) * (size_t)n);
    double *d = malloc(sizeof(double) * (size_t)n);
    CHECK(f && d);
    f[0] = 1e8f;
    d[0] = 1e8;
    for (int64_t i = 1; i < n; i++) f[i] = 0.1f, d[i] = 0.1;
    ct_tensor *xf = ct_from_data(f, 1, &n, CT_F32, device);
    ct_tensor *xd = ct_from_data(d, 1, &n, CT_F64, device);
    /* The same values through a stride-2 view (the generic path). */
    ct_tensor *xs = ref_tensor_strided(d, 1, &n, CT_F64, device);
    free(f);
    free(d);
    CHECK(xf && xd && xs);
    /* Exact in double: 1e6 * (double)0.1f has 24 significant bits times 10^6. */
    double exact_f = 1e8 + 1e6 * (double)0.1f;
    CHECK_NEAR(single(ct_sum(xf, 0, NULL, false)), exact_f, 8.0); /* one f32 ulp at 1e8 */
    CHECK_NEAR(single(ct_mean(xf, 0, NULL, false)), exact_f / (double)n, 1e-6);
    CHECK_NEAR(single(ct_sum(xd, 0, NULL, false)), 1e8 + 1e6 * 0.1, 1e-6);
    CHECK_NEAR(single(ct_sum(xs, 0, NULL, false)), 1e8 + 1e6 * 0.1, 1e-6);
    ct_release(xs);
    ct_release(xf);
    ct_release(xd);
}

/* A big full reduction runs in fixed chunks: the same bits on every run and for any number
 * of threads, and close to the float64 reference. */
DEVICE_TEST(test_reduce_big_sum_is_deterministic) {
    const int64_t n = 1 << 22;
    double *v = malloc(sizeof(double) * (size_t)n);
    CHECK_NOT_NULL(v);
    ref_random(v, n, 99, -1.0, 1.0);
    double expected = 0.0, lo = 0.0;
    for (int64_t i = 0; i < n; i++) { /* Kahan, so the reference itself is exact enough */
        double vi = ref_round(v[i], CT_F32), y = vi - lo, t = expected + y;
        lo = (t - expected) - y;
        expected = t;
    }
    ct_tensor *x = ref_tensor(v, 1, &n, CT_F32, device);
    free(v);
    CHECK_NOT_NULL(x);
    double first = single(ct_sum(x, 0, NULL, false));
    CHECK_NEAR(first, expected, fabs(expected) * 0x1p-23); /* within one f32 ulp */
    CHECK(single(ct_sum(x, 0, NULL, false)) == first);
#ifdef _OPENMP
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    double one_thread = single(ct_sum(x, 0, NULL, false));
    omp_set_num_threads(threads);
    CHECK(one_thread == first);
#endif
    ct_release(x);
}

/* var/std of data with a large mean (1e4 + noise): one-pass formulas lose most digits. */
DEVICE_TEST(test_reduce_var_std_large_mean) {
    int64_t shape[2] = {6, 1000};
    double v[6000], noise[6000];
    ref_random(noise, 6000, 5, -1.0, 1.0);
    for (int dt = 0; dt < 2; dt++) {
        ct_dtype dtype = dt ? CT_F64 : CT_F32;
        for (int i = 0; i < 6000; i++) v[i] = ref_round(1e4 + noise[i], dtype);
        ct_tensor *x = ref_tensor(v, 2, shape, dtype, device);
        CHECK_NOT_NULL(x);
        for (int correction = 0; correction < 2; correction++) {
            double var[6], sd[6];
            for (int r = 0; r < 6; r++) {
                double mean = 0.0, m2 = 0.0;
                for (int i = 0; i < 1000; i++) mean += v[r * 1000 + i];
                mean /= 1000.0;
                for (int i = 0; i < 1000; i++)
                    m2 += (v[r * 1000 + i] - mean) * (v[r * 1000 + i] - mean);
                var[r] = m2 / (1000.0 - correction);
                sd[r] = sqrt(var[r]);
            }
            int axis = -1;
            ct_tensor *y = ct_var(x, 1, &axis, correction, false);
            CHECK_TENSOR(y, var);
            ct_release(y);
            y = ct_std(x, 1, &axis, correction, true);
            CHECK_TENSOR(y, sd);
            ct_release(y);
        }
        ct_release(x);
    }
}

DEVICE_TEST(test_reduce_var_correction_past_count_is_numpy) {
    double two[2] = {1.0, 2.0}, one[1] = {5.0};
    int64_t n2 = 2, n1 = 1;
    ct_tensor *x2 = ref_tensor(two, 1, &n2, CT_F64, device);
    ct_tensor *x1 = ref_tensor(one, 1, &n1, CT_F64, device);
    CHECK(x2 && x1);
    CHECK_NEAR(single(ct_var(x2, 0, NULL, 1.0, false)), 0.5, 1e-15);
    double inf = single(ct_var(x2, 0, NULL, 2.0, false)); /* divisor max(2 - 2, 0) = 0 */
    CHECK(isinf(inf) && inf > 0);
    CHECK(isinf(single(ct_std(x2, 0, NULL, 3.0, false))));
    CHECK(isnan(single(ct_var(x1, 0, NULL, 1.0, false)))); /* 0 / 0 */
    CHECK_NEAR(single(ct_var(x1, 0, NULL, 0.0, false)), 0.0, 0.0);
    ct_release(x2);
    ct_release(x1);
}

DEVICE_TEST(test_reduce_argmax_ties_pick_first) {
    double v[8] = {3, 1, 3, 2, /* row 1 */ 0, 7, 7, 0};
    int64_t shape[2] = {2, 4};
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        if (dt == CT_BOOL || dt == CT_U8) continue;      /* values do not fit their range */
        if (ct_dtype_is_complex((ct_dtype)dt)) continue; /* not ordered */
        ct_tensor *x = ref_tensor(v, 2, shape, (ct_dtype)dt, device);
        CHECK_NOT_NULL(x);
        double rows_max[2] = {0, 1}, rows_min[2] = {1, 0}, cols_max[4] = {0, 1, 1, 0};
        ct_tensor *y = ct_argmax(x, 1, false);
        CHECK_TENSOR(y, rows_max);
        ct_release(y);
        y = ct_argmin(x, -1, false);
        CHECK_TENSOR(y, rows_min);
        ct_release(y);
        y = ct_argmax(x, 0, false);
        CHECK_TENSOR(y, cols_max);
        ct_release(y);
        CHECK_NEAR(single(ct_argmax(x, CT_AXIS_NONE, false)), 5.0, 0.0);
        CHECK_NEAR(single(ct_argmin(x, CT_AXIS_NONE, false)), 4.0, 0.0);
        ct_release(x);
    }
}

/* NaN counts as the extremum (NumPy): max/min give NaN, argmax/argmin the first NaN. */
DEVICE_TEST(test_reduce_nan_is_extremum) {
    double v[5] = {1.0, NAN, 5.0, NAN, -2.0};
    int64_t n = 5;
    ct_dtype dtypes[4] = {CT_F32, CT_F64, CT_F16, CT_BF16};
    for (int k = 0; k < 4; k++) {
        ct_tensor *x = ref_tensor(v, 1, &n, dtypes[k], device);
        CHECK_NOT_NULL(x);
        CHECK(isnan(single(ct_max(x, 0, NULL, false))));
        CHECK(isnan(single(ct_min(x, 0, NULL, false))));
        CHECK_NEAR(single(ct_argmax(x, 0, false)), 1.0, 0.0);
        CHECK_NEAR(single(ct_argmin(x, CT_AXIS_NONE, false)), 1.0, 0.0);
        CHECK(single(ct_any(x, 0, NULL, false)) == 1.0);
        ct_release(x);
    }
}

/* Empty reductions: the identities, NaN means, and keepdim shapes. */
DEVICE_TEST(test_reduce_empty_identities) {
    int64_t shape[2] = {3, 0};
    ct_tensor *x = ct_zeros(2, shape, CT_F32, device);
    CHECK_NOT_NULL(x);
    int axis = 1;
    double zeros[3] = {0, 0, 0}, ones[3] = {1, 1, 1}, nans[3] = {NAN, NAN, NAN};
    ct_tensor *y = ct_sum(x, 1, &axis, true);
    CHECK_TENSOR(y, zeros);
    CHECK(ct_ndim(y) == 2 && ct_shape(y)[0] == 3 && ct_shape(y)[1] == 1);
    ct_release(y);
    y = ct_prod(x, 1, &axis, false);
    CHECK_TENSOR(y, ones);
    ct_release(y);
    y = ct_all(x, 1, &axis, false);
    CHECK_TENSOR(y, ones);
    ct_release(y);
    y = ct_any(x, 1, &axis, false);
    CHECK_TENSOR(y, zeros);
    ct_release(y);
    y = ct_mean(x, 1, &axis, false);
    CHECK_TENSOR(y, nans);
    ct_release(y);
    y = ct_std(x, 1, &axis, 0.0, false);
    CHECK_TENSOR(y, nans);
    ct_release(y);
    /* Reducing the non-empty axis gives an empty result, which is fine even for max. */
    axis = 0;
    y = ct_max(x, 1, &axis, false);
    CHECK(y && ct_numel(y) == 0 && ct_ndim(y) == 1);
    ct_release(y);
    ct_release(x);
}

DEVICE_TEST(test_reduce_errors) {
    int64_t shape[2] = {2, 3};
    ct_tensor *x = ct_ones(2, shape, CT_F32, device);
    CHECK_NOT_NULL(x);
    int bad[1] = {2}, dup[2] = {0, -2}, neg[1] = {-3};
    CHECK(ct_sum(x, 1, bad, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_sum: axis 2 is out of range for a tensor of rank 2");
    CHECK(ct_mean(x, 1, neg, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_mean: axis -3 is out of range");
    CHECK(ct_max(x, 2, dup, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_max: axis 0 is given twice");
    CHECK(ct_var(x, -1, bad, 1.0, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_var: naxes is -1");
    CHECK(ct_std(x, 3, dup, 1.0, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_std: naxes is 3");
    CHECK(ct_argmax(x, 2, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_argmax: axis 2 is out of range");
    CHECK(ct_argmin(NULL, 0, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_argmin: argument 1 is NULL");
    /* A NULL input keeps the first error of a chain. */
    CHECK(ct_any(ct_sum(x, 1, bad, false), 0, NULL, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_sum: axis 2");
    ct_tensor *s = ct_scalar(4.0, CT_F64, device);
    CHECK_NOT_NULL(s);
    int zero = 0;
    CHECK(ct_prod(s, 1, &zero, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "rank 0");
    ct_release(s);
    int64_t empty_shape[2] = {0, 3};
    ct_tensor *e = ct_zeros(2, empty_shape, CT_F32, device);
    CHECK_NOT_NULL(e);
    CHECK(ct_max(e, 0, NULL, false) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_max: the reduced axes are empty");
    CHECK(ct_argmin(e, 0, true) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_argmin: the reduced axes are empty");
    ct_release(e);
    ct_release(x);
}

/* One element decides the result of a big reduction (the chunked parallel path), wherever
 * it sits: all, any, prod, max, min, argmax and argmin, in the float and integer domains. */
DEVICE_TEST(test_reduce_big_single_element_decides) {
    const int64_t n = 200003;
    double *v = malloc(sizeof(double) * (size_t)n);
    CHECK_NOT_NULL(v);
    int64_t positions[3] = {0, n / 2 + 7, n - 1};
    ct_dtype dtypes[2] = {CT_F32, CT_I32};
    for (int p = 0; p < 3 && !ct_test_failed(); p++)
        for (int k = 0; k < 2 && !ct_test_failed(); k++) {
            int64_t at = positions[p];
            for (int64_t i = 0; i < n; i++) v[i] = 1.0;
            v[at] = 0.0;
            ct_tensor *ones = ref_tensor(v, 1, &n, dtypes[k], device);
            v[at] = 3.0;
            ct_tensor *three = ref_tensor(v, 1, &n, dtypes[k], device);
            for (int64_t i = 0; i < n; i++) v[i] = 0.0;
            v[at] = -5.0;
            ct_tensor *low = ref_tensor(v, 1, &n, dtypes[k], device);
            v[at] = 5.0;
            ct_tensor *high = ref_tensor(v, 1, &n, dtypes[k], device);
            if (ones && three && low && high) {
                CHECK(single(ct_all(ones, 0, NULL, false)) == 0.0);
                CHECK(single(ct_any(high, 0, NULL, false)) == 1.0);
                CHECK(single(ct_prod(three, 0, NULL, false)) == 3.0);
                CHECK(single(ct_max(high, 0, NULL, false)) == 5.0);
                CHECK(single(ct_min(low, 0, NULL, false)) == -5.0);
                CHECK(single(ct_argmax(high, CT_AXIS_NONE, false)) == (double)at);
                CHECK(single(ct_argmin(low, 0, false)) == (double)at);
            } else {
                ct_test_fail(__FILE__, __LINE__, "making the inputs failed: %s", ct_last_error());
            }
            ct_release(ones);
            ct_release(three);
            ct_release(low);
            ct_release(high);
        }
    free(v);
}

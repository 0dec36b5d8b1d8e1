/* ct_index_add, ct_index_copy and ct_scatter_add against references computed here with index
 * arithmetic in doubles: every dtype (integers wrap, bool is a logical or), every axis of ranks 1
 * to 3, repeated and negative indices, non-contiguous operands, empty indices, the parallel path
 * with many repeats, and every error with its message. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

/* Values that dtype holds exactly, small enough that sums stay exact in every dtype. */
static void dtype_values(double *v, int64_t n, ct_dtype dtype, uint64_t seed) {
    ref_random(v, n, seed, -8.0, 8.0);
    for (int64_t i = 0; i < n; i++) {
        if (dtype == CT_BOOL)
            v[i] = v[i] > 0;
        else if (ct_dtype_is_unsigned(dtype))
            v[i] = floor(fabs(v[i]));
        else
            v[i] = floor(v[i]);
    }
}

/* n indices for an axis of size `size`, negative ones included, with repeats. */
static void index_values(double *v, int64_t n, int64_t size, uint64_t seed) {
    ref_random(v, n, seed, (double)-size, (double)size);
    for (int64_t i = 0; i < n; i++) v[i] = floor(v[i]);
    if (n > 2) v[n - 1] = v[0]; /* at least one repeat */
}

static int64_t wrap(double index, int64_t size) {
    return index < 0 ? (int64_t)index + size : (int64_t)index;
}

/* out += v in dtype's arithmetic (bool: or; u8 wraps). */
static double add_as(double out, double v, ct_dtype dtype) {
    if (dtype == CT_BOOL) return out != 0 || v != 0;
    if (dtype == CT_U8) return fmod(out + v, 256.0);
    return out + v;
}

/* ---- index_add and index_copy ---- */

/* ct_index_add (a copy; x is left alone) or, with `copy`, ct_index_copy (into x) against
 * the reference: additions accumulate; of repeated indices in a copy the last one's value
 * stays (C order visits a later k later at every position; index_values always repeats). */
static void check_along(ct_device device, int ndim, const int64_t *shape, int axis, ct_dtype dtype,
                        int64_t k, uint64_t seed, bool copy) {
    int64_t src_shape[8], at[8];
    for (int d = 0; d < ndim; d++) src_shape[d] = d == axis ? k : shape[d];
    int64_t n = ref_numel(ndim, shape), m = ref_numel(ndim, src_shape);
    double x[256], src[256], index[16], expected[256];
    dtype_values(x, n, dtype, seed);
    dtype_values(src, m, dtype, seed + 1);
    index_values(index, k, shape[axis], seed + 2);
    for (int64_t i = 0; i < n; i++) expected[i] = x[i];
    for (int64_t i = 0; i < m; i++) {
        ref_unravel(i, ndim, src_shape, at);
        at[axis] = wrap(index[at[axis]], shape[axis]);
        int64_t o = ref_ravel(ndim, shape, at);
        expected[o] = copy ? src[i] : add_as(expected[o], src[i], dtype);
    }
    bool odd = (seed + (uint64_t)axis) % 2;
    ct_tensor *tx = (odd ? ref_tensor_strided : ref_tensor)(x, ndim, shape, dtype, device);
    ct_tensor *ts = (odd ? ref_tensor : ref_tensor_strided)(src, ndim, src_shape, dtype, device);
    ct_tensor *ti = ref_tensor_strided(index, 1, &k, odd ? CT_I32 : CT_I64, device);
    if (copy) {
        CHECK_OK(ct_index_copy(tx, odd ? axis - ndim : axis, ti, ts));
        CHECK_TENSOR(tx, expected);
    } else {
        ct_tensor *out = ct_index_add(tx, odd ? axis - ndim : axis, ti, ts);
        CHECK_TENSOR(out, expected);
        CHECK(ct_dtype_of(out) == dtype && ct_ndim(out) == ndim);
        ct_release(out);
        double *again = ref_read(tx); /* x itself is left alone */
        CHECK(again);
        for (int64_t i = 0; i < n; i++) CHECK(again[i] == x[i]);
        free(again);
    }
    ct_release(ti);
    ct_release(ts);
    ct_release(tx);
}

/* check_along on ranks 1 to 3, every axis and every dtype: index_add, or index_copy when
 * assign. */
static void check_every_dtype_and_axis(ct_device device, bool assign) {
    static const struct {
        int ndim;
        int64_t shape[3];
    } cases[] = {{1, {6}}, {2, {3, 4}}, {3, {2, 3, 4}}};
    for (size_t c = 0; c < 3; c++)
        for (int axis = 0; axis < cases[c].ndim; axis++)
            for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
                check_along(device, cases[c].ndim, cases[c].shape, axis, (ct_dtype)dt, 5,
                            c * 100 + (uint64_t)(axis * 10 + dt), assign);
                if (ct_test_failed()) return;
            }
}

DEVICE_TEST(test_ops_index_add_index_add_every_dtype_and_axis) {
    check_every_dtype_and_axis(device, false);
}

DEVICE_TEST(test_ops_index_add_index_add_empty_index) {
    int64_t shape[2] = {3, 4};
    check_along(device, 2, shape, 0, CT_F32, 0, 4, false);
}

/* An embedding-style gradient: 4000 rows of 16 added into 50 rows, each hit many times,
 * big enough for the OpenMP split. Values are integers, so float sums are exact in any
 * order. */
DEVICE_TEST(test_ops_index_add_index_add_parallel_repeats) {
    int64_t k = 4000, d = 16, rows = 50;
    double *src = malloc(sizeof(double) * (size_t)(k * d)), *index = malloc(sizeof(double) * 4000);
    double expected[800] = {0};
    CHECK(src && index);
    dtype_values(src, k * d, CT_F32, 1);
    ref_random(index, k, 2, 0.0, (double)rows);
    for (int64_t i = 0; i < k; i++) {
        index[i] = floor(index[i]);
        for (int64_t j = 0; j < d; j++) expected[(int64_t)index[i] * d + j] += src[i * d + j];
    }
    ct_tensor *x = ct_zeros(2, (int64_t[]){rows, d}, CT_F32, device);
    ct_tensor *ts = ref_tensor(src, 2, (int64_t[]){k, d}, CT_F32, device);
    ct_tensor *ti = ref_tensor(index, 1, &k, CT_I64, device);
    ct_tensor *out = ct_index_add(x, 0, ti, ts);
    CHECK_TENSOR(out, expected);
    ct_release(out), ct_release(ti), ct_release(ts), ct_release(x);
    free(index);
    free(src);
}

DEVICE_TEST(test_ops_index_add_index_add_errors) {
    ct_tensor *x = ct_zeros(2, (int64_t[]){3, 4}, CT_F32, device);
    ct_tensor *src = ct_ones(2, (int64_t[]){2, 4}, CT_F32, device);
    ct_tensor *src64 = ct_ones(2, (int64_t[]){2, 4}, CT_F64, device);
    ct_tensor *bad = ref_tensor((double[]){0, 3}, 1, (int64_t[]){2}, CT_I64, device);
    ct_tensor *low = ref_tensor((double[]){-4, 0}, 1, (int64_t[]){2}, CT_I32, device);
    ct_tensor *good = ref_tensor((double[]){0, 2}, 1, (int64_t[]){2}, CT_I32, device);
    ct_tensor *fidx = ct_zeros(1, (int64_t[]){2}, CT_F32, device);
    ct_tensor *idx2 = ct_zeros(2, (int64_t[]){1, 2}, CT_I64, device);
    CHECK(ct_index_add(x, 0, bad, src) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_index_add: index 3 is out of range for an axis of size 3");
    CHECK(ct_index_add(x, 0, low, src) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "index -4 is out of range");
    CHECK(ct_index_add(x, 0, good, src64) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_index_add: the source has dtype float64 but x has float32");
    CHECK(ct_index_add(x, 0, fidx, src) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_index_add: the index has dtype float32");
    CHECK(ct_index_add(x, 0, idx2, src) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "the index has rank 2; it must be 1-D");
    CHECK(ct_index_add(x, 1, good, src) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "axis 0 of the source has size 2; it must be 3");
    CHECK(ct_index_add(x, 2, good, src) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_index_add: axis 2 is out of range");
    CHECK(ct_index_add(x, 0, good, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_index_add: argument 3 is NULL");
    /* An empty source (another axis is 0) adds nothing, but its indices are checked too. */
    ct_tensor *x0 = ct_zeros(2, (int64_t[]){3, 0}, CT_F32, device);
    ct_tensor *src0 = ct_ones(2, (int64_t[]){2, 0}, CT_F32, device);
    CHECK(ct_index_add(x0, 0, bad, src0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_index_add: index 3 is out of range for an axis of size 3");
    CHECK(ct_index_add(x0, 0, low, src0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "index -4 is out of range");
    ct_tensor *sum0 = ct_index_add(x0, 0, good, src0);
    CHECK(sum0 && ct_ndim(sum0) == 2 && ct_shape(sum0)[0] == 3 && ct_shape(sum0)[1] == 0);
    /* The check allocates nothing as long as the axis: this one would need a terabyte. */
    ct_tensor *x_far = ct_zeros(2, (int64_t[]){INT64_C(1) << 40, 0}, CT_F32, device);
    ct_tensor *sum_far = ct_index_add(x_far, 0, bad, src0);
    CHECK(sum_far && ct_shape(sum_far)[0] == INT64_C(1) << 40 && ct_shape(sum_far)[1] == 0);
    ct_release(sum_far), ct_release(x_far);
    ct_release(sum0), ct_release(src0), ct_release(x0);
    ct_release(idx2), ct_release(fidx), ct_release(good), ct_release(low), ct_release(bad);
    ct_release(src64), ct_release(src), ct_release(x);
}

DEVICE_TEST(test_ops_index_add_index_copy_every_dtype_and_axis) {
    check_every_dtype_and_axis(device, true);
    if (ct_test_failed()) return;
    int64_t shape[2] = {3, 4};
    check_along(device, 2, shape, 1, CT_F32, 0, 7, true); /* an empty index writes nothing */
}

/* index_copy with 4000 positions stored into 50 rows, each named many times, on axis 0 and
 * on axis 1 (source (16, 4000)): of each row's writers the last on the axis stays, however
 * many threads the device runs them on (CUDA: a mark pass and a store pass). */
DEVICE_TEST(test_ops_index_add_index_copy_parallel_repeats) {
    int64_t k = 4000, d = 16, rows = 50;
    double *src = malloc(sizeof(double) * (size_t)(k * d)), *index = malloc(sizeof(double) * 4000);
    double expected[800], expected_t[800];
    CHECK(src && index);
    dtype_values(src, k * d, CT_F32, 3);
    ref_random(index, k, 4, (double)-rows, (double)rows);
    for (int64_t i = 0; i < rows * d; i++) expected[i] = expected_t[i] = -100;
    for (int64_t i = 0; i < k; i++) {
        index[i] = floor(index[i]);
        int64_t at = wrap(index[i], rows);
        for (int64_t j = 0; j < d; j++) {
            expected[at * d + j] = src[i * d + j];      /* x (rows, d), source (k, d) */
            expected_t[j * rows + at] = src[j * k + i]; /* x (d, rows), source (d, k) */
        }
    }
    ct_tensor *x = ct_full(2, (int64_t[]){rows, d}, -100, CT_F32, device);
    ct_tensor *xt = ct_full(2, (int64_t[]){d, rows}, -100, CT_F32, device);
    ct_tensor *ts = ref_tensor(src, 2, (int64_t[]){k, d}, CT_F32, device);
    ct_tensor *tst = ref_tensor(src, 2, (int64_t[]){d, k}, CT_F32, device);
    ct_tensor *ti = ref_tensor(index, 1, &k, CT_I64, device);
    free(index);
    free(src);
    ct_status rows_status = ct_index_copy(x, 0, ti, ts);
    ct_status columns_status = ct_index_copy(xt, 1, ti, tst);
    ct_release(ti), ct_release(ts), ct_release(tst);
    CHECK_OK(rows_status);
    CHECK_OK(columns_status);
    CHECK_TENSOR(x, expected);
    CHECK_TENSOR(xt, expected_t);
    ct_release(x), ct_release(xt);
}

DEVICE_TEST(test_ops_index_add_index_copy_errors) {
    double before[6] = {1, 2, 3, 4, 5, 6};
    ct_tensor *x = ref_tensor(before, 2, (int64_t[]){3, 2}, CT_F32, device);
    ct_tensor *src = ct_zeros(2, (int64_t[]){2, 2}, CT_F32, device);
    ct_tensor *src64 = ct_zeros(2, (int64_t[]){2, 2}, CT_F64, device);
    ct_tensor *bad = ref_tensor((double[]){0, 3}, 1, (int64_t[]){2}, CT_I64, device);
    ct_tensor *good = ref_tensor((double[]){2, -3}, 1, (int64_t[]){2}, CT_I32, device);
    CHECK(ct_index_copy(x, 0, bad, src) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_index_copy: index 3 is out of range for an axis of size 3");
    CHECK_TENSOR(x, before); /* index 0 was not written: the check comes first */
    CHECK(ct_index_copy(x, 0, good, src64) == CT_ERR_DTYPE);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_index_copy: the source has dtype float64 but x has float32");
    CHECK(ct_index_copy(x, 1, good, src) == CT_ERR_SHAPE);
    CHECK_ERROR(CT_ERR_SHAPE, "axis 0 of the source has size 2; it must be 3");
    CHECK(ct_index_copy(NULL, 0, good, src) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_index_copy: argument 1 is NULL");
    /* A source that is a view of x itself is read before it is written. */
    ct_tensor *rows = ct_slice(x, 0, 0, 2, 1);
    CHECK_OK(ct_index_copy(x, 0, good, rows));
    CHECK_TENSOR(x, ((double[]){3, 4, 3, 4, 1, 2}));
    CHECK_OK(ct_set_requires_grad(x, true));
    CHECK(ct_index_copy(x, 0, good, src) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "ct_index_copy: the destination is a leaf that requires grad");
    ct_release(rows), ct_release(good), ct_release(bad), ct_release(src64), ct_release(src);
    ct_release(x);
}

/* ---- scatter_add ---- */

/* index (index_shape) into an axis of x (shape), src larger than index on the first axis. */
static void check_scatter_add(ct_device device, int ndim, const int64_t *shape, int axis,
                              ct_dtype dtype, uint64_t seed) {
    int64_t index_shape[8], src_shape[8], at[8];
    for (int d = 0; d < ndim; d++) {
        index_shape[d] = d == axis ? shape[d] + 2 : (shape[d] + 1) / 2;
        src_shape[d] = index_shape[d] + (d == 0);
    }
    int64_t n = ref_numel(ndim, shape), m = ref_numel(ndim, index_shape);
    int64_t ms = ref_numel(ndim, src_shape);
    double x[256], src[256], index[256], expected[256];
    dtype_values(x, n, dtype, seed);
    dtype_values(src, ms, dtype, seed + 1);
    index_values(index, m, shape[axis], seed + 2);
    for (int64_t i = 0; i < n; i++) expected[i] = x[i];
    for (int64_t i = 0; i < m; i++) {
        ref_unravel(i, ndim, index_shape, at);
        double v = src[ref_ravel(ndim, src_shape, at)];
        at[axis] = wrap(index[i], shape[axis]);
        int64_t o = ref_ravel(ndim, shape, at);
        expected[o] = add_as(expected[o], v, dtype);
    }
    bool odd = (seed + (uint64_t)axis) % 2;
    ct_tensor *tx = (odd ? ref_tensor_strided : ref_tensor)(x, ndim, shape, dtype, device);
    ct_tensor *ts = (odd ? ref_tensor : ref_tensor_strided)(src, ndim, src_shape, dtype, device);
    ct_tensor *ti = (odd ? ref_tensor_strided : ref_tensor)(index, ndim, index_shape,
                                                            odd ? CT_I64 : CT_I32, device);
    ct_tensor *out = ct_scatter_add(tx, odd ? axis - ndim : axis, ti, ts);
    CHECK_TENSOR(out, expected);
    CHECK(ct_dtype_of(out) == dtype && ct_ndim(out) == ndim);
    ct_release(out);
    ct_release(ti);
    ct_release(ts);
    ct_release(tx);
}

DEVICE_TEST(test_ops_index_add_scatter_add_every_dtype_and_axis) {
    static const struct {
        int ndim;
        int64_t shape[3];
    } cases[] = {{1, {5}}, {2, {3, 4}}, {3, {2, 3, 4}}};
    for (size_t c = 0; c < 3; c++)
        for (int axis = 0; axis < cases[c].ndim; axis++)
            for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
                check_scatter_add(device, cases[c].ndim, cases[c].shape, axis, (ct_dtype)dt,
                                  c * 100 + (uint64_t)(axis * 10 + dt));
                if (ct_test_failed()) return;
            }
}

DEVICE_TEST(test_ops_index_add_scatter_add_errors) {
    ct_tensor *x = ct_zeros(2, (int64_t[]){3, 4}, CT_F32, device);
    ct_tensor *src = ct_ones(2, (int64_t[]){3, 4}, CT_F32, device);
    ct_tensor *bad = ref_tensor((double[]){0, 5}, 2, (int64_t[]){1, 2}, CT_I64, device);
    ct_tensor *wide = ct_zeros(2, (int64_t[]){1, 5}, CT_I64, device);
    ct_tensor *flat = ct_zeros(1, (int64_t[]){2}, CT_I64, device);
    ct_tensor *src1 = ct_ones(1, (int64_t[]){4}, CT_F32, device);
    CHECK(ct_scatter_add(x, 1, bad, src) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG,
                "ct_scatter_add: index 5 is out of range for an axis of size 4");
    CHECK(ct_scatter_add(x, 0, wide, src) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_scatter_add: axis 1 of the index has size 5");
    CHECK(ct_scatter_add(x, 0, flat, src) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "the index has rank 1 but x has rank 2");
    CHECK(ct_scatter_add(x, 0, bad, src1) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_scatter_add: the source has rank 1 but x has rank 2");
    ct_release(src1), ct_release(flat), ct_release(wide), ct_release(bad), ct_release(src);
    ct_release(x);
}

/* ---- gradient checks (float64, central differences) ---- */

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

typedef struct {
    int axis;
    const ct_tensor *index;
    bool scatter;
} add_case;

static ct_tensor *apply_add(ct_tensor *const *in, void *context) {
    const add_case *c = context;
    return (c->scatter ? ct_scatter_add : ct_index_add)(in[0], c->axis, c->index, in[1]);
}

DEVICE_TEST(test_ops_index_add_gradcheck) {
    double index[4] = {2, 0, 2, -1};
    ct_tensor *idx = ref_tensor(index, 1, (int64_t[]){4}, CT_I64, device);
    add_case k = {1, idx, false};
    ct_tensor *in[2] = {ct_gradcheck_leaf(device, 2, (int64_t[]){2, 3}, 1, -1.0, 1.0, true),
                        ct_gradcheck_leaf(device, 2, (int64_t[]){2, 4}, 2, -1.0, 1.0, true)};
    bool ok = idx && in[0] && in[1] && ct_gradcheck(apply_add, 2, in, &k, EPS, ATOL, RTOL);
    ct_release(in[1]), ct_release(in[0]), ct_release(idx);
    CHECK(ok);
}

/* The source is larger than the index: its elements beyond get no gradient. */
DEVICE_TEST(test_ops_index_add_scatter_add_gradcheck) {
    double index[4] = {1, 1, 0, 2};
    ct_tensor *idx = ref_tensor(index, 2, (int64_t[]){2, 2}, CT_I32, device);
    add_case k = {0, idx, true};
    ct_tensor *in[2] = {ct_gradcheck_leaf(device, 2, (int64_t[]){3, 2}, 3, -1.0, 1.0, true),
                        ct_gradcheck_leaf(device, 2, (int64_t[]){3, 3}, 4, -1.0, 1.0, true)};
    bool ok = idx && in[0] && in[1] && ct_gradcheck(apply_add, 2, in, &k, EPS, ATOL, RTOL);
    ct_release(in[1]), ct_release(in[0]), ct_release(idx);
    CHECK(ok);
}

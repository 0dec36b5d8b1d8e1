/* Indexing and joining ops (index_select, gather, concat, stack, split) against references
 * computed here with index arithmetic in doubles: every dtype, ranks 0..4, negative axes and
 * indices, non-contiguous operands, empty tensors, the parallel gather path, and every
 * error with its message. */
#include <stdlib.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ct_ref.h"

/* n values that dtype holds exactly (integers for integer dtypes, 0/1 for bool). */
static void dtype_values(double *v, int64_t n, ct_dtype dtype, uint64_t seed) {
    ref_random(v, n, seed, -60.0, 60.0);
    for (int64_t i = 0; i < n; i++) {
        if (dtype == CT_BOOL)
            v[i] = v[i] > 0;
        else if (ct_dtype_is_unsigned(dtype))
            v[i] = floor(fabs(v[i]) * 2);
        else if (!ct_dtype_is_floating(dtype))
            v[i] = floor(v[i]);
        v[i] = ref_round(v[i], dtype);
    }
}

/* n valid indices for an axis of size `size`, negative ones included. */
static void index_values(double *v, int64_t n, int64_t size, uint64_t seed) {
    ref_random(v, n, seed, (double)-size, (double)size);
    for (int64_t i = 0; i < n; i++) v[i] = floor(v[i]);
}

static int64_t wrap(double index, int64_t size) {
    return index < 0 ? (int64_t)index + size : (int64_t)index;
}

static bool same_shape(const ct_tensor *t, int ndim, const int64_t *shape) {
    if (ct_ndim(t) != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (ct_shape(t)[d] != shape[d]) return false;
    return true;
}

static ct_tensor *make(const double *v, int ndim, const int64_t *shape, ct_dtype dtype,
                       ct_device device, bool strided) {
    return (strided ? ref_tensor_strided : ref_tensor)(v, ndim, shape, dtype, device);
}

/* ---- index_select ---- */

/* out has x's shape with shape[axis] = n; out[.., k, ..] = x[.., wrap(index[k]), ..]. */
static void index_select_reference(const double *x, int ndim, const int64_t *shape, int axis,
                                   const double *index, int64_t n, double *out) {
    int64_t out_shape[8], at[8];
    for (int d = 0; d < ndim; d++) out_shape[d] = d == axis ? n : shape[d];
    for (int64_t i = 0; i < ref_numel(ndim, out_shape); i++) {
        ref_unravel(i, ndim, out_shape, at);
        at[axis] = wrap(index[at[axis]], shape[axis]);
        out[i] = x[ref_ravel(ndim, shape, at)];
    }
}

/* Select along every axis (as given and negative) of x for one dtype. */
static void check_index_select(ct_device device, int ndim, const int64_t *shape, ct_dtype dtype,
                               int64_t n, uint64_t seed) {
    double x_values[512], index[16], expected[1024];
    dtype_values(x_values, ref_numel(ndim, shape), dtype, seed);
    for (int axis = 0; axis < ndim; axis++) {
        /* An axis of size 0 has nothing to pick: select no rows from it. */
        int64_t m = shape[axis] ? n : 0;
        index_values(index, m, shape[axis], seed + (uint64_t)axis);
        bool odd = (axis + (int)seed) % 2;
        ct_tensor *x = make(x_values, ndim, shape, dtype, device, odd);
        ct_tensor *idx = make(index, 1, &m, odd ? CT_I32 : CT_I64, device, !odd);
        index_select_reference(x_values, ndim, shape, axis, index, m, expected);
        ct_tensor *y = ct_index_select(x, axis - (odd ? ndim : 0), idx);
        CHECK_TENSOR(y, expected);
        CHECK(ct_dtype_of(y) == dtype && ct_size(y, axis) == m);
        ct_release(y);
        ct_release(idx);
        ct_release(x);
    }
}

DEVICE_TEST(test_ops_index_index_select_every_dtype) {
    int64_t shape[3] = {3, 4, 5};
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        check_index_select(device, 3, shape, (ct_dtype)dt, 6, 10 + (uint64_t)dt);
        if (ct_test_failed()) return;
    }
}

DEVICE_TEST(test_ops_index_index_select_ranks_and_empty) {
    static const struct {
        int ndim;
        int64_t shape[4];
        int64_t n;
    } cases[] = {
        {1, {5}, 7}, {2, {2, 3}, 1}, {2, {2, 3}, 0}, {3, {2, 0, 3}, 4}, {4, {2, 3, 4, 2}, 5},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        check_index_select(device, cases[c].ndim, cases[c].shape, CT_F64, cases[c].n, 3 + c);
        if (ct_test_failed()) return;
    }
}

/* An embedding-style lookup big enough for the kernel's OpenMP split. */
DEVICE_TEST(test_ops_index_index_select_parallel_rows) {
    int64_t shape[2] = {1000, 64}, n = 700;
    double *x_values = malloc(64000 * sizeof(double)), index[700];
    double *expected = malloc(700 * 64 * sizeof(double));
    CHECK(x_values && expected);
    dtype_values(x_values, 64000, CT_F32, 77);
    index_values(index, n, 1000, 78);
    index_select_reference(x_values, 2, shape, 0, index, n, expected);
    ct_tensor *x = ref_tensor(x_values, 2, shape, CT_F32, device);
    ct_tensor *idx = ref_tensor(index, 1, &n, CT_I64, device);
    ct_tensor *y = ct_index_select(x, 0, idx);
    CHECK_TENSOR(y, expected);
    ct_release(y);
    ct_release(idx);
    ct_release(x);
    free(expected);
    free(x_values);
}

DEVICE_TEST(test_ops_index_index_select_errors) {
    int64_t shape[2] = {3, 4};
    ct_tensor *x = ct_zeros(2, shape, CT_F32, device);
    ct_tensor *too_big = ref_tensor((double[]){0, 5, 1}, 1, (int64_t[]){3}, CT_I64, device);
    ct_tensor *too_small = ref_tensor((double[]){-4}, 1, (int64_t[]){1}, CT_I32, device);
    ct_tensor *as_float = ct_zeros(1, (int64_t[]){2}, CT_F32, device);
    ct_tensor *two_d = ct_zeros(2, (int64_t[]){1, 2}, CT_I64, device);
    CHECK(ct_index_select(x, 0, too_big) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG,
                "ct_index_select: index 5 is out of range for an axis of size 3");
    CHECK(ct_index_select(x, -2, too_small) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "index -4 is out of range for an axis of size 3");
    CHECK(ct_index_select(x, 0, as_float) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE,
                "ct_index_select: the index has dtype float32; it must be CT_I32 or CT_I64");
    CHECK(ct_index_select(x, 0, two_d) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "the index has rank 2; it must be 1-D");
    CHECK(ct_index_select(x, 2, too_small) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_index_select: axis 2 is out of range");
    CHECK(ct_index_select(NULL, 0, too_small) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_index_select: argument 1 is NULL");
    CHECK(ct_index_select(x, 0, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_index_select: argument 2 is NULL");
    ct_tensor *empty = ct_zeros(2, (int64_t[]){0, 4}, CT_F32, device);
    CHECK(ct_index_select(empty, 0, too_small) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "out of range for an axis of size 0");
    /* An empty result (another axis is 0) copies nothing, but its indices are checked too. */
    ct_tensor *no_columns = ct_zeros(2, (int64_t[]){3, 0}, CT_F32, device);
    CHECK(ct_index_select(no_columns, 0, too_big) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG,
                "ct_index_select: index 5 is out of range for an axis of size 3");
    CHECK(ct_index_select(no_columns, 0, too_small) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "index -4 is out of range for an axis of size 3");
    ct_tensor *fine = ref_tensor((double[]){2, -3}, 1, (int64_t[]){2}, CT_I32, device);
    ct_tensor *picked = ct_index_select(no_columns, 0, fine);
    CHECK(picked && ct_ndim(picked) == 2 && ct_shape(picked)[0] == 2 && ct_shape(picked)[1] == 0);
    /* The check allocates nothing as long as the axis: this one would need a terabyte. */
    ct_tensor *long_axis = ct_zeros(2, (int64_t[]){0, INT64_C(1) << 40}, CT_F32, device);
    ct_tensor *picked_far = ct_index_select(long_axis, 1, too_big);
    CHECK(picked_far && ct_shape(picked_far)[0] == 0 && ct_shape(picked_far)[1] == 3);
    ct_release(picked_far);
    ct_release(long_axis);
    ct_release(picked);
    ct_release(fine);
    ct_release(no_columns);
    ct_release(empty);
    ct_release(two_d);
    ct_release(as_float);
    ct_release(too_small);
    ct_release(too_big);
    ct_release(x);
}

/* ---- gather ---- */

/* out (index's shape) = x at index's coordinates with the axis one from the index value. */
static void gather_reference(const double *x, int ndim, const int64_t *x_shape, int axis,
                             const double *index, const int64_t *index_shape, double *out) {
    int64_t at[8];
    for (int64_t i = 0; i < ref_numel(ndim, index_shape); i++) {
        ref_unravel(i, ndim, index_shape, at);
        at[axis] = wrap(index[i], x_shape[axis]);
        out[i] = x[ref_ravel(ndim, x_shape, at)];
    }
}

/* Gather along every axis of x with an index smaller than x on the other axes. */
static void check_gather(ct_device device, int ndim, const int64_t *shape, ct_dtype dtype,
                         uint64_t seed) {
    double x_values[512], index[512], expected[512];
    dtype_values(x_values, ref_numel(ndim, shape), dtype, seed);
    for (int axis = 0; axis < ndim; axis++) {
        int64_t index_shape[8];
        for (int d = 0; d < ndim; d++)
            index_shape[d] = d != axis ? (shape[d] + 1) / 2 : shape[d] ? shape[d] + 2 : 0;
        int64_t n = ref_numel(ndim, index_shape);
        index_values(index, n, shape[axis], seed * 7 + (uint64_t)axis);
        bool odd = (axis + (int)seed) % 2;
        ct_tensor *x = make(x_values, ndim, shape, dtype, device, odd);
        ct_tensor *idx = make(index, ndim, index_shape, odd ? CT_I64 : CT_I32, device, !odd);
        gather_reference(x_values, ndim, shape, axis, index, index_shape, expected);
        ct_tensor *y = ct_gather(x, odd ? axis - ndim : axis, idx);
        CHECK_TENSOR(y, expected);
        CHECK(ct_dtype_of(y) == dtype && same_shape(y, ndim, index_shape));
        ct_release(y);
        ct_release(idx);
        ct_release(x);
    }
}

DEVICE_TEST(test_ops_index_gather_every_dtype) {
    int64_t shape[3] = {3, 4, 5};
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        check_gather(device, 3, shape, (ct_dtype)dt, 20 + (uint64_t)dt);
        if (ct_test_failed()) return;
    }
}

DEVICE_TEST(test_ops_index_gather_ranks_and_empty) {
    static const struct {
        int ndim;
        int64_t shape[4];
    } cases[] = {{1, {6}}, {2, {1, 4}}, {2, {3, 0}}, {4, {2, 3, 2, 3}}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        check_gather(device, cases[c].ndim, cases[c].shape, CT_F32, 40 + c);
        if (ct_test_failed()) return;
    }
    /* An empty index gathers nothing, even from an empty axis. */
    ct_tensor *x = ct_zeros(2, (int64_t[]){0, 3}, CT_I32, device);
    ct_tensor *idx = ct_zeros(2, (int64_t[]){0, 2}, CT_I64, device);
    ct_tensor *y = ct_gather(x, 0, idx);
    CHECK_NOT_NULL(y);
    CHECK(same_shape(y, 2, (int64_t[]){0, 2}));
    ct_release(y);
    ct_release(idx);
    ct_release(x);
}

/* Big enough for the kernel's OpenMP split; the bad index sits in the last element. */
DEVICE_TEST(test_ops_index_gather_parallel_and_bad_index) {
    int64_t shape[2] = {300, 200}, n = 60000;
    double *x_values = malloc((size_t)n * sizeof(double));
    double *index = malloc((size_t)n * sizeof(double));
    double *expected = malloc((size_t)n * sizeof(double));
    CHECK(x_values && index && expected);
    dtype_values(x_values, n, CT_F32, 5);
    index_values(index, n, 200, 6);
    gather_reference(x_values, 2, shape, 1, index, shape, expected);
    ct_tensor *x = ref_tensor(x_values, 2, shape, CT_F32, device);
    ct_tensor *idx = ref_tensor_strided(index, 2, shape, CT_I64, device);
    ct_tensor *y = ct_gather(x, 1, idx);
    CHECK_TENSOR(y, expected);
    ct_release(y);
    ct_release(idx);
    index[n - 1] = 200;
    idx = ref_tensor(index, 2, shape, CT_I32, device);
    CHECK(ct_gather(x, -1, idx) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_gather: index 200 is out of range for an axis of size "
                                    "200 (valid indices are -200 to 199)");
    ct_release(idx);
    ct_release(x);
    free(expected);
    free(index);
    free(x_values);
}

DEVICE_TEST(test_ops_index_gather_errors) {
    ct_tensor *x = ct_zeros(2, (int64_t[]){3, 4}, CT_F64, device);
    ct_tensor *flat = ct_zeros(1, (int64_t[]){2}, CT_I64, device);
    ct_tensor *wide = ct_zeros(2, (int64_t[]){2, 5}, CT_I64, device);
    ct_tensor *bad = ref_tensor((double[]){0, -5}, 2, (int64_t[]){1, 2}, CT_I64, device);
    ct_tensor *as_u8 = ct_zeros(2, (int64_t[]){1, 1}, CT_U8, device);
    CHECK(ct_gather(x, 0, flat) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_gather: the index has rank 1 but x has rank 2");
    CHECK(ct_gather(x, 0, wide) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "axis 1 of the index has size 5 but x's has 4");
    CHECK(ct_gather(x, 1, bad) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_gather: index -5 is out of range for an axis of size 4");
    CHECK(ct_gather(x, 0, as_u8) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "the index has dtype uint8");
    CHECK(ct_gather(x, -3, bad) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_gather: axis -3 is out of range");
    CHECK(ct_gather(x, 0, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_gather: argument 2 is NULL");
    ct_release(as_u8);
    ct_release(bad);
    ct_release(wide);
    ct_release(flat);
    ct_release(x);
}

/* ---- concat and stack ---- */

/* Join pieces (C-order values, shapes equal except on axis) along axis. */
static void concat_reference(int n, const double *const *pieces, int ndim,
                             const int64_t (*shapes)[4], int axis, double *out) {
    int64_t out_shape[4], at[4];
    memcpy(out_shape, shapes[0], sizeof out_shape);
    for (int p = 1; p < n; p++) out_shape[axis] += shapes[p][axis];
    for (int64_t i = 0; i < ref_numel(ndim, out_shape); i++) {
        ref_unravel(i, ndim, out_shape, at);
        int p = 0;
        while (at[axis] >= shapes[p][axis]) at[axis] -= shapes[p++][axis];
        out[i] = pieces[p][ref_ravel(ndim, shapes[p], at)];
    }
}

DEVICE_TEST(test_ops_index_concat_promotes_every_dtype_pair) {
    const int64_t shapes[3][4] = {{2, 3}, {2, 1}, {2, 0}};
    double a[6], b[2], expected[8];
    const double *pieces[3] = {a, b, a};
    for (int da = 0; da < CT_DTYPE_COUNT; da++) {
        for (int db = 0; db < CT_DTYPE_COUNT; db++) {
            dtype_values(a, 6, (ct_dtype)da, 1 + (uint64_t)da);
            dtype_values(b, 2, (ct_dtype)db, 9 + (uint64_t)db);
            const ct_tensor *t[3] = {
                ref_tensor(a, 2, shapes[0], (ct_dtype)da, device),
                ref_tensor_strided(b, 2, shapes[1], (ct_dtype)db, device),
                ct_zeros(2, shapes[2], (ct_dtype)db, device),
            };
            concat_reference(3, pieces, 2, shapes, 1, expected);
            ct_tensor *y = ct_concat(3, t, -1);
            CHECK_TENSOR(y, expected);
            CHECK(ct_dtype_of(y) == ct_promote_types((ct_dtype)da, (ct_dtype)db));
            ct_release(y);
            for (int i = 0; i < 3; i++) ct_release((ct_tensor *)t[i]);
        }
    }
}

DEVICE_TEST(test_ops_index_concat_ranks_axes_empty) {
    static const struct {
        int ndim, axis;
        int64_t shapes[3][4];
    } cases[] = {
        {1, 0, {{3}, {0}, {4}}},
        {2, 0, {{1, 3}, {2, 3}, {0, 3}}},
        {3, 1, {{2, 1, 2}, {2, 3, 2}, {2, 2, 2}}},
        {3, -1, {{2, 2, 0}, {2, 2, 3}, {2, 2, 1}}},
        {4, 2, {{2, 1, 3, 2}, {2, 1, 1, 2}, {2, 1, 2, 2}}},
        {3, 0, {{0, 2, 2}, {0, 2, 2}, {0, 2, 2}}},
    };
    double values[3][64], expected[192];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int nd = cases[c].ndim, axis = cases[c].axis < 0 ? cases[c].axis + nd : cases[c].axis;
        const ct_tensor *t[3];
        const double *pieces[3];
        for (int p = 0; p < 3; p++) {
            dtype_values(values[p], ref_numel(nd, cases[c].shapes[p]), CT_I64, c * 3 + p);
            t[p] = make(values[p], nd, cases[c].shapes[p], CT_I64, device, p != 1);
            pieces[p] = values[p];
        }
        concat_reference(3, pieces, nd, cases[c].shapes, axis, expected);
        ct_tensor *y = ct_concat(3, t, cases[c].axis);
        CHECK_TENSOR(y, expected);
        int64_t joined = 0;
        for (int p = 0; p < 3; p++) joined += cases[c].shapes[p][axis];
        CHECK(ct_size(y, axis) == joined && ct_ndim(y) == nd);
        ct_release(y);
        for (int p = 0; p < 3; p++) ct_release((ct_tensor *)t[p]);
    }
}

DEVICE_TEST(test_ops_index_concat_errors) {
    ct_tensor *a = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *b = ct_zeros(2, (int64_t[]){3, 3}, CT_F32, device);
    ct_tensor *c = ct_zeros(1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *s = ct_scalar(1.0, CT_F32, device);
    CHECK(ct_concat(0, (const ct_tensor *[]){a}, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_concat: n is 0; give at least one tensor");
    CHECK(ct_concat(2, NULL, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_concat: tensors is NULL");
    CHECK(ct_concat(2, (const ct_tensor *[]){a, NULL}, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_concat: argument 2 is NULL");
    CHECK(ct_concat(2, (const ct_tensor *[]){a, b}, 1) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "argument 2 has size 3 on axis 0 but argument 1 has 2");
    CHECK(ct_concat(2, (const ct_tensor *[]){a, c}, 0) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "argument 2 has rank 1 but argument 1 has rank 2");
    CHECK(ct_concat(1, (const ct_tensor *[]){s}, 0) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_concat: argument 1 is 0-d");
    CHECK(ct_concat(2, (const ct_tensor *[]){a, b}, 2) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_concat: axis 2 is out of range");
    ct_release(s);
    ct_release(c);
    ct_release(b);
    ct_release(a);
}

/* Stack 3 pieces of one shape along every new-axis position. */
DEVICE_TEST(test_ops_index_stack) {
    static const struct {
        int ndim;
        int64_t shape[3];
    } cases[] = {{0, {0}}, {1, {4}}, {2, {2, 3}}, {3, {2, 0, 2}}, {3, {2, 3, 2}}};
    double values[3][12], expected[36];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int nd = cases[c].ndim;
        int64_t n = ref_numel(nd, cases[c].shape);
        const ct_dtype dtypes[3] = {CT_U8, CT_BF16, CT_F16}; /* promoted: f32 */
        const ct_tensor *t[3];
        for (int p = 0; p < 3; p++) {
            dtype_values(values[p], n, dtypes[p], 50 + c * 3 + p);
            t[p] = make(values[p], nd, cases[c].shape, dtypes[p], device, p == 1);
        }
        for (int axis = -nd - 1; axis <= nd; axis++) {
            int a = axis < 0 ? axis + nd + 1 : axis;
            int64_t out_shape[4], at[4], src[3];
            for (int d = 0, s = 0; d <= nd; d++) out_shape[d] = d == a ? 3 : cases[c].shape[s++];
            for (int64_t i = 0; i < 3 * n; i++) {
                ref_unravel(i, nd + 1, out_shape, at);
                for (int d = 0, s = 0; d <= nd; d++)
                    if (d != a) src[s++] = at[d];
                expected[i] = values[at[a]][ref_ravel(nd, cases[c].shape, src)];
            }
            ct_tensor *y = ct_stack(3, t, axis);
            CHECK_TENSOR(y, expected);
            CHECK(same_shape(y, nd + 1, out_shape) && ct_dtype_of(y) == CT_F32);
            ct_release(y);
        }
        for (int p = 0; p < 3; p++) ct_release((ct_tensor *)t[p]);
    }
}

DEVICE_TEST(test_ops_index_stack_errors) {
    ct_tensor *a = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *b = ct_zeros(2, (int64_t[]){3, 2}, CT_F32, device);
    CHECK(ct_stack(2, (const ct_tensor *[]){a, b}, 0) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_stack: argument 2's shape differs from argument 1's");
    CHECK(ct_stack(1, (const ct_tensor *[]){a}, 3) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_stack: axis 3 is out of range for stacking tensors of "
                                    "rank 2 (use -3 to 2)");
    CHECK(ct_stack(-1, (const ct_tensor *[]){a}, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_stack: n is -1");
    ct_tensor *big =
        ct_zeros(16, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, CT_F32, device);
    CHECK(ct_stack(1, (const ct_tensor *[]){big}, 0) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "maximum rank 16");
    ct_release(big);
    ct_release(b);
    ct_release(a);
}

/* ---- split ---- */

DEVICE_TEST(test_ops_index_split_views) {
    int64_t shape[2] = {3, 7};
    double values[21];
    for (int i = 0; i < 21; i++) values[i] = i + 1;
    ct_tensor *x = ref_tensor_strided(values, 2, shape, CT_F64, device);
    ct_tensor *out[4] = {NULL, NULL, NULL, NULL};
    int count = -1;
    CHECK_OK(ct_split(x, 3, -1, out, 4, &count));
    CHECK(count == 3);
    for (int p = 0; p < 3; p++) {
        int64_t width = p < 2 ? 3 : 1;
        double expected[9];
        for (int64_t i = 0; i < 3 * width; i++)
            expected[i] = values[(i / width) * 7 + p * 3 + i % width];
        CHECK_TENSOR(out[p], expected);
        CHECK(same_shape(out[p], 2, (int64_t[]){3, width}) && ct_shares_storage(out[p], x));
    }
    CHECK(out[3] == NULL);
    CHECK_OK(ct_fill(out[2], 0.0));
    for (int i = 6; i < 21; i += 7) values[i] = 0.0;
    CHECK_TENSOR(x, values);
    for (int p = 0; p < 3; p++) ct_release(out[p]);
    /* An empty axis gives one empty piece. */
    ct_tensor *empty = ct_slice(x, 0, 0, 0, 1);
    CHECK_OK(ct_split(empty, 2, 0, out, 1, &count));
    CHECK(count == 1 && same_shape(out[0], 2, (int64_t[]){0, 7}));
    ct_release(out[0]);
    ct_release(empty);
    ct_release(x);
}

DEVICE_TEST(test_ops_index_split_errors) {
    ct_tensor *x = ct_zeros(1, (int64_t[]){10}, CT_F32, device);
    ct_tensor *out[2] = {NULL, NULL};
    int count = -1;
    CHECK(ct_split(x, 4, 0, out, 2, &count) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "makes 3 tensors but capacity is 2");
    CHECK(out[0] == NULL && out[1] == NULL && count == -1);
    CHECK(ct_split(x, 0, 0, out, 2, &count) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_split: split_size is 0; it must be positive");
    CHECK(ct_split(x, 5, 0, out, 2, NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "count must not be NULL");
    CHECK(ct_split(x, 5, 0, NULL, 2, &count) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "out needs room");
    CHECK(ct_split(x, 5, 1, out, 2, &count) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_split: axis 1 is out of range");
    CHECK(ct_split(NULL, 5, 0, out, 2, &count) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_split: argument 1 is NULL");
    ct_release(x);
}

/* ---- devices: two logical CPU devices stand in for two accelerators ---- */

TEST(test_ops_index_device_mismatch) {
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 2, NULL));
    ct_device d0 = {CT_DEVICE_CPU, 0}, d1 = {CT_DEVICE_CPU, 1};
    ct_tensor *a = ct_zeros(1, (int64_t[]){2}, CT_F32, d0);
    ct_tensor *b = ct_ones(1, (int64_t[]){2}, CT_F32, d1);
    ct_tensor *idx = ct_zeros(1, (int64_t[]){1}, CT_I64, d1);
    CHECK(ct_concat(2, (const ct_tensor *[]){a, b}, 0) == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "ct_concat: argument 2 is on cpu:1, argument 1 on cpu:0");
    CHECK(ct_stack(2, (const ct_tensor *[]){a, b}, 0) == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "ct_stack: argument 2 is on cpu:1");
    CHECK(ct_index_select(a, 0, idx) == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "ct_index_select: argument 2 is on cpu:1");
    CHECK(ct_gather(a, 0, idx) == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "ct_gather: argument 2 is on cpu:1");
    /* 0-d CPU tensors are scalars: they join the device of the first piece. */
    ct_tensor *s0 = ct_scalar(3.0, CT_F32, d1), *s1 = ct_scalar(4.0, CT_F32, d0);
    ct_tensor *y = ct_stack(2, (const ct_tensor *[]){s0, s1}, 0);
    CHECK_TENSOR(y, ((double[]){3.0, 4.0}));
    CHECK(ct_device_equal(ct_device_of(y), d1));
    ct_release(y);
    ct_release(s1);
    ct_release(s0);
    ct_release(idx);
    ct_release(b);
    ct_release(a);
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 1, NULL));
}

/* ---- host allocation failures: fail the 1st, 2nd, ... allocation until the op succeeds;
 * every failure must be CT_ERR_OUT_OF_MEMORY and leave nothing behind ---- */

typedef ct_status (*oom_case)(const ct_tensor *x, const ct_tensor *index);

static ct_status oom_reshape(const ct_tensor *x, const ct_tensor *index) {
    (void)index;
    ct_tensor *y = ct_reshape(x, 1, (int64_t[]){-1}); /* x is strided: a copy */
    ct_release(y);
    return y ? CT_OK : ct_last_status();
}

static ct_status oom_concat_index_select(const ct_tensor *x, const ct_tensor *index) {
    ct_tensor *picked = ct_index_select(x, 1, index);
    ct_tensor *y = ct_concat(3, (const ct_tensor *[]){x, picked, x}, 1);
    ct_status status = y ? CT_OK : ct_last_status();
    ct_release(y);
    ct_release(picked);
    return status;
}

static ct_status oom_split(const ct_tensor *x, const ct_tensor *index) {
    (void)index;
    ct_tensor *out[4] = {NULL, NULL, NULL, NULL};
    int count = 0;
    ct_status status = ct_split(x, 1, 0, out, 4, &count);
    for (int i = 0; i < 4; i++) {
        if (status != CT_OK && out[i]) return CT_ERR_STATE; /* a failed split wrote a tensor */
        ct_release(out[i]);
    }
    return status;
}

TEST(test_ops_index_allocation_failures_clean_up) {
    double values[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    ct_tensor *x = ref_tensor_strided(values, 2, (int64_t[]){3, 4}, CT_F32, CT_CPU);
    ct_tensor *index = ref_tensor((double[]){1, -1}, 1, (int64_t[]){2}, CT_I64, CT_CPU);
    const oom_case cases[3] = {oom_reshape, oom_concat_index_select, oom_split};
    for (int c = 0; c < 3; c++) {
        ct_status status = CT_ERR_OUT_OF_MEMORY;
        int attempts = 0;
        for (long n = 1; status != CT_OK && n < 100; n++, attempts++) {
            long live = ct__live_tensors();
            ct__malloc_fail_after(n, 0);
            status = cases[c](x, index);
            ct__malloc_fail_after(0, 0);
            CHECK(status == CT_OK || status == CT_ERR_OUT_OF_MEMORY);
            CHECK(ct__live_tensors() == live);
            ct_clear_error();
        }
        CHECK(status == CT_OK && attempts > 1);
    }
    ct_release(index);
    ct_release(x);
}

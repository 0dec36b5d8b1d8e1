/* Shape ops (reshape, view, flatten, squeeze, unsqueeze, transpose, permute, expand, slice):
 * values against index arithmetic done here in doubles, which results are views (sharing
 * storage, writes visible in the base), strides where PyTorch fixes them, and every error. */
#include <stdlib.h>

#include "ct_ref.h"

/* Distinct values 1, 2, 3, ... so a wrong element cannot match by accident. */
static double *iota_values(int64_t n) {
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    for (int64_t i = 0; v && i < n; i++) v[i] = (double)(i + 1);
    return v;
}

static bool same_shape(const ct_tensor *t, int ndim, const int64_t *shape) {
    if (ct_ndim(t) != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (ct_shape(t)[d] != shape[d]) return false;
    return true;
}

/* Every element of t equals value. */
static bool all_equal(const ct_tensor *t, double value) {
    double *v = ref_read(t);
    bool ok = v != NULL;
    for (int64_t i = 0; ok && i < ct_numel(t); i++) ok = v[i] == value;
    free(v);
    return ok;
}

typedef struct {
    int from_ndim;
    int64_t from[4];
    int to_ndim;
    int64_t to[4];
    int64_t resolved[4];
} reshape_case;

static const reshape_case reshape_cases[] = {
    {0, {0}, 2, {1, 1}, {1, 1}},
    {0, {0}, 1, {-1}, {1}},
    {1, {1}, 0, {0}, {0}},
    {1, {6}, 2, {2, 3}, {2, 3}},
    {3, {2, 3, 4}, 2, {4, -1}, {4, 6}},
    {3, {2, 3, 4}, 1, {24}, {24}},
    {4, {2, 3, 4, 5}, 3, {6, -1, 5}, {6, 4, 5}},
    {3, {4, 1, 3}, 3, {1, 12, 1}, {1, 12, 1}},
    {2, {0, 3}, 2, {3, 0}, {3, 0}},
    {2, {0, 3}, 2, {-1, 3}, {0, 3}},
    {4, {2, 2, 2, 2}, 4, {4, 1, 2, 2}, {4, 1, 2, 2}},
};

/* Reshape keeps C order, so the result's elements are the input's in the same order. */
DEVICE_TEST(test_ops_shape_reshape_keeps_c_order) {
    for (size_t c = 0; c < sizeof reshape_cases / sizeof *reshape_cases; c++) {
        const reshape_case *rc = &reshape_cases[c];
        int64_t n = ref_numel(rc->from_ndim, rc->from);
        double *values = iota_values(n);
        for (int strided = 0; strided < 2; strided++) {
            ct_tensor *x = (strided ? ref_tensor_strided : ref_tensor)(values, rc->from_ndim,
                                                                       rc->from, CT_F32, device);
            CHECK_NOT_NULL(x);
            ct_tensor *y = ct_reshape(x, rc->to_ndim, rc->to);
            CHECK_TENSOR(y, values);
            CHECK(same_shape(y, rc->to_ndim, rc->resolved));
            /* A contiguous input always gives a view. */
            if (!strided) CHECK(ct_shares_storage(x, y));
            ct_release(y);
            y = ct_view(x, rc->to_ndim, rc->to);
            if (!strided) {
                CHECK_TENSOR(y, values);
                CHECK(ct_shares_storage(x, y));
            }
            ct_release(y);
            ct_clear_error();
            ct_release(x);
        }
        free(values);
    }
}

typedef struct {
    int to_ndim;
    int64_t to[4];
    bool viewable;
    int64_t strides[4]; /* PyTorch's strides for the view */
} view_case;

/* Check ct_view against PyTorch's decisions for a non-contiguous x, and that reshape copies
 * exactly when view refuses. Expected values: x's elements in C order. */
static void check_view_cases(ct_tensor *x, const view_case *cases, size_t count) {
    double *expected = ref_read(x);
    CHECK_NOT_NULL(expected);
    for (size_t c = 0; c < count; c++) {
        const view_case *vc = &cases[c];
        ct_tensor *v = ct_view(x, vc->to_ndim, vc->to);
        if (!vc->viewable) {
            CHECK(v == NULL);
            CHECK_ERROR(CT_ERR_SHAPE, "use ct_reshape");
            ct_tensor *r = ct_reshape(x, vc->to_ndim, vc->to);
            CHECK_TENSOR(r, expected);
            CHECK(!ct_shares_storage(r, x));
            ct_release(r);
            continue;
        }
        CHECK_TENSOR(v, expected);
        CHECK(ct_shares_storage(v, x));
        for (int d = 0; d < vc->to_ndim; d++)
            if (vc->to[d] != 1) CHECK(ct_strides(v)[d] == vc->strides[d]);
        ct_release(v);
    }
    free(expected);
}

DEVICE_TEST(test_ops_shape_view_decides_like_pytorch) {
    double *values = iota_values(24);
    /* (3, 2, 4) with strides (4, 12, 1): torch.arange(24).view(2, 3, 4).transpose(0, 1). */
    int64_t base_shape[3] = {2, 3, 4};
    ct_tensor *base = ref_tensor(values, 3, base_shape, CT_F64, device);
    ct_tensor *x = ct_transpose(base, 0, 1);
    const view_case transposed[] = {
        {4, {3, 2, 2, 2}, true, {4, 12, 2, 1}},
        {3, {3, 2, 4}, true, {4, 12, 1}},
        {4, {3, 1, 2, 4}, true, {4, 0, 12, 1}},
        {2, {3, 8}, false, {0}},
        {1, {24}, false, {0}},
        {2, {6, 4}, false, {0}},
    };
    check_view_cases(x, transposed, sizeof transposed / sizeof *transposed);
    ct_release(x);
    /* (4, 3) with strides (6, 1): columns 0..2 of a (4, 6) tensor. */
    int64_t wide[2] = {4, 6};
    ct_tensor *w = ct_view(base, 2, wide);
    x = ct_slice(w, 1, 0, 3, 1);
    const view_case sliced[] = {
        {3, {2, 2, 3}, true, {12, 6, 1}},
        {3, {4, 3, 1}, true, {6, 1, 1}},
        {1, {12}, false, {0}},
        {2, {3, 4}, false, {0}},
    };
    check_view_cases(x, sliced, sizeof sliced / sizeof *sliced);
    ct_release(x);
    ct_release(w);
    /* (3, 4) with strides (1, 0): a (3, 1) column expanded. */
    int64_t col[2] = {3, 1}, expanded[2] = {3, 4};
    ct_tensor *c = ref_tensor(values, 2, col, CT_F64, device);
    x = ct_expand(c, 2, expanded);
    const view_case stretched[] = {
        {3, {3, 2, 2}, true, {1, 0, 0}},
        {1, {12}, false, {0}},
    };
    check_view_cases(x, stretched, sizeof stretched / sizeof *stretched);
    ct_release(x);
    ct_release(c);
    ct_release(base);
    free(values);
}

DEVICE_TEST(test_ops_shape_views_write_through) {
    int64_t shape[3] = {2, 3, 4}, flat[1] = {24}, cols[2] = {6, 4};
    ct_tensor *x = ct_zeros(3, shape, CT_F32, device);
    CHECK_NOT_NULL(x);
    ct_tensor *views[6] = {
        ct_reshape(x, 1, flat), ct_view(x, 2, cols), ct_flatten(x, 0, -1),
        ct_transpose(x, 0, 2),  ct_unsqueeze(x, 1),  NULL,
    };
    int perm[3] = {2, 0, 1};
    views[5] = ct_permute(x, 3, perm);
    for (int i = 0; i < 6; i++) {
        CHECK_NOT_NULL(views[i]);
        CHECK(ct_shares_storage(views[i], x));
        CHECK_OK(ct_fill(views[i], (double)(i + 1)));
        CHECK(all_equal(x, (double)(i + 1)));
    }
    ct_tensor *one = ct_unsqueeze(views[0], 0);
    ct_tensor *squeezed = ct_squeeze(one, 0);
    CHECK_NOT_NULL(squeezed);
    CHECK_OK(ct_fill(squeezed, -3.0));
    CHECK(all_equal(x, -3.0));
    ct_release(squeezed);
    ct_release(one);
    for (int i = 0; i < 6; i++) ct_release(views[i]);
    ct_release(x);
}

DEVICE_TEST(test_ops_shape_reshape_errors) {
    int64_t shape[2] = {4, 6};
    ct_tensor *x = ct_zeros(2, shape, CT_F32, device);
    CHECK_NOT_NULL(x);
    CHECK(ct_reshape(x, 2, (int64_t[]){-1, -1}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "only one size can be inferred");
    CHECK(ct_view(x, 2, (int64_t[]){5, -1}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "cannot infer the -1");
    CHECK(ct_reshape(x, 2, (int64_t[]){0, -1}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "cannot infer the -1");
    CHECK(ct_reshape(x, 2, (int64_t[]){5, 5}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_reshape: shape (5, 5) holds 25 elements but the tensor has 24");
    CHECK(ct_reshape(x, 2, (int64_t[]){-2, -12}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "size -2 of axis 0 is negative");
    CHECK(ct_reshape(x, 17, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 24}) ==
          NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "rank 17 is outside 0..16");
    CHECK(ct_view(x, 2, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_view: shape is NULL");
    ct_tensor *t = ct_transpose(x, 0, 1);
    CHECK(ct_view(t, 1, (int64_t[]){24}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_view: shape (24,) cannot be a view");
    ct_release(t);
    CHECK(ct_reshape(NULL, 1, (int64_t[]){24}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_reshape: argument 1 is NULL");
    /* A NULL input keeps the first error of a chain. */
    CHECK(ct_view(ct_reshape(x, 1, (int64_t[]){7}), 1, (int64_t[]){24}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_reshape: shape (7,)");
    ct_release(x);
    /* An empty tensor may take any shape with a 0, but not one whose other sizes' strides
     * overflow. */
    ct_tensor *empty = ct_zeros(1, (int64_t[]){0}, CT_F32, device);
    CHECK_NOT_NULL(empty);
    int64_t wide[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    CHECK(ct_reshape(empty, 3, wide) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "strides would overflow");
    CHECK(ct_view(empty, 3, (int64_t[]){(int64_t)1 << 40, 0, -1}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "cannot infer the -1");
    ct_tensor *fine = ct_reshape(empty, 3, (int64_t[]){0, 1 << 20, 1 << 20});
    CHECK(fine && ct_numel(fine) == 0);
    ct_release(fine);
    ct_release(empty);
}

/* x of shape (2, 3, 4, 5), flattened over several axis pairs, against the merged shape. */
DEVICE_TEST(test_ops_shape_flatten) {
    int64_t shape[4] = {2, 3, 4, 5};
    double *values = iota_values(120);
    static const struct {
        int start, end, ndim;
        int64_t want[4];
    } cases[] = {
        {0, -1, 1, {120}},       {1, 2, 3, {2, 12, 5}}, {-2, -1, 3, {2, 3, 20}},
        {2, 2, 4, {2, 3, 4, 5}}, {0, 1, 3, {6, 4, 5}},  {-4, 2, 2, {24, 5}},
    };
    for (int strided = 0; strided < 2; strided++) {
        ct_tensor *x =
            (strided ? ref_tensor_strided : ref_tensor)(values, 4, shape, CT_F64, device);
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            ct_tensor *y = ct_flatten(x, cases[c].start, cases[c].end);
            CHECK_TENSOR(y, values);
            CHECK(same_shape(y, cases[c].ndim, cases[c].want));
            if (!strided) CHECK(ct_shares_storage(x, y));
            ct_release(y);
        }
        CHECK(ct_flatten(x, 2, 1) == NULL);
        CHECK_ERROR(CT_ERR_INVALID_ARG, "start axis 2 comes after end axis 1");
        CHECK(ct_flatten(x, 0, 4) == NULL);
        CHECK_ERROR(CT_ERR_INVALID_ARG, "axis 4 is out of range");
        ct_release(x);
    }
    ct_tensor *s = ct_scalar(5.0, CT_I32, device);
    ct_tensor *y = ct_flatten(s, 0, -1);
    CHECK_TENSOR(y, (double[]){5.0});
    CHECK(same_shape(y, 1, (int64_t[]){1}));
    ct_release(y);
    ct_release(s);
    free(values);
}

DEVICE_TEST(test_ops_shape_squeeze_unsqueeze) {
    int64_t shape[4] = {1, 3, 1, 2};
    double *values = iota_values(6);
    ct_tensor *x = ref_tensor_strided(values, 4, shape, CT_I64, device);
    ct_tensor *all = ct_squeeze(x, CT_AXIS_NONE);
    CHECK_TENSOR(all, values);
    CHECK(same_shape(all, 2, (int64_t[]){3, 2}) && ct_shares_storage(all, x));
    ct_tensor *one = ct_squeeze(x, -2);
    CHECK_TENSOR(one, values);
    CHECK(same_shape(one, 3, (int64_t[]){1, 3, 2}));
    CHECK(ct_squeeze(x, 1) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "axis 1 has size 3; only an axis of size 1");
    CHECK(ct_squeeze(x, 4) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "axis 4 is out of range");
    /* Every insertion point of a rank-2 tensor, as axis and as its negative twin. */
    for (int axis = -3; axis <= 2; axis++) {
        ct_tensor *u = ct_unsqueeze(all, axis);
        int at = axis < 0 ? axis + 3 : axis;
        int64_t want[3];
        for (int d = 0, s = 0; d < 3; d++) want[d] = d == at ? 1 : ct_shape(all)[s++];
        CHECK_TENSOR(u, values);
        CHECK(same_shape(u, 3, want) && ct_shares_storage(u, x));
        ct_release(u);
    }
    CHECK(ct_unsqueeze(all, 3) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_unsqueeze: axis 3 is out of range");
    CHECK(ct_unsqueeze(all, -4) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "use -3 to 2");
    ct_tensor *s = ct_scalar(2.5, CT_F32, device);
    ct_tensor *s1 = ct_unsqueeze(s, -1);
    ct_tensor *s0 = ct_squeeze(s1, CT_AXIS_NONE);
    CHECK_TENSOR(s1, (double[]){2.5});
    CHECK(same_shape(s1, 1, (int64_t[]){1}) && same_shape(s0, 0, NULL));
    CHECK(ct_squeeze(s, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_squeeze: axis 0 is out of range for a tensor of rank 0 "
                                    "(it has no axes)");
    int64_t max_rank[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    ct_tensor *big = ct_reshape(s, 16, max_rank);
    CHECK(ct_unsqueeze(big, 0) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "maximum rank 16");
    ct_release(big);
    ct_release(s0);
    ct_release(s1);
    ct_release(s);
    ct_release(one);
    ct_release(all);
    ct_release(x);
    free(values);
}

/* out[i_0..] = x[j] with j[perm[d]] = i[d]: the permuted tensor read in C order. */
static void permuted_reference(const double *x, int ndim, const int64_t *shape, const int *perm,
                               double *out) {
    int64_t out_shape[4], index[4], src[4];
    for (int d = 0; d < ndim; d++) out_shape[d] = shape[perm[d]];
    int64_t n = ref_numel(ndim, shape);
    for (int64_t i = 0; i < n; i++) {
        ref_unravel(i, ndim, out_shape, index);
        for (int d = 0; d < ndim; d++) src[perm[d]] = index[d];
        out[i] = x[ref_ravel(ndim, shape, src)];
    }
}

DEVICE_TEST(test_ops_shape_transpose_permute) {
    static const struct {
        int ndim;
        int64_t shape[4];
        int perm[4];
    } cases[] = {
        {1, {5}, {0}},
        {2, {3, 4}, {1, 0}},
        {3, {2, 3, 4}, {2, 0, 1}},
        {3, {2, 0, 4}, {1, 2, 0}},
        {4, {2, 3, 1, 4}, {3, 1, 0, 2}},
        {4, {2, 3, 4, 5}, {0, 1, 2, 3}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int nd = cases[c].ndim;
        int64_t n = ref_numel(nd, cases[c].shape);
        double *values = iota_values(n), *expected = iota_values(n);
        permuted_reference(values, nd, cases[c].shape, cases[c].perm, expected);
        ct_tensor *x = ref_tensor_strided(values, nd, cases[c].shape, CT_BF16, device);
        int negative[4];
        for (int d = 0; d < nd; d++) negative[d] = cases[c].perm[d] - nd;
        ct_tensor *p = ct_permute(x, nd, negative);
        CHECK_TENSOR(p, expected);
        CHECK(ct_shares_storage(p, x));
        ct_release(p);
        /* Transposing the last two axes is the permutation that swaps them. */
        int swap[4] = {0, 1, 2, 3};
        swap[nd - 1] = nd >= 2 ? nd - 2 : 0;
        if (nd >= 2) swap[nd - 2] = nd - 1;
        permuted_reference(values, nd, cases[c].shape, swap, expected);
        ct_tensor *t = ct_transpose(x, -1, nd >= 2 ? -2 : 0);
        CHECK_TENSOR(t, expected);
        ct_release(t);
        ct_release(x);
        free(values);
        free(expected);
    }
}

DEVICE_TEST(test_ops_shape_transpose_permute_errors) {
    int64_t shape[3] = {2, 3, 4};
    ct_tensor *x = ct_zeros(3, shape, CT_F32, device);
    CHECK(ct_transpose(x, 0, 3) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_transpose: axis 3 is out of range");
    CHECK(ct_permute(x, 3, (int[]){0, 2, -1}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_permute: axis -1 appears twice");
    CHECK(ct_permute(x, 2, (int[]){0, 1}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "2 entries but the tensor has rank 3");
    CHECK(ct_permute(x, 3, (int[]){0, 1, 5}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "axis 5 is out of range");
    CHECK(ct_permute(x, 3, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "perm is NULL");
    CHECK(ct_transpose(NULL, 0, 1) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_transpose: argument 1 is NULL");
    ct_release(x);
}

/* Expected values of x (shape `from`, C-order values) broadcast to `to`. */
static void expanded_reference(const double *x, int from_ndim, const int64_t *from, int to_ndim,
                               const int64_t *to, double *out) {
    int64_t index[8], src[8];
    int lead = to_ndim - from_ndim;
    for (int64_t i = 0; i < ref_numel(to_ndim, to); i++) {
        ref_unravel(i, to_ndim, to, index);
        for (int d = 0; d < from_ndim; d++) src[d] = from[d] == 1 ? 0 : index[d + lead];
        out[i] = x[ref_ravel(from_ndim, from, src)];
    }
}

DEVICE_TEST(test_ops_shape_expand) {
    static const struct {
        int from_ndim;
        int64_t from[4];
        int to_ndim;
        int64_t to[4];
        int64_t resolved[4];
    } cases[] = {
        {0, {0}, 2, {2, 3}, {2, 3}},          {1, {3}, 3, {2, 4, 3}, {2, 4, 3}},
        {2, {3, 1}, 2, {-1, 4}, {3, 4}},      {3, {1, 2, 1}, 4, {2, 3, -1, 5}, {2, 3, 2, 5}},
        {2, {1, 4}, 3, {0, 5, 4}, {0, 5, 4}}, {2, {2, 1}, 2, {2, 0}, {2, 0}},
    };
    double expected[120];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int64_t n = ref_numel(cases[c].from_ndim, cases[c].from);
        double *values = iota_values(n);
        expanded_reference(values, cases[c].from_ndim, cases[c].from, cases[c].to_ndim,
                           cases[c].resolved, expected);
        ct_tensor *x = ref_tensor_strided(values, cases[c].from_ndim, cases[c].from, CT_U8, device);
        ct_tensor *e = ct_expand(x, cases[c].to_ndim, cases[c].to);
        CHECK_TENSOR(e, expected);
        CHECK(same_shape(e, cases[c].to_ndim, cases[c].resolved) && ct_shares_storage(e, x));
        for (int d = 0; d < cases[c].to_ndim; d++) {
            int xd = d - (cases[c].to_ndim - cases[c].from_ndim);
            bool stretched = xd < 0 || (cases[c].from[xd] == 1 && cases[c].resolved[d] != 1);
            if (stretched) CHECK(ct_strides(e)[d] == 0);
        }
        ct_release(e);
        ct_release(x);
        free(values);
    }
}

DEVICE_TEST(test_ops_shape_expand_errors) {
    int64_t shape[2] = {3, 1};
    ct_tensor *x = ct_zeros(2, shape, CT_F32, device);
    CHECK(ct_expand(x, 2, (int64_t[]){4, 4}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "axis 0 has size 3 and cannot expand to 4");
    CHECK(ct_expand(x, 3, (int64_t[]){-1, 3, 4}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "size -1 for axis 0 is invalid");
    CHECK(ct_expand(x, 2, (int64_t[]){3, -5}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "size -5 for axis 1");
    CHECK(ct_expand(x, 1, (int64_t[]){3}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "rank 1 is outside 2..16");
    CHECK(ct_expand(x, 2, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_expand: shape is NULL");
    ct_release(x);
}

/* Python's slice over range(size), written as the loop the language reference gives. */
static int64_t slice_reference(int64_t size, int64_t start, int64_t stop, int64_t step,
                               int64_t *picked) {
    int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? size : size - 1;
    int64_t b[2] = {start, stop};
    for (int k = 0; k < 2; k++) {
        if (b[k] < 0)
            b[k] = b[k] + size < lo ? lo : b[k] + size;
        else if (b[k] > hi)
            b[k] = hi;
    }
    int64_t n = 0;
    for (int64_t i = b[0]; step > 0 ? i < b[1] : i > b[1]; i += step) {
        picked[n++] = i;
        /* Stop before i + step could pass the bound (or overflow, for a huge step). */
        if (step > 0 ? step >= b[1] - i : step <= b[1] - i) break;
    }
    return n;
}

/* x is (5, 7) holding 1..35; slice it along each axis and compare with the reference. */
DEVICE_TEST(test_ops_shape_slice_python_semantics) {
    static const int64_t bounds[][3] = {
        {INT64_MIN, INT64_MAX, 1},
        {INT64_MAX, INT64_MIN, -1},
        {-2, INT64_MIN, -2},
        {10, -10, -1},
        {5, 1, -2},
        {1, 100, 3},
        {-100, 3, 1},
        {3, 3, 1},
        {6, 0, -3},
        {0, 7, INT64_MAX},
        {6, -8, INT64_MIN},
        {-3, -1, 1},
        {4, 2, 1},
        {2, 4, -1},
    };
    int64_t shape[2] = {5, 7}, picked[8], out_shape[2], index[2];
    double *values = iota_values(35), expected[35];
    ct_tensor *x = ref_tensor_strided(values, 2, shape, CT_F16, device);
    for (size_t c = 0; c < sizeof bounds / sizeof *bounds; c++) {
        for (int axis = -2; axis < 2; axis++) {
            int a = axis + 2 * (axis < 0);
            int64_t n = slice_reference(shape[a], bounds[c][0], bounds[c][1], bounds[c][2], picked);
            out_shape[0] = a == 0 ? n : 5;
            out_shape[1] = a == 1 ? n : 7;
            for (int64_t i = 0; i < out_shape[0] * out_shape[1]; i++) {
                ref_unravel(i, 2, out_shape, index);
                index[a] = picked[index[a]];
                expected[i] = values[ref_ravel(2, shape, index)];
            }
            ct_tensor *s = ct_slice(x, axis, bounds[c][0], bounds[c][1], bounds[c][2]);
            CHECK_TENSOR(s, expected);
            CHECK(same_shape(s, 2, out_shape) && ct_shares_storage(s, x));
            ct_release(s);
        }
    }
    ct_release(x);
    free(values);
}

/* Values checked against Python: list(range(7))[a:b:c] printed by python3. */
DEVICE_TEST(test_ops_shape_slice_matches_python_lists) {
    double values[7] = {0, 1, 2, 3, 4, 5, 6};
    ct_tensor *x = ref_tensor(values, 1, (int64_t[]){7}, CT_I32, device);
    ct_tensor *a = ct_slice(x, 0, INT64_MAX, INT64_MIN, -1); /* [::-1] */
    ct_tensor *b = ct_slice(x, 0, -2, INT64_MIN, -2);        /* [-2::-2] */
    ct_tensor *c = ct_slice(x, 0, 6, 0, -3);                 /* [6:0:-3] */
    ct_tensor *d = ct_slice(b, 0, 1, INT64_MAX, 1);          /* [-2::-2][1:] */
    CHECK_TENSOR(a, ((double[]){6, 5, 4, 3, 2, 1, 0}));
    CHECK_TENSOR(b, ((double[]){5, 3, 1}));
    CHECK_TENSOR(c, ((double[]){6, 3}));
    CHECK_TENSOR(d, ((double[]){3, 1}));
    CHECK(ct_numel(d) == 2);
    CHECK_OK(ct_fill(d, -1.0));
    CHECK_TENSOR(x, ((double[]){0, -1, 2, -1, 4, 5, 6}));
    ct_release(a);
    ct_release(b);
    ct_release(c);
    ct_release(d);
    ct_release(x);
}

DEVICE_TEST(test_ops_shape_slice_write_through_and_empty) {
    int64_t shape[2] = {4, 6};
    ct_tensor *x = ct_zeros(2, shape, CT_F64, device);
    ct_tensor *cols = ct_slice(x, -1, 1, 6, 2); /* columns 1, 3, 5 */
    CHECK_OK(ct_fill(cols, 7.0));
    double expected[24];
    for (int i = 0; i < 24; i++) expected[i] = (i % 6) % 2 == 1 ? 7.0 : 0.0;
    CHECK_TENSOR(x, expected);
    ct_tensor *empty = ct_slice(x, 0, 3, 1, 1);
    CHECK(same_shape(empty, 2, (int64_t[]){0, 6}) && ct_shares_storage(empty, x));
    ct_tensor *flat = ct_reshape(empty, 1, (int64_t[]){-1});
    CHECK(same_shape(flat, 1, (int64_t[]){0}));
    ct_tensor *still_empty = ct_slice(empty, 0, INT64_MIN, INT64_MAX, -1);
    CHECK(same_shape(still_empty, 2, (int64_t[]){0, 6}));
    CHECK(ct_slice(x, 0, 0, 4, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_slice: step is 0");
    CHECK(ct_slice(x, 2, 0, 4, 1) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_slice: axis 2 is out of range");
    ct_tensor *s = ct_scalar(1.0, CT_F32, device);
    CHECK(ct_slice(s, 0, 0, 1, 1) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "rank 0");
    ct_release(s);
    ct_release(still_empty);
    ct_release(flat);
    ct_release(empty);
    ct_release(cols);
    ct_release(x);
}

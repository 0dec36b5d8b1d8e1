/* Tensors of rank 9 to CT_MAX_DIMS (16) through the ops whose kernels walk every axis:
 * elementwise with broadcasting, reductions over axes past the eighth, permutes, reshapes and
 * views, strided copies, indexing, matmul with 14 batch axes, tensordot (the array API
 * suite's rank-9 case, empty and not), concat and stack, autograd through them (gradient
 * checks), and safetensors; each against a float64 reference from plain loops. Rank 17 is
 * refused with CT_ERR_SHAPE naming the limit. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"
#include "ct_test.h"
#include "safetensors_test.h"

/* Axes 0 and 1 longer than 1 everywhere, so that a view with other strides is not
 * contiguous. */
static const int64_t shape9[9] = {2, 3, 1, 2, 2, 1, 3, 2, 2};                        /* 288 */
static const int64_t shape12[12] = {3, 2, 2, 1, 2, 2, 1, 2, 2, 1, 3, 1};             /* 576 */
static const int64_t shape16[16] = {2, 3, 2, 2, 1, 2, 2, 1, 2, 2, 1, 2, 2, 1, 2, 1}; /* 3072 */

/* Host buffers of the running test, freed after it (a failed CHECK leaves early). */
static double *held[64];
static int nheld;

static double *hold(double *p) {
    if (p && nheld < 64) held[nheld++] = p;
    return p;
}

static double *buffer(int64_t n) { return hold(calloc((size_t)(n > 0 ? n : 1), sizeof(double))); }

static void release_buffers(void) {
    while (nheld > 0) free(held[--nheld]);
}

/* Each test runs in a scope that holds every tensor it makes. */
#define HIGH_RANK_TEST(name)                                                                       \
    static void name##_body(ct_device device);                                                     \
    DEVICE_TEST(name) {                                                                            \
        CHECK_OK(ct_scope_begin());                                                                \
        name##_body(device);                                                                       \
        ct_scope_end();                                                                            \
        release_buffers();                                                                         \
    }                                                                                              \
    static void name##_body(ct_device device)

/* n values in [-1, 1) from seed, rounded to what dtype holds. */
static double *values_for(int64_t n, uint64_t seed, ct_dtype dtype) {
    double *v = buffer(n);
    if (!v) return NULL;
    ref_random(v, n, seed, -1, 1);
    for (int64_t i = 0; i < n; i++) v[i] = ref_round(dtype == CT_I32 ? v[i] * 8 : v[i], dtype);
    return v;
}

/* The values (C order over shape) as a view whose axes are stored in reverse order (strides
 * ascending), so it is not contiguous. */
static ct_tensor *reversed_view(const double *values, int ndim, const int64_t *shape,
                                ct_dtype dtype, ct_device device) {
    int64_t n = ref_numel(ndim, shape), rshape[CT_MAX_DIMS], index[CT_MAX_DIMS],
            rindex[CT_MAX_DIMS];
    int perm[CT_MAX_DIMS];
    double *stored = buffer(n);
    if (!stored) return NULL;
    for (int d = 0; d < ndim; d++) rshape[d] = shape[ndim - 1 - d], perm[d] = ndim - 1 - d;
    for (int64_t i = 0; i < n; i++) {
        ref_unravel(i, ndim, shape, index);
        for (int d = 0; d < ndim; d++) rindex[d] = index[ndim - 1 - d];
        stored[ref_ravel(ndim, rshape, rindex)] = values[i];
    }
    ct_tensor *r = ref_tensor(stored, ndim, rshape, dtype, device);
    return r ? ct_permute(r, ndim, perm) : NULL;
}

/* t has shape (ndim, shape) and every element within tol * (1 + |expected|). */
static bool matches(int line, const ct_tensor *t, int ndim, const int64_t *shape,
                    const double *expected, double tol) {
    if (!t) {
        ct_test_fail(__FILE__, line, "NULL: %s %s", ct_status_name(ct_last_status()),
                     ct_last_error());
        return false;
    }
    bool same = ct_ndim(t) == ndim;
    for (int d = 0; same && d < ndim; d++) same = ct_shape(t)[d] == shape[d];
    if (!same) {
        ct_test_fail(__FILE__, line, "rank %d, expected %d (or a size differs)", ct_ndim(t), ndim);
        return false;
    }
    double *v = ref_read(t);
    if (!v) {
        ct_test_fail(__FILE__, line, "cannot read the result back");
        return false;
    }
    for (int64_t i = 0; i < ct_numel(t); i++)
        if (!(fabs(v[i] - expected[i]) <= tol * (1 + fabs(expected[i])))) {
            ct_test_fail(__FILE__, line, "element %lld = %.17g, expected %.17g", (long long)i, v[i],
                         expected[i]);
            free(v);
            return false;
        }
    free(v);
    return true;
}

#define CHECK_MATCH(t, ndim, shape, expected, tol)                                                 \
    do {                                                                                           \
        if (!matches(__LINE__, (t), (ndim), (shape), (expected), (tol))) return;                   \
    } while (0)

/* The C-order position, in a tensor of (n, shape) broadcast to a result of rank out_n (aligned
 * at the last axis), of the element that the result's index reads. */
static int64_t broadcast_source(int n, const int64_t *shape, int out_n, const int64_t *index) {
    int64_t at = 0;
    for (int d = 0; d < n; d++) at = at * shape[d] + (shape[d] == 1 ? 0 : index[out_n - n + d]);
    return at;
}

/* ---- elementwise ---- */

static void check_binary(ct_device device, int ndim, const int64_t *full, uint64_t seed) {
    /* a: every third axis from the second of size 1; b: one axis fewer, every fourth from
     * the third of size 1; the result broadcasts both ways. */
    int64_t ashape[CT_MAX_DIMS], bshape[CT_MAX_DIMS], out[CT_MAX_DIMS], index[CT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        ashape[d] = d % 3 == 1 ? 1 : full[d];
        if (d > 0) bshape[d - 1] = d % 4 == 2 ? 1 : full[d];
        out[d] = ashape[d] == 1 && (d == 0 || bshape[d - 1] == 1) ? 1 : full[d];
    }
    int64_t na = ref_numel(ndim, ashape), nb = ref_numel(ndim - 1, bshape),
            n = ref_numel(ndim, out);
    double *va = values_for(na, seed, CT_F32), *vb = values_for(nb, seed + 1, CT_F32);
    double *sum = buffer(n), *product = buffer(n), *exp_a = buffer(na);
    CHECK(va && vb && sum && product && exp_a);
    for (int64_t i = 0; i < n; i++) {
        ref_unravel(i, ndim, out, index);
        double x = va[broadcast_source(ndim, ashape, ndim, index)];
        double y = vb[broadcast_source(ndim - 1, bshape, ndim, index)];
        sum[i] = x + y;
        product[i] = x * y;
    }
    for (int64_t i = 0; i < na; i++) exp_a[i] = exp(va[i]);
    ct_tensor *a = ref_tensor(va, ndim, ashape, CT_F64, device);
    ct_tensor *a_strided = reversed_view(va, ndim, ashape, CT_F64, device);
    ct_tensor *b = ref_tensor(vb, ndim - 1, bshape, CT_F64, device);
    ct_tensor *b_strided = reversed_view(vb, ndim - 1, bshape, CT_F32, device);
    CHECK(a && a_strided && b && b_strided && !ct_is_contiguous(a_strided));
    CHECK_MATCH(ct_add(a, b), ndim, out, sum, 1e-12);
    CHECK_MATCH(ct_add(a_strided, b), ndim, out, sum, 1e-12);
    CHECK_MATCH(ct_mul(a, b_strided), ndim, out, product, 1e-12); /* f64 * f32: f64 */
    CHECK_MATCH(ct_exp(a_strided), ndim, ashape, exp_a, 1e-12);
}

HIGH_RANK_TEST(test_high_rank_elementwise_broadcast) {
    check_binary(device, 9, shape9, 1);
    check_binary(device, 12, shape12, 2);
    check_binary(device, 16, shape16, 3);
}

/* ---- reductions ---- */

typedef enum { SUM, MAX, MEAN } reduce_kind;

static void check_reduce(ct_device device, int ndim, const int64_t *shape, int naxes,
                         const int *axes, reduce_kind kind, bool keepdim, bool strided) {
    int64_t n = ref_numel(ndim, shape), index[CT_MAX_DIMS], out_shape[CT_MAX_DIMS],
            kept_shape[CT_MAX_DIMS];
    bool reduced[CT_MAX_DIMS] = {false};
    for (int i = 0; i < naxes; i++) reduced[axes[i]] = true;
    int out_ndim = 0;
    for (int d = 0; d < ndim; d++) {
        kept_shape[d] = reduced[d] ? 1 : shape[d];
        if (!reduced[d]) out_shape[out_ndim++] = shape[d];
    }
    int64_t m = ref_numel(ndim, kept_shape);
    double *v = values_for(n, 40 + (uint64_t)ndim, CT_F64), *expected = buffer(m),
           *count = buffer(m);
    CHECK(v && expected && count);
    for (int64_t o = 0; o < m; o++) expected[o] = kind == MAX ? -INFINITY : 0;
    for (int64_t i = 0; i < n; i++) {
        ref_unravel(i, ndim, shape, index);
        for (int d = 0; d < ndim; d++)
            if (reduced[d]) index[d] = 0;
        int64_t o = ref_ravel(ndim, kept_shape, index);
        expected[o] = kind == MAX ? fmax(expected[o], v[i]) : expected[o] + v[i];
        count[o]++;
    }
    if (kind == MEAN)
        for (int64_t o = 0; o < m; o++) expected[o] /= count[o];
    ct_tensor *x = strided ? reversed_view(v, ndim, shape, CT_F64, device)
                           : ref_tensor(v, ndim, shape, CT_F64, device);
    CHECK_NOT_NULL(x);
    ct_tensor *r = kind == SUM   ? ct_sum(x, naxes, axes, keepdim)
                   : kind == MAX ? ct_max(x, naxes, axes, keepdim)
                                 : ct_mean(x, naxes, axes, keepdim);
    CHECK_MATCH(r, keepdim ? ndim : out_ndim, keepdim ? kept_shape : out_shape, expected, 1e-12);
}

HIGH_RANK_TEST(test_high_rank_reduce) {
    check_reduce(device, 16, shape16, 4, (int[]){0, 8, 11, 15}, SUM, false, false);
    check_reduce(device, 16, shape16, 4, (int[]){0, 8, 11, 15}, SUM, true, true);
    check_reduce(device, 16, shape16, 3, (int[]){9, 12, 14}, MAX, false, true);
    check_reduce(device, 12, shape12, 3, (int[]){3, 10, 11}, MAX, true, false);
    check_reduce(device, 12, shape12, 2, (int[]){1, 10}, MEAN, false, true);
    check_reduce(device, 9, shape9, 2, (int[]){8, 1}, MEAN, true, false);
    check_reduce(device, 9, shape9, 1, (int[]){8}, SUM, false, true);
    /* every axis, through NULL and through the list */
    int all[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    check_reduce(device, 16, shape16, 16, all, SUM, false, true);
    double *v = values_for(ref_numel(16, shape16), 56, CT_F64);
    CHECK_NOT_NULL(v);
    double total = 0;
    for (int64_t i = 0; i < ref_numel(16, shape16); i++) total += v[i];
    ct_tensor *x = reversed_view(v, 16, shape16, CT_F64, device);
    CHECK_MATCH(ct_sum(x, 0, NULL, false), 0, NULL, &total, 1e-12);
}

/* ---- permute, transpose, reshape, view, strided copies ---- */

HIGH_RANK_TEST(test_high_rank_permute_reshape_copy) {
    int64_t n = ref_numel(16, shape16), index[CT_MAX_DIMS], source[CT_MAX_DIMS];
    double *v = values_for(n, 60, CT_F32);
    CHECK_NOT_NULL(v);
    ct_tensor *x = ref_tensor(v, 16, shape16, CT_F32, device);
    CHECK_NOT_NULL(x);

    /* permute by d -> 5d + 3 (mod 16), then make contiguous */
    int perm[16];
    int64_t pshape[16];
    for (int d = 0; d < 16; d++) perm[d] = (5 * d + 3) % 16, pshape[d] = shape16[perm[d]];
    double *permuted = buffer(n);
    CHECK_NOT_NULL(permuted);
    for (int64_t i = 0; i < n; i++) {
        ref_unravel(i, 16, pshape, index);
        for (int d = 0; d < 16; d++) source[perm[d]] = index[d];
        permuted[i] = v[ref_ravel(16, shape16, source)];
    }
    ct_tensor *p = ct_permute(x, 16, perm);
    CHECK(p && !ct_is_contiguous(p));
    CHECK_MATCH(p, 16, pshape, permuted, 0);
    ct_tensor *pc = ct_contiguous(p);
    CHECK(pc && ct_is_contiguous(pc));
    CHECK_MATCH(pc, 16, pshape, permuted, 0);

    /* transpose the first and last axes, and reshape that (a copy) to rank 9 */
    int64_t tshape[16];
    memcpy(tshape, shape16, sizeof tshape);
    tshape[0] = shape16[15], tshape[15] = shape16[0];
    double *transposed = buffer(n);
    CHECK_NOT_NULL(transposed);
    for (int64_t i = 0; i < n; i++) {
        ref_unravel(i, 16, tshape, index);
        int64_t first = index[0];
        index[0] = index[15], index[15] = first;
        transposed[i] = v[ref_ravel(16, shape16, index)];
    }
    ct_tensor *t = ct_transpose(x, 0, -1);
    CHECK_MATCH(t, 16, tshape, transposed, 0);
    int64_t shape9b[9] = {3, 2, 2, 2, 2, 2, 2, 2, 8};
    CHECK_MATCH(ct_reshape(t, 9, shape9b), 9, shape9b, transposed, 0);
    CHECK_MATCH(ct_reshape(p, 9, shape9b), 9, shape9b, permuted, 0);

    /* views of the contiguous tensor at rank 12 and back to 16 */
    int64_t shape12b[12] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 1};
    ct_tensor *v12 = ct_view(x, 12, shape12b);
    CHECK_MATCH(v12, 12, shape12b, v, 0);
    CHECK_MATCH(ct_view(v12, 16, shape16), 16, shape16, v, 0);
    CHECK(ct_view(t, 12, shape12b) == NULL); /* not expressible as a view */
    CHECK_ERROR(CT_ERR_SHAPE, "cannot be a view");

    /* a strided slice (axis 1, step 2) copied into a permuted view of a fresh tensor */
    ct_tensor *s = ct_slice(x, 1, 0, 3, 2);
    int64_t sshape[16];
    memcpy(sshape, shape16, sizeof sshape);
    sshape[1] = 2;
    int64_t ns = ref_numel(16, sshape);
    double *sliced = buffer(ns);
    CHECK(s && sliced);
    for (int64_t i = 0; i < ns; i++) {
        ref_unravel(i, 16, sshape, index);
        index[1] *= 2;
        sliced[i] = v[ref_ravel(16, shape16, index)];
    }
    CHECK_MATCH(s, 16, sshape, sliced, 0);
    int rperm[16];
    int64_t dshape[16];
    for (int d = 0; d < 16; d++) rperm[d] = 15 - d, dshape[d] = sshape[15 - d];
    ct_tensor *dst = ct_zeros(16, dshape, CT_F32, device);
    ct_tensor *dview = dst ? ct_permute(dst, 16, rperm) : NULL; /* shape sshape, reversed */
    CHECK(dview && !ct_is_contiguous(dview));
    CHECK_OK(ct_copy(dview, s));
    CHECK_MATCH(dview, 16, sshape, sliced, 0);
    double *stored = buffer(ns);
    CHECK_NOT_NULL(stored);
    for (int64_t i = 0; i < ns; i++) {
        ref_unravel(i, 16, sshape, index);
        for (int d = 0; d < 16; d++) source[d] = index[15 - d];
        stored[ref_ravel(16, dshape, source)] = sliced[i];
    }
    CHECK_MATCH(dst, 16, dshape, stored, 0);
}

/* ---- indexing ---- */

HIGH_RANK_TEST(test_high_rank_index_select) {
    int64_t n = ref_numel(16, shape16), index[CT_MAX_DIMS];
    double *v = values_for(n, 70, CT_F64);
    CHECK_NOT_NULL(v);
    ct_tensor *x = reversed_view(v, 16, shape16, CT_F64, device);
    int64_t picks[3] = {1, 0, 1};
    ct_tensor *idx = ct_from_data(picks, 1, (int64_t[]){3}, CT_I64, device);
    CHECK(x && idx);
    int64_t out[16];
    memcpy(out, shape16, sizeof out);
    out[14] = 3;
    int64_t m = ref_numel(16, out);
    double *expected = buffer(m);
    CHECK_NOT_NULL(expected);
    for (int64_t i = 0; i < m; i++) {
        ref_unravel(i, 16, out, index);
        index[14] = picks[index[14]];
        expected[i] = v[ref_ravel(16, shape16, index)];
    }
    CHECK_MATCH(ct_index_select(x, 14, idx), 16, out, expected, 0);

    /* rank 12, the last axis of size 3 but one (axis 10), picked in reverse */
    int64_t n12 = ref_numel(12, shape12), rev[3] = {2, 1, 0};
    double *w = values_for(n12, 71, CT_F64), *expected12 = buffer(n12);
    ct_tensor *y = w ? ref_tensor(w, 12, shape12, CT_F64, device) : NULL;
    ct_tensor *ridx = ct_from_data(rev, 1, (int64_t[]){3}, CT_I64, device);
    CHECK(y && ridx && expected12);
    for (int64_t i = 0; i < n12; i++) {
        ref_unravel(i, 12, shape12, index);
        index[10] = 2 - index[10];
        expected12[i] = w[ref_ravel(12, shape12, index)];
    }
    CHECK_MATCH(ct_index_select(y, -2, ridx), 12, shape12, expected12, 0);
}

/* ---- matmul with 14 batch axes ---- */

static void check_matmul(ct_device device, ct_dtype dtype, bool strided_b) {
    enum { M = 3, K = 4, N = 2 };
    int64_t ashape[16] = {2, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 2, M, K};
    int64_t bshape[16] = {1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, K, N};
    int64_t oshape[16], index[CT_MAX_DIMS];
    for (int d = 0; d < 14; d++) oshape[d] = ashape[d] > bshape[d] ? ashape[d] : bshape[d];
    oshape[14] = M, oshape[15] = N;
    int64_t na = ref_numel(16, ashape), nb = ref_numel(16, bshape), no = ref_numel(16, oshape);
    double *va = values_for(na, 80, dtype), *vb = values_for(nb, 81, dtype), *expected = buffer(no);
    CHECK(va && vb && expected);
    for (int64_t i = 0; i < no; i++) {
        ref_unravel(i, 16, oshape, index);
        int64_t row = index[14], col = index[15];
        double acc = 0;
        for (int64_t k = 0; k < K; k++) {
            index[14] = row, index[15] = k;
            double x = va[broadcast_source(16, ashape, 16, index)];
            index[14] = k, index[15] = col;
            acc += x * vb[broadcast_source(16, bshape, 16, index)];
        }
        expected[i] = acc;
    }
    ct_tensor *a = ref_tensor(va, 16, ashape, dtype, device);
    ct_tensor *b = strided_b ? reversed_view(vb, 16, bshape, dtype, device)
                             : ref_tensor(vb, 16, bshape, dtype, device);
    CHECK(a && b);
    CHECK_MATCH(ct_matmul(a, b), 16, oshape, expected, dtype == CT_F32 ? 1e-5 : 1e-12);
}

HIGH_RANK_TEST(test_high_rank_matmul_14_batch_axes) {
    check_matmul(device, CT_F64, false);
    check_matmul(device, CT_F64, true);
    check_matmul(device, CT_F32, true);
    check_matmul(device, CT_I32, false);
}

/* ---- tensordot ---- */

/* tensordot(a, b) over a's axis ca and b's axis cb (n = 1), or none (n = 0), against loops. */
static void check_tensordot(ct_device device, int na_dims, const int64_t *ashape, int nb_dims,
                            const int64_t *bshape, int n, int ca, int cb) {
    int64_t oshape[CT_MAX_DIMS], ai[CT_MAX_DIMS], bi[CT_MAX_DIMS], oi[CT_MAX_DIMS];
    int r = 0;
    for (int d = 0; d < na_dims; d++)
        if (!n || d != ca) oshape[r++] = ashape[d];
    for (int d = 0; d < nb_dims; d++)
        if (!n || d != cb) oshape[r++] = bshape[d];
    int64_t na = ref_numel(na_dims, ashape), nb = ref_numel(nb_dims, bshape),
            no = ref_numel(r, oshape), len = n ? ashape[ca] : 1;
    double *va = values_for(na, 90, CT_F64), *vb = values_for(nb, 91, CT_F64),
           *expected = buffer(no);
    CHECK(va && vb && expected);
    for (int64_t i = 0; i < no; i++) {
        ref_unravel(i, r, oshape, oi);
        int k = 0;
        for (int d = 0; d < na_dims; d++)
            if (!n || d != ca) ai[d] = oi[k++];
        for (int d = 0; d < nb_dims; d++)
            if (!n || d != cb) bi[d] = oi[k++];
        double acc = 0;
        for (int64_t j = 0; j < len; j++) {
            if (n) ai[ca] = bi[cb] = j;
            acc += va[ref_ravel(na_dims, ashape, ai)] * vb[ref_ravel(nb_dims, bshape, bi)];
        }
        expected[i] = acc;
    }
    ct_tensor *a = ref_tensor(va, na_dims, ashape, CT_F64, device);
    ct_tensor *b = reversed_view(vb, nb_dims, bshape, CT_F64, device);
    CHECK(a && b);
    CHECK_MATCH(ct_tensordot(a, b, n, &ca, &cb), r, oshape, expected, 1e-12);
}

HIGH_RANK_TEST(test_high_rank_tensordot) {
    /* the array API suite's case: a 5-d and a 4-d array with axes=((), ()), rank 9 */
    int64_t a5[5] = {2, 1, 3, 2, 2}, b4[4] = {3, 1, 2, 2}, empty5[5] = {2, 0, 3, 1, 2};
    check_tensordot(device, 5, a5, 4, b4, 0, 0, 0);
    check_tensordot(device, 5, empty5, 4, b4, 0, 0, 0);
    check_tensordot(device, 4, b4, 5, empty5, 0, 0, 0);
    /* rank 16: two 9-d operands over one axis pair */
    int64_t b9[9] = {2, 2, 1, 2, 1, 2, 1, 1, 2};
    check_tensordot(device, 9, shape9, 9, b9, 1, 8, 0);
    check_tensordot(device, 9, shape9, 9, b9, 1, 3, 5);
    /* rank 17 refused before any work, naming the limit */
    ct_tensor *a = ct_zeros(9, shape9, CT_F32, device), *b = ct_zeros(8, b9, CT_F32, device);
    CHECK(a && b);
    CHECK(ct_tensordot(a, b, 1, (int[]){1}, (int[]){0}) == NULL); /* sizes 3 and 2 */
    CHECK_ERROR(CT_ERR_SHAPE, "paired axes must match");
    CHECK(ct_tensordot(a, b, 0, NULL, NULL) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_tensordot: the result would have rank 17 (at most 16)");
}

/* ---- concat and stack ---- */

HIGH_RANK_TEST(test_high_rank_concat_stack) {
    int64_t n = ref_numel(16, shape16), index[CT_MAX_DIMS];
    int64_t other[16], cat[16];
    memcpy(other, shape16, sizeof other);
    other[11] = 1;
    memcpy(cat, shape16, sizeof cat);
    cat[11] = shape16[11] + 1;
    int64_t no = ref_numel(16, other), nc = ref_numel(16, cat);
    double *v = values_for(n, 100, CT_F64), *w = values_for(no, 101, CT_F64),
           *expected = buffer(nc);
    CHECK(v && w && expected);
    for (int64_t i = 0; i < nc; i++) {
        ref_unravel(i, 16, cat, index);
        if (index[11] < shape16[11]) {
            expected[i] = v[ref_ravel(16, shape16, index)];
        } else {
            index[11] -= shape16[11];
            expected[i] = w[ref_ravel(16, other, index)];
        }
    }
    ct_tensor *x = reversed_view(v, 16, shape16, CT_F64, device);
    ct_tensor *y = ref_tensor(w, 16, other, CT_F64, device);
    CHECK(x && y);
    CHECK_MATCH(ct_concat(2, (const ct_tensor *[]){x, y}, 11), 16, cat, expected, 0);

    /* stack two 15-d tensors at axis 7 into a 16-d one */
    const int64_t *s15 = shape16 + 1;
    int64_t n15 = ref_numel(15, s15), stacked[16];
    for (int d = 0, k = 0; d < 16; d++) stacked[d] = d == 7 ? 2 : s15[k++];
    double *p = values_for(n15, 102, CT_F64), *q = values_for(n15, 103, CT_F64),
           *expected_s = buffer(2 * n15);
    CHECK(p && q && expected_s);
    int64_t index15[CT_MAX_DIMS];
    for (int64_t i = 0; i < 2 * n15; i++) {
        ref_unravel(i, 16, stacked, index);
        for (int d = 0, k = 0; d < 16; d++)
            if (d != 7) index15[k++] = index[d];
        expected_s[i] = (index[7] ? q : p)[ref_ravel(15, s15, index15)];
    }
    ct_tensor *tp = ref_tensor(p, 15, s15, CT_F64, device);
    ct_tensor *tq = reversed_view(q, 15, s15, CT_F64, device);
    CHECK(tp && tq);
    CHECK_MATCH(ct_stack(2, (const ct_tensor *[]){tp, tq}, 7), 16, stacked, expected_s, 0);
    /* stacking 16-d tensors would make 17 */
    CHECK(ct_stack(2, (const ct_tensor *[]){x, x}, 0) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "16");
}

/* ---- the limit ---- */

HIGH_RANK_TEST(test_high_rank_17_refused) {
    int64_t ones[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(ct_zeros(17, ones, CT_F32, device) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_zeros: rank 17 is outside 0..16");
    ct_tensor *x = ct_zeros(16, ones, CT_F32, device);
    CHECK_NOT_NULL(x);
    CHECK(ct_reshape(x, 17, ones) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "rank 17 is outside 0..16");
    CHECK(ct_unsqueeze(x, 0) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "maximum rank 16");
    CHECK(ct_expand(x, 17, ones) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "..16");
}

/* A message names all 16 strides, each at its longest (the axes of size 1 may have any). */
TEST(test_high_rank_message_names_every_stride) {
    static float data[4];
    int64_t shape[16], strides[16];
    for (int d = 0; d < 14; d++) shape[d] = 1, strides[d] = INT64_MIN;
    shape[14] = shape[15] = 2, strides[14] = 1, strides[15] = 2; /* transposed */
    ct_tensor *x = ct_from_external(data, 16, shape, strides, CT_F32, CT_CPU, NULL, NULL);
    CHECK_NOT_NULL(x);
    bool refused = ct_view(x, 1, (int64_t[]){4}) == NULL;
    ct_release(x);
    const char *m = ct_last_error(), *at = m;
    int found = 0;
    while ((at = strstr(at, "-9223372036854775808")) != NULL) found++, at++;
    CHECK(refused && found == 14 && strstr(m, "-9223372036854775808, 1, 2)"));
    CHECK_ERROR(CT_ERR_SHAPE, "cannot be a view");
}

/* ---- autograd ---- */

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

/* sum over axes 1, 6, 9 and 14 of x * y, y broadcast */
static ct_tensor *mul_then_sum(ct_tensor *const *in, void *context) {
    (void)context;
    if (ct_scope_begin() != CT_OK) return NULL;
    ct_tensor *out = ct_sum(ct_mul(in[0], in[1]), 4, (int[]){1, 6, 9, 14}, false);
    if (out) ct_keep(out);
    ct_scope_end();
    return out;
}

/* matmul with 14 batch axes, then a permute of the result */
static ct_tensor *matmul_then_permute(ct_tensor *const *in, void *context) {
    (void)context;
    if (ct_scope_begin() != CT_OK) return NULL;
    int perm[16] = {15, 0, 13, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14};
    ct_tensor *out = ct_permute(ct_matmul(in[0], in[1]), 16, perm);
    if (out) ct_keep(out);
    ct_scope_end();
    return out;
}

/* the rank-9 tensordot (no axis pairs) of the array API suite, times itself */
static ct_tensor *tensordot_squared(ct_tensor *const *in, void *context) {
    (void)context;
    if (ct_scope_begin() != CT_OK) return NULL;
    ct_tensor *t = ct_tensordot(in[0], in[1], 0, NULL, NULL);
    ct_tensor *out = ct_mul(t, t);
    if (out) ct_keep(out);
    ct_scope_end();
    return out;
}

/* concat at axis 10 of a 12-d x and y, a reshape to rank 9, an index_select and a slice */
static ct_tensor *concat_index(ct_tensor *const *in, void *context) {
    const ct_tensor *idx = context;
    if (ct_scope_begin() != CT_OK) return NULL;
    ct_tensor *c = ct_concat(2, (const ct_tensor *[]){in[0], in[1]}, 10);
    ct_tensor *r = ct_reshape(ct_transpose(c, 0, 10), 9, (int64_t[]){3, 2, 3, 2, 1, 2, 1, 2, 1});
    ct_tensor *out = ct_slice(ct_index_select(r, 0, idx), 7, 1, 2, 1);
    if (out) ct_keep(out);
    ct_scope_end();
    return out;
}

HIGH_RANK_TEST(test_high_rank_autograd) {
    int64_t xs[16] = {2, 1, 1, 2, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2, 1};
    int64_t ys[14] = {1, 1, 1, 1, 3, 1, 1, 2, 1, 1, 1, 1, 2, 1}; /* axes 2..15 of the result */
    ct_tensor *in[2] = {ct_gradcheck_leaf(device, 16, xs, 1, -1, 1, true),
                        ct_gradcheck_leaf(device, 14, ys, 2, -1, 1, true)};
    CHECK(in[0] && in[1]);
    CHECK(ct_gradcheck(mul_then_sum, 2, in, NULL, EPS, ATOL, RTOL));

    int64_t as[16] = {2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3};
    int64_t bs[16] = {1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 2};
    ct_tensor *mm[2] = {ct_gradcheck_leaf(device, 16, as, 3, -1, 1, true),
                        ct_gradcheck_leaf(device, 16, bs, 4, -1, 1, true)};
    CHECK(mm[0] && mm[1]);
    CHECK(ct_gradcheck(matmul_then_permute, 2, mm, NULL, EPS, ATOL, RTOL));

    int64_t a5[5] = {2, 1, 3, 1, 2}, b4[4] = {1, 2, 1, 2};
    ct_tensor *td[2] = {ct_gradcheck_leaf(device, 5, a5, 5, -1, 1, true),
                        ct_gradcheck_leaf(device, 4, b4, 6, -1, 1, true)};
    CHECK(td[0] && td[1]);
    CHECK(ct_gradcheck(tensordot_squared, 2, td, NULL, EPS, ATOL, RTOL));

    int64_t xs12[12] = {3, 2, 1, 1, 2, 1, 1, 2, 1, 1, 1, 2}, ys12[12];
    memcpy(ys12, xs12, sizeof ys12);
    xs12[10] = 2; /* concat: 2 + 1 along axis 10, the transpose's axis 0 */
    int64_t picks[4] = {2, 0, 0, 1};
    ct_tensor *idx = ct_from_data(picks, 1, (int64_t[]){4}, CT_I64, device);
    ct_tensor *ci[2] = {ct_gradcheck_leaf(device, 12, xs12, 7, -1, 1, true),
                        ct_gradcheck_leaf(device, 12, ys12, 8, -1, 1, true)};
    CHECK(idx && ci[0] && ci[1]);
    CHECK(ct_gradcheck(concat_index, 2, ci, idx, EPS, ATOL, RTOL));
}

/* ---- safetensors ---- */

HIGH_RANK_TEST(test_high_rank_safetensors) {
    int64_t n = ref_numel(16, shape16);
    double *v = values_for(n, 110, CT_F32);
    ct_tensor *x = v ? reversed_view(v, 16, shape16, CT_F32, device) : NULL;
    ct_state_dict *sd = ct_state_dict_new();
    char dir[256];
    CHECK(x && sd && st_make_dir(dir));
    const char *path = st_path(dir, "rank16.safetensors", 0);
    bool saved = ct_state_dict_set(sd, "x", x) == CT_OK && ct_safetensors_save(path, sd) == CT_OK;
    ct_state_dict_free(sd);
    ct_state_dict *back = saved ? ct_safetensors_load(path, device) : NULL;
    st_remove_dir(dir);
    CHECK(saved && back);
    bool ok = matches(__LINE__, ct_state_dict_get(back, "x"), 16, shape16, v, 0);
    ct_state_dict_free(back);
    CHECK(ok);
}

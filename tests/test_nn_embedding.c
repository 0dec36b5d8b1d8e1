/* ct_embedding against a reference lookup computed here: index shapes of rank 0 to 3, int32
 * and int64 indices, f32 and f64 tables, a non-contiguous table, and the errors. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

static void check_embedding(ct_device device, int ndim, const int64_t *shape, ct_dtype dtype,
                            ct_dtype index_dtype, bool strided, uint64_t seed) {
    int64_t rows = 7, dim = 5, n = ref_numel(ndim, shape), table_shape[2] = {rows, dim};
    double table[35], index[64], expected[320];
    ref_random(table, rows * dim, seed, -2.0, 2.0);
    for (int i = 0; i < 35; i++) table[i] = ref_round(table[i], dtype);
    ref_random(index, n, seed + 1, 0.0, (double)rows);
    for (int64_t i = 0; i < n; i++) {
        index[i] = floor(index[i]);
        for (int64_t j = 0; j < dim; j++)
            expected[i * dim + j] = table[(int64_t)index[i] * dim + j];
    }
    ct_tensor *w =
        (strided ? ref_tensor_strided : ref_tensor)(table, 2, table_shape, dtype, device);
    ct_tensor *idx = ref_tensor(index, ndim, shape, index_dtype, device);
    ct_tensor *out = ct_embedding(idx, w);
    CHECK_TENSOR(out, expected);
    CHECK(ct_ndim(out) == ndim + 1 && ct_shape(out)[ndim] == dim && ct_dtype_of(out) == dtype);
    for (int d = 0; d < ndim; d++) CHECK(ct_shape(out)[d] == shape[d]);
    ct_release(out);
    ct_release(idx);
    ct_release(w);
}

DEVICE_TEST(test_nn_embedding_index_shapes) {
    static const struct {
        int ndim;
        int64_t shape[3];
    } cases[] = {{0, {0}}, {1, {6}}, {2, {3, 4}}, {3, {2, 2, 3}}, {2, {0, 3}}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int mode = 0; mode < 4; mode++) {
            check_embedding(device, cases[c].ndim, cases[c].shape, mode & 1 ? CT_F64 : CT_F32,
                            mode & 2 ? CT_I64 : CT_I32, (mode + (int)c) % 2, 3 * c + (size_t)mode);
            if (ct_test_failed()) return;
        }
}

DEVICE_TEST(test_nn_embedding_errors) {
    ct_tensor *w = ct_zeros(2, (int64_t[]){4, 3}, CT_F32, device);
    ct_tensor *w1 = ct_zeros(1, (int64_t[]){4}, CT_F32, device);
    ct_tensor *wi = ct_zeros(2, (int64_t[]){4, 3}, CT_I32, device);
    ct_tensor *bad = ref_tensor((double[]){1, 4}, 1, (int64_t[]){2}, CT_I64, device);
    ct_tensor *fidx = ct_zeros(1, (int64_t[]){2}, CT_F32, device);
    CHECK(ct_embedding(bad, w) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_embedding: index 4 is out of range for an axis of size 4");
    CHECK(ct_embedding(fidx, w) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_embedding: the index tensor has dtype float32");
    CHECK(ct_embedding(bad, w1) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_embedding: weight has rank 1");
    CHECK(ct_embedding(bad, wi) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_embedding: argument 2 has dtype int32");
    CHECK(ct_embedding(NULL, w) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_embedding: argument 1 is NULL");
    /* Rows of width 0 copy nothing, but the indices are checked all the same. */
    ct_tensor *w0 = ct_zeros(2, (int64_t[]){4, 0}, CT_F32, device);
    CHECK(ct_embedding(bad, w0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_embedding: index 4 is out of range for an axis of size 4");
    ct_release(w0);
    ct_release(fidx), ct_release(bad), ct_release(wi), ct_release(w1), ct_release(w);
}

/* ---- gradient checks (float64, central differences) ---- */

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

static ct_tensor *apply_embedding(ct_tensor *const *in, void *context) {
    return ct_embedding((const ct_tensor *)context, in[0]);
}

/* Repeated indices accumulate in the table's gradient. */
DEVICE_TEST(test_nn_embedding_gradcheck) {
    double index[6] = {1, 3, 1, 0, 3, 3};
    ct_tensor *idx = ref_tensor(index, 2, (int64_t[]){2, 3}, CT_I64, device);
    ct_tensor *w = ct_gradcheck_leaf(device, 2, (int64_t[]){5, 4}, 2, -1.0, 1.0, true);
    bool ok = idx && w && ct_gradcheck(apply_embedding, 1, &w, idx, EPS, ATOL, RTOL);
    ct_release(w);
    ct_release(idx);
    CHECK(ok);
}

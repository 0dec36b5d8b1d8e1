/* ct__matmul_bias (ops/op_impl.h): a @ b + bias with the bias added on the CPU by each
 * thread to its slab of the product right after its GEMM, against a float64 reference and,
 * bit for bit, against ct_matmul then ct_add: one thread and split over threads by rows and
 * by columns, b a transposed view (as ct_linear passes W^T), a batch of matrices; the
 * fallbacks (bfloat16, a strided bias); and ct_linear, which uses it on the rows of its input,
 * against the reference on every device. */
#include <math.h>
#include <stdlib.h>

#include "ct_ref.h"
#include "ops/op_impl.h"

static ct_tensor *random_tensor(int ndim, const int64_t *shape, uint64_t seed, ct_dtype dtype,
                                ct_device device, double **values) {
    int64_t n = ref_numel(ndim, shape);
    double *v = malloc(sizeof(double) * (size_t)n);
    if (!v) return NULL;
    ref_random(v, n, seed, -1, 1);
    for (int64_t i = 0; i < n; i++) v[i] = ref_round(v[i], dtype);
    ct_tensor *t = ref_tensor(v, ndim, shape, dtype, device);
    if (values)
        *values = v;
    else
        free(v);
    return t;
}

/* rows x n = x (rows x k) @ w^T (w: n x k) + bias, in float64. */
static double *reference(const double *x, const double *w, const double *bias, int64_t rows,
                         int64_t k, int64_t n) {
    double *y = malloc(sizeof(double) * (size_t)(rows * n));
    for (int64_t i = 0; y && i < rows; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = bias[j];
            for (int64_t e = 0; e < k; e++) acc += x[i * k + e] * w[j * k + e];
            y[i * n + j] = acc;
        }
    return y;
}

/* The worst |got - expected| relative to 1 + |expected|. */
static double worst_error(const ct_tensor *t, const double *expected) {
    double *got = ref_read(t), worst = got ? 0.0 : INFINITY;
    for (int64_t i = 0; got && i < ct_numel(t); i++) {
        double d = fabs(got[i] - expected[i]) / (1 + fabs(expected[i]));
        worst = d > worst || isnan(d) ? d : worst;
    }
    free(got);
    return worst;
}

/* x (lead..., k), w (n, k), bias (n): op is ct__matmul_bias(x, w^T, bias) or ct_linear. */
static void check_case(ct_device device, ct_dtype dtype, int lead_ndim, const int64_t *lead,
                       int64_t k, int64_t n, bool through_linear) {
    int64_t xshape[4], rows = 1;
    for (int d = 0; d < lead_ndim; d++) xshape[d] = lead[d], rows *= lead[d];
    xshape[lead_ndim] = k;
    double *xv = NULL, *wv = NULL, *bv = NULL;
    ct_tensor *x = random_tensor(lead_ndim + 1, xshape, 1, dtype, device, &xv);
    ct_tensor *w = random_tensor(2, (int64_t[]){n, k}, 2, dtype, device, &wv);
    ct_tensor *bias = random_tensor(1, (int64_t[]){n}, 3, dtype, device, &bv);
    CHECK(x && w && bias);
    double *expected = reference(xv, wv, bv, rows, k, n);
    CHECK_NOT_NULL(expected);
    ct_tensor *wt = ct_transpose(w, 0, 1);
    ct_tensor *y = through_linear ? ct_linear(x, w, bias) : ct__matmul_bias(x, wt, bias);
    CHECK_NOT_NULL(y);
    CHECK(ct_ndim(y) == lead_ndim + 1 && ct_shape(y)[lead_ndim] == n);
    if (!through_linear) { /* the product, then the add: the same bits */
        ct_tensor *product = ct_matmul(x, wt);
        ct_tensor *want = product ? ct_add(product, bias) : NULL;
        double *g = ref_read(y), *w2 = want ? ref_read(want) : NULL;
        CHECK(g && w2);
        int64_t differ = 0;
        for (int64_t i = 0; i < ct_numel(y); i++) differ += g[i] != w2[i];
        if (differ)
            ct_test_fail(__FILE__, __LINE__, "%lld elements differ from ct_matmul + ct_add",
                         (long long)differ);
        free(g), free(w2);
        ct_release(want), ct_release(product);
    }
    double error = worst_error(y, expected);
    if (error > (dtype == CT_F64 ? 1e-13 : 1e-5))
        ct_test_fail(__FILE__, __LINE__, "%s %lld rows, k %lld, n %lld: error %g",
                     ct_dtype_name(dtype), (long long)rows, (long long)k, (long long)n, error);
    free(expected), free(xv), free(wv), free(bv);
    ct_release(y), ct_release(wt), ct_release(bias), ct_release(w), ct_release(x);
}

/* Shapes: one thread (small), two slabs of rows, two slabs of columns (n > m), and a batch. */
static void all_shapes(ct_device device, bool through_linear) {
    const ct_dtype dtypes[2] = {CT_F32, CT_F64};
    for (int t = 0; t < 2; t++) {
        check_case(device, dtypes[t], 1, (int64_t[]){5}, 3, 4, through_linear);
        check_case(device, dtypes[t], 1, (int64_t[]){1024}, 128, 512, through_linear);
        check_case(device, dtypes[t], 1, (int64_t[]){64}, 256, 4096, through_linear);
        check_case(device, dtypes[t], 2, (int64_t[]){3, 50}, 256, 1500, through_linear);
        check_case(device, dtypes[t], 0, NULL, 7, 9, through_linear);
    }
}

DEVICE_TEST(test_matmul_bias_matches_float64_reference) { all_shapes(device, false); }

DEVICE_TEST(test_matmul_bias_linear_matches_float64_reference) { all_shapes(device, true); }

/* Where the kernel takes no bias: the product and then the add, to the bit. */
DEVICE_TEST(test_matmul_bias_fallbacks) {
    ct_tensor *x = random_tensor(2, (int64_t[]){6, 5}, 4, CT_F32, device, NULL);
    ct_tensor *b = random_tensor(2, (int64_t[]){5, 8}, 5, CT_F32, device, NULL);
    ct_tensor *wide = random_tensor(1, (int64_t[]){16}, 6, CT_F32, device, NULL);
    CHECK(x && b && wide);
    ct_tensor *strided = ct_slice(wide, 0, 0, 16, 2); /* a bias with stride 2 */
    ct_tensor *xh = ct_cast(x, CT_BF16), *bh = ct_cast(b, CT_BF16), *sh = ct_cast(strided, CT_BF16);
    CHECK(strided && xh && bh && sh);
    const ct_tensor *cases[2][3] = {{x, b, strided}, {xh, bh, sh}};
    for (int c = 0; c < 2; c++) {
        ct_tensor *got = ct__matmul_bias(cases[c][0], cases[c][1], cases[c][2]);
        ct_tensor *product = ct_matmul(cases[c][0], cases[c][1]);
        ct_tensor *want = product ? ct_add(product, cases[c][2]) : NULL;
        CHECK(got && want);
        double *g = ref_read(got), *w = ref_read(want);
        CHECK(g && w);
        for (int64_t i = 0; i < ct_numel(want); i++) CHECK(g[i] == w[i]);
        free(g), free(w);
        ct_release(got), ct_release(product), ct_release(want);
    }
    ct_release(sh), ct_release(bh), ct_release(xh), ct_release(strided);
    ct_release(wide), ct_release(b), ct_release(x);
}

/* The C API's complex ops beyond the elementwise ones, on every device: ct_real and ct_imag
 * as views a write goes through, ct_conj of every layout (strided, reversed, broadcast, 0-d,
 * eight axes), ct_cumulative_sum, ct_nonzero, ct_unique (NumPy's order: real parts, then
 * imaginary), ct_tensordot, and ct_matmul with operands as they lie (transposed) and packed
 * (reversed). References are C99's double complex. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "ct_test.h"

/* A complex128 tensor of shape (ndim, shape) holding v (C order). */
static ct_tensor *c128(const double complex *v, int ndim, const int64_t *shape, ct_device device) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    ct_complex128 *z = malloc((size_t)(n ? n : 1) * sizeof *z);
    if (!z) return NULL;
    for (int64_t i = 0; i < n; i++) z[i] = (ct_complex128){creal(v[i]), cimag(v[i])};
    ct_tensor *t = ct_from_data(z, ndim, shape, CT_C128, device);
    free(z);
    return t;
}

/* t's n values as double complex (t cast to complex128, made contiguous). */
static bool read_c128(const ct_tensor *t, double complex *out, int64_t n) {
    ct_tensor *wide = t ? ct_cast(t, CT_C128) : NULL;
    ct_tensor *dense = wide ? ct_contiguous(wide) : NULL;
    ct_complex128 z[256];
    bool ok = dense && n <= 256 && ct_numel(dense) == n &&
              ct_copy_to_host(dense, z, (size_t)n * sizeof z[0]) == CT_OK;
    ct_release(wide);
    ct_release(dense);
    for (int64_t i = 0; ok && i < n; i++) out[i] = CMPLX(z[i].re, z[i].im);
    return ok;
}

/* Bitwise equality of the parts (signed zeros and NaN count), or within tol when tol > 0. */
static bool same(double complex a, double complex b, double tol) {
    double p[2][2] = {{creal(a), creal(b)}, {cimag(a), cimag(b)}};
    for (int k = 0; k < 2; k++) {
        double g = p[k][0], w = p[k][1];
        bool ok = isnan(w)  ? isnan(g)
                  : tol > 0 ? fabs(g - w) <= tol * fmax(1.0, fabs(w))
                            : g == w && signbit(g) == signbit(w);
        if (!ok) return false;
    }
    return true;
}

#define CHECK_VALUES(t, want, n, tol)                                                              \
    do {                                                                                           \
        double complex got_[256];                                                                  \
        CHECK(read_c128((t), got_, (n)));                                                          \
        for (int64_t i_ = 0; i_ < (n); i_++)                                                       \
            if (!same(got_[i_], (want)[i_], (tol))) {                                              \
                ct_test_fail(__FILE__, __LINE__, "[%lld] = %g%+gj, expected %g%+gj",               \
                             (long long)i_, creal(got_[i_]), cimag(got_[i_]), creal((want)[i_]),   \
                             cimag((want)[i_]));                                                   \
                return;                                                                            \
            }                                                                                      \
    } while (0)

DEVICE_TEST(test_complex_parts_are_views) {
    double complex v[4] = {CMPLX(1, 2), CMPLX(3, 4), CMPLX(5, 6), CMPLX(7, 8)};
    ct_tensor *z = c128(v, 1, (int64_t[]){4}, device);
    ct_tensor *odd = ct_slice(z, 0, 1, 4, 2); /* elements 1 and 3 */
    ct_tensor *re = ct_real(odd), *im = ct_imag(z);
    CHECK_NOT_NULL(re);
    CHECK_NOT_NULL(im);
    CHECK(ct_shares_storage(re, z) && ct_shares_storage(im, z));
    CHECK_OK(ct_fill(re, -1.0));
    ct_tensor *first = ct_slice(im, 0, 0, 1, 1);
    CHECK_OK(ct_fill(first, -0.0));
    double complex want[4] = {CMPLX(1, -0.0), CMPLX(-1, 4), CMPLX(5, 6), CMPLX(-1, 8)};
    CHECK_VALUES(z, want, 4, 0.0);
    ct_release(first);
    ct_release(re);
    ct_release(im);
    ct_release(odd);
    ct_release(z);
}

DEVICE_TEST(test_complex_conj_of_every_layout) {
    double complex v[256];
    for (int i = 0; i < 256; i++)
        v[i] = CMPLX(i % 3 ? i : -0.0, i % 5 == 0 ? 0.0 : i % 7 ? -i : INFINITY);
    v[9 * 16] = CMPLX(NAN, -0.0);
    ct_tensor *z = c128(v, 2, (int64_t[]){16, 16}, device);
    ct_tensor *t = ct_transpose(z, 0, 1);
    ct_tensor *rev = ct_slice(t, 1, INT64_MAX, INT64_MIN, -3);
    ct_tensor *row = ct_slice(z, 0, 2, 3, 1);
    ct_tensor *wide = ct_expand(row, 2, (int64_t[]){4, 16});
    ct_tensor *first_row = ct_slice(z, 0, 9, 10, 1);
    ct_tensor *first = first_row ? ct_slice(first_row, 1, 0, 1, 1) : NULL; /* the NaN */
    ct_tensor *scalar = first ? ct_reshape(first, 0, NULL) : NULL;
    ct_tensor *deep = ct_reshape(z, 8, (int64_t[]){2, 2, 2, 2, 2, 2, 2, 2});
    ct_tensor *deep_rev = deep ? ct_slice(deep, 7, INT64_MAX, INT64_MIN, -1) : NULL;
    const ct_tensor *views[6] = {z, t, rev, wide, scalar, deep_rev};
    for (int k = 0; k < 6; k++) {
        CHECK_NOT_NULL(views[k]);
        int64_t n = ct_numel(views[k]);
        double complex x[256], want[256];
        CHECK(read_c128(views[k], x, n));
        for (int64_t i = 0; i < n; i++) want[i] = CMPLX(creal(x[i]), -cimag(x[i]));
        ct_tensor *c = ct_conj(views[k]);
        CHECK(ct_dtype_of(c) == CT_C128 && ct_ndim(c) == ct_ndim(views[k]));
        CHECK_VALUES(c, want, n, 0.0);
        ct_release(c);
    }
    ct_tensor *narrow = ct_cast(rev, CT_C64), *nc = ct_conj(narrow);
    CHECK(ct_dtype_of(nc) == CT_C64);
    ct_release(narrow);
    ct_release(nc);
    ct_tensor *empty = ct_empty(2, (int64_t[]){0, 3}, CT_C64, device), *ec = ct_conj(empty);
    CHECK(ec && ct_numel(ec) == 0);
    ct_release(empty);
    ct_release(ec);
    ct_release(first);
    ct_release(first_row);
    for (int k = 2; k < 6; k++) ct_release((ct_tensor *)views[k]);
    ct_release(t);
    ct_release(row);
    ct_release(deep);
    ct_release(z);
}

DEVICE_TEST(test_complex_cumulative_sum_nonzero_unique) {
    double complex v[6] = {CMPLX(1, 2), CMPLX(0, 0),  CMPLX(-3, 0.5),
                           CMPLX(1, 2), CMPLX(1, -2), CMPLX(0, -0.0)};
    ct_tensor *z = c128(v, 2, (int64_t[]){2, 3}, device);
    ct_tensor *cs = ct_cumulative_sum(z, 1, CT_CUMSUM_DEFAULT_DTYPE, true);
    double complex want_cs[8] = {0, v[0], v[0] + v[1], v[0] + v[1] + v[2],
                                 0, v[3], v[3] + v[4], v[3] + v[4] + v[5]};
    CHECK(cs && ct_dtype_of(cs) == CT_C128 && ct_shape(cs)[1] == 4);
    CHECK_VALUES(cs, want_cs, 8, 1e-15);
    ct_release(cs);
    CHECK(ct_cumulative_sum(z, 1, CT_F64, false) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "complex");

    ct_tensor *coords[2] = {NULL, NULL};
    CHECK_OK(ct_nonzero(z, coords));
    int64_t rows[4], cols[4];
    CHECK(ct_numel(coords[0]) == 4);
    CHECK_OK(ct_copy_to_host(coords[0], rows, sizeof rows));
    CHECK_OK(ct_copy_to_host(coords[1], cols, sizeof cols));
    CHECK(rows[0] == 0 && cols[0] == 0 && rows[1] == 0 && cols[1] == 2 && rows[3] == 1 &&
          cols[3] == 1);
    ct_release(coords[0]);
    ct_release(coords[1]);

    ct_unique_result u;
    CHECK_OK(ct_unique(z, &u));
    /* -3+0.5j, 0 (both zeros), 1-2j, 1+2j */
    double complex want_u[4] = {CMPLX(-3, 0.5), CMPLX(0, 0), CMPLX(1, -2), CMPLX(1, 2)};
    CHECK(ct_numel(u.values) == 4);
    CHECK_VALUES(u.values, want_u, 4, 1e-300);
    int64_t counts[4], inverse[6];
    CHECK_OK(ct_copy_to_host(u.counts, counts, sizeof counts));
    CHECK_OK(ct_copy_to_host(u.inverse, inverse, sizeof inverse));
    CHECK(counts[0] == 1 && counts[1] == 2 && counts[2] == 1 && counts[3] == 2);
    CHECK(inverse[0] == 3 && inverse[1] == 1 && inverse[4] == 2 && inverse[5] == 1);
    ct_unique_release(&u);
    ct_release(z);
}

/* out[i][j] = sum_p a[i][p] b[p][j] of row-major a (m x k) and b (k x n). */
static void reference(const double complex *a, const double complex *b, int m, int k, int n,
                      double complex *out) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double complex s = 0;
            for (int p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j];
            out[i * n + j] = s;
        }
}

DEVICE_TEST(test_complex_matmul_layouts_and_tensordot) {
    enum { M = 3, K = 4, N = 5 };
    double complex a[M * K], b[K * N], at[K * M], want[M * N];
    for (int i = 0; i < M * K; i++) a[i] = CMPLX(i - 5, 0.5 * i);
    for (int i = 0; i < K * N; i++) b[i] = CMPLX(1.0 / (i + 1), i % 3 - 1);
    for (int i = 0; i < M; i++)
        for (int p = 0; p < K; p++) at[p * M + i] = a[i * K + p];
    reference(a, b, M, K, N, want);
    ct_tensor *ta = c128(at, 2, (int64_t[]){K, M}, device);
    ct_tensor *tb = c128(b, 2, (int64_t[]){K, N}, device);
    ct_tensor *a_view = ct_transpose(ta, 0, 1); /* a, transposed in memory: CblasTrans */
    ct_tensor *prod = ct_matmul(a_view, tb);
    CHECK_VALUES(prod, want, M * N, 1e-13);
    ct_tensor *c64 = ct_cast(a_view, CT_C64), *b64 = ct_cast(tb, CT_C64);
    ct_tensor *prod64 = ct_matmul(c64, b64);
    CHECK(ct_dtype_of(prod64) == CT_C64);
    CHECK_VALUES(prod64, want, M * N, 1e-5);
    /* b's rows reversed (a negative stride: packed) */
    double complex brev[K * N], want_rev[M * N];
    for (int p = 0; p < K; p++)
        for (int j = 0; j < N; j++) brev[p * N + j] = b[(K - 1 - p) * N + j];
    reference(a, brev, M, K, N, want_rev);
    ct_tensor *rev = ct_slice(tb, 0, INT64_MAX, INT64_MIN, -1);
    ct_tensor *prod_rev = ct_matmul(a_view, rev);
    CHECK_VALUES(prod_rev, want_rev, M * N, 1e-13);
    /* tensordot over a's axis 1 and b's axis 0 */
    ct_tensor *dense_a = ct_contiguous(a_view);
    ct_tensor *td = ct_tensordot(dense_a, tb, 1, (int[]){1}, (int[]){0});
    CHECK_VALUES(td, want, M * N, 1e-13);
    ct_release(td);
    ct_release(dense_a);
    ct_release(prod_rev);
    ct_release(rev);
    ct_release(prod64);
    ct_release(c64);
    ct_release(b64);
    ct_release(prod);
    ct_release(a_view);
    ct_release(ta);
    ct_release(tb);
}

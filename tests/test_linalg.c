/* ct_linalg_* against float64 references computed here (the factors multiplied back
 * together, a naive determinant, orthogonality), in float32 and float64, the errors (a
 * singular or indefinite matrix named by its index in the stack, wrong dtypes and shapes),
 * and finite-difference gradient checks of the differentiable functions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

static const ct_dtype float_dtypes[] = {CT_F32, CT_F64};

/* Tolerance for results of a factorization of small well-conditioned matrices. */
static double tol(ct_dtype dtype) { return dtype == CT_F64 ? 1e-10 : 2e-4; }

/* count n x n matrices, each B B^T + n I for a random B: symmetric positive-definite. */
static double *spd_stack(int64_t count, int64_t n, uint64_t seed) {
    double *b = malloc(sizeof(double) * (size_t)(count * n * n));
    double *a = malloc(sizeof(double) * (size_t)(count * n * n));
    ref_random(b, count * n * n, seed, -1, 1);
    for (int64_t s = 0; s < count; s++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = i == j ? (double)n : 0;
                for (int64_t p = 0; p < n; p++)
                    sum += b[s * n * n + i * n + p] * b[s * n * n + j * n + p];
                a[s * n * n + i * n + j] = sum;
            }
    free(b);
    return a;
}

/* count random n x n matrices with n added to the diagonal (well-conditioned). */
static double *general_stack(int64_t count, int64_t m, int64_t n, uint64_t seed) {
    double *a = malloc(sizeof(double) * (size_t)(count * m * n + 1));
    ref_random(a, count * m * n, seed, -1, 1);
    for (int64_t s = 0; s < count; s++)
        for (int64_t i = 0; i < m && i < n; i++) a[s * m * n + i * n + i] += (double)n;
    return a;
}

/* c (m x p) = a (m x k) @ b (k x p), with a or b read transposed when ta or tb. */
static void ref_mm(const double *a, bool ta, const double *b, bool tb, int64_t m, int64_t k,
                   int64_t p, double *c) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < p; j++) {
            double sum = 0;
            for (int64_t q = 0; q < k; q++)
                sum += (ta ? a[q * m + i] : a[i * k + q]) * (tb ? b[j * k + q] : b[q * p + j]);
            c[i * p + j] = sum;
        }
}

/* max |x[i] - y[i]| over n elements. */
static double max_diff(const double *x, const double *y, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(x[i] - y[i]));
    return worst;
}

/* The identity's deviation of q^T q for q (m x k). */
static double orthogonality(const double *q, int64_t m, int64_t k) {
    double *p = malloc(sizeof(double) * (size_t)(k * k + 1)), worst = 0;
    ref_mm(q, true, q, false, k, m, k, p);
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) worst = fmax(worst, fabs(p[i * k + j] - (i == j)));
    free(p);
    return worst;
}

/* det of an n x n matrix by Gaussian elimination with partial pivoting (a is destroyed). */
static double ref_det(double *a, int64_t n) {
    double det = 1;
    for (int64_t c = 0; c < n; c++) {
        int64_t pivot = c;
        for (int64_t r = c + 1; r < n; r++)
            if (fabs(a[r * n + c]) > fabs(a[pivot * n + c])) pivot = r;
        if (a[pivot * n + c] == 0) return 0;
        if (pivot != c) {
            for (int64_t j = 0; j < n; j++) {
                double t = a[c * n + j];
                a[c * n + j] = a[pivot * n + j], a[pivot * n + j] = t;
            }
            det = -det;
        }
        det *= a[c * n + c];
        for (int64_t r = c + 1; r < n; r++) {
            double f = a[r * n + c] / a[c * n + c];
            for (int64_t j = c; j < n; j++) a[r * n + j] -= f * a[c * n + j];
        }
    }
    return det;
}

/* The error of the last call names op and `matrix N`. */
static bool error_names(const char *op, int64_t index) {
    char wanted[64];
    snprintf(wanted, sizeof wanted, "matrix %lld of the stack", (long long)index);
    return strstr(ct_last_error(), op) && strstr(ct_last_error(), wanted);
}

DEVICE_TEST(test_linalg_cholesky) {
    for (int d = 0; d < 2; d++) {
        ct_dtype dtype = float_dtypes[d];
        int64_t shape[3] = {3, 5, 5}, n = 5, count = 3;
        double *a = spd_stack(count, n, 11);
        ct_tensor *x = ref_tensor(a, 3, shape, dtype, device);
        ct_tensor *l = ct_linalg_cholesky(x, false), *u = ct_linalg_cholesky(x, true);
        double *lv = l ? ref_read(l) : NULL, *uv = u ? ref_read(u) : NULL;
        double *back = malloc(sizeof(double) * (size_t)(n * n)), worst = 0;
        bool lower = true;
        for (int64_t s = 0; lv && uv && s < count; s++) {
            ref_mm(lv + s * n * n, false, lv + s * n * n, true, n, n, n, back);
            worst = fmax(worst, max_diff(back, a + s * n * n, n * n) / (double)n);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) {
                    if (j > i && lv[s * n * n + i * n + j] != 0) lower = false;
                    if (uv[s * n * n + j * n + i] != lv[s * n * n + i * n + j]) lower = false;
                }
        }
        ct_release(x), ct_release(l), ct_release(u);
        free(a), free(back), free(lv), free(uv);
        CHECK(lv && uv);
        CHECK(lower);
        CHECK(worst < tol(dtype));
    }
}

DEVICE_TEST(test_linalg_cholesky_not_positive_definite) {
    int64_t shape[3] = {3, 4, 4}, n = 4;
    double *a = spd_stack(3, n, 12);
    a[1 * n * n + 2 * n + 2] = -50; /* matrix 1: a negative diagonal element */
    ct_tensor *x = ref_tensor(a, 3, shape, CT_F64, device);
    free(a);
    ct_tensor *l = ct_linalg_cholesky(x, false);
    ct_release(x);
    CHECK(l == NULL);
    CHECK(ct_last_status() == CT_ERR_INVALID_ARG);
    CHECK(error_names("ct_linalg_cholesky", 1));
    CHECK(strstr(ct_last_error(), "not positive-definite"));
}

DEVICE_TEST(test_linalg_solve_and_inv) {
    for (int d = 0; d < 2; d++) {
        ct_dtype dtype = float_dtypes[d];
        int64_t n = 5, k = 2;
        double *a = general_stack(3, n, n, 21), b[3 * 5 * 2], bv[5];
        ref_random(b, 3 * n * k, 22, -1, 1);
        ref_random(bv, n, 23, -1, 1);
        ct_tensor *x1 = ref_tensor(a, 3, (int64_t[]){3, n, n}, dtype, device);
        ct_tensor *x2 = ref_tensor(b, 3, (int64_t[]){3, n, k}, dtype, device);
        ct_tensor *v = ref_tensor(bv, 1, (int64_t[]){n}, dtype, device);
        ct_tensor *one = ref_tensor(a, 2, (int64_t[]){n, n}, dtype, device); /* matrix 0 */
        ct_tensor *x = ct_linalg_solve(x1, x2), *xv = ct_linalg_solve(x1, v);
        ct_tensor *xb = ct_linalg_solve(one, x2), *inv = ct_linalg_inv(x1);
        double *xs = x ? ref_read(x) : NULL, *xvs = xv ? ref_read(xv) : NULL;
        double *xbs = xb ? ref_read(xb) : NULL, *invs = inv ? ref_read(inv) : NULL;
        bool shapes = x && xv && xb && inv && ct_ndim(xv) == 2 && ct_shape(xv)[0] == 3 &&
                      ct_shape(xv)[1] == n && ct_ndim(xb) == 3 && ct_shape(xb)[0] == 3;
        double worst = 0, c[25];
        for (int64_t s = 0; xs && xvs && xbs && invs && s < 3; s++) {
            ref_mm(a + s * n * n, false, xs + s * n * k, false, n, n, k, c);
            worst = fmax(worst, max_diff(c, b + s * n * k, n * k));
            ref_mm(a + s * n * n, false, xvs + s * n, false, n, n, 1, c);
            worst = fmax(worst, max_diff(c, bv, n));
            ref_mm(a, false, xbs + s * n * k, false, n, n, k, c);
            worst = fmax(worst, max_diff(c, b + s * n * k, n * k));
            ref_mm(a + s * n * n, false, invs + s * n * n, false, n, n, n, c);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) worst = fmax(worst, fabs(c[i * n + j] - (i == j)));
        }
        ct_release(x1), ct_release(x2), ct_release(v), ct_release(one);
        ct_release(x), ct_release(xv), ct_release(xb), ct_release(inv);
        free(a), free(xs), free(xvs), free(xbs), free(invs);
        CHECK(shapes);
        CHECK(worst < tol(dtype) * 10);
    }
}

DEVICE_TEST(test_linalg_singular) {
    int64_t n = 4;
    double *a = general_stack(4, n, n, 31), b[4 * 4];
    for (int64_t j = 0; j < n; j++) a[2 * n * n + 1 * n + j] = 0; /* matrix 2: a zero row */
    ref_random(b, 4 * n, 32, -1, 1);
    ct_tensor *x1 = ref_tensor(a, 3, (int64_t[]){4, n, n}, CT_F64, device);
    ct_tensor *x2 = ref_tensor(b, 2, (int64_t[]){4, n}, CT_F64, device);
    free(a);
    ct_tensor *inv = ct_linalg_inv(x1);
    bool inv_named = inv == NULL && ct_last_status() == CT_ERR_INVALID_ARG &&
                     error_names("ct_linalg_inv", 2) && strstr(ct_last_error(), "singular");
    ct_tensor *b3 = ct_unsqueeze(x2, -1);
    ct_tensor *x = ct_linalg_solve(x1, b3);
    bool solve_named = x == NULL && error_names("ct_linalg_solve", 2);
    ct_tensor *det = ct_linalg_det(x1), *sign = NULL, *logabs = NULL;
    ct_status slog = ct_linalg_slogdet(x1, &sign, &logabs);
    double *dv = det ? ref_read(det) : NULL, *sv = sign ? ref_read(sign) : NULL;
    double *lv = logabs ? ref_read(logabs) : NULL;
    bool singular_det = dv && sv && lv && dv[2] == 0 && sv[2] == 0 && isinf(lv[2]) && lv[2] < 0;
    ct_release(x1), ct_release(x2), ct_release(b3), ct_release(det), ct_release(sign);
    ct_release(logabs);
    free(dv), free(sv), free(lv);
    CHECK(inv_named);
    CHECK(solve_named);
    CHECK_OK(slog);
    CHECK(singular_det);
}

/* Complex stacks (real matrices cast to complex128 and complex64: Hermitian where symmetric):
 * the errors name the op and the bad matrix as for real ones, and the real results
 * (eigenvalues, singular values, log|det|) have the parts' dtype. ct_linalg_* against
 * complex NumPy references: python/tests/test_linalg_complex.py. */
DEVICE_TEST(test_linalg_complex_errors_and_dtypes) {
    static const ct_dtype complex_dtypes[] = {CT_C64, CT_C128};
    for (int d = 0; d < 2; d++) {
        ct_dtype dtype = complex_dtypes[d], real = d ? CT_F64 : CT_F32;
        int64_t n = 4;
        double *spd = spd_stack(3, n, 51), *general = general_stack(4, n, n, 52);
        spd[1 * n * n + 2 * n + 2] = -50;                                   /* matrix 1 */
        for (int64_t j = 0; j < n; j++) general[2 * n * n + 1 * n + j] = 0; /* matrix 2 */
        ct_tensor *rs = ref_tensor(spd, 3, (int64_t[]){3, n, n}, CT_F64, device);
        ct_tensor *rg = ref_tensor(general, 3, (int64_t[]){4, n, n}, CT_F64, device);
        ct_tensor *xs = ct_cast(rs, dtype), *xg = ct_cast(rg, dtype);
        free(spd), free(general);
        ct_tensor *l = ct_linalg_cholesky(xs, false);
        bool cholesky_named = l == NULL && ct_last_status() == CT_ERR_INVALID_ARG &&
                              error_names("ct_linalg_cholesky", 1) &&
                              strstr(ct_last_error(), "not positive-definite");
        ct_tensor *inv = ct_linalg_inv(xg);
        bool inv_named =
            inv == NULL && error_names("ct_linalg_inv", 2) && strstr(ct_last_error(), "singular");
        ct_tensor *solved = ct_linalg_solve(xg, xg);
        bool solve_named = solved == NULL && error_names("ct_linalg_solve", 2);
        ct_tensor *sign = NULL, *logabs = NULL, *w = ct_linalg_eigvalsh(xs);
        ct_tensor *s = ct_linalg_svdvals(xg);
        ct_status slog = ct_linalg_slogdet(xg, &sign, &logabs);
        double *sv = sign ? ref_read(sign) : NULL, *lv = logabs ? ref_read(logabs) : NULL;
        bool dtypes = sign && logabs && w && s && ct_dtype_of(sign) == dtype &&
                      ct_dtype_of(logabs) == real && ct_dtype_of(w) == real &&
                      ct_dtype_of(s) == real;
        bool singular = sv && lv && sv[2] == 0 && isinf(lv[2]) && lv[2] < 0 && sv[0] == 1;
        ct_release(rs), ct_release(rg), ct_release(xs), ct_release(xg), ct_release(sign);
        ct_release(logabs), ct_release(w), ct_release(s);
        free(sv), free(lv);
        CHECK(cholesky_named);
        CHECK(inv_named);
        CHECK(solve_named);
        CHECK_OK(slog);
        CHECK(dtypes);
        CHECK(singular);
    }
}

DEVICE_TEST(test_linalg_det) {
    for (int d = 0; d < 2; d++) {
        ct_dtype dtype = float_dtypes[d];
        int64_t n = 4, count = 5;
        double *a = malloc(sizeof(double) * (size_t)(count * n * n));
        ref_random(a, count * n * n, 41, -2, 2);
        ct_tensor *x = ref_tensor(a, 3, (int64_t[]){count, n, n}, dtype, device);
        ct_tensor *det = ct_linalg_det(x), *sign = NULL, *logabs = NULL;
        ct_status slog = ct_linalg_slogdet(x, &sign, &logabs);
        double *dv = det ? ref_read(det) : NULL, *sv = sign ? ref_read(sign) : NULL;
        double *lv = logabs ? ref_read(logabs) : NULL, worst = 0;
        for (int64_t s = 0; dv && sv && lv && s < count; s++) {
            double expected = ref_det(a + s * n * n, n);
            worst = fmax(worst, fabs(dv[s] - expected) / fmax(1, fabs(expected)));
            worst = fmax(worst, fabs(sv[s] * exp(lv[s]) - expected) / fmax(1, fabs(expected)));
        }
        ct_release(x), ct_release(det), ct_release(sign), ct_release(logabs);
        free(a), free(dv), free(sv), free(lv);
        CHECK_OK(slog);
        CHECK(worst < tol(dtype) * 10);
    }
}

DEVICE_TEST(test_linalg_eigh) {
    for (int d = 0; d < 2; d++) {
        ct_dtype dtype = float_dtypes[d];
        int64_t n = 6, count = 2;
        double *a = spd_stack(count, n, 51);
        for (int64_t i = 0; i < count * n * n; i++) a[i] -= 3; /* some negative eigenvalues */
        ct_tensor *x = ref_tensor(a, 3, (int64_t[]){count, n, n}, dtype, device);
        ct_tensor *w = NULL, *v = NULL, *values = ct_linalg_eigvalsh(x);
        ct_status status = ct_linalg_eigh(x, &w, &v);
        double *wv = w ? ref_read(w) : NULL, *vv = v ? ref_read(v) : NULL;
        double *only = values ? ref_read(values) : NULL, av[36], worst = 0;
        bool ascending = true;
        for (int64_t s = 0; wv && vv && only && s < count; s++) {
            ref_mm(a + s * n * n, false, vv + s * n * n, false, n, n, n, av);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++)
                    worst = fmax(worst,
                                 fabs(av[i * n + j] - vv[s * n * n + i * n + j] * wv[s * n + j]) /
                                     (double)n);
            worst = fmax(worst, orthogonality(vv + s * n * n, n, n));
            worst = fmax(worst, max_diff(only + s * n, wv + s * n, n) / (double)n);
            for (int64_t j = 1; j < n; j++) ascending &= wv[s * n + j - 1] <= wv[s * n + j];
        }
        ct_release(x), ct_release(w), ct_release(v), ct_release(values);
        free(a), free(wv), free(vv), free(only);
        CHECK_OK(status);
        CHECK(ascending);
        CHECK(worst < tol(dtype) * 10);
    }
}

/* SVD of an m x n stack: U diag(S) Vh gives A back, U and V orthonormal, S descending and
 * as svdvals gives it. */
static void check_svd(ct_device device, ct_dtype dtype, int64_t m, int64_t n, bool full) {
    int64_t count = 2, k = m < n ? m : n, uc = full ? m : k, vr = full ? n : k;
    double *a = malloc(sizeof(double) * (size_t)(count * m * n));
    ref_random(a, count * m * n, 61 + (uint64_t)m, -1, 1);
    ct_tensor *x = ref_tensor(a, 3, (int64_t[]){count, m, n}, dtype, device);
    ct_tensor *u = NULL, *s = NULL, *vh = NULL, *values = ct_linalg_svdvals(x);
    ct_status status = ct_linalg_svd(x, full, &u, &s, &vh);
    double *uv = u ? ref_read(u) : NULL, *sv = s ? ref_read(s) : NULL;
    double *vv = vh ? ref_read(vh) : NULL, *only = values ? ref_read(values) : NULL;
    double worst = 0, *us = malloc(sizeof(double) * (size_t)(m * k)), back[64];
    bool ok_shapes = u && vh && ct_shape(u)[2] == uc && ct_shape(vh)[1] == vr, descending = true;
    for (int64_t b = 0; ok_shapes && sv && only && b < count; b++) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < k; j++)
                us[i * k + j] = uv[b * m * uc + i * uc + j] * sv[b * k + j];
        /* vh's first k rows */
        ref_mm(us, false, vv + b * vr * n, false, m, k, n, back);
        worst = fmax(worst, max_diff(back, a + b * m * n, m * n));
        worst = fmax(worst, orthogonality(uv + b * m * uc, m, uc));
        double *v = malloc(sizeof(double) * (size_t)(n * vr));
        for (int64_t i = 0; i < vr; i++)
            for (int64_t j = 0; j < n; j++) v[j * vr + i] = vv[b * vr * n + i * n + j];
        worst = fmax(worst, orthogonality(v, n, vr));
        free(v);
        worst = fmax(worst, max_diff(only + b * k, sv + b * k, k));
        for (int64_t j = 1; j < k; j++) descending &= sv[b * k + j - 1] >= sv[b * k + j];
    }
    ct_release(x), ct_release(u), ct_release(s), ct_release(vh), ct_release(values);
    free(a), free(uv), free(sv), free(vv), free(only), free(us);
    CHECK_OK(status);
    CHECK(ok_shapes);
    CHECK(descending);
    CHECK(worst < tol(dtype) * 10);
}

DEVICE_TEST(test_linalg_svd) {
    for (int d = 0; d < 2; d++)
        for (int full = 0; full < 2; full++) {
            check_svd(device, float_dtypes[d], 5, 3, full);
            check_svd(device, float_dtypes[d], 3, 5, full);
            check_svd(device, float_dtypes[d], 4, 4, full);
            if (ct_test_failed()) return;
        }
}

/* QR of an m x n stack: Q R gives A back, Q orthonormal, R upper triangular. */
static void check_qr(ct_device device, ct_dtype dtype, int64_t m, int64_t n, const char *mode) {
    int64_t count = 2, k = m < n ? m : n, qc = strcmp(mode, "complete") == 0 ? m : k;
    double *a = malloc(sizeof(double) * (size_t)(count * m * n));
    ref_random(a, count * m * n, 71 + (uint64_t)n, -1, 1);
    ct_tensor *x = ref_tensor(a, 3, (int64_t[]){count, m, n}, dtype, device);
    ct_tensor *q = NULL, *r = NULL;
    ct_status status = ct_linalg_qr(x, mode, &q, &r);
    double *qv = q ? ref_read(q) : NULL, *rv = r ? ref_read(r) : NULL, back[64], worst = 0;
    bool shapes = q && r && ct_shape(q)[2] == qc && ct_shape(r)[1] == qc, upper = true;
    for (int64_t b = 0; shapes && qv && rv && b < count; b++) {
        ref_mm(qv + b * m * qc, false, rv + b * qc * n, false, m, qc, n, back);
        worst = fmax(worst, max_diff(back, a + b * m * n, m * n));
        worst = fmax(worst, orthogonality(qv + b * m * qc, m, qc));
        for (int64_t i = 0; i < qc; i++)
            for (int64_t j = 0; j < i && j < n; j++) upper &= rv[b * qc * n + i * n + j] == 0;
    }
    ct_release(x), ct_release(q), ct_release(r);
    free(a), free(qv), free(rv);
    CHECK_OK(status);
    CHECK(shapes);
    CHECK(upper);
    CHECK(worst < tol(dtype) * 10);
}

DEVICE_TEST(test_linalg_qr) {
    for (int d = 0; d < 2; d++) {
        check_qr(device, float_dtypes[d], 5, 3, "reduced");
        check_qr(device, float_dtypes[d], 5, 3, "complete");
        check_qr(device, float_dtypes[d], 3, 5, "reduced");
        check_qr(device, float_dtypes[d], 3, 5, "complete");
        if (ct_test_failed()) return;
    }
}

DEVICE_TEST(test_linalg_pinv_rank) {
    /* A 5 x 4 matrix of rank 2: the outer products of two pairs of vectors. */
    double a[20], p[5], q[4], r[5], s[4];
    ref_random(p, 5, 81, -1, 1), ref_random(q, 4, 82, -1, 1);
    ref_random(r, 5, 83, -1, 1), ref_random(s, 4, 84, -1, 1);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) a[i * 4 + j] = p[i] * q[j] + r[i] * s[j];
    ct_tensor *x = ref_tensor(a, 2, (int64_t[]){5, 4}, CT_F64, device);
    ct_tensor *rank = ct_linalg_matrix_rank(x, -1), *pinv = ct_linalg_pinv(x, -1);
    double *rv = rank ? ref_read(rank) : NULL, *pv = pinv ? ref_read(pinv) : NULL;
    double ap[25], apa[20];
    bool ok = rv && pv && ct_dtype_of(rank) == CT_I64 && rv[0] == 2 && ct_shape(pinv)[0] == 4;
    if (ok) {
        ref_mm(a, false, pv, false, 5, 4, 5, ap);
        ref_mm(ap, false, a, false, 5, 5, 4, apa);
    }
    double worst = ok ? max_diff(apa, a, 20) : 1;
    ct_release(x), ct_release(rank), ct_release(pinv);
    free(rv), free(pv);
    CHECK(ok);
    CHECK(worst < 1e-10);
}

DEVICE_TEST(test_linalg_norms) {
    /* Q diag(5, 2) with Q a rotation: singular values 5 and 2. */
    double c = cos(0.3), s = sin(0.3), a[4] = {5 * c, -2 * s, 5 * s, 2 * c};
    ct_tensor *x = ref_tensor(a, 2, (int64_t[]){2, 2}, CT_F64, device);
    const char *ords[] = {"fro", "nuc", "inf", "-inf", "1", "-1", "2", "-2"};
    double expected[8] = {sqrt(29.0),
                          7,
                          fmax(fabs(a[0]) + fabs(a[1]), fabs(a[2]) + fabs(a[3])),
                          fmin(fabs(a[0]) + fabs(a[1]), fabs(a[2]) + fabs(a[3])),
                          fmax(fabs(a[0]) + fabs(a[2]), fabs(a[1]) + fabs(a[3])),
                          fmin(fabs(a[0]) + fabs(a[2]), fabs(a[1]) + fabs(a[3])),
                          5,
                          2};
    for (int i = 0; i < 8; i++) {
        ct_tensor *norm = ct_linalg_matrix_norm(x, ords[i], false);
        ct_tensor *kept = ct_linalg_matrix_norm(x, ords[i], true);
        bool kept_shape = kept && ct_ndim(kept) == 2 && ct_shape(kept)[0] == 1;
        ct_release(kept);
        CHECK(kept_shape);
        CHECK(norm && ct_ndim(norm) == 0);
        CHECK_TENSOR(norm, &expected[i]);
        ct_release(norm);
    }
    double v[5] = {3, -4, 0, 1, -2};
    ct_tensor *vec = ref_tensor(v, 1, (int64_t[]){5}, CT_F64, device);
    double ords_v[6] = {2, 1, INFINITY, -INFINITY, 0, 3};
    double want_v[6] = {sqrt(30.0), 10, 4, 0, 4, cbrt(27 + 64 + 1 + 8)};
    for (int i = 0; i < 6; i++) {
        ct_tensor *norm = ct_linalg_vector_norm(vec, 0, NULL, ords_v[i], false);
        CHECK_TENSOR(norm, &want_v[i]);
        ct_release(norm);
    }
    ct_tensor *rows = ct_linalg_vector_norm(x, 1, (int[]){1}, 2, true);
    double want_rows[2] = {hypot(a[0], a[1]), hypot(a[2], a[3])};
    CHECK(rows && ct_ndim(rows) == 2 && ct_shape(rows)[1] == 1);
    CHECK_TENSOR(rows, want_rows);
    ct_release(rows), ct_release(x), ct_release(vec);
}

DEVICE_TEST(test_linalg_power_trace_cross_outer) {
    int64_t n = 3;
    double *a = general_stack(1, n, n, 91), a2[9], a3[9], id[9];
    ref_mm(a, false, a, false, n, n, n, a2);
    ref_mm(a2, false, a, false, n, n, n, a3);
    for (int i = 0; i < 9; i++) id[i] = i % 4 == 0;
    ct_tensor *x = ref_tensor(a, 2, (int64_t[]){n, n}, CT_F64, device);
    ct_tensor *p3 = ct_linalg_matrix_power(x, 3), *p0 = ct_linalg_matrix_power(x, 0);
    ct_tensor *pm2 = ct_linalg_matrix_power(x, -2), *p2 = ct_linalg_matrix_power(x, 2);
    ct_tensor *check = ct_matmul(pm2, p2);
    ct_release(x), ct_release(p2);
    CHECK_TENSOR(p3, a3);
    CHECK_TENSOR(p0, id);
    CHECK_TENSOR(check, id);
    ct_release(p3), ct_release(p0), ct_release(pm2), ct_release(check);
    free(a);
    /* trace and diagonal of a 3 x 4 matrix at offsets -1, 0 and 2 */
    double m[12];
    for (int i = 0; i < 12; i++) m[i] = i;
    ct_tensor *mt = ref_tensor(m, 2, (int64_t[]){3, 4}, CT_F64, device);
    ct_tensor *d0 = ct_linalg_diagonal(mt, 0), *d2 = ct_linalg_diagonal(mt, 2);
    ct_tensor *dm1 = ct_linalg_diagonal(mt, -1), *t1 = ct_linalg_trace(mt, 1);
    double want_d0[3] = {0, 5, 10}, want_d2[2] = {2, 7}, want_dm1[2] = {4, 9}, want_t1 = 1 + 6 + 11;
    CHECK(d0 && ct_numel(d0) == 3 && d2 && ct_numel(d2) == 2 && dm1 && ct_numel(dm1) == 2);
    CHECK_TENSOR(d0, want_d0);
    CHECK_TENSOR(d2, want_d2);
    CHECK_TENSOR(dm1, want_dm1);
    CHECK_TENSOR(t1, &want_t1);
    ct_release(mt), ct_release(d0), ct_release(d2), ct_release(dm1), ct_release(t1);
    double u[6] = {1, 2, 3, -1, 0, 2}, v[3] = {4, 5, 6};
    ct_tensor *ut = ref_tensor(u, 2, (int64_t[]){2, 3}, CT_F64, device);
    ct_tensor *vt = ref_tensor(v, 1, (int64_t[]){3}, CT_F64, device);
    ct_tensor *cross = ct_linalg_cross(ut, vt, -1);
    double want_cross[6] = {2 * 6 - 3 * 5, 3 * 4 - 1 * 6,    1 * 5 - 2 * 4,
                            0 * 6 - 2 * 5, 2 * 4 - (-1) * 6, -1 * 5 - 0 * 4};
    CHECK_TENSOR(cross, want_cross);
    ct_tensor *first = ct_slice(ut, 0, 0, 1, 1), *flat = ct_flatten(first, 0, 1);
    ct_tensor *outer = ct_linalg_outer(flat, vt);
    double want_outer[9] = {4, 5, 6, 8, 10, 12, 12, 15, 18};
    CHECK(outer && ct_ndim(outer) == 2);
    CHECK_TENSOR(outer, want_outer);
    ct_release(ut), ct_release(vt), ct_release(cross), ct_release(first), ct_release(flat);
    ct_release(outer);
}

DEVICE_TEST(test_linalg_argument_errors) {
    ct_tensor *ints = ct_zeros(2, (int64_t[]){3, 3}, CT_I32, device);
    ct_tensor *wide = ct_zeros(2, (int64_t[]){3, 4}, CT_F64, device);
    ct_tensor *vec = ct_zeros(1, (int64_t[]){3}, CT_F64, device);
    ct_tensor *r = ct_linalg_inv(ints);
    CHECK(r == NULL && ct_last_status() == CT_ERR_DTYPE);
    CHECK(strstr(ct_last_error(), "ct_linalg_inv") && strstr(ct_last_error(), "int32"));
    r = ct_linalg_cholesky(wide, false);
    CHECK(r == NULL && ct_last_status() == CT_ERR_SHAPE);
    CHECK(strstr(ct_last_error(), "square"));
    r = ct_linalg_det(vec);
    CHECK(r == NULL && ct_last_status() == CT_ERR_SHAPE);
    ct_tensor *four = ct_zeros(1, (int64_t[]){4}, CT_F64, device);
    ct_tensor *sq = ct_eye(3, 3, CT_F64, device);
    r = ct_linalg_solve(sq, four);
    CHECK(r == NULL && ct_last_status() == CT_ERR_SHAPE);
    r = ct_linalg_matrix_norm(sq, "3", false);
    CHECK(r == NULL && ct_last_status() == CT_ERR_INVALID_ARG);
    ct_tensor *q = NULL, *rr = NULL;
    CHECK(ct_linalg_qr(sq, "economic", &q, &rr) == CT_ERR_INVALID_ARG);
    ct_release(ints), ct_release(wide), ct_release(vec), ct_release(four), ct_release(sq);
}

/* ---- gradients ---- */

#define EPS 1e-6
#define ATOL 1e-6
#define RTOL 1e-5

static ct_tensor *grad_leaf(ct_device device, const double *values, int ndim,
                            const int64_t *shape) {
    ct_tensor *t = ref_tensor(values, ndim, shape, CT_F64, device);
    if (t) ct_set_requires_grad(t, true);
    return t;
}

static ct_tensor *f_solve(ct_tensor *const *in, void *c) { return ct_linalg_solve(in[0], in[1]); }
static ct_tensor *f_inv(ct_tensor *const *in, void *c) { return ct_linalg_inv(in[0]); }
static ct_tensor *f_det(ct_tensor *const *in, void *c) { return ct_linalg_det(in[0]); }
static ct_tensor *f_logabsdet(ct_tensor *const *in, void *c) {
    ct_tensor *sign = NULL, *logabs = NULL;
    ct_linalg_slogdet(in[0], &sign, &logabs);
    ct_release(sign);
    return logabs;
}
static ct_tensor *f_cholesky(ct_tensor *const *in, void *c) {
    return ct_linalg_cholesky(in[0], *(bool *)c);
}
static ct_tensor *f_eigh(ct_tensor *const *in, void *c) {
    ct_tensor *w = NULL, *v = NULL;
    ct_linalg_eigh(in[0], &w, &v);
    if (*(int *)c == 0) return ct_release(v), w;
    return ct_release(w), v;
}
static ct_tensor *f_svd(ct_tensor *const *in, void *c) {
    ct_tensor *out[3] = {NULL, NULL, NULL};
    ct_linalg_svd(in[0], false, &out[0], &out[1], &out[2]);
    int which = *(int *)c;
    for (int i = 0; i < 3; i++)
        if (i != which) ct_release(out[i]);
    return out[which];
}
static ct_tensor *f_svdvals(ct_tensor *const *in, void *c) { return ct_linalg_svdvals(in[0]); }
/* Of a full factorization: which 0: U's first K columns, 1: S, 2: Vh's first K rows, 3: the
 * product of the three. */
static ct_tensor *f_svd_full(ct_tensor *const *in, void *c) {
    ct_tensor *u = NULL, *s = NULL, *vh = NULL, *out = NULL;
    if (ct_linalg_svd(in[0], true, &u, &s, &vh) != CT_OK) return NULL;
    int64_t k = ct_shape(s)[ct_ndim(s) - 1];
    ct_tensor *uk = ct_slice(u, -1, 0, k, 1), *vhk = ct_slice(vh, -2, 0, k, 1);
    switch (*(int *)c) {
    case 0: out = uk, uk = NULL; break;
    case 1: out = s, s = NULL; break;
    case 2: out = vhk, vhk = NULL; break;
    default: {
        ct_tensor *row = ct_unsqueeze(s, -2), *scaled = row && uk ? ct_mul(uk, row) : NULL;
        out = scaled && vhk ? ct_matmul(scaled, vhk) : NULL;
        ct_release(row), ct_release(scaled);
    }
    }
    ct_release(u), ct_release(s), ct_release(vh), ct_release(uk), ct_release(vhk);
    return out;
}
static ct_tensor *f_qr(ct_tensor *const *in, void *c) {
    ct_tensor *q = NULL, *r = NULL;
    ct_linalg_qr(in[0], "reduced", &q, &r);
    if (*(int *)c == 0) return ct_release(r), q;
    return ct_release(q), r;
}
static ct_tensor *f_matrix_norm(ct_tensor *const *in, void *c) {
    return ct_linalg_matrix_norm(in[0], (const char *)c, false);
}
static ct_tensor *f_vector_norm(ct_tensor *const *in, void *c) {
    return ct_linalg_vector_norm(in[0], 1, (int[]){-1}, *(double *)c, false);
}
static ct_tensor *f_pinv(ct_tensor *const *in, void *c) { return ct_linalg_pinv(in[0], -1); }

DEVICE_TEST(test_linalg_grad_solve_inv_det) {
    int64_t n = 4;
    double *a = general_stack(2, n, n, 101), b[2 * 4 * 3];
    ref_random(b, 2 * n * 3, 102, -1, 1);
    ct_tensor *x1 = grad_leaf(device, a, 3, (int64_t[]){2, n, n});
    ct_tensor *x2 = grad_leaf(device, b, 3, (int64_t[]){2, n, 3});
    ct_tensor *v = grad_leaf(device, b, 1, (int64_t[]){n});
    free(a);
    bool solve = ct_gradcheck(f_solve, 2, (ct_tensor *[]){x1, x2}, NULL, EPS, ATOL, RTOL);
    bool solve_vector = ct_gradcheck(f_solve, 2, (ct_tensor *[]){x1, v}, NULL, EPS, ATOL, RTOL);
    bool inv = ct_gradcheck(f_inv, 1, &x1, NULL, EPS, ATOL, RTOL);
    bool det = ct_gradcheck(f_det, 1, &x1, NULL, EPS, ATOL, RTOL);
    bool logabs = ct_gradcheck(f_logabsdet, 1, &x1, NULL, EPS, ATOL, RTOL);
    ct_release(x1), ct_release(x2), ct_release(v);
    CHECK(solve);
    CHECK(solve_vector);
    CHECK(inv);
    CHECK(det);
    CHECK(logabs);
}

DEVICE_TEST(test_linalg_grad_cholesky_eigh) {
    int64_t n = 4;
    double *a = spd_stack(2, n, 111);
    ct_tensor *x = grad_leaf(device, a, 3, (int64_t[]){2, n, n});
    free(a);
    bool lower = false, upper = true;
    bool chol = ct_gradcheck(f_cholesky, 1, &x, &lower, EPS, ATOL, RTOL);
    bool chol_upper = ct_gradcheck(f_cholesky, 1, &x, &upper, EPS, ATOL, RTOL);
    int values = 0, vectors = 1;
    bool eig_values = ct_gradcheck(f_eigh, 1, &x, &values, EPS, ATOL, RTOL);
    bool eig_vectors = ct_gradcheck(f_eigh, 1, &x, &vectors, EPS, ATOL, RTOL);
    ct_release(x);
    CHECK(chol);
    CHECK(chol_upper);
    CHECK(eig_values);
    CHECK(eig_vectors);
}

DEVICE_TEST(test_linalg_grad_svd_qr) {
    int64_t shapes[2][3] = {{2, 5, 3}, {2, 3, 5}};
    for (int c = 0; c < 2; c++) {
        ct_tensor *x = ct_gradcheck_leaf(device, 3, shapes[c], 121 + (uint64_t)c, -1, 1, true);
        bool ok[3];
        for (int which = 0; which < 3; which++)
            ok[which] = ct_gradcheck(f_svd, 1, &x, &which, EPS, ATOL, RTOL);
        bool values = ct_gradcheck(f_svdvals, 1, &x, NULL, EPS, ATOL, RTOL);
        bool pinv = ct_gradcheck(f_pinv, 1, &x, NULL, EPS, ATOL, RTOL);
        int q = 0, r = 1;
        bool qr_q = c == 1 || ct_gradcheck(f_qr, 1, &x, &q, EPS, ATOL, RTOL);
        bool qr_r = c == 1 || ct_gradcheck(f_qr, 1, &x, &r, EPS, ATOL, RTOL);
        ct_release(x);
        CHECK(ok[0] && ok[1] && ok[2]);
        CHECK(values);
        CHECK(pinv);
        CHECK(qr_q);
        CHECK(qr_r);
    }
}

/* Full factorizations of non-square stacks (M > N and M < N): U's first K columns, S, Vh's
 * first K rows and their product have the reduced factorization's gradients. */
DEVICE_TEST(test_linalg_grad_svd_full) {
    int64_t shapes[2][3] = {{2, 5, 3}, {2, 3, 5}};
    for (int c = 0; c < 2; c++) {
        ct_tensor *x = ct_gradcheck_leaf(device, 3, shapes[c], 125 + (uint64_t)c, -1, 1, true);
        bool ok[4];
        for (int which = 0; which < 4; which++)
            ok[which] = ct_gradcheck(f_svd_full, 1, &x, &which, EPS, ATOL, RTOL);
        ct_release(x);
        CHECK(ok[0]);
        CHECK(ok[1]);
        CHECK(ok[2]);
        CHECK(ok[3]);
    }
}

/* The largest |a - b| over the elements (complex too), or INFINITY. */
static double worst_difference(const ct_tensor *a, const ct_tensor *b) {
    ct_tensor *error = a && b ? ct_sub(a, b) : NULL, *diff = error ? ct_abs(error) : NULL;
    ct_tensor *worst = diff ? ct_max(diff, 0, NULL, false) : NULL;
    double value = INFINITY;
    if (!worst || ct_item(worst, &value) != CT_OK) value = INFINITY;
    ct_release(error), ct_release(diff), ct_release(worst);
    return value;
}

/* x's gradient through ct_linalg_svd(x, full) (NULL on failure) of the loss
 * sum(w[0] |U_K|) + sum(w[1] S) + sum(w[2] |Vh_K|) (U_K, Vh_K: U's first K columns, Vh's
 * first K rows; each column's sign or phase drops out), or with extra (a full
 * factorization) of sum(w[0] Re U[..., K:]) + sum(w[2] Re Vh[..., K:, :]) (through the other
 * columns and rows alone; w[0] and w[2] then of their shapes). A NULL w[i] drops its term. */
static ct_tensor *svd_loss_grad(ct_tensor *x, bool full, bool extra, ct_tensor *const *w) {
    ct_tensor *u = NULL, *s = NULL, *vh = NULL;
    if (ct_linalg_svd(x, full, &u, &s, &vh) != CT_OK) return NULL;
    int64_t m = ct_shape(u)[ct_ndim(u) - 1], n = ct_shape(vh)[ct_ndim(vh) - 2];
    int64_t k = ct_shape(s)[ct_ndim(s) - 1];
    ct_tensor *uk = ct_slice(u, -1, extra ? k : 0, extra ? m : k, 1);
    ct_tensor *vhk = ct_slice(vh, -2, extra ? k : 0, extra ? n : k, 1);
    ct_tensor *pu = uk ? (extra ? ct_real(uk) : ct_abs(uk)) : NULL;
    ct_tensor *pvh = vhk ? (extra ? ct_real(vhk) : ct_abs(vhk)) : NULL;
    ct_tensor *terms[3] = {pu && w[0] ? ct_mul(pu, w[0]) : NULL, w[1] ? ct_mul(s, w[1]) : NULL,
                           pvh && w[2] ? ct_mul(pvh, w[2]) : NULL};
    ct_tensor *loss = NULL, *grad = NULL;
    for (int i = 0; i < 3; i++) {
        if (!terms[i]) continue;
        ct_tensor *total = ct_sum(terms[i], 0, NULL, false);
        ct_tensor *sum = loss && total ? ct_add(loss, total) : total ? ct_retain(total) : NULL;
        ct_release(loss), ct_release(total);
        loss = sum;
    }
    if (loss && ct_backward(loss) == CT_OK) grad = ct_grad(x);
    ct_zero_grad(x);
    ct_release(u), ct_release(s), ct_release(vh), ct_release(uk), ct_release(vhk);
    ct_release(pu), ct_release(pvh), ct_release(loss);
    for (int i = 0; i < 3; i++) ct_release(terms[i]);
    return grad;
}

/* A full factorization's gradients are the reduced one's: a loss of S, U's first K columns
 * and Vh's first K rows gets the gradient it gets through full_matrices false, and one
 * through U's other columns and Vh's other rows alone (arbitrary bases of the complements)
 * gets a zero gradient, as PyTorch's. Real and complex stacks, M > N and M < N. */
DEVICE_TEST(test_linalg_grad_svd_full_is_reduced) {
    int64_t shapes[2][3] = {{2, 5, 3}, {2, 3, 5}};
    const double parts[2] = {-1, 1};
    for (int d = 0; d < 2; d++)
        for (int c = 0; c < 2; c++) {
            int64_t b = shapes[c][0], m = shapes[c][1], n = shapes[c][2], k = m < n ? m : n;
            ct_tensor *x =
                d ? ct_gradcheck_complex_leaf(device, 3, shapes[c], 151, parts, parts, true)
                  : ct_gradcheck_leaf(device, 3, shapes[c], 151, -1, 1, true);
            ct_tensor *w[3] = {ct_gradcheck_leaf(device, 3, (int64_t[]){b, m, k}, 152, -1, 1, 0),
                               ct_gradcheck_leaf(device, 2, (int64_t[]){b, k}, 153, -1, 1, 0),
                               ct_gradcheck_leaf(device, 3, (int64_t[]){b, k, n}, 154, -1, 1, 0)};
            ct_tensor *wx[3] = {
                m > k ? ct_gradcheck_leaf(device, 3, (int64_t[]){b, m, m - k}, 155, -1, 1, 0)
                      : NULL,
                NULL,
                n > k ? ct_gradcheck_leaf(device, 3, (int64_t[]){b, n - k, n}, 156, -1, 1, 0)
                      : NULL};
            ct_tensor *reduced = x ? svd_loss_grad(x, false, false, w) : NULL;
            ct_tensor *full = x ? svd_loss_grad(x, true, false, w) : NULL;
            ct_tensor *extra = x ? svd_loss_grad(x, true, true, wx) : NULL;
            ct_tensor *zero = x ? ct_zeros(3, shapes[c], ct_dtype_of(x), device) : NULL;
            double same = worst_difference(full, reduced), zeros = worst_difference(extra, zero);
            ct_release(x), ct_release(reduced), ct_release(full), ct_release(extra);
            ct_release(zero);
            for (int i = 0; i < 3; i++) ct_release(w[i]), ct_release(wx[i]);
            CHECK(same < 1e-12);
            CHECK(zeros == 0);
        }
}

DEVICE_TEST(test_linalg_grad_norms) {
    ct_tensor *x = ct_gradcheck_leaf(device, 3, (int64_t[]){2, 4, 3}, 131, 0.2, 1, true);
    const char *ords[] = {"fro", "nuc", "inf", "1", "2", "-2"};
    for (int i = 0; i < 6; i++) {
        bool ok = ct_gradcheck(f_matrix_norm, 1, &x, (void *)ords[i], EPS, ATOL, RTOL);
        if (!ok) ct_release(x);
        CHECK(ok);
    }
    double ords_v[4] = {2, 1, 3, INFINITY};
    for (int i = 0; i < 4; i++) {
        bool ok = ct_gradcheck(f_vector_norm, 1, &x, &ords_v[i], EPS, ATOL, RTOL);
        if (!ok) ct_release(x);
        CHECK(ok);
    }
    ct_release(x);
}

/* A backward through a result without a rule fails by name rather than giving a zero. */
DEVICE_TEST(test_linalg_grad_unsupported) {
    ct_tensor *wide = ct_gradcheck_leaf(device, 2, (int64_t[]){3, 5}, 142, -1, 1, true);
    ct_tensor *q = NULL, *r = NULL;
    ct_status qr = ct_linalg_qr(wide, "reduced", &q, &r);
    ct_tensor *qr_total = qr == CT_OK ? ct_sum(r, 0, NULL, false) : NULL;
    ct_status qr_backward = qr_total ? ct_backward(qr_total) : CT_OK;
    bool qr_named = qr_backward == CT_ERR_UNSUPPORTED && strstr(ct_last_error(), "ct_linalg_qr");
    ct_release(wide), ct_release(q), ct_release(r), ct_release(qr_total);
    CHECK_OK(qr);
    CHECK(qr_total && qr_named);
}

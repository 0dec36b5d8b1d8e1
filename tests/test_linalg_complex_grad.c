/* Finite-difference gradient checks of ct_linalg_* on complex128 matrices, in PyTorch's
 * convention (the gradient of a real loss with respect to z is dL/dRe z + i dL/dIm z):
 * solve, inv, det, slogdet (both results), cholesky, eigh, svd, svdvals, qr, pinv, the norms, trace
 * and matrix_power. Eigenvectors and singular vectors are defined up to a phase per column, so
 * their checks go through functions that do not depend on it (|v|, v diag(c) v^H, u vh); a
 * loss through eigh's eigenvectors or svd's singular vectors that depends on it is refused by
 * name. svd's full factorizations (full_matrices) are checked through U's first K columns and
 * Vh's first K rows, whose gradients are the reduced factorization's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

#define EPS 1e-6
#define ATOL 1e-6
#define RTOL 1e-5

static bool gradcheck(ct_gradcheck_fn f, int n, ct_tensor *const *in, void *context) {
    return ct_gradcheck_complex(f, n, in, context, EPS, ATOL, RTOL);
}

/* count m x n complex matrices with parts uniform in [-1, 1) and n added to the diagonal
 * (well-conditioned), requiring grad. */
static ct_tensor *general(ct_device device, int64_t count, int64_t m, int64_t n, uint64_t seed) {
    int64_t total = count * m * n;
    double *pairs = malloc(sizeof(double) * (size_t)(2 * total + 2));
    ref_random(pairs, 2 * total, seed, -1, 1);
    for (int64_t s = 0; s < count; s++)
        for (int64_t i = 0; i < m && i < n; i++) pairs[2 * (s * m * n + i * n + i)] += (double)n;
    ct_tensor *t = ct_from_data(pairs, 3, (int64_t[]){count, m, n}, CT_C128, device);
    free(pairs);
    if (t) ct_set_requires_grad(t, true);
    return t;
}

/* count n x n Hermitian positive-definite matrices b b^H + n I (b random), requiring grad. */
static ct_tensor *hermitian(ct_device device, int64_t count, int64_t n, uint64_t seed) {
    int64_t total = count * n * n;
    double *b = malloc(sizeof(double) * (size_t)(2 * total));
    double *a = calloc((size_t)(2 * total), sizeof(double));
    ref_random(b, 2 * total, seed, -1, 1);
    for (int64_t s = 0; s < count; s++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double re = i == j ? (double)n : 0, im = 0;
                for (int64_t p = 0; p < n; p++) { /* b_ip conj(b_jp) */
                    const double *x = &b[2 * (s * n * n + i * n + p)];
                    const double *y = &b[2 * (s * n * n + j * n + p)];
                    re += x[0] * y[0] + x[1] * y[1];
                    im += x[1] * y[0] - x[0] * y[1];
                }
                a[2 * (s * n * n + i * n + j)] = re;
                a[2 * (s * n * n + i * n + j) + 1] = im;
            }
    ct_tensor *t = ct_from_data(a, 3, (int64_t[]){count, n, n}, CT_C128, device);
    free(a);
    free(b);
    if (t) ct_set_requires_grad(t, true);
    return t;
}

static ct_tensor *mH(const ct_tensor *t) {
    ct_tensor *transposed = ct_transpose(t, -2, -1);
    ct_tensor *out = transposed ? ct_conj(transposed) : NULL;
    ct_release(transposed);
    return out;
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
/* The sign det / |det|, whose phase depends on x. */
static ct_tensor *f_sign(ct_tensor *const *in, void *c) {
    ct_tensor *sign = NULL, *logabs = NULL;
    ct_linalg_slogdet(in[0], &sign, &logabs);
    ct_release(logabs);
    return sign;
}
static ct_tensor *f_cholesky(ct_tensor *const *in, void *c) {
    return ct_linalg_cholesky(in[0], *(bool *)c);
}
static ct_tensor *f_eigvalsh(ct_tensor *const *in, void *c) { return ct_linalg_eigvalsh(in[0]); }
/* |v|: each column's phase drops out. */
static ct_tensor *f_eigh_magnitudes(ct_tensor *const *in, void *c) {
    ct_tensor *w = NULL, *v = NULL;
    ct_linalg_eigh(in[0], &w, &v);
    ct_tensor *out = v ? ct_abs(v) : NULL;
    ct_release(w), ct_release(v);
    return out;
}
/* v diag(1, 2, ..., n) v^H: the phases cancel, the eigenvectors' mixing stays. */
static ct_tensor *f_eigh_weighted(ct_tensor *const *in, void *c) {
    ct_tensor *w = NULL, *v = NULL;
    if (ct_linalg_eigh(in[0], &w, &v) != CT_OK) return NULL;
    int64_t n = ct_shape(v)[ct_ndim(v) - 1];
    ct_tensor *weights = ct_arange(1, (double)n + 1, 1, CT_F64, ct_device_of(v));
    ct_tensor *scaled = ct_mul(v, weights), *vh = mH(v);
    ct_tensor *out = scaled && vh ? ct_matmul(scaled, vh) : NULL;
    ct_release(w), ct_release(v), ct_release(weights), ct_release(scaled), ct_release(vh);
    return out;
}
static ct_tensor *f_eigh_vectors(ct_tensor *const *in, void *c) {
    ct_tensor *w = NULL, *v = NULL;
    ct_linalg_eigh(in[0], &w, &v);
    ct_release(w);
    return v;
}
/* which 0: |u|, 1: s, 2: |vh|, 3: u vh (the shared phases cancel), 4: u diag(s) vh; of a full
 * factorization, u and vh are U's first K columns and Vh's first K rows. */
typedef struct svd_loss {
    int which;
    bool full;
} svd_loss;
static ct_tensor *f_svd(ct_tensor *const *in, void *c) {
    const svd_loss *loss = c;
    ct_tensor *fu = NULL, *s = NULL, *fvh = NULL, *out = NULL;
    if (ct_linalg_svd(in[0], loss->full, &fu, &s, &fvh) != CT_OK) return NULL;
    int64_t k = ct_shape(s)[ct_ndim(s) - 1];
    ct_tensor *u = ct_slice(fu, -1, 0, k, 1), *vh = ct_slice(fvh, -2, 0, k, 1);
    switch (loss->which) {
    case 0: out = u ? ct_abs(u) : NULL; break;
    case 1: out = s, s = NULL; break;
    case 2: out = vh ? ct_abs(vh) : NULL; break;
    case 3: out = u && vh ? ct_matmul(u, vh) : NULL; break;
    default: {
        ct_tensor *row = ct_unsqueeze(s, -2), *scaled = row && u ? ct_mul(u, row) : NULL;
        out = scaled && vh ? ct_matmul(scaled, vh) : NULL;
        ct_release(row), ct_release(scaled);
    }
    }
    ct_release(fu), ct_release(s), ct_release(fvh), ct_release(u), ct_release(vh);
    return out;
}
static ct_tensor *f_svdvals(ct_tensor *const *in, void *c) { return ct_linalg_svdvals(in[0]); }
static ct_tensor *f_pinv(ct_tensor *const *in, void *c) { return ct_linalg_pinv(in[0], -1); }
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
static ct_tensor *f_trace(ct_tensor *const *in, void *c) { return ct_linalg_trace(in[0], 0); }
static ct_tensor *f_matrix_power(ct_tensor *const *in, void *c) {
    return ct_linalg_matrix_power(in[0], *(int64_t *)c);
}

DEVICE_TEST(test_linalg_complex_grad_solve_inv_det) {
    int64_t n = 4;
    ct_tensor *a = general(device, 2, n, n, 201), *b = general(device, 2, n, 3, 202);
    const double parts[2] = {-1, 1};
    ct_tensor *vector = ct_gradcheck_complex_leaf(device, 1, &n, 203, parts, parts, true);
    ct_tensor *real_b = ct_gradcheck_leaf(device, 3, (int64_t[]){2, n, 3}, 204, -1, 1, true);
    bool solve = gradcheck(f_solve, 2, (ct_tensor *[]){a, b}, NULL);
    bool solve_vector = vector && gradcheck(f_solve, 2, (ct_tensor *[]){a, vector}, NULL);
    /* A real b promoted to complex: its gradient is the complex one's real part. */
    bool solve_mixed = gradcheck(f_solve, 2, (ct_tensor *[]){a, real_b}, NULL);
    bool inv = gradcheck(f_inv, 1, &a, NULL);
    bool det = gradcheck(f_det, 1, &a, NULL);
    bool logabs = gradcheck(f_logabsdet, 1, &a, NULL);
    bool sign = gradcheck(f_sign, 1, &a, NULL);
    ct_release(a), ct_release(b), ct_release(vector), ct_release(real_b);
    CHECK(solve);
    CHECK(solve_vector);
    CHECK(solve_mixed);
    CHECK(inv);
    CHECK(det);
    CHECK(logabs);
    CHECK(sign);
}

/* The checks perturb every part of every element: the upper triangle and the imaginary parts
 * of the diagonal, which cholesky and eigh do not read, have gradient 0. */
DEVICE_TEST(test_linalg_complex_grad_cholesky_eigh) {
    ct_tensor *x = hermitian(device, 2, 4, 211);
    bool lower = false, upper = true;
    bool chol = gradcheck(f_cholesky, 1, &x, &lower);
    bool chol_upper = gradcheck(f_cholesky, 1, &x, &upper);
    bool values = gradcheck(f_eigvalsh, 1, &x, NULL);
    bool magnitudes = gradcheck(f_eigh_magnitudes, 1, &x, NULL);
    bool weighted = gradcheck(f_eigh_weighted, 1, &x, NULL);
    ct_release(x);
    CHECK(chol);
    CHECK(chol_upper);
    CHECK(values);
    CHECK(magnitudes);
    CHECK(weighted);
}

/* A loss through the eigenvectors themselves depends on their phases: backward names it. */
DEVICE_TEST(test_linalg_complex_grad_eigh_phase_refused) {
    ct_tensor *x = hermitian(device, 1, 3, 221);
    ct_tensor *v = x ? f_eigh_vectors(&x, NULL) : NULL;
    ct_tensor *part = v ? ct_imag(v) : NULL;
    ct_tensor *loss = part ? ct_sum(part, 0, NULL, false) : NULL;
    ct_status status = loss ? ct_backward(loss) : CT_OK;
    bool named = status == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "ct_linalg_eigh") &&
                 strstr(ct_last_error(), "phases");
    ct_tensor *grad = x ? ct_grad(x) : NULL;
    ct_clear_error();
    ct_release(x), ct_release(v), ct_release(part), ct_release(loss), ct_release(grad);
    CHECK(loss && named);
    CHECK(!grad);
}

/* A loss through svd's singular vectors that depends on the phase the k-th columns of U and V
 * share: which 0: Im U, 1: Re Vh (each alone), 2: U of one call times Vh of another (two
 * factorizations: their phases do not cancel). The one node of U, S and Vh refuses it by
 * name at backward, and x gets no gradient. full: of an m x n x's full factorization (which
 * 0 or 1), whose U's first K columns or Vh's first K rows carry the phases. */
static bool svd_phase_refused(ct_device device, int which, bool full, int64_t m, int64_t n) {
    ct_tensor *x = general(device, 1, m, n, 251);
    ct_tensor *u = NULL, *s = NULL, *vh = NULL, *u2 = NULL, *s2 = NULL, *vh2 = NULL;
    if (x) ct_linalg_svd(x, full, &u, &s, &vh);
    if (x && which == 2) ct_linalg_svd(x, full, &u2, &s2, &vh2);
    ct_tensor *product = u && vh2 ? ct_matmul(u, vh2) : NULL;
    ct_tensor *value = which == 0   ? (u ? ct_imag(u) : NULL)
                       : which == 1 ? (vh ? ct_real(vh) : NULL)
                       : product    ? ct_real(product)
                                    : NULL;
    ct_tensor *loss = value ? ct_sum(value, 0, NULL, false) : NULL;
    ct_status status = loss ? ct_backward(loss) : CT_OK;
    bool named = status == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "ct_linalg_svd") &&
                 strstr(ct_last_error(), "phases");
    ct_tensor *grad = x ? ct_grad(x) : NULL;
    ct_clear_error();
    ct_release(x), ct_release(u), ct_release(s), ct_release(vh), ct_release(u2);
    ct_release(s2), ct_release(vh2), ct_release(product), ct_release(value), ct_release(loss);
    ct_release(grad);
    return loss && named && !grad;
}

DEVICE_TEST(test_linalg_complex_grad_svd_phase_refused) {
    CHECK(svd_phase_refused(device, 0, false, 4, 3));
    CHECK(svd_phase_refused(device, 1, false, 4, 3));
    CHECK(svd_phase_refused(device, 2, false, 4, 3));
    CHECK(svd_phase_refused(device, 0, true, 4, 3));
    CHECK(svd_phase_refused(device, 1, true, 3, 4));
}

/* Two backward passes through one svd, the graph retained: the joint node reads only the
 * gradients of its own pass. The second pass, through S alone, adds d sum(s) = u vh. */
DEVICE_TEST(test_linalg_complex_grad_svd_two_passes) {
    ct_tensor *x = general(device, 1, 4, 3, 261);
    ct_tensor *u = NULL, *s = NULL, *vh = NULL;
    if (x) ct_linalg_svd(x, false, &u, &s, &vh);
    ct_tensor *magnitudes = u ? ct_abs(u) : NULL;
    ct_tensor *loss_u = magnitudes ? ct_sum(magnitudes, 0, NULL, false) : NULL;
    ct_tensor *loss_s = s ? ct_sum(s, 0, NULL, false) : NULL;
    bool first = loss_u && ct_backward_with(loss_u, NULL, true) == CT_OK;
    ct_tensor *after_first = first ? ct_grad(x) : NULL;
    bool second = loss_s && ct_backward_with(loss_s, NULL, true) == CT_OK;
    ct_tensor *after_second = second ? ct_grad(x) : NULL;
    ct_tensor *expected = vh ? ct_matmul(u, vh) : NULL;
    ct_tensor *added = after_first && after_second ? ct_sub(after_second, after_first) : NULL;
    ct_tensor *error = added && expected ? ct_sub(added, expected) : NULL;
    ct_tensor *diff = error ? ct_abs(error) : NULL;
    ct_tensor *worst = diff ? ct_max(diff, 0, NULL, false) : NULL;
    double worst_value = 1;
    if (worst) ct_item(worst, &worst_value);
    ct_release(x), ct_release(u), ct_release(s), ct_release(vh), ct_release(magnitudes);
    ct_release(loss_u), ct_release(loss_s), ct_release(after_first), ct_release(after_second);
    ct_release(expected), ct_release(added), ct_release(error), ct_release(diff);
    ct_release(worst);
    CHECK(first && second);
    CHECK(worst_value < 1e-12);
}

DEVICE_TEST(test_linalg_complex_grad_svd_qr) {
    int64_t shapes[3][2] = {{5, 3}, {3, 5}, {4, 4}};
    for (int c = 0; c < 3; c++) {
        ct_tensor *x = general(device, 2, shapes[c][0], shapes[c][1], 231 + (uint64_t)c);
        bool ok[5], full_ok[5];
        for (int which = 0; which < 5; which++) {
            ok[which] = gradcheck(f_svd, 1, &x, &(svd_loss){which, false});
            full_ok[which] = gradcheck(f_svd, 1, &x, &(svd_loss){which, true});
        }
        bool values = gradcheck(f_svdvals, 1, &x, NULL);
        bool pinv = gradcheck(f_pinv, 1, &x, NULL);
        int q = 0, r = 1;
        bool tall = shapes[c][0] >= shapes[c][1];
        bool qr_q = !tall || gradcheck(f_qr, 1, &x, &q);
        bool qr_r = !tall || gradcheck(f_qr, 1, &x, &r);
        ct_release(x);
        CHECK(ok[0]);
        CHECK(ok[1]);
        CHECK(ok[2]);
        CHECK(ok[3]);
        CHECK(ok[4]);
        CHECK(full_ok[0] && full_ok[1] && full_ok[2] && full_ok[3] && full_ok[4]);
        CHECK(values);
        CHECK(pinv);
        CHECK(qr_q);
        CHECK(qr_r);
    }
}

DEVICE_TEST(test_linalg_complex_grad_norms_trace_power) {
    ct_tensor *x = general(device, 2, 4, 3, 241);
    ct_tensor *square = general(device, 2, 3, 3, 242);
    const char *ords[] = {"fro", "nuc", "inf", "1", "2", "-2"};
    bool matrix_ok = true, vector_ok = true;
    for (int i = 0; i < 6; i++)
        matrix_ok = matrix_ok && gradcheck(f_matrix_norm, 1, &x, (void *)ords[i]);
    double ords_v[4] = {2, 1, 3, INFINITY};
    for (int i = 0; i < 4; i++)
        vector_ok = vector_ok && gradcheck(f_vector_norm, 1, &x, &ords_v[i]);
    bool trace = gradcheck(f_trace, 1, &square, NULL);
    int64_t powers[2] = {3, -2};
    bool power = gradcheck(f_matrix_power, 1, &square, &powers[0]) &&
                 gradcheck(f_matrix_power, 1, &square, &powers[1]);
    ct_release(x), ct_release(square);
    CHECK(matrix_ok);
    CHECK(vector_ok);
    CHECK(trace);
    CHECK(power);
}

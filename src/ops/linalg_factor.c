/* The factorizations of ct_linalg_* through the backend's linalg kernel (its contract in
 * backend/linalg_args_impl.h): the checks of shapes and dtypes, the column-major copy of the
 * input the kernel may overwrite, the outputs (column-major matrices: each a transposed view
 * of a row-major tensor of the swapped shape), and a bad matrix turned into an error naming
 * the op and the matrix. No autograd here: linalg.c records the gradients. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "backend/dispatch_impl.h"
#include "backend/linalg_args_impl.h"
#include "ops/linalg_impl.h"
#include "ops/op_impl.h"

ct_status ct__linalg_check(const char *op, const ct_tensor *x, bool square) {
    if (!ct__check_args_complex(op, 1, &x, &(ct_device){0})) return ct_last_status();
    if (!ct__linalg_dtype(x->dtype))
        return ct__error(CT_ERR_DTYPE,
                         "%s: x has dtype %s; it must be float32, float64, complex64 or "
                         "complex128",
                         op, ct_dtype_name(x->dtype));
    if (x->ndim < 2)
        return ct__error(CT_ERR_SHAPE,
                         "%s: x has %d axes; it must be a stack of matrices (at "
                         "least 2 axes)",
                         op, x->ndim);
    int64_t m = x->shape[x->ndim - 2], n = x->shape[x->ndim - 1];
    if (square && m != n)
        return ct__error(CT_ERR_SHAPE, "%s: x's matrices are %lld x %lld; they must be square", op,
                         (long long)m, (long long)n);
    /* LAPACK's integers are 32-bit: an order and a matrix's element count must fit. */
    if ((double)m * (double)(n > m ? n : m) > (double)INT_MAX / 2)
        return ct__error(CT_ERR_INVALID_ARG, "%s: matrices of %lld x %lld are too large for LAPACK",
                         op, (long long)m, (long long)n);
    return CT_OK;
}

bool ct__linalg_dtype(ct_dtype dtype) {
    return dtype == CT_F32 || dtype == CT_F64 || dtype == CT_C64 || dtype == CT_C128;
}

/* A stack of the batch shape of x (its leading `batch` axes) of column-major rows x cols
 * matrices (cols < 0: of vectors of rows) of dtype, on x's device. */
static ct_tensor *new_stack_of(const ct_tensor *x, ct_dtype dtype, int batch, int64_t rows,
                               int64_t cols) {
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    ct_device device = x->storage->device;
    if (cols < 0) {
        shape[batch] = rows;
        return ct__tensor_new(device, dtype, batch + 1, shape);
    }
    shape[batch] = cols, shape[batch + 1] = rows;
    ct_tensor *t = ct__tensor_new(device, dtype, batch + 2, shape);
    ct_tensor *view = t ? ct_transpose(t, -2, -1) : NULL;
    ct_release(t);
    return view;
}

/* new_stack_of in x's dtype. */
static ct_tensor *new_stack(const ct_tensor *x, int batch, int64_t rows, int64_t cols) {
    return new_stack_of(x, x->dtype, batch, rows, cols);
}

/* A stack of vectors of rows in the real dtype of x's parts: eigenvalues, singular values. */
static ct_tensor *new_real_vectors(const ct_tensor *x, int batch, int64_t rows) {
    return new_stack_of(x, ct__complex_part(x->dtype), batch, rows, -1);
}

/* x's matrices in memory of their own as the kernel takes them (backend/linalg_args_impl.h):
 * into itself (a new reference) when the kernel works in place in that output, else new
 * memory, row-major for SOLVE and DET and column-major for the others. */
static ct_tensor *kernel_copy(const char *op, ct__linalg_op kind, const ct_tensor *x,
                              ct_tensor *into) {
    bool rows = kind == CT_LINALG_SOLVE || kind == CT_LINALG_DET;
    int b = x->ndim - 2;
    ct_tensor *copy = into   ? ct__new_ref(into)
                      : rows ? ct__tensor_new(x->storage->device, x->dtype, x->ndim, x->shape)
                             : new_stack(x, b, x->shape[b], x->shape[b + 1]);
    if (copy && ct__copy_into(copy, x, op) != CT_OK) {
        ct_release(copy);
        return NULL;
    }
    return copy;
}

/* What a bad matrix means, by op. */
static const char *bad_matrix(ct__linalg_op op) {
    switch (op) {
    case CT_LINALG_CHOLESKY: return "is not positive-definite";
    case CT_LINALG_SOLVE: return "is singular";
    case CT_LINALG_EIGH: return "has eigenvalues that did not converge";
    case CT_LINALG_SVD: return "has singular values that did not converge";
    default: return "cannot be factorized";
    }
}

/* Runs g on x's stack (g->a: kernel_copy's, made here; outputs set by the caller), and
 * releases outs[0..n) on failure. */
static ct_status run(const char *op, ct__linalg_args *g, const ct_tensor *x, ct_tensor **outs,
                     int n) {
    ct_status status = CT_OK;
    for (int i = 0; i < n; i++)
        if (!outs[i]) status = ct_last_status();
    /* In place: CHOLESKY's L and EIGH's eigenvectors are made in the copy of x. */
    ct_tensor *into = g->op == CT_LINALG_CHOLESKY         ? outs[0]
                      : g->op == CT_LINALG_EIGH && n == 2 ? outs[1]
                                                          : NULL;
    ct_tensor *a = status == CT_OK ? kernel_copy(op, g->op, x, into) : NULL;
    if (status == CT_OK && !a) status = ct_last_status();
    g->dtype = x->dtype;
    g->count = 1;
    for (int d = 0; d < x->ndim - 2; d++) g->count *= x->shape[d];
    if (status == CT_OK && g->count > 0) {
        ct_device device = x->storage->device;
        int physical;
        const ct__kernel_table *k = ct__kernel_find(device, CT_SLOT_linalg, op, &physical);
        int64_t first_bad = -1;
        g->a = ct__data(a);
        status = !k ? ct_last_status() : ct__kernel_readback(device, CT_SLOT_linalg, op);
        if (status == CT_OK) status = k->linalg(physical, g, &first_bad);
        if (status != CT_OK) {
            char message[512];
            snprintf(message, sizeof message, "%s", ct_last_error());
            if (k) ct__error(status, "%s: %s", op, message);
        } else if (first_bad >= 0) {
            status = ct__error(CT_ERR_INVALID_ARG, "%s: matrix %lld of the stack %s", op,
                               (long long)first_bad, bad_matrix(g->op));
        }
    }
    ct_release(a);
    if (status != CT_OK)
        for (int i = 0; i < n; i++) ct_release(outs[i]), outs[i] = NULL;
    return status;
}

static char *data_or_null(const ct_tensor *t) { return t ? ct__data(t) : NULL; }

ct_status ct__linalg_cholesky_raw(const char *op, const ct_tensor *x, ct_tensor **l) {
    *l = NULL;
    ct_status status = ct__linalg_check(op, x, true);
    if (status != CT_OK) return status;
    int b = x->ndim - 2;
    int64_t n = x->shape[b];
    *l = new_stack(x, b, n, n);
    ct__linalg_args g = {.op = CT_LINALG_CHOLESKY, .m = n, .n = n, .out0 = data_or_null(*l)};
    return run(op, &g, x, l, 1);
}

ct_status ct__linalg_solve_raw(const char *op, const ct_tensor *a, const ct_tensor *b,
                               ct_tensor **x) {
    *x = NULL;
    int nb = a->ndim - 2;
    int64_t n = a->shape[nb], k = b->shape[nb + 1];
    *x = new_stack(b, nb, n, k);
    if (*x && ct__copy_into(*x, b, op) != CT_OK) ct_release(*x), *x = NULL;
    ct__linalg_args g = {.op = CT_LINALG_SOLVE, .m = n, .n = n, .k = k, .out0 = data_or_null(*x)};
    return run(op, &g, a, x, 1);
}

ct_status ct__linalg_det_raw(const char *op, const ct_tensor *x, ct_tensor **sign,
                             ct_tensor **logabsdet, ct_tensor **det) {
    ct_status status = ct__linalg_check(op, x, true);
    ct_tensor *outs[3] = {NULL, NULL, NULL};
    ct_tensor **wanted[3] = {sign, logabsdet, det};
    int b = x->ndim - 2;
    for (int i = 0; i < 3; i++) {
        if (!wanted[i]) continue;
        *wanted[i] = NULL;
        if (status == CT_OK) /* log|det| is real */
            outs[i] = ct__tensor_new(x->storage->device,
                                     i == 1 ? ct__complex_part(x->dtype) : x->dtype, b, x->shape);
    }
    if (status != CT_OK) return status;
    int64_t n = x->shape[b];
    ct__linalg_args g = {.op = CT_LINALG_DET,
                         .m = n,
                         .n = n,
                         .out0 = data_or_null(outs[0]),
                         .out1 = data_or_null(outs[1]),
                         .out2 = data_or_null(outs[2])};
    /* run() counts a NULL output as a failure: pass only the wanted ones. */
    ct_tensor *list[3];
    int count = 0;
    for (int i = 0; i < 3; i++)
        if (wanted[i]) list[count++] = outs[i];
    status = run(op, &g, x, list, count);
    for (int i = 0, j = 0; i < 3; i++)
        if (wanted[i]) *wanted[i] = list[j++];
    return status;
}

ct_status ct__linalg_eigh_raw(const char *op, const ct_tensor *x, ct_tensor **w, ct_tensor **v) {
    *w = NULL;
    if (v) *v = NULL;
    ct_status status = ct__linalg_check(op, x, true);
    if (status != CT_OK) return status;
    int b = x->ndim - 2;
    int64_t n = x->shape[b];
    ct_tensor *outs[2] = {new_real_vectors(x, b, n), v ? new_stack(x, b, n, n) : NULL};
    ct__linalg_args g = {.op = CT_LINALG_EIGH,
                         .m = n,
                         .n = n,
                         .out0 = data_or_null(outs[0]),
                         .out1 = data_or_null(outs[1])};
    status = run(op, &g, x, outs, v ? 2 : 1);
    *w = outs[0];
    if (v) *v = outs[1];
    return status;
}

ct_status ct__linalg_svd_raw(const char *op, const ct_tensor *x, bool full, ct_tensor **u,
                             ct_tensor **s, ct_tensor **vh) {
    *s = NULL;
    if (u) *u = NULL;
    if (vh) *vh = NULL;
    ct_status status = ct__linalg_check(op, x, false);
    if (status != CT_OK) return status;
    int b = x->ndim - 2;
    int64_t m = x->shape[b], n = x->shape[b + 1], k = m < n ? m : n;
    bool vectors = u != NULL;
    ct_tensor *outs[3] = {new_real_vectors(x, b, k),
                          vectors ? new_stack(x, b, m, full ? m : k) : NULL,
                          vectors ? new_stack(x, b, full ? n : k, n) : NULL};
    ct__linalg_args g = {.op = CT_LINALG_SVD,
                         .m = m,
                         .n = n,
                         .full = full,
                         .out0 = data_or_null(outs[0]),
                         .out1 = data_or_null(outs[1]),
                         .out2 = data_or_null(outs[2])};
    status = run(op, &g, x, outs, vectors ? 3 : 1);
    *s = outs[0];
    if (vectors) *u = outs[1], *vh = outs[2];
    return status;
}

ct_status ct__linalg_qr_raw(const char *op, const ct_tensor *x, bool full, ct_tensor **q,
                            ct_tensor **r) {
    *q = *r = NULL;
    ct_status status = ct__linalg_check(op, x, false);
    if (status != CT_OK) return status;
    int b = x->ndim - 2;
    int64_t m = x->shape[b], n = x->shape[b + 1], k = m < n ? m : n;
    ct_tensor *outs[2] = {new_stack(x, b, m, full ? m : k), new_stack(x, b, full ? m : k, n)};
    ct__linalg_args g = {.op = CT_LINALG_QR,
                         .m = m,
                         .n = n,
                         .full = full,
                         .out0 = data_or_null(outs[0]),
                         .out1 = data_or_null(outs[1])};
    status = run(op, &g, x, outs, 2);
    *q = outs[0], *r = outs[1];
    return status;
}

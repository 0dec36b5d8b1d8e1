/* The front doors of ct_linalg_*'s factorizations (include/ctensor/linalg.h): cholesky,
 * det, slogdet, eigh, eigvalsh, inv, solve, svd, svdvals and qr, each the kernel's results
 * (linalg_factor.c) and, when an input requires grad, its gradient's record
 * (linalg_grad.c). A recorded result is a view of the kernel's tensor, which the node saves:
 * a node holds no reference to its own result. */
#include <string.h>

#include "ops/grad_impl.h"
#include "ops/linalg_impl.h"
#include "ops/op_impl.h"

/* Another tensor object over t's elements (t itself when t is NULL). */
static ct_tensor *alias(const ct_tensor *t) {
    return t ? ct__tensor_view(t, t->dtype, t->ndim, t->shape, t->strides, t->offset) : NULL;
}

ct_tensor *ct_linalg_cholesky(const ct_tensor *x, bool upper) {
    ct_tensor *l;
    if (ct__linalg_cholesky_raw("ct_linalg_cholesky", x, &l) != CT_OK) return NULL;
    ct_tensor *out = l;
    if (ct__grad_needed(1, &x)) {
        out = ct__linalg_record_cholesky(alias(l), x, l);
        ct_release(l);
    }
    if (!upper || !out) return out;
    ct_tensor *t = ct_transpose(out, -2, -1), *u = t ? ct_conj(t) : NULL; /* U = L^H */
    ct_release(t);
    ct_release(out);
    return u;
}

ct_tensor *ct_linalg_det(const ct_tensor *x) {
    ct_tensor *det;
    if (ct__linalg_det_raw("ct_linalg_det", x, NULL, NULL, &det) != CT_OK) return NULL;
    if (!ct__grad_needed(1, &x)) return det;
    ct_tensor *out = ct__linalg_record_det(alias(det), x, det, CT__DET_VALUE);
    ct_release(det);
    return out;
}

ct_status ct_linalg_slogdet(const ct_tensor *x, ct_tensor **sign, ct_tensor **logabsdet) {
    if (!sign || !logabsdet)
        return ct__error(CT_ERR_INVALID_ARG, "ct_linalg_slogdet: sign and logabsdet must not "
                                             "be NULL");
    ct_tensor *logabs;
    ct_status status = ct__linalg_det_raw("ct_linalg_slogdet", x, sign, &logabs, NULL);
    if (status != CT_OK) return *logabsdet = NULL, status;
    *logabsdet = logabs;
    if (ct__grad_needed(1, &x)) {
        *logabsdet = ct__linalg_record_det(alias(logabs), x, logabs, CT__DET_LOGABS);
        ct_release(logabs);
        if (ct__is_complex(x->dtype)) {
            ct_tensor *phase = *sign;
            *sign = ct__linalg_record_det(alias(phase), x, phase, CT__DET_SIGN);
            ct_release(phase);
        }
        if (!*logabsdet || !*sign) {
            ct_release(*logabsdet), *logabsdet = NULL;
            ct_release(*sign), *sign = NULL;
            return ct_last_status();
        }
    }
    return CT_OK;
}

ct_status ct_linalg_eigh(const ct_tensor *x, ct_tensor **eigenvalues, ct_tensor **eigenvectors) {
    if (!eigenvalues)
        return ct__error(CT_ERR_INVALID_ARG, "ct_linalg_eigh: eigenvalues must not be NULL");
    ct_tensor *w, *v;
    bool grad = ct__grad_needed(1, &x);
    ct_status status =
        ct__linalg_eigh_raw("ct_linalg_eigh", x, &w, eigenvectors || grad ? &v : NULL);
    if (status != CT_OK) {
        *eigenvalues = NULL;
        if (eigenvectors) *eigenvectors = NULL;
        return status;
    }
    if (!grad) {
        *eigenvalues = w;
        if (eigenvectors) *eigenvectors = v;
        return CT_OK;
    }
    *eigenvalues = ct__linalg_record_eigh(alias(w), 0, x, w, v);
    if (eigenvectors) *eigenvectors = ct__linalg_record_eigh(alias(v), 1, x, w, v);
    ct_release(w);
    ct_release(v);
    if (*eigenvalues && (!eigenvectors || *eigenvectors)) return CT_OK;
    ct_release(*eigenvalues), *eigenvalues = NULL;
    if (eigenvectors) ct_release(*eigenvectors), *eigenvectors = NULL;
    return ct_last_status();
}

ct_tensor *ct_linalg_eigvalsh(const ct_tensor *x) {
    ct_tensor *w;
    return ct_linalg_eigh(x, &w, NULL) == CT_OK ? w : NULL;
}

/* a and b as the kernel takes them: b a stack of matrices (a vector b a column), both of
 * their broadcast batch shape and of their promoted dtype. */
static ct_status solve_operands(const char *op, const ct_tensor *x1, const ct_tensor *x2,
                                ct_tensor **a, ct_tensor **b) {
    *a = *b = NULL;
    ct_status status = ct__linalg_check(op, x1, true);
    if (status != CT_OK) return status;
    if (!ct__check_args_complex(op, 2, (const ct_tensor *[]){x1, x2}, &(ct_device){0}))
        return ct_last_status();
    if (!ct__linalg_dtype(x2->dtype))
        return ct__error(CT_ERR_DTYPE,
                         "%s: x2 has dtype %s; it must be float32, float64, complex64 or "
                         "complex128",
                         op, ct_dtype_name(x2->dtype));
    int64_t n = x1->shape[x1->ndim - 1];
    bool vector = x2->ndim == 1;
    if (x2->ndim < 1 || x2->shape[vector ? 0 : x2->ndim - 2] != n)
        return ct__error(CT_ERR_SHAPE,
                         "%s: x1's matrices are %lld x %lld but x2 (%d axes) has "
                         "not %lld rows",
                         op, (long long)n, (long long)n, x2->ndim, (long long)n);
    /* The batch shapes, aligned at their ends, broadcast. */
    int nb1 = x1->ndim - 2, nb2 = vector ? 0 : x2->ndim - 2, nb = nb1 > nb2 ? nb1 : nb2;
    int64_t shape1[CT_MAX_DIMS], shape2[CT_MAX_DIMS];
    for (int d = 0; d < nb; d++) {
        int64_t s1 = d - (nb - nb1) >= 0 ? x1->shape[d - (nb - nb1)] : 1;
        int64_t s2 = d - (nb - nb2) >= 0 ? x2->shape[d - (nb - nb2)] : 1;
        if (s1 != s2 && s1 != 1 && s2 != 1)
            return ct__error(CT_ERR_SHAPE,
                             "%s: the stacks of x1 and x2 do not broadcast (%lld "
                             "against %lld)",
                             op, (long long)s1, (long long)s2);
        shape1[d] = shape2[d] = s1 == 1 ? s2 : s1;
    }
    shape1[nb] = shape1[nb + 1] = n;
    shape2[nb] = n, shape2[nb + 1] = vector ? 1 : x2->shape[x2->ndim - 1];
    /* The standard's promotion: complex when either is, 64-bit parts when either has them. */
    bool wide = ct__complex_part(x1->dtype) == CT_F64 || ct__complex_part(x2->dtype) == CT_F64;
    bool complex = ct__is_complex(x1->dtype) || ct__is_complex(x2->dtype);
    ct_dtype dtype = complex ? (wide ? CT_C128 : CT_C64) : wide ? CT_F64 : CT_F32;
    ct_tensor *column = vector ? ct_reshape(x2, 2, (int64_t[]){n, 1}) : NULL;
    ct_tensor *c1 = ct_cast(x1, dtype), *c2 = ct_cast(vector ? column : x2, dtype);
    *a = ct_expand(c1, nb + 2, shape1);
    *b = ct_expand(c2, nb + 2, shape2);
    ct_release(column);
    ct_release(c1);
    ct_release(c2);
    if (*a && *b) return CT_OK;
    ct_release(*a), ct_release(*b), *a = *b = NULL;
    return ct_last_status();
}

ct_tensor *ct_linalg_solve(const ct_tensor *x1, const ct_tensor *x2) {
    const char *op = "ct_linalg_solve";
    ct_tensor *a, *b, *x = NULL;
    if (ct_no_grad_push() != CT_OK) return NULL;
    ct_status status = solve_operands(op, x1, x2, &a, &b);
    if (status == CT_OK) status = ct__linalg_solve_raw(op, a, b, &x);
    ct_no_grad_pop();
    ct_release(a);
    ct_release(b);
    if (status != CT_OK) return NULL;
    bool vector = x2->ndim == 1;
    if (vector) { /* (..., n, 1) to (..., n) */
        ct_tensor *squeezed = ct_squeeze(x, -1);
        ct_release(x);
        if (!(x = squeezed)) return NULL;
    }
    if (!ct__grad_needed(2, (const ct_tensor *[]){x1, x2})) return x;
    ct_tensor *out = ct__linalg_record_solve(alias(x), x1, x2, x, vector);
    ct_release(x);
    return out;
}

ct_tensor *ct_linalg_inv(const ct_tensor *x) {
    const char *op = "ct_linalg_inv";
    if (ct__linalg_check(op, x, true) != CT_OK) return NULL;
    int64_t n = x->shape[x->ndim - 1];
    ct_tensor *eye = ct_eye(n, n, x->dtype, x->storage->device);
    ct_tensor *identities = ct_expand(eye, x->ndim, x->shape), *y = NULL;
    ct_release(eye);
    if (!identities) return NULL;
    ct_status status = ct__linalg_solve_raw(op, x, identities, &y);
    ct_release(identities);
    if (status != CT_OK || !ct__grad_needed(1, &x)) return y;
    ct_tensor *out = ct__linalg_record_inv(alias(y), x, y);
    ct_release(y);
    return out;
}

ct_status ct_linalg_svd(const ct_tensor *x, bool full_matrices, ct_tensor **u, ct_tensor **s,
                        ct_tensor **vh) {
    if (!s || (!u) != (!vh))
        return ct__error(CT_ERR_INVALID_ARG, "ct_linalg_svd: s must not be NULL, and u and vh "
                                             "both NULL or both not");
    ct_status status = ct__linalg_check("ct_linalg_svd", x, false);
    if (status != CT_OK) {
        *s = NULL;
        if (u) *u = *vh = NULL;
        return status;
    }
    /* Square matrices' full factors are the reduced ones. */
    int64_t m = x->shape[x->ndim - 2], n = x->shape[x->ndim - 1], k = m < n ? m : n;
    bool full = full_matrices && u && m != n;
    bool grad = ct__grad_needed(1, &x);
    ct_tensor *fu = NULL, *rs = NULL, *fvh = NULL;
    status = ct__linalg_svd_raw("ct_linalg_svd", x, full, u || grad ? &fu : NULL, &rs,
                                u || grad ? &fvh : NULL);
    if (status != CT_OK) {
        ct_release(fu), ct_release(rs), ct_release(fvh);
        *s = NULL;
        if (u) *u = *vh = NULL;
        return status;
    }
    if (!grad) {
        *s = rs;
        if (u) *u = fu, *vh = fvh;
        return CT_OK;
    }
    /* The gradients are the reduced factorization's: the first K columns of a full U and
     * rows of a full Vh (a gradient of the others is ignored, linalg.h). */
    ct_tensor *ru = full ? ct_slice(fu, -1, 0, k, 1) : ct_retain(fu);
    ct_tensor *rvh = full ? ct_slice(fvh, -2, 0, k, 1) : ct_retain(fvh);
    if (!ru || !rvh) {
        *s = NULL;
        if (u) *u = *vh = NULL;
    } else if (ct__is_complex(x->dtype)) { /* one node for the three (linalg_impl.h) */
        ct_tensor *joint = ct__linalg_record_svd_joint(x, ru, rs, rvh);
        *s = ct__linalg_record_svd_output(alias(rs), 1, joint);
        if (u) {
            *u = ct__linalg_record_svd_output(alias(fu), 0, joint);
            *vh = ct__linalg_record_svd_output(alias(fvh), 2, joint);
        }
        ct_release(joint);
    } else {
        *s = ct__linalg_record_svd(alias(rs), 1, x, ru, rs, rvh);
        if (u) {
            *u = ct__linalg_record_svd(alias(fu), 0, x, ru, rs, rvh);
            *vh = ct__linalg_record_svd(alias(fvh), 2, x, ru, rs, rvh);
        }
    }
    ct_release(ru), ct_release(rs), ct_release(rvh), ct_release(fu), ct_release(fvh);
    if (*s && (!u || (*u && *vh))) return CT_OK;
    ct_release(*s), *s = NULL;
    if (u) ct_release(*u), ct_release(*vh), *u = *vh = NULL;
    return ct_last_status();
}

ct_tensor *ct_linalg_svdvals(const ct_tensor *x) {
    ct_tensor *s;
    return ct_linalg_svd(x, false, NULL, &s, NULL) == CT_OK ? s : NULL;
}

ct_status ct_linalg_qr(const ct_tensor *x, const char *mode, ct_tensor **q, ct_tensor **r) {
    if (!q || !r) return ct__error(CT_ERR_INVALID_ARG, "ct_linalg_qr: q and r must not be NULL");
    *q = *r = NULL;
    if (mode && strcmp(mode, "reduced") != 0 && strcmp(mode, "complete") != 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_linalg_qr: mode \"%s\"; it must be \"reduced\" "
                         "or \"complete\"",
                         mode);
    bool full = mode && strcmp(mode, "complete") == 0;
    ct_tensor *rq, *rr;
    ct_status status = ct__linalg_qr_raw("ct_linalg_qr", x, full, &rq, &rr);
    if (status != CT_OK) return status;
    if (!ct__grad_needed(1, &x)) {
        *q = rq, *r = rr;
        return CT_OK;
    }
    *q = ct__linalg_record_qr(alias(rq), 0, x, rq, rr);
    *r = ct__linalg_record_qr(alias(rr), 1, x, rq, rr);
    ct_release(rq), ct_release(rr);
    if (*q && *r) return CT_OK;
    ct_release(*q), ct_release(*r), *q = *r = NULL;
    return ct_last_status();
}

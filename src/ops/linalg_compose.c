/* The ct_linalg_* functions composed of other ops (their gradients are those ops'): pinv,
 * matrix_rank, the norms, matrix_power, diagonal, trace, cross, outer, matrix_transpose.
 * Each runs in a scope and keeps its result. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/linalg_impl.h"
#include "ops/op_impl.h"

static ct_tensor *kept(ct_tensor *t) {
    ct_tensor *out = t ? ct_keep(t) : NULL;
    ct_scope_end();
    return out;
}

/* The machine epsilon of dtype's real parts. */
static double epsilon(ct_dtype dtype) {
    return ct__complex_part(dtype) == CT_F64 ? DBL_EPSILON : FLT_EPSILON;
}

/* The cutoff of pinv and matrix_rank: rtol (or the default) times each matrix's largest
 * singular value, as (..., 1). */
static ct_tensor *cutoff(const ct_tensor *x, const ct_tensor *s, double rtol) {
    int64_t m = x->shape[x->ndim - 2], n = x->shape[x->ndim - 1];
    if (rtol < 0) rtol = (double)(m > n ? m : n) * epsilon(x->dtype);
    if (s->shape[s->ndim - 1] == 0) return ct__full_on(s->storage->device, 0, NULL, 0, s->dtype);
    return ct_mul_scalar(ct_max(s, 1, (int[]){-1}, true), rtol);
}

ct_tensor *ct_linalg_pinv(const ct_tensor *x, double rtol) {
    if (ct_scope_begin() != CT_OK) return NULL;
    ct_tensor *u = NULL, *s = NULL, *vh = NULL;
    if (ct_linalg_svd(x, false, &u, &s, &vh) != CT_OK) return kept(NULL);
    ct_tensor *keep = ct_gt(s, cutoff(x, s, rtol));
    ct_tensor *one = ct__full_on(s->storage->device, 0, NULL, 1.0, s->dtype);
    ct_tensor *zero = ct__full_on(s->storage->device, 0, NULL, 0.0, s->dtype);
    /* 1/s where kept, 0 elsewhere, with no 1/0 on the way (its gradient would be NaN). */
    ct_tensor *inverse = ct_where(keep, ct_div_rscalar(ct_where(keep, s, one), 1.0), zero);
    /* V diag(1/s) U^H (conj is the identity on a real tensor). */
    ct_tensor *scaled = ct_mul(ct_unsqueeze(inverse, -1), ct_conj(ct_transpose(u, -2, -1)));
    return kept(ct_matmul(ct_conj(ct_transpose(vh, -2, -1)), scaled));
}

ct_tensor *ct_linalg_matrix_rank(const ct_tensor *x, double rtol) {
    if (ct_scope_begin() != CT_OK) return NULL;
    ct_tensor *s = NULL;
    if (ct_no_grad_push() != CT_OK) return kept(NULL);
    if (ct_linalg_svd(x, false, NULL, &s, NULL) == CT_OK) {
        ct_tensor *above = ct_cast(ct_gt(s, cutoff(x, s, rtol)), CT_I64);
        s = ct_sum(above, 1, (int[]){-1}, false);
    }
    ct_no_grad_pop();
    return kept(s);
}

/* CT_OK when x is real or complex floating. */
static ct_status check_inexact(const char *op, const ct_tensor *x) {
    if (!ct__check_args_complex(op, 1, &x, &(ct_device){0})) return ct_last_status();
    if (!ct__is_float(x->dtype) && !ct__is_complex(x->dtype))
        return ct__error(CT_ERR_DTYPE, "%s: x has dtype %s; it must be real or complex floating",
                         op, ct_dtype_name(x->dtype));
    return CT_OK;
}

ct_tensor *ct_linalg_vector_norm(const ct_tensor *x, int naxes, const int *axes, double ord,
                                 bool keepdims) {
    if (check_inexact("ct_linalg_vector_norm", x) != CT_OK || ct_scope_begin() != CT_OK)
        return NULL;
    if (!axes) naxes = 0;
    const int *which = naxes ? axes : NULL;
    /* |x| is real (of the parts' dtype for a complex x): so is every norm. */
    ct_tensor *magnitude = ct_abs(x), *out;
    if (ord == INFINITY) {
        out = ct_max(magnitude, naxes, which, keepdims);
    } else if (ord == -INFINITY) {
        out = ct_min(magnitude, naxes, which, keepdims);
    } else if (ord == 0) {
        out = ct_sum(ct_cast(ct_ne_scalar(magnitude, 0.0), magnitude ? magnitude->dtype : x->dtype),
                     naxes, which, keepdims);
    } else if (ord == 1) {
        out = ct_sum(magnitude, naxes, which, keepdims);
    } else if (ord == 2) {
        const ct_tensor *base = ct__is_complex(x->dtype) ? magnitude : x;
        out = ct_sqrt(ct_sum(ct_mul(base, base), naxes, which, keepdims));
    } else {
        ct_tensor *powered = ct_pow_scalar(magnitude, ord);
        out = ct_pow_scalar(ct_sum(powered, naxes, which, keepdims), 1.0 / ord);
    }
    return kept(out);
}

ct_tensor *ct_linalg_matrix_norm(const ct_tensor *x, const char *ord, bool keepdims) {
    const char *op = "ct_linalg_matrix_norm";
    if (check_inexact(op, x) != CT_OK) return NULL;
    if (x->ndim < 2) {
        ct__error(CT_ERR_SHAPE, "%s: x has %d axes; it must be a stack of matrices", op, x->ndim);
        return NULL;
    }
    if (!ord) ord = "fro";
    static const char *const ords[] = {"fro", "nuc", "inf", "-inf", "1", "-1", "2", "-2"};
    int kind = -1;
    for (int i = 0; i < 8; i++)
        if (strcmp(ord, ords[i]) == 0) kind = i;
    if (kind < 0) {
        ct__error(CT_ERR_INVALID_ARG,
                  "%s: ord \"%s\"; it must be one of fro, nuc, inf, -inf, "
                  "1, -1, 2, -2",
                  op, ord);
        return NULL;
    }
    if (ct_scope_begin() != CT_OK) return NULL;
    int both[2] = {-2, -1}, last = -1, rows = -2;
    ct_tensor *out = NULL;
    switch (kind) {
    case 0: out = ct_linalg_vector_norm(x, 2, both, 2.0, keepdims); break;
    case 2: /* the largest (smallest) row sum of |x| */
    case 3: {
        ct_tensor *sums = ct_sum(ct_abs(x), 1, &last, true);
        out = kind == 2 ? ct_max(sums, 1, &rows, true) : ct_min(sums, 1, &rows, true);
        break;
    }
    case 4: /* the largest (smallest) column sum */
    case 5: {
        ct_tensor *sums = ct_sum(ct_abs(x), 1, &rows, true);
        out = kind == 4 ? ct_max(sums, 1, &last, true) : ct_min(sums, 1, &last, true);
        break;
    }
    default: { /* nuc, 2, -2: of the singular values */
        ct_tensor *s = ct_linalg_svdvals(x);
        out = kind == 1   ? ct_sum(s, 1, &last, true)
              : kind == 6 ? ct_max(s, 1, &last, true)
                          : ct_min(s, 1, &last, true);
        out = ct_unsqueeze(out, -1);
        break;
    }
    }
    if (kind != 0 && !keepdims) out = ct_squeeze(ct_squeeze(out, -1), -1);
    return kept(out);
}

ct_tensor *ct_linalg_matrix_power(const ct_tensor *x, int64_t n) {
    const char *op = "ct_linalg_matrix_power";
    if (check_inexact(op, x) != CT_OK) return NULL;
    if (x->ndim < 2 || x->shape[x->ndim - 1] != x->shape[x->ndim - 2]) {
        ct__error(CT_ERR_SHAPE, "%s: x must be a stack of square matrices", op);
        return NULL;
    }
    if (ct_scope_begin() != CT_OK) return NULL;
    int64_t order = x->shape[x->ndim - 1];
    if (n == 0) {
        ct_tensor *eye = ct_eye(order, order, x->dtype, x->storage->device);
        return kept(ct_contiguous(ct_expand(eye, x->ndim, x->shape)));
    }
    ct_tensor *base = n < 0 ? ct_linalg_inv(x) : (ct_tensor *)x, *out = NULL;
    uint64_t left = n < 0 ? (uint64_t)0 - (uint64_t)n : (uint64_t)n;
    /* Squaring: out = the product of base^(2^i) over the set bits i of left. */
    while (base && left) {
        if (left & 1) out = out ? ct_matmul(out, base) : ct_clone(base);
        left >>= 1;
        if (left) base = ct_matmul(base, base);
    }
    return kept(base ? out : NULL);
}

ct_tensor *ct_linalg_diagonal(const ct_tensor *x, int64_t offset) {
    if (!ct__check_args_complex("ct_linalg_diagonal", 1, &x, &(ct_device){0})) return NULL;
    if (x->ndim < 2) {
        ct__error(CT_ERR_SHAPE, "ct_linalg_diagonal: x has %d axes; it must have at least 2",
                  x->ndim);
        return NULL;
    }
    int64_t m = x->shape[x->ndim - 2], n = x->shape[x->ndim - 1];
    int64_t length =
        offset >= 0 ? (m < n - offset ? m : n - offset) : (m + offset < n ? m + offset : n);
    if (length < 0) length = 0;
    if (ct_scope_begin() != CT_OK) return NULL;
    /* The diagonal is every (n + 1)th element of each flattened matrix from its start. */
    ct_tensor *flat = ct_flatten(x, x->ndim - 2, x->ndim - 1);
    int64_t start = offset >= 0 ? offset : -offset * n;
    int64_t stop = length ? start + (length - 1) * (n + 1) + 1 : 0;
    return kept(ct_slice(flat, -1, length ? start : 0, stop, n + 1));
}

ct_tensor *ct_linalg_trace(const ct_tensor *x, int64_t offset) {
    if (ct_scope_begin() != CT_OK) return NULL;
    return kept(ct_sum(ct_linalg_diagonal(x, offset), 1, (int[]){-1}, false));
}

ct_tensor *ct_linalg_cross(const ct_tensor *x1, const ct_tensor *x2, int axis) {
    const char *op = "ct_linalg_cross";
    if (!ct__check_args_complex(op, 2, (const ct_tensor *[]){x1, x2}, &(ct_device){0})) return NULL;
    int most = x1->ndim > x2->ndim ? x1->ndim : x2->ndim;
    int from_end = axis < 0 ? axis : axis - most;
    if (from_end < -x1->ndim || from_end < -x2->ndim || from_end >= 0) {
        ct__error(CT_ERR_INVALID_ARG, "%s: axis %d is outside x1 (%d axes) or x2 (%d axes)", op,
                  axis, x1->ndim, x2->ndim);
        return NULL;
    }
    int a1 = x1->ndim + from_end, a2 = x2->ndim + from_end;
    if (x1->shape[a1] != 3 || x2->shape[a2] != 3) {
        ct__error(CT_ERR_SHAPE, "%s: axis %d has sizes %lld and %lld; it must be 3 in both", op,
                  axis, (long long)x1->shape[a1], (long long)x2->shape[a2]);
        return NULL;
    }
    if (ct_scope_begin() != CT_OK) return NULL;
    ct_tensor *a[3], *b[3], *c[3];
    for (int i = 0; i < 3; i++) a[i] = ct_slice(x1, a1, i, i + 1, 1);
    for (int i = 0; i < 3; i++) b[i] = ct_slice(x2, a2, i, i + 1, 1);
    for (int i = 0; i < 3; i++) {
        int j = (i + 1) % 3, k = (i + 2) % 3;
        c[i] = ct_sub(ct_mul(a[j], b[k]), ct_mul(a[k], b[j]));
    }
    ct_tensor *out = c[0] && c[1] && c[2]
                         ? ct_concat(3, (const ct_tensor *const *)c, c[0]->ndim + from_end)
                         : NULL;
    return kept(out);
}

ct_tensor *ct_linalg_outer(const ct_tensor *x1, const ct_tensor *x2) {
    if (!ct__check_args_complex("ct_linalg_outer", 2, (const ct_tensor *[]){x1, x2},
                                &(ct_device){0}))
        return NULL;
    if (x1->ndim != 1 || x2->ndim != 1) {
        ct__error(CT_ERR_SHAPE,
                  "ct_linalg_outer: x1 and x2 have %d and %d axes; both must be "
                  "vectors",
                  x1->ndim, x2->ndim);
        return NULL;
    }
    if (ct_scope_begin() != CT_OK) return NULL;
    return kept(ct_mul(ct_unsqueeze(x1, 1), ct_unsqueeze(x2, 0)));
}

ct_tensor *ct_linalg_matrix_transpose(const ct_tensor *x) {
    if (!ct__check_args_complex("ct_linalg_matrix_transpose", 1, &x, &(ct_device){0})) return NULL;
    if (x->ndim < 2) {
        ct__error(CT_ERR_SHAPE,
                  "ct_linalg_matrix_transpose: x has %d axes; it must have at "
                  "least 2",
                  x->ndim);
        return NULL;
    }
    return ct_transpose(x, -2, -1);
}

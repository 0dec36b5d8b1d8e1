/* Backward rules of ct_linalg_*'s factorizations, composed of ctensor's ops; each runs in a
 * scope and keeps only its gradients. Real and complex matrices share each rule: X^H (mH) is
 * X^T for a real X, and a complex input gets PyTorch's gradient (grad_impl.h:
 * dL/dRe z + i dL/dIm z), the real rules with conjugate transposes, plus the terms of the
 * phases a complex factorization fixes (named at each rule). A function that reads the lower
 * triangle of a Hermitian input (cholesky, eigh; LAPACK ignores the imaginary parts of its
 * diagonal) has the gradient G of the Hermitian matrix turned into that triangle's:
 * tril(G + G^H) with the diagonal halved (real), which is what a finite difference of one
 * part of one element of the triangle sees. */
#include "ops/grad_impl.h"
#include "ops/linalg_impl.h"
#include "ops/op_impl.h"

static ct_tensor *keep(ct_tensor *t) { return t ? ct_keep(t) : NULL; }
/* t's matrices conjugate-transposed (transposed when t is real). */
static ct_tensor *mH(const ct_tensor *t) {
    ct_tensor *transposed = ct_transpose(t, -2, -1);
    return transposed && ct__is_complex(t->dtype) ? ct_conj(transposed) : transposed;
}
/* t (..., n) as (..., 1, n) (row) or (..., n, 1). */
static ct_tensor *as_row(const ct_tensor *t) { return ct_unsqueeze(t, -2); }
static ct_tensor *as_column(const ct_tensor *t) { return ct_unsqueeze(t, -1); }
/* t (...) as (..., 1, 1). */
static ct_tensor *as_matrix(const ct_tensor *t) { return ct_unsqueeze(ct_unsqueeze(t, -1), -1); }

/* n x n on t's device in t's dtype: 1 below the diagonal, `diagonal` on it, 0 above. */
static ct_tensor *lower_mask(const ct_tensor *t, int64_t n, double diagonal) {
    ct_device device = t->storage->device;
    ct_tensor *i = ct_reshape(ct_arange(0, (double)n, 1, CT_I64, device), 2, (int64_t[]){n, 1});
    ct_tensor *j = ct_reshape(ct_arange(0, (double)n, 1, CT_I64, device), 2, (int64_t[]){1, n});
    ct_tensor *below = ct_cast(ct_gt(i, j), t->dtype), *on = ct_cast(ct_eq(i, j), t->dtype);
    return ct_add(below, ct_mul_scalar(on, diagonal));
}

/* The gradient of the lower triangle read for the Hermitian matrix's gradient g. */
static ct_tensor *lower_triangle_gradient(const ct_tensor *g) {
    int64_t n = g->shape[g->ndim - 1];
    return ct_mul(ct_add(g, mH(g)), lower_mask(g, n, 0.5));
}

/* y @ r^{-H} for r square: (r^{-1} y^H)^H. */
static ct_tensor *times_inverse_adjoint(const ct_tensor *y, const ct_tensor *r) {
    return mH(ct_linalg_solve(r, mH(y)));
}

/* Runs a rule in a scope: grad_in[i] = the kept results. */
typedef void (*rule_fn)(const ct__node *node, const ct_tensor *g, ct_tensor **grad_in);
static ct_status run_rule(rule_fn rule, const ct__node *node, const ct_tensor *g,
                          ct_tensor **grad_in, int n) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    rule(node, g, grad_in);
    ct_status status = CT_OK;
    for (int i = 0; i < n; i++) {
        if (node->inputs[i] && !grad_in[i]) status = ct_last_status();
        grad_in[i] = keep(grad_in[i]);
    }
    ct_scope_end();
    if (status != CT_OK)
        for (int i = 0; i < n; i++) ct_release(grad_in[i]), grad_in[i] = NULL;
    return status;
}

/* ---- solve: x = a^{-1} b; gb = a^{-H} g, ga = -gb x^H ---- */
static void solve_rule(const ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *a = node->saved[0], *x = node->saved[1];
    bool vector = node->ints[0];
    ct_tensor *gb = ct_linalg_solve(mH(a), vector ? as_column(g) : g);
    ct_tensor *xm = vector ? as_column(x) : (ct_tensor *)x;
    if (node->inputs[0]) grad_in[0] = ct_neg(ct_matmul(gb, mH(xm)));
    if (node->inputs[1]) grad_in[1] = vector ? ct_squeeze(gb, -1) : gb;
}
static ct_status solve_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    return run_rule(solve_rule, node, g, grad_in, 2);
}
ct_tensor *ct__linalg_record_solve(ct_tensor *out, const ct_tensor *a, const ct_tensor *b,
                                   const ct_tensor *x, bool vector) {
    ct__node *node =
        ct__node_new("ct_linalg_solve", solve_backward, 2, (const ct_tensor *[]){a, b});
    if (node) {
        ct__node_save(node, 0, a);
        ct__node_save(node, 1, x);
        node->ints[0] = vector;
    }
    return ct__record(out, node);
}

/* ---- inv: y = x^{-1}; gx = -y^H g y^H ---- */
static void inv_rule(const ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *y = node->saved[0];
    grad_in[0] = ct_neg(ct_matmul(ct_matmul(mH(y), g), mH(y)));
}
static ct_status inv_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    return run_rule(inv_rule, node, g, grad_in, 1);
}
ct_tensor *ct__linalg_record_inv(ct_tensor *out, const ct_tensor *x, const ct_tensor *inv) {
    ct__node *node = ct__node_new("ct_linalg_inv", inv_backward, 1, &x);
    if (node) ct__node_save(node, 0, inv);
    return ct__record(out, node);
}

/* ---- det (holomorphic): gx = g conj(det) x^{-H}; logabsdet = Re log det (real g):
 * gx = g x^{-H}; the sign det / |det| of a complex x, whose d sign = sign i Im tr(x^{-1} dx):
 * gx = i Im(g conj(sign)) x^{-H} ---- */
static void det_rule(const ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = node->saved[0], *d = node->saved[1];
    ct_tensor *scale;
    if (node->ints[0] == CT__DET_LOGABS) {
        scale = (ct_tensor *)g;
    } else if (node->ints[0] == CT__DET_SIGN) {
        ct_tensor *product = ct_mul(g, ct_conj(d)); /* i Im(p) = (p - conj(p)) / 2 */
        scale = ct_mul_scalar(ct_sub(product, ct_conj(product)), 0.5);
    } else {
        scale = ct__is_complex(d->dtype) ? ct_mul(g, ct_conj(d)) : ct_mul(g, d);
    }
    grad_in[0] = ct_mul(as_matrix(scale), mH(ct_linalg_inv(x)));
}
static ct_status det_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    return run_rule(det_rule, node, g, grad_in, 1);
}
ct_tensor *ct__linalg_record_det(ct_tensor *out, const ct_tensor *x, const ct_tensor *det,
                                 int which) {
    ct__node *node = ct__node_new(which == CT__DET_VALUE ? "ct_linalg_det" : "ct_linalg_slogdet",
                                  det_backward, 1, &x);
    if (node) ct__node_save(node, 0, x), ct__node_save(node, 1, det), node->ints[0] = which;
    return ct__record(out, node);
}

/* ---- cholesky: a = l l^H (l's diagonal real); P = Φ(l^H g) (lower, diagonal halved),
 * S = l^{-H} P l^{-1}, the Hermitian gradient (S + S^H) / 2 ---- */
static void cholesky_rule(const ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *l = node->saved[0];
    int64_t n = l->shape[l->ndim - 1];
    ct_tensor *p = ct_mul(ct_matmul(mH(l), g), lower_mask(l, n, 0.5));
    ct_tensor *li = ct_linalg_inv(l);
    ct_tensor *s = ct_matmul(ct_matmul(mH(li), p), li);
    grad_in[0] = lower_triangle_gradient(ct_mul_scalar(ct_add(s, mH(s)), 0.5));
}
static ct_status cholesky_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    return run_rule(cholesky_rule, node, g, grad_in, 1);
}
ct_tensor *ct__linalg_record_cholesky(ct_tensor *out, const ct_tensor *x, const ct_tensor *l) {
    ct__node *node = ct__node_new("ct_linalg_cholesky", cholesky_backward, 1, &x);
    if (node) ct__node_save(node, 0, l);
    return ct__record(out, node);
}

/* 1 when the loss whose gradient of the complex eigenvectors v is gv does not depend on
 * their phases, given vhg = v^H gv (a column's phase e^{iφ} moves the loss by
 * Im(vhg_kk) dφ), 0 when it does, -1 on failure. A lax check, as PyTorch's
 * (linalg_eig_backward): a tolerance of 1e-2 relative to vhg's largest element; a NaN
 * passes (it propagates to the gradient). */
static int phase_invariant(const ct_tensor *vhg) {
    if (ct_numel(vhg) == 0) return 1;
    ct_tensor *phases = ct_abs(ct_imag(ct_linalg_diagonal(vhg, 0)));
    ct_tensor *worst = ct_max(phases, 0, NULL, false);
    ct_tensor *scale = ct_max(ct_abs(vhg), 0, NULL, false);
    double worst_value = 0, scale_value = 0;
    if (!worst || !scale || ct_item(worst, &worst_value) != CT_OK ||
        ct_item(scale, &scale_value) != CT_OK)
        return -1;
    return !(worst_value > 1e-2 * scale_value);
}

/* ---- eigh: x = v diag(w) v^H (w real); G = v (diag(gw) + F ∘ (v^H gv)) v^H,
 * F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it. A complex v is defined up to a phase per
 * column, which LAPACK fixes: a loss that depends on it has no gradient, and is refused (as
 * PyTorch does) ---- */
static void eigh_rule(const ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *w = node->saved[0], *v = node->saved[1];
    ct_tensor *inner;
    if (node->ints[0] == 0) {
        inner = ct_mul(mH(v), as_column(g)); /* diag(gw) v^H */
        grad_in[0] = lower_triangle_gradient(ct_matmul(v, inner));
        return;
    }
    ct_tensor *vhg = ct_matmul(mH(v), g);
    int invariant = vhg && ct__is_complex(v->dtype) ? phase_invariant(vhg) : 1;
    if (invariant == 0)
        ct__error(CT_ERR_INVALID_ARG,
                  "ct_linalg_eigh: the loss depends on the phases of the complex eigenvectors "
                  "(each is defined up to a factor e^{i phi}), so its gradient is "
                  "ill-defined; make the loss invariant to them (use |v|, or v v^H)");
    if (invariant != 1) return;
    int64_t n = w->shape[w->ndim - 1];
    ct_device device = w->storage->device;
    ct_tensor *gaps = ct_sub(as_row(w), as_column(w));
    ct_tensor *eye = ct_cast(ct_eye(n, n, w->dtype, device), CT_BOOL);
    ct_tensor *zero = ct__full_on(device, 0, NULL, 0.0, w->dtype);
    ct_tensor *one = ct__full_on(device, 0, NULL, 1.0, w->dtype);
    ct_tensor *f = ct_where(eye, zero, ct_div_rscalar(ct_where(eye, one, gaps), 1.0));
    inner = ct_mul(f, vhg);
    grad_in[0] = lower_triangle_gradient(ct_matmul(ct_matmul(v, inner), mH(v)));
}
static ct_status eigh_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    return run_rule(eigh_rule, node, g, grad_in, 1);
}
ct_tensor *ct__linalg_record_eigh(ct_tensor *out, int which, const ct_tensor *x, const ct_tensor *w,
                                  const ct_tensor *v) {
    ct__node *node = ct__node_new("ct_linalg_eigh", eigh_backward, 1, &x);
    if (node) ct__node_save(node, 0, w), ct__node_save(node, 1, v), node->ints[0] = which;
    return ct__record(out, node);
}

/* ---- svd, reduced: x = u diag(s) vh, v = vh^H, F_ij = 1 / (s_j^2 - s_i^2) off the diagonal
 * and 0 on it (Townsend, "Differentiating the Singular Value Decomposition", 2016):
 *   from gs: u diag(gs) vh
 *   from gu: u ((F ∘ Ju) diag(s) + I ∘ Ju diag(1/4s)) vh + (I - u u^H) gu diag(1/s) vh
 *   from gv: u (diag(s) (F ∘ Jv) - I ∘ Jv diag(1/4s)) vh + u diag(1/s) gv^H (I - v v^H)
 * with Ju = u^H gu - gu^H u and Jv = v^H gv - gv^H v (skew-Hermitian, so their diagonals
 * 2i Im(u^H gu)_kk and 2i Im(v^H gv)_kk are 0 for a real x).
 * The phase terms: a complex x's k-th columns of u and v are defined up to one shared
 * factor e^{iφ}; a loss that does not depend on it has Im(u^H gu)_kk = -Im(v^H gv)_kk = c_k
 * and the gradient u diag(i c / s) vh, which u's and vh's results (separate nodes, so no one
 * of them sees both gradients to check the loss's invariance, as PyTorch does) each give
 * half of. A loss that depends on the phases gets, without an error, the gradient for the
 * phases moving by halves in opposite directions in u and v (linalg.h). ---- */
static ct_tensor *svd_gaps(const ct_tensor *s) {
    int64_t k = s->shape[s->ndim - 1];
    ct_device device = s->storage->device;
    ct_tensor *sq = ct_mul(s, s);
    ct_tensor *gaps = ct_sub(as_row(sq), as_column(sq));
    ct_tensor *eye = ct_cast(ct_eye(k, k, s->dtype, device), CT_BOOL);
    ct_tensor *zero = ct__full_on(device, 0, NULL, 0.0, s->dtype);
    ct_tensor *one = ct__full_on(device, 0, NULL, 1.0, s->dtype);
    return ct_where(eye, zero, ct_div_rscalar(ct_where(eye, one, gaps), 1.0));
}
/* j's diagonal / (4 s) as a diagonal matrix: the phase term of a complex svd. */
static ct_tensor *svd_phase(const ct_tensor *j, const ct_tensor *s) {
    int64_t k = s->shape[s->ndim - 1];
    ct_tensor *eye = ct_eye(k, k, s->dtype, s->storage->device);
    return ct_mul(j, ct_mul(eye, as_column(ct_div_rscalar(s, 0.25))));
}
static void svd_rule(const ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *u = node->saved[0], *s = node->saved[1], *vh = node->saved[2];
    switch (node->ints[0]) {
    case 1: grad_in[0] = ct_matmul(ct_mul(u, as_row(g)), vh); return;
    case 0: {
        ct_tensor *utg = ct_matmul(mH(u), g);
        ct_tensor *ju = ct_sub(utg, mH(utg));
        ct_tensor *middle = ct_mul(ct_mul(svd_gaps(s), ju), as_row(s));
        if (ct__is_complex(u->dtype)) middle = ct_add(middle, svd_phase(ju, s));
        ct_tensor *inner = ct_matmul(ct_matmul(u, middle), vh);
        ct_tensor *rest = ct_matmul(ct_sub(g, ct_matmul(u, utg)), ct_div(vh, as_column(s)));
        grad_in[0] = ct_add(inner, rest);
        return;
    }
    default: {                                  /* g is the gradient of vh: gv = g^H */
        ct_tensor *vhgv = ct_matmul(vh, mH(g)); /* v^H gv */
        ct_tensor *jv = ct_sub(vhgv, mH(vhgv));
        ct_tensor *middle = ct_mul(as_column(s), ct_mul(svd_gaps(s), jv));
        if (ct__is_complex(u->dtype)) middle = ct_sub(middle, svd_phase(jv, s));
        ct_tensor *inner = ct_matmul(ct_matmul(u, middle), vh);
        ct_tensor *rest =
            ct_matmul(ct_div(u, as_row(s)), ct_sub(g, ct_matmul(ct_matmul(g, mH(vh)), vh)));
        grad_in[0] = ct_add(inner, rest);
        return;
    }
    }
}
static ct_status svd_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    if (node->ints[0] == 3)
        return ct__error(CT_ERR_UNSUPPORTED, "ct_linalg_svd: no gradient through U and Vh of "
                                             "full_matrices for non-square matrices (ask for "
                                             "the reduced ones)");
    return run_rule(svd_rule, node, g, grad_in, 1);
}
ct_tensor *ct__linalg_record_svd(ct_tensor *out, int which, const ct_tensor *x, const ct_tensor *u,
                                 const ct_tensor *s, const ct_tensor *vh) {
    ct__node *node = ct__node_new("ct_linalg_svd", svd_backward, 1, &x);
    if (node) {
        ct__node_save(node, 0, u), ct__node_save(node, 1, s), ct__node_save(node, 2, vh);
        node->ints[0] = which;
    }
    return ct__record(out, node);
}

/* ---- qr, m >= n, reduced: with M = gr r^H - q^H gq and
 * N = M - tril(M - M^H, -1) - diag(M - M^H) / 2, gx = (gq + q N) r^{-H} (the adjoint of the
 * JVP of Walter and Lehmann's rule). The diagonal term is 0 for a real x. For a complex x
 * the rule takes r's diagonal real, as LAPACK's Householder QR (zgeqrf) makes it, which
 * fixes q's phases; N's diagonal is then Re(M_kk) ---- */
static void qr_rule(const ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *q = node->saved[0], *r = node->saved[1];
    int64_t n = r->shape[r->ndim - 1];
    bool of_q = node->ints[0] == 0;
    ct_tensor *m = of_q ? ct_neg(ct_matmul(mH(q), g)) : ct_matmul(g, mH(r));
    ct_tensor *skew = ct_sub(m, mH(m));
    double diagonal = ct__is_complex(q->dtype) ? 0.5 : 0.0;
    ct_tensor *nn = ct_sub(m, ct_mul(skew, lower_mask(skew, n, diagonal)));
    ct_tensor *qn = ct_matmul(q, nn);
    grad_in[0] = times_inverse_adjoint(of_q ? ct_add(g, qn) : qn, r);
}
static ct_status qr_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *q = node->saved[0], *r = node->saved[1];
    int64_t m = q->shape[q->ndim - 2], n = r->shape[r->ndim - 1];
    if (m < n || q->shape[q->ndim - 1] != n)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_linalg_qr: no gradient for %lld x %lld matrices "
                         "in this mode (only M >= N, reduced)",
                         (long long)m, (long long)n);
    return run_rule(qr_rule, node, g, grad_in, 1);
}
ct_tensor *ct__linalg_record_qr(ct_tensor *out, int which, const ct_tensor *x, const ct_tensor *q,
                                const ct_tensor *r) {
    ct__node *node = ct__node_new("ct_linalg_qr", qr_backward, 1, &x);
    if (node) ct__node_save(node, 0, q), ct__node_save(node, 1, r), node->ints[0] = which;
    return ct__record(out, node);
}

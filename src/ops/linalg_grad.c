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

/* The largest magnitude of t's elements in *value; false on failure. */
static bool max_magnitude(const ct_tensor *t, double *value) {
    ct_tensor *largest = ct_max(ct_abs(t), 0, NULL, false);
    return largest && ct_item(largest, value) == CT_OK;
}

/* 1 when no element of the real `phases` (a loss's rates of change with the phases of
 * complex vectors) exceeds 1e-2 times the largest magnitude in scales[0..n) (the vectors'
 * products with their gradients; NULL entries skipped), 0 when one does, -1 on failure. A lax
 * check, as PyTorch's (linalg_eig_backward, svd_backward); a NaN passes (it propagates to the
 * gradient). */
static int phases_negligible(const ct_tensor *phases, int n, const ct_tensor *const *scales) {
    if (!phases) return -1;
    if (ct_numel(phases) == 0) return 1;
    double worst = 0, scale = 0;
    if (!max_magnitude(phases, &worst)) return -1;
    for (int i = 0; i < n; i++) {
        double value = 0;
        if (scales[i] && !max_magnitude(scales[i], &value)) return -1;
        if (value > scale) scale = value;
    }
    return !(worst > 1e-2 * scale);
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
    /* a column's phase e^{iφ} moves the loss by Im(vhg_kk) dφ */
    int invariant =
        vhg && ct__is_complex(v->dtype)
            ? phases_negligible(ct_imag(ct_linalg_diagonal(vhg, 0)), 1, (const ct_tensor *[]){vhg})
            : 1;
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
 *   from gu: u ((F ∘ Ju) diag(s) + I ∘ Ju diag(1/2s)) vh + (I - u u^H) gu diag(1/s) vh
 *   from gv: u diag(s) (F ∘ Jv) vh + u diag(1/s) gv^H (I - v v^H)
 * with Ju = u^H gu - gu^H u and Jv = v^H gv - gv^H v (skew-Hermitian; I ∘ Ju, the phase
 * term, is diag(2i Im(u^H gu)_kk), 0 for a real x).
 * A complex x's k-th columns of u and v are defined up to one shared factor e^{iφ}, which
 * moves the loss by (Im(u^H gu)_kk + Im(v^H gv)_kk) dφ: a loss that depends on it has no
 * gradient. U, S and Vh of a complex x are recorded on one node (a multi-output node: the
 * node behind a hidden scalar, and each result's node hands it its gradient), whose rule sees
 * the three gradients together, refuses such a loss as PyTorch does, and gives the phase
 * term from gu alone (PyTorch's convention). A real x's results keep a node each (their
 * gradients add in the engine). The full U and Vh of a non-square x take the rule of their
 * reduced parts (u and vh saved are those), with their gradients narrowed to them. ---- */
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
/* The term of gs. */
static ct_tensor *svd_term_s(const ct_tensor *u, const ct_tensor *vh, const ct_tensor *gs) {
    return ct_matmul(ct_mul(u, as_row(gs)), vh);
}
/* The term of gu, given utg = u^H gu; phase: with the phase term. */
static ct_tensor *svd_term_u(const ct_tensor *u, const ct_tensor *s, const ct_tensor *vh,
                             const ct_tensor *gu, const ct_tensor *utg, bool phase) {
    ct_tensor *ju = ct_sub(utg, mH(utg));
    ct_tensor *middle = ct_mul(ct_mul(svd_gaps(s), ju), as_row(s));
    if (phase) { /* I ∘ Ju diag(1/2s) */
        int64_t k = s->shape[s->ndim - 1];
        ct_tensor *eye = ct_eye(k, k, s->dtype, s->storage->device);
        middle = ct_add(middle, ct_mul(ju, ct_mul(eye, as_column(ct_div_rscalar(s, 0.5)))));
    }
    ct_tensor *inner = ct_matmul(ct_matmul(u, middle), vh);
    ct_tensor *rest = ct_matmul(ct_sub(gu, ct_matmul(u, utg)), ct_div(vh, as_column(s)));
    return ct_add(inner, rest);
}
/* The term of vh's gradient gvh (gv = gvh^H), given vhgv = v^H gv. */
static ct_tensor *svd_term_vh(const ct_tensor *u, const ct_tensor *s, const ct_tensor *vh,
                              const ct_tensor *gvh, const ct_tensor *vhgv) {
    ct_tensor *jv = ct_sub(vhgv, mH(vhgv));
    ct_tensor *middle = ct_mul(as_column(s), ct_mul(svd_gaps(s), jv));
    ct_tensor *inner = ct_matmul(ct_matmul(u, middle), vh);
    ct_tensor *rest =
        ct_matmul(ct_div(u, as_row(s)), ct_sub(gvh, ct_matmul(ct_matmul(gvh, mH(vh)), vh)));
    return ct_add(inner, rest);
}

/* The gradient g of U or Vh narrowed to the reduced factor's shape: a full U's (..., M, M) to
 * its first K columns, a full Vh's (..., N, N) to its first K rows, as PyTorch's: the others
 * are arbitrary bases of the complements, and a gradient of them is ignored. A reduced
 * factor's g as it is. */
static const ct_tensor *reduced_gradient(const ct_tensor *g, const ct_tensor *factor) {
    int r = factor->ndim - 2;
    if (g->shape[r] != factor->shape[r]) return ct_slice(g, -2, 0, factor->shape[r], 1);
    if (g->shape[r + 1] != factor->shape[r + 1]) return ct_slice(g, -1, 0, factor->shape[r + 1], 1);
    return g;
}

/* A real x's result ints[0] (0: U, 1: S, 2: Vh). */
static void svd_rule(const ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *u = node->saved[0], *s = node->saved[1], *vh = node->saved[2];
    switch (node->ints[0]) {
    case 0:
        if (!(g = reduced_gradient(g, u))) return;
        grad_in[0] = svd_term_u(u, s, vh, g, ct_matmul(mH(u), g), false);
        return;
    case 1: grad_in[0] = svd_term_s(u, vh, g); return;
    default:
        if (!(g = reduced_gradient(g, vh))) return;
        grad_in[0] = svd_term_vh(u, s, vh, g, ct_matmul(vh, mH(g)));
        return;
    }
}
static ct_status svd_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
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

/* The joint node's context: the gradients its results' nodes handed it (unscoped
 * references), each with the pass (the node's visit mark) it belongs to, so that one left by
 * a failed pass is never read by a later one. */
typedef struct svd_gradients {
    ct_tensor *grads[3]; /* U's, S's, Vh's */
    uint64_t pass[3];
} svd_gradients;

static void svd_gradients_clear(svd_gradients *gradients) {
    for (int k = 0; k < 3; k++) {
        if (gradients->grads[k]) ct__tensor_drop(gradients->grads[k]);
        gradients->grads[k] = NULL;
    }
}
static void svd_gradients_free(void *context) {
    svd_gradients_clear(context);
    ct__free_mem(context);
}

static void svd_joint_rule(const ct__node *node, const ct_tensor *unused, ct_tensor **grad_in) {
    (void)unused;
    const ct_tensor *u = node->saved[0], *s = node->saved[1], *vh = node->saved[2];
    const svd_gradients *gradients = node->context;
    const ct_tensor *g[3];
    for (int k = 0; k < 3; k++)
        g[k] = gradients->pass[k] == node->visit ? gradients->grads[k] : NULL;
    if (g[0] && !(g[0] = reduced_gradient(g[0], u))) return;
    if (g[2] && !(g[2] = reduced_gradient(g[2], vh))) return;
    ct_tensor *utg = g[0] ? ct_matmul(mH(u), g[0]) : NULL;
    ct_tensor *vhgv = g[2] ? ct_matmul(vh, mH(g[2])) : NULL;
    if ((g[0] && !utg) || (g[2] && !vhgv)) return;
    if (g[0] || g[2]) {
        ct_tensor *phases = utg ? ct_imag(ct_linalg_diagonal(utg, 0)) : NULL;
        if (vhgv) {
            ct_tensor *of_v = ct_imag(ct_linalg_diagonal(vhgv, 0));
            phases = phases ? ct_add(phases, of_v) : of_v;
        }
        int invariant = phases_negligible(phases, 2, (const ct_tensor *[]){utg, vhgv});
        if (invariant == 0)
            ct__error(CT_ERR_INVALID_ARG,
                      "ct_linalg_svd: the loss depends on the phases of the complex singular "
                      "vectors (the k-th columns of U and V are defined up to a shared factor "
                      "e^{i phi}), so its gradient is ill-defined; make the loss invariant to "
                      "them (use |U|, U Vh, or U diag(S) Vh)");
        if (invariant != 1) return;
    }
    ct_tensor *sum = g[1] ? svd_term_s(u, vh, g[1]) : NULL;
    if (g[0]) {
        ct_tensor *term = svd_term_u(u, s, vh, g[0], utg, true);
        sum = sum ? ct_add(sum, term) : term;
    }
    if (g[2]) {
        ct_tensor *term = svd_term_vh(u, s, vh, g[2], vhgv);
        sum = sum ? ct_add(sum, term) : term;
    }
    grad_in[0] = sum;
}
static ct_status svd_joint_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    ct_status status = run_rule(svd_joint_rule, node, g, grad_in, 1);
    svd_gradients_clear(node->context);
    return status;
}
ct_tensor *ct__linalg_record_svd_joint(const ct_tensor *x, const ct_tensor *u, const ct_tensor *s,
                                       const ct_tensor *vh) {
    ct_tensor *hidden = ct__full_on(x->storage->device, 0, NULL, 0.0, s->dtype);
    ct__node *node = ct__node_new("ct_linalg_svd", svd_joint_backward, 1, &x);
    svd_gradients *gradients = node ? ct__calloc(1, sizeof *gradients) : NULL;
    if (node && !gradients) {
        ct__node_release(node);
        node = ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_linalg_svd: out of host memory for its "
                                              "autograd node");
    }
    if (node) {
        ct__node_save(node, 0, u), ct__node_save(node, 1, s), ct__node_save(node, 2, vh);
        node->context = gradients;
        node->context_free = svd_gradients_free;
    }
    return ct__record(hidden, node);
}

/* A result's node: it hands its gradient to the joint node and passes on a zero to the hidden
 * scalar, so that the joint node runs after every result's node that a gradient reaches. */
static ct_status svd_output_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *hidden = node->inputs[0];
    ct__node *joint = hidden->grad_fn;
    svd_gradients *gradients = joint->context;
    int k = (int)node->ints[0];
    if (gradients->grads[k]) ct__tensor_drop(gradients->grads[k]);
    gradients->grads[k] = ct_retain((ct_tensor *)g);
    gradients->pass[k] = joint->visit;
    grad_in[0] = ct__full_on(hidden->storage->device, 0, NULL, 0.0, hidden->dtype);
    return grad_in[0] ? CT_OK : ct_last_status();
}
ct_tensor *ct__linalg_record_svd_output(ct_tensor *out, int which, const ct_tensor *joint) {
    if (!joint) {
        ct_release(out);
        return NULL;
    }
    ct__node *node = ct__node_new("ct_linalg_svd", svd_output_backward, 1, &joint);
    if (node) node->ints[0] = which;
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

/* Backward rules of the reductions (sum, mean, prod, max, min, var, std) and of matmul. */
#include "ops/grad_impl.h"
#include "ops/op_impl.h"

static ct_tensor *keep(ct_tensor *t) { return t ? ct_keep(t) : NULL; }

/* t (the reduced shape) with the reduced axes of x back as size-1 axes. */
static ct_tensor *with_kept_axes(const ct_tensor *t, const ct__node *node, const ct_tensor *x) {
    int64_t shape[CT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) shape[d] = node->ints[1 + d] ? 1 : x->shape[d];
    return ct_reshape(t, x->ndim, shape);
}

static ct_tensor *reduce_gradient(const ct__node *node, const ct_tensor *g) {
    const ct_tensor *x = node->saved[0];
    ct_tensor *gk = with_kept_axes(g, node, x);
    ct_tensor *yk = node->saved[1] ? with_kept_axes(node->saved[1], node, x) : NULL;
    int64_t count = 1;
    int axes[CT_MAX_DIMS], naxes = 0;
    for (int d = 0; d < x->ndim; d++)
        if (node->ints[1 + d]) count *= x->shape[d], axes[naxes++] = d;
    double dof = (double)count - node->scalars[0];
    switch ((ct__reduce_op)node->ints[0]) {
    case CT_ROP_SUM: return ct_expand(gk, x->ndim, x->shape);
    case CT_ROP_MEAN: return ct_expand(ct_div_scalar(gk, (double)count), x->ndim, x->shape);
    case CT_ROP_PROD: /* x with zeros gives NaN; complex: conj(y / x) (holomorphic) */
        if (ct__is_complex(x->dtype)) return ct_div(ct_mul(gk, ct_conj(yk)), ct_conj(x));
        return ct_div(ct_mul(gk, yk), x);
    case CT_ROP_MAX:
    case CT_ROP_MIN: {
        /* Ties share the gradient evenly, as PyTorch's amax/amin. */
        ct_tensor *hits = ct_cast(ct_eq(x, yk), x->dtype);
        return ct_div(ct_mul(gk, hits), ct_sum(hits, naxes, axes, true));
    }
    case CT_ROP_VAR:
    case CT_ROP_STD: {
        ct_tensor *centred = ct_sub(x, ct_mean(x, naxes, axes, true));
        ct_tensor *d = ct_mul_scalar(ct_mul(gk, centred), 2.0 / dof);
        return node->ints[0] == CT_ROP_VAR ? d : ct_div(ct_mul_scalar(d, 0.5), yk);
    }
    default: return NULL;
    }
}

static ct_status reduce_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    grad_in[0] = keep(reduce_gradient(node, g));
    ct_status status = grad_in[0] ? CT_OK : ct_last_status();
    ct_scope_end();
    return status;
}

static bool differentiable(ct__reduce_op op) {
    return op == CT_ROP_SUM || op == CT_ROP_MEAN || op == CT_ROP_PROD || op == CT_ROP_MAX ||
           op == CT_ROP_MIN || op == CT_ROP_VAR || op == CT_ROP_STD;
}

ct_tensor *ct__record_reduce(ct_tensor *out, const char *name, ct__reduce_op op, const ct_tensor *x,
                             const bool *reduced, bool keepdim, double correction) {
    (void)keepdim; /* the reduced axes alone say how to put them back */
    if (!out || !differentiable(op) || !ct__grad_dtype(out->dtype)) return out;
    ct__node *node = ct__node_new(name, reduce_backward, 1, &x);
    if (!node) return ct__record(out, NULL);
    node->ints[0] = op;
    for (int d = 0; d < x->ndim; d++) node->ints[1 + d] = reduced[d];
    node->scalars[0] = correction;
    ct__node_save(node, 0, x);
    if (op != CT_ROP_SUM && op != CT_ROP_MEAN && op != CT_ROP_VAR) {
        ct_tensor *y = ct_detach(out);
        if (!y) {
            ct__node_release(node);
            return ct__record(out, NULL);
        }
        ct__node_save(node, 1, y);
        ct_release(y);
    }
    return ct__record(out, node);
}

/* A 1-D operand as a matrix: a row (k) -> (1, k) for the left, a column for the right. */
static ct_tensor *as_matrix(const ct_tensor *t, bool left) {
    if (t->ndim != 1) return ct__new_ref(t);
    return ct_unsqueeze(t, left ? 0 : 1);
}

/* a (..., m, k) @ b (..., k, n) = y: ga = g b^H, gb = a^H g (b^T and a^T for real ones); the
 * engine sums broadcast batch axes. 1-D operands are treated as matrices and their added axis
 * dropped again. */
static ct_status matmul_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    const ct_tensor *a = ct_conj(node->saved[0]), *b = ct_conj(node->saved[1]);
    if (!a || !b) {
        ct_scope_end();
        return ct_last_status();
    }
    if (a->ndim == 1 && b->ndim == 1) { /* a dot product */
        if (node->inputs[0]) grad_in[0] = keep(ct_mul(g, b));
        if (node->inputs[1]) grad_in[1] = keep(ct_mul(g, a));
        ct_status status = (node->inputs[0] && !grad_in[0]) || (node->inputs[1] && !grad_in[1])
                               ? ct_last_status()
                               : CT_OK;
        ct_scope_end();
        return status;
    }
    ct_tensor *am = as_matrix(a, true), *bm = as_matrix(b, false);
    ct_tensor *gm = ct__new_ref(g);
    if (a->ndim == 1) gm = ct_unsqueeze(gm, -2);
    if (b->ndim == 1) gm = ct_unsqueeze(gm, -1);
    ct_status status = CT_OK;
    if (node->inputs[0]) {
        ct_tensor *ga = ct_matmul(gm, ct_transpose(bm, -1, -2));
        if (a->ndim == 1) ga = ct_squeeze(ga, -2);
        grad_in[0] = keep(ga);
        if (!grad_in[0]) status = ct_last_status();
    }
    if (node->inputs[1] && status == CT_OK) {
        ct_tensor *gb = ct_matmul(ct_transpose(am, -1, -2), gm);
        if (b->ndim == 1) gb = ct_squeeze(gb, -1);
        grad_in[1] = keep(gb);
        if (!grad_in[1]) status = ct_last_status();
    }
    ct_scope_end();
    return status;
}

ct_tensor *ct__record_matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
    if (!out || !ct__grad_dtype(out->dtype)) return out;
    const ct_tensor *inputs[2] = {a, b};
    ct__node *node = ct__node_new("ct_matmul", matmul_backward, 2, inputs);
    if (node) ct__node_save(node, 0, a), ct__node_save(node, 1, b);
    return ct__record(out, node);
}

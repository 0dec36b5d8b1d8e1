/* Backward rules of the elementwise ops (unary, binary, where, clamp).
 *
 * Each rule is an expression of ops, written inside its own scope so that temporaries go
 * when the scope ends and only the kept gradients leave it. A result is saved as a detached
 * view (a node holding its own result would keep itself alive). */
#include <math.h>

#include "autograd/grad_impl.h"
#include "ops/op_impl.h"

/* Keep t (a gradient) out of the current scope into the enclosing one. */
static ct_tensor *keep(ct_tensor *t) { return t ? ct_keep(t) : NULL; }

static ct_tensor *zeros_like(const ct_tensor *x) {
    return ct__full_on(x->storage->device, x->ndim, x->shape, 0.0, x->dtype);
}

/* g where mask, else 0. */
static ct_tensor *masked(const ct_tensor *g, ct_tensor *mask) {
    ct_tensor *zero = ct__full_on(g->storage->device, 0, NULL, 0.0, g->dtype);
    return ct_where(mask, g, zero);
}

static ct_tensor *gelu_derivative(const ct_tensor *x) {
    /* d/dx x Phi(x) = Phi(x) + x phi(x), Phi the normal CDF and phi its density. */
    ct_tensor *cdf = ct_mul_scalar(ct_add_scalar(ct_erf(ct_mul_scalar(x, M_SQRT1_2)), 1.0), 0.5);
    ct_tensor *pdf =
        ct_mul_scalar(ct_exp(ct_mul_scalar(ct_mul(x, x), -0.5)), 0.5 * M_2_SQRTPI * M_SQRT1_2);
    return ct_add(cdf, ct_mul(x, pdf));
}

static ct_tensor *unary_gradient(const ct_node *node, const ct_tensor *g) {
    const ct_tensor *x = node->saved[0], *y = node->saved[1];
    switch ((ct_unary_op)node->ints[0]) {
    case CT_UOP_NEG: return ct_neg(g);
    case CT_UOP_ABS: return ct_mul(g, ct_sign(x));
    case CT_UOP_SQRT: return ct_mul_scalar(ct_div(g, y), 0.5);
    case CT_UOP_RSQRT: return ct_mul_scalar(ct_mul(g, ct_pow_scalar(y, 3.0)), -0.5);
    case CT_UOP_EXP: return ct_mul(g, y);
    case CT_UOP_EXPM1: return ct_mul(g, ct_add_scalar(y, 1.0));
    case CT_UOP_LOG: return ct_div(g, x);
    case CT_UOP_LOG1P: return ct_div(g, ct_add_scalar(x, 1.0));
    case CT_UOP_SIN: return ct_mul(g, ct_cos(x));
    case CT_UOP_COS: return ct_mul(g, ct_neg(ct_sin(x)));
    case CT_UOP_TANH: return ct_mul(g, ct_add_scalar(ct_neg(ct_mul(y, y)), 1.0));
    case CT_UOP_SIGMOID: return ct_mul(g, ct_mul(y, ct_add_scalar(ct_neg(y), 1.0)));
    case CT_UOP_RELU: return ct__relu_backward(g, x);
    case CT_UOP_GELU: return ct_mul(g, gelu_derivative(x));
    case CT_UOP_ERF: return ct_mul(g, ct_mul_scalar(ct_exp(ct_neg(ct_mul(x, x))), M_2_SQRTPI));
    case CT_UOP_CLAMP:
        return masked(g, ct_logical_and(ct_ge_scalar(x, node->scalars[0]),
                                        ct_le_scalar(x, node->scalars[1])));
    default: return zeros_like(x); /* sign, floor, ceil, round: flat almost everywhere */
    }
}

static ct_status unary_backward(ct_node *node, const ct_tensor *g, ct_tensor **grad_in) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    grad_in[0] = keep(unary_gradient(node, g));
    ct_status status = grad_in[0] ? CT_OK : ct_last_status();
    ct_scope_end();
    return status;
}

/* Ops whose gradient needs their result; others need only the input. */
static bool needs_result(ct_unary_op op) {
    return op == CT_UOP_SQRT || op == CT_UOP_RSQRT || op == CT_UOP_EXP || op == CT_UOP_EXPM1 ||
           op == CT_UOP_TANH || op == CT_UOP_SIGMOID;
}

ct_tensor *ct__record_unary(ct_tensor *out, const char *name, ct_unary_op op, const ct_tensor *x,
                            double p0, double p1) {
    if (!out || op == CT_UOP_LOGICAL_NOT || !ct__is_float(out->dtype)) return out;
    ct_node *node = ct__node_new(name, unary_backward, 1, &x);
    if (node) {
        node->ints[0] = op;
        node->scalars[0] = p0;
        node->scalars[1] = p1;
        ct__node_save(node, 0, x);
        if (needs_result(op)) {
            ct_tensor *y = ct_detach(out);
            if (!y) {
                ct__node_release(node);
                node = NULL;
            } else {
                ct__node_save(node, 1, y);
                ct_release(y);
            }
        }
    }
    return ct__record(out, node);
}

/* Float 1 where mask, 0.5 where tie, else 0: how maximum and minimum share a gradient. */
static ct_tensor *extremum_share(const ct_tensor *wins, const ct_tensor *ties, ct_dtype dtype) {
    return ct_add(ct_cast(wins, dtype), ct_mul_scalar(ct_cast(ties, dtype), 0.5));
}

/* Gradients of a op b with tensors a and b (b NULL: the scalar s). The node saved only the
 * operands these gradients read (ct__record_binary). */
static void binary_gradients(const ct_node *node, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *a = node->saved[0], *b = node->saved[1];
    double s = node->scalars[0];
    bool need_a = node->inputs[0] != NULL, need_b = node->ninputs > 1 && node->inputs[1];
    ct_tensor *ga = NULL, *gb = NULL;
    switch ((ct_binary_op)node->ints[0]) {
    case CT_BOP_ADD: ga = ct__new_ref(g), gb = need_b ? ct__new_ref(g) : NULL; break;
    case CT_BOP_SUB: ga = ct__new_ref(g), gb = need_b ? ct_neg(g) : NULL; break;
    case CT_BOP_MUL:
        ga = need_a ? (b ? ct_mul(g, b) : ct_mul_scalar(g, s)) : NULL;
        gb = need_b ? ct_mul(g, a) : NULL;
        break;
    case CT_BOP_DIV:
        ga = need_a ? (b ? ct_div(g, b) : ct_div_scalar(g, s)) : NULL;
        gb = need_b ? ct_neg(ct_div(ct_mul(g, a), ct_mul(b, b))) : NULL;
        break;
    case CT_BOP_POW:
        if (need_a)
            ga = b        ? ct_mul(g, ct_mul(b, ct_pow(a, ct_sub_scalar(b, 1.0))))
                 : s == 0 ? zeros_like(g)
                          : ct_mul(g, ct_mul_scalar(ct_pow_scalar(a, s - 1.0), s));
        if (need_b) /* 0 where a == 0 and b >= 0, where log(a) would give NaN times 0 */
            gb = ct_where(ct_logical_and(ct_eq_scalar(a, 0.0), ct_ge_scalar(b, 0.0)),
                          ct__full_on(g->storage->device, 0, NULL, 0.0, g->dtype),
                          ct_mul(g, ct_mul(ct_pow(a, b), ct_log(a))));
        break;
    case CT_BOP_MAXIMUM:
    case CT_BOP_MINIMUM: {
        bool max = node->ints[0] == CT_BOP_MAXIMUM;
        ct_tensor *ties = b ? ct_eq(a, b) : ct_eq_scalar(a, s);
        if (need_a)
            ga = ct_mul(g, extremum_share(b ? (max ? ct_gt(a, b) : ct_lt(a, b))
                                            : (max ? ct_gt_scalar(a, s) : ct_lt_scalar(a, s)),
                                          ties, g->dtype));
        if (need_b) gb = ct_mul(g, extremum_share(max ? ct_gt(b, a) : ct_lt(b, a), ties, g->dtype));
        break;
    }
    case CT_BOP_REMAINDER:
        ga = ct__new_ref(g);
        gb = need_b ? ct_neg(ct_mul(g, ct_floor(ct_div(a, b)))) : NULL;
        break;
    default: break;
    }
    grad_in[0] = need_a ? keep(ga) : NULL;
    if (node->ninputs > 1) grad_in[1] = need_b ? keep(gb) : NULL;
}

static ct_status binary_backward(ct_node *node, const ct_tensor *g, ct_tensor **grad_in) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    binary_gradients(node, g, grad_in);
    ct_status status = CT_OK;
    for (int i = 0; i < node->ninputs; i++)
        if (node->inputs[i] && !grad_in[i]) status = ct_last_status();
    ct_scope_end();
    return status;
}

static bool differentiable(ct_binary_op op) {
    return op == CT_BOP_ADD || op == CT_BOP_SUB || op == CT_BOP_MUL || op == CT_BOP_DIV ||
           op == CT_BOP_POW || op == CT_BOP_MAXIMUM || op == CT_BOP_MINIMUM ||
           op == CT_BOP_REMAINDER;
}

ct_tensor *ct__record_binary(ct_tensor *out, const char *name, ct_binary_op op, const ct_tensor *a,
                             const ct_tensor *b, double s) {
    if (!out || !differentiable(op) || !ct__is_float(out->dtype)) return out;
    const ct_tensor *inputs[2] = {a, b};
    ct_node *node = ct__node_new(name, binary_backward, b ? 2 : 1, inputs);
    if (node) {
        node->ints[0] = op;
        node->scalars[0] = s;
        /* Only what binary_gradients reads for the gradients needed, as PyTorch saves: less
         * memory kept, and an in-place write into an operand no gradient needs is allowed. */
        bool need_a = node->inputs[0] != NULL, need_b = b && node->inputs[1] != NULL;
        bool save_a =
            op == CT_BOP_MUL || op == CT_BOP_DIV ? need_b : op != CT_BOP_ADD && op != CT_BOP_SUB;
        bool save_b = op == CT_BOP_MUL ? need_a : op != CT_BOP_ADD && op != CT_BOP_SUB;
        ct__node_save(node, 0, save_a ? a : NULL);
        ct__node_save(node, 1, save_b ? b : NULL);
    }
    return ct__record(out, node);
}

static ct_status where_backward(ct_node *node, const ct_tensor *g, ct_tensor **grad_in) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    const ct_tensor *cond = node->saved[0];
    ct_tensor *zero = ct__full_on(g->storage->device, 0, NULL, 0.0, g->dtype);
    if (node->inputs[1]) grad_in[1] = keep(ct_where(cond, g, zero));
    if (node->inputs[2]) grad_in[2] = keep(ct_where(cond, zero, g));
    ct_status status = CT_OK;
    for (int i = 1; i < 3; i++)
        if (node->inputs[i] && !grad_in[i]) status = ct_last_status();
    ct_scope_end();
    return status;
}

ct_tensor *ct__record_where(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a,
                            const ct_tensor *b) {
    if (!out || !ct__is_float(out->dtype)) return out;
    const ct_tensor *inputs[3] = {NULL, a, b};
    ct_node *node = ct__node_new("ct_where", where_backward, 3, inputs);
    if (node) ct__node_save(node, 0, cond);
    return ct__record(out, node);
}

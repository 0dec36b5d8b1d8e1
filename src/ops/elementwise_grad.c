/* Backward rules of the elementwise ops (unary, binary, where, clamp), beside their forward
 * (elementwise_unary.c, elementwise_binary.c): one short rule per row of op_list.h that is
 * marked GRAD, in tables indexed by op, so that a GRAD row without its rule does not compile
 * and a NOGRAD row with a floating result and an input that requires grad is
 * CT_ERR_UNSUPPORTED naming the op (never a zero gradient).
 *
 * Each rule is an expression of ops, written inside its own scope so that temporaries go
 * when the scope ends and only the kept gradients leave it. A result is saved as a detached
 * view (a node holding its own result would keep itself alive).
 *
 * Complex operands (PyTorch's convention, grad_impl.h): a holomorphic op's rule is g f'(x)
 * with f' made of x, y and real constants by functions that commute with conjugation
 * (conj f'(x) = f'(conj x) off the branch cuts, and on them too for the principal branches
 * with signed zeros), so the complex rule is the real one applied to conj(x) and conj(y).
 * abs and sign are not holomorphic and have their own complex rules, as acosh, whose real
 * rule 1 / sqrt(x^2 - 1) is not its complex derivative off the right half-plane. */
#include <math.h>

#include "ops/grad_impl.h"
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

/* ---- unary rules: the gradient of x from g, given x and (where saved) the result y ---- */

typedef ct_tensor *(*unary_rule)(const ct_tensor *x, const ct_tensor *y, const ct_tensor *g);

/* Flat almost everywhere (sign, floor, ceil, round, trunc): the gradient is 0, as PyTorch's. */
static ct_tensor *flat(const ct_tensor *x, const ct_tensor *y, const ct_tensor *g) {
    (void)y, (void)g;
    return zeros_like(x);
}

/* 1 / sqrt(t): rsqrt has no complex form. */
static ct_tensor *inverse_sqrt(const ct_tensor *t) {
    return ct__is_complex(t->dtype) ? ct_reciprocal(ct_sqrt(t)) : ct_rsqrt(t);
}

/* g / sqrt(1 - x^2) times sign: asin (+1) and acos (-1). */
static ct_tensor *arcsine_like(const ct_tensor *x, const ct_tensor *g, double sign) {
    return ct_mul_scalar(ct_mul(g, inverse_sqrt(ct_add_scalar(ct_neg(ct_mul(x, x)), 1.0))), sign);
}

#define RULE(name)                                                                                 \
    static ct_tensor *grad_##name(const ct_tensor *x, const ct_tensor *y, const ct_tensor *g)
RULE(neg) { return (void)x, (void)y, ct_neg(g); }
RULE(abs) { return (void)y, ct_mul(g, ct_sign(x)); }
RULE(sign) { return flat(x, y, g); }
RULE(sqrt) { return (void)x, ct_mul_scalar(ct_div(g, y), 0.5); }
RULE(rsqrt) { return (void)x, ct_mul_scalar(ct_mul(g, ct_pow_scalar(y, 3.0)), -0.5); }
RULE(exp) { return (void)x, ct_mul(g, y); }
RULE(expm1) { return (void)x, ct_mul(g, ct_add_scalar(y, 1.0)); }
RULE(log) { return (void)y, ct_div(g, x); }
RULE(log1p) { return (void)y, ct_div(g, ct_add_scalar(x, 1.0)); }
RULE(sin) { return (void)y, ct_mul(g, ct_cos(x)); }
RULE(cos) { return (void)y, ct_mul(g, ct_neg(ct_sin(x))); }
RULE(tanh) { return (void)x, ct_mul(g, ct_add_scalar(ct_neg(ct_mul(y, y)), 1.0)); }
RULE(sigmoid) { return (void)x, ct_mul(g, ct_mul(y, ct_add_scalar(ct_neg(y), 1.0))); }
RULE(relu) { return (void)y, ct__relu_backward(g, x); }
RULE(gelu) { return (void)y, ct_mul(g, gelu_derivative(x)); }
RULE(gelu_tanh) { return (void)y, ct__gelu_tanh_backward(g, x); }
RULE(erf) { return (void)y, ct_mul(g, ct_mul_scalar(ct_exp(ct_neg(ct_mul(x, x))), M_2_SQRTPI)); }
RULE(floor) { return flat(x, y, g); }
RULE(ceil) { return flat(x, y, g); }
RULE(round) { return flat(x, y, g); }
RULE(trunc) { return flat(x, y, g); }
RULE(square) { return (void)y, ct_mul(g, ct_mul_scalar(x, 2.0)); }
RULE(reciprocal) { return (void)x, ct_neg(ct_mul(g, ct_mul(y, y))); }
RULE(log2) { return (void)y, ct_div(g, ct_mul_scalar(x, M_LN2)); }
RULE(log10) { return (void)y, ct_div(g, ct_mul_scalar(x, M_LN10)); }
RULE(tan) { return (void)x, ct_mul(g, ct_add_scalar(ct_mul(y, y), 1.0)); }
RULE(asin) { return (void)y, arcsine_like(x, g, 1.0); }
RULE(acos) { return (void)y, arcsine_like(x, g, -1.0); }
RULE(atan) { return (void)y, ct_div(g, ct_add_scalar(ct_mul(x, x), 1.0)); }
RULE(sinh) { return (void)y, ct_mul(g, ct_cosh(x)); }
RULE(cosh) { return (void)y, ct_mul(g, ct_sinh(x)); }
RULE(asinh) { return (void)y, ct_mul(g, inverse_sqrt(ct_add_scalar(ct_mul(x, x), 1.0))); }
RULE(acosh) { return (void)y, ct_mul(g, ct_rsqrt(ct_add_scalar(ct_mul(x, x), -1.0))); }
RULE(atanh) { return (void)y, ct_div(g, ct_add_scalar(ct_neg(ct_mul(x, x)), 1.0)); }
RULE(exp2) { return (void)x, ct_mul(g, ct_mul_scalar(y, M_LN2)); }
#undef RULE

/* The rule of each row: a GRAD row names grad_NAME (so a row without its rule does not
 * compile: "'grad_NAME' undeclared"), a NOGRAD row has none. */
#define RULE_GRAD(name) grad_##name
#define RULE_NOGRAD(name) NULL
static const unary_rule unary_rules[] = {
#define CT_UNARY_RULE_(name, NAME, kind, grad, autocast) [CT_UOP_##NAME] = RULE_##grad(name),
    CT_UNARY_OPS(CT_UNARY_RULE_)
#undef CT_UNARY_RULE_
        [CT_UOP_CLAMP] = NULL, /* clamp_gradient: it reads the bounds */
};
_Static_assert(sizeof unary_rules / sizeof unary_rules[0] == CT_UOP_COUNT, "a rule per op");

/* The rules that read the result y (the node saves it); the others read only x. */
static const bool reads_result[CT_UOP_COUNT] = {
    [CT_UOP_SQRT] = true,       [CT_UOP_RSQRT] = true, [CT_UOP_EXP] = true,
    [CT_UOP_EXPM1] = true,      [CT_UOP_TANH] = true,  [CT_UOP_SIGMOID] = true,
    [CT_UOP_RECIPROCAL] = true, [CT_UOP_TAN] = true,   [CT_UOP_EXP2] = true,
};

/* sign(z) = z / |z| of a complex z, s: with g the gradient of s, (g - s Re(conj(s) g)) / |z|
 * (the part of g across the unit circle, over |z|), and 0 at z = 0 as PyTorch's sgn. */
static ct_tensor *complex_sign_gradient(const ct_tensor *z, const ct_tensor *g) {
    ct_tensor *s = ct_sign(z);
    ct_tensor *along = ct_mul(s, ct_real(ct_mul(ct_conj(s), g)));
    ct_tensor *zero = ct__full_on(g->storage->device, 0, NULL, 0.0, g->dtype);
    return ct_where(ct_eq_scalar(z, 0.0), zero, ct_div(ct_sub(g, along), ct_abs(z)));
}

/* The gradient of a complex x: the real rule of x's conjugates (the file's comment), but for
 * the ops that are not holomorphic. */
static ct_tensor *complex_gradient(ct__unary_op op, const ct_tensor *x, const ct_tensor *y,
                                   const ct_tensor *g) {
    switch (op) {
    case CT_UOP_ABS: return ct_mul(g, ct_sign(x)); /* g real: g z / |z|, 0 at 0 */
    case CT_UOP_SIGN: return complex_sign_gradient(x, g);
    case CT_UOP_ACOSH: { /* 1 / (sqrt(z + 1) sqrt(z - 1)), conjugated */
        ct_tensor *xc = ct_conj(x);
        return ct_div(g, ct_mul(ct_sqrt(ct_add_scalar(xc, 1.0)), ct_sqrt(ct_add_scalar(xc, -1.0))));
    }
    default: return unary_rules[op](ct_conj(x), y ? ct_conj(y) : NULL, g);
    }
}

static ct_tensor *unary_gradient(const ct__node *node, const ct_tensor *g) {
    const ct_tensor *x = node->saved[0], *y = node->saved[1];
    ct__unary_op op = (ct__unary_op)node->ints[0];
    if (op == CT_UOP_CLAMP)
        return masked(g, ct_logical_and(ct_ge_scalar(x, node->scalars[0]),
                                        ct_le_scalar(x, node->scalars[1])));
    if (ct__is_complex(x->dtype)) return complex_gradient(op, x, y, g);
    return unary_rules[op](x, y, g);
}

static ct_status unary_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    grad_in[0] = keep(unary_gradient(node, g));
    ct_status status = grad_in[0] ? CT_OK : ct_last_status();
    ct_scope_end();
    return status;
}

/* An op without a backward rule given an input that requires grad: an error, never a zero
 * gradient. Releases out. */
static ct_tensor *no_rule(ct_tensor *out, const char *name) {
    ct_release(out);
    return ct__fail(CT_ERR_UNSUPPORTED,
                    "%s: the op is not differentiable (it has no backward rule), and an input "
                    "requires grad; compute it under ct_no_grad_push(), or on ct_detach()ed "
                    "inputs",
                    name);
}

ct_tensor *ct__record_unary(ct_tensor *out, const char *name, ct__unary_op op, const ct_tensor *x,
                            double p0, double p1) {
    if (!out || !ct__grad_dtype(out->dtype)) return out;
    if (op != CT_UOP_CLAMP && !unary_rules[op]) return no_rule(out, name);
    ct__node *node = ct__node_new(name, unary_backward, 1, &x);
    if (node) {
        node->ints[0] = op;
        node->scalars[0] = p0;
        node->scalars[1] = p1;
        ct__node_save(node, 0, x);
        if (reads_result[op]) {
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

/* What a binary rule reads: the operands the node saved (b NULL: the scalar s), and which
 * gradients are needed. */
typedef struct binary_in {
    const ct_tensor *a, *b;
    double s;
    bool need_a, need_b;
} binary_in;

/* b, or the scalar as a 0-d tensor of g's dtype (released with the rule's scope). */
static ct_tensor *operand_b(const binary_in *in, const ct_tensor *g) {
    if (in->b) return ct__new_ref(in->b);
    return ct__full_on(g->storage->device, 0, NULL, in->s, g->dtype);
}

typedef void (*binary_rule)(const binary_in *in, const ct_tensor *g, ct_tensor **ga,
                            ct_tensor **gb);

#define RULE(name)                                                                                 \
    static void grad_##name(const binary_in *in, const ct_tensor *g, ct_tensor **ga, ct_tensor **gb)
RULE(add) {
    *ga = in->need_a ? ct__new_ref(g) : NULL;
    *gb = in->need_b ? ct__new_ref(g) : NULL;
}
RULE(sub) {
    *ga = in->need_a ? ct__new_ref(g) : NULL;
    *gb = in->need_b ? ct_neg(g) : NULL;
}
RULE(mul) {
    *ga = in->need_a ? (in->b ? ct_mul(g, in->b) : ct_mul_scalar(g, in->s)) : NULL;
    *gb = in->need_b ? ct_mul(g, in->a) : NULL;
}
RULE(div) {
    *ga = in->need_a ? (in->b ? ct_div(g, in->b) : ct_div_scalar(g, in->s)) : NULL;
    *gb = in->need_b ? ct_neg(ct_div(ct_mul(g, in->a), ct_mul(in->b, in->b))) : NULL;
}
RULE(pow) {
    const ct_tensor *a = in->a, *b = in->b;
    if (in->need_a)
        *ga = b            ? ct_mul(g, ct_mul(b, ct_pow(a, ct_sub_scalar(b, 1.0))))
              : in->s == 0 ? zeros_like(g)
                           : ct_mul(g, ct_mul_scalar(ct_pow_scalar(a, in->s - 1.0), in->s));
    if (in->need_b) /* 0 where a == 0 and Re b >= 0, where log(a) would give NaN times 0 */
        *gb = ct_where(ct_logical_and(ct_eq_scalar(a, 0.0), ct_ge_scalar(ct_real(b), 0.0)),
                       ct__full_on(g->storage->device, 0, NULL, 0.0, g->dtype),
                       ct_mul(g, ct_mul(ct_pow(a, b), ct_log(a))));
}

/* Float 1 where wins, 0.5 where tie, else 0: how maximum and minimum share a gradient. */
static ct_tensor *extremum_share(const ct_tensor *wins, const ct_tensor *ties, ct_dtype dtype) {
    return ct_add(ct_cast(wins, dtype), ct_mul_scalar(ct_cast(ties, dtype), 0.5));
}

static void extremum(const binary_in *in, const ct_tensor *g, ct_tensor **ga, ct_tensor **gb,
                     bool max) {
    const ct_tensor *a = in->a, *b = in->b;
    double s = in->s;
    ct_tensor *ties = b ? ct_eq(a, b) : ct_eq_scalar(a, s);
    if (in->need_a)
        *ga = ct_mul(g, extremum_share(b ? (max ? ct_gt(a, b) : ct_lt(a, b))
                                         : (max ? ct_gt_scalar(a, s) : ct_lt_scalar(a, s)),
                                       ties, g->dtype));
    if (in->need_b)
        *gb = ct_mul(g, extremum_share(max ? ct_gt(b, a) : ct_lt(b, a), ties, g->dtype));
}
RULE(maximum) { extremum(in, g, ga, gb, true); }
RULE(minimum) { extremum(in, g, ga, gb, false); }
RULE(remainder) {
    *ga = in->need_a ? ct__new_ref(g) : NULL;
    *gb = in->need_b ? ct_neg(ct_mul(g, ct_floor(ct_div(in->a, in->b)))) : NULL;
}
/* d hypot(a, b) = (a da + b db) / hypot(a, b) */
RULE(hypot) {
    ct_tensor *b = operand_b(in, g);
    ct_tensor *h = ct_hypot(in->a, b);
    *ga = in->need_a ? ct_mul(g, ct_div(in->a, h)) : NULL;
    *gb = in->need_b ? ct_mul(g, ct_div(b, h)) : NULL;
}
/* copysign(a, b) = |a| sign(b): d/da is sign(a) sign(b) (0 at a == 0), d/db is 0 */
RULE(copysign) {
    ct_tensor *b = operand_b(in, g);
    *ga = in->need_a
              ? ct_mul(g, ct_mul(ct_sign(in->a),
                                 ct_copysign(
                                     ct__full_on(g->storage->device, 0, NULL, 1.0, g->dtype), b)))
              : NULL;
    *gb = in->need_b ? zeros_like(in->b) : NULL;
}
/* d atan2(a, b) = (b da - a db) / (a^2 + b^2) */
RULE(atan2) {
    ct_tensor *b = operand_b(in, g);
    ct_tensor *r2 = ct_add(ct_mul(in->a, in->a), ct_mul(b, b));
    *ga = in->need_a ? ct_mul(g, ct_div(b, r2)) : NULL;
    *gb = in->need_b ? ct_neg(ct_mul(g, ct_div(in->a, r2))) : NULL;
}
/* d logaddexp(a, b) = e^(a - y) da + e^(b - y) db */
RULE(logaddexp) {
    ct_tensor *b = operand_b(in, g);
    ct_tensor *y = ct_logaddexp(in->a, b);
    *ga = in->need_a ? ct_mul(g, ct_exp(ct_sub(in->a, y))) : NULL;
    *gb = in->need_b ? ct_mul(g, ct_exp(ct_sub(b, y))) : NULL;
}
#undef RULE

static const binary_rule binary_rules[] = {
#define CT_BINARY_RULE_(name, NAME, kind, grad, autocast) [CT_BOP_##NAME] = RULE_##grad(name),
    CT_BINARY_OPS(CT_BINARY_RULE_)
#undef CT_BINARY_RULE_
        [CT_BOP_RELU_GRAD] = NULL, /* internal: never recorded */
    [CT_BOP_GELU_TANH_GRAD] = NULL,
};
_Static_assert(sizeof binary_rules / sizeof binary_rules[0] == CT_BOP_COUNT, "a rule per op");

static ct_status binary_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    binary_in in = {node->saved[0], node->saved[1], node->scalars[0], node->inputs[0] != NULL,
                    node->ninputs > 1 && node->inputs[1]};
    if (ct__is_complex(g->dtype)) { /* the complex ops (add, sub, mul, div, pow) are holomorphic */
        in.a = in.a ? ct_conj(in.a) : NULL;
        in.b = in.b ? ct_conj(in.b) : NULL;
    }
    ct_tensor *ga = NULL, *gb = NULL;
    binary_rules[node->ints[0]](&in, g, &ga, &gb);
    grad_in[0] = in.need_a ? keep(ga) : NULL;
    if (node->ninputs > 1) grad_in[1] = in.need_b ? keep(gb) : NULL;
    ct_status status = CT_OK;
    for (int i = 0; i < node->ninputs; i++)
        if (node->inputs[i] && !grad_in[i]) status = ct_last_status();
    ct_scope_end();
    return status;
}

ct_tensor *ct__record_binary(ct_tensor *out, const char *name, ct__binary_op op, const ct_tensor *a,
                             const ct_tensor *b, double s) {
    if (!out || !ct__grad_dtype(out->dtype)) return out;
    if (!binary_rules[op]) return no_rule(out, name);
    const ct_tensor *inputs[2] = {a, b};
    ct__node *node = ct__node_new(name, binary_backward, b ? 2 : 1, inputs);
    if (node) {
        node->ints[0] = op;
        node->scalars[0] = s;
        /* Only what the rule reads for the gradients needed, as PyTorch saves: less memory
         * kept, and an in-place write into an operand no gradient needs is allowed. */
        bool need_a = node->inputs[0] != NULL, need_b = b && node->inputs[1] != NULL;
        bool save_a =
            op == CT_BOP_MUL || op == CT_BOP_DIV ? need_b : op != CT_BOP_ADD && op != CT_BOP_SUB;
        bool save_b = op == CT_BOP_MUL ? need_a : op != CT_BOP_ADD && op != CT_BOP_SUB;
        ct__node_save(node, 0, save_a ? a : NULL);
        ct__node_save(node, 1, save_b ? b : NULL);
    }
    return ct__record(out, node);
}

static ct_status where_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
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
    if (!out || !ct__grad_dtype(out->dtype)) return out;
    const ct_tensor *inputs[3] = {NULL, a, b};
    ct__node *node = ct__node_new("ct_where", where_backward, 3, inputs);
    if (node) ct__node_save(node, 0, cond);
    return ct__record(out, node);
}

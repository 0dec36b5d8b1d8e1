/* ct__qkv_attention (ops/nn_impl.h): causal self-attention straight from a fused q, k, v
 * projection. On the CPU one attention kernel reads each head's q, k and v where they lie in
 * the projection's rows and writes its output into the merged-heads rows (the layouts of
 * ct__attention_args), and its backward writes the projection's gradient as one tensor: no
 * split, no head transposes, no contiguous copies, and no zero-filled slices added together
 * in the backward. Other backends take contiguous operands only: there it is the composite
 * (split, heads to the front, ct_scaled_dot_product_attention, heads merged), with the same
 * values and gradients. */
#include <math.h>

#include "ops/autocast_impl.h"
#include "ops/nn_impl.h"
#include "ops/random_impl.h"

#define OP "ct__qkv_attention"

enum { SAVED_QKV, SAVED_OUT, SAVED_LSE };
enum { INT_HEADS, INT_SEED, INT_OFFSET };
enum { SCALAR_SCALE, SCALAR_P };

/* Kernel arguments for the contiguous (B, T, 3 width) qkv and the (B, T, width) output. */
static ct__attention_args qkv_args(const ct_tensor *qkv, int64_t heads, double scale,
                                   double dropout_p) {
    int64_t b = qkv->shape[0], t = qkv->shape[1], width = qkv->shape[2] / 3, d = width / heads;
    size_t size = ct__dtype_size(qkv->dtype);
    const char *base = ct__data(qkv);
    ct__attention_args a = {
        .dtype = qkv->dtype,
        .batch = b * heads,
        .tq = t,
        .tk = t,
        .d = d,
        .dv = d,
        .scale = scale,
        .causal = true,
        .dropout_p = dropout_p,
        .q = base,
        .k = base + (size_t)width * size,
        .v = base + (size_t)(2 * width) * size,
        .heads = heads,
    };
    a.q_at = a.k_at = a.v_at = (ct__att_layout){t * 3 * width, d, 3 * width};
    a.out_at = (ct__att_layout){t * width, d, width};
    return a;
}

static ct_status qkv_backward(ct__node *node, const ct_tensor *grad_out, ct_tensor **grad_in) {
    const ct_tensor *qkv = node->saved[SAVED_QKV];
    ct_device device = qkv->storage->device;
    int physical;
    const ct__kernel_table *kt = ct__kernels(device, &physical);
    if (!kt) return ct_last_status();
    ct__attention_args a =
        qkv_args(qkv, node->ints[INT_HEADS], node->scalars[SCALAR_SCALE], node->scalars[SCALAR_P]);
    ct_tensor *g = ct__nn_operand(grad_out, qkv->dtype, device, OP);
    /* The kernel writes every element: each row's q, k and v parts of every head. */
    ct_tensor *gqkv = g ? ct__tensor_new(device, qkv->dtype, qkv->ndim, qkv->shape) : NULL;
    ct_status status = gqkv ? CT_OK : ct_last_status();
    if (status == CT_OK) {
        size_t size = ct__dtype_size(qkv->dtype);
        int64_t width = qkv->shape[2] / 3;
        a.seed = (uint64_t)node->ints[INT_SEED];
        a.offset = (uint64_t)node->ints[INT_OFFSET];
        a.out = ct__data(node->saved[SAVED_OUT]);
        a.lse = ct__data(node->saved[SAVED_LSE]);
        a.grad_out = ct__data(g);
        a.grad_q = ct__data(gqkv);
        a.grad_k = a.grad_q + (size_t)width * size;
        a.grad_v = a.grad_q + (size_t)(2 * width) * size;
        status = kt->attention_backward(physical, &a);
        if (status != CT_OK) ct__nn_prefix_error(OP);
    }
    ct_release(g);
    if (status != CT_OK) {
        ct_release(gqkv);
        return status;
    }
    grad_in[0] = gqkv;
    return CT_OK;
}

/* The CPU's kernel on the contiguous qkv: the output, recorded with its node. */
static ct_tensor *fused(ct_device device, const ct_tensor *qkv, int64_t heads, double dropout_p,
                        double scale) {
    int physical;
    const ct__kernel_table *kt = ct__kernels(device, &physical);
    if (!kt) return NULL;
    ct_no_grad_push();
    ct_tensor *qc = ct__nn_operand(qkv, qkv->dtype, device, OP);
    ct__attention_args a = qc ? qkv_args(qc, heads, scale, dropout_p) : (ct__attention_args){0};
    int64_t shape[3] = {qkv->shape[0], qkv->shape[1], qkv->shape[2] / 3};
    ct_tensor *out = qc ? ct__tensor_new(device, qkv->dtype, 3, shape) : NULL;
    ct_tensor *lse = out ? ct__tensor_new(device, CT_F64, 2, (int64_t[]){a.batch, a.tq}) : NULL;
    ct_no_grad_pop();
    uint64_t seed = 0, offset = 0;
    if (lse && dropout_p > 0.0)
        ct__random_take(((uint64_t)(a.batch * a.tq) * (uint64_t)a.tk + 3) / 4, &seed, &offset);
    a.seed = seed, a.offset = offset;
    ct_status status = lse ? CT_OK : ct_last_status();
    if (status == CT_OK) {
        a.out = ct__data(out);
        a.lse = ct__data(lse);
        status = kt->attention(physical, &a);
        if (status != CT_OK) ct__nn_prefix_error(OP);
    }
    if (status != CT_OK) {
        ct_release(out), ct_release(lse), ct_release(qc);
        return NULL;
    }
    if (ct__grad_needed(1, &qkv)) {
        ct__node *node = ct__node_new(OP, qkv_backward, 1, &qkv);
        ct_tensor *saved = node ? ct__nn_alias(out) : NULL;
        if (saved) {
            ct__node_save(node, SAVED_QKV, qc);
            ct__node_save(node, SAVED_OUT, saved);
            ct__node_save(node, SAVED_LSE, lse);
            node->ints[INT_HEADS] = heads;
            node->ints[INT_SEED] = (int64_t)seed;
            node->ints[INT_OFFSET] = (int64_t)offset;
            node->scalars[SCALAR_SCALE] = scale;
            node->scalars[SCALAR_P] = dropout_p;
        } else if (node) {
            ct__node_release(node);
            node = NULL;
        }
        ct_release(saved);
        out = ct__record(out, node);
    }
    ct_release(lse), ct_release(qc);
    return out;
}

/* (B, T, width) -> (B, heads, T, width / heads), a view. */
static ct_tensor *split_heads(const ct_tensor *x, int64_t heads) {
    int64_t b = x->shape[0], t = x->shape[1], d = x->shape[2] / heads;
    return ct_transpose(ct_reshape(x, 4, (int64_t[]){b, t, heads, d}), 1, 2);
}

/* Every other backend: the same through the public ops, in a scope of its own. */
static ct_tensor *composite(const ct_tensor *qkv, int64_t heads, double dropout_p, double scale) {
    int64_t b = qkv->shape[0], t = qkv->shape[1], width = qkv->shape[2] / 3;
    if (ct_scope_begin() != CT_OK) return NULL;
    ct_tensor *parts[3] = {NULL, NULL, NULL};
    int count = 0;
    ct_tensor *y = NULL;
    if (ct_split(qkv, width, 2, parts, 3, &count) == CT_OK) {
        y = ct_scaled_dot_product_attention(
            split_heads(parts[0], heads), split_heads(parts[1], heads),
            split_heads(parts[2], heads), NULL, true, dropout_p, scale);
        y = ct_reshape(ct_transpose(y, 1, 2), 3, (int64_t[]){b, t, width});
    }
    if (y && !ct_keep(y)) y = NULL;
    ct_scope_end();
    return y;
}

ct_tensor *ct__qkv_attention(const ct_tensor *qkv, int64_t heads, double dropout_p, double scale) {
    ct_device device;
    if (!ct__check_args(OP, 1, &qkv, &device) || !ct__nn_check_float(OP, qkv, 1)) return NULL;
    if (qkv->ndim != 3 || heads < 1 || qkv->shape[2] % (3 * heads) != 0 || qkv->shape[2] == 0)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: expected (B, T, 3 * width) with width a positive multiple of the "
                        "%lld heads; got rank %d with last axis %lld",
                        OP, (long long)heads, qkv->ndim,
                        (long long)(qkv->ndim ? qkv->shape[qkv->ndim - 1] : -1));
    if (!(dropout_p >= 0.0 && dropout_p <= 1.0) || !isfinite(scale) || scale == 0.0)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: dropout_p %g must be in [0, 1] and scale %g finite and nonzero", OP,
                        dropout_p, scale);
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_SCALED_DOT_PRODUCT_ATTENTION, 1,
                            (const ct_tensor **[]){&qkv}))
        return NULL;
    ct_tensor *out = device.type == CT_DEVICE_CPU && qkv->shape[0] > 0 && qkv->shape[1] > 0
                         ? fused(device, qkv, heads, dropout_p, scale)
                         : composite(qkv, heads, dropout_p, scale);
    ct__autocast_end(&ac);
    return out;
}

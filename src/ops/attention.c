/* ct_scaled_dot_product_attention and its backward, through the backend's attention kernels
 * (ct__attention_args, backend/norm_args_impl.h). The leading axes of q, k and v (equal in
 * all three) are flattened into the kernel's batch; the mask keeps its own strides (a
 * broadcast mask is never copied out to the full shape). The node saves q, k, v, the
 * output, the per-row log-sum-exp and the mask: the backward recomputes the probabilities
 * from them, so nothing of size tq x tk is kept. */
#include <math.h>

#include "ops/autocast_impl.h"
#include "ops/nn_impl.h"
#include "ops/random_impl.h"

#define OP "ct_scaled_dot_product_attention"

/* The forward's operands and settings, as the node keeps them. */
enum { SAVED_Q, SAVED_K, SAVED_V, SAVED_OUT, SAVED_LSE, SAVED_MASK };

/* Kernel arguments for q, k, v (contiguous, one dtype) and mask (NULL, bool, or q's dtype;
 * any strides) as checked by check_shapes. */
static ct__attention_args attention_args(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                                         const ct_tensor *mask, bool causal, double dropout_p,
                                         double scale) {
    int lead = q->ndim - 2;
    ct__attention_args a = {
        .dtype = q->dtype,
        .batch = ct__nn_numel(q->shape, 0, lead),
        .tq = q->shape[lead],
        .tk = k->shape[lead],
        .d = q->shape[lead + 1],
        .dv = v->shape[lead + 1],
        .scale = scale,
        .causal = causal,
        .dropout_p = dropout_p,
        .q = ct__data(q),
        .k = ct__data(k),
        .v = ct__data(v),
        .heads = 1,
    };
    a.q_at = (ct__att_layout){a.tq * a.d, 0, a.d};
    a.k_at = (ct__att_layout){a.tk * a.d, 0, a.d};
    a.v_at = (ct__att_layout){a.tk * a.dv, 0, a.dv};
    a.out_at = (ct__att_layout){a.tq * a.dv, 0, a.dv};
    if (mask) {
        /* The mask's axes right-aligned against (lead..., tq, tk); a missing or size-1 axis
         * broadcasts (stride 0). */
        int64_t strides[CT_MAX_DIMS + 2] = {0};
        for (int ax = 0; ax < mask->ndim; ax++) {
            int full = q->ndim - mask->ndim + ax;
            strides[full] = mask->shape[ax] == 1 ? 0 : mask->strides[ax];
        }
        a.mask = ct__data(mask);
        a.mask_dtype = mask->dtype;
        a.mask_batch_ndim = lead;
        for (int ax = 0; ax < lead; ax++) {
            a.mask_batch_shape[ax] = q->shape[ax];
            a.mask_batch_strides[ax] = strides[ax];
        }
        a.mask_stride_q = strides[lead];
        a.mask_stride_k = strides[lead + 1];
    }
    return a;
}

/* Whether the kernels have anything to compute: an empty output, or no key, gives zeros. */
static bool attention_has_work(const ct__attention_args *a) {
    return a->batch > 0 && a->tq > 0 && a->dv > 0 && a->tk > 0;
}

/* A tensor of t's shape and dtype for its gradient: uninitialised when the kernel writes it,
 * else zeros. */
static ct_tensor *gradient_like(ct_device device, const ct_tensor *t, bool written) {
    return written ? ct__tensor_new(device, t->dtype, t->ndim, t->shape)
                   : ct__full_on(device, t->ndim, t->shape, 0.0, t->dtype);
}

static ct_status attention_backward(ct__node *node, const ct_tensor *grad_out,
                                    ct_tensor **grad_in) {
    const ct_tensor *q = node->saved[SAVED_Q], *k = node->saved[SAVED_K];
    const ct_tensor *v = node->saved[SAVED_V], *mask = node->saved[SAVED_MASK];
    ct_device device = q->storage->device;
    int physical;
    const ct__kernel_table *kt = ct__kernels(device, &physical);
    if (!kt) return ct_last_status();
    ct__attention_args a =
        attention_args(q, k, v, mask, node->ints[0] != 0, node->scalars[1], node->scalars[0]);
    /* The kernel writes every element of the gradients; without work they are zeros. */
    bool work = attention_has_work(&a);
    ct_tensor *g = ct__nn_operand(grad_out, q->dtype, device, OP);
    ct_tensor *gq = g ? gradient_like(device, q, work) : NULL;
    ct_tensor *gk = gq ? gradient_like(device, k, work) : NULL;
    ct_tensor *gv = gk ? gradient_like(device, v, work) : NULL;
    ct_status status = gv ? CT_OK : ct_last_status();
    if (status == CT_OK && work) {
        a.seed = (uint64_t)node->ints[1];
        a.offset = (uint64_t)node->ints[2];
        a.out = ct__data(node->saved[SAVED_OUT]);
        a.lse = ct__data(node->saved[SAVED_LSE]);
        a.grad_out = ct__data(g);
        a.grad_q = ct__data(gq);
        a.grad_k = ct__data(gk);
        a.grad_v = ct__data(gv);
        status = kt->attention_backward(physical, &a);
        if (status != CT_OK) ct__nn_prefix_error(OP);
    }
    ct_release(g);
    if (status != CT_OK) {
        ct_release(gq), ct_release(gk), ct_release(gv);
        return status;
    }
    grad_in[0] = gq, grad_in[1] = gk, grad_in[2] = gv;
    return CT_OK;
}

/* CT_ERR_SHAPE unless q (..., tq, d), k (..., tk, d), v (..., tk, dv) share their leading
 * axes, and the mask (when given) broadcasts to (..., tq, tk). */
static bool check_shapes(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                         const ct_tensor *mask) {
    if (q->ndim < 2 || k->ndim != q->ndim || v->ndim != q->ndim) {
        ct__error(CT_ERR_SHAPE,
                  "%s: query, key and value have %d, %d and %d axes; they must have the same "
                  "number, at least 2 ((..., L, E), (..., S, E), (..., S, Ev))",
                  OP, q->ndim, k->ndim, v->ndim);
        return false;
    }
    int lead = q->ndim - 2;
    for (int ax = 0; ax < lead; ax++)
        if (k->shape[ax] != q->shape[ax] || v->shape[ax] != q->shape[ax]) {
            ct__error(CT_ERR_SHAPE,
                      "%s: axis %d (a batch axis) is %lld in query, %lld in key and %lld in "
                      "value; the batch axes must be equal",
                      OP, ax, (long long)q->shape[ax], (long long)k->shape[ax],
                      (long long)v->shape[ax]);
            return false;
        }
    if (k->shape[lead + 1] != q->shape[lead + 1] || v->shape[lead] != k->shape[lead]) {
        ct__error(CT_ERR_SHAPE,
                  "%s: query (..., %lld, %lld), key (..., %lld, %lld), value (..., %lld, %lld): "
                  "key's last axis must equal query's (E), and value's sequence axis key's (S)",
                  OP, (long long)q->shape[lead], (long long)q->shape[lead + 1],
                  (long long)k->shape[lead], (long long)k->shape[lead + 1],
                  (long long)v->shape[lead], (long long)v->shape[lead + 1]);
        return false;
    }
    if (!mask) return true;
    bool fits = mask->ndim <= q->ndim;
    for (int ax = 0; fits && ax < mask->ndim; ax++) {
        int full = q->ndim - mask->ndim + ax;
        int64_t want = full == lead       ? q->shape[lead]
                       : full == lead + 1 ? k->shape[lead]
                                          : q->shape[full];
        fits = mask->shape[ax] == 1 || mask->shape[ax] == want;
    }
    if (!fits) {
        ct__error(CT_ERR_SHAPE,
                  "%s: the mask (%d axes) does not broadcast to (..., L, S) = (..., %lld, %lld) "
                  "with query's batch axes",
                  OP, mask->ndim, (long long)q->shape[lead], (long long)k->shape[lead]);
        return false;
    }
    return true;
}

/* Dtypes, devices, shapes and settings; writes the device and the scale to use. */
static bool check_args(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                       const ct_tensor *mask, bool causal, double dropout_p, double *scale,
                       ct_device *device) {
    const ct_tensor *all[4] = {q, k, v, mask};
    if (!ct__check_args(OP, mask ? 4 : 3, all, device)) return false;
    for (int i = 0; i < 3; i++)
        if (!ct__nn_check_float(OP, all[i], i + 1)) return false;
    if (k->dtype != q->dtype || v->dtype != q->dtype) {
        ct__error(CT_ERR_DTYPE,
                  "%s: query, key and value have dtypes %s, %s and %s; they must be the same", OP,
                  ct_dtype_name(q->dtype), ct_dtype_name(k->dtype), ct_dtype_name(v->dtype));
        return false;
    }
    if (mask && mask->dtype != CT_BOOL && !ct_dtype_is_floating(mask->dtype)) {
        ct__error(CT_ERR_DTYPE,
                  "%s: the mask has dtype %s; it must be CT_BOOL (true: attend) or floating "
                  "(added to the scores)",
                  OP, ct_dtype_name(mask->dtype));
        return false;
    }
    if (mask && causal) {
        ct__error(CT_ERR_INVALID_ARG,
                  "%s: a mask and causal were both given; pass one (as PyTorch, an explicit "
                  "attn_mask with is_causal=True is an error)",
                  OP);
        return false;
    }
    if (!(dropout_p >= 0.0 && dropout_p <= 1.0)) {
        ct__error(CT_ERR_INVALID_ARG, "%s: dropout_p is %g; it must be in [0, 1]", OP, dropout_p);
        return false;
    }
    if (!isfinite(*scale)) {
        ct__error(CT_ERR_INVALID_ARG, "%s: scale is %g; it must be finite (0: 1 / sqrt(E))", OP,
                  *scale);
        return false;
    }
    if (!check_shapes(q, k, v, mask)) return false;
    if (mask && mask->dtype != CT_BOOL && ct__grad_needed(1, &mask)) {
        ct__error(CT_ERR_UNSUPPORTED,
                  "%s: the float mask requires grad; gradients flow to query, key and value "
                  "only (detach the mask)",
                  OP);
        return false;
    }
    if (*scale == 0.0) *scale = 1.0 / sqrt((double)q->shape[q->ndim - 1]);
    return true;
}

/* The forward on checked arguments: out, and *lse (float64, batch x tq) for the node. */
static ct_tensor *attention_forward(ct_device device, const ct_tensor *q, const ct_tensor *k,
                                    const ct_tensor *v, const ct_tensor *mask, bool causal,
                                    double dropout_p, double scale, uint64_t seed_offset[2],
                                    ct_tensor **lse) {
    int physical;
    const ct__kernel_table *kt = ct__kernels(device, &physical);
    if (!kt) return NULL;
    ct__attention_args a = attention_args(q, k, v, mask, causal, dropout_p, scale);
    int64_t shape[CT_MAX_DIMS];
    for (int ax = 0; ax < q->ndim; ax++) shape[ax] = q->shape[ax];
    shape[q->ndim - 1] = a.dv;
    bool work = attention_has_work(&a);
    ct_tensor *out = work ? ct__tensor_new(device, q->dtype, q->ndim, shape)
                          : ct__full_on(device, q->ndim, shape, 0.0, q->dtype);
    *lse = out ? ct__full_on(device, 2, (int64_t[]){a.batch, a.tq}, -INFINITY, CT_F64) : NULL;
    if (!*lse || !work) return *lse ? out : (ct_release(out), NULL);
    if (dropout_p > 0.0)
        ct__random_take(((uint64_t)(a.batch * a.tq) * (uint64_t)a.tk + 3) / 4, &seed_offset[0],
                        &seed_offset[1]);
    a.seed = seed_offset[0];
    a.offset = seed_offset[1];
    a.out = ct__data(out);
    a.lse = ct__data(*lse);
    if (kt->attention(physical, &a) != CT_OK) {
        ct__nn_prefix_error(OP);
        ct_release(out);
        ct_release(*lse);
        *lse = NULL;
        return NULL;
    }
    return out;
}

static ct_tensor *attention_op(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                               const ct_tensor *mask, bool causal, double dropout_p, double scale) {
    ct_device device;
    if (!check_args(q, k, v, mask, causal, dropout_p, &scale, &device)) return NULL;
    ct_no_grad_push();
    ct_tensor *qc = ct__nn_operand(q, q->dtype, device, OP);
    ct_tensor *kc = qc ? ct__nn_operand(k, q->dtype, device, OP) : NULL;
    ct_tensor *vc = kc ? ct__nn_operand(v, q->dtype, device, OP) : NULL;
    /* A float mask in q's dtype, on the device; any strides. */
    ct_tensor *mo = vc && mask ? ct__operand_on(mask, device, OP) : NULL;
    ct_tensor *mc = !mo                                             ? NULL
                    : mo->dtype != CT_BOOL && mo->dtype != q->dtype ? ct_cast(mo, q->dtype)
                                                                    : ct__new_ref(mo);
    ct_tensor *lse = NULL, *out = NULL;
    uint64_t seed_offset[2] = {0, 0};
    if (vc && (!mask || mc))
        out =
            attention_forward(device, qc, kc, vc, mc, causal, dropout_p, scale, seed_offset, &lse);
    ct_no_grad_pop();
    const ct_tensor *inputs[3] = {q, k, v};
    if (out && ct__grad_needed(3, inputs)) {
        ct__node *node = ct__node_new(OP, attention_backward, 3, inputs);
        ct_tensor *saved = node ? ct__nn_alias(out) : NULL;
        if (saved) {
            ct__node_save(node, SAVED_Q, qc);
            ct__node_save(node, SAVED_K, kc);
            ct__node_save(node, SAVED_V, vc);
            ct__node_save(node, SAVED_OUT, saved);
            ct__node_save(node, SAVED_LSE, lse);
            ct__node_save(node, SAVED_MASK, mc);
            node->ints[0] = causal;
            node->ints[1] = (int64_t)seed_offset[0];
            node->ints[2] = (int64_t)seed_offset[1];
            node->scalars[0] = scale;
            node->scalars[1] = dropout_p;
        } else if (node) {
            ct__node_release(node);
            node = NULL;
        }
        ct_release(saved);
        out = ct__record(out, node);
    }
    ct_release(lse), ct_release(mc), ct_release(mo);
    ct_release(vc), ct_release(kc), ct_release(qc);
    return out;
}

ct_tensor *ct_scaled_dot_product_attention(const ct_tensor *q, const ct_tensor *k,
                                           const ct_tensor *v, const ct_tensor *mask, bool causal,
                                           double dropout_p, double scale) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_SCALED_DOT_PRODUCT_ATTENTION, 3,
                            (const ct_tensor **[]){&q, &k, &v}))
        return NULL;
    ct_tensor *out = attention_op(q, k, v, mask, causal, dropout_p, scale);
    ct__autocast_end(&ac);
    return out;
}

/* The GPT module's forward passes: the full one (training and evaluation) and the cached one
 * (sampling: new tokens attend to the keys and values of the tokens before them, kept per
 * layer in a ct_gpt_cache). One code path serves both: a block runs with or without a
 * cache. */
#include <math.h>

#include "autograd/tape_impl.h"
#include "nn/gpt_impl.h"
#include "ops/nn_impl.h"

struct ct_gpt_cache {
    const ct_module *gpt; /* borrowed */
    int64_t batch, length;
    int layers;
    ct_tensor **keys, **values; /* per layer (B, heads, context, head width), unscoped */
};

/* Where a block's attention reads and writes cached keys and values, or NULL. */
typedef struct layer_cache {
    ct_tensor *keys, *values;
    int64_t start; /* the position of the first new token */
} layer_cache;

/* Run f in a scope of its own: only its result leaves it. */
#define IN_SCOPE(result, expr)                                                                     \
    do {                                                                                           \
        if (ct_scope_begin() != CT_OK) return NULL;                                                \
        ct_tensor *scoped_ = (expr);                                                               \
        if (scoped_ && !ct_keep(scoped_)) scoped_ = NULL;                                          \
        ct_scope_end();                                                                            \
        (result) = scoped_;                                                                        \
    } while (0)

/* (B, T, width) -> (B, heads, T, width / heads). */
static ct_tensor *split_heads(const ct_tensor *x, int64_t heads) {
    int64_t b = x->shape[0], t = x->shape[1], d = x->shape[2] / heads;
    return ct_transpose(ct_reshape(x, 4, (int64_t[]){b, t, heads, d}), 1, 2);
}

/* Append k and v (B, heads, T, d) to the cache at its position; the cache's keys and values
 * up to them. */
static ct_status cache_append(const layer_cache *c, const ct_tensor *k, const ct_tensor *v,
                              ct_tensor **all_k, ct_tensor **all_v) {
    int64_t stop = c->start + k->shape[2];
    ct_tensor *kslot = ct_slice(c->keys, 2, c->start, stop, 1);
    ct_tensor *vslot = ct_slice(c->values, 2, c->start, stop, 1);
    ct_status status = kslot && vslot ? ct_copy(kslot, k) : ct_last_status();
    if (status == CT_OK) status = ct_copy(vslot, v);
    ct_release(kslot);
    ct_release(vslot);
    if (status != CT_OK) return status;
    *all_k = ct_slice(c->keys, 2, 0, stop, 1);
    *all_v = ct_slice(c->values, 2, 0, stop, 1);
    return *all_k && *all_v ? CT_OK : ct_last_status();
}

/* New query i (at position start + i) sees keys 0 .. start + i: a boolean (T, start + T). */
static ct_tensor *offset_causal_mask(int64_t start, int64_t t, ct_device device) {
    ct_tensor *rows = ct_arange((double)start, (double)(start + t), 1.0, CT_I64, device);
    ct_tensor *cols = ct_arange(0.0, (double)(start + t), 1.0, CT_I64, device);
    return ct_le(ct_unsqueeze(cols, 0), ct_unsqueeze(rows, 1));
}

static ct_tensor *attention(ct_module *m, const ct_tensor *x, const layer_cache *cache) {
    int64_t b = x->shape[0], t = x->shape[1], width = x->shape[2], heads = m->sizes[0];
    ct_tensor *qkv = ct_module_forward(m->children[CT__ATTN_C_ATTN], x);
    double p = m->training ? m->p : 0.0;
    double scale = 1.0 / sqrt((double)(width / heads));
    ct_tensor *y = NULL;
    if (!cache) { /* q, k and v read where the projection wrote them */
        y = qkv ? ct__qkv_attention(qkv, heads, p, scale) : NULL;
        y = y ? ct_module_forward(m->children[CT__ATTN_C_PROJ], y) : NULL;
        return y ? ct_dropout(y, m->p, m->training) : NULL;
    }
    ct_tensor *parts[3] = {NULL, NULL, NULL};
    int count = 0;
    if (!qkv || ct_split(qkv, width, 2, parts, 3, &count) != CT_OK) return NULL;
    ct_tensor *q = split_heads(parts[0], heads);
    ct_tensor *k = split_heads(parts[1], heads);
    ct_tensor *v = split_heads(parts[2], heads);
    if (!q || !k || !v) return NULL;
    if (cache_append(cache, k, v, &k, &v) != CT_OK) return NULL;
    /* From an empty cache the mask is the plain causal one; a single new token sees
     * everything cached; otherwise the causal mask shifted by the cached length. */
    bool causal = cache->start == 0;
    ct_tensor *mask = NULL;
    if (!causal && t > 1) mask = offset_causal_mask(cache->start, t, ct_device_of(x));
    if (!causal && t > 1 && !mask) return NULL;
    y = ct_scaled_dot_product_attention(q, k, v, mask, causal, p, scale);
    y = ct_reshape(ct_transpose(y, 1, 2), 3, (int64_t[]){b, t, width});
    y = ct_module_forward(m->children[CT__ATTN_C_PROJ], y);
    return ct_dropout(y, m->p, m->training);
}

ct_tensor *ct__gpt_attention_forward(ct_module *m, const ct_tensor *x) {
    ct_tensor *y;
    IN_SCOPE(y, attention(m, x, NULL));
    return y;
}

static ct_tensor *mlp(ct_module *m, const ct_tensor *x) {
    ct_tensor *h = ct_module_forward(m->children[CT__MLP_C_FC], x);
    h = ct_module_forward(m->children[CT__MLP_C_PROJ], ct_gelu_tanh(h));
    return ct_dropout(h, m->p, m->training);
}

ct_tensor *ct__gpt_mlp_forward(ct_module *m, const ct_tensor *x) {
    ct_tensor *y;
    IN_SCOPE(y, mlp(m, x));
    return y;
}

/* LayerNorm module ln of x + r, and that sum in *sum, in one pass. */
static ct_tensor *add_norm(const ct_module *ln, const ct_tensor *x, const ct_tensor *r,
                           ct_tensor **sum) {
    return ct__add_layer_norm(x, r, ln->nsizes, ln->tensors[0].tensor, ln->tensors[1].tensor,
                              ln->eps, sum);
}

/* A block on the residual stream x + pending (pending: the branch the block before added, or
 * NULL), in the current scope: the stream after the attention's residual add in *stream and
 * the MLP's branch in *branch, the block's output being their sum. Each residual add is done
 * in the pass of the LayerNorm after it. */
static bool block_parts(ct_module *m, const ct_tensor *x, const ct_tensor *pending,
                        const layer_cache *cache, ct_tensor **stream, ct_tensor **branch) {
    ct_module **c = m->children;
    ct_tensor *sum = NULL, *a = NULL, *f = NULL;
    ct_tensor *h = pending ? add_norm(c[CT__BLOCK_LN_1], x, pending, &sum)
                           : ct_module_forward(c[CT__BLOCK_LN_1], x);
    if (h) IN_SCOPE(a, attention(c[CT__BLOCK_ATTN], h, cache));
    h = a ? add_norm(c[CT__BLOCK_LN_2], pending ? sum : x, a, stream) : NULL;
    if (h) IN_SCOPE(f, mlp(c[CT__BLOCK_MLP], h));
    *branch = f;
    return f != NULL;
}

/* x + attn(ln_1(x)), then + mlp(ln_2(.)). */
static ct_tensor *block(ct_module *m, const ct_tensor *x, const layer_cache *cache) {
    ct_tensor *stream = NULL, *branch = NULL;
    if (!block_parts(m, x, NULL, cache, &stream, &branch)) return NULL;
    return ct_add(stream, branch);
}

ct_tensor *ct__gpt_block_forward(ct_module *m, const ct_tensor *x) {
    if (x->ndim != 3)
        return ct__fail(CT_ERR_SHAPE, "GPT block: expected (B, T, width), got rank %d", x->ndim);
    ct_tensor *y;
    IN_SCOPE(y, block(m, x, NULL));
    return y;
}

/* Token ids (B, T) at positions start .. start + T - 1 to logits (B, T, vocab); cache NULL
 * for the full forward. */
static ct_tensor *run_gpt(ct_module *m, const ct_tensor *tokens, ct_gpt_cache *cache) {
    const char *op = cache ? "ct_gpt_forward_cached" : "GPT";
    int64_t start = cache ? cache->length : 0, context = m->sizes[CT__GPT_CONTEXT];
    if (tokens->ndim != 2)
        return ct__fail(CT_ERR_SHAPE, "%s: expected token ids (B, T), got rank %d", op,
                        tokens->ndim);
    int64_t t = tokens->shape[1];
    if (t < 1 || start + t > context)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: %lld tokens after %lld cached do not fit the context of %lld; "
                        "give 1 to %lld tokens",
                        op, (long long)t, (long long)start, (long long)context,
                        (long long)(context - start));
    if (cache && tokens->shape[0] != cache->batch)
        return ct__fail(CT_ERR_SHAPE, "%s: %lld sequences given to a cache made for %lld", op,
                        (long long)tokens->shape[0], (long long)cache->batch);
    ct_module **tr = m->children[0]->children;
    ct_tensor *positions =
        ct_arange((double)start, (double)(start + t), 1.0, CT_I64, ct_device_of(tokens));
    ct_tensor *x = ct_add(ct_module_forward(tr[CT__GPT_WTE], tokens),
                          positions ? ct_module_forward(tr[CT__GPT_WPE], positions) : NULL);
    x = ct_dropout(x, m->p, m->training);
    /* The residual stream is x + pending: each block's last residual add is done in the pass
     * of the LayerNorm after it (the next block's ln_1, or ln_f). */
    ct_module *h = tr[CT__GPT_H];
    ct_tensor *pending = NULL;
    for (int l = 0; x && l < h->nchildren; l++) {
        layer_cache lc = {cache ? cache->keys[l] : NULL, cache ? cache->values[l] : NULL, start};
        if (ct_scope_begin() != CT_OK) return NULL;
        ct_tensor *stream = NULL, *branch = NULL;
        bool ok = block_parts(h->children[l], x, pending, cache ? &lc : NULL, &stream, &branch) &&
                  ct_keep(stream) && ct_keep(branch);
        ct_scope_end();
        x = ok ? stream : NULL;
        pending = ok ? branch : NULL;
    }
    ct_tensor *sum = NULL;
    if (x && pending)
        x = add_norm(tr[CT__GPT_LN_F], x, pending, &sum);
    else if (x)
        x = ct_module_forward(tr[CT__GPT_LN_F], x);
    /* The classifier is the token embedding: one parameter, used twice. */
    return x ? ct_linear(x, tr[CT__GPT_WTE]->tensors[0].tensor, NULL) : NULL;
}

ct_tensor *ct__gpt_forward(ct_module *m, const ct_tensor *tokens) {
    ct_tensor *y;
    IN_SCOPE(y, run_gpt(m, tokens, NULL));
    return y;
}

/* ---- the cache ---- */

ct_gpt_cache *ct_gpt_cache_new(const ct_module *gpt, int64_t batch) {
    const char *op = "ct_gpt_cache_new";
    ct_gpt_config c;
    if (ct_gpt_config_of(gpt, &c) != CT_OK) return NULL;
    if (batch < 1)
        return ct__fail(CT_ERR_INVALID_ARG, "%s: batch is %lld; it must be positive", op,
                        (long long)batch);
    ct_gpt_cache *cache = ct__calloc(1, sizeof *cache);
    ct_tensor **keys = ct__calloc((size_t)c.layers, sizeof *keys);
    ct_tensor **values = ct__calloc((size_t)c.layers, sizeof *values);
    if (!cache || !keys || !values) {
        ct__free_mem(cache), ct__free_mem(keys), ct__free_mem(values);
        return ct__fail(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    }
    *cache = (ct_gpt_cache){gpt, batch, 0, (int)c.layers, keys, values};
    int64_t shape[4] = {batch, c.heads, c.context, c.width / c.heads};
    const ct_tensor *wte = gpt->children[0]->children[CT__GPT_WTE]->tensors[0].tensor;
    ct_device device = wte->storage->device;
    for (int l = 0; l < cache->layers; l++) {
        keys[l] = ct_empty(4, shape, wte->dtype, device);
        values[l] = keys[l] ? ct_empty(4, shape, wte->dtype, device) : NULL;
        if (keys[l]) ct__scope_forget(keys[l]);
        if (values[l]) ct__scope_forget(values[l]);
        if (!values[l]) {
            ct_gpt_cache_free(cache);
            return NULL;
        }
    }
    return cache;
}

ct_tensor *ct_gpt_forward_cached(ct_module *gpt, ct_gpt_cache *cache, const ct_tensor *tokens) {
    const char *op = "ct_gpt_forward_cached";
    if (!gpt || !cache || !tokens) return ct__null_arg(op, !gpt ? 1 : !cache ? 2 : 3);
    if (cache->gpt != gpt)
        return ct__fail(CT_ERR_INVALID_ARG, "%s: the cache was made for another module", op);
    ct_tensor *y;
    IN_SCOPE(y, run_gpt(gpt, tokens, cache));
    if (y) cache->length += tokens->shape[1];
    return y;
}

int64_t ct_gpt_cache_length(const ct_gpt_cache *cache) { return cache ? cache->length : 0; }

void ct_gpt_cache_reset(ct_gpt_cache *cache) {
    if (cache) cache->length = 0;
}

void ct_gpt_cache_free(ct_gpt_cache *cache) {
    if (!cache) return;
    for (int l = 0; l < cache->layers; l++) {
        if (cache->keys[l]) ct__tensor_drop(cache->keys[l]);
        if (cache->values[l]) ct__tensor_drop(cache->values[l]);
    }
    ct__free_mem(cache->keys);
    ct__free_mem(cache->values);
    ct__free_mem(cache);
}

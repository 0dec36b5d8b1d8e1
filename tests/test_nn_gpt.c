/* The GPT module (ct_nn_gpt): parameter count from the config (GPT-2's 124,439,808 without
 * allocating it), nanoGPT's state-dict names with the tied classifier, the forward of a tiny
 * model against a float64 reference written here, a gradient check of the same model in
 * float64, causality (a token changes no logits before it), and the KV cache (cached steps
 * give the full forward's logits). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/tape_impl.h"
#include "core/tensor_impl.h"
#include "ct_gradcheck.h"
#include "ct_ref.h"
#include "nn/module_impl.h"

static const ct_gpt_config tiny = {
    .vocab = 11, .context = 8, .layers = 2, .heads = 2, .width = 8, .dropout = 0.0};

TEST(test_nn_gpt_parameter_count) {
    ct_gpt_config gpt2 = {.vocab = 50257, .context = 1024, .layers = 12, .heads = 12, .width = 768};
    CHECK(ct_gpt_parameter_count(&gpt2) == 124439808);
    ct_manual_seed(1);
    ct_module *m = ct_nn_gpt(&tiny);
    CHECK_NOT_NULL(m);
    CHECK(ct_module_parameter_count(m) == ct_gpt_parameter_count(&tiny));
    ct_gpt_config back;
    CHECK_OK(ct_gpt_config_of(m, &back));
    CHECK(back.vocab == 11 && back.context == 8 && back.layers == 2 && back.heads == 2 &&
          back.width == 8 && back.dropout == 0.0);
    ct_module_free(m);
    ct_gpt_config bad = tiny;
    bad.heads = 3;
    CHECK(ct_nn_gpt(&bad) == NULL && ct_last_status() == CT_ERR_INVALID_ARG);
    CHECK(ct_gpt_parameter_count(&bad) == -1);
    bad = tiny;
    bad.dropout = 1.0;
    CHECK(ct_nn_gpt(&bad) == NULL && ct_last_status() == CT_ERR_INVALID_ARG);
    ct_module *linear = ct_nn_linear(2, 2, true);
    CHECK(ct_gpt_config_of(linear, &back) == CT_ERR_INVALID_ARG);
    ct_module_free(linear);
}

/* nanoGPT's names, in its order, one entry for the tied embedding and classifier. */
TEST(test_nn_gpt_state_dict_names) {
    ct_manual_seed(2);
    ct_module *m = ct_nn_gpt(&tiny);
    CHECK_NOT_NULL(m);
    static const char *const expected[] = {"transformer.wte.weight",
                                           "transformer.wpe.weight",
                                           "transformer.h.0.ln_1.weight",
                                           "transformer.h.0.ln_1.bias",
                                           "transformer.h.0.attn.c_attn.weight",
                                           "transformer.h.0.attn.c_attn.bias",
                                           "transformer.h.0.attn.c_proj.weight",
                                           "transformer.h.0.attn.c_proj.bias",
                                           "transformer.h.0.ln_2.weight",
                                           "transformer.h.0.ln_2.bias",
                                           "transformer.h.0.mlp.c_fc.weight",
                                           "transformer.h.0.mlp.c_fc.bias",
                                           "transformer.h.0.mlp.c_proj.weight",
                                           "transformer.h.0.mlp.c_proj.bias"};
    for (int i = 0; i < (int)(sizeof expected / sizeof expected[0]); i++) {
        const char *name = ct_module_state_at(m, i, NULL, NULL);
        CHECK(name && !strcmp(name, expected[i]));
    }
    int n = 0;
    while (ct_module_state_at(m, n, NULL, NULL)) n++;
    CHECK(n == 2 + 12 * 2 + 2);
    CHECK(!strcmp(ct_module_state_at(m, n - 2, NULL, NULL), "transformer.ln_f.weight"));
    CHECK(!strcmp(ct_module_state_at(m, n - 1, NULL, NULL), "transformer.ln_f.bias"));
    /* nanoGPT's initialisation: weights N(0, 0.02), biases 0, LayerNorm weights 1. */
    ct_tensor *t;
    ct_module_state_at(m, 0, &t, NULL);
    double *v = ref_read(t), sq = 0;
    for (int64_t i = 0; i < ct_numel(t); i++) sq += v[i] * v[i];
    CHECK(fabs(sqrt(sq / (double)ct_numel(t)) - 0.02) < 0.005);
    free(v);
    ct_module_state_at(m, 5, &t, NULL);
    v = ref_read(t);
    CHECK(v[0] == 0.0 && v[ct_numel(t) - 1] == 0.0);
    free(v);
    ct_module_free(m);
}

/* ---- the float64 reference ---- */

typedef struct ref_model {
    ct_gpt_config c;
    int n;
    double **p;
    const ct_module *m;
} ref_model;

static bool ref_model_read(ref_model *r, const ct_module *m) {
    r->m = m;
    if (ct_gpt_config_of(m, &r->c) != CT_OK) return false;
    r->n = 0;
    while (ct_module_state_at(m, r->n, NULL, NULL)) r->n++;
    r->p = calloc((size_t)r->n, sizeof *r->p);
    for (int i = 0; i < r->n; i++) {
        ct_tensor *t;
        ct_module_state_at(m, i, &t, NULL);
        r->p[i] = ref_read(t);
        if (!r->p[i]) return false;
    }
    return true;
}

static void ref_model_free(ref_model *r) {
    for (int i = 0; i < r->n; i++) free(r->p[i]);
    free(r->p);
}

static const double *ref_param(const ref_model *r, const char *name) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(ct_module_state_at(r->m, i, NULL, NULL), name)) return r->p[i];
    return NULL;
}

static const double *layer_param(const ref_model *r, int l, const char *name) {
    char full[128];
    snprintf(full, sizeof full, "transformer.h.%d.%s", l, name);
    return ref_param(r, full);
}

static void ref_layer_norm(const double *x, double *y, int64_t rows, int64_t c, const double *w,
                           const double *b) {
    for (int64_t t = 0; t < rows; t++) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < c; i++) mean += x[t * c + i];
        mean /= (double)c;
        for (int64_t i = 0; i < c; i++) var += (x[t * c + i] - mean) * (x[t * c + i] - mean);
        var /= (double)c;
        for (int64_t i = 0; i < c; i++)
            y[t * c + i] = (x[t * c + i] - mean) / sqrt(var + 1e-5) * w[i] + b[i];
    }
}

/* y (rows, out) = x (rows, in) W^T + b */
static void ref_linear(const double *x, double *y, int64_t rows, int64_t in, int64_t out,
                       const double *w, const double *b) {
    for (int64_t t = 0; t < rows; t++)
        for (int64_t o = 0; o < out; o++) {
            double s = b ? b[o] : 0.0;
            for (int64_t i = 0; i < in; i++) s += x[t * in + i] * w[o * in + i];
            y[t * out + o] = s;
        }
}

/* Logits (T, vocab) of one sequence. */
static void ref_forward(const ref_model *r, const int64_t *tokens, int64_t T, double *logits) {
    int64_t C = r->c.width, H = r->c.heads, D = C / H;
    double *x = calloc((size_t)(T * C), sizeof(double)), *h = calloc((size_t)(T * C), 8);
    double *qkv = calloc((size_t)(T * 3 * C), 8), *y = calloc((size_t)(T * C), 8);
    double *f = calloc((size_t)(T * 4 * C), 8), *o = calloc((size_t)(T * C), 8);
    const double *wte = ref_param(r, "transformer.wte.weight");
    const double *wpe = ref_param(r, "transformer.wpe.weight");
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < C; i++) x[t * C + i] = wte[tokens[t] * C + i] + wpe[t * C + i];
    for (int l = 0; l < (int)r->c.layers; l++) {
        ref_layer_norm(x, h, T, C, layer_param(r, l, "ln_1.weight"),
                       layer_param(r, l, "ln_1.bias"));
        ref_linear(h, qkv, T, C, 3 * C, layer_param(r, l, "attn.c_attn.weight"),
                   layer_param(r, l, "attn.c_attn.bias"));
        for (int64_t hd = 0; hd < H; hd++)
            for (int64_t t = 0; t < T; t++) {
                double s[64], mx = -INFINITY, sum = 0;
                for (int64_t u = 0; u <= t; u++) {
                    s[u] = 0;
                    for (int64_t d = 0; d < D; d++)
                        s[u] += qkv[t * 3 * C + hd * D + d] * qkv[u * 3 * C + C + hd * D + d];
                    s[u] /= sqrt((double)D);
                    mx = fmax(mx, s[u]);
                }
                for (int64_t u = 0; u <= t; u++) sum += (s[u] = exp(s[u] - mx));
                for (int64_t d = 0; d < D; d++) {
                    double acc = 0;
                    for (int64_t u = 0; u <= t; u++)
                        acc += s[u] / sum * qkv[u * 3 * C + 2 * C + hd * D + d];
                    y[t * C + hd * D + d] = acc;
                }
            }
        ref_linear(y, o, T, C, C, layer_param(r, l, "attn.c_proj.weight"),
                   layer_param(r, l, "attn.c_proj.bias"));
        for (int64_t i = 0; i < T * C; i++) x[i] += o[i];
        ref_layer_norm(x, h, T, C, layer_param(r, l, "ln_2.weight"),
                       layer_param(r, l, "ln_2.bias"));
        ref_linear(h, f, T, C, 4 * C, layer_param(r, l, "mlp.c_fc.weight"),
                   layer_param(r, l, "mlp.c_fc.bias"));
        for (int64_t i = 0; i < T * 4 * C; i++)
            f[i] = 0.5 * f[i] * (1 + tanh(sqrt(2 / M_PI) * (f[i] + 0.044715 * pow(f[i], 3))));
        ref_linear(f, o, T, 4 * C, C, layer_param(r, l, "mlp.c_proj.weight"),
                   layer_param(r, l, "mlp.c_proj.bias"));
        for (int64_t i = 0; i < T * C; i++) x[i] += o[i];
    }
    ref_layer_norm(x, h, T, C, ref_param(r, "transformer.ln_f.weight"),
                   ref_param(r, "transformer.ln_f.bias"));
    ref_linear(h, logits, T, C, r->c.vocab, wte, NULL);
    free(x), free(h), free(qkv), free(y), free(f), free(o);
}

enum { B = 2, T = 7 };

static ct_tensor *token_tensor(const int64_t *tokens, int64_t b, int64_t t, ct_device device) {
    return ct_from_data(tokens, 2, (int64_t[]){b, t}, CT_I64, device);
}

static void random_tokens(int64_t *tokens, int64_t n, uint64_t seed, int64_t vocab) {
    double v[B * T];
    ref_random(v, n, seed, 0.0, (double)vocab);
    for (int64_t i = 0; i < n; i++) tokens[i] = (int64_t)v[i];
}

/* Every parameter and buffer of m replaced by a float64 copy: the same model in f64. */
static bool to_f64(ct_module *m) {
    int n = ct__module_state_size(m, "to_f64");
    ct_no_grad_push();
    for (int i = 0; i < n; i++) {
        ct__module_tensor *slot = m->state[i].slot;
        ct_tensor *d = ct_cast(slot->tensor, CT_F64);
        if (!d) return false;
        ct__scope_forget(d);
        ct__tensor_drop(slot->tensor);
        slot->tensor = d;
        if (!slot->buffer) ct_set_requires_grad(d, true);
    }
    ct_no_grad_pop();
    return true;
}

static void check_forward(ct_device device, ct_dtype dtype, double tol) {
    ct_manual_seed(3);
    ct_module *m = ct_nn_gpt(&tiny);
    CHECK_NOT_NULL(m);
    if (dtype == CT_F64) CHECK(to_f64(m));
    CHECK_OK(ct_module_to(m, device));
    ref_model r;
    CHECK(ref_model_read(&r, m));
    int64_t tokens[B * T];
    random_tokens(tokens, B * T, 4, tiny.vocab);
    ct_tensor *idx = token_tensor(tokens, B, T, device);
    ct_tensor *logits = ct_module_forward(m, idx);
    CHECK_NOT_NULL(logits);
    CHECK(ct_ndim(logits) == 3 && ct_shape(logits)[0] == B && ct_shape(logits)[1] == T &&
          ct_shape(logits)[2] == tiny.vocab && ct_dtype_of(logits) == dtype);
    double *got = ref_read(logits), expected[T * 11], worst = 0;
    for (int b = 0; b < B; b++) {
        ref_forward(&r, tokens + b * T, T, expected);
        for (int i = 0; i < T * 11; i++)
            worst = fmax(worst, fabs(got[b * T * 11 + i] - expected[i]) / (1 + fabs(expected[i])));
    }
    if (worst > tol) printf("  worst relative error %g (tolerance %g)\n", worst, tol);
    CHECK(worst <= tol);
    free(got);
    ct_release(logits);
    ct_release(idx);
    ref_model_free(&r);
    ct_module_free(m);
}

DEVICE_TEST(test_nn_gpt_forward_matches_float64_reference) {
    check_forward(device, CT_F32, 2e-5);
    if (!ct_test_failed()) check_forward(device, CT_F64, 1e-12);
}

typedef struct loss_context {
    ct_module *m;
    ct_tensor *idx, *target;
} loss_context;

static ct_tensor *gpt_loss(ct_tensor *const *inputs, void *context) {
    (void)inputs; /* the model's own parameters */
    loss_context *c = context;
    ct_tensor *logits = ct_module_forward(c->m, c->idx);
    ct_tensor *flat = ct_reshape(logits, 2, (int64_t[]){B * T, tiny.vocab});
    ct_tensor *loss = ct_cross_entropy(flat, c->target, NULL);
    ct_release(flat);
    ct_release(logits);
    return loss;
}

/* The tiny model in float64, its loss's gradient against central differences for the tied
 * embedding (both uses), the position embedding, the first block's qkv and MLP weights, a
 * LayerNorm and the final LayerNorm. */
DEVICE_TEST(test_nn_gpt_gradcheck) {
    ct_manual_seed(5);
    ct_module *m = ct_nn_gpt(&tiny);
    CHECK_NOT_NULL(m);
    CHECK(to_f64(m));
    CHECK_OK(ct_module_to(m, device));
    int64_t tokens[B * T], targets[B * T];
    random_tokens(tokens, B * T, 6, tiny.vocab);
    random_tokens(targets, B * T, 7, tiny.vocab);
    loss_context c = {m, token_tensor(tokens, B, T, device),
                      ct_from_data(targets, 1, (int64_t[]){B * T}, CT_I64, device)};
    static const int checked[] = {0, 1, 2, 4, 10, 13, 26, 27};
    ct_tensor *inputs[8];
    for (int i = 0; i < 8; i++) ct_module_state_at(m, checked[i], &inputs[i], NULL);
    CHECK(ct_gradcheck(gpt_loss, 8, inputs, &c, 1e-6, 1e-7, 1e-5));
    ct_release(c.idx);
    ct_release(c.target);
    ct_module_free(m);
}

/* Changing token t changes no logits before position t, and does change those at t. */
DEVICE_TEST(test_nn_gpt_is_causal) {
    ct_manual_seed(8);
    ct_module *m = ct_nn_gpt(&tiny);
    CHECK_NOT_NULL(m);
    CHECK_OK(ct_module_to(m, device));
    int64_t a[T], b[T];
    random_tokens(a, T, 9, tiny.vocab);
    for (int t = 0; t < T; t++) {
        memcpy(b, a, sizeof a);
        b[t] = (a[t] + 1) % tiny.vocab;
        ct_tensor *ia = token_tensor(a, 1, T, device), *ib = token_tensor(b, 1, T, device);
        ct_tensor *la = ct_module_forward(m, ia), *lb = ct_module_forward(m, ib);
        CHECK(la && lb);
        double *va = ref_read(la), *vb = ref_read(lb);
        for (int i = 0; i < t * 11; i++) CHECK(va[i] == vb[i]);
        double change = 0;
        for (int i = t * 11; i < (t + 1) * 11; i++) change += fabs(va[i] - vb[i]);
        CHECK(change > 0);
        free(va), free(vb);
        ct_release(la), ct_release(lb), ct_release(ia), ct_release(ib);
        if (ct_test_failed()) break;
    }
    ct_module_free(m);
}

/* Logits from the cache, fed 3 tokens, then 1, 2 and 1, are the full forward's. */
DEVICE_TEST(test_nn_gpt_kv_cache_matches_full_forward) {
    ct_manual_seed(10);
    ct_module *m = ct_nn_gpt(&tiny);
    CHECK_NOT_NULL(m);
    CHECK_OK(ct_module_to(m, device));
    CHECK_OK(ct_module_eval(m));
    int64_t tokens[B * T];
    random_tokens(tokens, B * T, 11, tiny.vocab);
    ct_no_grad_push();
    ct_tensor *idx = token_tensor(tokens, B, T, device);
    ct_tensor *full = ct_module_forward(m, idx);
    double *want = ref_read(full);
    ct_gpt_cache *cache = ct_gpt_cache_new(m, B);
    CHECK_NOT_NULL(cache);
    static const int64_t steps[] = {3, 1, 2, 1};
    int64_t start = 0;
    for (int s = 0; s < 4; s++) {
        ct_tensor *part = ct_slice(idx, 1, start, start + steps[s], 1);
        ct_tensor *logits = ct_gpt_forward_cached(m, cache, part);
        CHECK_NOT_NULL(logits);
        CHECK(ct_shape(logits)[1] == steps[s]);
        double *got = ref_read(logits);
        for (int b = 0; b < B; b++)
            for (int64_t t = 0; t < steps[s]; t++)
                for (int v = 0; v < 11; v++) {
                    double w = want[(b * T + start + t) * 11 + v];
                    double g = got[(b * steps[s] + t) * 11 + v];
                    CHECK(fabs(g - w) <= 1e-5 * (1 + fabs(w)));
                }
        free(got);
        ct_release(logits);
        ct_release(part);
        start += steps[s];
        CHECK(ct_gpt_cache_length(cache) == start);
    }
    /* The context holds 8: one more than fits is refused, and the cache is unchanged. */
    ct_tensor *two = ct_slice(idx, 1, 0, 2, 1);
    CHECK(ct_gpt_forward_cached(m, cache, two) == NULL && ct_last_status() == CT_ERR_INVALID_ARG);
    CHECK(ct_gpt_cache_length(cache) == start);
    ct_gpt_cache_reset(cache);
    CHECK(ct_gpt_cache_length(cache) == 0);
    ct_release(two);
    ct_gpt_cache_free(cache);
    free(want);
    ct_release(full);
    ct_release(idx);
    ct_no_grad_pop();
    ct_module_free(m);
}

/* More tokens than the context is an error naming the sizes. */
TEST(test_nn_gpt_errors) {
    ct_manual_seed(12);
    ct_module *m = ct_nn_gpt(&tiny);
    CHECK_NOT_NULL(m);
    int64_t tokens[9] = {0};
    ct_tensor *idx = token_tensor(tokens, 1, 9, CT_CPU);
    CHECK(ct_module_forward(m, idx) == NULL && ct_last_status() == CT_ERR_INVALID_ARG);
    CHECK(strstr(ct_last_error(), "context of 8") != NULL);
    ct_release(idx);
    ct_module_free(m);
}

/* The GPT module: its config, construction as nanoGPT's module tree, and nanoGPT's
 * initialisation. The forward passes are in gpt_forward.c. */
#include <math.h>
#include <string.h>

#include "autograd/tape_impl.h"
#include "nn/gpt_impl.h"
#include "ops/op_impl.h"

const char ct__gpt_kind[] = "GPT";

static ct_status check_config(const char *op, const ct_gpt_config *c) {
    if (!c) return ct__error(CT_ERR_INVALID_ARG, "%s: config is NULL", op);
    const struct {
        const char *name;
        int64_t value;
    } sizes[] = {{"vocab", c->vocab},
                 {"context", c->context},
                 {"layers", c->layers},
                 {"heads", c->heads},
                 {"width", c->width}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].value < 1)
            return ct__error(CT_ERR_INVALID_ARG, "%s: %s is %lld; it must be positive", op,
                             sizes[i].name, (long long)sizes[i].value);
    if (c->width % c->heads)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: width %lld is not a multiple of heads %lld; each head takes "
                         "width / heads channels",
                         op, (long long)c->width, (long long)c->heads);
    if (!(c->dropout >= 0.0 && c->dropout < 1.0))
        return ct__error(CT_ERR_INVALID_ARG, "%s: dropout is %g; it must be in [0, 1)", op,
                         c->dropout);
    return CT_OK;
}

int64_t ct_gpt_parameter_count(const ct_gpt_config *config) {
    if (check_config("ct_gpt_parameter_count", config) != CT_OK) return -1;
    int64_t c = config->width;
    /* Per block: two LayerNorms (2c each), qkv (3c^2 + 3c), the attention's projection
     * (c^2 + c), the MLP's two layers (4c^2 + 4c and 4c^2 + c). */
    int64_t block = 12 * c * c + 13 * c;
    return (config->vocab + config->context) * c + config->layers * block + 2 * c;
}

static ct_module *layer_norm(int64_t width) { return ct_nn_layer_norm(1, &width, 0.0); }

static ct_module *attention(const ct_gpt_config *c) {
    static const char *const labels[] = {"c_attn", "c_proj"};
    ct_module *m = ct__module_container("CausalSelfAttention", ct__gpt_attention_forward, 2,
                                        (ct_module *[]){ct_nn_linear(c->width, 3 * c->width, true),
                                                        ct_nn_linear(c->width, c->width, true)},
                                        labels);
    if (m) m->sizes[0] = c->heads, m->nsizes = 1, m->p = c->dropout;
    return m;
}

static ct_module *mlp(const ct_gpt_config *c) {
    static const char *const labels[] = {"c_fc", "c_proj"};
    ct_module *m = ct__module_container("MLP", ct__gpt_mlp_forward, 2,
                                        (ct_module *[]){ct_nn_linear(c->width, 4 * c->width, true),
                                                        ct_nn_linear(4 * c->width, c->width, true)},
                                        labels);
    if (m) m->p = c->dropout;
    return m;
}

static ct_module *block(const ct_gpt_config *c) {
    static const char *const labels[] = {"ln_1", "attn", "ln_2", "mlp"};
    ct_module *m = ct__module_container(
        "Block", ct__gpt_block_forward, 4,
        (ct_module *[]){layer_norm(c->width), attention(c), layer_norm(c->width), mlp(c)}, labels);
    if (m) m->p = c->dropout;
    return m;
}

/* The containers without a forward of their own, as PyTorch's ModuleDict and ModuleList. */
static ct_tensor *no_forward(ct_module *m, const ct_tensor *x) {
    (void)x;
    return ct__fail(CT_ERR_UNSUPPORTED, "a %s has no forward; call the GPT module that holds it",
                    m->kind);
}

static ct_module *blocks(const ct_gpt_config *c) {
    int n = (int)c->layers;
    ct_module **list = ct__calloc((size_t)n, sizeof *list);
    if (!list) return ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_nn_gpt: out of host memory");
    for (int i = 0; i < n; i++) list[i] = block(c);
    ct_module *m = ct__module_container("ModuleList", no_forward, n, list, NULL);
    ct__free_mem(list);
    return m;
}

/* nanoGPT's _init_weights: matrices N(0, 0.02), the residual projections N(0, 0.02 /
 * sqrt(2 layers)), biases 0; LayerNorms keep their ones and zeros. In state order, from the
 * global Philox stream. */
static ct_status init_weights(ct_module *m, int64_t layers) {
    ct_status status = CT_OK;
    ct_no_grad_push();
    ct_tensor *t;
    bool buffer;
    const char *name;
    for (int i = 0; status == CT_OK && (name = ct_module_state_at(m, i, &t, &buffer)); i++) {
        size_t len = strlen(name);
        bool is_bias = len >= 5 && !strcmp(name + len - 5, ".bias");
        bool is_ln = strstr(name, ".ln_") != NULL;
        if (buffer || is_ln) continue;
        if (is_bias) {
            status = ct_fill(t, 0.0);
            continue;
        }
        bool residual = len >= 14 && !strcmp(name + len - 14, "c_proj.weight");
        double std = residual ? 0.02 / sqrt(2.0 * (double)layers) : 0.02;
        ct_tensor *r = ct_randn(t->ndim, t->shape, t->dtype, t->storage->device);
        ct_tensor *scaled = ct_mul_scalar(r, std);
        status = scaled ? ct_copy(t, scaled) : ct_last_status();
        ct_release(scaled);
        ct_release(r);
    }
    ct_no_grad_pop();
    return status;
}

ct_module *ct_nn_gpt(const ct_gpt_config *config) {
    const char *op = "ct_nn_gpt";
    if (check_config(op, config) != CT_OK) return NULL;
    static const char *const transformer_labels[] = {"wte", "wpe", "h", "ln_f"};
    ct_module *transformer =
        ct__module_container("ModuleDict", no_forward, 4,
                             (ct_module *[]){ct_nn_embedding(config->vocab, config->width),
                                             ct_nn_embedding(config->context, config->width),
                                             blocks(config), layer_norm(config->width)},
                             transformer_labels);
    static const char *const labels[] = {"transformer"};
    ct_module *m = ct__module_container(ct__gpt_kind, ct__gpt_forward, 1, &transformer, labels);
    if (!m) return NULL;
    m->sizes[CT__GPT_VOCAB] = config->vocab;
    m->sizes[CT__GPT_CONTEXT] = config->context;
    m->sizes[CT__GPT_LAYERS] = config->layers;
    m->sizes[CT__GPT_HEADS] = config->heads;
    m->sizes[CT__GPT_WIDTH] = config->width;
    m->nsizes = 5;
    m->p = config->dropout;
    if (init_weights(m, config->layers) != CT_OK) {
        ct_module_free(m);
        return NULL;
    }
    return m;
}

ct_status ct_gpt_config_of(const ct_module *gpt, ct_gpt_config *out) {
    if (!gpt || !out) {
        ct__null_arg("ct_gpt_config_of", !gpt ? 1 : 2);
        return ct_last_status();
    }
    if (gpt->kind != ct__gpt_kind)
        return ct__error(CT_ERR_INVALID_ARG, "ct_gpt_config_of: the module is a %s, not a GPT",
                         gpt->kind);
    *out = (ct_gpt_config){.vocab = gpt->sizes[CT__GPT_VOCAB],
                           .context = gpt->sizes[CT__GPT_CONTEXT],
                           .layers = gpt->sizes[CT__GPT_LAYERS],
                           .heads = gpt->sizes[CT__GPT_HEADS],
                           .width = gpt->sizes[CT__GPT_WIDTH],
                           .dropout = gpt->p};
    return CT_OK;
}

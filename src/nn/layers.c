/* Layers with parameters: linear, conv2d, batch norm, layer norm, embedding. */
#include <string.h>

#include "nn/init_impl.h"
#include "nn/module_impl.h"
#include "ops/op_impl.h"

static const ct_tensor *param(const ct_module *m, int i) {
    return i < m->ntensors ? m->tensors[i].tensor : NULL;
}

/* Finish a constructor: m on success, else free it and NULL (the error is set). */
static ct_module *built(ct_module *m, ct_status status) {
    if (status == CT_OK) return m;
    ct_module_free(m);
    return NULL;
}

static bool positive(const char *op, const char *what, int64_t value) {
    if (value > 0) return true;
    ct__error(CT_ERR_INVALID_ARG, "%s: %s is %lld; it must be positive", op, what,
              (long long)value);
    return false;
}

static ct_tensor *linear_forward(ct_module *m, const ct_tensor *x) {
    return ct_linear(x, param(m, 0), param(m, 1));
}

ct_module *ct_nn_linear(int64_t in_features, int64_t out_features, bool bias) {
    const char *op = "ct_nn_linear";
    if (!positive(op, "in_features", in_features) || !positive(op, "out_features", out_features))
        return NULL;
    ct_module *m = ct__module_new("Linear", linear_forward);
    if (!m) return NULL;
    m->sizes[0] = in_features, m->sizes[1] = out_features, m->nsizes = 2;
    double bound = ct__kaiming_uniform_bound(in_features);
    ct_no_grad_push();
    ct_status status = ct__module_add(
        m, "weight", ct__init_uniform(2, (int64_t[]){out_features, in_features}, bound), false);
    if (status == CT_OK && bias)
        status = ct__module_add(m, "bias", ct__init_uniform(1, &out_features, bound), false);
    ct_no_grad_pop();
    return built(m, status);
}

static ct_tensor *conv_forward(ct_module *m, const ct_tensor *x) {
    return ct_conv2d(x, param(m, 0), param(m, 1), &m->conv);
}

ct_module *ct_nn_conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                        const ct_conv2d_options *options, bool bias) {
    const char *op = "ct_nn_conv2d";
    if (!positive(op, "in_channels", in_channels) || !positive(op, "out_channels", out_channels) ||
        !positive(op, "kernel_size", kernel_size))
        return NULL;
    int64_t groups = options && options->groups ? options->groups : 1;
    if (groups < 1 || in_channels % groups || out_channels % groups) {
        ct__error(CT_ERR_INVALID_ARG,
                  "%s: groups is %lld; it must divide in_channels (%lld) and out_channels "
                  "(%lld)",
                  op, (long long)groups, (long long)in_channels, (long long)out_channels);
        return NULL;
    }
    ct_module *m = ct__module_new("Conv2d", conv_forward);
    if (!m) return NULL;
    if (options) m->conv = *options;
    m->sizes[0] = in_channels, m->sizes[1] = out_channels, m->sizes[2] = kernel_size;
    m->nsizes = 3;
    int64_t shape[4] = {out_channels, in_channels / groups, kernel_size, kernel_size};
    double bound = ct__kaiming_uniform_bound(shape[1] * kernel_size * kernel_size);
    ct_no_grad_push();
    ct_status status = ct__module_add(m, "weight", ct__init_uniform(4, shape, bound), false);
    if (status == CT_OK && bias)
        status = ct__module_add(m, "bias", ct__init_uniform(1, &out_channels, bound), false);
    ct_no_grad_pop();
    return built(m, status);
}

/* num_batches_tracked += 1 (a 0-d int64 buffer), as PyTorch counts training batches. */
static ct_status count_batch(ct__module_tensor *slot) {
    ct_tensor *next = ct_add_scalar(slot->tensor, 1.0);
    if (!next) return ct_last_status();
    ct__scope_forget(next);
    ct__tensor_drop(slot->tensor);
    slot->tensor = next;
    return CT_OK;
}

/* BatchNorm2d's forward, with the ReLU after it fused when relu. */
static ct_tensor *batch_norm2d(ct_module *m, const ct_tensor *x, bool relu) {
    if (x->ndim != 4)
        return ct__fail(CT_ERR_SHAPE,
                        "BatchNorm2d: expected a 4-d input (N, C, H, W), got rank %d; use "
                        "ct_batch_norm for other ranks",
                        x->ndim);
    ct_tensor *out = (relu ? ct_batch_norm_relu : ct_batch_norm)(
        x, m->tensors[2].tensor, m->tensors[3].tensor, param(m, 0), param(m, 1), m->training,
        m->momentum, m->eps);
    if (out && m->training && count_batch(&m->tensors[4]) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

static ct_tensor *batch_norm_forward(ct_module *m, const ct_tensor *x) {
    return batch_norm2d(m, x, false);
}

ct_tensor *ct__module_forward_relu(ct_module *m, const ct_tensor *x) {
    if (m->forward == batch_norm_forward) return batch_norm2d(m, x, true);
    ct_tensor *h = ct_module_forward(m, x);
    ct_tensor *y = h ? ct_relu(h) : NULL;
    ct_release(h);
    return y;
}

ct_module *ct_nn_batch_norm2d(int64_t channels, double eps, double momentum) {
    if (!positive("ct_nn_batch_norm2d", "channels", channels)) return NULL;
    ct_module *m = ct__module_new("BatchNorm2d", batch_norm_forward);
    if (!m) return NULL;
    m->sizes[0] = channels, m->nsizes = 1;
    m->eps = eps > 0 ? eps : 1e-5;
    m->momentum = momentum > 0 ? momentum : 0.1;
    ct_status status = ct__module_add(m, "weight", ct_ones(1, &channels, CT_F32, CT_CPU), false);
    if (status == CT_OK)
        status = ct__module_add(m, "bias", ct_zeros(1, &channels, CT_F32, CT_CPU), false);
    if (status == CT_OK)
        status = ct__module_add(m, "running_mean", ct_zeros(1, &channels, CT_F32, CT_CPU), true);
    if (status == CT_OK)
        status = ct__module_add(m, "running_var", ct_ones(1, &channels, CT_F32, CT_CPU), true);
    if (status == CT_OK)
        status = ct__module_add(m, "num_batches_tracked", ct_zeros(0, NULL, CT_I64, CT_CPU), true);
    return built(m, status);
}

static ct_tensor *layer_norm_forward(ct_module *m, const ct_tensor *x) {
    return ct_layer_norm(x, m->nsizes, param(m, 0), param(m, 1), m->eps);
}

ct_module *ct_nn_layer_norm(int ndim, const int64_t *shape, double eps) {
    if (ndim < 1 || ndim > CT_MAX_DIMS || !shape) {
        ct__error(CT_ERR_INVALID_ARG,
                  "ct_nn_layer_norm: the normalised shape needs 1 to %d sizes, got %d%s",
                  CT_MAX_DIMS, ndim, shape ? "" : " and a NULL shape");
        return NULL;
    }
    for (int d = 0; d < ndim; d++)
        if (!positive("ct_nn_layer_norm", "a normalised size", shape[d])) return NULL;
    ct_module *m = ct__module_new("LayerNorm", layer_norm_forward);
    if (!m) return NULL;
    memcpy(m->sizes, shape, sizeof(int64_t) * (size_t)ndim);
    m->nsizes = ndim;
    m->eps = eps > 0 ? eps : 1e-5;
    ct_status status = ct__module_add(m, "weight", ct_ones(ndim, shape, CT_F32, CT_CPU), false);
    if (status == CT_OK)
        status = ct__module_add(m, "bias", ct_zeros(ndim, shape, CT_F32, CT_CPU), false);
    return built(m, status);
}

static ct_tensor *embedding_forward(ct_module *m, const ct_tensor *x) {
    return ct_embedding(x, param(m, 0));
}

ct_module *ct_nn_embedding(int64_t num_embeddings, int64_t embedding_dim) {
    if (!positive("ct_nn_embedding", "num_embeddings", num_embeddings) ||
        !positive("ct_nn_embedding", "embedding_dim", embedding_dim))
        return NULL;
    ct_module *m = ct__module_new("Embedding", embedding_forward);
    if (!m) return NULL;
    m->sizes[0] = num_embeddings, m->sizes[1] = embedding_dim, m->nsizes = 2;
    ct_no_grad_push();
    ct_status status = ct__module_add(
        m, "weight", ct_randn(2, (int64_t[]){num_embeddings, embedding_dim}, CT_F32, CT_CPU),
        false);
    ct_no_grad_pop();
    return built(m, status);
}

/* ctensor — modules (torch.nn): layers that own their parameters and buffers, compose in
 * sequences, move between devices, switch between training and evaluation, and save and
 * load their state with PyTorch's state-dict names ("0.weight", "2.running_mean").
 *
 *     ct_module *model = ct_nn_sequential(3, (ct_module *[]){
 *         ct_nn_linear(784, 128, true), ct_nn_relu(), ct_nn_linear(128, 10, true)});
 *     ct_module_to(model, device);                 // model.to(device)
 *     ct_tensor *logits = ct_module_forward(model, x);
 *
 * Parameters are made on the CPU with PyTorch's default initialisation, drawn from the
 * global Philox stream (ct_manual_seed), so a seed gives the same model on every device.
 * A constructor returns NULL with the error set on bad arguments; ct_nn_sequential takes
 * ownership of its children (also when it fails: it frees them). */
#ifndef CTENSOR_NN_H
#define CTENSOR_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/nn_functional.h"
#include "ctensor/state_dict.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_module ct_module;

/* Layers. Weights: Kaiming-uniform with a = sqrt(5) and biases uniform in +-1/sqrt(fan_in)
 * (linear, conv2d); N(0, 1) (embedding); ones and zeros (batch and layer norm). */
CT_API ct_module *ct_nn_linear(int64_t in_features, int64_t out_features, bool bias);
/* A square kernel; options as ct_conv2d (NULL: stride 1, no padding). */
CT_API ct_module *ct_nn_conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                               const ct_conv2d_options *options, bool bias);
CT_API ct_module *ct_nn_max_pool2d(const ct_pool2d_options *options);
CT_API ct_module *ct_nn_avg_pool2d(const ct_pool2d_options *options);
CT_API ct_module *ct_nn_adaptive_avg_pool2d(int64_t out_h, int64_t out_w);
/* eps and momentum: 0 means PyTorch's defaults (1e-5 and 0.1). */
CT_API ct_module *ct_nn_batch_norm2d(int64_t channels, double eps, double momentum);
/* Normalises over the last ndim axes, of sizes shape; eps 0 means 1e-5. */
CT_API ct_module *ct_nn_layer_norm(int ndim, const int64_t *shape, double eps);
CT_API ct_module *ct_nn_dropout(double p);
CT_API ct_module *ct_nn_embedding(int64_t num_embeddings, int64_t embedding_dim);
/* Flattens every axis after the first (the batch). */
CT_API ct_module *ct_nn_flatten(void);
CT_API ct_module *ct_nn_relu(void);
CT_API ct_module *ct_nn_gelu(void);
/* GELU in GPT-2's tanh form (PyTorch's nn.GELU(approximate='tanh')). */
CT_API ct_module *ct_nn_gelu_tanh(void);
CT_API ct_module *ct_nn_tanh(void);
CT_API ct_module *ct_nn_sigmoid(void);
CT_API ct_module *ct_nn_softmax(int axis);
CT_API ct_module *ct_nn_log_softmax(int axis);
/* Children run in order; child i's state-dict names start with "i.". */
CT_API ct_module *ct_nn_sequential(int n, ct_module *const *children);

/* Residual networks for 32x32 images (any size the stages can halve works). The basic block:
 * relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), conv1 3x3 of the given stride,
 * conv2 3x3, both without bias; the shortcut is the identity, or when stride != 1 or the
 * channels change a 1x1 strided conv and batch norm (state names "conv1.weight",
 * "bn1.running_mean", "shortcut.0.weight", "shortcut.1.weight", ...). */
CT_API ct_module *ct_nn_basic_block(int64_t in_channels, int64_t channels, int64_t stride);
/* A ResNet: conv1 3x3 (no bias), bn1, ReLU, stages "layer1", "layer2", ... of basic blocks
 * (each stage after the first starts with stride 2), global average pooling and "linear",
 * as PyTorch's usual CIFAR ResNet code names them ("layer2.0.shortcut.0.weight").
 *   resnet20: stages of 16, 32, 64 channels, 3 blocks each (He et al.'s CIFAR ResNet-20,
 *             with projection shortcuts): 272,474 parameters for 3 channels and 10 classes;
 *   resnet18: a 64-channel stem (no max pool), stages of 64, 128, 256, 512 channels, 2
 *             blocks each: 11,173,962 parameters for 3 channels and 10 classes.
 * Input (N, in_channels, H, W); output logits (N, classes). */
CT_API ct_module *ct_nn_resnet20(int64_t in_channels, int64_t classes);
CT_API ct_module *ct_nn_resnet18(int64_t in_channels, int64_t classes);

/* A GPT-2 language model (nanoGPT's): token and position embeddings, `layers` pre-LayerNorm
 * blocks (LayerNorm, causal self-attention through ct_scaled_dot_product_attention with a
 * fused qkv projection, residual add; LayerNorm, an MLP of width 4 * width with GELU in the
 * tanh form, residual add), a final LayerNorm, and a classifier tied to the token embedding
 * (one parameter, two uses: its gradient is the sum of both). Every linear layer has a bias.
 * The forward takes integer token ids (B, T), T <= context, and gives logits (B, T, vocab).
 * State-dict names are nanoGPT's: "transformer.wte.weight", "transformer.wpe.weight",
 * "transformer.h.0.ln_1.weight", "transformer.h.0.attn.c_attn.weight", ...,
 * "transformer.h.0.mlp.c_proj.bias", "transformer.ln_f.weight" (the tied "lm_head.weight" is
 * not a second entry). Initialisation is nanoGPT's: linear and embedding weights N(0, 0.02),
 * the residual projections (c_proj) N(0, 0.02 / sqrt(2 * layers)), biases 0, LayerNorms 1
 * and 0. dropout applies to the embeddings' sum, the attention weights and each residual
 * branch, in training mode. */
typedef struct ct_gpt_config {
    int64_t vocab, context, layers, heads, width; /* width a multiple of heads */
    double dropout;                               /* in [0, 1) */
} ct_gpt_config;

CT_API ct_module *ct_nn_gpt(const ct_gpt_config *config);
/* The parameters such a model has, counted from the config alone (nothing is allocated):
 * 124,439,808 for GPT-2's (vocab 50257, context 1024, 12 layers, 12 heads, width 768). -1
 * with CT_ERR_INVALID_ARG for a config ct_nn_gpt refuses. */
CT_API int64_t ct_gpt_parameter_count(const ct_gpt_config *config);
/* The config a GPT module was made with; CT_ERR_INVALID_ARG for another module. */
CT_API ct_status ct_gpt_config_of(const ct_module *gpt, ct_gpt_config *out);

/* A key/value cache for sampling: each layer's keys and values of the tokens seen so far,
 * for `batch` sequences, on the module's device and in its dtype (as they are when the cache
 * is made), up to the context length. ct_gpt_forward_cached runs the model on new tokens (B, T)
 * only, attending to the cached ones before them, appends their keys and values and returns their
 * logits (B, T, vocab): the same values as the full forward over the whole sequence, at
 * the cost of the new tokens. More than context tokens in all is CT_ERR_INVALID_ARG (reset
 * and start again from a shorter window). Run it without gradients (ct_no_grad_push) and
 * in evaluation mode. */
typedef struct ct_gpt_cache ct_gpt_cache;
CT_API ct_gpt_cache *ct_gpt_cache_new(const ct_module *gpt, int64_t batch);
CT_API ct_tensor *ct_gpt_forward_cached(ct_module *gpt, ct_gpt_cache *cache,
                                        const ct_tensor *tokens);
/* The tokens the cache holds. */
CT_API int64_t ct_gpt_cache_length(const ct_gpt_cache *cache);
/* Forget every cached token (the memory is kept). */
CT_API void ct_gpt_cache_reset(ct_gpt_cache *cache);
CT_API void ct_gpt_cache_free(ct_gpt_cache *cache); /* NULL is ignored */

CT_API void ct_module_free(ct_module *m); /* NULL is ignored */

/* The forward pass (a new tensor). */
CT_API ct_tensor *ct_module_forward(ct_module *m, const ct_tensor *x);

/* Move every parameter and buffer to device (explicit transfers); gradients are dropped.
 * On failure nothing has moved. */
CT_API ct_status ct_module_to(ct_module *m, ct_device device);
/* The device of the module's parameters (CPU for a module without any). */
CT_API ct_device ct_module_device(const ct_module *m);
/* Training mode (the default: dropout active, batch norm on batch statistics) or
 * evaluation mode, for the module and all its children. */
CT_API ct_status ct_module_train(ct_module *m, bool training);
CT_API ct_status ct_module_eval(ct_module *m);
CT_API bool ct_module_is_training(const ct_module *m);

/* The parameters in state-dict order, as borrowed references: writes at most capacity of
 * them to out (out may be NULL with capacity 0) and returns how many there are. */
CT_API int ct_module_parameters(const ct_module *m, ct_tensor **out, int capacity);
/* Elements in all parameters (PyTorch's sum(p.numel() for p in model.parameters())). */
CT_API int64_t ct_module_parameter_count(const ct_module *m);
/* Drop every parameter's gradient. */
CT_API ct_status ct_module_zero_grad(ct_module *m);

/* Each parameter and buffer by its state-dict name, in order: a borrowed reference, or
 * NULL past the end. buffer says whether it is a buffer (running statistics). */
CT_API const char *ct_module_state_at(const ct_module *m, int i, ct_tensor **tensor, bool *buffer);

/* Add every parameter and buffer to sd under prefix + its state-dict name (prefix may be
 * NULL); sd keeps references to the module's own tensors. */
CT_API ct_status ct_module_state_dict(const ct_module *m, ct_state_dict *sd, const char *prefix);
/* Copy the entries prefix + name of sd into the module's tensors (any device: an explicit
 * transfer when it differs). Every entry the module has must be there with its shape and
 * dtype, else CT_ERR_FORMAT naming it, and nothing changes; other entries are ignored. */
CT_API ct_status ct_module_load_state_dict(ct_module *m, const ct_state_dict *sd,
                                           const char *prefix);
/* model.state_dict() to a safetensors file (written atomically), and back. Names as
 * PyTorch's, so torch's safetensors.torch.load_file gives a state dict its model loads. */
CT_API ct_status ct_module_save(const ct_module *m, const char *path);
CT_API ct_status ct_module_load(ct_module *m, const char *path);

/* A one-line description per module, as print(model) does, into buf (truncated to size);
 * returns the length it needed. */
CT_API size_t ct_module_describe(const ct_module *m, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif

/* ctensor — neural-network functions (torch.nn.functional): the ops modules are made of.
 * Each records its backward when an input requires grad (autograd.h), and runs on the
 * device its inputs share. Layouts are PyTorch's: images NCHW, conv weights
 * (out_channels, in_channels / groups, kh, kw), linear weights (out_features, in_features).
 * Floating dtypes only. */
#ifndef CTENSOR_NN_FUNCTIONAL_H
#define CTENSOR_NN_FUNCTIONAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a loss reduces over the batch. */
typedef enum ct_reduction {
    CT_REDUCTION_MEAN = 0,
    CT_REDUCTION_SUM,
    CT_REDUCTION_NONE
} ct_reduction;

/* y = x @ weight^T + bias over the last axis of x; bias may be NULL. */
CT_API ct_tensor *ct_linear(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias);

/* Convolution settings, [0] for height and [1] for width. Zeros mean the defaults (stride 1,
 * padding 0, dilation 1, groups 1), so `&(ct_conv2d_options){.padding = {1, 1}}` reads as
 * PyTorch's padding=1; NULL gives every default. */
typedef struct ct_conv2d_options {
    int64_t stride[2];
    int64_t padding[2];
    int64_t dilation[2];
    int64_t groups;
} ct_conv2d_options;

/* x (N, C, H, W), weight (O, C / groups, kh, kw), bias (O) or NULL. */
CT_API ct_tensor *ct_conv2d(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                            const ct_conv2d_options *options);

/* Pooling window settings: kernel is required; stride 0 means the kernel size; padding
 * defaults to 0. Average pooling counts padded cells (PyTorch's count_include_pad=True). */
typedef struct ct_pool2d_options {
    int64_t kernel[2];
    int64_t stride[2];
    int64_t padding[2];
} ct_pool2d_options;

CT_API ct_tensor *ct_max_pool2d(const ct_tensor *x, const ct_pool2d_options *options);
CT_API ct_tensor *ct_avg_pool2d(const ct_tensor *x, const ct_pool2d_options *options);
/* Average over PyTorch's adaptive windows to an (out_h, out_w) output. */
CT_API ct_tensor *ct_adaptive_avg_pool2d(const ct_tensor *x, int64_t out_h, int64_t out_w);

/* Batch normalisation over axis 1 of x (N, C, ...). Training: normalise with the batch's
 * statistics and update running_mean and running_var in place (momentum as PyTorch's,
 * unbiased variance for the running estimate); evaluation: normalise with the running
 * statistics. running_* may be NULL in training (no update). weight and bias (C) or NULL. */
CT_API ct_tensor *ct_batch_norm(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                                const ct_tensor *weight, const ct_tensor *bias, bool training,
                                double momentum, double eps);
/* relu(ct_batch_norm(...)) in one op: one pass normalises and clamps, and the backward takes
 * the ReLU's mask from the output (no tensor saved beyond ct_batch_norm's). Arguments,
 * running statistics and autocast as ct_batch_norm's. */
CT_API ct_tensor *ct_batch_norm_relu(const ct_tensor *x, ct_tensor *running_mean,
                                     ct_tensor *running_var, const ct_tensor *weight,
                                     const ct_tensor *bias, bool training, double momentum,
                                     double eps);
/* Normalise over the last `normalized_ndim` axes; weight and bias have those axes' shape,
 * or are NULL. */
CT_API ct_tensor *ct_layer_norm(const ct_tensor *x, int normalized_ndim, const ct_tensor *weight,
                                const ct_tensor *bias, double eps);

/* Zero each element with probability p and scale the rest by 1 / (1 - p), from the global
 * Philox stream (random.h); x itself (a new reference) when !training or p == 0. */
CT_API ct_tensor *ct_dropout(const ct_tensor *x, double p, bool training);

/* Rows of weight (num_embeddings, dim) picked by integer indices of any shape. */
CT_API ct_tensor *ct_embedding(const ct_tensor *indices, const ct_tensor *weight);

CT_API ct_tensor *ct_softmax(const ct_tensor *x, int axis);
CT_API ct_tensor *ct_log_softmax(const ct_tensor *x, int axis);

/* Scaled dot-product attention, PyTorch's F.scaled_dot_product_attention: query (..., L, E),
 * key (..., S, E), value (..., S, Ev) with the same leading (batch) axes and dtype give
 * softmax(query @ key^T * scale + bias) @ value, (..., L, Ev). mask (or NULL) broadcasts to
 * (..., L, S): CT_BOOL (true: the query attends to the key) or floating (added to the
 * scores). causal hides key j from query i when j > i (PyTorch's is_causal: top-left
 * aligned when L != S); a mask with causal is an error. dropout_p > 0 drops probabilities
 * (scaled by 1 / (1 - dropout_p)) from the global Philox stream (random.h), whatever the
 * mode, as PyTorch's function does: pass 0 outside training. scale 0 means 1 / sqrt(E).
 * A query that sees no key (every score -inf) gives zeros, and zero gradients, as PyTorch's
 * fused kernels do. Memory is linear in L and S on every device (no L x S matrix is made or
 * saved); gradients flow to query, key and value (a float mask that requires grad is
 * CT_ERR_UNSUPPORTED). Under autocast: lower precision, as PyTorch. */
CT_API ct_tensor *ct_scaled_dot_product_attention(const ct_tensor *query, const ct_tensor *key,
                                                  const ct_tensor *value, const ct_tensor *mask,
                                                  bool causal, double dropout_p, double scale);

/* Cross-entropy of logits (N, C) against class indices target (N) (integer), with a fused
 * log-softmax. label_smoothing in [0, 1) as PyTorch's; ignore_index: targets equal to it add
 * nothing (pass a negative value other than any label, e.g. -100, PyTorch's default).
 * CT_ERR_INVALID_ARG for a target out of range, which a GPU checks on the device and reads
 * back: an implicit device-to-host transfer and a wait per call (transfer.h).
 * unchecked_targets: the caller vouches that every target is in [0, C) or ignore_index (a
 * training loop whose labels were checked once, when loaded), so that a GPU does not read its
 * check back and the call does not wait for the device; a target out of range then gives its
 * row an unspecified loss, never a fault (the CPU, whose check costs no wait, still reports
 * it). false (the zero of an initialiser that leaves it out): checked. */
typedef struct ct_cross_entropy_options {
    ct_reduction reduction;
    double label_smoothing;
    int64_t ignore_index;
    bool unchecked_targets;
} ct_cross_entropy_options;

/* options NULL: mean reduction, no smoothing, ignore_index -100. */
CT_API ct_tensor *ct_cross_entropy(const ct_tensor *logits, const ct_tensor *target,
                                   const ct_cross_entropy_options *options);
CT_API ct_tensor *ct_mse_loss(const ct_tensor *input, const ct_tensor *target,
                              ct_reduction reduction);

#ifdef __cplusplus
}
#endif
#endif

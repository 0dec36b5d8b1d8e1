/* Helpers shared by the nn ops (softmax, losses, norms, dropout, embedding, index_add):
 * dtype checks, bringing an operand into the form the nn kernels take, saving an output
 * for backward without a reference cycle, and naming the op in a kernel's message.
 *
 * The nn ops compute their forward with grad mode off (their inner ops record nothing) and
 * then record one node of their own. */
#ifndef CT_NN_IMPL_H
#define CT_NN_IMPL_H

#include "autograd/tape_impl.h"
#include "backend/norm_args_impl.h"
#include "ops/op_impl.h"

/* False with CT_ERR_DTYPE naming op and the argument when t is not floating. */
bool ct__nn_check_float(const char *op, const ct_tensor *t, int position);

/* False with CT_ERR_DTYPE unless t is CT_I32 or CT_I64 (what names it: "target"). */
bool ct__nn_check_index(const char *op, const ct_tensor *t, const char *what);

/* t on device, in dtype and contiguous: a new reference (t itself when it already is). */
ct_tensor *ct__nn_operand(const ct_tensor *t, ct_dtype dtype, ct_device device, const char *op);

/* The product of shape[from..to). */
int64_t ct__nn_numel(const int64_t *shape, int from, int to);

/* A view of t's storage with no history: what a node saves of its own result, which would
 * otherwise hold the node that holds it. */
ct_tensor *ct__nn_alias(const ct_tensor *t);

/* Whether ct_conv2d(x, weight, NULL, options) would reach its device's kernels channels-last
 * (the backend's conv2d_channels_last; the CPU's oneDNN NHWC kernels), were x channels-last:
 * for models that choose their activations' layout. False, the thread's last error left as it
 * was, for arguments ct_conv2d would refuse. */
bool ct__conv2d_channels_last_native(const ct_tensor *x, const ct_tensor *weight,
                                     const ct_conv2d_options *options);

/* Re-record the last error with "op: " in front (for kernel messages that lack it);
 * returns the status. */
ct_status ct__nn_prefix_error(const char *op);

/* dst[..., index[k], ...] += src[..., k, ...] along axis, in place (ct_index_add's work on
 * a tensor the caller made: same device and dtype, index 1-D CT_I32 or CT_I64 on that
 * device, shapes checked by the caller). */
ct_status ct__index_add_into(ct_tensor *dst, int axis, const ct_tensor *index, const ct_tensor *src,
                             const char *op);

/* ct_layer_norm(x + residual, ...) and the sum x + residual (a new tensor in *sum, recorded as
 * ct_add's result), with the values and gradients of those two ops; in one pass when x and
 * residual have one shape and dtype (float32 or float64), else through the two ops. NULL
 * (and *sum NULL) on failure. */
ct_tensor *ct__add_layer_norm(const ct_tensor *x, const ct_tensor *residual, int normalized_ndim,
                              const ct_tensor *weight, const ct_tensor *bias, double eps,
                              ct_tensor **sum);

/* Causal self-attention of a fused projection qkv (B, T, 3 * width), each row q | k | v and
 * each of those `heads` heads of width / heads: the (B, T, width) result with the heads
 * merged, as ct_scaled_dot_product_attention(q, k, v, NULL, true, dropout_p, scale) on the
 * split heads, transposed back (the same dropout draws, values and gradients). One node; on
 * the CPU no copy of q, k, v or the output (ops/attention_qkv.c). */
ct_tensor *ct__qkv_attention(const ct_tensor *qkv, int64_t heads, double dropout_p, double scale);

#endif

/* Kernel arguments of the nn family: softmax, cross-entropy, batch and layer
 * normalisation, dropout, and index_add / scatter_add (the kernel table's block in
 * backend_impl.h names these structs).
 *
 * The op layer hands these kernels contiguous operands in one floating dtype (`dtype`),
 * except where a field says otherwise, so kernels index them as flat arrays. Per-row or
 * per-channel statistics the backward reads (mean, inverse standard deviation, counts)
 * are float64 arrays on the device, whatever the data's dtype. */
#ifndef CT_NORM_ARGS_IMPL_H
#define CT_NORM_ARGS_IMPL_H

#include "backend/backend_impl.h"

/* Softmax along the middle axis of a (outer, n, inner) array. Forward: out = softmax(in),
 * or log_softmax(in) when `log`. Backward: in is the forward's output y, grad is dL/dy and
 * out receives dL/dx (softmax: y * (g - sum(g * y)); log: g - exp(y) * sum(g)). */
struct ct__softmax_args {
    ct_dtype dtype;
    int64_t outer, n, inner;
    bool log;
    const char *in;
    const char *grad; /* backward only */
    char *out;
};

/* Cross-entropy of logits (n, c) against class indices target (n) of target_dtype (CT_I32
 * or CT_I64), with a fused log-softmax. Row i's loss is
 *     (1 - label_smoothing) * (lse_i - x[i, t_i]) + label_smoothing * (lse_i - mean_c x[i, c])
 * with lse_i = log(sum_c exp(x[i, c])), and 0 for a row whose target equals ignore_index.
 * A target outside [0, c) (and not ignore_index) is CT_ERR_INVALID_ARG naming its value.
 * Forward: out gets the n row losses (CT_REDUCTION_NONE) or their sum, or their sum divided
 * by the number of rows not ignored (CT_REDUCTION_MEAN; NaN when every row is ignored);
 * count (one float64) gets that number of rows, and lse (n float64) each row's
 * log-sum-exp (rows not ignored). Backward: grad is dL/dout (one element, grad_stride 0, for
 * mean and sum; n elements, grad_stride 1, for none), count and lse are the forward's, and
 * out (n, c) receives dL/dlogits = (exp(x - lse) - smoothed one-hot) * scale_i. */
struct ct__cross_entropy_args {
    ct_dtype dtype, target_dtype;
    int64_t n, c;
    const char *logits, *target;
    int reduction; /* a ct_reduction */
    double label_smoothing;
    int64_t ignore_index;
    char *out;
    char *count;
    char *lse;
    const char *grad; /* backward only */
    int64_t grad_stride;
    /* Forward: whether a device reads its check of the targets back (CHECKED in
     * kernel_slots.h); false: it runs queued, and a target out of range gives its row an
     * unspecified loss without a fault. The CPU checks always. */
    bool check_targets;
};

/* Batch normalisation of x (n, c, inner) per channel. Element (i, ch, j) of x, y, grad_out
 * and grad_x (one layout for all four) lies at i * stride_n + ch * stride_c + j * stride_inner
 * elements: (c * inner, inner, 1) for NCHW, (inner * c, 1, c) for channels-last (NHWC, the
 * spatial axes flattened into inner). The CUDA kernels take any such strides; the CPU's take
 * the NCHW ones. weight and bias (c) are in `dtype`
 * or NULL (1 and 0). Training: the batch's mean and biased variance normalise, and the
 * running statistics (when not NULL; element strides given, any floating dtype) become
 * (1 - momentum) * running + momentum * batch, with the unbiased variance. Evaluation: the
 * running statistics normalise. Forward writes y and the per-channel mean and invstd
 * (float64, c) it used. Backward reads x, mean, invstd, grad_out and writes grad_x (when not
 * NULL) and the per-channel grad_weight and grad_bias (`dtype`, c; when not NULL).
 * With `relu` the ReLU that follows is fused: the forward writes y = max(bn(x), 0) (NaN
 * stays NaN), and the backward reads that y (the forward's output) and takes grad_out only
 * where y > 0 (0 elsewhere), before the batch norm's backward. */
struct ct__batch_norm_args {
    ct_dtype dtype;
    int64_t n, c, inner;
    /* x, y, grad_out and grad_x hold element (b, ch, j) at (b * inner + j) * c + ch (a
     * channels-last image: channels innermost) rather than at (b * c + ch) * inner + j; only
     * where the backend's batch_norm_channels_last said yes. */
    bool channels_last;
    /* The same positions as element strides of (b, ch, j), for kernels that index by them. */
    int64_t stride_n, stride_c, stride_inner;
    const char *x;
    const char *weight, *bias;
    bool training;
    bool relu;
    double momentum, eps;
    char *running_mean, *running_var;
    ct_dtype running_mean_dtype, running_var_dtype;
    int64_t running_mean_stride, running_var_stride;
    char *mean, *invstd;
    char *y;              /* forward: written; backward with relu: read */
    const char *grad_out; /* backward only, and the gradients below */
    char *grad_x, *grad_weight, *grad_bias;
};

/* Layer normalisation of each of `rows` rows of n elements. weight and bias (n) are in
 * `dtype` or NULL. Forward writes y and the per-row mean and invstd (float64, rows); with a
 * residual (forward only; rows * n elements in `dtype`, else NULL) it normalises the sum
 * x + residual instead, rounded to `dtype` as ct_add rounds it, and writes that sum to `sum`.
 * Backward reads x (the sum, when the forward had a residual), mean, invstd, grad_out and
 * writes grad_x, grad_weight and grad_bias (each when not NULL; the last two sum over
 * rows). */
struct ct__layer_norm_args {
    ct_dtype dtype;
    int64_t rows, n;
    const char *x;
    const char *residual; /* forward only: NULL, or normalise x + residual ... */
    char *sum;            /* ... and write it here */
    const char *weight, *bias;
    double eps;
    char *mean, *invstd;
    char *y;
    const char *grad_out; /* backward only, and the gradients below */
    char *grad_x, *grad_weight, *grad_bias;
};

/* Dropout of numel elements: element i draws word i % 4 of the Philox block at counter
 * offset + i / 4 of stream seed (random.h's layout) as u = word * 2^-32; it is kept when
 * u >= p. mask[i] = kept ? scale : 0 and y[i] = x[i] * scale or 0. */
struct ct__dropout_args {
    ct_dtype dtype;
    int64_t numel;
    const char *x;
    char *y, *mask;
    double p, scale;
    uint64_t seed, offset;
};

/* dst[..., index[...], ...] += src[...] along one axis of dst, for ct_index_add and
 * ct_scatter_add: the iteration runs over the index's positions, split into the indexed
 * axis (k positions) and the rest. `rest` holds the operands dst (its strides on the other
 * axes), index and src over the other axes; index_stride and src_stride are their strides
 * along the indexed axis, and a position reads index value v (negative counts from
 * dst_axis_size) and adds src to dst at v * dst_axis_stride. dst, src share a dtype (any);
 * index is CT_I32 or CT_I64. Repeated indices accumulate. An index out of range is
 * CT_ERR_INVALID_ARG with the value (dst is then partly updated: the op discards it).
 * With `assign` (ct_index_copy) src is stored instead of added, and of repeated indices the
 * last one's value stays (the one furthest along the indexed axis), whatever the scheduling.
 * With `deterministic` (ct_are_deterministic_algorithms_enabled), the additions into each dst
 * element happen in the order of the indexed axis, whatever the scheduling (no atomics); a
 * kernel that always adds so (the CPU's) ignores it. */
struct ct__index_add_args {
    ct__ew_args rest;
    int64_t k;
    int64_t index_stride, src_stride;
    int64_t dst_axis_stride, dst_axis_size;
    bool assign;
    bool deterministic;
};

/* Scaled dot-product attention of `batch` independent problems (the leading axes of the
 * operands, flattened): q (batch, tq, d), k (batch, tk, d), v (batch, tk, dv) and out
 * (batch, tq, dv), contiguous, in `dtype`. Row i of problem b attends to key j with score
 * s_ij = scale * q_i . k_j, plus the mask's element when mask_dtype is floating; key j is
 * hidden from row i when the bool mask's element is false, or when `causal` and j > i
 * (PyTorch's top-left alignment). The mask's element (b, i, j) lies at element
 * offset(b) + i * mask_stride_q + j * mask_stride_k of `mask` (NULL: no mask), offset(b)
 * the dot product of b's C-order position in mask_batch_shape (mask_batch_ndim axes, whose
 * product is batch) with mask_batch_strides: a broadcast mask needs no copy. A float mask
 * is in `dtype`; mask_dtype is CT_BOOL or `dtype`.
 * out_i = sum_j z_ij p_ij v_j with p_i = softmax_j(s_i) over the keys the row sees; a row
 * that sees none (every score -inf) is 0, as PyTorch's current kernels give. Dropout
 * (dropout_p > 0): z_ij = 0 or 1 / (1 - dropout_p), element e = (b * tq + i) * tk + j
 * drawing word e % 4 of the Philox block at counter offset + e / 4 of stream seed (dropout's
 * layout) and kept when its uniform u >= dropout_p; z_ij = 1 without dropout.
 * Forward writes out and lse (float64, batch x tq): log sum_j exp(s_ij), -inf for a row that
 * sees no key. Backward reads q, k, v, out, lse and grad_out (batch, tq, dv) and writes
 * grad_q, grad_k and grad_v (each the shape of its operand, none NULL), recomputing the
 * probabilities from lse; its sums run in an order fixed by the shapes alone (no atomics),
 * so two runs give the same bits. Scratch, where a kernel needs it, is its own: linear in
 * tq and tk, never tq x tk.
 * Layouts: row i of problem b = o * heads + h (heads >= 1) of q lies at element
 * o * q_at.outer + h * q_at.head + i * q_at.row of q, and likewise for k, v and out with
 * their own layouts; grad_q, grad_k and grad_v are laid out as q, k and v, grad_out as out.
 * Contiguous operands (what attention_args of ops/attention.c gives) have heads 1,
 * outer = rows * width, head 0 and row = width. Only the CPU kernels take other layouts
 * (q, k and v read in place from one projection, out written in merged heads:
 * ops/attention_qkv.c); the op gives every other backend contiguous operands. */
typedef struct ct__att_layout {
    int64_t outer, head, row;
} ct__att_layout;

struct ct__attention_args {
    ct_dtype dtype;
    int64_t batch, tq, tk, d, dv;
    double scale;
    bool causal;
    const char *mask;
    ct_dtype mask_dtype;
    int mask_batch_ndim;
    int64_t mask_batch_shape[CT_MAX_DIMS], mask_batch_strides[CT_MAX_DIMS];
    int64_t mask_stride_q, mask_stride_k;
    double dropout_p;
    uint64_t seed, offset;
    const char *q, *k, *v;
    char *out;
    char *lse;
    const char *grad_out; /* backward only, and the gradients below (out and lse as read) */
    char *grad_q, *grad_k, *grad_v;
    int64_t heads;
    ct__att_layout q_at, k_at, v_at, out_at;
};

#endif

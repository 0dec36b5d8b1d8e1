/* Losses: ct_cross_entropy (one fused kernel forward, one backward, on each device) and
 * ct_mse_loss (composed of elementwise ops and a reduction), with their backward. */
#include "ops/nn_impl.h"
#include "ops/autocast_impl.h"

static const ct_cross_entropy_options default_options = {CT_REDUCTION_MEAN, 0.0, -100, false};

static bool check_reduction(const char *op, ct_reduction reduction) {
    if (reduction == CT_REDUCTION_MEAN || reduction == CT_REDUCTION_SUM ||
        reduction == CT_REDUCTION_NONE)
        return true;
    ct__error(CT_ERR_INVALID_ARG,
              "%s: reduction %d is not a ct_reduction; use CT_REDUCTION_MEAN, CT_REDUCTION_SUM "
              "or CT_REDUCTION_NONE",
              op, (int)reduction);
    return false;
}

static bool check_cross_entropy(const char *op, const ct_tensor *logits, const ct_tensor *target,
                                const ct_cross_entropy_options *o) {
    if (!ct__nn_check_float(op, logits, 1) || !ct__nn_check_index(op, target, "target") ||
        !check_reduction(op, o->reduction))
        return false;
    if (logits->ndim != 2)
        return ct__error(CT_ERR_SHAPE,
                         "%s: logits have rank %d; they must be (N, C), a batch of rows of class "
                         "scores (reshape a single row to (1, C))",
                         op, logits->ndim),
               false;
    if (target->ndim != 1 || target->shape[0] != logits->shape[0])
        return ct__error(CT_ERR_SHAPE,
                         "%s: target must be (N,) = (%lld,), one class index per row of logits, "
                         "but it has rank %d and %lld elements",
                         op, (long long)logits->shape[0], target->ndim, (long long)target->numel),
               false;
    if (!(o->label_smoothing >= 0.0 && o->label_smoothing < 1.0))
        return ct__error(CT_ERR_INVALID_ARG, "%s: label_smoothing is %g; it must be in [0, 1)", op,
                         o->label_smoothing),
               false;
    return true;
}

/* Kernel arguments over contiguous logits and target; stats: the count of rows not ignored
 * (one float64) and each row's log-sum-exp (n float64). */
static ct__cross_entropy_args cross_entropy_args(const ct_tensor *logits, const ct_tensor *target,
                                                 const ct_cross_entropy_options *o,
                                                 ct_tensor *const *stats) {
    return (ct__cross_entropy_args){
        .dtype = logits->dtype,
        .target_dtype = target->dtype,
        .n = logits->shape[0],
        .c = logits->shape[1],
        .logits = ct__data(logits),
        .target = ct__data(target),
        .reduction = (int)o->reduction,
        .label_smoothing = o->label_smoothing,
        .ignore_index = o->ignore_index,
        .count = ct__data(stats[0]),
        .lse = ct__data(stats[1]),
    };
}

static ct_status cross_entropy_backward(ct__node *node, const ct_tensor *grad_out,
                                        ct_tensor **grad_in) {
    const ct_tensor *logits = node->saved[0], *target = node->saved[1];
    ct_cross_entropy_options o = {(ct_reduction)node->ints[0], node->scalars[0], node->ints[1],
                                  false};
    ct_device device = logits->storage->device;
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return ct_last_status();
    ct_tensor *g = ct__nn_operand(grad_out, logits->dtype, device, node->name);
    ct_tensor *out = g ? ct__tensor_new(device, logits->dtype, 2, logits->shape) : NULL;
    if (!out) {
        ct_release(g);
        return ct_last_status();
    }
    ct__cross_entropy_args args = cross_entropy_args(logits, target, &o, &node->saved[2]);
    args.out = ct__data(out);
    args.grad = ct__data(g);
    args.grad_stride = o.reduction == CT_REDUCTION_NONE ? 1 : 0;
    ct_status status = out->numel ? k->cross_entropy_backward(physical, &args) : CT_OK;
    ct_release(g);
    if (status != CT_OK) {
        ct_release(out);
        return status;
    }
    grad_in[0] = out;
    return CT_OK;
}

/* The forward: writes the loss and, into saved[0..3], the contiguous logits and target, the
 * count of rows not ignored and the rows' log-sum-exp (the backward's inputs). */
static ct_tensor *cross_entropy_forward(const char *op, ct_device device, const ct_tensor *logits,
                                        const ct_tensor *target, const ct_cross_entropy_options *o,
                                        ct_tensor **saved) {
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return NULL;
    saved[0] = ct__nn_operand(logits, logits->dtype, device, op);
    saved[1] = saved[0] ? ct__nn_operand(target, target->dtype, device, op) : NULL;
    saved[2] = saved[1] ? ct__tensor_new(device, CT_F64, 0, NULL) : NULL;
    saved[3] = saved[2] ? ct__tensor_new(device, CT_F64, 1, logits->shape) : NULL;
    bool per_row = o->reduction == CT_REDUCTION_NONE;
    ct_tensor *out =
        saved[3] ? ct__tensor_new(device, logits->dtype, per_row ? 1 : 0, logits->shape) : NULL;
    if (!out) return NULL;
    ct__cross_entropy_args args = cross_entropy_args(saved[0], saved[1], o, &saved[2]);
    args.out = ct__data(out);
    args.check_targets = !o->unchecked_targets;
    if ((args.check_targets &&
         ct__kernel_readback(device, CT_SLOT_cross_entropy,
                             "ct_cross_entropy (its check of the targets)") != CT_OK) ||
        k->cross_entropy(physical, &args) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

static ct_tensor *cross_entropy(const ct_tensor *logits, const ct_tensor *target,
                                const ct_cross_entropy_options *options) {
    const char *op = "ct_cross_entropy";
    const ct_tensor *args[2] = {logits, target};
    const ct_cross_entropy_options *o = options ? options : &default_options;
    ct_device device;
    if (!ct__check_args(op, 2, args, &device)) return NULL;
    if (!check_cross_entropy(op, logits, target, o)) return NULL;
    ct_tensor *saved[4] = {NULL, NULL, NULL, NULL};
    ct_no_grad_push();
    ct_tensor *loss = cross_entropy_forward(op, device, logits, target, o, saved);
    ct_no_grad_pop();
    if (loss && ct__grad_needed(2, args)) {
        ct__node *node = ct__node_new(op, cross_entropy_backward, 2, args);
        if (node) {
            for (int i = 0; i < 4; i++) ct__node_save(node, i, saved[i]);
            node->ints[0] = o->reduction;
            node->ints[1] = o->ignore_index;
            node->scalars[0] = o->label_smoothing;
        }
        loss = ct__record(loss, node);
    }
    for (int i = 0; i < 4; i++) ct_release(saved[i]);
    return loss;
}

/* d(loss)/d(input) = g * 2 * (input - target), divided by the element count for the mean;
 * the target's gradient is its negative. Shapes broadcast; the engine sums them back. */
static ct_status mse_backward(ct__node *node, const ct_tensor *grad_out, ct_tensor **grad_in) {
    const ct_tensor *diff = node->saved[0];
    double factor = 2.0;
    if (node->ints[0] == CT_REDUCTION_MEAN) factor /= (double)diff->numel;
    ct_tensor *scaled = ct_mul_scalar(diff, factor);
    ct_tensor *grad = scaled ? ct_mul(scaled, grad_out) : NULL;
    ct_release(scaled);
    if (!grad) return ct_last_status();
    if (node->inputs[1]) {
        grad_in[1] = ct_neg(grad);
        if (!grad_in[1]) {
            ct_release(grad);
            return ct_last_status();
        }
    }
    grad_in[0] = grad;
    return CT_OK;
}

static ct_tensor *mse_forward(const ct_tensor *input, const ct_tensor *target,
                              ct_reduction reduction, ct_tensor **diff) {
    *diff = ct_sub(input, target);
    ct_tensor *square = *diff ? ct_mul(*diff, *diff) : NULL;
    if (!square || reduction == CT_REDUCTION_NONE) return square;
    ct_tensor *loss = reduction == CT_REDUCTION_SUM ? ct_sum(square, 0, NULL, false)
                                                    : ct_mean(square, 0, NULL, false);
    ct_release(square);
    return loss;
}

static ct_tensor *mse_loss(const ct_tensor *input, const ct_tensor *target,
                           ct_reduction reduction) {
    const char *op = "ct_mse_loss";
    const ct_tensor *args[2] = {input, target};
    ct_device device;
    if (!ct__check_args(op, 2, args, &device)) return NULL;
    if (!ct__nn_check_float(op, input, 1) || !ct__nn_check_float(op, target, 2) ||
        !check_reduction(op, reduction))
        return NULL;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    if (ct__broadcast_shapes(op, 2, args, &ndim, shape) != CT_OK) return NULL;
    ct_tensor *diff = NULL;
    ct_no_grad_push();
    ct_tensor *loss = mse_forward(input, target, reduction, &diff);
    ct_no_grad_pop();
    if (loss && ct__grad_needed(2, args)) {
        ct__node *node = ct__node_new(op, mse_backward, 2, args);
        if (node) {
            ct__node_save(node, 0, diff);
            node->ints[0] = reduction;
        }
        loss = ct__record(loss, node);
    }
    ct_release(diff);
    return loss;
}

ct_tensor *ct_cross_entropy(const ct_tensor *logits, const ct_tensor *target,
                            const ct_cross_entropy_options *options) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_CROSS_ENTROPY, 2, (const ct_tensor **[]){&logits, &target}))
        return NULL;
    ct_tensor *out = cross_entropy(logits, target, options);
    ct__autocast_end(&ac);
    return out;
}

ct_tensor *ct_mse_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction reduction) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_MSE_LOSS, 2, (const ct_tensor **[]){&input, &target}))
        return NULL;
    ct_tensor *out = mse_loss(input, target, reduction);
    ct__autocast_end(&ac);
    return out;
}

/* ctensor — optimisers (torch.optim): SGD, Adam and AdamW, learning-rate schedules, and
 * gradient-norm clipping (torch.nn.utils.clip_grad_norm_).
 *
 * An optimiser holds references to its parameters (floating or complex leaf tensors,
 * contiguous, f32, f64, complex64 or complex128; they may live on different devices) and
 * their state. A complex parameter is updated as its real and imaginary parts, as PyTorch's
 * optimisers do (torch.view_as_real): its state is complex like it, and Adam's second moment
 * holds each part's square. ct_optimizer_step reads each parameter's gradient (what
 * ct_backward accumulated; a parameter without one is skipped, as in PyTorch) and updates the
 * parameters in place with PyTorch's formulas (the single-tensor path, maximize=False): all
 * parameters of a device in one fused kernel. Optimisers are not thread-safe: use one from
 * one thread at a time.
 *
 *     ct_optimizer *opt = ct_adamw(n, params, NULL);          // PyTorch's AdamW defaults
 *     for (...) {
 *         ct_optimizer_zero_grad(opt);
 *         ... ct_backward(loss) ...
 *         ct_clip_grad_norm(n, params, 1.0, 2.0, NULL);
 *         ct_optimizer_step(opt);
 *     }
 *     ct_optimizer_free(opt); */
#ifndef CTENSOR_OPTIM_H
#define CTENSOR_OPTIM_H

#include <stdbool.h>

#include "ctensor/export.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_optimizer ct_optimizer;

/* torch.optim.SGD: lr is required (PyTorch has no default); the other fields default to 0
 * and false, so `&(ct_sgd_options){.lr = 0.1, .momentum = 0.9}` reads as PyTorch's call.
 * Nesterov needs momentum > 0 and dampening 0. */
typedef struct ct_sgd_options {
    double lr, momentum, dampening, weight_decay;
    bool nesterov;
} ct_sgd_options;

/* torch.optim.Adam and AdamW. Every field is used as given (a zero is a zero): start from
 * ct_adam_defaults() or ct_adamw_defaults() and change what differs, or pass NULL options. */
typedef struct ct_adam_options {
    double lr, beta1, beta2, eps, weight_decay;
    bool amsgrad;
} ct_adam_options;

/* PyTorch's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, amsgrad false, weight_decay 0
 * for Adam and 1e-2 for AdamW. */
CT_API ct_adam_options ct_adam_defaults(void);
CT_API ct_adam_options ct_adamw_defaults(void);

/* Make an optimiser over params[0 .. n-1] (n >= 1, no parameter twice). It takes its own
 * reference to each parameter. options NULL: PyTorch's defaults (Adam, AdamW); SGD requires
 * options. NULL with the error set: CT_ERR_INVALID_ARG (bad hyperparameter, as PyTorch's
 * checks; a parameter that is not a contiguous leaf), CT_ERR_DTYPE (a parameter neither
 * floating nor complex), CT_ERR_UNSUPPORTED (f16 or bf16 parameters: keep f32 master weights). */
CT_API ct_optimizer *ct_sgd(int n, ct_tensor *const *params, const ct_sgd_options *options);
CT_API ct_optimizer *ct_adam(int n, ct_tensor *const *params, const ct_adam_options *options);
/* Adam with decoupled weight decay: p *= 1 - lr * weight_decay before the Adam update. */
CT_API ct_optimizer *ct_adamw(int n, ct_tensor *const *params, const ct_adam_options *options);

/* optimizer.step(): update every parameter that has a gradient. A gradient must have its
 * parameter's shape and device (CT_ERR_SHAPE, CT_ERR_DEVICE_MISMATCH; nothing is updated
 * then); one of another floating dtype or layout is converted first. Adam's step count is
 * per parameter and counts only the steps that parameter had a gradient. */
CT_API ct_status ct_optimizer_step(ct_optimizer *opt);
/* optimizer.zero_grad(): drop every parameter's gradient (set_to_none=True). */
CT_API ct_status ct_optimizer_zero_grad(ct_optimizer *opt);
/* Drops the optimiser's references and state; NULL is ignored. */
CT_API void ct_optimizer_free(ct_optimizer *opt);

/* The weight decay of parameter index (0 <= index < n) alone, where it differs from the
 * options' (finite, >= 0): PyTorch's parameter groups, as in
 *   SGD([{"params": decay}, {"params": no_decay, "weight_decay": 0}], weight_decay=5e-4)
 * to keep batch norm's weights and the biases free of decay (nanoGPT's AdamW groups decay
 * only the matrices and embeddings). A step updates the parameters of one device and one
 * weight decay in one fused kernel. get returns NaN for a NULL optimiser or an index out of
 * range. */
CT_API ct_status ct_optimizer_set_weight_decay(ct_optimizer *opt, int index, double weight_decay);
CT_API double ct_optimizer_get_weight_decay(const ct_optimizer *opt, int index);

/* param_groups[0]["lr"]. get_lr returns NaN for NULL; set_lr takes lr >= 0. */
CT_API double ct_optimizer_get_lr(const ct_optimizer *opt);
CT_API ct_status ct_optimizer_set_lr(ct_optimizer *opt, double lr);

/* param_groups[0]["momentum"] (SGD) or param_groups[0]["betas"][0] (Adam, AdamW), which a
 * one-cycle schedule cycles. get returns NaN for NULL. set: SGD takes a finite momentum >= 0
 * (from 0 to more, the momentum buffers start at the next step, as PyTorch's; while it is 0
 * they are kept, unused and not in the state), Adam a beta1 in [0, 1); CT_ERR_INVALID_ARG
 * otherwise, nothing changed. */
CT_API double ct_optimizer_get_momentum(const ct_optimizer *opt);
CT_API ct_status ct_optimizer_set_momentum(ct_optimizer *opt, double momentum);

/* The optimiser's state, named as PyTorch's optimizer.state_dict()["state"] flattened with
 * dots: "state.<parameter index>.<key>", keys "step" (a 0-d f32 CPU tensor), "exp_avg",
 * "exp_avg_sq", "max_exp_avg_sq" (Adam, AdamW; amsgrad) and "momentum_buffer" (SGD with
 * momentum), each like its parameter. Only parameters that have taken a step have state.
 * state_at gives entry i (0 <= i < count): its name (valid until the next state_at call
 * on this thread) and a new reference to the tensor (the state itself, not a copy; the step
 * is a new tensor). */
CT_API int ct_optimizer_state_count(const ct_optimizer *opt);
CT_API ct_status ct_optimizer_state_at(const ct_optimizer *opt, int i, const char **name,
                                       ct_tensor **tensor);
/* Set one state entry from value (any device; copied to the parameter's). CT_ERR_FORMAT,
 * with nothing changed, when name is not an entry this optimiser has (index out of range,
 * or a key of another optimiser or setting) or value's shape or dtype is not the entry's
 * (the parameter's; f32 0-d for "step"). An entry not loaded starts as on a first step. */
CT_API ct_status ct_optimizer_load_state(ct_optimizer *opt, const char *name,
                                         const ct_tensor *value);

/* Learning-rate schedules (torch.optim.lr_scheduler). A schedule sets its optimiser's lr
 * from the lr the optimiser had when the schedule was made (base_lr) and its epoch t, which
 * ct_lr_schedule_advance (scheduler.step()) increments; making one sets the lr of t = 0.
 * Values are PyTorch's closed forms:
 *   step:   base_lr * gamma^floor(t / step_size)                                   (StepLR)
 *   cosine: eta_min + (base_lr - eta_min) * (1 + cos(pi * t / t_max)) / 2 (CosineAnnealingLR)
 * and the one-cycle schedule's phases (below; it takes no base_lr and also sets the
 * momentum). A schedule does not own its optimiser and must be freed before it. An lr set
 * with ct_optimizer_set_lr in between is overwritten at the next advance. */
typedef struct ct_lr_schedule ct_lr_schedule;

/* torch.optim.lr_scheduler.OneCycleLR, stepped once per batch. Fields left 0 take PyTorch's
 * defaults: pct_start 0.3, div_factor 25, final_div_factor 1e4, base_momentum 0.85,
 * max_momentum 0.95; cosine annealing (linear: anneal_strategy='linear'), two phases
 * (three_phase), momentum cycled (fixed_momentum: cycle_momentum=False). max_lr > 0 and
 * total_steps >= 1 are required. The lr starts at max_lr / div_factor, rises to max_lr over
 * the first pct_start of the steps and falls to max_lr / div_factor / final_div_factor at
 * step total_steps - 1; the momentum (SGD's momentum, Adam's beta1) runs the other way, from
 * max_momentum to base_momentum and back, and is set on the optimiser with the lr. The
 * optimiser's own lr is not used. Advancing past total_steps is CT_ERR_STATE, as PyTorch's
 * ValueError. */
typedef struct ct_onecycle_options {
    double max_lr;
    int total_steps;
    double pct_start, div_factor, final_div_factor, base_momentum, max_momentum;
    bool linear, three_phase, fixed_momentum;
} ct_onecycle_options;

/* step_size >= 1; t_max >= 1. NULL with CT_ERR_INVALID_ARG otherwise. */
CT_API ct_lr_schedule *ct_lr_schedule_step(ct_optimizer *opt, int step_size, double gamma);
CT_API ct_lr_schedule *ct_lr_schedule_cosine(ct_optimizer *opt, int t_max, double eta_min);
CT_API ct_lr_schedule *ct_lr_schedule_onecycle(ct_optimizer *opt,
                                               const ct_onecycle_options *options);
/* Precede the schedule with a linear warm-up of warmup_steps >= 1 epochs from
 * base_lr * start_factor (0 < start_factor <= 1): PyTorch's
 *   SequentialLR([LinearLR(start_factor, 1.0, total_iters=warmup_steps), schedule],
 *                milestones=[warmup_steps])
 * so lr = base_lr * (start_factor + (1 - start_factor) * t / warmup_steps) for
 * t < warmup_steps, then the schedule's value at t - warmup_steps. Call it before the first
 * advance (CT_ERR_STATE after); it sets the lr of t = 0. A one-cycle schedule, which warms
 * up by itself, takes none (CT_ERR_INVALID_ARG). */
CT_API ct_status ct_lr_schedule_warmup(ct_lr_schedule *s, int warmup_steps, double start_factor);
/* scheduler.step(): t += 1 and set the optimiser's lr. */
CT_API ct_status ct_lr_schedule_advance(ct_lr_schedule *s);
/* The schedule's epoch t (scheduler.last_epoch); -1 for NULL. */
CT_API int ct_lr_schedule_epoch(const ct_lr_schedule *s);
CT_API void ct_lr_schedule_free(ct_lr_schedule *s);

/* torch.nn.utils.clip_grad_norm_: the norm (norm_type 2, any p > 0, or INFINITY for the
 * largest magnitude) of all the parameters' gradients together (parameters without a
 * gradient are skipped; a complex gradient's elements count by their magnitudes, as
 * PyTorch's), then every gradient *= min(1, max_norm / (norm + 1e-6)), in place.
 * A non-finite norm is no error (error_if_nonfinite=False): the same rule applies, so a NaN
 * norm makes every gradient NaN, as in PyTorch.
 * total_norm (may be NULL) receives the norm before clipping. One reduction pass per device
 * and one wait for its result. */
CT_API ct_status ct_clip_grad_norm(int n, ct_tensor *const *params, double max_norm,
                                   double norm_type, double *total_norm);

#ifdef __cplusplus
}
#endif
#endif

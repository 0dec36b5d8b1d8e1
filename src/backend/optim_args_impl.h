/* Arguments of the optimiser kernels (the optimiser block of ct__kernel_table in backend_impl.h).
 *
 * Optimiser kernels work on lists of contiguous tensors of one device, so that a step updates
 * every parameter of a device in one pass (one OpenMP region on the CPU, one multi-tensor
 * launch on CUDA) rather than a chain of small ops per parameter. The lists live in host
 * memory; a device backend copies what it needs. */
#ifndef CT_OPTIM_ARGS_IMPL_H
#define CT_OPTIM_ARGS_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/dtype.h"

typedef enum ct__optim_kind { CT_OPTIM_SGD, CT_OPTIM_ADAM, CT_OPTIM_ADAMW } ct__optim_kind;

/* One parameter's update: its data, gradient and state, all contiguous, numel elements of
 * dtype (f32 or f64). */
typedef struct ct__optim_tensor {
    char *param; /* updated in place */
    char *grad;
    /* SGD: [0] the momentum buffer (when momentum != 0). Adam and AdamW: [0] exp_avg,
     * [1] exp_avg_sq, [2] max_exp_avg_sq (amsgrad). Unused entries are NULL. */
    char *state[3];
    int64_t numel;
    ct_dtype dtype;
    /* SGD: the momentum buffer is new this step and takes the gradient (PyTorch's
     * torch.clone(grad) on a first step), with no dampening. */
    bool fresh;
    /* Adam: lr / (1 - beta1^step) and sqrt(1 - beta2^step) for this parameter's step. */
    double step_size;
    double bias_correction2_sqrt;
} ct__optim_tensor;

typedef struct ct__optim_args {
    ct__optim_kind kind;
    int count;
    const ct__optim_tensor *tensors; /* count entries, host memory */
    int64_t total;                   /* the sum of their numels */
    double lr, momentum, dampening, weight_decay;
    double beta1, beta2, eps;
    bool nesterov, amsgrad;
} ct__optim_args;

/* A list of contiguous floating tensors (any floating dtype): the gradients that gradient
 * clipping measures and scales. */
typedef struct ct__list_tensor {
    char *data;
    int64_t numel;
    ct_dtype dtype;
} ct__list_tensor;

typedef struct ct__list_args {
    int count;
    const ct__list_tensor *tensors; /* count entries, host memory */
    int64_t total;                  /* the sum of their numels */
} ct__list_args;

#endif

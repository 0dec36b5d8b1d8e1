/* The optimiser struct, shared by the files of src/optim: construction and the step
 * (optimizer.c), the state's names, export and import (optim_state.c), and the schedules
 * (lr_schedule.c). */
#ifndef CT_OPTIM_IMPL_H
#define CT_OPTIM_IMPL_H

#include <stdbool.h>

#include "backend/optim_args_impl.h"
#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ctensor/optim.h"

/* Buffers per parameter: SGD [0] momentum_buffer; Adam [0] exp_avg, [1] exp_avg_sq,
 * [2] max_exp_avg_sq. */
#define CT_OPTIM_BUFFERS 3

typedef struct ct__param_state {
    /* Unscoped references (dropped with ct__tensor_drop), NULL until the first step or a
     * load; each like its parameter (shape, dtype, device), contiguous. */
    ct_tensor *buf[CT_OPTIM_BUFFERS];
    double step;   /* Adam: the steps this parameter has taken */
    bool has_step; /* Adam: the "step" entry exists */
} ct__param_state;

struct ct_optimizer {
    const char *name; /* the constructor, for messages: "ct_adam" */
    int n;
    ct_tensor **params; /* unscoped references */
    ct__param_state *state;
    double *weight_decay; /* per parameter (a param group of its own); hyper's by default */
    /* The kind and hyperparameters (the list fields are filled per step). */
    ct__optim_args hyper;
};

/* The buffers a parameter of this optimiser has once it has stepped: a mask of
 * (1 << slot). */
unsigned ct__optim_buffer_mask(const ct_optimizer *opt);

#endif

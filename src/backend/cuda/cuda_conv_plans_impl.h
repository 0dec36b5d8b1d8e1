/* The convolution plans the CUDA plugin has chosen, remembered per geometry.
 *
 * cuDNN's heuristics (cudnnGetConvolution*Algorithm_v7) cost tens of microseconds of host
 * time per call (70-100 us by other projects' measurements), and a training step would ask
 * them for every convolution, forward and backward. So each geometry
 * asks once: the plan (the algorithms and the workspace each needs) is kept under a key of
 * everything that decides it. This file is plain C with no CUDA, so the tests build it on
 * machines without a GPU. */
#ifndef CT_CUDA_CONV_PLANS_IMPL_H
#define CT_CUDA_CONV_PLANS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/conv_args_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How many plans are kept; past it, the oldest is forgotten. A model has a few convolution
 * geometries per batch size it sees. */
#define CT_CUDA_CONV_PLANS 64

/* Everything that decides a plan: the device (its architecture), the dtype, the direction,
 * the numeric settings (TF32 allowed, deterministic algorithms only), the activations' layout
 * (channels-last or NCHW) and the convolution's sizes and settings. All int64_t, so there is
 * no padding to compare. */
typedef struct ct_conv_plan_key {
    int64_t device, dtype, backward, allow_tf32, deterministic, channels_last;
    int64_t batch, in_channels, in_h, in_w, out_channels, kernel_h, kernel_w, out_h, out_w;
    int64_t stride[2], padding[2], dilation[2], groups;
} ct_conv_plan_key;

/* Forward: algo[0], math[0] and bytes[0]. Backward: [0] for the input's gradient (backward
 * data), [1] for the weight's (backward filter). algo and math hold cuDNN's enum values: the
 * algorithm and the math type the heuristics paired it with, which the convolution
 * descriptor must carry when it runs. */
typedef struct ct_conv_plan {
    int algo[2], math[2];
    size_t bytes[2];
} ct_conv_plan;

void ct_cuda_conv_plan_key(int device, const ct__conv2d_args *args, bool backward,
                           ct_conv_plan_key *key);
/* The remembered plan of key into *plan; false when there is none. Thread-safe. */
bool ct_cuda_conv_plan_find(const ct_conv_plan_key *key, ct_conv_plan *plan);
/* Remember plan under key (replacing a plan kept under the same key). Thread-safe. */
void ct_cuda_conv_plan_remember(const ct_conv_plan_key *key, const ct_conv_plan *plan);

#ifdef __cplusplus
}
#endif
#endif

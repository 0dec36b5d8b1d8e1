/* Mixed precision: autocast regions and the loss scaler.
 *
 * An autocast region (torch.autocast) runs the ops of ctensor's "lower" list — matmul,
 * linear and conv2d, forward and backward — in f16 or bf16 on one device type, and the ops
 * of its "f32" list (softmax, log-softmax, the losses, the norms, sums, exp, log and their
 * kin, pow) in f32, whatever dtype reaches them; a few ops of several inputs (atan2,
 * tensordot, scatter_add, concat, stack) run in the widest of their inputs' dtypes, and
 * every other op in the dtypes it is given, so a binary op of a bf16 and an f32 tensor gives
 * f32. The lists are PyTorch's, as the autocast column of op_list.h and of
 * src/ops/autocast_ops.h. The ops that an op of these lists calls are not cast again.
 * Casts are ordinary ops on the autograd tape: gradients arrive in each parameter's own
 * dtype (f32 master weights get f32 gradients). f64 tensors are never cast. */
#ifndef CTENSOR_AUTOCAST_H
#define CTENSOR_AUTOCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/device.h"
#include "ctensor/dtype.h"
#include "ctensor/export.h"
#include "ctensor/optim.h"
#include "ctensor/status.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enter an autocast region for ops on devices of `type` (CT_DEVICE_CPU or CT_DEVICE_CUDA)
 * with `dtype` CT_BF16 or CT_F16; CT_F32 turns autocast off for that type inside the region
 * (torch.autocast(enabled=False)). Thread-local and nestable: each push needs its pop.
 * Inside the outermost region each f32 leaf tensor that requires grad (a weight) is cast
 * once per dtype and the cast reused (PyTorch's cast cache); the cache is emptied when the
 * outermost region ends. A weight written in place inside the region (an optimiser step) is
 * cast again at its next use. CT_ERR_INVALID_ARG for another type or dtype;
 * CT_ERR_OUT_OF_MEMORY past 64 nested regions. */
CT_API ct_status ct_autocast_push(ct_device_type type, ct_dtype dtype);

/* Leave the innermost autocast region. CT_ERR_STATE when none is open. */
CT_API ct_status ct_autocast_pop(void);

/* The dtype autocast lowers to on devices of `type` on this thread: CT_BF16 or CT_F16 inside
 * a region, CT_F32 when autocast is off. */
CT_API ct_dtype ct_autocast_dtype(ct_device_type type);

/* This thread's autocast counters since it started: casts made for the lower list (weights
 * and activations), and uses of a cached weight cast that made no new cast. */
typedef struct ct_autocast_stats {
    int64_t casts;
    int64_t cache_hits;
} ct_autocast_stats;

CT_API ct_autocast_stats ct_autocast_get_stats(void);

/* Whether the CPU computes bf16 products in hardware (AVX512_BF16 or AMX-BF16) through
 * ctensor's bf16 GEMM; without, bf16 autocast on the CPU is emulated in f32 and slower than
 * f32 (a warning says so once, through the log hook). */
CT_API bool ct_cpu_has_native_bf16(void);

/* The rate of the CPU's bf16 products over its f32 ones, on one core's vector units: measured
 * once per process (about a millisecond) as AVX512_BF16's dot product against f32 FMA, each at
 * its peak. 0 without native bf16 (ct_cpu_has_native_bf16), or in a build by a compiler other
 * than GCC. Seen: 0.47 on an Intel Xeon without AMX, whose bf16 units run at a quarter of the
 * FMA's issue rate. */
CT_API double ct_cpu_bf16_speedup(void);

/* Whether bf16 is faster than f32 on this CPU: native bf16 with AMX-BF16 tiles that the
 * operating system enables, or a measured ct_cpu_bf16_speedup above 1. `ctensor train --amp
 * auto` picks bf16 on the CPU only then, and bf16 autocast on a CPU with slow bf16 units warns
 * once (through the log hook) that it is slower than f32 here. */
CT_API bool ct_cpu_has_fast_bf16(void);

/* ---- the loss scaler (torch.amp.GradScaler) ---- */

typedef struct ct_grad_scaler ct_grad_scaler;

typedef struct ct_grad_scaler_params {
    double init_scale;       /* 65536 */
    double growth_factor;    /* 2: after growth_interval clean steps the scale is multiplied */
    double backoff_factor;   /* 0.5: a step with an inf or NaN gradient multiplies by this */
    int64_t growth_interval; /* 2000 */
    double min_scale;        /* the floor the backoff never goes below; 0: none (PyTorch) */
    bool enabled;            /* false: scale() and unscale are identities, step() just steps */
} ct_grad_scaler_params;

CT_API ct_grad_scaler_params ct_grad_scaler_params_default(void);

/* A scaler over the n parameters whose gradients it will check; `names` (may be NULL, else
 * n strings, copied) name them in the message of a skipped step. NULL on bad parameters
 * (factors, interval, floor) with CT_ERR_INVALID_ARG. */
CT_API ct_grad_scaler *ct_grad_scaler_new(int n, ct_tensor *const *params, const char *const *names,
                                          const ct_grad_scaler_params *params_in);
CT_API void ct_grad_scaler_free(ct_grad_scaler *s); /* NULL is fine */

/* loss * scale, a new tensor on the tape (the loss itself when disabled). */
CT_API ct_tensor *ct_grad_scaler_scale(ct_grad_scaler *s, const ct_tensor *loss);

/* Divide every gradient by the scale and check them for inf/NaN: one fused kernel per device
 * over all its gradients and one 4-byte read-back per device, counted as an implicit
 * transfer. Once per step (before clipping); a second call in a step does nothing. */
CT_API ct_status ct_grad_scaler_unscale(ct_grad_scaler *s);

/* Unscale (if not done yet this step), then the optimiser's step unless a gradient was not
 * finite; *skipped (may be NULL) says which. On a skipped step the first parameter whose
 * gradient was not finite is named through the log hook (a warning). */
CT_API ct_status ct_grad_scaler_step(ct_grad_scaler *s, ct_optimizer *opt, bool *skipped);

/* The end of a step: back off on a step with a non-finite gradient (never below min_scale),
 * else count a clean step and grow after growth_interval of them. */
CT_API ct_status ct_grad_scaler_update(ct_grad_scaler *s);

CT_API double ct_grad_scaler_get_scale(const ct_grad_scaler *s);
/* Steps skipped since the scaler was made (or its state loaded). */
CT_API int64_t ct_grad_scaler_skipped_steps(const ct_grad_scaler *s);
/* The index of the first parameter of the last step whose gradient was not finite, or -1. */
CT_API int ct_grad_scaler_last_bad_param(const ct_grad_scaler *s);

/* The state a checkpoint keeps (GradScaler.state_dict: scale, growth tracker; and the
 * skipped-step count). */
typedef struct ct_grad_scaler_state {
    double scale;
    int64_t growth_tracker;
    int64_t skipped_steps;
} ct_grad_scaler_state;

CT_API ct_grad_scaler_state ct_grad_scaler_get_state(const ct_grad_scaler *s);
/* CT_ERR_INVALID_ARG for a scale that is not finite and positive or a negative count. */
CT_API ct_status ct_grad_scaler_set_state(ct_grad_scaler *s, const ct_grad_scaler_state *state);

#ifdef __cplusplus
}
#endif

#endif

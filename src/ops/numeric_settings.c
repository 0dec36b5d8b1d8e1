/* The process-wide numerical settings that the op layer passes to kernels in their arguments:
 * the f32 matmul precision (ct_set_matmul_precision: whether f32 matmul and convolution may
 * use TF32 tensor cores, as ct__matmul_args.allow_tf32), and deterministic algorithms
 * (ct_use_deterministic_algorithms). CPU kernels are deterministic always, and full f32 but
 * for the convolutions that "high" lets run with Winograd (cpu_conv_dnnl.c). */
#include <stdatomic.h>
#include <string.h>

#include "core/error_impl.h"
#include "ctensor/ctensor.h"

/* The accepted values, indexed by the stored setting. */
static const char *const precisions[] = {"highest", "high"};
#define PRECISION_COUNT ((int)(sizeof precisions / sizeof precisions[0]))

static atomic_int current; /* index into precisions; 0 ("highest") until set */

ct_status ct_set_matmul_precision(const char *precision) {
    if (!precision)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_set_matmul_precision: precision is NULL; pass \"highest\" (full "
                         "f32) or \"high\" (TF32 allowed)");
    for (int i = 0; i < PRECISION_COUNT; i++) {
        if (strcmp(precision, precisions[i]) == 0) {
            atomic_store(&current, i);
            return CT_OK;
        }
    }
    return ct__error(CT_ERR_INVALID_ARG,
                     "ct_set_matmul_precision: unknown precision \"%.64s\"; accepted values are "
                     "\"highest\" (full f32, the default) and \"high\" (TF32 allowed)",
                     precision);
}

const char *ct_get_matmul_precision(void) { return precisions[atomic_load(&current)]; }

static atomic_bool deterministic;

void ct_use_deterministic_algorithms(bool enabled) { atomic_store(&deterministic, enabled); }

bool ct_are_deterministic_algorithms_enabled(void) { return atomic_load(&deterministic); }

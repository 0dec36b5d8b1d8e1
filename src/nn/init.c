/* PyTorch's default initialisations, drawn from the global Philox stream on the CPU. */
#include <math.h>

#include "nn/init_impl.h"
#include "ops/op_impl.h"

ct_tensor *ct__init_uniform(int ndim, const int64_t *shape, double bound) {
    ct_tensor *u = ct_rand(ndim, shape, CT_F32, CT_CPU);
    ct_tensor *scaled = u ? ct_mul_scalar(u, 2 * bound) : NULL;
    ct_tensor *out = scaled ? ct_sub_scalar(scaled, bound) : NULL;
    ct_release(u);
    ct_release(scaled);
    return out;
}

double ct__kaiming_uniform_bound(int64_t fan_in) {
    /* kaiming_uniform_(a = sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in),
     * which is 1 / sqrt(fan_in), the same bound PyTorch uses for the bias. */
    return fan_in > 0 ? 1.0 / sqrt((double)fan_in) : 0.0;
}

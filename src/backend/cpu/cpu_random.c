/* PLACEHOLDER until the random kernels land: replace this whole file. */
#include "backend/cpu/cpu_impl.h"
#include "core/error_impl.h"

ct_status ct__cpu_random(int device, const ct_ew_args *args, ct_random_kind kind, uint64_t seed, uint64_t offset) {
    (void)device;(void)args;(void)kind;(void)seed;(void)offset;
    return ct__error(CT_ERR_UNSUPPORTED, "random kernels are not implemented yet");
}

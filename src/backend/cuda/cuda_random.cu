// PLACEHOLDER until the CUDA random kernels land: replace this whole file.
#include "backend/cuda/cuda_impl.h"

extern "C" ct_status ct_cuda_random(int device, const ct_ew_args *args, ct_random_kind kind, uint64_t seed, uint64_t offset) {
    (void)device;(void)args;(void)kind;(void)seed;(void)offset;
    return ct_cuda_fail(CT_ERR_UNSUPPORTED, "the CUDA random kernels are not implemented yet");
}

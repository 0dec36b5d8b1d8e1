// PLACEHOLDER until the CUDA gather kernels land: replace this whole file.
#include "backend/cuda/cuda_impl.h"

extern "C" ct_status ct_cuda_gather(int device, const ct_gather_args *args) {
    (void)device;(void)args;
    return ct_cuda_fail(CT_ERR_UNSUPPORTED, "the CUDA gather kernels are not implemented yet");
}

// PLACEHOLDER until the CUDA where kernels land: replace this whole file.
#include "backend/cuda/cuda_impl.h"

extern "C" ct_status ct_cuda_where(int device, const ct_ew_args *args) {
    (void)device;(void)args;
    return ct_cuda_fail(CT_ERR_UNSUPPORTED, "the CUDA where kernels are not implemented yet");
}

// PLACEHOLDER until the CUDA fill kernels land: replace this whole file.
#include "backend/cuda/cuda_impl.h"

extern "C" ct_status ct_cuda_fill(int device, const ct_ew_args *args, double value) {
    (void)device;(void)args;(void)value;
    return ct_cuda_fail(CT_ERR_UNSUPPORTED, "the CUDA fill kernels are not implemented yet");
}

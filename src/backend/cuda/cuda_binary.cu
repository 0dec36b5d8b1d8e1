// PLACEHOLDER until the CUDA binary kernels land: replace this whole file.
#include "backend/cuda/cuda_impl.h"

extern "C" ct_status ct_cuda_binary(int device, ct_binary_op op, const ct_ew_args *args) {
    (void)device;(void)op;(void)args;
    return ct_cuda_fail(CT_ERR_UNSUPPORTED, "the CUDA binary kernels are not implemented yet");
}

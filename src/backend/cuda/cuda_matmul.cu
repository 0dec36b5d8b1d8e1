// PLACEHOLDER until the CUDA matmul kernels land: replace this whole file.
#include "backend/cuda/cuda_impl.h"

extern "C" ct_status ct_cuda_matmul(int device, const ct_matmul_args *args) {
    (void)device;(void)args;
    return ct_cuda_fail(CT_ERR_UNSUPPORTED, "the CUDA matmul kernels are not implemented yet");
}

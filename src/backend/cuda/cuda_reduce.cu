// PLACEHOLDER until the CUDA reduce kernels land: replace this whole file.
#include "backend/cuda/cuda_impl.h"

extern "C" ct_status ct_cuda_reduce(int device, ct_reduce_op op, const ct_reduce_args *args) {
    (void)device;(void)op;(void)args;
    return ct_cuda_fail(CT_ERR_UNSUPPORTED, "the CUDA reduce kernels are not implemented yet");
}

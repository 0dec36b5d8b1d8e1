// PLACEHOLDER until the CUDA iota kernels land: replace this whole file.
#include "backend/cuda/cuda_impl.h"

extern "C" ct_status ct_cuda_iota(int device, const ct_ew_args *args, double start, double step) {
    (void)device;(void)args;(void)start;(void)step;
    return ct_cuda_fail(CT_ERR_UNSUPPORTED, "the CUDA iota kernels are not implemented yet");
}

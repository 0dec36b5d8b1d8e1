// Device-side element loads and stores for every dtype: core/dtype_impl.h's helpers
// (ct__load_f64, ct__store_i64, ...), which are host and device code under nvcc, so the CUDA
// kernels convert with the CPU's rules. Used by every CUDA kernel file.
#ifndef CT_CUDA_LOAD_IMPL_CUH
#define CT_CUDA_LOAD_IMPL_CUH

#include <stdint.h>

#include "core/dtype_impl.h"

// The element size as a signed integer, for offsets that may be negative.
static __host__ __device__ inline int64_t ct_cuda_dtype_size(ct_dtype dtype) {
    return (int64_t)ct__dtype_size(dtype);
}

#endif

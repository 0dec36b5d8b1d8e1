// The bound on what a kernel takes by value. The CUDA C++ Programming Guide ("Function
// Parameters") passes a __global__ function's parameters through constant memory, 4 KB of
// them (32,764 bytes from CUDA 12.1 on Volta and later; the plugin keeps to the 4 KB every
// toolkit and device take). The structs that carry a CT_MAX_DIMS-axis geometry to a kernel by
// value are checked here at compile time, with room left for the kernel's other parameters.
#ifndef CT_CUDA_PARAM_IMPL_CUH
#define CT_CUDA_PARAM_IMPL_CUH

#define CT_CUDA_PARAM_BYTES 4096
#define CT_CUDA_PARAM_SPARE 256 // the kernel's scalar and pointer parameters beside the struct

#define CT_CUDA_BY_VALUE_FITS(T)                                                                   \
    static_assert(sizeof(T) + CT_CUDA_PARAM_SPARE <= CT_CUDA_PARAM_BYTES,                          \
                  #T " is a kernel parameter and must fit CUDA's 4 KB of them")

#endif

/* CUDA iota kernel: out[i] = start + i * step for the C-order linear index i of the
 * iteration, stored as ct_cast converts (cpu_copy.c's ct__cpu_iota). The multiply and the
 * add are rounded separately (__dmul_rn, __dadd_rn), as the CPU computes them: nvcc would
 * otherwise fuse them into one fma and round once, giving different values. */
#include "backend/cuda/cuda_ew_impl.cuh"

template <typename I>
static __global__ void iota_strided(const __grid_constant__ ct__ew_args args, double start,
                                    double step) {
    CT_EW_LOOP(i, args.numel) {
        int64_t off[1];
        ct_ew_offsets<1>(args, (I)i, off);
        double v = __dadd_rn(start, __dmul_rn((double)i, step));
        ct__store_f64(args.data[0] + off[0], args.dtype[0], v);
    }
}

extern "C" ct_status ct_cuda_iota(int device, const ct__ew_args *args, double start, double step) {
    if (args->numel <= 0) return CT_OK;
    cudaStream_t stream;
    ct__ew_args a;
    ct_status status = ct_ew_begin(device, args, &stream, &a);
    if (status != CT_OK) return status;
    unsigned blocks = ct_ew_blocks(a.numel);
    if (ct_ew_small(&a))
        iota_strided<uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, start, step);
    else
        iota_strided<uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, start, step);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

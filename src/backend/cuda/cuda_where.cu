/* CUDA where kernel: out = cond ? a : b, with cond bool and a, b of out's dtype (the op
 * layer converts them), any strides, as the CPU's (cpu_where.c). Selection moves bits, so
 * one kernel per element size serves every dtype. */
#include "backend/cuda/cuda_ew_impl.cuh"

/* E is an unsigned integer of the element size; operands are out, cond, a, b. */
template <typename E, typename I>
static __global__ void where_strided(const __grid_constant__ ct__ew_args args) {
    CT_EW_LOOP(i, args.numel) {
        int64_t off[4];
        ct_ew_offsets<4>(args, (I)i, off);
        bool cond = *(const uint8_t *)(args.data[1] + off[1]) != 0;
        const char *from = cond ? args.data[2] + off[2] : args.data[3] + off[3];
        *(E *)(args.data[0] + off[0]) = *(const E *)from;
    }
}

template <typename E>
static ct_status launch_where(int device, cudaStream_t stream, const ct__ew_args &a) {
    unsigned blocks = ct_ew_blocks(a.numel);
    if (ct_ew_small(&a))
        where_strided<E, uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a);
    else
        where_strided<E, uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

extern "C" ct_status ct_cuda_where(int device, const ct__ew_args *args) {
    if (args->numel <= 0) return CT_OK;
    cudaStream_t stream;
    ct__ew_args a;
    ct_status status = ct_ew_begin(device, args, &stream, &a);
    if (status != CT_OK) return status;
    switch (ct__dtype_size(args->dtype[0])) {
    case 1: return launch_where<uint8_t>(device, stream, a);
    case 2: return launch_where<uint16_t>(device, stream, a);
    case 4: return launch_where<uint32_t>(device, stream, a);
    case 8: return launch_where<uint64_t>(device, stream, a);
    default: return launch_where<ct_complex128>(device, stream, a); /* complex128 */
    }
}

/* CUDA elementwise kernels of complex operands, the counterpart of cpu_complex.c: the unary
 * and binary kernels hand an op over here when it computes in a complex dtype (or, for abs and
 * the predicates, reads one). Each thread loads its element as complex128, takes its formula
 * from backend/complex_impl.h (the CPU's too) and stores it into the output's dtype. The
 * scalar operand of a binary op comes by value, converted on the host as the CPU reads it. */
#include "backend/complex_impl.h"
#include "backend/cuda/cuda_ew_impl.cuh"

template <typename I>
static __global__ void complex_unary(const __grid_constant__ ct__ew_args args, int op) {
    CT_EW_LOOP(i, args.numel) {
        int64_t off[2];
        ct_ew_offsets<2>(args, (I)i, off);
        ct__z z = ct__load_c128(args.data[1] + off[1], args.dtype[1]);
        ct__store_c128(args.data[0] + off[0], args.dtype[0], ct__z_unary((ct__unary_op)op, z));
    }
}

/* operand: 0, or the operand (1 or 2) that is the scalar s. */
template <typename I>
static __global__ void complex_binary(const __grid_constant__ ct__ew_args args, int op, int operand,
                                      ct__z s) {
    CT_EW_LOOP(i, args.numel) {
        int64_t off[3];
        ct_ew_offsets<3>(args, (I)i, off);
        ct__z a = operand == 1 ? s : ct__load_c128(args.data[1] + off[1], args.dtype[1]);
        ct__z b = operand == 2 ? s : ct__load_c128(args.data[2] + off[2], args.dtype[2]);
        ct__store_c128(args.data[0] + off[0], args.dtype[0], ct__z_binary((ct__binary_op)op, a, b));
    }
}

extern "C" ct_status ct_cuda_complex_unary(int device, cudaStream_t stream, const ct__ew_args *a,
                                           ct__unary_op op) {
    unsigned blocks = ct_ew_blocks(a->numel);
    if (ct_ew_small(a))
        complex_unary<uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(*a, (int)op);
    else
        complex_unary<uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(*a, (int)op);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

extern "C" ct_status ct_cuda_complex_binary(int device, cudaStream_t stream, const ct__ew_args *a,
                                            ct__binary_op op, ct__ew_scalar scalar) {
    ct__z s = {0, 0};
    if (scalar.operand) /* the scalar's dtype names its member (backend_impl.h) */
        s = ct__load_c128((const char *)&scalar.value, a->dtype[scalar.operand]);
    unsigned blocks = ct_ew_blocks(a->numel);
    if (ct_ew_small(a))
        complex_binary<uint32_t>
            <<<blocks, CT_EW_THREADS, 0, stream>>>(*a, (int)op, scalar.operand, s);
    else
        complex_binary<uint64_t>
            <<<blocks, CT_EW_THREADS, 0, stream>>>(*a, (int)op, scalar.operand, s);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

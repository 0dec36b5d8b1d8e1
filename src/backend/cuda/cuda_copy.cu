/* CUDA copy kernel: out = in elementwise, converting dtypes, with the CPU's conversion rules
 * (cpu_copy.c). Same-dtype copies move bits: contiguous ones are one device-to-device
 * memcpy, strided ones a kernel per element size. Conversions take the CPU's route for each
 * pair of dtypes, so every value rounds the same way:
 *   - to float32 from f16, bf16, i32, u8 and bool: exactly, through double;
 *   - between integers (bool included), and from int64 to anything: through int64
 *     (integers wrap; int64 to a float rounds once);
 *   - from complex (to complex: the op layer refuses complex to real): through complex128;
 *   - everything else (real to complex too, imaginary part 0): through double (floats round to
 * nearest even, f16 and bf16 once; floats to integers truncate toward zero, saturate, then wrap).
 */
#include "backend/cuda/cuda_ew_impl.cuh"

enum { COPY_TO_F32, COPY_VIA_I64, COPY_VIA_U64, COPY_VIA_F64, COPY_VIA_C128 };

template <typename E, typename I>
static __global__ void copy_bits(const __grid_constant__ ct__ew_args args) {
    CT_EW_LOOP(i, args.numel) {
        int64_t off[2];
        ct_ew_offsets<2>(args, (I)i, off);
        *(E *)(args.data[0] + off[0]) = *(const E *)(args.data[1] + off[1]);
    }
}

template <typename I>
static __global__ void copy_convert(const __grid_constant__ ct__ew_args args, int route) {
    ct_dtype out_dtype = args.dtype[0], in_dtype = args.dtype[1];
    CT_EW_LOOP(i, args.numel) {
        int64_t off[2];
        ct_ew_offsets<2>(args, (I)i, off);
        char *dst = args.data[0] + off[0];
        const char *src = args.data[1] + off[1];
        if (route == COPY_TO_F32)
            *(float *)dst = (float)ct__load_f64(src, in_dtype);
        else if (route == COPY_VIA_I64)
            ct__store_i64(dst, out_dtype, ct__load_i64(src, in_dtype));
        else if (route == COPY_VIA_C128)
            ct__store_c128(dst, out_dtype, ct__load_c128(src, in_dtype));
        else if (route == COPY_VIA_U64)
            ct__store_u64(dst, out_dtype, ct__load_u64(src, in_dtype));
        else
            ct__store_f64(dst, out_dtype, ct__load_f64(src, in_dtype));
    }
}

/* The CPU's route for converting in to out (copy_row in cpu_copy.c). */
static int copy_route(ct_dtype out, ct_dtype in) {
    if (ct__is_complex(in)) return COPY_VIA_C128; /* to complex: the op layer refuses to real */
    if (in == CT_U64) return COPY_VIA_U64;
    if (out == CT_F32 && in != CT_F64 && in != CT_I64) return COPY_TO_F32;
    bool integer_domain = !ct__is_float(out) && !ct__is_float(in);
    return integer_domain || in == CT_I64 ? COPY_VIA_I64 : COPY_VIA_F64;
}

template <typename E>
static ct_status launch_bits(int device, cudaStream_t stream, const ct__ew_args &a) {
    unsigned blocks = ct_ew_blocks(a.numel);
    if (ct_ew_small(&a))
        copy_bits<E, uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a);
    else
        copy_bits<E, uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

static ct_status launch_convert(int device, cudaStream_t stream, const ct__ew_args &a) {
    unsigned blocks = ct_ew_blocks(a.numel);
    int route = copy_route(a.dtype[0], a.dtype[1]);
    if (ct_ew_small(&a))
        copy_convert<uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, route);
    else
        copy_convert<uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, route);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

extern "C" ct_status ct_cuda_copy(int device, const ct__ew_args *args) {
    if (args->numel <= 0) return CT_OK;
    cudaStream_t stream;
    ct__ew_args a;
    ct_status status = ct_ew_begin(device, args, &stream, &a);
    if (status != CT_OK) return status;
    if (a.dtype[0] != a.dtype[1]) return launch_convert(device, stream, a);
    size_t size = ct__dtype_size(a.dtype[0]);
    bool contiguous = a.ndim == 0 || (a.ndim == 1 && a.strides[0][0] == (int64_t)size &&
                                      a.strides[1][0] == (int64_t)size);
    if (contiguous) {
        CT_CUDA_CHECK(device, cudaMemcpyAsync(a.data[0], a.data[1], (size_t)a.numel * size,
                                              cudaMemcpyDeviceToDevice, stream));
        return CT_OK;
    }
    switch (size) {
    case 1: return launch_bits<uint8_t>(device, stream, a);
    case 2: return launch_bits<uint16_t>(device, stream, a);
    case 4: return launch_bits<uint32_t>(device, stream, a);
    case 8: return launch_bits<uint64_t>(device, stream, a);
    default: return launch_bits<ct_complex128>(device, stream, a); /* complex128 */
    }
}

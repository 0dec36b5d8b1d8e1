/* CUDA fill kernel: out = value. The element's bits are made once on the host by the CPU's
 * own conversion (ct__store_f64 of core/dtype_impl.h), so the value rounds exactly as on
 * the CPU; the device only replicates them: a memset when every byte is the same (zeros,
 * for one) and the output is contiguous, else a kernel per element size. */
#include <string.h>

#include "backend/cuda/cuda_ew_impl.cuh"

template <typename E, typename I>
static __global__ void fill_strided(const __grid_constant__ ct__ew_args args, E value) {
    CT_EW_LOOP(i, args.numel) {
        int64_t off[1];
        ct_ew_offsets<1>(args, (I)i, off);
        *(E *)(args.data[0] + off[0]) = value;
    }
}

template <typename E>
static ct_status launch_fill(int device, cudaStream_t stream, const ct__ew_args &a,
                             const unsigned char *pattern) {
    E value;
    memcpy(&value, pattern, sizeof value);
    unsigned blocks = ct_ew_blocks(a.numel);
    if (ct_ew_small(&a))
        fill_strided<E, uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, value);
    else
        fill_strided<E, uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, value);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

/* Whether the size bytes of pattern are all equal. */
static bool one_byte(const unsigned char *pattern, size_t size) {
    for (size_t i = 1; i < size; i++)
        if (pattern[i] != pattern[0]) return false;
    return true;
}

extern "C" ct_status ct_cuda_fill(int device, const ct__ew_args *args, double value) {
    if (args->numel <= 0) return CT_OK;
    cudaStream_t stream;
    ct__ew_args a;
    ct_status status = ct_ew_begin(device, args, &stream, &a);
    if (status != CT_OK) return status;
    size_t size = ct__dtype_size(a.dtype[0]);
    unsigned char pattern[16] = {0};
    ct__store_f64((char *)pattern, a.dtype[0], value);
    bool contiguous = a.ndim == 0 || (a.ndim == 1 && a.strides[0][0] == (int64_t)size);
    if (contiguous && one_byte(pattern, size)) {
        CT_CUDA_CHECK(device,
                      cudaMemsetAsync(a.data[0], pattern[0], (size_t)a.numel * size, stream));
        return CT_OK;
    }
    switch (size) {
    case 1: return launch_fill<uint8_t>(device, stream, a, pattern);
    case 2: return launch_fill<uint16_t>(device, stream, a, pattern);
    case 4: return launch_fill<uint32_t>(device, stream, a, pattern);
    case 8: return launch_fill<uint64_t>(device, stream, a, pattern);
    default: return launch_fill<ct_complex128>(device, stream, a, pattern); /* complex128 */
    }
}

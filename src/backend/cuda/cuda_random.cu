/* CUDA random kernel: Philox4x32-10 draws into a contiguous output, the same stream as the
 * CPU's (cpu_random.c; layout in random.h and core/philox_impl.h, whose functions are
 * host and device code under nvcc). One thread makes one Philox block, i.e. four elements.
 *
 * Uniform values are exact multiples of 2^-bits and so bit-identical to the CPU's. Normal
 * values go through Box-Muller in double with CUDA's log, sin and cos, which can differ from
 * the CPU's libm in the last bit of the double: after rounding to the output dtype the
 * values almost always agree, but equality is not guaranteed for every element. */
#include "backend/cuda/cuda_ew_impl.cuh"
#include "core/philox_impl.h"

static __global__ void random_blocks(char *out, ct_dtype dtype, int64_t numel, int64_t size,
                                     int kind, int bits, uint64_t seed, uint64_t offset) {
    CT_EW_LOOP(b, (numel + 3) / 4) {
        uint32_t w[4];
        ct__philox_stream_block(seed, offset + (uint64_t)b, w);
        int64_t left = numel - 4 * b;
        int count = left < 4 ? (int)left : 4;
        double values[4] = {0, 0, 0, 0};
        if (kind == CT_RANDOM_NORMAL) {
            ct__philox_box_muller(w[0], w[1], &values[0], &values[1]);
            if (count > 2) ct__philox_box_muller(w[2], w[3], &values[2], &values[3]);
        } else {
            for (int i = 0; i < count; i++) values[i] = ct__philox_uniform(w[i], bits);
        }
        for (int i = 0; i < count; i++) ct__store_f64(out + (4 * b + i) * size, dtype, values[i]);
    }
}

extern "C" ct_status ct_cuda_random(int device, const ct__ew_args *args, ct__random_kind kind,
                                    uint64_t seed, uint64_t offset) {
    int64_t numel = args->numel;
    if (numel <= 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    ct_dtype dtype = args->dtype[0];
    random_blocks<<<ct_ew_blocks((numel + 3) / 4), CT_EW_THREADS, 0, stream>>>(
        args->data[0], dtype, numel, (int64_t)ct__dtype_size(dtype), (int)kind,
        ct__philox_uniform_bits(dtype), seed, offset);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

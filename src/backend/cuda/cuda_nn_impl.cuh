// Device code shared by the CUDA kernels of the nn family (softmax, cross-entropy, batch and
// layer norm, dropout, index_add; contracts in backend/norm_args_impl.h): element loads and
// stores of the floating dtypes in double, block-wide sums and maxima, the slot a kernel
// reports a bad index or target through, and the launch sizes.
//
// The kernels compute in double, as the CPU kernels do, so that both agree to the data's
// precision (the H100/H200 class runs double at half the float rate; these kernels are
// bound by memory traffic, not arithmetic).
#ifndef CT_CUDA_NN_IMPL_CUH
#define CT_CUDA_NN_IMPL_CUH

#include <stdint.h>

#include "backend/cuda/cuda_load_impl.cuh"
#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/cuda_param_impl.cuh"
#include "backend/norm_args_impl.h"

// The kernel arguments that carry a CT_MAX_DIMS-axis geometry.
CT_CUDA_BY_VALUE_FITS(ct__index_add_args);
CT_CUDA_BY_VALUE_FITS(ct__attention_args);

#define NN_DEV static __device__ __forceinline__

// Threads per block of the row, channel and element kernels (a multiple of 32), and the cap
// on blocks beyond which blocks loop.
#define NN_THREADS 256
#define NN_MAX_BLOCKS 65535

// Element i of a floating array of dtype, as double, and back.
NN_DEV double nn_load(const char *p, int64_t i, ct_dtype dtype) {
    return ct__load_f64(p + i * ct_cuda_dtype_size(dtype), dtype);
}

NN_DEV void nn_store(char *p, int64_t i, ct_dtype dtype, double v) {
    ct__store_f64(p + i * ct_cuda_dtype_size(dtype), dtype, v);
}

// The sum (or maximum) of v over the block, returned to every thread. Every thread of the
// block must call it; shared holds NN_THREADS / 32 doubles.
template <bool MAX> NN_DEV double nn_block_reduce(double v, double *shared) {
    for (int o = 16; o > 0; o >>= 1) {
        double other = __shfl_down_sync(0xffffffffu, v, o);
        v = MAX ? fmax(v, other) : v + other;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? shared[lane] : (MAX ? -INFINITY : 0.0);
        for (int o = 16; o > 0; o >>= 1) {
            double other = __shfl_down_sync(0xffffffffu, v, o);
            v = MAX ? fmax(v, other) : v + other;
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    v = shared[0];
    __syncthreads(); // all have read shared[0] before the next call overwrites it
    return v;
}

NN_DEV double nn_block_sum(double v, double *shared) { return nn_block_reduce<false>(v, shared); }
NN_DEV double nn_block_max(double v, double *shared) { return nn_block_reduce<true>(v, shared); }

// Where a kernel reports a bad value (an index, a target): the first thread to set `failed`
// writes `value`.
struct nn_bad_slot {
    unsigned int failed;
    long long value;
};
static_assert(sizeof(nn_bad_slot) == CT_READBACK_BAD_VALUE, "the op layer counts this read");

NN_DEV void nn_report_bad(nn_bad_slot *slot, int64_t value) {
    if (atomicCAS(&slot->failed, 0u, 1u) == 0u) slot->value = (long long)value;
}

// Blocks for `work` rows or channels of one block each.
static inline unsigned nn_row_blocks(int64_t work) {
    return (unsigned)(work < 1 ? 1 : work > NN_MAX_BLOCKS ? NN_MAX_BLOCKS : work);
}

// Blocks for `work` items of one thread each.
static inline unsigned nn_item_blocks(int64_t work) {
    return nn_row_blocks((work + NN_THREADS - 1) / NN_THREADS);
}

// A zeroed bad-value slot on the stream (freed with nn_slot_finish; on failure, here).
static inline ct_status nn_slot_begin(int device, cudaStream_t stream, nn_bad_slot **slot) {
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)slot, sizeof **slot, stream));
    cudaError_t zeroed = cudaMemsetAsync(*slot, 0, sizeof **slot, stream);
    if (zeroed != cudaSuccess) {
        (void)cudaFreeAsync(*slot, stream);
        *slot = NULL;
    }
    CT_CUDA_CHECK(device, zeroed);
    return CT_OK;
}

// Copy the slot back (waiting for the stream) and free it; *failed and *value get it.
static inline ct_status nn_slot_finish(int device, cudaStream_t stream, nn_bad_slot *slot,
                                       bool *failed, int64_t *value) {
    nn_bad_slot host = {0u, 0};
    ct_status read =
        ct_cuda_read_back(device, stream, &host, slot, sizeof host, "a bad-value check");
    cudaError_t freed = cudaFreeAsync(slot, stream); // in stream order, after the work
    if (read != CT_OK) {
        if (freed != cudaSuccess) (void)cudaGetLastError();
        return read;
    }
    CT_CUDA_CHECK(device, freed);
    *failed = host.failed != 0u;
    *value = (int64_t)host.value;
    return CT_OK;
}

#endif

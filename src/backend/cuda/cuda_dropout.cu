// CUDA dropout kernel (ct__dropout_args in backend/norm_args_impl.h): one thread per Philox
// block of four elements, the CPU's stream layout and keep rule (cpu_dropout.c), so the same
// seed gives the same mask on every device. The uniform value w * 2^-32 is exact in double.
#include "backend/cuda/cuda_nn_impl.cuh"
#include "core/philox_impl.h"

namespace {

__global__ void __launch_bounds__(NN_THREADS) dropout_blocks(ct__dropout_args a) {
    int64_t blocks = (a.numel + 3) / 4;
    for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < blocks;
         b += (int64_t)gridDim.x * blockDim.x) {
        uint32_t w[4];
        ct__philox_stream_block(a.seed, a.offset + (uint64_t)b, w);
        int64_t first = 4 * b, left = a.numel - first;
        int count = left < 4 ? (int)left : 4;
        for (int i = 0; i < count; i++) {
            double keep = ct__philox_uniform(w[i], 32) >= a.p ? a.scale : 0.0;
            nn_store(a.mask, first + i, a.dtype, keep);
            nn_store(a.y, first + i, a.dtype, nn_load(a.x, first + i, a.dtype) * keep);
        }
    }
}

} // namespace

extern "C" ct_status ct_cuda_dropout(int device, const ct__dropout_args *args) {
    if (args->numel <= 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    dropout_blocks<<<nn_item_blocks((args->numel + 3) / 4), NN_THREADS, 0, stream>>>(*args);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

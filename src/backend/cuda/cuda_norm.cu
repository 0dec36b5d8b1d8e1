// CUDA layer normalisation kernels, forward and backward (ct__layer_norm_args in
// backend/norm_args_impl.h), the CPU's arithmetic (cpu_norm.c) in double: one block per
// row; its weight and bias gradients take one thread per column summing over the rows
// (neighbouring threads read neighbouring columns). Batch norm is cuda_batch_norm.cu.
#include "backend/cuda/cuda_nn_impl.cuh"

namespace {

NN_DEV double param_or(const char *p, int64_t i, ct_dtype dtype, double absent) {
    return p ? nn_load(p, i, dtype) : absent;
}

// With a residual, each thread writes the sum x + residual of its elements (rounded to the
// dtype, as ct_add) and reads them back from there in the passes after: its own writes, so
// no barrier is needed between them.
__global__ void __launch_bounds__(NN_THREADS) ln_forward(ct__layer_norm_args a) {
    __shared__ double shared[NN_THREADS / 32];
    const char *x = a.residual ? a.sum : a.x;
    for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
        int64_t base = r * a.n;
        double sum = 0.0, sq = 0.0;
        for (int64_t j = threadIdx.x; j < a.n; j += blockDim.x) {
            if (a.residual)
                nn_store(a.sum, base + j, a.dtype,
                         nn_load(a.x, base + j, a.dtype) + nn_load(a.residual, base + j, a.dtype));
            sum += nn_load(x, base + j, a.dtype);
        }
        double mean = nn_block_sum(sum, shared) / (double)a.n;
        for (int64_t j = threadIdx.x; j < a.n; j += blockDim.x) {
            double d = nn_load(x, base + j, a.dtype) - mean;
            sq += d * d;
        }
        double invstd = 1.0 / sqrt(nn_block_sum(sq, shared) / (double)a.n + a.eps);
        if (threadIdx.x == 0) {
            ((double *)a.mean)[r] = mean;
            ((double *)a.invstd)[r] = invstd;
        }
        for (int64_t j = threadIdx.x; j < a.n; j += blockDim.x) {
            double v = (nn_load(x, base + j, a.dtype) - mean) * invstd;
            v = v * param_or(a.weight, j, a.dtype, 1.0) + param_or(a.bias, j, a.dtype, 0.0);
            nn_store(a.y, base + j, a.dtype, v);
        }
    }
}

// dx = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = g * w.
__global__ void __launch_bounds__(NN_THREADS) ln_backward_rows(ct__layer_norm_args a) {
    __shared__ double shared[NN_THREADS / 32];
    for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
        int64_t base = r * a.n;
        double mean = ((const double *)a.mean)[r], invstd = ((const double *)a.invstd)[r];
        double sum_d = 0.0, sum_dx = 0.0;
        for (int64_t j = threadIdx.x; j < a.n; j += blockDim.x) {
            double dxhat =
                nn_load(a.grad_out, base + j, a.dtype) * param_or(a.weight, j, a.dtype, 1.0);
            sum_d += dxhat;
            sum_dx += dxhat * (nn_load(a.x, base + j, a.dtype) - mean) * invstd;
        }
        double mean_d = nn_block_sum(sum_d, shared) / (double)a.n;
        double mean_dx = nn_block_sum(sum_dx, shared) / (double)a.n;
        for (int64_t j = threadIdx.x; j < a.n; j += blockDim.x) {
            double dxhat =
                nn_load(a.grad_out, base + j, a.dtype) * param_or(a.weight, j, a.dtype, 1.0);
            double xhat = (nn_load(a.x, base + j, a.dtype) - mean) * invstd;
            nn_store(a.grad_x, base + j, a.dtype, invstd * (dxhat - mean_d - xhat * mean_dx));
        }
    }
}

__global__ void __launch_bounds__(NN_THREADS) ln_backward_columns(ct__layer_norm_args a) {
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < a.n;
         j += (int64_t)gridDim.x * blockDim.x) {
        double dw = 0.0, db = 0.0;
        for (int64_t r = 0; r < a.rows; r++) {
            double mean = ((const double *)a.mean)[r], invstd = ((const double *)a.invstd)[r];
            double g = nn_load(a.grad_out, r * a.n + j, a.dtype);
            dw += g * (nn_load(a.x, r * a.n + j, a.dtype) - mean) * invstd;
            db += g;
        }
        if (a.grad_weight) nn_store(a.grad_weight, j, a.dtype, dw);
        if (a.grad_bias) nn_store(a.grad_bias, j, a.dtype, db);
    }
}

} // namespace

extern "C" ct_status ct_cuda_layer_norm(int device, const ct__layer_norm_args *args) {
    if (args->rows * args->n == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    ln_forward<<<nn_row_blocks(args->rows), NN_THREADS, 0, stream>>>(*args);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

extern "C" ct_status ct_cuda_layer_norm_backward(int device, const ct__layer_norm_args *args) {
    if (args->rows * args->n == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    if (args->grad_x) {
        ln_backward_rows<<<nn_row_blocks(args->rows), NN_THREADS, 0, stream>>>(*args);
        CT_CUDA_CHECK(device, cudaGetLastError());
    }
    if (args->grad_weight || args->grad_bias) {
        ln_backward_columns<<<nn_item_blocks(args->n), NN_THREADS, 0, stream>>>(*args);
        CT_CUDA_CHECK(device, cudaGetLastError());
    }
    return CT_OK;
}

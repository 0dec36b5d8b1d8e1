// CUDA batch and layer normalisation kernels, forward and backward (ct__batch_norm_args and
// ct__layer_norm_args in backend/norm_args_impl.h), the CPU's arithmetic (cpu_norm.c) in
// double. Batch norm: one block per channel, its threads striding over the channel's
// n * inner elements (runs of `inner` consecutive elements, so reads coalesce), two-pass
// statistics through block sums, then the normalised output, clamped at 0 when the ReLU is
// fused (args.relu; the backward then zeroes the gradient where the saved output y is not
// positive, in the same pass that reads it). Layer norm: one block per
// row; its weight and bias gradients take one thread per column summing over the rows
// (neighbouring threads read neighbouring columns).
#include "backend/cuda/cuda_nn_impl.cuh"

namespace {

NN_DEV double param_or(const char *p, int64_t i, ct_dtype dtype, double absent) {
    return p ? nn_load(p, i, dtype) : absent;
}

// The position of the channel's element e (of n * inner) in the (n, c, inner) array.
NN_DEV int64_t bn_at(const ct__batch_norm_args &a, int64_t ch, int64_t e) {
    return (e / a.inner * a.c + ch) * a.inner + e % a.inner;
}

NN_DEV void bn_statistics(const ct__batch_norm_args &a, int64_t ch, double *shared, double *mean,
                          double *invstd) {
    int64_t count = a.n * a.inner;
    if (!a.training) {
        *mean = nn_load(a.running_mean, ch * a.running_mean_stride, a.running_mean_dtype);
        double var = nn_load(a.running_var, ch * a.running_var_stride, a.running_var_dtype);
        *invstd = 1.0 / sqrt(var + a.eps);
        return;
    }
    double sum = 0.0, sq = 0.0;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x)
        sum += nn_load(a.x, bn_at(a, ch, e), a.dtype);
    double m = nn_block_sum(sum, shared) / (double)count;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
        double d = nn_load(a.x, bn_at(a, ch, e), a.dtype) - m;
        sq += d * d;
    }
    sq = nn_block_sum(sq, shared);
    *mean = m;
    *invstd = 1.0 / sqrt(sq / (double)count + a.eps);
    if (threadIdx.x != 0) return;
    double mom = a.momentum;
    if (a.running_mean) {
        int64_t i = ch * a.running_mean_stride;
        double old = nn_load(a.running_mean, i, a.running_mean_dtype);
        nn_store(a.running_mean, i, a.running_mean_dtype, (1.0 - mom) * old + mom * m);
    }
    if (a.running_var) {
        int64_t i = ch * a.running_var_stride;
        double old = nn_load(a.running_var, i, a.running_var_dtype);
        nn_store(a.running_var, i, a.running_var_dtype,
                 (1.0 - mom) * old + mom * sq / ((double)count - 1.0));
    }
}

__global__ void __launch_bounds__(NN_THREADS) bn_forward(ct__batch_norm_args a) {
    __shared__ double shared[NN_THREADS / 32];
    int64_t count = a.n * a.inner;
    for (int64_t ch = blockIdx.x; ch < a.c; ch += gridDim.x) {
        double mean, invstd;
        bn_statistics(a, ch, shared, &mean, &invstd);
        if (threadIdx.x == 0) {
            ((double *)a.mean)[ch] = mean;
            ((double *)a.invstd)[ch] = invstd;
        }
        double scale = invstd * param_or(a.weight, ch, a.dtype, 1.0);
        double shift = param_or(a.bias, ch, a.dtype, 0.0) - mean * scale;
        for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
            int64_t at = bn_at(a, ch, e);
            double v = nn_load(a.x, at, a.dtype) * scale + shift;
            nn_store(a.y, at, a.dtype, a.relu && v < 0.0 ? 0.0 : v);
        }
    }
}

// The incoming gradient at `at`: grad_out, or 0 where the fused ReLU's output is not positive.
NN_DEV double bn_grad(const ct__batch_norm_args &a, int64_t at) {
    double g = nn_load(a.grad_out, at, a.dtype);
    return a.relu && !(nn_load(a.y, at, a.dtype) > 0.0) ? 0.0 : g;
}

// Training: dx = w * invstd * (g - mean(g) - xhat * mean(g * xhat)); evaluation:
// dx = g * w * invstd. dw = sum(g * xhat), db = sum(g); g as bn_grad's.
__global__ void __launch_bounds__(NN_THREADS) bn_backward(ct__batch_norm_args a) {
    __shared__ double shared[NN_THREADS / 32];
    int64_t count = a.n * a.inner;
    for (int64_t ch = blockIdx.x; ch < a.c; ch += gridDim.x) {
        double mean = ((const double *)a.mean)[ch], invstd = ((const double *)a.invstd)[ch];
        double sum_g = 0.0, sum_gd = 0.0;
        for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
            int64_t at = bn_at(a, ch, e);
            double g = bn_grad(a, at);
            sum_g += g;
            sum_gd += g * (nn_load(a.x, at, a.dtype) - mean);
        }
        sum_g = nn_block_sum(sum_g, shared);
        sum_gd = nn_block_sum(sum_gd, shared);
        if (threadIdx.x == 0) {
            if (a.grad_weight) nn_store(a.grad_weight, ch, a.dtype, sum_gd * invstd);
            if (a.grad_bias) nn_store(a.grad_bias, ch, a.dtype, sum_g);
        }
        if (!a.grad_x) continue;
        double k = param_or(a.weight, ch, a.dtype, 1.0) * invstd;
        double mean_g = a.training ? sum_g / (double)count : 0.0;
        double slope = a.training ? sum_gd * invstd * invstd / (double)count : 0.0;
        for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
            int64_t at = bn_at(a, ch, e);
            double g = bn_grad(a, at);
            double d = nn_load(a.x, at, a.dtype) - mean;
            nn_store(a.grad_x, at, a.dtype, k * (g - mean_g - d * slope));
        }
    }
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

extern "C" ct_status ct_cuda_batch_norm(int device, const ct__batch_norm_args *args) {
    if (args->c == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    bn_forward<<<nn_row_blocks(args->c), NN_THREADS, 0, stream>>>(*args);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

extern "C" ct_status ct_cuda_batch_norm_backward(int device, const ct__batch_norm_args *args) {
    if (args->c == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    bn_backward<<<nn_row_blocks(args->c), NN_THREADS, 0, stream>>>(*args);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

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

// CUDA cross-entropy kernels with a fused log-softmax (ct__cross_entropy_args in
// backend/norm_args_impl.h), the CPU's arithmetic (cpu_loss.c) in double. Forward: one block
// per row writes the row's loss to a float64 scratch array (and to the output for
// CT_REDUCTION_NONE), then one block sums the rows in a fixed order, counts the rows not
// ignored and writes the reduced loss. A target out of range is reported through a device
// slot, read back after the kernels (this waits for the stream); without args->check_targets
// there is no slot and no wait (the row's loss is 0). Backward: one block per row, from the
// log-sum-exp of each row that the forward kept.
#include "backend/cuda/cuda_nn_impl.cuh"

namespace {

NN_DEV int64_t load_target(const ct__cross_entropy_args &a, int64_t i) {
    return a.target_dtype == CT_I32 ? ((const int32_t *)a.target)[i]
                                    : ((const int64_t *)a.target)[i];
}

// The row's maximum and log-sum-exp, in every thread of the block.
NN_DEV void row_lse(const ct__cross_entropy_args &a, int64_t base, double *shared, double *lse) {
    double m = -INFINITY, sum = 0.0;
    for (int64_t k = threadIdx.x; k < a.c; k += blockDim.x)
        m = fmax(m, nn_load(a.logits, base + k, a.dtype));
    m = nn_block_max(m, shared);
    for (int64_t k = threadIdx.x; k < a.c; k += blockDim.x)
        sum += exp(nn_load(a.logits, base + k, a.dtype) - m);
    sum = nn_block_sum(sum, shared);
    *lse = m + log(sum);
}

__global__ void __launch_bounds__(NN_THREADS)
    ce_rows(ct__cross_entropy_args a, double *losses, nn_bad_slot *slot) {
    __shared__ double shared[NN_THREADS / 32];
    bool per_row = a.reduction == CT_REDUCTION_NONE;
    for (int64_t row = blockIdx.x; row < a.n; row += gridDim.x) {
        int64_t t = load_target(a, row); // the same in every thread: branches are uniform
        if (t == a.ignore_index || t < 0 || t >= a.c) {
            if (threadIdx.x == 0) {
                if (t != a.ignore_index && slot) nn_report_bad(slot, t);
                losses[row] = 0.0;
                if (per_row) nn_store(a.out, row, a.dtype, 0.0);
            }
            continue;
        }
        int64_t base = row * a.c;
        double lse, sum_x = 0.0;
        row_lse(a, base, shared, &lse);
        if (a.label_smoothing != 0.0) {
            for (int64_t k = threadIdx.x; k < a.c; k += blockDim.x)
                sum_x += nn_load(a.logits, base + k, a.dtype);
            sum_x = nn_block_sum(sum_x, shared);
        }
        if (threadIdx.x == 0) {
            double nll = lse - nn_load(a.logits, base + t, a.dtype), loss = nll;
            if (a.label_smoothing != 0.0)
                loss = (1.0 - a.label_smoothing) * nll +
                       a.label_smoothing * (lse - sum_x / (double)a.c);
            losses[row] = loss;
            ((double *)a.lse)[row] = lse;
            if (per_row) nn_store(a.out, row, a.dtype, loss);
        }
    }
}

// One block: the sum of the row losses, the count of rows not ignored, the reduced loss.
__global__ void __launch_bounds__(NN_THREADS)
    ce_finish(ct__cross_entropy_args a, const double *losses) {
    __shared__ double shared[NN_THREADS / 32];
    double total = 0.0, count = 0.0;
    for (int64_t i = threadIdx.x; i < a.n; i += blockDim.x) {
        int64_t t = load_target(a, i);
        total += losses[i];
        count += t != a.ignore_index ? 1.0 : 0.0;
    }
    total = nn_block_sum(total, shared);
    count = nn_block_sum(count, shared);
    if (threadIdx.x != 0) return;
    *(double *)a.count = count;
    if (a.reduction == CT_REDUCTION_SUM) nn_store(a.out, 0, a.dtype, total);
    if (a.reduction == CT_REDUCTION_MEAN)
        nn_store(a.out, 0, a.dtype, count != 0.0 ? total / count : (double)NAN);
}

__global__ void __launch_bounds__(NN_THREADS) ce_backward_rows(ct__cross_entropy_args a) {
    double divisor = a.reduction == CT_REDUCTION_MEAN ? *(const double *)a.count : 1.0;
    for (int64_t row = blockIdx.x; row < a.n; row += gridDim.x) {
        int64_t t = load_target(a, row), base = row * a.c;
        if (t == a.ignore_index) {
            for (int64_t k = threadIdx.x; k < a.c; k += blockDim.x)
                nn_store(a.out, base + k, a.dtype, 0.0);
            continue;
        }
        double lse = ((const double *)a.lse)[row], ls = a.label_smoothing;
        double uniform = ls / (double)a.c;
        double scale = nn_load(a.grad, row * a.grad_stride, a.dtype) / divisor;
        for (int64_t k = threadIdx.x; k < a.c; k += blockDim.x) {
            double p = exp(nn_load(a.logits, base + k, a.dtype) - lse);
            double target = (k == t ? 1.0 - ls : 0.0) + uniform;
            nn_store(a.out, base + k, a.dtype, (p - target) * scale);
        }
    }
}

// The two forward kernels on the stream, with the scratch for the row losses.
ct_status forward(int device, cudaStream_t stream, const ct__cross_entropy_args *args,
                  nn_bad_slot *slot) {
    double *losses = NULL;
    size_t bytes = sizeof(double) * (size_t)(args->n > 0 ? args->n : 1);
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)&losses, bytes, stream));
    if (args->n > 0)
        ce_rows<<<nn_row_blocks(args->n), NN_THREADS, 0, stream>>>(*args, losses, slot);
    cudaError_t launched = cudaGetLastError();
    if (launched == cudaSuccess) {
        ce_finish<<<1, NN_THREADS, 0, stream>>>(*args, losses);
        launched = cudaGetLastError();
    }
    cudaError_t freed = cudaFreeAsync(losses, stream);
    CT_CUDA_CHECK(device, launched);
    CT_CUDA_CHECK(device, freed);
    return CT_OK;
}

} // namespace

extern "C" ct_status ct_cuda_cross_entropy(int device, const ct__cross_entropy_args *args) {
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status == CT_OK && !args->check_targets) return forward(device, stream, args, NULL);
    nn_bad_slot *slot = NULL;
    if (status == CT_OK) status = nn_slot_begin(device, stream, &slot);
    if (status != CT_OK) return status;
    status = forward(device, stream, args, slot);
    bool failed = false;
    int64_t target = 0;
    ct_status finished = nn_slot_finish(device, stream, slot, &failed, &target);
    if (status != CT_OK) return status;
    if (finished != CT_OK) return finished;
    if (!failed) return CT_OK;
    return ct_cuda_fail(CT_ERR_INVALID_ARG,
                        "ct_cross_entropy: target %lld is out of range for %lld classes (valid "
                        "labels are 0 to %lld, or ignore_index %lld for a row that counts for "
                        "nothing)",
                        (long long)target, (long long)args->c, (long long)args->c - 1,
                        (long long)args->ignore_index);
}

extern "C" ct_status ct_cuda_cross_entropy_backward(int device,
                                                    const ct__cross_entropy_args *args) {
    if (args->n * args->c == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    ce_backward_rows<<<nn_row_blocks(args->n), NN_THREADS, 0, stream>>>(*args);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

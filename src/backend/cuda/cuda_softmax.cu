// CUDA softmax and log-softmax kernels, forward and backward (ct__softmax_args in
// backend/norm_args_impl.h), the CPU's arithmetic (cpu_softmax.c) in double. Along the last
// axis (inner == 1) one block takes a row, its threads striding over the row and combining
// through block reductions; along another axis one thread takes a line (its elements are
// `inner` apart, so neighbouring threads read neighbouring elements).
#include "backend/cuda/cuda_nn_impl.cuh"

namespace {

// Forward of one line through a thread (STEP 1, START 0) or a row through a block
// (STEP blockDim.x, START threadIdx.x, REDUCE across the block).
template <bool BLOCK>
NN_DEV void softmax_line(const ct__softmax_args &a, int64_t base, int64_t s, double *shared) {
    int64_t start = BLOCK ? threadIdx.x : 0, step = BLOCK ? blockDim.x : 1;
    double m = -INFINITY, sum = 0.0;
    for (int64_t k = start; k < a.n; k += step) m = fmax(m, nn_load(a.in, base + k * s, a.dtype));
    if (BLOCK) m = nn_block_max(m, shared);
    for (int64_t k = start; k < a.n; k += step)
        sum += exp(nn_load(a.in, base + k * s, a.dtype) - m);
    if (BLOCK) sum = nn_block_sum(sum, shared);
    double lse = m + log(sum), inv = 1.0 / sum;
    for (int64_t k = start; k < a.n; k += step) {
        double x = nn_load(a.in, base + k * s, a.dtype);
        nn_store(a.out, base + k * s, a.dtype, a.log ? x - lse : exp(x - m) * inv);
    }
}

// Backward: softmax dx = y * (g - sum(g * y)); log-softmax dx = g - exp(y) * sum(g).
template <bool BLOCK>
NN_DEV void softmax_backward_line(const ct__softmax_args &a, int64_t base, int64_t s,
                                  double *shared) {
    int64_t start = BLOCK ? threadIdx.x : 0, step = BLOCK ? blockDim.x : 1;
    double dot = 0.0;
    for (int64_t k = start; k < a.n; k += step) {
        double g = nn_load(a.grad, base + k * s, a.dtype);
        dot += a.log ? g : g * nn_load(a.in, base + k * s, a.dtype);
    }
    if (BLOCK) dot = nn_block_sum(dot, shared);
    for (int64_t k = start; k < a.n; k += step) {
        double g = nn_load(a.grad, base + k * s, a.dtype), y = nn_load(a.in, base + k * s, a.dtype);
        nn_store(a.out, base + k * s, a.dtype, a.log ? g - exp(y) * dot : y * (g - dot));
    }
}

template <bool BACKWARD>
__global__ void __launch_bounds__(NN_THREADS) softmax_rows(ct__softmax_args a) {
    __shared__ double shared[NN_THREADS / 32];
    for (int64_t row = blockIdx.x; row < a.outer; row += gridDim.x) {
        if (BACKWARD)
            softmax_backward_line<true>(a, row * a.n, 1, shared);
        else
            softmax_line<true>(a, row * a.n, 1, shared);
    }
}

template <bool BACKWARD>
__global__ void __launch_bounds__(NN_THREADS) softmax_lines(ct__softmax_args a) {
    int64_t lines = a.outer * a.inner;
    for (int64_t line = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; line < lines;
         line += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = line / a.inner * a.n * a.inner + line % a.inner;
        if (BACKWARD)
            softmax_backward_line<false>(a, base, a.inner, NULL);
        else
            softmax_line<false>(a, base, a.inner, NULL);
    }
}

template <bool BACKWARD> ct_status launch(int device, const ct__softmax_args *args) {
    if (args->outer * args->n * args->inner == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    if (args->inner == 1)
        softmax_rows<BACKWARD><<<nn_row_blocks(args->outer), NN_THREADS, 0, stream>>>(*args);
    else
        softmax_lines<BACKWARD>
            <<<nn_item_blocks(args->outer * args->inner), NN_THREADS, 0, stream>>>(*args);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

} // namespace

extern "C" ct_status ct_cuda_softmax(int device, const ct__softmax_args *args) {
    return launch<false>(device, args);
}

extern "C" ct_status ct_cuda_softmax_backward(int device, const ct__softmax_args *args) {
    return launch<true>(device, args);
}

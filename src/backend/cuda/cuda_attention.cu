// CUDA scaled dot-product attention, forward and backward (ct__attention_args in
// backend/norm_args_impl.h), flash-attention style: no tq x tk matrix, tiles of 32 keys (or
// queries) in shared memory, an online softmax with its statistics in the compute type
// (float for f32, f16 and bf16 data; double for f64).
//
// Every kernel gives each thread one row of its own (a query row in the forward and in the
// grad_q kernel, a key row in the grad_k / grad_v kernel), kept in shared memory at a padded
// stride (conflict-free), and walks the other side in tiles that every thread of the block
// reads at the same address (broadcast). A tile's 32 scores per thread stay in registers
// (the loops over them are unrolled). The backward is FlashAttention-2's, recomputing the
// probabilities from the saved log-sum-exp, in two kernels (grad_q over key tiles; grad_k and
// grad_v over query tiles), so each output element is written by one thread in a fixed order:
// no atomics, the same bits on every run, with or without ct_use_deterministic_algorithms.
// CUDA cores only; the tensor cores (WMMA / mma.sync) are not used yet.
//
// CUDA runtime calls, as the CUDA Runtime API reference documents them:
// cudaDeviceGetAttribute with cudaDevAttrMaxSharedMemoryPerBlockOptin (the most dynamic shared
// memory a block may opt in to), cudaFuncSetAttribute with
// cudaFuncAttributeMaxDynamicSharedMemorySize (needed above 48 KiB, CUDA C++ Programming
// Guide, "Shared Memory" of compute capability 7.x and later), cudaGetLastError after each
// launch; the launches use the execution configuration <<<grid, block, dynamic shared bytes,
// stream>>> (Programming Guide, "Execution Configuration") with an `extern __shared__` array.
#include <limits.h>

#include "backend/cuda/cuda_nn_impl.cuh"
#include "core/philox_impl.h"

namespace {

constexpr int TILE = 32;     // the other side's rows per shared tile
constexpr int MAX_ROWS = 64; // rows (threads) per block, halved when shared memory is short

// Element offset of problem b's mask plane.
__device__ int64_t mask_base(const ct__attention_args &a, int64_t b) {
    int64_t at = 0;
    for (int ax = a.mask_batch_ndim - 1; ax >= 0; ax--) {
        at += b % a.mask_batch_shape[ax] * a.mask_batch_strides[ax];
        b /= a.mask_batch_shape[ax];
    }
    return at;
}

// What is added to score (i, j): the float mask's value, 0, or -inf for a key row i does not
// see (a false in the bool mask, causal with j > i, or j past the keys).
template <typename T>
__device__ __forceinline__ T score_bias(const ct__attention_args &a, int64_t mbase, int64_t i,
                                        int64_t j) {
    if (j >= a.tk || (a.causal && j > i)) return (T)-INFINITY;
    if (!a.mask) return (T)0;
    int64_t at = mbase + i * a.mask_stride_q + j * a.mask_stride_k;
    if (a.mask_dtype == CT_BOOL) return ((const uint8_t *)a.mask)[at] ? (T)0 : (T)-INFINITY;
    return (T)nn_load(a.mask, at, a.mask_dtype);
}

// Dropout's factor for score (i, j) of problem b: 0 or 1 / (1 - p) (the stream layout of
// norm_args_impl.h; the CPU's rule, cpu_attention_typed_impl.h).
template <typename T>
__device__ T dropout_factor(const ct__attention_args &a, int64_t b, int64_t i, int64_t j) {
    uint64_t e = (uint64_t)(b * a.tq + i) * (uint64_t)a.tk + (uint64_t)j;
    uint32_t w[4];
    ct__philox_stream_block(a.seed, a.offset + e / 4, w);
    return ct__philox_uniform(w[e % 4], 32) >= a.dropout_p ? (T)(1.0 / (1.0 - a.dropout_p)) : (T)0;
}

__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }

// Rows [r0, r0 + rows) of a problem's (length x n) array (its first row at global row
// `first`) into dst at leading dimension ld; rows at or past `length` are zero. Every thread
// of the block takes part.
template <typename T>
__device__ void load_rows(T *dst, int64_t ld, const char *src, ct_dtype dtype, int64_t first,
                          int64_t r0, int rows, int64_t length, int64_t n) {
    for (int64_t e = threadIdx.x; e < rows * n; e += blockDim.x) {
        int64_t r = e / n, c = e % n;
        dst[r * ld + c] = r0 + r < length ? (T)nn_load(src, (first + r0 + r) * n + c, dtype) : (T)0;
    }
}

// The shared memory of each kernel for `rows` threads, in elements of T.
template <typename T> size_t forward_shared(const ct__attention_args &a, int rows) {
    return sizeof(T) * (size_t)(rows * (a.d + 1 + a.dv + 1) + TILE * (a.d + a.dv));
}
template <typename T> size_t grad_q_shared(const ct__attention_args &a, int rows) {
    return sizeof(T) * (size_t)(rows * (2 * (a.d + 1) + a.dv + 1) + TILE * (a.d + a.dv));
}
template <typename T> size_t grad_kv_shared(const ct__attention_args &a, int rows) {
    return sizeof(T) *
           (size_t)(rows * (2 * (a.d + 1) + 2 * (a.dv + 1)) + TILE * (a.d + a.dv) + 2 * TILE);
}

extern __shared__ double shared_memory[];

// Forward: thread t of block (b, blk) takes query row i = blk * blockDim.x + t.
template <typename T> __global__ void attention_forward(ct__attention_args a, int64_t blocks) {
    const int rows = blockDim.x, t = threadIdx.x;
    const int64_t d = a.d, dv = a.dv, b = blockIdx.x / blocks;
    const int64_t i0 = blockIdx.x % blocks * rows, i = i0 + t;
    const bool live = i < a.tq;
    T *qs = reinterpret_cast<T *>(shared_memory), *os = qs + rows * (d + 1);
    T *ks = os + rows * (dv + 1), *vs = ks + TILE * d;
    load_rows(qs, d + 1, a.q, a.dtype, b * a.tq, i0, rows, a.tq, d);
    for (int64_t e = t; e < rows * (dv + 1); e += rows) os[e] = 0;
    __syncthreads();
    const int64_t mbase = mask_base(a, b);
    const T scale = (T)a.scale;
    const T *qrow = qs + t * (d + 1);
    T *orow = os + t * (dv + 1);
    T m = (T)-INFINITY, l = 0;
    // Causal: no row of the block sees a key past its last row.
    const int64_t keys = a.causal && i0 + rows < a.tk ? i0 + rows : a.tk;
    for (int64_t j0 = 0; j0 < keys; j0 += TILE) {
        __syncthreads(); // the previous tile is consumed
        load_rows(ks, d, a.k, a.dtype, b * a.tk, j0, TILE, a.tk, d);
        load_rows(vs, dv, a.v, a.dtype, b * a.tk, j0, TILE, a.tk, dv);
        __syncthreads();
        if (!live) continue;
        T s[TILE];
#pragma unroll
        for (int j = 0; j < TILE; j++) s[j] = 0;
        for (int64_t c = 0; c < d; c++) {
            const T x = qrow[c];
#pragma unroll
            for (int j = 0; j < TILE; j++) s[j] += x * ks[j * d + c];
        }
        T mx = (T)-INFINITY;
#pragma unroll
        for (int j = 0; j < TILE; j++) {
            s[j] = s[j] * scale + score_bias<T>(a, mbase, i, j0 + j);
            mx = s[j] > mx ? s[j] : mx;
        }
        const T mnew = mx > m ? mx : m;
        if (mnew == (T)-INFINITY) continue; // no key seen yet
        const T alpha = m == (T)-INFINITY ? (T)0 : exp_of(m - mnew);
        T sum = 0;
#pragma unroll
        for (int j = 0; j < TILE; j++) {
            s[j] = exp_of(s[j] - mnew);
            sum += s[j];
        }
        l = l * alpha + sum;
        m = mnew;
        if (a.dropout_p > 0) {
#pragma unroll
            for (int j = 0; j < TILE; j++)
                if (s[j] != 0) s[j] *= dropout_factor<T>(a, b, i, j0 + j);
        }
        for (int64_t c = 0; c < dv; c++) {
            T acc = orow[c] * alpha;
#pragma unroll
            for (int j = 0; j < TILE; j++) acc += s[j] * vs[j * dv + c];
            orow[c] = acc;
        }
    }
    if (!live) return;
    const int64_t row = b * a.tq + i;
    const T inv = l > 0 ? (T)1 / l : (T)0;
    for (int64_t c = 0; c < dv; c++)
        nn_store(a.out, row * dv + c, a.dtype, (double)(orow[c] * inv));
    ((double *)a.lse)[row] = l > 0 ? (double)m + log((double)l) : -INFINITY;
}

// grad_q: thread t takes query row i; over the key tiles,
//     dS_ij = p_ij (z_ij dO_i . v_j - D_i),  dQ_i = scale sum_j dS_ij k_j,
// with p_ij = exp(s_ij - lse_i) and D_i = dO_i . O_i.
template <typename T> __global__ void attention_grad_q(ct__attention_args a, int64_t blocks) {
    const int rows = blockDim.x, t = threadIdx.x;
    const int64_t d = a.d, dv = a.dv, b = blockIdx.x / blocks;
    const int64_t i0 = blockIdx.x % blocks * rows, i = i0 + t;
    const bool live = i < a.tq;
    T *qs = reinterpret_cast<T *>(shared_memory), *gs = qs + rows * (d + 1);
    T *dqs = gs + rows * (dv + 1), *ks = dqs + rows * (d + 1), *vs = ks + TILE * d;
    load_rows(qs, d + 1, a.q, a.dtype, b * a.tq, i0, rows, a.tq, d);
    load_rows(gs, dv + 1, a.grad_out, a.dtype, b * a.tq, i0, rows, a.tq, dv);
    for (int64_t e = t; e < rows * (d + 1); e += rows) dqs[e] = 0;
    __syncthreads();
    const int64_t mbase = mask_base(a, b), row = b * a.tq + i;
    const T scale = (T)a.scale;
    const T *qrow = qs + t * (d + 1), *grow = gs + t * (dv + 1);
    T *dqrow = dqs + t * (d + 1);
    const double lse_d = live ? ((const double *)a.lse)[row] : -INFINITY;
    const T lse = (T)lse_d;
    T di = 0;
    if (live)
        for (int64_t c = 0; c < dv; c++) di += grow[c] * (T)nn_load(a.out, row * dv + c, a.dtype);
    const int64_t keys = a.causal && i0 + rows < a.tk ? i0 + rows : a.tk;
    for (int64_t j0 = 0; j0 < keys; j0 += TILE) {
        __syncthreads();
        load_rows(ks, d, a.k, a.dtype, b * a.tk, j0, TILE, a.tk, d);
        load_rows(vs, dv, a.v, a.dtype, b * a.tk, j0, TILE, a.tk, dv);
        __syncthreads();
        if (!live || lse_d == -INFINITY) continue; // a row that sees no key has no gradient
        T s[TILE], dp[TILE];
#pragma unroll
        for (int j = 0; j < TILE; j++) s[j] = 0, dp[j] = 0;
        for (int64_t c = 0; c < d; c++) {
            const T x = qrow[c];
#pragma unroll
            for (int j = 0; j < TILE; j++) s[j] += x * ks[j * d + c];
        }
        for (int64_t c = 0; c < dv; c++) {
            const T x = grow[c];
#pragma unroll
            for (int j = 0; j < TILE; j++) dp[j] += x * vs[j * dv + c];
        }
#pragma unroll
        for (int j = 0; j < TILE; j++) {
            const T p = exp_of(s[j] * scale + score_bias<T>(a, mbase, i, j0 + j) - lse);
            const T z = a.dropout_p > 0 && p != 0 ? dropout_factor<T>(a, b, i, j0 + j) : (T)1;
            s[j] = scale * p * (z * dp[j] - di);
        }
        for (int64_t c = 0; c < d; c++) {
            T acc = dqrow[c];
#pragma unroll
            for (int j = 0; j < TILE; j++) acc += s[j] * ks[j * d + c];
            dqrow[c] = acc;
        }
    }
    if (live)
        for (int64_t c = 0; c < d; c++) nn_store(a.grad_q, row * d + c, a.dtype, (double)dqrow[c]);
}

// grad_k and grad_v: thread t takes key row j; over the query tiles,
//     dV_j = sum_i z_ij p_ij dO_i,  dK_j = scale sum_i dS_ij q_i.
template <typename T> __global__ void attention_grad_kv(ct__attention_args a, int64_t blocks) {
    const int rows = blockDim.x, t = threadIdx.x;
    const int64_t d = a.d, dv = a.dv, b = blockIdx.x / blocks;
    const int64_t j0 = blockIdx.x % blocks * rows, j = j0 + t;
    const bool live = j < a.tk;
    T *ks = reinterpret_cast<T *>(shared_memory), *vs = ks + rows * (d + 1);
    T *dks = vs + rows * (dv + 1), *dvs = dks + rows * (d + 1);
    T *qs = dvs + rows * (dv + 1), *gs = qs + TILE * d, *lses = gs + TILE * dv;
    T *dls = lses + TILE;
    load_rows(ks, d + 1, a.k, a.dtype, b * a.tk, j0, rows, a.tk, d);
    load_rows(vs, dv + 1, a.v, a.dtype, b * a.tk, j0, rows, a.tk, dv);
    for (int64_t e = t; e < rows * (d + 1); e += rows) dks[e] = 0;
    for (int64_t e = t; e < rows * (dv + 1); e += rows) dvs[e] = 0;
    __syncthreads(); // the rows are loaded and zeroed, even where no query tile follows
    const int64_t mbase = mask_base(a, b);
    const T scale = (T)a.scale;
    const T *krow = ks + t * (d + 1), *vrow = vs + t * (dv + 1);
    T *dkrow = dks + t * (d + 1), *dvrow = dvs + t * (dv + 1);
    // Causal: no query before the block's first key sees any of its keys.
    for (int64_t q0 = a.causal ? j0 : 0; q0 < a.tq; q0 += TILE) {
        __syncthreads();
        load_rows(qs, d, a.q, a.dtype, b * a.tq, q0, TILE, a.tq, d);
        load_rows(gs, dv, a.grad_out, a.dtype, b * a.tq, q0, TILE, a.tq, dv);
        __syncthreads();
        for (int r = t; r < TILE; r += rows) {
            const int64_t i = q0 + r, row = b * a.tq + i;
            const double lse = i < a.tq ? ((const double *)a.lse)[row] : -INFINITY;
            T di = 0;
            if (lse != -INFINITY)
                for (int64_t c = 0; c < dv; c++)
                    di += gs[r * dv + c] * (T)nn_load(a.out, row * dv + c, a.dtype);
            lses[r] = (T)lse;
            dls[r] = di;
        }
        __syncthreads();
        if (!live) continue;
        T s[TILE], dp[TILE];
#pragma unroll
        for (int r = 0; r < TILE; r++) s[r] = 0, dp[r] = 0;
        for (int64_t c = 0; c < d; c++) {
            const T x = krow[c];
#pragma unroll
            for (int r = 0; r < TILE; r++) s[r] += x * qs[r * d + c];
        }
        for (int64_t c = 0; c < dv; c++) {
            const T x = vrow[c];
#pragma unroll
            for (int r = 0; r < TILE; r++) dp[r] += x * gs[r * dv + c];
        }
#pragma unroll
        for (int r = 0; r < TILE; r++) {
            const int64_t i = q0 + r;
            // A row past the queries, or one that sees no key, has lse -inf: p = 0.
            const T p = lses[r] == (T)-INFINITY
                            ? (T)0
                            : exp_of(s[r] * scale + score_bias<T>(a, mbase, i, j) - lses[r]);
            const T z = a.dropout_p > 0 && p != 0 ? dropout_factor<T>(a, b, i, j) : (T)1;
            s[r] = scale * p * (z * dp[r] - dls[r]);
            dp[r] = z * p;
        }
        for (int64_t c = 0; c < dv; c++) {
            T acc = dvrow[c];
#pragma unroll
            for (int r = 0; r < TILE; r++) acc += dp[r] * gs[r * dv + c];
            dvrow[c] = acc;
        }
        for (int64_t c = 0; c < d; c++) {
            T acc = dkrow[c];
#pragma unroll
            for (int r = 0; r < TILE; r++) acc += s[r] * qs[r * d + c];
            dkrow[c] = acc;
        }
    }
    if (!live) return;
    const int64_t row = b * a.tk + j;
    for (int64_t c = 0; c < d; c++) nn_store(a.grad_k, row * d + c, a.dtype, (double)dkrow[c]);
    for (int64_t c = 0; c < dv; c++) nn_store(a.grad_v, row * dv + c, a.dtype, (double)dvrow[c]);
}

typedef size_t (*shared_fn)(const ct__attention_args &a, int rows);
typedef void (*kernel_fn)(ct__attention_args a, int64_t blocks);

// Launch kernel with one thread per row of `length` rows per problem: MAX_ROWS threads per
// block, or fewer when the rows' shared memory exceeds what a block may opt in to.
ct_status launch(int device, cudaStream_t stream, kernel_fn kernel, shared_fn shared,
                 const ct__attention_args *a, int64_t length) {
    int optin = 0;
    CT_CUDA_CHECK(device,
                  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    int rows = MAX_ROWS;
    while (rows > TILE && shared(*a, rows) > (size_t)optin) rows /= 2;
    size_t bytes = shared(*a, rows);
    if (bytes > (size_t)optin)
        return ct_cuda_fail(CT_ERR_UNSUPPORTED,
                            "attention: head sizes %lld (query, key) and %lld (value) need %zu "
                            "bytes of shared memory per block; device %d allows %d",
                            (long long)a->d, (long long)a->dv, bytes, device, optin);
    if (bytes > 48 * 1024)
        CT_CUDA_CHECK(device, cudaFuncSetAttribute(
                                  kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    int64_t blocks = (length + rows - 1) / rows, grid = blocks * a->batch;
    if (grid > INT_MAX)
        return ct_cuda_fail(CT_ERR_UNSUPPORTED, "attention: %lld blocks exceed a grid's %d",
                            (long long)grid, INT_MAX);
    kernel<<<(unsigned)grid, rows, bytes, stream>>>(*a, blocks);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

} // namespace

extern "C" ct_status ct_cuda_attention(int device, const ct__attention_args *args) {
    if (args->batch * args->tq == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    if (args->dtype == CT_F64)
        return launch(device, stream, attention_forward<double>, forward_shared<double>, args,
                      args->tq);
    return launch(device, stream, attention_forward<float>, forward_shared<float>, args, args->tq);
}

extern "C" ct_status ct_cuda_attention_backward(int device, const ct__attention_args *args) {
    if (args->batch * (args->tq + args->tk) == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    bool f64 = args->dtype == CT_F64;
    status =
        f64 ? launch(device, stream, attention_grad_q<double>, grad_q_shared<double>, args,
                     args->tq)
            : launch(device, stream, attention_grad_q<float>, grad_q_shared<float>, args, args->tq);
    if (status != CT_OK) return status;
    return f64 ? launch(device, stream, attention_grad_kv<double>, grad_kv_shared<double>, args,
                        args->tk)
               : launch(device, stream, attention_grad_kv<float>, grad_kv_shared<float>, args,
                        args->tk);
}

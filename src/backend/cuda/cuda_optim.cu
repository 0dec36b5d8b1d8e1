// CUDA optimiser kernels: the fused SGD/Adam/AdamW update of a list of tensors in one
// multi-tensor launch, the norm and scaling of a list of gradients (gradient clipping), and
// the loss scaler's fused unscale and inf/NaN check.
//
// A launch covers a list of tensors cut into chunks of CHUNK elements. The host writes one
// table (the list's entries, then a chunk table of (tensor, start) pairs, then room for the
// norm's partials) and copies it through a pinned staging slot into stream-ordered scratch
// (a copy straight from pageable memory may wait for the stream, every step); each block takes
// chunks in a grid-stride loop and its threads stride over the chunk's elements. The element
// formulas are optim_update_impl.h's, shared with the CPU.
//
// The norm is deterministic: each chunk's partial is a fixed tree over the block's threads,
// written to its own slot, and one block merges the partials in chunk order; no float
// atomics. The host waits once, for the final value.
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/cuda_load_impl.cuh"
#include "backend/optim_update_impl.h"

namespace {

#define CHUNK 65536
#define THREADS 256
#define MAX_BLOCKS 1048576

struct chunk_entry {
    int tensor;
    int64_t start;
};

// The device table of one launch: entries (E), chunks, and `extra` bytes after them.
template <typename E> struct table {
    char *dev;           // the whole table (scratch on the stream)
    E *tensors;          // device copies of the entries
    chunk_entry *chunks; // nchunks entries
    int64_t nchunks;
    char *extra; // the extra bytes
};

static size_t align16(size_t n) { return (n + 15) / 16 * 16; }

// Write the table on the host and copy it into new scratch on the stream. The host buffer
// is freed before returning: the staged copy has read it by then.
template <typename E>
static ct_status upload(int device, cudaStream_t stream, const E *tensors, int count,
                        size_t extra_bytes, table<E> *t) {
    int64_t nchunks = 0;
    for (int k = 0; k < count; k++) nchunks += (tensors[k].numel + CHUNK - 1) / CHUNK;
    size_t chunks_at = align16((size_t)count * sizeof(E));
    size_t extra_at = align16(chunks_at + (size_t)nchunks * sizeof(chunk_entry));
    size_t bytes = extra_at + extra_bytes;
    char *host = (char *)malloc(extra_at);
    if (!host)
        return ct_cuda_fail(CT_ERR_OUT_OF_MEMORY,
                            "optimiser kernel: out of host memory for a table of %lld chunks",
                            (long long)nchunks);
    memcpy(host, tensors, (size_t)count * sizeof(E));
    chunk_entry *chunks = (chunk_entry *)(host + chunks_at);
    int64_t c = 0;
    for (int k = 0; k < count; k++)
        for (int64_t start = 0; start < tensors[k].numel; start += CHUNK) chunks[c++] = {k, start};
    cudaError_t result = cudaMallocAsync((void **)&t->dev, bytes, stream);
    if (result != cudaSuccess) {
        free(host);
        return ct_cuda_check_result(result, "cudaMallocAsync of the optimiser table", __FILE__,
                                    __LINE__, device);
    }
    ct_status status = ct_cuda_copy_from_host(device, t->dev, host, extra_at);
    free(host);
    if (status != CT_OK) {
        (void)cudaFreeAsync(t->dev, stream);
        return status;
    }
    t->tensors = (E *)t->dev;
    t->chunks = (chunk_entry *)(t->dev + chunks_at);
    t->nchunks = nchunks;
    t->extra = t->dev + extra_at;
    return CT_OK;
}

static unsigned grid_for(int64_t nchunks) {
    return nchunks > MAX_BLOCKS ? MAX_BLOCKS : (unsigned)(nchunks > 0 ? nchunks : 1);
}

// Elements [lo, hi) of one tensor's update, this block's threads striding over them.
#define DEVICE_UPDATE_(T, S)                                                                       \
    __device__ void update_##S(const ct__optim_args *a, const ct__optim_tensor *t, int64_t lo,     \
                               int64_t hi) {                                                       \
        T *p = (T *)t->param, *s0 = (T *)t->state[0], *s1 = (T *)t->state[1];                      \
        T *s2 = (T *)t->state[2];                                                                  \
        const T *g = (const T *)t->grad;                                                           \
        if (a->kind == CT_OPTIM_SGD) {                                                             \
            ct__sgd_coef_##S c = ct__sgd_coef_make_##S(a, t);                                      \
            for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x)                            \
                ct__sgd_update_##S(&c, p + i, g[i], s0 ? s0 + i : nullptr);                        \
            return;                                                                                \
        }                                                                                          \
        ct__adam_coef_##S c = ct__adam_coef_make_##S(a, t);                                        \
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x)                                \
            ct__adam_update_##S(&c, p + i, g[i], s0 + i, s1 + i, s2 ? s2 + i : nullptr);           \
    }

DEVICE_UPDATE_(float, f32)
DEVICE_UPDATE_(double, f64)

// args.tensors points at the device copy of the entries.
__global__ void optim_kernel(const __grid_constant__ ct__optim_args args, const chunk_entry *chunks,
                             int64_t nchunks) {
    for (int64_t c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const ct__optim_tensor *t = &args.tensors[chunks[c].tensor];
        int64_t lo = chunks[c].start;
        int64_t hi = lo + CHUNK < t->numel ? lo + CHUNK : t->numel;
        if (t->dtype == CT_F32)
            update_f32(&args, t, lo, hi);
        else
            update_f64(&args, t, lo, hi);
    }
}

__device__ double combine(double acc, double term, bool is_max) {
    return is_max ? ct__norm_max(acc, term) : acc + term;
}

// Combine the THREADS values of shared[] into shared[0] in a fixed tree.
__device__ void block_combine(double *shared, bool is_max) {
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            shared[threadIdx.x] = combine(shared[threadIdx.x], shared[threadIdx.x + s], is_max);
        __syncthreads();
    }
}

__global__ void norm_partials(const ct__list_tensor *tensors, const chunk_entry *chunks,
                              int64_t nchunks, double p, double *partials) {
    __shared__ double shared[THREADS];
    bool is_max = isinf(p);
    for (int64_t c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const ct__list_tensor *t = &tensors[chunks[c].tensor];
        int64_t lo = chunks[c].start;
        int64_t hi = lo + CHUNK < t->numel ? lo + CHUNK : t->numel;
        int64_t size = ct_cuda_dtype_size(t->dtype);
        double acc = 0.0;
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
            acc =
                combine(acc, ct__norm_term(ct__load_f64(t->data + i * size, t->dtype), p), is_max);
        shared[threadIdx.x] = acc;
        block_combine(shared, is_max);
        if (threadIdx.x == 0) partials[c] = shared[0];
        __syncthreads(); // shared[] is reused by the next chunk
    }
}

// One block: the partials in chunk order (thread t takes t, t + THREADS, ...), then a tree.
__global__ void norm_final(const double *partials, int64_t n, double p, double *out) {
    __shared__ double shared[THREADS];
    bool is_max = isinf(p);
    double acc = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += THREADS) acc = combine(acc, partials[i], is_max);
    shared[threadIdx.x] = acc;
    block_combine(shared, is_max);
    if (threadIdx.x == 0) *out = shared[0];
}

// f64 multiplies in double; f32, f16 and bf16 in float, as on the CPU.
__global__ void scale_kernel(const ct__list_tensor *tensors, const chunk_entry *chunks,
                             int64_t nchunks, double factor) {
    float f = (float)factor;
    for (int64_t c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const ct__list_tensor *t = &tensors[chunks[c].tensor];
        int64_t lo = chunks[c].start;
        int64_t hi = lo + CHUNK < t->numel ? lo + CHUNK : t->numel;
        int64_t size = ct_cuda_dtype_size(t->dtype);
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            char *x = t->data + i * size;
            if (t->dtype == CT_F64)
                *(double *)x *= factor;
            else
                ct__store_f64(x, t->dtype, (double)((float)ct__load_f64(x, t->dtype) * f));
        }
    }
}

// Free the table after the work queued on the stream; the first error wins.
static ct_status finish(int device, cudaStream_t stream, char *dev, cudaError_t launched) {
    cudaError_t freed = cudaFreeAsync(dev, stream);
    CT_CUDA_CHECK(device, launched);
    CT_CUDA_CHECK(device, freed);
    return CT_OK;
}

// After a failed read-back (its error recorded): the table freed in stream order, after the
// work that may still read it; that free's own failure is cleared, not reported over it.
static ct_status abandon(cudaStream_t stream, char *dev, ct_status status) {
    if (cudaFreeAsync(dev, stream) != cudaSuccess) (void)cudaGetLastError();
    return status;
}

} // namespace

extern "C" ct_status ct_cuda_optim_step(int device, const ct__optim_args *args) {
    if (args->count == 0 || args->total == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    table<ct__optim_tensor> t = {};
    status = upload(device, stream, args->tensors, args->count, 0, &t);
    if (status != CT_OK) return status;
    ct__optim_args a = *args;
    a.tensors = t.tensors;
    optim_kernel<<<grid_for(t.nchunks), THREADS, 0, stream>>>(a, t.chunks, t.nchunks);
    return finish(device, stream, t.dev, cudaGetLastError());
}

extern "C" ct_status ct_cuda_list_norm(int device, const ct__list_args *args, double p,
                                       double *out) {
    *out = 0.0;
    if (args->count == 0 || args->total == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    int64_t nchunks = 0;
    for (int k = 0; k < args->count; k++) nchunks += (args->tensors[k].numel + CHUNK - 1) / CHUNK;
    table<ct__list_tensor> t = {};
    status = upload(device, stream, args->tensors, args->count,
                    (size_t)(nchunks + 1) * sizeof(double), &t);
    if (status != CT_OK) return status;
    double *partials = (double *)t.extra, *result = partials + t.nchunks;
    static_assert(sizeof *result == CT_READBACK_NORM, "the op layer counts this read");
    norm_partials<<<grid_for(t.nchunks), THREADS, 0, stream>>>(t.tensors, t.chunks, t.nchunks, p,
                                                               partials);
    cudaError_t launched = cudaGetLastError();
    if (launched == cudaSuccess) {
        norm_final<<<1, THREADS, 0, stream>>>(partials, t.nchunks, p, result);
        launched = cudaGetLastError();
    }
    if (launched == cudaSuccess)
        status = ct_cuda_read_back(device, stream, out, result, sizeof *out, "a list's norm");
    if (status != CT_OK) return abandon(stream, t.dev, status);
    return finish(device, stream, t.dev, launched);
}

extern "C" ct_status ct_cuda_list_scale(int device, const ct__list_args *args, double factor) {
    if (args->count == 0 || args->total == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    table<ct__list_tensor> t = {};
    status = upload(device, stream, args->tensors, args->count, 0, &t);
    if (status != CT_OK) return status;
    scale_kernel<<<grid_for(t.nchunks), THREADS, 0, stream>>>(t.tensors, t.chunks, t.nchunks,
                                                              factor);
    return finish(device, stream, t.dev, cudaGetLastError());
}

namespace {

// No tensor flagged: the bytes cudaMemsetAsync(0x7f) writes.
#define NONE_FLAGGED 0x7f7f7f7f

// The loss scaler's unscale: x *= inv_scale (f64 in double; f32, f16 and bf16 in float) and
// the smallest index of a tensor that held an inf or NaN, by atomicMin on one int.
__global__ void unscale_kernel(const ct__list_tensor *tensors, const chunk_entry *chunks,
                               int64_t nchunks, double inv_scale, int *first_bad) {
    float f = (float)inv_scale;
    for (int64_t c = blockIdx.x; c < nchunks; c += gridDim.x) {
        int k = chunks[c].tensor;
        const ct__list_tensor *t = &tensors[k];
        int64_t lo = chunks[c].start;
        int64_t hi = lo + CHUNK < t->numel ? lo + CHUNK : t->numel;
        int64_t size = ct_cuda_dtype_size(t->dtype);
        bool bad = false;
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            char *x = t->data + i * size;
            double v = ct__load_f64(x, t->dtype);
            bad |= !isfinite(v);
            if (t->dtype == CT_F64)
                *(double *)x = v * inv_scale;
            else
                ct__store_f64(x, t->dtype, (double)((float)v * f));
        }
        if (__syncthreads_or(bad) && threadIdx.x == 0) atomicMin(first_bad, k);
    }
}

} // namespace

extern "C" ct_status ct_cuda_list_unscale(int device, const ct__list_args *args, double inv_scale,
                                          int32_t *first_bad) {
    *first_bad = -1;
    if (args->count == 0 || args->total == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    table<ct__list_tensor> t = {};
    status = upload(device, stream, args->tensors, args->count, sizeof(int), &t);
    if (status != CT_OK) return status;
    int *flag = (int *)t.extra, result = NONE_FLAGGED;
    static_assert(sizeof result == CT_READBACK_UNSCALE, "the op layer counts this read");
    cudaError_t launched = cudaMemsetAsync(flag, 0x7f, sizeof *flag, stream);
    if (launched == cudaSuccess) {
        unscale_kernel<<<grid_for(t.nchunks), THREADS, 0, stream>>>(t.tensors, t.chunks, t.nchunks,
                                                                    inv_scale, flag);
        launched = cudaGetLastError();
    }
    if (launched == cudaSuccess)
        status = ct_cuda_read_back(device, stream, &result, flag, sizeof result,
                                   "the unscale's check of its gradients");
    if (status != CT_OK) return abandon(stream, t.dev, status);
    status = finish(device, stream, t.dev, launched);
    if (status != CT_OK) return status;
    *first_bad = result == NONE_FLAGGED ? -1 : result;
    return CT_OK;
}

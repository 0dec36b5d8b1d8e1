// CUDA sorting and scanning kernels (ct__sort_args in backend_impl.h): argsort through
// CUB's segmented radix sort of (key, position) pairs, one segment per row, and the running
// sum of each row with one block per row (CUB's block scan over tiles, the tiles' total
// carried). Radix sort is stable, ascending and descending alike. Before it, a pass copies
// the keys with every float NaN made the one positive quiet NaN and -0.0 made 0.0, so that
// NaN sorts after every number (before, descending) and -0.0 equals 0.0, as on the CPU.
// The running product is the running sum's kernel with CUB's block scan taking a multiply
// (float64, uint64 wrapping as int64 does, or complex128); a float product is the CPU's up
// to rounding, as the scan multiplies in a tree.
// Rows arrive contiguous (the op layer moves the axis last).
#include <limits.h>
#include <stdint.h>

#include <type_traits>

#include <cub/cub.cuh>

#include "backend/complex_impl.h"
#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/cuda_load_impl.cuh"

namespace {

#define SORT_THREADS 256
#define SORT_MAX_BLOCKS 65536

// Canonical bits of one key: NaN to the positive quiet NaN, -0.0 to 0.0; others unchanged.
template <typename U> struct canon_bits;
template <> struct canon_bits<uint16_t> {
    __device__ static uint16_t f16(uint16_t b) {
        if ((b & 0x7fff) > 0x7c00) return 0x7e00;
        return b == 0x8000 ? 0 : b;
    }
    __device__ static uint16_t bf16(uint16_t b) {
        if ((b & 0x7fff) > 0x7f80) return 0x7fc0;
        return b == 0x8000 ? 0 : b;
    }
};

__device__ inline uint32_t canon_f32(uint32_t b) {
    if ((b & 0x7fffffffu) > 0x7f800000u) return 0x7fc00000u;
    return b == 0x80000000u ? 0 : b;
}

__device__ inline uint64_t canon_f64(uint64_t b) {
    if ((b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return 0x7ff8000000000000ull;
    return b == 0x8000000000000000ull ? 0 : b;
}

// keys[i] = canonical in[i]; positions[i] = i % n; offsets[r] = r * n for r <= rows.
__global__ void prepare_kernel(const char *in, char *keys, int64_t *positions, int *offsets,
                               int64_t total, int64_t n, int64_t rows, ct_dtype dtype) {
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        positions[i] = i % n;
        switch (dtype) {
        case CT_F32: ((uint32_t *)keys)[i] = canon_f32(((const uint32_t *)in)[i]); break;
        case CT_F64: ((uint64_t *)keys)[i] = canon_f64(((const uint64_t *)in)[i]); break;
        case CT_F16:
            ((uint16_t *)keys)[i] = canon_bits<uint16_t>::f16(((const uint16_t *)in)[i]);
            break;
        case CT_BF16:
            ((uint16_t *)keys)[i] = canon_bits<uint16_t>::bf16(((const uint16_t *)in)[i]);
            break;
        default: {
            int64_t size = ct_cuda_dtype_size(dtype);
            for (int64_t b = 0; b < size; b++) keys[i * size + b] = in[i * size + b];
        }
        }
    }
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r <= rows; r += step)
        offsets[r] = (int)(r * n);
}

// One segmented radix sort of the prepared keys (type K); temp NULL asks for its size.
template <typename K>
cudaError_t radix(void *temp, size_t &temp_bytes, const char *keys, char *keys_out,
                  const int64_t *pos, int64_t *pos_out, int total, int rows, const int *off,
                  bool descending, cudaStream_t stream) {
    const K *k = (const K *)keys;
    K *ko = (K *)keys_out;
    if (descending)
        return cub::DeviceSegmentedRadixSort::SortPairsDescending(
            temp, temp_bytes, k, ko, pos, pos_out, total, rows, off, off + 1, 0,
            (int)(sizeof(K) * 8), stream);
    return cub::DeviceSegmentedRadixSort::SortPairs(temp, temp_bytes, k, ko, pos, pos_out, total,
                                                    rows, off, off + 1, 0, (int)(sizeof(K) * 8),
                                                    stream);
}

// Each dtype with the type CUB sorts its canonical keys as (bool as its byte).
#define CT_SORT_KEY_TYPES(X)                                                                       \
    X(CT_F32, float)                                                                               \
    X(CT_F64, double)                                                                              \
    X(CT_F16, __half)                                                                              \
    X(CT_BF16, __nv_bfloat16)                                                                      \
    X(CT_I32, int32_t)                                                                             \
    X(CT_I64, int64_t)                                                                             \
    X(CT_U8, uint8_t)                                                                              \
    X(CT_BOOL, uint8_t)                                                                            \
    X(CT_I8, int8_t)                                                                               \
    X(CT_I16, int16_t)                                                                             \
    X(CT_U16, uint16_t)                                                                            \
    X(CT_U32, uint32_t)                                                                            \
    X(CT_U64, uint64_t)

cudaError_t radix_by_dtype(ct_dtype dtype, void *temp, size_t &bytes, const char *keys,
                           char *keys_out, const int64_t *pos, int64_t *pos_out, int total,
                           int rows, const int *off, bool desc, cudaStream_t s) {
#define CT_SORT_RADIX_CASE(dt, K)                                                                  \
    case dt: return radix<K>(temp, bytes, keys, keys_out, pos, pos_out, total, rows, off, desc, s);
    switch (dtype) {
        CT_SORT_KEY_TYPES(CT_SORT_RADIX_CASE)
    case CT_C64:
    case CT_C128: break; /* not ordered: the op layer refuses to sort complex tensors */
    }
#undef CT_SORT_RADIX_CASE
    return cudaErrorInvalidValue; // no default arm: a new dtype is a -Wswitch warning here
}

// The scratch of one argsort: canonical keys, sorted keys, positions, offsets, CUB's temp.
struct sort_scratch {
    char *keys = NULL, *keys_out = NULL;
    int64_t *positions = NULL;
    int *offsets = NULL;
    void *temp = NULL;
};

ct_status sort_run(int device, cudaStream_t stream, const ct__sort_args *a, sort_scratch &s) {
    int64_t total = a->rows * a->n, size = ct_cuda_dtype_size(a->dtype);
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)&s.keys, (size_t)(total * size), stream));
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)&s.keys_out, (size_t)(total * size), stream));
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)&s.positions, (size_t)total * 8, stream));
    CT_CUDA_CHECK(
        device, cudaMallocAsync((void **)&s.offsets, (size_t)(a->rows + 1) * sizeof(int), stream));
    int64_t blocks = (total + SORT_THREADS - 1) / SORT_THREADS;
    unsigned grid = (unsigned)(blocks < SORT_MAX_BLOCKS ? blocks : SORT_MAX_BLOCKS);
    prepare_kernel<<<grid, SORT_THREADS, 0, stream>>>(a->in, s.keys, s.positions, s.offsets, total,
                                                      a->n, a->rows, a->dtype);
    CT_CUDA_CHECK(device, cudaGetLastError());
    size_t bytes = 0;
    CT_CUDA_CHECK(device,
                  radix_by_dtype(a->dtype, NULL, bytes, s.keys, s.keys_out, s.positions, a->indices,
                                 (int)total, (int)a->rows, s.offsets, a->descending, stream));
    CT_CUDA_CHECK(device, cudaMallocAsync(&s.temp, bytes ? bytes : 1, stream));
    CT_CUDA_CHECK(device, radix_by_dtype(a->dtype, s.temp, bytes, s.keys, s.keys_out, s.positions,
                                         a->indices, (int)total, (int)a->rows, s.offsets,
                                         a->descending, stream));
    return CT_OK;
}

// The running sum of row blockIdx.x (grid-strided over rows), in Acc, tile by tile.
template <typename Acc> __global__ void cumsum_kernel(ct__sort_args a) {
    typedef cub::BlockScan<Acc, SORT_THREADS> scan;
    __shared__ typename scan::TempStorage storage;
    int64_t in_size = ct_cuda_dtype_size(a.dtype), out_size = ct_cuda_dtype_size(a.out_dtype);
    for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
        const char *in = a.in + r * a.in_row * in_size;
        char *out = a.out + r * a.out_row * out_size;
        Acc carry = 0;
        for (int64_t base = 0; base < a.n; base += SORT_THREADS) {
            int64_t i = base + threadIdx.x;
            Acc v = 0, sum, total;
            if (i < a.n) {
                const char *p = in + i * a.in_stride * in_size;
                if constexpr (std::is_floating_point<Acc>::value)
                    v = ct__load_f64(p, a.dtype);
                else
                    v = (Acc)ct__load_i64(p, a.dtype);
            }
            scan(storage).InclusiveSum(v, sum, total);
            __syncthreads();
            sum += carry;
            if (i < a.n) {
                if constexpr (std::is_floating_point<Acc>::value)
                    ct__store_f64(out + i * out_size, a.out_dtype, sum);
                else
                    ct__store_i64(out + i * out_size, a.out_dtype, (int64_t)sum);
            }
            carry += total;
        }
    }
}

// How the product kernel loads, multiplies and stores in its accumulator type.
template <typename Acc> struct product;
template <> struct product<double> {
    __device__ static double one() { return 1.0; }
    __device__ static double load(const char *p, ct_dtype d) { return ct__load_f64(p, d); }
    __device__ static void store(char *p, ct_dtype d, double v) { ct__store_f64(p, d, v); }
    __device__ double operator()(double a, double b) const { return a * b; }
};
template <> struct product<unsigned long long> {
    __device__ static unsigned long long one() { return 1ull; }
    __device__ static unsigned long long load(const char *p, ct_dtype d) {
        return (unsigned long long)ct__load_i64(p, d);
    }
    __device__ static void store(char *p, ct_dtype d, unsigned long long v) {
        ct__store_i64(p, d, (int64_t)v);
    }
    __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const {
        return a * b;
    }
};
template <> struct product<ct__z> {
    __device__ static ct__z one() { return ct__z_make(1.0, 0.0); }
    __device__ static ct__z load(const char *p, ct_dtype d) { return ct__load_c128(p, d); }
    __device__ static void store(char *p, ct_dtype d, ct__z v) { ct__store_c128(p, d, v); }
    __device__ ct__z operator()(ct__z a, ct__z b) const { return ct__z_mul(a, b); }
};

// The running product of row blockIdx.x (grid-strided over rows), in Acc, tile by tile: each
// tile's inclusive scan, times the product of the tiles before it.
template <typename Acc> __global__ void cumprod_kernel(ct__sort_args a) {
    typedef cub::BlockScan<Acc, SORT_THREADS> scan;
    __shared__ typename scan::TempStorage storage;
    product<Acc> mul;
    int64_t in_size = ct_cuda_dtype_size(a.dtype), out_size = ct_cuda_dtype_size(a.out_dtype);
    for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
        const char *in = a.in + r * a.in_row * in_size;
        char *out = a.out + r * a.out_row * out_size;
        Acc carry = product<Acc>::one();
        for (int64_t base = 0; base < a.n; base += SORT_THREADS) {
            int64_t i = base + threadIdx.x;
            Acc v = product<Acc>::one(), running, total;
            if (i < a.n) v = product<Acc>::load(in + i * a.in_stride * in_size, a.dtype);
            scan(storage).InclusiveScan(v, running, mul, total);
            __syncthreads();
            if (i < a.n) product<Acc>::store(out + i * out_size, a.out_dtype, mul(carry, running));
            carry = mul(carry, total);
        }
    }
}

} // namespace

extern "C" ct_status ct_cuda_argsort(int device, const ct__sort_args *args) {
    if (args->in_stride != 1 || args->in_row != args->n)
        return ct_cuda_fail(CT_ERR_UNSUPPORTED, "argsort: the CUDA kernel takes contiguous rows");
    if (args->rows * args->n > INT_MAX)
        return ct_cuda_fail(CT_ERR_UNSUPPORTED,
                            "argsort: %lld elements; the CUDA kernel sorts at most %d at once "
                            "(sort a part at a time)",
                            (long long)(args->rows * args->n), INT_MAX);
    cudaStream_t stream = ct_cuda_stream(device);
    if (!stream) return CT_ERR_BACKEND; // ct_cuda_stream recorded why
    sort_scratch s;
    ct_status status = sort_run(device, stream, args, s);
    cudaError_t freed = cudaSuccess, e;
    void *scratch[5] = {s.keys, s.keys_out, s.positions, s.offsets, s.temp};
    for (void *p : scratch)
        if (p && (e = cudaFreeAsync(p, stream)) != cudaSuccess) freed = e;
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, freed);
    return CT_OK;
}

extern "C" ct_status ct_cuda_cumsum(int device, const ct__sort_args *args) {
    cudaStream_t stream = ct_cuda_stream(device);
    if (!stream) return CT_ERR_BACKEND;
    unsigned grid = (unsigned)(args->rows < SORT_MAX_BLOCKS ? args->rows : SORT_MAX_BLOCKS);
    bool floats = ct__is_float(args->dtype) || ct__is_float(args->out_dtype);
    if (floats)
        cumsum_kernel<double><<<grid, SORT_THREADS, 0, stream>>>(*args);
    else
        cumsum_kernel<long long><<<grid, SORT_THREADS, 0, stream>>>(*args);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

extern "C" ct_status ct_cuda_cumprod(int device, const ct__sort_args *args) {
    cudaStream_t stream = ct_cuda_stream(device);
    if (!stream) return CT_ERR_BACKEND;
    unsigned grid = (unsigned)(args->rows < SORT_MAX_BLOCKS ? args->rows : SORT_MAX_BLOCKS);
    if (ct__is_complex(args->dtype) || ct__is_complex(args->out_dtype))
        cumprod_kernel<ct__z><<<grid, SORT_THREADS, 0, stream>>>(*args);
    else if (ct__is_float(args->dtype) || ct__is_float(args->out_dtype))
        cumprod_kernel<double><<<grid, SORT_THREADS, 0, stream>>>(*args);
    else
        cumprod_kernel<unsigned long long><<<grid, SORT_THREADS, 0, stream>>>(*args);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

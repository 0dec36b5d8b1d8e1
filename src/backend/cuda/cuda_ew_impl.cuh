/* Shared device code of the CUDA elementwise kernels (unary, binary, where, copy, fill, iota,
 * random): element loads and stores of every dtype with the CPU's conversion rules, the
 * compute domains, strided offsets from a linear index, grid-stride loops and launch sizes.
 *
 * The rules are those of core/dtype_impl.h (whose helpers are device code too) and the CPU's
 * block loads and stores (cpu_ew_block.c), which are host-only: floats round to nearest even (f16
 * and bf16 from double through an f32 rounded to odd, so they round once), floats to integers
 * truncate toward zero and saturate (NaN gives 0) and then wrap to the integer's width, bool
 * is v != 0. NaN stays NaN, but its bits may differ from the CPU's: the GPU's arithmetic
 * makes 0x7fffffff where x86 makes 0xffc00000, and f64 NaNs narrow to the canonical NaN.
 *
 * Compute domains (cpu_ew_impl.h): float (f32, f16, bf16), double (f64), int64 and int32
 * (integers and bool of at most 32 bits). ct_ew_domain<T> holds a domain's load (any dtype
 * into T; host code too, which converts a host scalar as the device converts an element) and
 * store (T into any dtype), each the exact mirror of the CPU's.
 *
 * Kernels take ct__ew_args by value as a __grid_constant__ parameter (no per-thread copy)
 * with strides converted to BYTES by ct_ew_begin, and walk their elements in
 * grid-stride loops over 64-bit linear indices; offsets divide by the shape in the index
 * type I, 32-bit when the element count fits (cheaper divisions), else 64-bit. */
#ifndef CT_CUDA_EW_IMPL_CUH
#define CT_CUDA_EW_IMPL_CUH

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/cuda_load_impl.cuh"
#include "backend/cuda/cuda_param_impl.cuh"
#include "core/dtype_impl.h"

CT_CUDA_BY_VALUE_FITS(ct__ew_args);

#define CT_EW_DEV static __device__ __forceinline__

/* Threads per block, and a cap on blocks beyond which threads loop (grid-stride). */
#define CT_EW_THREADS 256
#define CT_EW_MAX_BLOCKS 262144

/* The grid-stride loop over [0, n) with a 64-bit index i. */
#define CT_EW_LOOP(i, n)                                                                           \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

/* Blocks for `work` items of one thread each (at least one block, at most the cap). */
static inline unsigned ct_ew_blocks(int64_t work) {
    int64_t blocks = (work + CT_EW_THREADS - 1) / CT_EW_THREADS;
    if (blocks < 1) return 1;
    return blocks > CT_EW_MAX_BLOCKS ? CT_EW_MAX_BLOCKS : (unsigned)blocks;
}

/* Whether linear indices of args fit the 32-bit index type. */
static inline bool ct_ew_small(const ct__ew_args *args) {
    return args->numel <= (int64_t)UINT32_MAX;
}

/* The start of every elementwise launcher: the device's compute stream (a failure's status
 * is recorded by ct_cuda_stream_get) and a copy of args with its element strides converted
 * to byte strides, the form the kernels take. */
static inline ct_status ct_ew_begin(int device, const ct__ew_args *args, cudaStream_t *stream,
                                    ct__ew_args *a) {
    ct_status status = ct_cuda_stream_get(device, stream);
    if (status != CT_OK) return status;
    *a = *args;
    for (int k = 0; k < a->nops; k++) {
        int64_t size = (int64_t)ct__dtype_size(a->dtype[k]);
        for (int d = 0; d < a->ndim; d++) a->strides[k][d] *= size;
    }
    return CT_OK;
}

/* Byte offsets of the element with C-order linear index i (i < a.numel) in the first N
 * operands of a (byte strides). The outermost coordinate is what is left of i after the
 * inner divisions, so a one-axis space divides nothing. */
template <int N, typename I>
CT_EW_DEV void ct_ew_offsets(const ct__ew_args &a, I i, int64_t off[N]) {
#pragma unroll
    for (int k = 0; k < N; k++) off[k] = 0;
    for (int d = a.ndim - 1; d > 0; d--) {
        I size = (I)a.shape[d];
        I c = i % size;
        i /= size;
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += (int64_t)c * a.strides[k][d];
    }
    if (a.ndim > 0) {
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += (int64_t)i * a.strides[k][0];
    }
}

/* Scalar conversions and the generic loads and stores (ct__load_f64, ...) are core/dtype_impl.h's,
 * shared with the CPU and the other CUDA kernels. */

/* ---- compute domains (ct__cpu_load_* and ct__cpu_store_* of cpu_ew_block.c) ---- */

template <typename T> struct ct_ew_domain;

template <> struct ct_ew_domain<float> {
    /* Integers and f64 reach float through double, as on the CPU. */
    static __host__ __device__ __forceinline__ float load(const char *p, ct_dtype dtype) {
        return ct__load_f32(p, dtype);
    }
    static __device__ __forceinline__ void store(char *p, ct_dtype dtype, float v) {
        ct__store_f32(p, dtype, v);
    }
};

template <> struct ct_ew_domain<double> {
    static __host__ __device__ __forceinline__ double load(const char *p, ct_dtype dtype) {
        return ct__load_f64(p, dtype);
    }
    static __device__ __forceinline__ void store(char *p, ct_dtype dtype, double v) {
        ct__store_f64(p, dtype, v);
    }
};

template <> struct ct_ew_domain<int64_t> {
    static __host__ __device__ __forceinline__ int64_t load(const char *p, ct_dtype dtype) {
        return ct__load_i64(p, dtype);
    }
    static __device__ __forceinline__ void store(char *p, ct_dtype dtype, int64_t v) {
        ct__store_i64(p, dtype, v);
    }
};

template <> struct ct_ew_domain<uint64_t> {
    static __host__ __device__ __forceinline__ uint64_t load(const char *p, ct_dtype dtype) {
        return ct__load_u64(p, dtype);
    }
    static __device__ __forceinline__ void store(char *p, ct_dtype dtype, uint64_t v) {
        ct__store_u64(p, dtype, v);
    }
};

/* Only dtypes of at most 32 bits compute here; the wraps keep any other defined. */
template <> struct ct_ew_domain<int32_t> {
    static __host__ __device__ __forceinline__ int32_t load(const char *p, ct_dtype dtype) {
        switch (dtype) {
        case CT_I32: return *(const int32_t *)p;
        case CT_U8: return *(const uint8_t *)p;
        case CT_BOOL: return *(const uint8_t *)p != 0;
        case CT_I8: return *(const int8_t *)p;
        case CT_I16: return *(const int16_t *)p;
        case CT_U16: return *(const uint16_t *)p;
        default: return (int32_t)(uint32_t)(uint64_t)ct__load_i64(p, dtype);
        }
    }
    static __device__ __forceinline__ void store(char *p, ct_dtype dtype, int32_t v) {
        switch (dtype) {
        case CT_I32: *(int32_t *)p = v; break;
        case CT_U8: *(uint8_t *)p = (uint8_t)(uint32_t)v; break;
        case CT_BOOL: *(uint8_t *)p = v != 0; break;
        default: ct__store_i64(p, dtype, v); break;
        }
    }
};

#endif

// CUDA matmul (ct__matmul_args in backend_impl.h): out[b] (m x n, row-major) = a[b] @ b[b].
//
// Floats go to cuBLAS: f32 with CUBLAS_COMPUTE_32F (CUBLAS_COMPUTE_32F_FAST_TF32 only when
// args->allow_tf32, i.e. ct_set_matmul_precision("high")), f64 with CUBLAS_COMPUTE_64F, f16
// and bf16 on tensor cores with f32 accumulation and one rounding of the result, as the CPU
// does (reduced-precision split-K reductions are switched off for that reason). cuBLAS is
// column-major, so the row-major product is computed as out^T = b^T a^T: a row-major
// operand is a column-major transposed one with the same leading dimension, and an operand
// with a unit row stride (a transposed view) is passed with CUBLAS_OP_T, so neither needs a
// copy. An operand whose matrices have no unit stride (broadcast rows, negative or doubly
// strided views) is packed first into contiguous scratch (cudaMallocAsync on the stream)
// over its own batch axes only, so a broadcast operand is packed once. Batches go to one
// cublasGemmStridedBatchedEx when every operand's batch offsets are a multiple of the batch
// index, else to cublasGemmBatchedEx with pointer arrays built on the device. With
// args->deterministic the handle works in a workspace of its own (see device_handle).
//
// Integer dtypes use a tiled kernel with exact wrapping arithmetic (uint64 accumulation,
// truncated to the output's width, which equals wrapping in that width); bool is logical
// (OR over k of a AND b), as on the CPU.
#include <limits.h>
#include <stdint.h>

#include <cublas_v2.h>

#include <mutex>

#include "backend/cuda/cuda_impl.h"
#include "backend/gemm_layout_impl.h"
#include "backend/cuda/cuda_load_impl.cuh"
#include "backend/cuda/cuda_param_impl.cuh"

namespace {

#define MAX_DEVICES 64
#define ITILE 16 // integer kernel: ITILE x ITILE outputs per block
#define PACK_THREADS 256
#define MAX_BLOCKS 65536
#define SCRATCH_ALIGN 256

// ---- cuBLAS errors and handles ----

static ct_status cublas_failure(cublasStatus_t result, const char *statement, const char *file,
                                int line, int device) {
    ct_status status = result == CUBLAS_STATUS_ALLOC_FAILED ? CT_ERR_OUT_OF_MEMORY : CT_ERR_BACKEND;
    return ct_cuda_fail(status, "cuBLAS error on cuda:%d at %s:%d in %s: %s", device, file, line,
                        statement, cublasGetStatusString(result));
}

// Like CT_CUDA_CHECK, for cuBLAS calls.
#define CT_CUBLAS_CHECK(device, statement)                                                         \
    do {                                                                                           \
        cublasStatus_t ct_cublas_result_ = (statement);                                            \
        if (ct_cublas_result_ != CUBLAS_STATUS_SUCCESS)                                            \
            return cublas_failure(ct_cublas_result_, #statement, __FILE__, __LINE__, (device));    \
    } while (0)

// One handle per device, made on first use and kept for the life of the process, and the
// workspace of its own that deterministic products give it (made on first use, kept as
// long). cuBLAS's "Results reproducibility" guarantees the same bits from run to run only
// where the library does not pick among internal workspaces for concurrent streams; its
// remedies include a workspace per stream through cublasSetWorkspace, which this is (one
// stream per device). cublasSetStream puts the handle back on the default workspace pool, so
// a deterministic product sets its workspace after it, every call, under handles_lock, which
// it holds until its calls are queued so that no other thread changes the handle meanwhile.
static std::mutex handles_lock;
static cublasHandle_t handles[MAX_DEVICES];
static void *workspaces[MAX_DEVICES];
static size_t workspace_sizes[MAX_DEVICES];

// The size cublasSetWorkspace recommends: 32 MiB from Hopper (compute capability 9) on, 4 MiB
// before.
static ct_status workspace_bytes(int device, size_t *bytes) {
    int major = 0;
    CT_CUDA_CHECK(device,
                  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    *bytes = (size_t)(major >= 9 ? 32 : 4) << 20;
    return CT_OK;
}

// The device's handle, bound to its stream (and, when deterministic, to the device's own
// workspace), with `guard` holding handles_lock. The device must be current (ct_cuda_stream
// makes it so).
static ct_status device_handle(int device, cudaStream_t stream, bool deterministic,
                               std::unique_lock<std::mutex> &guard, cublasHandle_t *out) {
    if (device < 0 || device >= MAX_DEVICES)
        return ct_cuda_fail(CT_ERR_UNSUPPORTED,
                            "ct_matmul: cuda:%d is beyond the %d devices the cuBLAS path "
                            "supports",
                            device, MAX_DEVICES);
    guard = std::unique_lock<std::mutex>(handles_lock);
    if (!handles[device]) {
        cublasHandle_t handle;
        CT_CUBLAS_CHECK(device, cublasCreate(&handle));
        // f16/bf16 products must accumulate (split-K included) in f32, as on the CPU.
        cublasStatus_t mode = cublasSetMathMode(
            handle,
            (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
        if (mode != CUBLAS_STATUS_SUCCESS) {
            cublasDestroy(handle);
            return cublas_failure(mode, "cublasSetMathMode", __FILE__, __LINE__, device);
        }
        handles[device] = handle;
    }
    *out = handles[device];
    CT_CUBLAS_CHECK(device, cublasSetStream(*out, stream));
    if (!deterministic) return CT_OK;
    if (!workspaces[device]) {
        size_t bytes = 0;
        void *workspace = NULL;
        ct_status status = workspace_bytes(device, &bytes);
        if (status != CT_OK) return status;
        CT_CUDA_CHECK(device, cudaMalloc(&workspace, bytes));
        workspaces[device] = workspace;
        workspace_sizes[device] = bytes;
    }
    CT_CUBLAS_CHECK(device, cublasSetWorkspace(*out, workspaces[device], workspace_sizes[device]));
    return CT_OK;
}

// ---- batch geometry ----

// An operand's matrices: base pointer, batch strides (elements, over the args' batch axes),
// row and column strides (elements).
struct operand {
    const char *data;
    int64_t batch_strides[CT_MAX_DIMS];
    int64_t rs, cs;
};

static int64_t batch_count(const ct__matmul_args *x) {
    int64_t n = 1;
    for (int d = 0; d < x->batch_ndim; d++) n *= x->batch_shape[d];
    return n;
}

// Element offset of batch index `linear` (C order over shape) with strides.
static __host__ __device__ int64_t batch_offset(int ndim, const int64_t *shape,
                                                const int64_t *strides, int64_t linear) {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        off += linear % shape[d] * strides[d];
        linear /= shape[d];
    }
    return off;
}

// Whether offset(linear) == linear * *step for every batch index (then *step is the stride
// of a strided-batched call).
static bool uniform_batches(const ct__matmul_args *x, const int64_t *strides, int64_t *step) {
    int64_t span = 1; // product of the sizes after axis d
    *step = 0;
    bool found = false;
    for (int d = x->batch_ndim - 1; d >= 0; d--) {
        if (x->batch_shape[d] == 1) continue;
        if (!found) {
            *step = strides[d];
            found = true;
        } else if (strides[d] != *step * span) {
            return false;
        }
        span *= x->batch_shape[d];
    }
    return true;
}

// ---- kernels ----

// Packing: an operand's matrices (rows x cols, strides rs, cs) over its own batch axes
// (those with a non-zero stride) into contiguous row-major scratch.
struct pack_geom {
    int ndim; // own batch axes
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    const char *src;
    char *dst;
    int64_t rows, cols, rs, cs, total;
    int elem_size;
};
CT_CUDA_BY_VALUE_FITS(pack_geom);

__global__ void __launch_bounds__(PACK_THREADS) pack_kernel(pack_geom g) {
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    int64_t per_matrix = g.rows * g.cols;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < g.total; e += step) {
        int64_t j = e % g.cols, i = e / g.cols % g.rows, b = e / per_matrix;
        int64_t off = batch_offset(g.ndim, g.shape, g.strides, b) + i * g.rs + j * g.cs;
        const char *s = g.src + off * g.elem_size;
        char *d = g.dst + e * g.elem_size;
        switch (g.elem_size) {
        case 2: *(uint16_t *)d = *(const uint16_t *)s; break;
        case 4: *(uint32_t *)d = *(const uint32_t *)s; break;
        case 8: *(uint64_t *)d = *(const uint64_t *)s; break;
        default: *(ct_complex128 *)d = *(const ct_complex128 *)s; break; // complex128
        }
    }
}

// Pointer arrays for cublasGemmBatchedEx, in the order of the batched call's operands:
// ptrs[0..n) the b matrices, ptrs[n..2n) the a matrices, ptrs[2n..3n) the outputs.
struct pointer_geom {
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    int64_t a_strides[CT_MAX_DIMS], b_strides[CT_MAX_DIMS], out_strides[CT_MAX_DIMS];
    const char *a, *b;
    char *out;
    int64_t count, elem_size;
};
CT_CUDA_BY_VALUE_FITS(pointer_geom);

__global__ void __launch_bounds__(PACK_THREADS) pointers_kernel(pointer_geom g, void **ptrs) {
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.count; i += step) {
        int64_t ao = batch_offset(g.ndim, g.shape, g.a_strides, i);
        int64_t bo = batch_offset(g.ndim, g.shape, g.b_strides, i);
        int64_t oo = batch_offset(g.ndim, g.shape, g.out_strides, i);
        ptrs[i] = (void *)(g.b + bo * g.elem_size);
        ptrs[g.count + i] = (void *)(g.a + ao * g.elem_size);
        ptrs[2 * g.count + i] = (void *)(g.out + oo * g.elem_size);
    }
}

// Integer matmul: one ITILE x ITILE tile of one batch's output per block iteration, with
// ITILE-wide slices of a's rows and b's columns staged in shared memory.
struct int_geom {
    int batch_ndim;
    int64_t batch_shape[CT_MAX_DIMS];
    int64_t a_bs[CT_MAX_DIMS], b_bs[CT_MAX_DIMS], out_bs[CT_MAX_DIMS];
    const char *a, *b;
    char *out;
    int64_t m, n, k, a_rs, a_cs, b_rs, b_cs, out_rs, batches, elem_size;
    ct_dtype dtype;
};
CT_CUDA_BY_VALUE_FITS(int_geom);

__global__ void __launch_bounds__(ITILE *ITILE) int_matmul_kernel(int_geom g) {
    __shared__ uint64_t ta[ITILE][ITILE], tb[ITILE][ITILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    bool logical = g.dtype == CT_BOOL;
    int64_t tiles_m = (g.m + ITILE - 1) / ITILE, tiles_n = (g.n + ITILE - 1) / ITILE;
    int64_t total = g.batches * tiles_m * tiles_n;
    for (int64_t w = blockIdx.x; w < total; w += gridDim.x) {
        int64_t tn = w % tiles_n, tm = w / tiles_n % tiles_m, bi = w / (tiles_n * tiles_m);
        const char *a = g.a + batch_offset(g.batch_ndim, g.batch_shape, g.a_bs, bi) * g.elem_size;
        const char *b = g.b + batch_offset(g.batch_ndim, g.batch_shape, g.b_bs, bi) * g.elem_size;
        int64_t oo = batch_offset(g.batch_ndim, g.batch_shape, g.out_bs, bi);
        int64_t i = tm * ITILE + ty, j = tn * ITILE + tx;
        uint64_t acc = 0;
        for (int64_t p0 = 0; p0 < g.k; p0 += ITILE) {
            int64_t pa = p0 + tx, pb = p0 + ty;
            ta[ty][tx] =
                i < g.m && pa < g.k
                    ? (uint64_t)ct__load_i64(a + (i * g.a_rs + pa * g.a_cs) * g.elem_size, g.dtype)
                    : 0;
            tb[ty][tx] =
                pb < g.k && j < g.n
                    ? (uint64_t)ct__load_i64(b + (pb * g.b_rs + j * g.b_cs) * g.elem_size, g.dtype)
                    : 0;
            __syncthreads();
            if (logical)
                for (int q = 0; q < ITILE; q++) acc |= ta[ty][q] & tb[q][tx];
            else
                for (int q = 0; q < ITILE; q++) acc += ta[ty][q] * tb[q][tx];
            __syncthreads();
        }
        if (i < g.m && j < g.n)
            ct__store_i64(g.out + (oo + i * g.out_rs + j) * g.elem_size, g.dtype, (int64_t)acc);
    }
}

// ---- launchers ----

static ct_status int_matmul(int device, cudaStream_t stream, const ct__matmul_args *x) {
    int_geom g = {};
    g.batch_ndim = x->batch_ndim;
    for (int d = 0; d < x->batch_ndim; d++) {
        g.batch_shape[d] = x->batch_shape[d];
        g.a_bs[d] = x->a_batch_strides[d];
        g.b_bs[d] = x->b_batch_strides[d];
        g.out_bs[d] = x->out_batch_strides[d];
    }
    g.a = x->a;
    g.b = x->b;
    g.out = x->out;
    g.m = x->m, g.n = x->n, g.k = x->k;
    g.a_rs = x->a_row_stride, g.a_cs = x->a_col_stride;
    g.b_rs = x->b_row_stride, g.b_cs = x->b_col_stride;
    g.out_rs = x->out_row_stride;
    g.batches = batch_count(x);
    g.elem_size = ct_cuda_dtype_size(x->dtype);
    g.dtype = x->dtype;
    int64_t tiles = g.batches * ((g.m + ITILE - 1) / ITILE) * ((g.n + ITILE - 1) / ITILE);
    unsigned grid = (unsigned)(tiles < MAX_BLOCKS ? tiles : MAX_BLOCKS);
    int_matmul_kernel<<<grid, dim3(ITILE, ITILE), 0, stream>>>(g);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

// How an operand (rows x cols, strides rs, cs) reaches cuBLAS: as it is with `op` and
// leading dimension `ld`, or packed. In the swapped product out^T = b^T a^T, a row-major
// matrix (unit column stride) is CUBLAS_OP_N with ld = rs, a column-major one (unit row
// stride) CUBLAS_OP_T with ld = cs. A size-1 axis's stride never matters.
static cublasOperation_t op_of(ct__gemm_layout l) {
    return l.direct && l.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// Bytes of packed scratch for op (rows x cols): one matrix per index of its own batch axes.
static size_t packed_bytes(const ct__matmul_args *x, const operand &op, int64_t rows,
                           int64_t cols) {
    int64_t n = rows * cols * ct_cuda_dtype_size(x->dtype);
    for (int d = 0; d < x->batch_ndim; d++)
        if (op.batch_strides[d] != 0) n *= x->batch_shape[d];
    return (size_t)n;
}

// Pack op into dst and make op describe the packed copy (row-major, its own batch axes
// contiguous, broadcast axes still stride 0).
static ct_status pack(int device, cudaStream_t stream, const ct__matmul_args *x, operand *op,
                      int64_t rows, int64_t cols, char *dst) {
    pack_geom g = {};
    int64_t stride = rows * cols;
    for (int d = x->batch_ndim - 1; d >= 0; d--) {
        if (op->batch_strides[d] == 0) continue;
        g.ndim++;
        stride *= x->batch_shape[d];
    }
    g.total = stride;
    // Own axes in order, and the packed strides replacing the originals.
    int own = g.ndim;
    stride = rows * cols;
    for (int d = x->batch_ndim - 1; d >= 0; d--) {
        if (op->batch_strides[d] == 0) continue;
        own--;
        g.shape[own] = x->batch_shape[d];
        g.strides[own] = op->batch_strides[d];
        op->batch_strides[d] = stride;
        stride *= x->batch_shape[d];
    }
    g.src = op->data;
    g.dst = dst;
    g.rows = rows, g.cols = cols, g.rs = op->rs, g.cs = op->cs;
    g.elem_size = (int)ct_cuda_dtype_size(x->dtype);
    int64_t blocks = (g.total + PACK_THREADS - 1) / PACK_THREADS;
    unsigned grid = (unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS);
    pack_kernel<<<grid, PACK_THREADS, 0, stream>>>(g);
    CT_CUDA_CHECK(device, cudaGetLastError());
    op->data = dst;
    op->rs = cols;
    op->cs = 1;
    return CT_OK;
}

// cuBLAS's types for a float or complex dtype (the cuBLAS documentation's cublasGemmEx table:
// CUDA_C_32F with CUBLAS_COMPUTE_32F, CUDA_C_64F with CUBLAS_COMPUTE_64F).
struct gemm_types {
    cudaDataType data;
    cublasComputeType_t compute;
    bool f64_scalars; // alpha and beta are doubles (else floats)
};

static gemm_types types_of(const ct__matmul_args *x) {
    switch (x->dtype) {
    case CT_F64: return {CUDA_R_64F, CUBLAS_COMPUTE_64F, true};
    case CT_F16: return {CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
    case CT_BF16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
    case CT_C64: return {CUDA_C_32F, CUBLAS_COMPUTE_32F, false};
    case CT_C128: return {CUDA_C_64F, CUBLAS_COMPUTE_64F, true};
    default:
        return {CUDA_R_32F, x->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                false};
    }
}

// Everything one product needs after layouts are settled.
struct gemm_plan {
    cublasHandle_t handle;
    gemm_types types;
    operand a, b;
    ct__gemm_layout la, lb;
    int64_t batches;
    void **ptrs; // scratch for 3 * batches pointers (irregular batches only)
};

// The cuBLAS calls: one GEMM, a strided batch, or a pointer-array batch.
static ct_status run_gemm(int device, cudaStream_t stream, const ct__matmul_args *x,
                          const gemm_plan &p) {
    // alpha = 1 and beta = 0, with an imaginary part 0 after them for the complex types
    const double one64[2] = {1.0, 0.0}, zero64[2] = {0.0, 0.0};
    const float one32[2] = {1.0f, 0.0f}, zero32[2] = {0.0f, 0.0f};
    const void *alpha = p.types.f64_scalars ? (const void *)one64 : (const void *)one32;
    const void *beta = p.types.f64_scalars ? (const void *)zero64 : (const void *)zero32;
    int m = (int)x->n, n = (int)x->m, k = (int)x->k; // the swapped product's sizes
    int lda = (int)p.lb.ld, ldb = (int)p.la.ld, ldc = (int)x->out_row_stride;
    cudaDataType t = p.types.data;
    int64_t sa, sb, so;
    bool uniform = uniform_batches(x, p.a.batch_strides, &sa) &&
                   uniform_batches(x, p.b.batch_strides, &sb) &&
                   uniform_batches(x, x->out_batch_strides, &so);
    if (p.batches == 1 || uniform) {
        CT_CUBLAS_CHECK(
            device, cublasGemmStridedBatchedEx(p.handle, op_of(p.lb), op_of(p.la), m, n, k, alpha,
                                               p.b.data, t, lda, p.batches == 1 ? 0 : sb, p.a.data,
                                               t, ldb, p.batches == 1 ? 0 : sa, beta, x->out, t,
                                               ldc, p.batches == 1 ? 0 : so, (int)p.batches,
                                               p.types.compute, CUBLAS_GEMM_DEFAULT));
        return CT_OK;
    }
    pointer_geom g = {};
    g.ndim = x->batch_ndim;
    for (int d = 0; d < x->batch_ndim; d++) {
        g.shape[d] = x->batch_shape[d];
        g.a_strides[d] = p.a.batch_strides[d];
        g.b_strides[d] = p.b.batch_strides[d];
        g.out_strides[d] = x->out_batch_strides[d];
    }
    g.a = p.a.data, g.b = p.b.data, g.out = x->out;
    g.count = p.batches;
    g.elem_size = ct_cuda_dtype_size(x->dtype);
    int64_t blocks = (p.batches + PACK_THREADS - 1) / PACK_THREADS;
    unsigned grid = (unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS);
    pointers_kernel<<<grid, PACK_THREADS, 0, stream>>>(g, p.ptrs);
    CT_CUDA_CHECK(device, cudaGetLastError());
    void **ptrs = p.ptrs;
    CT_CUBLAS_CHECK(device, cublasGemmBatchedEx(p.handle, op_of(p.lb), op_of(p.la), m, n, k, alpha,
                                                ptrs, t, lda, ptrs + p.batches, t, ldb, beta,
                                                ptrs + 2 * p.batches, t, ldc, (int)p.batches,
                                                p.types.compute, CUBLAS_GEMM_DEFAULT));
    return CT_OK;
}

// Pack what must be packed into scratch (laid out as a_pack, b_pack, pointers), then multiply.
static ct_status gemm_with_scratch(int device, cudaStream_t stream, const ct__matmul_args *x,
                                   gemm_plan *p, char *scratch, size_t b_at, size_t ptrs_at) {
    ct_status status = CT_OK;
    if (!p->la.direct) {
        status = pack(device, stream, x, &p->a, x->m, x->k, scratch);
        p->la = ct__gemm_layout_of(x->m, x->k, p->a.rs, p->a.cs);
    }
    if (status == CT_OK && !p->lb.direct) {
        status = pack(device, stream, x, &p->b, x->k, x->n, scratch + b_at);
        p->lb = ct__gemm_layout_of(x->k, x->n, p->b.rs, p->b.cs);
    }
    if (status != CT_OK) return status;
    p->ptrs = (void **)(scratch + ptrs_at);
    return run_gemm(device, stream, x, *p);
}

static size_t align_up(size_t n) { return (n + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN; }

static ct_status float_matmul(int device, cudaStream_t stream, const ct__matmul_args *x) {
    int64_t batches = batch_count(x);
    if (x->m > INT_MAX || x->n > INT_MAX || x->k > INT_MAX || x->out_row_stride > INT_MAX ||
        batches > INT_MAX)
        return ct_cuda_fail(CT_ERR_UNSUPPORTED,
                            "ct_matmul: %lld products of %lld x %lld @ %lld x %lld exceed cuBLAS's "
                            "32-bit sizes; split the product",
                            (long long)batches, (long long)x->m, (long long)x->k, (long long)x->k,
                            (long long)x->n);
    gemm_plan p = {};
    std::unique_lock<std::mutex> guard; // held until the product's calls are queued
    ct_status status = device_handle(device, stream, x->deterministic, guard, &p.handle);
    if (status != CT_OK) return status;
    p.types = types_of(x);
    p.a.data = x->a, p.a.rs = x->a_row_stride, p.a.cs = x->a_col_stride;
    p.b.data = x->b, p.b.rs = x->b_row_stride, p.b.cs = x->b_col_stride;
    for (int d = 0; d < x->batch_ndim; d++) {
        p.a.batch_strides[d] = x->a_batch_strides[d];
        p.b.batch_strides[d] = x->b_batch_strides[d];
    }
    p.la = ct__gemm_layout_of(x->m, x->k, p.a.rs, p.a.cs);
    p.lb = ct__gemm_layout_of(x->k, x->n, p.b.rs, p.b.cs);
    p.batches = batches;
    size_t a_bytes = p.la.direct ? 0 : align_up(packed_bytes(x, p.a, x->m, x->k));
    size_t b_bytes = p.lb.direct ? 0 : align_up(packed_bytes(x, p.b, x->k, x->n));
    size_t ptr_bytes = batches > 1 ? (size_t)(3 * batches) * sizeof(void *) : 0;
    char *scratch = NULL;
    if (a_bytes + b_bytes + ptr_bytes)
        CT_CUDA_CHECK(device,
                      cudaMallocAsync((void **)&scratch, a_bytes + b_bytes + ptr_bytes, stream));
    status = gemm_with_scratch(device, stream, x, &p, scratch, a_bytes, a_bytes + b_bytes);
    if (scratch) {
        cudaError_t freed = cudaFreeAsync(scratch, stream);
        if (status == CT_OK) CT_CUDA_CHECK(device, freed);
    }
    return status;
}

} // namespace

// k == 0 never arrives here: the op layer fills the zeros itself.
extern "C" ct_status ct_cuda_matmul(int device, const ct__matmul_args *args) {
    if (args->m == 0 || args->n == 0 || batch_count(args) == 0) return CT_OK;
    cudaStream_t stream = ct_cuda_stream(device);
    if (!stream) return CT_ERR_BACKEND; // ct_cuda_stream recorded why
    if (ct__is_float(args->dtype) || ct__is_complex(args->dtype))
        return float_matmul(device, stream, args);
    return int_matmul(device, stream, args);
}

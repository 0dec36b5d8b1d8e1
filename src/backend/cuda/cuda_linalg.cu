// The linalg slot on CUDA (backend/linalg_args_impl.h): cuSOLVER's dense routines, one call
// per matrix of the stack on the device's stream, column-major as the op layer lays the
// matrices out. Each routine follows NVIDIA's cuSOLVER API reference (docs.nvidia.com/cuda/
// cusolver, "Dense Linear Algebra (cuSolverDN)", the "Dense Linear Solver Reference (legacy)"
// and "Dense Eigenvalue Solver Reference (legacy)" sections), <t> one of S, D (float32,
// float64) and C, Z (complex64 as cuComplex, complex128 as cuDoubleComplex: the layout of
// ct_complex64 and ct_complex128, real part first):
//   cholesky  cusolverDn<t>potrf (lower) in a, which is the output; the strict upper triangle
//             is zeroed after it (potrf leaves it as it was);
//   solve     cusolverDn<t>getrf of a^T (the op layer gives a row-major), then
//             cusolverDn<t>getrs (CUBLAS_OP_T: a^T's transpose, not conjugated) on the output,
//             which holds b on entry;
//   det       cusolverDn<t>getrf, then a kernel over U's diagonal and the pivots (1-based, as
//             LAPACK's);
//   eigh      cusolverDn<t>syevd, for C and Z cusolverDn<t>heevd (lower;
//             CUSOLVER_EIG_MODE_VECTOR or _NOVECTOR); eigenvalues real (W of the parts' real
//             type), ascending;
//   svd       cusolverDn<t>gesvdj (any m and n, econ for the reduced factors; values real and
//             in descending order), which returns V: its conjugate transpose goes to the
//             output;
//   qr        cusolverDn<t>geqrf, then cusolverDn<t>orgqr, for C and Z cusolverDn<t>ungqr, on
//             Q's columns.
// Every routine's devInfo lands in one int per matrix; a kernel finds the first matrix whose
// info is positive (its op's "bad matrix") and that one 8-byte index is read back. Workspace
// comes from cudaMallocAsync on the stream, sized by the routine's _bufferSize query.
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include <cuComplex.h>
#include <cusolverDn.h>

#include <mutex>

#include "backend/cuda/cuda_impl.h"
#include "backend/linalg_args_impl.h"

namespace {

#define MAX_DEVICES 64
#define THREADS 256
#define MAX_BLOCKS 65536

static_assert(sizeof(unsigned long long) == CT_READBACK_LINALG, "the op layer counts this read");

static ct_status cusolver_failure(cusolverStatus_t result, const char *statement, const char *file,
                                  int line, int device) {
    ct_status status =
        result == CUSOLVER_STATUS_ALLOC_FAILED ? CT_ERR_OUT_OF_MEMORY : CT_ERR_BACKEND;
    return ct_cuda_fail(status, "cuSOLVER error %d on cuda:%d at %s:%d in %s", (int)result, device,
                        file, line, statement);
}

#define CT_CUSOLVER_CHECK(device, statement)                                                       \
    do {                                                                                           \
        cusolverStatus_t ct_cusolver_result_ = (statement);                                        \
        if (ct_cusolver_result_ != CUSOLVER_STATUS_SUCCESS)                                        \
            return cusolver_failure(ct_cusolver_result_, #statement, __FILE__, __LINE__,           \
                                    (device));                                                     \
    } while (0)

// One handle per device, made on first use and kept for the life of the process; a call
// holds handles_lock from cusolverDnSetStream until its routines are queued.
static std::mutex handles_lock;
static cusolverDnHandle_t handles[MAX_DEVICES];

static ct_status device_handle(int device, cudaStream_t stream, cusolverDnHandle_t *out) {
    if (device < 0 || device >= MAX_DEVICES)
        return ct_cuda_fail(CT_ERR_UNSUPPORTED,
                            "linalg: cuda:%d is beyond the %d devices the "
                            "cuSOLVER path supports",
                            device, MAX_DEVICES);
    if (!handles[device]) CT_CUSOLVER_CHECK(device, cusolverDnCreate(&handles[device]));
    *out = handles[device];
    CT_CUSOLVER_CHECK(device, cusolverDnSetStream(*out, stream));
    return CT_OK;
}

// ---- the typed routines, by overload ----

// name(T *tag, args...) calls the routine of T: the first argument only picks it.
#define TYPED_SET(name, S_fn, D_fn, C_fn, Z_fn)                                                    \
    template <typename... A> static cusolverStatus_t name(float *, A... a) { return S_fn(a...); }  \
    template <typename... A> static cusolverStatus_t name(double *, A... a) { return D_fn(a...); } \
    template <typename... A> static cusolverStatus_t name(cuComplex *, A... a) {                   \
        return C_fn(a...);                                                                         \
    }                                                                                              \
    template <typename... A> static cusolverStatus_t name(cuDoubleComplex *, A... a) {             \
        return Z_fn(a...);                                                                         \
    }
TYPED_SET(potrf_size, cusolverDnSpotrf_bufferSize, cusolverDnDpotrf_bufferSize,
          cusolverDnCpotrf_bufferSize, cusolverDnZpotrf_bufferSize)
TYPED_SET(potrf, cusolverDnSpotrf, cusolverDnDpotrf, cusolverDnCpotrf, cusolverDnZpotrf)
TYPED_SET(getrf_size, cusolverDnSgetrf_bufferSize, cusolverDnDgetrf_bufferSize,
          cusolverDnCgetrf_bufferSize, cusolverDnZgetrf_bufferSize)
TYPED_SET(getrf, cusolverDnSgetrf, cusolverDnDgetrf, cusolverDnCgetrf, cusolverDnZgetrf)
TYPED_SET(getrs, cusolverDnSgetrs, cusolverDnDgetrs, cusolverDnCgetrs, cusolverDnZgetrs)
TYPED_SET(syevd_size, cusolverDnSsyevd_bufferSize, cusolverDnDsyevd_bufferSize,
          cusolverDnCheevd_bufferSize, cusolverDnZheevd_bufferSize)
TYPED_SET(syevd, cusolverDnSsyevd, cusolverDnDsyevd, cusolverDnCheevd, cusolverDnZheevd)
TYPED_SET(gesvdj_size, cusolverDnSgesvdj_bufferSize, cusolverDnDgesvdj_bufferSize,
          cusolverDnCgesvdj_bufferSize, cusolverDnZgesvdj_bufferSize)
TYPED_SET(gesvdj, cusolverDnSgesvdj, cusolverDnDgesvdj, cusolverDnCgesvdj, cusolverDnZgesvdj)
TYPED_SET(geqrf_size, cusolverDnSgeqrf_bufferSize, cusolverDnDgeqrf_bufferSize,
          cusolverDnCgeqrf_bufferSize, cusolverDnZgeqrf_bufferSize)
TYPED_SET(geqrf, cusolverDnSgeqrf, cusolverDnDgeqrf, cusolverDnCgeqrf, cusolverDnZgeqrf)
TYPED_SET(orgqr_size, cusolverDnSorgqr_bufferSize, cusolverDnDorgqr_bufferSize,
          cusolverDnCungqr_bufferSize, cusolverDnZungqr_bufferSize)
TYPED_SET(orgqr, cusolverDnSorgqr, cusolverDnDorgqr, cusolverDnCungqr, cusolverDnZungqr)

// ---- the element types' arithmetic, real and complex alike ----

// R: the real type of T's parts (the eigenvalues', singular values' and log|det|'s).
template <typename T> struct real_of { typedef T type; };
template <> struct real_of<cuComplex> { typedef float type; };
template <> struct real_of<cuDoubleComplex> { typedef double type; };

template <typename T> __host__ __device__ T from_real(typename real_of<T>::type x) { return x; }
template <> __host__ __device__ cuComplex from_real<cuComplex>(float x) {
    return make_cuComplex(x, 0);
}
template <> __host__ __device__ cuDoubleComplex from_real<cuDoubleComplex>(double x) {
    return make_cuDoubleComplex(x, 0);
}

__device__ float magnitude(float x) { return fabsf(x); }
__device__ double magnitude(double x) { return fabs(x); }
__device__ float magnitude(cuComplex x) { return cuCabsf(x); }
__device__ double magnitude(cuDoubleComplex x) { return cuCabs(x); }

__device__ float conjugate(float x) { return x; }
__device__ double conjugate(double x) { return x; }
__device__ cuComplex conjugate(cuComplex x) { return cuConjf(x); }
__device__ cuDoubleComplex conjugate(cuDoubleComplex x) { return cuConj(x); }

__device__ float negate(float x) { return -x; }
__device__ double negate(double x) { return -x; }
__device__ cuComplex negate(cuComplex x) { return make_cuComplex(-x.x, -x.y); }
__device__ cuDoubleComplex negate(cuDoubleComplex x) { return make_cuDoubleComplex(-x.x, -x.y); }

__device__ float times(float a, float b) { return a * b; }
__device__ double times(double a, double b) { return a * b; }
__device__ cuComplex times(cuComplex a, cuComplex b) { return cuCmulf(a, b); }
__device__ cuDoubleComplex times(cuDoubleComplex a, cuDoubleComplex b) { return cuCmul(a, b); }

// The sign s of a determinant after a pivot d of magnitude m (nonzero): -s for a negative
// real d, s d / m for a complex one.
__device__ float sign_step(float s, float d, float) { return d < 0 ? -s : s; }
__device__ double sign_step(double s, double d, double) { return d < 0 ? -s : s; }
__device__ cuComplex sign_step(cuComplex s, cuComplex d, float m) {
    return cuCmulf(s, make_cuComplex(d.x / m, d.y / m));
}
__device__ cuDoubleComplex sign_step(cuDoubleComplex s, cuDoubleComplex d, double m) {
    return cuCmul(s, make_cuDoubleComplex(d.x / m, d.y / m));
}

// ---- kernels ----

static unsigned blocks_for(int64_t n) {
    int64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

#define GRID_LOOP(i, n)                                                                            \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

// *first = the smallest i with info[i] > 0 (left as it was when none).
__global__ void first_bad_kernel(const int *info, int64_t count, unsigned long long *first) {
    GRID_LOOP(i, count) {
        if (info[i] > 0) atomicMin(first, (unsigned long long)i);
    }
}

// The strict upper triangle of each of count column-major n x n matrices set to 0.
template <typename T> __global__ void zero_upper_kernel(T *x, int64_t count, int64_t n) {
    GRID_LOOP(e, count * n * n) {
        int64_t i = e % n, j = e / n % n;
        if (i < j) x[e] = from_real<T>(0);
    }
}

// The identity in count column-major rows x cols matrices.
template <typename T>
__global__ void identity_kernel(T *x, int64_t count, int64_t rows, int64_t cols) {
    GRID_LOOP(e, count * rows * cols) {
        int64_t i = e % rows, j = e / rows % cols;
        x[e] = from_real<T>(i == j ? 1 : 0);
    }
}

// out (count matrices of cols x rows, column-major) = the conjugate transposes of in's (rows x
// cols with leading dimension ld, one every stride elements).
template <typename T>
__global__ void transpose_kernel(const T *in, int64_t ld, int64_t stride, T *out, int64_t count,
                                 int64_t rows, int64_t cols) {
    GRID_LOOP(e, count * rows * cols) {
        int64_t j = e % cols, i = e / cols % rows, b = e / (rows * cols);
        out[e] = conjugate(in[b * stride + j * ld + i]);
    }
}

// From count LU factorizations (n x n, pivots 1-based, info > 0: singular): sign (det / |det|),
// log|det| and det (each may be NULL).
template <typename T, typename R>
__global__ void det_kernel(const T *lu, const int *pivots, const int *info, int64_t count,
                           int64_t n, T *sign, R *logabs, T *det) {
    GRID_LOOP(b, count) {
        T s = from_real<T>(1), product = from_real<T>(1);
        R log_sum = 0;
        if (info[b] > 0) {
            s = from_real<T>(0), log_sum = -INFINITY, product = from_real<T>(0);
        } else {
            for (int64_t i = 0; i < n; i++) {
                T d = lu[b * n * n + i * n + i];
                R m = magnitude(d);
                bool swapped = pivots[b * n + i] != i + 1;
                if (swapped) s = negate(s), product = negate(product);
                s = sign_step(s, d, m);
                log_sum += log(m);
                product = times(product, d);
            }
        }
        if (sign) sign[b] = s;
        if (logabs) logabs[b] = log_sum;
        if (det) det[b] = product;
    }
}

// From count geqrf results a (m x n): r (rrows x n) its upper triangle, and q (m x qcols) a's
// first columns (zero beyond n), for orgqr.
template <typename T>
__global__ void qr_split_kernel(const T *a, int64_t count, int64_t m, int64_t n, T *q,
                                int64_t qcols, T *r, int64_t rrows) {
    GRID_LOOP(e, count * rrows * n) {
        int64_t i = e % rrows, j = e / rrows % n, b = e / (rrows * n);
        r[e] = i <= j ? a[b * m * n + j * m + i] : from_real<T>(0);
    }
    GRID_LOOP(e, count * m * qcols) {
        int64_t i = e % m, j = e / m % qcols, b = e / (m * qcols);
        q[e] = j < n ? a[b * m * n + j * m + i] : from_real<T>(0);
    }
}

// ---- the ops ----

// Scratch on the stream, freed on it when the object dies.
struct scratch {
    int device;
    cudaStream_t stream;
    void *p = NULL;
    scratch(int d, cudaStream_t s) : device(d), stream(s) {}
    ~scratch() {
        if (p) cudaFreeAsync(p, stream);
    }
    ct_status get(size_t bytes) {
        CT_CUDA_CHECK(device, cudaMallocAsync(&p, bytes ? bytes : 1, stream));
        return CT_OK;
    }
};

#define TRY(statement)                                                                             \
    do {                                                                                           \
        ct_status ct_try_ = (statement);                                                           \
        if (ct_try_ != CT_OK) return ct_try_;                                                      \
    } while (0)

template <typename T>
static ct_status run_typed(int device, cudaStream_t stream, cusolverDnHandle_t h,
                           const ct__linalg_args *g, int *info) {
    int m = (int)g->m, n = (int)g->n, k = m < n ? m : n;
    int64_t count = g->count;
    typedef typename real_of<T>::type R;
    T *a = (T *)g->a, *o0 = (T *)g->out0, *o1 = (T *)g->out1, *o2 = (T *)g->out2;
    R *r0 = (R *)g->out0, *r1 = (R *)g->out1; // the real outputs: eigenvalues, S, log|det|
    int lwork = 0;
    scratch work(device, stream), extra(device, stream), params_scratch(device, stream);
    size_t area = (size_t)m * n;
    switch (g->op) {
    case CT_LINALG_CHOLESKY: {
        if (n == 0) return CT_OK; // cuSOLVER refuses the leading dimension 0 of an empty matrix
        CT_CUSOLVER_CHECK(device, potrf_size(o0, h, CUBLAS_FILL_MODE_LOWER, n, o0, n, &lwork));
        TRY(work.get((size_t)lwork * sizeof(T)));
        for (int64_t b = 0; b < count; b++)
            CT_CUSOLVER_CHECK(device, potrf(o0, h, CUBLAS_FILL_MODE_LOWER, n, o0 + b * area, n,
                                            (T *)work.p, lwork, info + b));
        zero_upper_kernel<T><<<blocks_for(count * area), THREADS, 0, stream>>>(o0, count, n);
        CT_CUDA_CHECK(device, cudaGetLastError());
        return CT_OK;
    }
    case CT_LINALG_SOLVE:
    case CT_LINALG_DET: {
        if (n == 0) { // an empty system: nothing to solve; det is the empty product, 1
            if (g->op == CT_LINALG_SOLVE) return CT_OK;
            det_kernel<T, R>
                <<<blocks_for(count), THREADS, 0, stream>>>(a, NULL, info, count, 0, o0, r1, o2);
            CT_CUDA_CHECK(device, cudaGetLastError());
            return CT_OK;
        }
        CT_CUSOLVER_CHECK(device, getrf_size(a, h, n, n, a, n, &lwork));
        TRY(work.get((size_t)lwork * sizeof(T)));
        TRY(extra.get((size_t)count * n * sizeof(int)));
        int *pivots = (int *)extra.p;
        for (int64_t b = 0; b < count; b++)
            CT_CUSOLVER_CHECK(
                device, getrf(a, h, n, n, a + b * area, n, (T *)work.p, pivots + b * n, info + b));
        if (g->op == CT_LINALG_DET) {
            det_kernel<T, R>
                <<<blocks_for(count), THREADS, 0, stream>>>(a, pivots, info, count, n, o0, r1, o2);
            CT_CUDA_CHECK(device, cudaGetLastError());
            // A singular matrix is no failure of det: its info must not reach the read-back.
            CT_CUDA_CHECK(device, cudaMemsetAsync(info, 0, (size_t)count * sizeof(int), stream));
            return CT_OK;
        }
        // getrs's info reports only its arguments; a singular a is getrf's (kept in info).
        TRY(params_scratch.get((size_t)count * sizeof(int)));
        int *solve_info = (int *)params_scratch.p;
        int nrhs = (int)g->k;
        for (int64_t b = 0; b < count; b++)
            CT_CUSOLVER_CHECK(device,
                              getrs(a, h, CUBLAS_OP_T, n, nrhs, a + b * area, n, pivots + b * n,
                                    o0 + b * (size_t)n * nrhs, n, solve_info + b));
        return CT_OK;
    }
    case CT_LINALG_EIGH: {
        if (n == 0) return CT_OK; // no eigenvalues
        T *x = a;                 // out1 itself when the vectors are asked for
        cusolverEigMode_t job = o1 ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
        CT_CUSOLVER_CHECK(device,
                          syevd_size(x, h, job, CUBLAS_FILL_MODE_LOWER, n, x, n, r0, &lwork));
        TRY(work.get((size_t)lwork * sizeof(T)));
        for (int64_t b = 0; b < count; b++)
            CT_CUSOLVER_CHECK(device, syevd(x, h, job, CUBLAS_FILL_MODE_LOWER, n, x + b * area, n,
                                            r0 + b * n, (T *)work.p, lwork, info + b));
        return CT_OK;
    }
    case CT_LINALG_SVD: {
        int ucols = g->full ? m : k, vcols = g->full ? n : k;
        if (k == 0) { // no values; the full factors of an empty matrix are identities
            if (o1) {
                identity_kernel<T>
                    <<<blocks_for(count * m * ucols), THREADS, 0, stream>>>(o1, count, m, ucols);
                identity_kernel<T>
                    <<<blocks_for(count * vcols * n), THREADS, 0, stream>>>(o2, count, vcols, n);
                CT_CUDA_CHECK(device, cudaGetLastError());
            }
            return CT_OK;
        }
        gesvdjInfo_t params = NULL;
        CT_CUSOLVER_CHECK(device, cusolverDnCreateGesvdjInfo(&params));
        cusolverEigMode_t job = o1 ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
        int econ = g->full ? 0 : 1;
        // U goes to out1 when asked for, else to scratch; V always to scratch (out2 is V^T).
        size_t u_area = (size_t)m * ucols, v_area = (size_t)n * vcols;
        ct_status status = extra.get(((o1 ? 0 : u_area) + count * v_area) * sizeof(T));
        T *u = o1 ? o1 : (T *)extra.p, *v = (T *)extra.p + (o1 ? 0 : u_area);
        cusolverStatus_t r = CUSOLVER_STATUS_SUCCESS;
        if (status == CT_OK)
            r = gesvdj_size(a, h, job, econ, m, n, a, m, r0, u, m, v, n, &lwork, params);
        if (status == CT_OK && r == CUSOLVER_STATUS_SUCCESS)
            status = work.get((size_t)lwork * sizeof(T));
        for (int64_t b = 0; status == CT_OK && r == CUSOLVER_STATUS_SUCCESS && b < count; b++)
            r = gesvdj(a, h, job, econ, m, n, a + b * area, m, r0 + b * k, o1 ? u + b * u_area : u,
                       m, v + b * v_area, n, (T *)work.p, lwork, info + b, params);
        cusolverDnDestroyGesvdjInfo(params);
        if (status != CT_OK) return status;
        if (r != CUSOLVER_STATUS_SUCCESS)
            return cusolver_failure(r, "cusolverDn<t>gesvdj", __FILE__, __LINE__, device);
        if (o2) {
            transpose_kernel<T><<<blocks_for(count * v_area), THREADS, 0, stream>>>(
                v, n, (int64_t)v_area, o2, count, n, vcols);
            CT_CUDA_CHECK(device, cudaGetLastError());
        }
        return CT_OK;
    }
    case CT_LINALG_QR: {
        int qcols = g->full ? m : k, rrows = g->full ? m : k;
        if (m == 0) return CT_OK;
        int lwork_q = 0;
        TRY(extra.get(((size_t)count * (k > 0 ? k : 1)) * sizeof(T)));
        T *tau = (T *)extra.p;
        if (n > 0) CT_CUSOLVER_CHECK(device, geqrf_size(a, h, m, n, a, m, &lwork));
        CT_CUSOLVER_CHECK(device, orgqr_size(a, h, m, qcols, k, o0, m, tau, &lwork_q));
        TRY(work.get((size_t)(lwork > lwork_q ? lwork : lwork_q) * sizeof(T)));
        int size = lwork > lwork_q ? lwork : lwork_q;
        for (int64_t b = 0; n > 0 && b < count; b++)
            CT_CUSOLVER_CHECK(device, geqrf(a, h, m, n, a + b * area, m, tau + b * k, (T *)work.p,
                                            size, info + b));
        int64_t split = count * (int64_t)(rrows * n > m * qcols ? rrows * n : m * qcols);
        qr_split_kernel<T>
            <<<blocks_for(split), THREADS, 0, stream>>>(a, count, m, n, o0, qcols, o1, rrows);
        CT_CUDA_CHECK(device, cudaGetLastError());
        for (int64_t b = 0; b < count; b++)
            CT_CUSOLVER_CHECK(device, orgqr(a, h, m, qcols, k, o0 + b * (size_t)m * qcols, m,
                                            tau + b * k, (T *)work.p, size, info + b));
        return CT_OK;
    }
    }
    return ct_cuda_fail(CT_ERR_BACKEND, "linalg: unknown op %d", (int)g->op);
}

} // namespace

extern "C" ct_status ct_cuda_linalg(int device, const ct__linalg_args *args, int64_t *first_bad) {
    *first_bad = -1;
    if (args->dtype != CT_F32 && args->dtype != CT_F64 && args->dtype != CT_C64 &&
        args->dtype != CT_C128)
        return ct_cuda_fail(CT_ERR_DTYPE, "linalg: the CUDA kernels take float32, float64, "
                                          "complex64 and complex128 only");
    if (args->count == 0) return CT_OK;
    cudaStream_t stream = ct_cuda_stream(device);
    if (!stream) return CT_ERR_BACKEND; // ct_cuda_stream recorded why
    unsigned long long found = ULLONG_MAX;
    ct_status status;
    {
        scratch infos(device, stream);
        status = infos.get((size_t)args->count * sizeof(int) + sizeof(unsigned long long));
        int *info = (int *)((char *)infos.p + sizeof(unsigned long long));
        unsigned long long *first = (unsigned long long *)infos.p;
        std::unique_lock<std::mutex> guard(handles_lock);
        cusolverDnHandle_t h = NULL;
        if (status == CT_OK) status = device_handle(device, stream, &h);
        if (status == CT_OK) {
            cudaError_t set = cudaMemsetAsync(infos.p, 0xff, sizeof *first, stream);
            if (set == cudaSuccess)
                set = cudaMemsetAsync(info, 0, (size_t)args->count * sizeof(int), stream);
            if (set != cudaSuccess)
                status = ct_cuda_check_result(set, "cudaMemsetAsync", __FILE__, __LINE__, device);
        }
        if (status == CT_OK) switch (args->dtype) {
            case CT_F64: status = run_typed<double>(device, stream, h, args, info); break;
            case CT_C64: status = run_typed<cuComplex>(device, stream, h, args, info); break;
            case CT_C128: status = run_typed<cuDoubleComplex>(device, stream, h, args, info); break;
            default: status = run_typed<float>(device, stream, h, args, info); break;
            }
        guard.unlock();
        if (status == CT_OK) {
            first_bad_kernel<<<blocks_for(args->count), THREADS, 0, stream>>>(info, args->count,
                                                                              first);
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess)
                status = ct_cuda_check_result(e, "first_bad_kernel", __FILE__, __LINE__, device);
            else
                status =
                    ct_cuda_read_back(device, stream, &found, first, sizeof found, "linalg's info");
        }
    }
    if (status == CT_OK && found != ULLONG_MAX) *first_bad = (int64_t)found;
    return status;
}

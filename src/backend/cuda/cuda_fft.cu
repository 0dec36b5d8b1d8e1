// CUDA Fourier transforms (ct__fft_args in backend_impl.h) through cuFFT, as the cuFFT
// Library User's Guide describes its API:
//   - plans: cufftCreate then cufftMakePlanMany64 with rank 1 and the advanced data layout
//     ("Advanced Data Layout": element x of transform b at b * idist + x * istride, used
//     when inembed and onembed are not NULL; for rank 1 their value is not read);
//   - cufftSetStream binds a plan to the device's stream, so the transform is queued there;
//   - cufftExecC2C / cufftExecZ2Z with CUFFT_FORWARD (-1) or CUFFT_INVERSE (+1), cufftExecR2C
//     / D2Z and cufftExecC2R / Z2D: unnormalised, as the CPU's engine; the scale is applied
//     after by a kernel of ours;
//   - complex-to-real transforms may overwrite their input ("cufftExecC2R() and
//     cufftExecZ2D()": out-of-place C2R overwrites the input), so they run on a copy made on
//     the stream (cudaMallocAsync, freed with cudaFreeAsync once the transform is queued).
// Plans are cached per (device, type, precision, length, batch, strides, distances), at most
// FFT_PLANS of them; the oldest is destroyed (cufftDestroy) after its device's stream has
// finished the work queued with it. The cache's lock is held from the plan's lookup until its
// work is queued, so one plan is never set on a stream by one thread while another executes
// it.
#include <stdint.h>

#include <cufft.h>

#include <mutex>

#include "backend/cuda/cuda_impl.h"

namespace {

#define FFT_PLANS 16
#define SCALE_THREADS 256
#define SCALE_MAX_BLOCKS 65536

struct plan_key {
    int device, type;
    bool f64;
    long long n, batch, in_stride, in_dist, out_stride, out_dist;
};

struct plan_entry {
    plan_key key;
    cufftHandle plan;
    unsigned long long used; // 0: empty
};

static std::mutex plans_lock;
static plan_entry plans[FFT_PLANS];
static unsigned long long plans_clock;

static ct_status cufft_failure(cufftResult result, const char *statement, int device) {
    ct_status status = result == CUFFT_ALLOC_FAILED ? CT_ERR_OUT_OF_MEMORY : CT_ERR_BACKEND;
    return ct_cuda_fail(status, "cuFFT error on cuda:%d in %s: cufftResult %d", device, statement,
                        (int)result);
}

#define CT_CUFFT_CHECK(device, statement)                                                          \
    do {                                                                                           \
        cufftResult ct_cufft_result_ = (statement);                                                \
        if (ct_cufft_result_ != CUFFT_SUCCESS)                                                     \
            return cufft_failure(ct_cufft_result_, #statement, (device));                          \
    } while (0)

static bool same_key(const plan_key &a, const plan_key &b) {
    return a.device == b.device && a.type == b.type && a.f64 == b.f64 && a.n == b.n &&
           a.batch == b.batch && a.in_stride == b.in_stride && a.in_dist == b.in_dist &&
           a.out_stride == b.out_stride && a.out_dist == b.out_dist;
}

static cufftType cufft_type(const ct__fft_args *a) {
    bool f64 = a->dtype == CT_F64;
    if (a->type == CT_FFT_TYPE_R2C) return f64 ? CUFFT_D2Z : CUFFT_R2C;
    if (a->type == CT_FFT_TYPE_C2R) return f64 ? CUFFT_Z2D : CUFFT_C2R;
    return f64 ? CUFFT_Z2Z : CUFFT_C2C;
}

// The cached plan for key on the device's stream (plans_lock held; the device current).
static ct_status plan_for(const plan_key &key, const ct__fft_args *a, cudaStream_t stream,
                          cufftHandle *out) {
    int device = key.device, slot = 0;
    for (int i = 0; i < FFT_PLANS; i++) {
        if (plans[i].used && same_key(plans[i].key, key)) {
            plans[i].used = ++plans_clock;
            *out = plans[i].plan;
            return CT_OK;
        }
        if (plans[i].used < plans[slot].used) slot = i;
    }
    if (plans[slot].used) { // the oldest leaves, once its device has run its work
        int victim = plans[slot].key.device;
        cudaStream_t victim_stream = ct_cuda_stream(victim);
        if (!victim_stream) return CT_ERR_BACKEND;
        ct_status waited =
            ct_cuda_stream_wait(victim, victim_stream, "the work of an FFT plan being evicted");
        if (waited != CT_OK) return waited; // the plan stays cached, its work still queued
        CT_CUFFT_CHECK(victim, cufftDestroy(plans[slot].plan));
        plans[slot].used = 0;
        if (!ct_cuda_stream(device)) return CT_ERR_BACKEND; // current again
    }
    long long n = key.n, in_count = a->type == CT_FFT_TYPE_C2R ? n / 2 + 1 : n;
    long long out_count = a->type == CT_FFT_TYPE_R2C ? n / 2 + 1 : n;
    long long inembed = in_count, onembed = out_count;
    size_t work = 0;
    cufftHandle plan;
    CT_CUFFT_CHECK(device, cufftCreate(&plan));
    cufftResult made =
        cufftMakePlanMany64(plan, 1, &n, &inembed, key.in_stride, key.in_dist, &onembed,
                            key.out_stride, key.out_dist, cufft_type(a), key.batch, &work);
    if (made == CUFFT_SUCCESS) made = cufftSetStream(plan, stream);
    if (made != CUFFT_SUCCESS) {
        cufftDestroy(plan);
        return cufft_failure(made, "cufftMakePlanMany64", device);
    }
    plans[slot] = plan_entry{key, plan, ++plans_clock};
    *out = plan;
    return CT_OK;
}

// out's `count` elements per transform (complex when width is 2) times scale.
template <typename T>
__global__ void scale_kernel(T *out, long long batch, long long count, long long stride,
                             long long dist, int width, T scale) {
    long long total = batch * count;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long b = i / count, k = i % count;
        T *p = out + (b * dist + k * stride) * width;
        p[0] *= scale;
        if (width == 2) p[1] *= scale;
    }
}

static ct_status execute(int device, cufftHandle plan, const ct__fft_args *a, void *in) {
    void *out = a->out;
    switch (cufft_type(a)) {
    case CUFFT_C2C:
        CT_CUFFT_CHECK(device, cufftExecC2C(plan, (cufftComplex *)in, (cufftComplex *)out,
                                            a->sign < 0 ? CUFFT_FORWARD : CUFFT_INVERSE));
        break;
    case CUFFT_Z2Z:
        CT_CUFFT_CHECK(device,
                       cufftExecZ2Z(plan, (cufftDoubleComplex *)in, (cufftDoubleComplex *)out,
                                    a->sign < 0 ? CUFFT_FORWARD : CUFFT_INVERSE));
        break;
    case CUFFT_R2C:
        CT_CUFFT_CHECK(device, cufftExecR2C(plan, (cufftReal *)in, (cufftComplex *)out));
        break;
    case CUFFT_D2Z:
        CT_CUFFT_CHECK(device,
                       cufftExecD2Z(plan, (cufftDoubleReal *)in, (cufftDoubleComplex *)out));
        break;
    case CUFFT_C2R:
        CT_CUFFT_CHECK(device, cufftExecC2R(plan, (cufftComplex *)in, (cufftReal *)out));
        break;
    default:
        CT_CUFFT_CHECK(device,
                       cufftExecZ2D(plan, (cufftDoubleComplex *)in, (cufftDoubleReal *)out));
        break;
    }
    return CT_OK;
}

} // namespace

extern "C" ct_status ct_cuda_fft(int device, const ct__fft_args *args) {
    const ct__fft_args *a = args;
    if (a->in_stride < 1 || a->in_dist < 0 || a->out_stride < 1 || a->out_dist < 0)
        return ct_cuda_fail(CT_ERR_UNSUPPORTED, "fft: cuFFT takes positive strides only (cuda:%d)",
                            device);
    cudaStream_t stream = ct_cuda_stream(device);
    if (!stream) return CT_ERR_BACKEND;
    bool f64 = a->dtype == CT_F64;
    size_t real = f64 ? sizeof(double) : sizeof(float);
    void *in = (void *)a->in, *copy = NULL;
    if (a->type == CT_FFT_TYPE_C2R) { // cuFFT's C2R overwrites its input: run on a copy
        size_t bytes =
            (size_t)((a->batch - 1) * a->in_dist + (a->n / 2) * a->in_stride + 1) * 2 * real;
        CT_CUDA_CHECK(device, cudaMallocAsync(&copy, bytes, stream));
        cudaError_t copied = cudaMemcpyAsync(copy, in, bytes, cudaMemcpyDeviceToDevice, stream);
        if (copied != cudaSuccess) {
            cudaFreeAsync(copy, stream);
            CT_CUDA_CHECK(device, copied);
        }
        in = copy;
    }
    plan_key key = {device,       (int)a->type, f64,           a->n,       a->batch,
                    a->in_stride, a->in_dist,   a->out_stride, a->out_dist};
    ct_status status;
    {
        std::lock_guard<std::mutex> guard(plans_lock);
        cufftHandle plan = 0;
        status = plan_for(key, a, stream, &plan);
        if (status == CT_OK) status = execute(device, plan, a, in);
    }
    if (copy) {
        cudaError_t freed = cudaFreeAsync(copy, stream);
        if (status == CT_OK && freed != cudaSuccess)
            status = ct_cuda_check_result(freed, "cudaFreeAsync", __FILE__, __LINE__, device);
    }
    if (status != CT_OK || a->scale == 1.0) return status;
    long long count = a->type == CT_FFT_TYPE_R2C ? a->n / 2 + 1 : a->n;
    int width = a->type == CT_FFT_TYPE_C2R ? 1 : 2;
    long long total = a->batch * count;
    unsigned grid = (unsigned)((total + SCALE_THREADS - 1) / SCALE_THREADS < SCALE_MAX_BLOCKS
                                   ? (total + SCALE_THREADS - 1) / SCALE_THREADS
                                   : SCALE_MAX_BLOCKS);
    if (f64)
        scale_kernel<double><<<grid, SCALE_THREADS, 0, stream>>>(
            (double *)a->out, a->batch, count, a->out_stride, a->out_dist, width, a->scale);
    else
        scale_kernel<float><<<grid, SCALE_THREADS, 0, stream>>>(
            (float *)a->out, a->batch, count, a->out_stride, a->out_dist, width, (float)a->scale);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

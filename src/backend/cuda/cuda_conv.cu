// CUDA 2-d convolution (ct__conv2d_args in backend/conv_args_impl.h) through cuDNN's
// convolution API: cudnnConvolutionForward (then cudnnAddTensor for the bias), BackwardData
// and BackwardFilter, with the groups set on the convolution descriptor; the op layer sums the
// bias's gradient itself (cuDNN's BackwardBias refuses bf16), in either layout.
// Layouts: NCHW activations with an NCHW (KCRS) filter, or, where args->channels_last (the
// op layer asked ct_cuda_conv2d_channels_last), NHWC activations (CUDNN_TENSOR_NHWC
// descriptors) with an NHWC (KRSC) filter, the pairing of cuDNN's NHWC tensor-core kernels
// (cuDNN's Legacy API guide, "Tensor Core Operations: Data and Filter Formats"; an NHWC filter
// wants 128-bit aligned pointers). ctensor's weights stay OIHW: a channels-last call copies the
// weight into KRSC order in the front of its workspace (filter_scratch) before the forward and
// backward-data products, and backward-filter writes the KRSC gradient there, copied back to
// OIHW into grad_weight, all on the device's stream. Algorithms
// come from the cudnnGet*Algorithm_v7 heuristics, asked once per geometry and settings and
// remembered (cuda_conv_plans_impl.h): the first entry that succeeded, runs in a math type the
// dtype allows and, with deterministic algorithms on, is CUDNN_DETERMINISTIC (PyTorch chooses
// the same way). Each entry pairs an algorithm with a math type, and the descriptor carries that
// math type when the algorithm runs (cuDNN's API reference, cudnnConvolutionFwdAlgoPerf_t and
// cudnnSetConvolutionMathType). f32 is f32: only CUDNN_FMA_MATH entries, no TF32 tensor cores,
// unless ct_set_matmul_precision("high") allows them (args->allow_tf32: any math, as TF32 is
// cuDNN's default for f32 from Ampere); f64 computes in f64. f16 and bf16 (autocast's
// convolutions, which ct_cuda_conv2d_native accepts where cuDNN has plans for them: bf16 from
// compute capability 8.0) run on the tensor cores with f32 accumulation, as PyTorch's do.
// conv2d_workspace gives the workspace the plan needs, which the op layer takes from the
// device's pool.
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <cudnn.h>

#include <mutex>
#include <new>

#include "backend/conv_args_impl.h"
#include "backend/cuda/cuda_conv_plans_impl.h"
#include "backend/cuda/cuda_impl.h"

namespace {

#define MAX_DEVICES 64
#define MAX_ALGOS 16

static ct_status cudnn_failure(cudnnStatus_t result, const char *statement, const char *file,
                               int line, int device) {
    ct_status status = result == CUDNN_STATUS_ALLOC_FAILED ? CT_ERR_OUT_OF_MEMORY : CT_ERR_BACKEND;
    return ct_cuda_fail(status, "ct_conv2d: cuDNN error on cuda:%d at %s:%d in %s: %s", device,
                        file, line, statement, cudnnGetErrorString(result));
}

// Like CT_CUDA_CHECK, for cuDNN calls.
#define CT_CUDNN_CHECK(device, statement)                                                          \
    do {                                                                                           \
        cudnnStatus_t ct_cudnn_result_ = (statement);                                              \
        if (ct_cudnn_result_ != CUDNN_STATUS_SUCCESS)                                              \
            return cudnn_failure(ct_cudnn_result_, #statement, __FILE__, __LINE__, (device));      \
    } while (0)

// One handle per device, made on first use and kept for the life of the process. cuDNN
// forbids using a handle from two threads at once, so each entry point below holds its
// device's lock from binding the handle to the stream until its last launch is queued.
static std::mutex device_locks[MAX_DEVICES];
static cudnnHandle_t handles[MAX_DEVICES];

static ct_status lock_device(int device, std::unique_lock<std::mutex> *held) {
    if (device < 0 || device >= MAX_DEVICES)
        return ct_cuda_fail(CT_ERR_UNSUPPORTED,
                            "ct_conv2d: cuda:%d is beyond the %d devices the cuDNN path supports",
                            device, MAX_DEVICES);
    *held = std::unique_lock<std::mutex>(device_locks[device]);
    return CT_OK;
}

// The device's handle bound to its stream (the device made current; its lock held).
static ct_status device_handle(int device, cudnnHandle_t *out) {
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    if (!handles[device]) CT_CUDNN_CHECK(device, cudnnCreate(&handles[device]));
    *out = handles[device];
    CT_CUDNN_CHECK(device, cudnnSetStream(*out, stream));
    return CT_OK;
}

// The descriptors of one convolution, destroyed with the struct on every path.
struct conv_descs {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    ~conv_descs() {
        if (x) cudnnDestroyTensorDescriptor(x);
        if (y) cudnnDestroyTensorDescriptor(y);
        if (bias) cudnnDestroyTensorDescriptor(bias);
        if (w) cudnnDestroyFilterDescriptor(w);
        if (conv) cudnnDestroyConvolutionDescriptor(conv);
    }
};

static bool fits_int(const ct__conv2d_args *a) {
    const int64_t v[] = {a->batch,        a->in_channels, a->in_h,       a->in_w,
                         a->out_channels, a->kernel_h,    a->kernel_w,   a->stride[0],
                         a->stride[1],    a->padding[0],  a->padding[1], a->dilation[0],
                         a->dilation[1],  a->groups};
    for (int64_t x : v)
        if (x > INT_MAX) return false;
    return true;
}

static bool low_precision(ct_dtype dtype) { return dtype == CT_F16 || dtype == CT_BF16; }

// The bytes of an element of a convolution's dtype (f64, f32, f16 or bf16). The plugin does
// not link the library, whose ct_dtype_size this mirrors.
static size_t element_bytes(ct_dtype dtype) {
    return dtype == CT_F64 ? 8 : low_precision(dtype) ? 2 : 4;
}

static const char *dtype_name(ct_dtype dtype) {
    return dtype == CT_F64 ? "f64" : dtype == CT_F16 ? "f16" : dtype == CT_BF16 ? "bf16" : "f32";
}

// The math type the descriptor asks the heuristics in: tensor ops for f16 and bf16, cuDNN's
// default (TF32 on Ampere and later) for f32 where TF32 is allowed, plain FMA otherwise.
static cudnnMathType_t asked_math(const ct__conv2d_args *a) {
    if (low_precision(a->dtype)) return CUDNN_TENSOR_OP_MATH;
    return a->dtype == CT_F32 && a->allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

// Whether f32 must stay f32: only FMA entries then (an entry in default or tensor-op math may
// use TF32 on Ampere and later). f64 has no reduced mode; f16 and bf16 take any math.
static bool fma_only(const ct__conv2d_args *a) { return a->dtype == CT_F32 && !a->allow_tf32; }

static ct_status make_descs(int device, const ct__conv2d_args *a, conv_descs *d) {
    if (!fits_int(a))
        return ct_cuda_fail(CT_ERR_UNSUPPORTED,
                            "ct_conv2d: a size or setting exceeds cuDNN's 32-bit int; split the "
                            "batch or the image");
    cudnnDataType_t dt = a->dtype == CT_F64    ? CUDNN_DATA_DOUBLE
                         : a->dtype == CT_F16  ? CUDNN_DATA_HALF
                         : a->dtype == CT_BF16 ? CUDNN_DATA_BFLOAT16
                                               : CUDNN_DATA_FLOAT;
    // The type products accumulate in: f64's own, f32 for the others.
    cudnnDataType_t compute = a->dtype == CT_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    // cudnnSetTensor4dDescriptor and cudnnSetFilter4dDescriptor take the sizes in NCHW (KCRS)
    // order whatever the format, which sets the strides: NHWC for x and y, KRSC for the filter.
    cudnnTensorFormat_t format = a->channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    CT_CUDNN_CHECK(device, cudnnCreateTensorDescriptor(&d->x));
    CT_CUDNN_CHECK(device,
                   cudnnSetTensor4dDescriptor(d->x, format, dt, (int)a->batch, (int)a->in_channels,
                                              (int)a->in_h, (int)a->in_w));
    CT_CUDNN_CHECK(device, cudnnCreateTensorDescriptor(&d->y));
    CT_CUDNN_CHECK(device,
                   cudnnSetTensor4dDescriptor(d->y, format, dt, (int)a->batch, (int)a->out_channels,
                                              (int)a->out_h, (int)a->out_w));
    // (1, C, 1, 1): the same memory in either format, broadcast by cudnnAddTensor over y's.
    CT_CUDNN_CHECK(device, cudnnCreateTensorDescriptor(&d->bias));
    CT_CUDNN_CHECK(device, cudnnSetTensor4dDescriptor(d->bias, CUDNN_TENSOR_NCHW, dt, 1,
                                                      (int)a->out_channels, 1, 1));
    CT_CUDNN_CHECK(device, cudnnCreateFilterDescriptor(&d->w));
    CT_CUDNN_CHECK(device, cudnnSetFilter4dDescriptor(d->w, dt, format, (int)a->out_channels,
                                                      (int)(a->in_channels / a->groups),
                                                      (int)a->kernel_h, (int)a->kernel_w));
    CT_CUDNN_CHECK(device, cudnnCreateConvolutionDescriptor(&d->conv));
    CT_CUDNN_CHECK(device, cudnnSetConvolution2dDescriptor(
                               d->conv, (int)a->padding[0], (int)a->padding[1], (int)a->stride[0],
                               (int)a->stride[1], (int)a->dilation[0], (int)a->dilation[1],
                               CUDNN_CROSS_CORRELATION, compute));
    CT_CUDNN_CHECK(device, cudnnSetConvolutionGroupCount(d->conv, (int)a->groups));
    CT_CUDNN_CHECK(device, cudnnSetConvolutionMathType(d->conv, asked_math(a)));
    return CT_OK;
}

// The descriptors of a geometry, kept per device (KEPT_DESCS of them, the oldest replaced):
// making and setting five descriptors each call cost host time that a training step pays for
// every convolution. Used only under the device's lock. A replaced set is destroyed at once,
// as the calls did with theirs: cuDNN holds no descriptor after a call returns. The math
// type is the one thing the calls change (to each plan's); the heuristics ask with
// asked_math's.
#define KEPT_DESCS 32

struct kept_descs {
    ct_conv_plan_key key;
    conv_descs *descs;
};

static kept_descs kept[MAX_DEVICES][KEPT_DESCS];
static int kept_next[MAX_DEVICES];

static ct_status descs_for(int device, const ct__conv2d_args *a, conv_descs **out) {
    ct_conv_plan_key key;
    ct_cuda_conv_plan_key(device, a, false, &key);
    kept_descs *row = kept[device];
    for (int i = 0; i < KEPT_DESCS; i++)
        if (row[i].descs && memcmp(&row[i].key, &key, sizeof key) == 0) {
            *out = row[i].descs;
            return CT_OK;
        }
    conv_descs *d = new (std::nothrow) conv_descs;
    if (!d) return ct_cuda_fail(CT_ERR_OUT_OF_MEMORY, "ct_conv2d: no host memory for descriptors");
    ct_status status = make_descs(device, a, d);
    if (status != CT_OK) {
        delete d;
        return status;
    }
    kept_descs *slot = &row[kept_next[device]];
    kept_next[device] = (kept_next[device] + 1) % KEPT_DESCS;
    delete slot->descs;
    *slot = kept_descs{key, d};
    *out = d;
    return CT_OK;
}

// Whether a heuristics entry qualifies: it succeeded, its math type keeps the dtype's
// precision (FMA only for f32 without TF32), and with deterministic algorithms on, its result
// does not depend on scheduling.
template <typename perf_t> static bool qualifies(const perf_t &p, const ct__conv2d_args *a) {
    return p.status == CUDNN_STATUS_SUCCESS && (!fma_only(a) || p.mathType == CUDNN_FMA_MATH) &&
           (!a->deterministic || p.determinism == CUDNN_DETERMINISTIC);
}

// The first entry that qualifies and whose workspace cuDNN also sizes for these descriptors in
// the entry's math type (workspace_of(algo, &bytes)); its workspace, the larger of the two.
template <typename perf_t, typename workspace_fn>
static ct_status choose(int device, const ct__conv2d_args *a, cudnnConvolutionDescriptor_t conv,
                        const perf_t *perf, int returned, workspace_fn workspace_of, int *algo,
                        int *math, size_t *bytes) {
    for (int i = 0; i < returned; i++) {
        size_t sized = 0;
        if (!qualifies(perf[i], a) ||
            cudnnSetConvolutionMathType(conv, perf[i].mathType) != CUDNN_STATUS_SUCCESS ||
            workspace_of(perf[i].algo, &sized) != CUDNN_STATUS_SUCCESS)
            continue;
        *algo = (int)perf[i].algo;
        *math = (int)perf[i].mathType;
        *bytes = perf[i].memory > sized ? perf[i].memory : sized;
        return CT_OK;
    }
    return ct_cuda_fail(CT_ERR_BACKEND,
                        "ct_conv2d: cuDNN offers no %salgorithm for this %s convolution on "
                        "cuda:%d in %s (%d candidates)%s",
                        a->deterministic ? "deterministic " : "", dtype_name(a->dtype), device,
                        low_precision(a->dtype) ? "tensor-op math"
                        : fma_only(a)           ? "FMA math (no TF32)"
                                                : "any math",
                        returned,
                        a->deterministic ? "; ct_use_deterministic_algorithms(false) allows the "
                                           "others"
                                         : "");
}

// Ask the heuristics for a plan: forward, or both backward products. The descriptor's math
// type is the last entry tried when this returns: the callers set the plan's before a launch.
static ct_status ask_heuristics(int device, cudnnHandle_t h, const conv_descs &d,
                                const ct__conv2d_args *a, bool backward, ct_conv_plan *p) {
    *p = ct_conv_plan{};
    int n = 0;
    if (!backward) {
        cudnnConvolutionFwdAlgoPerf_t perf[MAX_ALGOS];
        CT_CUDNN_CHECK(device, cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y,
                                                                      MAX_ALGOS, &n, perf));
        auto sized = [&](cudnnConvolutionFwdAlgo_t algo, size_t *bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, bytes);
        };
        return choose(device, a, d.conv, perf, n, sized, &p->algo[0], &p->math[0], &p->bytes[0]);
    }
    cudnnConvolutionBwdDataAlgoPerf_t data[MAX_ALGOS];
    CT_CUDNN_CHECK(device, cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x,
                                                                       MAX_ALGOS, &n, data));
    auto data_sized = [&](cudnnConvolutionBwdDataAlgo_t algo, size_t *bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, algo, bytes);
    };
    ct_status status =
        choose(device, a, d.conv, data, n, data_sized, &p->algo[0], &p->math[0], &p->bytes[0]);
    if (status != CT_OK) return status;
    cudnnConvolutionBwdFilterAlgoPerf_t filter[MAX_ALGOS];
    CT_CUDNN_CHECK(device, cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w,
                                                                         MAX_ALGOS, &n, filter));
    auto filter_sized = [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t *bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, algo,
                                                              bytes);
    };
    return choose(device, a, d.conv, filter, n, filter_sized, &p->algo[1], &p->math[1],
                  &p->bytes[1]);
}

// The plan of a's geometry: remembered, or asked of the heuristics (with the descriptors'
// math type reset to the one they ask in) and remembered. The device's lock is held.
static ct_status find_plan(int device, const ct__conv2d_args *a, bool backward, ct_conv_plan *p) {
    ct_conv_plan_key key;
    ct_cuda_conv_plan_key(device, a, backward, &key);
    if (ct_cuda_conv_plan_find(&key, p)) return CT_OK;
    cudnnHandle_t h;
    conv_descs *d;
    ct_status status = device_handle(device, &h);
    if (status == CT_OK) status = descs_for(device, a, &d);
    if (status != CT_OK) return status;
    CT_CUDNN_CHECK(device, cudnnSetConvolutionMathType(d->conv, asked_math(a)));
    status = ask_heuristics(device, h, *d, a, backward, p);
    if (status == CT_OK) ct_cuda_conv_plan_remember(&key, p);
    return status;
}

// The bytes at the front of a channels-last call's workspace that hold the KRSC copy of the
// filter (or of its gradient), rounded up to 256 so that cuDNN's part after them keeps the
// workspace's alignment; 0 for NCHW.
static size_t filter_scratch(const ct__conv2d_args *a) {
    if (!a->channels_last) return 0;
    size_t bytes =
        (size_t)(a->out_channels * (a->in_channels / a->groups) * a->kernel_h * a->kernel_w) *
        element_bytes(a->dtype);
    return (bytes + 255) / 256 * 256;
}

// The workspace a call with these arguments needs under plan p: the filter's scratch, then
// cuDNN's.
static size_t workspace_need(const ct__conv2d_args *a, bool backward, const ct_conv_plan *p) {
    if (!backward) return filter_scratch(a) + p->bytes[0];
    size_t data = a->grad_x ? p->bytes[0] : 0, filter = a->grad_weight ? p->bytes[1] : 0;
    return filter_scratch(a) + (data > filter ? data : filter);
}

// Element (o, c, s) of a filter (out, cg, spatial) lies at (o * cg + c) * spatial + s in
// ctensor's OIHW and at (o * spatial + s) * cg + c in cuDNN's KRSC. Each thread writes dst
// elements (in dst's order) from src: to_krsc, OIHW to KRSC; else KRSC to OIHW. T is an
// unsigned integer of the element's size: the copy moves bits.
template <typename T>
__global__ void permute_filter(const T *src, T *dst, int64_t out, int64_t cg, int64_t spatial,
                               bool to_krsc) {
    const int64_t n = out * cg * spatial;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (to_krsc) {
            int64_t c = i % cg, s = i / cg % spatial, o = i / (cg * spatial);
            dst[i] = src[(o * cg + c) * spatial + s];
        } else {
            int64_t s = i % spatial, c = i / spatial % cg, o = i / (spatial * cg);
            dst[i] = src[(o * spatial + s) * cg + c];
        }
    }
}

// Queue the copy of a's filter from src to dst on the device's stream (the device current).
static ct_status permute(int device, const ct__conv2d_args *a, const void *src, void *dst,
                         bool to_krsc) {
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    const int64_t cg = a->in_channels / a->groups, spatial = a->kernel_h * a->kernel_w;
    const int64_t n = a->out_channels * cg * spatial, threads = 256;
    const int64_t blocks = (n + threads - 1) / threads < 4096 ? (n + threads - 1) / threads : 4096;
    size_t size = element_bytes(a->dtype);
    if (size == 2)
        permute_filter<<<(unsigned)blocks, (unsigned)threads, 0, stream>>>(
            (const uint16_t *)src, (uint16_t *)dst, a->out_channels, cg, spatial, to_krsc);
    else if (size == 4)
        permute_filter<<<(unsigned)blocks, (unsigned)threads, 0, stream>>>(
            (const uint32_t *)src, (uint32_t *)dst, a->out_channels, cg, spatial, to_krsc);
    else
        permute_filter<<<(unsigned)blocks, (unsigned)threads, 0, stream>>>(
            (const uint64_t *)src, (uint64_t *)dst, a->out_channels, cg, spatial, to_krsc);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

// cuDNN's part of a call's workspace: after the filter's scratch.
static void *cudnn_workspace(const ct__conv2d_args *a) {
    return a->workspace ? a->workspace + filter_scratch(a) : nullptr;
}
static size_t cudnn_workspace_size(const ct__conv2d_args *a) {
    return a->workspace_size - filter_scratch(a);
}

// Everything a launch needs: handle, descriptors and a plan that fits the given workspace.
static ct_status prepare(int device, const ct__conv2d_args *a, bool backward, cudnnHandle_t *h,
                         conv_descs **d, ct_conv_plan *p) {
    ct_status status = find_plan(device, a, backward, p);
    if (status == CT_OK) status = device_handle(device, h);
    if (status == CT_OK) status = descs_for(device, a, d);
    if (status != CT_OK) return status;
    size_t need = workspace_need(a, backward, p);
    if (need > a->workspace_size)
        return ct_cuda_fail(CT_ERR_BACKEND,
                            "ct_conv2d: the workspace on cuda:%d holds %zu bytes, and the plan "
                            "needs %zu",
                            device, a->workspace_size, need);
    return CT_OK;
}

// cuDNN's alpha and beta: 1 and 0 in the type it scales in (double for f64, else float).
struct scaling {
    const void *one, *zero;
};

static scaling scaling_for(ct_dtype dtype) {
    static const float one_f = 1.0f, zero_f = 0.0f;
    static const double one_d = 1.0, zero_d = 0.0;
    return dtype == CT_F64 ? scaling{&one_d, &zero_d} : scaling{&one_f, &zero_f};
}

} // namespace

extern "C" ct_status ct_cuda_conv2d_workspace(int device, const ct__conv2d_args *args,
                                              bool backward, size_t *bytes) {
    std::unique_lock<std::mutex> held;
    ct_status status = lock_device(device, &held);
    if (status != CT_OK) return status;
    ct_conv_plan p;
    status = find_plan(device, args, backward, &p);
    if (status == CT_OK) *bytes = workspace_need(args, backward, &p);
    return status;
}

// f16 runs on every device cuDNN supports; bf16 needs compute capability 8.0 (Ampere) or later.
static bool dtype_supported(int device, ct_dtype dtype) {
    if (dtype == CT_F16) return true;
    int major = 0;
    return dtype == CT_BF16 &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) ==
               cudaSuccess &&
           major >= 8;
}

// Whether args (geometry and dtype set) convolves in f16 or bf16 as it is: the device takes
// the dtype and cuDNN has plans for forward and backward (asked now, remembered for the calls).
// A failed plan sets its error, which the op layer sets aside (it goes on in f32).
extern "C" bool ct_cuda_conv2d_native(int device, const ct__conv2d_args *args) {
    if (!low_precision(args->dtype) || !fits_int(args) || !dtype_supported(device, args->dtype))
        return false;
    std::unique_lock<std::mutex> held;
    ct_conv_plan p;
    return lock_device(device, &held) == CT_OK && find_plan(device, args, false, &p) == CT_OK &&
           find_plan(device, args, true, &p) == CT_OK;
}

// Whether args (geometry and dtype set) convolves with NHWC activations: f32, or f16 and bf16
// where the device takes them, and cuDNN has plans for forward and backward with NHWC
// descriptors (asked now, remembered). f64 goes as NCHW copies. A failed plan sets its error,
// which the op layer sets aside (it goes on with NCHW copies).
extern "C" bool ct_cuda_conv2d_channels_last(int device, const ct__conv2d_args *args) {
    if (args->dtype == CT_F64 || !fits_int(args) ||
        (low_precision(args->dtype) && !dtype_supported(device, args->dtype)))
        return false;
    ct__conv2d_args nhwc = *args;
    nhwc.channels_last = true;
    std::unique_lock<std::mutex> held;
    ct_conv_plan p;
    return lock_device(device, &held) == CT_OK && find_plan(device, &nhwc, false, &p) == CT_OK &&
           find_plan(device, &nhwc, true, &p) == CT_OK;
}

extern "C" ct_status ct_cuda_conv2d_forward(int device, const ct__conv2d_args *args) {
    std::unique_lock<std::mutex> held;
    ct_status status = lock_device(device, &held);
    if (status != CT_OK) return status;
    cudnnHandle_t h = nullptr;
    conv_descs *kept_d;
    ct_conv_plan p;
    status = prepare(device, args, false, &h, &kept_d, &p);
    if (status != CT_OK) return status;
    const conv_descs &d = *kept_d;
    scaling s = scaling_for(args->dtype);
    const void *w = args->weight;
    if (args->channels_last) {
        if ((status = permute(device, args, args->weight, args->workspace, true)) != CT_OK)
            return status;
        w = args->workspace;
    }
    CT_CUDNN_CHECK(device, cudnnSetConvolutionMathType(d.conv, (cudnnMathType_t)p.math[0]));
    CT_CUDNN_CHECK(
        device, cudnnConvolutionForward(h, s.one, d.x, args->x, d.w, w, d.conv,
                                        (cudnnConvolutionFwdAlgo_t)p.algo[0], cudnn_workspace(args),
                                        cudnn_workspace_size(args), s.zero, d.y, args->y));
    if (args->bias)
        CT_CUDNN_CHECK(device, cudnnAddTensor(h, s.one, d.bias, args->bias, s.one, d.y, args->y));
    return CT_OK;
}

extern "C" ct_status ct_cuda_conv2d_backward(int device, const ct__conv2d_args *args) {
    std::unique_lock<std::mutex> held;
    ct_status status = lock_device(device, &held);
    if (status != CT_OK) return status;
    cudnnHandle_t h = nullptr;
    conv_descs *kept_d;
    ct_conv_plan p;
    status = prepare(device, args, true, &h, &kept_d, &p);
    if (status != CT_OK) return status;
    const conv_descs &d = *kept_d;
    scaling s = scaling_for(args->dtype);
    // Channels-last: the scratch holds the KRSC filter for backward data, then (queued after
    // it on the same stream) the KRSC gradient backward filter writes.
    void *scratch = args->workspace;
    if (args->grad_x) {
        const void *w = args->weight;
        if (args->channels_last) {
            if ((status = permute(device, args, args->weight, scratch, true)) != CT_OK)
                return status;
            w = scratch;
        }
        CT_CUDNN_CHECK(device, cudnnSetConvolutionMathType(d.conv, (cudnnMathType_t)p.math[0]));
        CT_CUDNN_CHECK(device, cudnnConvolutionBackwardData(
                                   h, s.one, d.w, w, d.y, args->y, d.conv,
                                   (cudnnConvolutionBwdDataAlgo_t)p.algo[0], cudnn_workspace(args),
                                   cudnn_workspace_size(args), s.zero, d.x, args->grad_x));
    }
    if (args->grad_weight) {
        void *dw = args->channels_last ? scratch : args->grad_weight;
        CT_CUDNN_CHECK(device, cudnnSetConvolutionMathType(d.conv, (cudnnMathType_t)p.math[1]));
        CT_CUDNN_CHECK(device,
                       cudnnConvolutionBackwardFilter(h, s.one, d.x, args->x, d.y, args->y, d.conv,
                                                      (cudnnConvolutionBwdFilterAlgo_t)p.algo[1],
                                                      cudnn_workspace(args),
                                                      cudnn_workspace_size(args), s.zero, d.w, dw));
        if (args->channels_last) return permute(device, args, scratch, args->grad_weight, false);
    }
    return CT_OK;
}

// CUDA 2-d pooling (ct__pool2d_args in backend/conv_args_impl.h): max, average
// (count_include_pad) and adaptive average, forward and backward, with the CPU kernels'
// windows and rules (cpu_pool.c): the first maximum wins, a NaN beats every number and the
// first NaN wins, averages sum in double. Forward runs one thread per output. Backward runs
// one thread per input element and gathers from the outputs whose window holds it, so it
// needs no atomics and sums in a fixed order. Channels-last operands (a.channels_last: NHWC
// memory) take the same kernels: each thread's element is the one at its place in memory, so
// neighbouring threads read neighbouring channels.
#include <stdint.h>

#include "backend/conv_args_impl.h"
#include "backend/cuda/cuda_impl.h"

namespace {

#define POOL_THREADS 256
#define MAX_BLOCKS 65536

struct window {
    int64_t start, end, divisor;
};

// The input rows (axis 0) or columns (axis 1) of output i, clipped, and the divisor.
__device__ window window_of(const ct__pool2d_args &a, int axis, int64_t i) {
    int64_t n = axis ? a.in_w : a.in_h, o = axis ? a.out_w : a.out_h;
    window w;
    if (a.kind == CT_POOL_ADAPTIVE_AVG) {
        w.start = i * n / o;
        w.end = ((i + 1) * n + o - 1) / o;
        w.divisor = w.end - w.start;
        return w;
    }
    w.start = i * a.stride[axis] - a.padding[axis];
    w.end = w.start + a.kernel[axis];
    w.divisor = a.kernel[axis];
    if (w.start < 0) w.start = 0;
    if (w.end > n) w.end = n;
    return w;
}

// Outputs [lo, hi) along an axis whose windows may hold input index i (a superset: the
// caller checks each window).
__device__ void candidates(const ct__pool2d_args &a, int axis, int64_t i, int64_t *lo,
                           int64_t *hi) {
    int64_t n = axis ? a.in_w : a.in_h, o = axis ? a.out_w : a.out_h;
    if (a.kind == CT_POOL_ADAPTIVE_AVG) {
        *lo = i * o / n;
        *hi = ((i + 1) * o + n - 1) / n;
    } else {
        int64_t s = a.stride[axis], first = i + a.padding[axis] - a.kernel[axis] + 1;
        *lo = first <= 0 ? 0 : (first + s - 1) / s;
        *hi = (i + a.padding[axis]) / s + 1;
    }
    if (*hi > o) *hi = o;
    if (*lo > *hi) *lo = *hi;
}

// Element e, in memory order, of a tensor of h x w planes in a's layout: its row and column,
// its plane's image (NHWC) or plane (NCHW) and channel (NHWC), and the step between the cells
// of a plane.
struct place {
    int64_t row, col, plane, channel, step;
};

__device__ place place_of(const ct__pool2d_args &a, int64_t e, int64_t h, int64_t w) {
    place p;
    p.channel = a.channels_last ? e % a.channels : 0;
    p.step = a.channels_last ? a.channels : 1;
    int64_t pixel = a.channels_last ? e / a.channels : e;
    p.col = pixel % w;
    p.row = pixel / w % h;
    p.plane = pixel / (w * h);
    return p;
}

// The offset of cell (0, 0) of p's plane in a tensor of h x w planes in a's layout.
__device__ int64_t plane_at(const ct__pool2d_args &a, place p, int64_t h, int64_t w) {
    return a.channels_last ? p.plane * h * w * a.channels + p.channel : p.plane * h * w;
}

template <typename T>
__global__ void __launch_bounds__(POOL_THREADS) forward_kernel(ct__pool2d_args a, int64_t total) {
    const T *x = (const T *)a.x;
    T *y = (T *)a.y;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        place at_e = place_of(a, e, a.out_h, a.out_w);
        window hw = window_of(a, 0, at_e.row), ww = window_of(a, 1, at_e.col);
        const T *plane = x + plane_at(a, at_e, a.in_h, a.in_w);
        int64_t cell = at_e.step;
        if (a.kind == CT_POOL_MAX) {
            T best = -(T)INFINITY;
            int64_t at = hw.start * a.in_w + ww.start;
            for (int64_t ih = hw.start; ih < hw.end; ih++)
                for (int64_t iw = ww.start; iw < ww.end; iw++) {
                    T v = plane[(ih * a.in_w + iw) * cell];
                    if (!(v <= best) && best == best) best = v, at = ih * a.in_w + iw;
                }
            y[e] = best;
            if (a.indices) a.indices[e] = (int32_t)at;
        } else {
            double sum = 0;
            for (int64_t ih = hw.start; ih < hw.end; ih++)
                for (int64_t iw = ww.start; iw < ww.end; iw++)
                    sum += plane[(ih * a.in_w + iw) * cell];
            y[e] = (T)(sum / (double)(hw.divisor * ww.divisor));
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(POOL_THREADS) backward_kernel(ct__pool2d_args a, int64_t total) {
    T *dx = (T *)a.x;
    const T *dy = (const T *)a.y;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        place at_e = place_of(a, e, a.in_h, a.in_w);
        int64_t iw = at_e.col, ih = at_e.row;
        int64_t h0, h1, w0, w1, base = plane_at(a, at_e, a.out_h, a.out_w);
        candidates(a, 0, ih, &h0, &h1);
        candidates(a, 1, iw, &w0, &w1);
        // Sum in T, as the CPU's backward accumulates into its T output.
        T sum = 0;
        for (int64_t oh = h0; oh < h1; oh++) {
            window hw = window_of(a, 0, oh);
            if (ih < hw.start || ih >= hw.end) continue;
            for (int64_t ow = w0; ow < w1; ow++) {
                window ww = window_of(a, 1, ow);
                if (iw < ww.start || iw >= ww.end) continue;
                int64_t o = base + (oh * a.out_w + ow) * at_e.step;
                if (a.kind == CT_POOL_MAX) {
                    if (a.indices[o] == ih * a.in_w + iw) sum += dy[o];
                } else {
                    sum += (T)(dy[o] / (double)(hw.divisor * ww.divisor));
                }
            }
        }
        dx[e] = sum;
    }
}

static unsigned blocks_for(int64_t total) {
    int64_t blocks = (total + POOL_THREADS - 1) / POOL_THREADS;
    return (unsigned)(blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks);
}

static ct_status launch(int device, const ct__pool2d_args *args, bool backward) {
    int64_t total = args->planes * (backward ? args->in_h * args->in_w : args->out_h * args->out_w);
    if (total == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    if (status != CT_OK) return status;
    unsigned blocks = blocks_for(total);
    bool f64 = args->dtype == CT_F64;
    if (backward && f64)
        backward_kernel<double><<<blocks, POOL_THREADS, 0, stream>>>(*args, total);
    else if (backward)
        backward_kernel<float><<<blocks, POOL_THREADS, 0, stream>>>(*args, total);
    else if (f64)
        forward_kernel<double><<<blocks, POOL_THREADS, 0, stream>>>(*args, total);
    else
        forward_kernel<float><<<blocks, POOL_THREADS, 0, stream>>>(*args, total);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

} // namespace

// Both layouts, in every dtype the plugin pools (f32 and f64; f16 and bf16 arrive in f32).
extern "C" bool ct_cuda_pool2d_channels_last(int device, const ct__pool2d_args *args) {
    (void)device;
    (void)args;
    return true;
}

extern "C" ct_status ct_cuda_pool2d_forward(int device, const ct__pool2d_args *args) {
    return launch(device, args, false);
}

extern "C" ct_status ct_cuda_pool2d_backward(int device, const ct__pool2d_args *args) {
    return launch(device, args, true);
}

/* CPU 2-d pooling over channels-last operands (ct__pool2d_args with channels_last; NHWC
 * memory): max, average and adaptive average, forward and backward, in f32, f64 and bf16 (as
 * cpu_pool.c's NCHW kernels take them), with the NCHW kernels' results to the bit: the same
 * windows (cpu_pool_window_impl.h), the same first maximum and index, the same sums in the
 * same order, bf16 widened exactly and each result rounded once to bf16 as there.
 *
 * Forward splits the output rows (batch x out_h), backward the input rows (batch x in_h)
 * over the OpenMP threads: each input pixel's gradient is gathered from the outputs whose
 * windows hold it, by the one thread that owns its row, so nothing is scattered, no two
 * threads write one element, and the results do not depend on the thread count. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "backend/conv_args_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/cpu_pool_window_impl.h"

/* Channels per block: a block's running maxima, indices and sums stay in registers or L1. */
#define CT_NHWC_BLOCK 64
/* The blocks' loops, inlined into each vector clone of the rows that call them (a call would
 * run the baseline's narrow vectors). */
#define CT_NHWC_INLINE static inline __attribute__((always_inline))

/* The outputs along an axis whose windows may hold input index i: [first, last], a superset
 * of the exact set (the loops test each window), empty when first > last. */
typedef struct {
    int64_t first, last;
} pool_span;

static inline pool_span pool_span_of(const ct__pool2d_args *a, int axis, int64_t i) {
    int64_t n = axis ? a->in_w : a->in_h, o = axis ? a->out_w : a->out_h;
    pool_span span;
    if (a->kind == CT_POOL_ADAPTIVE_AVG) {
        /* Window j is [floor(j n / o), ceil((j + 1) n / o)). */
        span.first = i * o / n;
        span.last = ((i + 1) * o - 1) / n;
    } else {
        /* Window j is [j s - p, j s - p + k). */
        int64_t k = a->kernel[axis], s = a->stride[axis], p = a->padding[axis];
        int64_t low = i + p - k + 1;
        span.first = low <= 0 ? 0 : (low + s - 1) / s;
        span.last = (i + p) / s;
    }
    if (span.last > o - 1) span.last = o - 1;
    return span;
}

#define CT_NHWC_S float
#define CT_NHWC_T float
#define CT_NHWC_BF16 0
#define CT_NHWC_FN(name) name##_f32
#include "backend/cpu/cpu_pool_nhwc_typed_impl.h"
#undef CT_NHWC_S
#undef CT_NHWC_T
#undef CT_NHWC_BF16
#undef CT_NHWC_FN
#define CT_NHWC_S double
#define CT_NHWC_T double
#define CT_NHWC_BF16 0
#define CT_NHWC_FN(name) name##_f64
#include "backend/cpu/cpu_pool_nhwc_typed_impl.h"
#undef CT_NHWC_S
#undef CT_NHWC_T
#undef CT_NHWC_BF16
#undef CT_NHWC_FN
#define CT_NHWC_S uint16_t
#define CT_NHWC_T float
#define CT_NHWC_BF16 1
#define CT_NHWC_FN(name) name##_bf16
#include "backend/cpu/cpu_pool_nhwc_typed_impl.h"
#undef CT_NHWC_S
#undef CT_NHWC_T
#undef CT_NHWC_BF16
#undef CT_NHWC_FN

static void run_row(const ct__pool2d_args *a, int64_t row, bool backward) {
    if (a->dtype == CT_BF16 && backward)
        backward_row_bf16(a, row);
    else if (a->dtype == CT_BF16)
        forward_row_bf16(a, row);
    else if (a->dtype == CT_F64 && backward)
        backward_row_f64(a, row);
    else if (a->dtype == CT_F64)
        forward_row_f64(a, row);
    else if (backward)
        backward_row_f32(a, row);
    else
        forward_row_f32(a, row);
}

ct_status ct__cpu_pool2d_nhwc(const ct__pool2d_args *a, bool backward) {
    int64_t batch = a->planes / a->channels;
    int64_t rows = batch * (backward ? a->in_h : a->out_h);
    int64_t work = a->planes * (a->in_h * a->in_w + a->out_h * a->out_w);
    (void)work;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (work >= CT_CPU_PARALLEL_THRESHOLD)
#endif
    for (int64_t row = 0; row < rows; row++) run_row(a, row, backward);
    return CT_OK;
}

bool ct__cpu_pool2d_channels_last(int device, const ct__pool2d_args *args) {
    (void)device;
    return args->dtype == CT_F32 || args->dtype == CT_F64 || args->dtype == CT_BF16;
}

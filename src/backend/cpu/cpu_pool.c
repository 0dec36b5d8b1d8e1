/* CPU 2-d pooling (ct__pool2d_args in backend/conv_args_impl.h): max, average and adaptive
 * average, forward and backward, one plane (image, channel) per OpenMP work item. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "backend/conv_args_impl.h"
#include "backend/cpu/cpu_impl.h"

/* The input rows (axis 0) or columns (axis 1) of output index i: [start, end) clipped to
 * the input, and the count the average divides by along this axis. */
typedef struct {
    int64_t start, end, divisor;
} pool_window;

static pool_window pool_window_of(const ct__pool2d_args *a, int axis, int64_t i) {
    int64_t n = axis ? a->in_w : a->in_h, o = axis ? a->out_w : a->out_h;
    pool_window win;
    if (a->kind == CT_POOL_ADAPTIVE_AVG) {
        win.start = i * n / o;
        win.end = ((i + 1) * n + o - 1) / o;
        win.divisor = win.end - win.start;
        return win;
    }
    /* count_include_pad: the full kernel counts, padded cells included. */
    win.start = i * a->stride[axis] - a->padding[axis];
    win.end = win.start + a->kernel[axis];
    win.divisor = a->kernel[axis];
    if (win.start < 0) win.start = 0;
    if (win.end > n) win.end = n;
    return win;
}

static bool pool_is_plain_2x2(const ct__pool2d_args *a) {
    return a->kernel[0] == 2 && a->kernel[1] == 2 && a->stride[0] == 2 && a->stride[1] == 2 &&
           a->padding[0] == 0 && a->padding[1] == 0;
}

/* Whether v takes the place of the running maximum best: when larger, or a NaN where no
 * NaN holds the place yet (so the first NaN wins). */
#define CT_POOL_TAKES(v, best) (!((v) <= (best)) & ((best) == (best)))

#define CT_POOL_T float
#define CT_POOL_U uint32_t
#define CT_POOL_FN(name) name##_f32
#include "backend/cpu/cpu_pool_typed_impl.h"
#undef CT_POOL_T
#undef CT_POOL_U
#undef CT_POOL_FN
#define CT_POOL_T double
#define CT_POOL_U uint64_t
#define CT_POOL_FN(name) name##_f64
#include "backend/cpu/cpu_pool_typed_impl.h"
#undef CT_POOL_T
#undef CT_POOL_U
#undef CT_POOL_FN

/* Planes in dynamic blocks: a thread the OS deschedules does not hold the others up. */
static void run_planes(const ct__pool2d_args *a, bool backward) {
    int64_t work = a->planes * (a->in_h * a->in_w + a->out_h * a->out_w);
    (void)work;
#ifdef _OPENMP
#pragma omp parallel for if (work >= CT_CPU_PARALLEL_THRESHOLD) schedule(dynamic, 16)
#endif
    for (int64_t p = 0; p < a->planes; p++) {
        if (a->dtype == CT_F64) {
            if (backward)
                backward_plane_f64(a, p);
            else
                forward_plane_f64(a, p);
        } else {
            if (backward)
                backward_plane_f32(a, p);
            else
                forward_plane_f32(a, p);
        }
    }
}

ct_status ct__cpu_pool2d_forward(int device, const ct__pool2d_args *args) {
    (void)device;
    run_planes(args, false);
    return CT_OK;
}

ct_status ct__cpu_pool2d_backward(int device, const ct__pool2d_args *args) {
    (void)device;
    run_planes(args, true);
    return CT_OK;
}

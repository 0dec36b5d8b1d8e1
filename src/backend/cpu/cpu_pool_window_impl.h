/* The pooling windows and the max rule shared by the CPU's NCHW kernels (cpu_pool.c) and its
 * channels-last ones (cpu_pool_nhwc.c), so both take the same cells and the same maximum. */
#ifndef CT_CPU_POOL_WINDOW_IMPL_H
#define CT_CPU_POOL_WINDOW_IMPL_H

#include <stdint.h>

#include "backend/conv_args_impl.h"

/* The input rows (axis 0) or columns (axis 1) of output index i: [start, end) clipped to
 * the input, and the count the average divides by along this axis. */
typedef struct {
    int64_t start, end, divisor;
} pool_window;

static inline pool_window pool_window_of(const ct__pool2d_args *a, int axis, int64_t i) {
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

/* Whether v takes the place of the running maximum best: when larger, or a NaN where no
 * NaN holds the place yet (so the first NaN wins). Cells are taken in row-major order. */
#define CT_POOL_TAKES(v, best) (!((v) <= (best)) & ((best) == (best)))

#endif

/* CPU 2-d pooling (ct__pool2d_args in backend/conv_args_impl.h): max, average and adaptive
 * average, forward and backward, one plane (image, channel) per OpenMP work item.
 *
 * bf16 planes are pooled as they are (ct__cpu_pool2d_native): each plane is widened to f32
 * in a scratch buffer of its thread, pooled by the f32 loops and narrowed back, so the
 * results are the f32 path's to the bit (a maximum is exact in bf16; an average and the
 * gradient sums round once, as the op layer's cast of the f32 result did), without that
 * path's whole-tensor copies in f32 around the kernel. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "backend/conv_args_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "core/error_impl.h"

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

/* Plane p of bf16 operands through the f32 loops, in scratch (in_h * in_w + out_h * out_w
 * floats: the input plane, then the output plane). */
static void bf16_plane(const ct__pool2d_args *a, int64_t p, bool backward, float *scratch) {
    int64_t in = a->in_h * a->in_w, out = a->out_h * a->out_w;
    ct__pool2d_args plane = *a;
    plane.dtype = CT_F32;
    plane.x = (char *)scratch;
    plane.y = (char *)(scratch + in);
    plane.indices = a->indices ? a->indices + p * out : NULL;
    uint16_t *x = (uint16_t *)a->x + p * in, *y = (uint16_t *)a->y + p * out;
    if (backward) {
        ct__cpu_bf16_to_f32_row(scratch + in, y, out);
        backward_plane_f32(&plane, 0);
        ct__cpu_f32_to_bf16_row(x, scratch, in);
    } else {
        ct__cpu_bf16_to_f32_row(scratch, x, in);
        forward_plane_f32(&plane, 0);
        ct__cpu_f32_to_bf16_row(y, scratch + in, out);
    }
}

static void run_plane(const ct__pool2d_args *a, int64_t p, bool backward, float *scratch) {
    if (a->dtype == CT_BF16)
        bf16_plane(a, p, backward, scratch);
    else if (a->dtype == CT_F64 && backward)
        backward_plane_f64(a, p);
    else if (a->dtype == CT_F64)
        forward_plane_f64(a, p);
    else if (backward)
        backward_plane_f32(a, p);
    else
        forward_plane_f32(a, p);
}

/* Planes in dynamic blocks: a thread the OS deschedules does not hold the others up. Each
 * thread takes its own scratch for bf16 planes. */
static ct_status run_planes(const ct__pool2d_args *a, bool backward) {
    int64_t work = a->planes * (a->in_h * a->in_w + a->out_h * a->out_w);
    size_t scratch_bytes =
        a->dtype == CT_BF16 ? (size_t)(a->in_h * a->in_w + a->out_h * a->out_w) * sizeof(float) : 0;
    bool failed = false;
    (void)work;
#ifdef _OPENMP
#pragma omp parallel if (work >= CT_CPU_PARALLEL_THRESHOLD)
#endif
    {
        float *scratch = scratch_bytes ? ct__malloc(scratch_bytes) : NULL;
        if (scratch_bytes && !scratch) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = true;
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
        for (int64_t p = 0; p < a->planes; p++)
            if (scratch || !scratch_bytes) run_plane(a, p, backward, scratch);
        ct__free_mem(scratch);
    }
    return failed ? ct__error(CT_ERR_OUT_OF_MEMORY,
                              "pool2d: no host memory for %zu bytes of bf16 plane scratch",
                              scratch_bytes)
                  : CT_OK;
}

bool ct__cpu_pool2d_native(int device, const ct__pool2d_args *args) {
    (void)device;
    return args->dtype == CT_BF16;
}

ct_status ct__cpu_pool2d_forward(int device, const ct__pool2d_args *args) {
    (void)device;
    return run_planes(args, false);
}

ct_status ct__cpu_pool2d_backward(int device, const ct__pool2d_args *args) {
    (void)device;
    return run_planes(args, true);
}

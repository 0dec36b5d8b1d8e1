/* CPU 2-d pooling (ct__pool2d_args in backend/conv_args_impl.h): max, average and adaptive
 * average, forward and backward, one plane (image, channel) per OpenMP work item; channels-last
 * operands go to cpu_pool_nhwc.c.
 *
 * bf16 planes are pooled as they are (ct__cpu_pool2d_native), with the f32 path's results to
 * the bit: max pooling's 2x2 forward (with AVX-512) and its backward where windows do not
 * overlap run on the bf16 cells directly; every other case widens each plane to f32 in a
 * scratch buffer of its thread, pools it by the f32 loops and narrows it back (a maximum is
 * exact in bf16; an average and the gradient sums round once, as the op layer's cast of the
 * f32 result did), without that path's whole-tensor copies in f32 around the kernel. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "backend/conv_args_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/cpu_pool_window_impl.h"
#include "backend/cpu/cpu_simd_impl.h"
#include "core/error_impl.h"

static bool pool_is_plain_2x2(const ct__pool2d_args *a) {
    return a->kernel[0] == 2 && a->kernel[1] == 2 && a->stride[0] == 2 && a->stride[1] == 2 &&
           a->padding[0] == 0 && a->padding[1] == 0;
}

#define CT_POOL_T float
#define CT_POOL_U uint32_t
#define CT_POOL_FN(name) name##_f32
#if CT_CPU_SIMD_KERNELS
/* The vector row of the widest kind this processor runs, NULL for none (the scalar row). */
static ct__cpu_max_row_f32_fn *simd_max_row_f32(void) {
    return ct__cpu_has_avx512bw() ? ct__cpu_max_row_2x2_f32_avx512
           : ct__cpu_has_avx2()   ? ct__cpu_max_row_2x2_f32_avx2
                                  : NULL;
}
#define CT_POOL_SIMD_ROW simd_max_row_f32
#endif
#include "backend/cpu/cpu_pool_typed_impl.h"
#undef CT_POOL_T
#undef CT_POOL_U
#undef CT_POOL_FN
#undef CT_POOL_SIMD_ROW
#define CT_POOL_T double
#define CT_POOL_U uint64_t
#define CT_POOL_FN(name) name##_f64
#include "backend/cpu/cpu_pool_typed_impl.h"
#undef CT_POOL_T
#undef CT_POOL_U
#undef CT_POOL_FN

const char *ct__cpu_max_pool_row(void) {
#if CT_CPU_SIMD_KERNELS
    ct__cpu_max_row_f32_fn *row = simd_max_row_f32();
    return row == ct__cpu_max_row_2x2_f32_avx512 ? "AVX-512"
           : row == ct__cpu_max_row_2x2_f32_avx2 ? "AVX2"
                                                 : "scalar";
#else
    return "scalar";
#endif
}

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

/* Whether a bf16 plane's max pooling runs on bf16 directly: backward where no two windows
 * overlap (below); forward where the AVX-512 row takes its 2x2 windows. */
static bool bf16_max_backward_direct(const ct__pool2d_args *a) {
    return a->kind == CT_POOL_MAX && a->stride[0] >= a->kernel[0] && a->stride[1] >= a->kernel[1];
}

#if CT_CPU_SIMD_KERNELS
static bool bf16_max_forward_direct(const ct__pool2d_args *a) {
    return a->kind == CT_POOL_MAX && pool_is_plain_2x2(a) && ct__cpu_has_avx512bw();
}

/* Forward of bf16 plane p with 2x2 windows, row by row through the AVX-512 row; a row with a
 * NaN again through the f32 NaN row, widened a piece at a time. */
static void bf16_max_plane_2x2(const ct__pool2d_args *a, int64_t p) {
    enum { PIECE = 64 };
    int64_t w = a->in_w, ow_n = a->out_w;
    int32_t scratch[PIECE];
    const uint16_t *x = (const uint16_t *)a->x + p * a->in_h * w;
    uint16_t *y = (uint16_t *)a->y + p * a->out_h * ow_n;
    int32_t *idx_plane = a->indices ? a->indices + p * a->out_h * ow_n : NULL;
    for (int64_t oh = 0; oh < a->out_h; oh++) {
        const uint16_t *x0 = x + 2 * oh * w, *x1 = x0 + w;
        uint16_t *yr = y + oh * ow_n;
        for (int64_t ow = 0; ow < ow_n; ow += PIECE) {
            int64_t n = ow_n - ow < PIECE ? ow_n - ow : PIECE, at0 = 2 * oh * w + 2 * ow;
            int32_t *idx = idx_plane ? idx_plane + oh * ow_n + ow : scratch;
            if (!ct__cpu_max_row_2x2_bf16_avx512(x0 + 2 * ow, x1 + 2 * ow, yr + ow, idx, n, at0, w))
                continue;
            float top[2 * PIECE], bottom[2 * PIECE], out[PIECE];
            ct__cpu_bf16_to_f32_row(top, x0 + 2 * ow, 2 * n);
            ct__cpu_bf16_to_f32_row(bottom, x1 + 2 * ow, 2 * n);
            max_row_2x2_nan_f32(top, bottom, out, idx, n, at0, w);
            ct__cpu_f32_to_bf16_row(yr + ow, out, n);
        }
    }
}
#endif

/* Backward of bf16 plane p where no two windows overlap: each input cell takes at most one
 * output's gradient, as it is, which is the f32 path's sum of one term (except that the sum
 * gives +0 for -0 and quiets a signalling NaN, as here). */
static void bf16_max_backward_disjoint(const ct__pool2d_args *a, int64_t p) {
    int64_t in = a->in_h * a->in_w, out = a->out_h * a->out_w;
    uint16_t *dx = (uint16_t *)a->x + p * in;
    const uint16_t *dy = (const uint16_t *)a->y + p * out;
    const int32_t *idx = a->indices + p * out;
    memset(dx, 0, (size_t)in * sizeof *dx);
    for (int64_t o = 0; o < out; o++) {
        uint16_t g = dy[o];
        if (g == 0x8000) g = 0;
        if ((g & 0x7fff) > 0x7f80) g |= 0x0040;
        dx[idx[o]] = g;
    }
}

static void run_plane(const ct__pool2d_args *a, int64_t p, bool backward, float *scratch) {
#if CT_CPU_SIMD_KERNELS
    if (a->dtype == CT_BF16 && !backward && bf16_max_forward_direct(a)) {
        bf16_max_plane_2x2(a, p);
        return;
    }
#endif
    if (a->dtype == CT_BF16 && backward && bf16_max_backward_direct(a))
        bf16_max_backward_disjoint(a, p);
    else if (a->dtype == CT_BF16)
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
    if (args->channels_last) return ct__cpu_pool2d_nhwc(args, false);
    return run_planes(args, false);
}

ct_status ct__cpu_pool2d_backward(int device, const ct__pool2d_args *args) {
    (void)device;
    if (args->channels_last) return ct__cpu_pool2d_nhwc(args, true);
    return run_planes(args, true);
}

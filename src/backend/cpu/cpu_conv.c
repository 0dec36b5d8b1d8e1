/* CPU 2-d convolution (ct__conv2d_args in backend/conv_args_impl.h): im2col + OpenBLAS GEMM,
 * one image at a time, in tiles of output rows (cpu_conv_typed_impl.h). Forward:
 * Y_n = W @ col_n (+ bias). Backward: dW = sum_n dY_n @ col_n^T and dcol_n = W^T @ dY_n
 * folded back into dX_n by col2im. A tile's col, GEMMs and output
 * stay in one core's cache, and no layout pass is needed since each image's output block is
 * already in NCHW order. The forward pass's (image, tile) pairs and the backward pass's
 * images run on OpenMP threads, each GEMM single-threaded on its thread (a tile's col per
 * thread; partial dW per block of images, summed in block order at the end, so results
 * do not depend on thread timing). The workspace
 * (ct__cpu_conv2d_workspace) holds all that scratch. bf16 tensors, which the op layer hands
 * over only where ct__cpu_conv2d_native says so, go to oneDNN (cpu_conv_dnnl.c), and so do
 * f32 ones where oneDNN made the primitives and measured faster for the shape on this kind of
 * CPU (ct__cpu_conv2d_f32_on_onednn; bench/bench_f32_paths.c), except f32 operands holding
 * bf16 values, whose GEMMs here run on the bf16 units. */
#include <limits.h>
#include <stdbool.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/conv_args_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"

/* Output columns [lo, hi) whose input column ow * stride + jo lies in [0, w). */
static void conv_valid_range(int64_t jo, int64_t stride, int64_t w, int64_t ow_n, int64_t *lo,
                             int64_t *hi) {
    int64_t l = jo >= 0 ? 0 : (-jo + stride - 1) / stride;
    int64_t h = w - 1 - jo < 0 ? 0 : (w - 1 - jo) / stride + 1;
    if (h > ow_n) h = ow_n;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* Where kernel offset (i, j) reads for the output rows [oh0, oh1) of a tile: its input row
 * and column offsets io and jo (output pixel (oh, ow) reads input (oh * stride + io,
 * ow * stride + jo)), and the tile's rows [row_lo, row_hi) and columns [lo, hi) whose reads
 * fall inside the image (the rest read padding). */
typedef struct conv_offset {
    int64_t io, jo, row_lo, row_hi, lo, hi;
} conv_offset;

static conv_offset conv_offset_in_tile(const ct__conv2d_args *a, int64_t i, int64_t j, int64_t oh0,
                                       int64_t oh1) {
    conv_offset f;
    f.io = i * a->dilation[0] - a->padding[0];
    f.jo = j * a->dilation[1] - a->padding[1];
    int64_t lo, hi;
    conv_valid_range(f.io, a->stride[0], a->in_h, a->out_h, &lo, &hi);
    f.row_lo = lo < oh0 ? oh0 : lo > oh1 ? oh1 : lo;
    f.row_hi = hi < f.row_lo ? f.row_lo : hi > oh1 ? oh1 : hi;
    conv_valid_range(f.jo, a->stride[1], a->in_w, a->out_w, &f.lo, &f.hi);
    return f;
}

/* c[c_off..] = op(a) @ op(b) + beta * c (beta 0 or 1), row-major, offsets in elements; on
 * the calling thread inside the images' parallel region (ct__cpu_gemm), on the bf16 units
 * when the operands hold bf16 values and the CPU has them. */
static void conv_gemm(const ct__conv2d_args *args, bool ta, bool tb, int64_t m, int64_t n,
                      int64_t k, const void *a, int64_t a_off, int64_t lda, const void *b,
                      int64_t b_off, int64_t ldb, double beta, void *c, int64_t c_off,
                      int64_t ldc) {
    size_t size = ct__dtype_size(args->dtype);
    const char *pa = (const char *)a + a_off * size, *pb = (const char *)b + b_off * size;
    char *pc = (char *)c + c_off * size;
    if (args->bf16_values && args->dtype == CT_F32 &&
        ct__cpu_gemm_bf16(true, ta, tb, m, n, k, pa, lda, pb, ldb, beta != 0.0, (float *)pc, ldc))
        return;
    ct__cpu_gemm(args->dtype, ta, tb, m, n, k, pa, lda, pb, ldb, beta, pc, ldc);
}

/* A tile's column matrix holds at most this many elements (1 MiB of f32, a core's L2 here)
 * unless one output row alone needs more: large images then need bounded scratch, and a
 * tile's col stays in cache from its im2col to its GEMMs. */
#define CT_CONV_TILE_ELEMENTS ((int64_t)1 << 18)

/* Output rows per tile: as many as fit CT_CONV_TILE_ELEMENTS, at least one. */
static int64_t conv_tile_rows(const ct__conv2d_args *a) {
    int64_t row = a->in_channels * a->kernel_h * a->kernel_w * a->out_w;
    int64_t rows = row > 0 ? CT_CONV_TILE_ELEMENTS / row : a->out_h;
    if (rows < 1) rows = 1;
    return rows < a->out_h ? rows : a->out_h;
}

/* Elements of one tile's column matrix: (in_channels * kh * kw) x (rows * out_w). */
static int64_t conv_col_elements(const ct__conv2d_args *a) {
    return a->in_channels * a->kernel_h * a->kernel_w * conv_tile_rows(a) * a->out_w;
}

#define CT_CONV_T float
#define CT_CONV_FN(name) name##_f32
#include "backend/cpu/cpu_conv_typed_impl.h"
#undef CT_CONV_T
#undef CT_CONV_FN
#define CT_CONV_T double
#define CT_CONV_FN(name) name##_f64
#include "backend/cpu/cpu_conv_typed_impl.h"
#undef CT_CONV_T
#undef CT_CONV_FN

/* The forward pass's work items are (image, tile) pairs, the backward pass's images (its
 * tiles all add into the image's input gradient). */
static int64_t work_items(const ct__conv2d_args *a, bool backward) {
    int64_t rows = conv_tile_rows(a);
    int64_t tiles = rows > 0 ? (a->out_h + rows - 1) / rows : 1;
    return backward ? a->batch : a->batch * tiles;
}

static int64_t thread_count(const ct__conv2d_args *a, bool backward) {
    int64_t threads = ct__cpu_threads(), items = work_items(a, backward);
    return threads < items ? threads : items > 0 ? items : 1;
}

/* Blocks of images: a few per thread, so that threads finishing early find more work. */
static int64_t block_count(const ct__conv2d_args *a, int64_t threads) {
    return 4 * threads < a->batch ? 4 * threads : a->batch > 0 ? a->batch : 1;
}

/* Workspace elements for `threads` threads: a col each, then (backward) a partial dw per
 * block. */
static int64_t workspace_elements(const ct__conv2d_args *a, bool backward, int64_t threads) {
    int64_t part = a->out_channels * (a->in_channels / a->groups) * a->kernel_h * a->kernel_w;
    return threads * conv_col_elements(a) + (backward ? block_count(a, threads) * part : 0);
}

/* Whether oneDNN runs this call (cpu_conv_dnnl.c) rather than the kernels here. */
static bool on_dnnl(const ct__conv2d_args *a, bool backward) {
    return a->dtype == CT_BF16 ||
           (a->dtype == CT_F32 && !a->bf16_values && ct__cpu_conv2d_dnnl_runs(a, backward));
}

ct_status ct__cpu_conv2d_workspace(int device, const ct__conv2d_args *args, bool backward,
                                   size_t *bytes) {
    (void)device;
    if (on_dnnl(args, backward)) return ct__cpu_conv2d_dnnl_workspace(args, backward, bytes);
    int64_t k = args->in_channels * args->kernel_h * args->kernel_w;
    if (args->out_h * args->out_w > INT_MAX || k > INT_MAX || args->out_channels > INT_MAX)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_conv2d: an image of %lld x %lld outputs with %lld kernel elements "
                         "exceeds BLAS's 32-bit sizes; use smaller images",
                         (long long)args->out_h, (long long)args->out_w, (long long)k);
    *bytes = (size_t)workspace_elements(args, backward, thread_count(args, backward)) *
             ct__dtype_size(args->dtype);
    return CT_OK;
}

static ct_status run(const ct__conv2d_args *a, bool backward) {
    if (a->batch == 0) return CT_OK;
    int64_t size = (int64_t)(a->workspace_size / ct__dtype_size(a->dtype));
    /* Fewer threads if the thread count grew since the workspace was sized. */
    int64_t threads = thread_count(a, backward);
    while (threads > 1 && workspace_elements(a, backward, threads) > size) threads--;
    if (workspace_elements(a, backward, threads) > size)
        return ct__error(CT_ERR_BACKEND, "ct_conv2d: workspace of %zu bytes is too small",
                         a->workspace_size);
    int64_t blocks = block_count(a, threads);
    bool f64 = a->dtype == CT_F64;
    ct__cpu_blas_single_threaded(); /* before the threads call GEMM */
    if (backward && f64)
        run_backward_f64(a, (int)threads, blocks);
    else if (backward)
        run_backward_f32(a, (int)threads, blocks);
    else if (f64)
        run_forward_f64(a, (int)threads);
    else
        run_forward_f32(a, (int)threads);
    return CT_OK;
}

/* Channels-last activations run on oneDNN alone (its NHWC kernels); the kernels here read
 * NCHW. */
bool ct__cpu_conv2d_channels_last(int device, const ct__conv2d_args *args) {
    (void)device;
    ct__conv2d_args nhwc = *args;
    nhwc.channels_last = true;
    return nhwc.dtype != CT_F64 && on_dnnl(&nhwc, false) && on_dnnl(&nhwc, true);
}

/* A channels-last call that oneDNN cannot run (the op layer asked first: never, unless a
 * caller skipped ct__cpu_conv2d_channels_last). */
static ct_status no_channels_last(void) {
    return ct__error(CT_ERR_BACKEND, "ct_conv2d: this channels-last convolution has no kernel");
}

ct_status ct__cpu_conv2d_forward(int device, const ct__conv2d_args *args) {
    (void)device;
    if (on_dnnl(args, false)) return ct__cpu_conv2d_dnnl_forward(args);
    return args->channels_last ? no_channels_last() : run(args, false);
}

ct_status ct__cpu_conv2d_backward(int device, const ct__conv2d_args *args) {
    (void)device;
    if (on_dnnl(args, true)) return ct__cpu_conv2d_dnnl_backward(args);
    return args->channels_last ? no_channels_last() : run(args, true);
}

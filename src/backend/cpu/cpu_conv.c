/* CPU 2-d convolution (ct_conv2d_args in backend/conv_args_impl.h): im2col + OpenBLAS GEMM.
 *
 * The batch is processed in chunks of images that fit the workspace. Each chunk is lowered
 * to one column matrix (cpu_conv_typed_impl.h), so every group's product is a single large
 * GEMM that OpenBLAS threads itself; the lowering, the layout changes and col2im run on
 * OpenMP threads. Forward: Y = W @ col. Backward: dW = dY @ col^T, dcol = W^T @ dY, then
 * col2im. The workspace holds col (K x nb*L) and the (out_channels x nb*L) output-side
 * matrix; its size (ct__cpu_conv2d_workspace) fixes the chunk. Small convolutions (a first
 * layer over few channels) take a per-image path instead (use_per_image). */
#include <cblas.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/conv_args_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"

/* Scratch budget: the larger the chunk, the fewer GEMM calls and parallel regions per batch,
 * which matters most when other processes share the cores (each synchronisation then costs
 * a time slice); 64 MiB holds a 128-image batch of a small network's layers. */
#define CONV_WORKSPACE_BUDGET ((size_t)64 << 20)

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

/* c[c_off..] = op(a) @ op(b) + beta * c, row-major, offsets in elements. */
static void conv_gemm(ct_dtype dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                      const void *a, int64_t a_off, int64_t lda, const void *b, int64_t b_off,
                      int64_t ldb, double beta, void *c, int64_t c_off, int64_t ldc) {
    CBLAS_TRANSPOSE oa = ta ? CblasTrans : CblasNoTrans, ob = tb ? CblasTrans : CblasNoTrans;
    if (dtype == CT_F64)
        cblas_dgemm(CblasRowMajor, oa, ob, (blasint)m, (blasint)n, (blasint)k, 1.0,
                    (const double *)a + a_off, (blasint)lda, (const double *)b + b_off,
                    (blasint)ldb, beta, (double *)c + c_off, (blasint)ldc);
    else
        cblas_sgemm(CblasRowMajor, oa, ob, (blasint)m, (blasint)n, (blasint)k, 1.0f,
                    (const float *)a + a_off, (blasint)lda, (const float *)b + b_off, (blasint)ldb,
                    (float)beta, (float *)c + c_off, (blasint)ldc);
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

/* Elements of workspace one image needs on the chunked path: its columns of col and of the
 * output matrix. */
static int64_t per_image_elements(const ct_conv2d_args *a) {
    int64_t l = a->out_h * a->out_w;
    return (a->in_channels * a->kernel_h * a->kernel_w + a->out_channels) * l;
}

/* The per-image path, when each image's GEMMs are small enough (m * n * k at most
 * OpenBLAS's threading threshold, 4 * 65536) that OpenBLAS runs them on the calling thread:
 * then OpenMP threads take whole images, and each image's im2col, GEMM and output stay in
 * that core's cache, with no layout passes. Larger products go to the chunked path, where
 * OpenBLAS threads each GEMM itself (calling it from several threads at once would make
 * its threads and OpenMP's fight over the cores). */
static bool use_per_image(const ct_conv2d_args *a) {
    int64_t g = a->groups, l = a->out_h * a->out_w;
    int64_t og = a->out_channels / g, kg = a->in_channels / g * a->kernel_h * a->kernel_w;
    return og * kg * l <= 4 * 65536 && a->batch > 1;
}

/* Elements of one thread's scratch on the per-image path: col, then partial dw and db. */
static int64_t per_thread_elements(const ct_conv2d_args *a, bool backward) {
    int64_t col = a->in_channels * a->kernel_h * a->kernel_w * a->out_h * a->out_w;
    if (!backward) return col;
    return col + a->out_channels * (a->in_channels / a->groups) * a->kernel_h * a->kernel_w +
           a->out_channels;
}

ct_status ct__cpu_conv2d_workspace(int device, const ct_conv2d_args *args, bool backward,
                                   size_t *bytes) {
    (void)device;
    size_t esize = ct__dtype_size(args->dtype);
    int64_t k = args->in_channels * args->kernel_h * args->kernel_w;
    if (use_per_image(args)) {
        int64_t threads = ct__cpu_threads() < args->batch ? ct__cpu_threads() : args->batch;
        *bytes = (size_t)(threads * per_thread_elements(args, backward)) * esize;
        return CT_OK;
    }
    int64_t per_image = per_image_elements(args);
    int64_t images = (int64_t)(CONV_WORKSPACE_BUDGET / esize) / (per_image ? per_image : 1);
    if (images < 1) images = 1;
    if (images > args->batch) images = args->batch;
    if (images * args->out_h * args->out_w > INT_MAX || k > INT_MAX || args->out_channels > INT_MAX)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_conv2d: an image of %lld x %lld outputs with %lld kernel elements "
                         "exceeds BLAS's 32-bit sizes; use smaller images",
                         (long long)args->out_h, (long long)args->out_w, (long long)k);
    *bytes = (size_t)(images * per_image) * esize;
    return CT_OK;
}

/* Images per chunk that the given workspace holds. */
static int64_t chunk_images(const ct_conv2d_args *a) {
    int64_t per_image = per_image_elements(a) * (int64_t)ct__dtype_size(a->dtype);
    int64_t images = per_image ? (int64_t)a->workspace_size / per_image : a->batch;
    return images < 1 ? 1 : images > a->batch ? a->batch : images;
}

static ct_status run_per_image(const ct_conv2d_args *a, bool backward) {
    int64_t per_thread = per_thread_elements(a, backward);
    int64_t threads = (int64_t)(a->workspace_size / ct__dtype_size(a->dtype)) / per_thread;
    if (threads < 1)
        return ct__error(CT_ERR_BACKEND, "ct_conv2d: workspace of %zu bytes is too small",
                         a->workspace_size);
    if (threads > a->batch) threads = a->batch;
    if (a->dtype == CT_F64)
        per_image_f64(a, backward, (int)threads, per_thread);
    else
        per_image_f32(a, backward, (int)threads, per_thread);
    return CT_OK;
}

static ct_status run_chunks(const ct_conv2d_args *a, bool backward) {
    if (a->batch == 0 || a->out_h * a->out_w == 0) return CT_OK;
    if (use_per_image(a)) return run_per_image(a, backward);
    int64_t nb = chunk_images(a), l = a->out_h * a->out_w;
    if ((size_t)(nb * per_image_elements(a)) * ct__dtype_size(a->dtype) > a->workspace_size)
        return ct__error(CT_ERR_BACKEND, "ct_conv2d: workspace of %zu bytes is too small",
                         a->workspace_size);
    int64_t col_elems = a->in_channels * a->kernel_h * a->kernel_w * nb * l;
    for (int64_t n0 = 0; n0 < a->batch; n0 += nb) {
        int64_t count = a->batch - n0 < nb ? a->batch - n0 : nb;
        if (a->dtype == CT_F64) {
            double *col = (double *)a->workspace, *mat = col + col_elems;
            if (backward)
                backward_chunk_f64(a, n0, count, col, mat);
            else
                forward_chunk_f64(a, n0, count, col, mat);
        } else {
            float *col = (float *)a->workspace, *mat = col + col_elems;
            if (backward)
                backward_chunk_f32(a, n0, count, col, mat);
            else
                forward_chunk_f32(a, n0, count, col, mat);
        }
    }
    return CT_OK;
}

ct_status ct__cpu_conv2d_forward(int device, const ct_conv2d_args *args) {
    (void)device;
    return run_chunks(args, false);
}

ct_status ct__cpu_conv2d_backward(int device, const ct_conv2d_args *args) {
    (void)device;
    return run_chunks(args, true);
}

/* GEMM on ctensor's OpenMP threads: OpenBLAS, and oneDNN's sgemm for f32.
 *
 * OpenBLAS (the pthreads build Debian installs) keeps its own thread pool, whose threads
 * spin in sched_yield for a while after each call. Next to ctensor's OpenMP threads that
 * spinning takes the cores from the elementwise and convolution loops that follow: on 2
 * cores a CNN training step ran 1.1-1.5x slower with OpenBLAS threading each GEMM. So every
 * BLAS call runs single-threaded on the calling thread, and ctensor splits a large product
 * over its own OpenMP threads itself: C's rows or columns (whichever axis is longer) in one
 * slab per thread, each slab one GEMM. The convolution instead gives whole images to its
 * threads and calls GEMM inside its parallel region, where this runs on the calling thread.
 *
 * Each f32 call (a slab, or the whole product) goes to oneDNN's sgemm where the build has
 * oneDNN and the CPU has AVX-512: on one thread it ran the products of `ctensor train`'s two
 * models 9-28% faster than OpenBLAS 0.3.21 on an Intel Xeon (family 6 model 207) and on a
 * Zen 5, and the smallest within a microsecond (bench/bench_f32_paths, docs/PERFORMANCE.md).
 * On a Zen 2 (AVX2, no AVX-512) ctensor's matmul ran the same products as fast on either, within
 * the noise, on 1 and 2 threads, so CPUs without AVX-512 keep OpenBLAS. oneDNN is
 * held to the calling thread as OpenBLAS is, so the split and the parallel policy stay
 * ctensor's. CT_F32_GEMM=openblas or onednn in the environment picks one, to measure the two
 * (and for the tests of each path); f64 is always OpenBLAS's. */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef CT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include "backend/cpu/cpu_impl.h"

/* No slab of a split product is this small (m * n * k): OpenBLAS's AVX-512 families use
 * other kernels, with another order of summation, for products up to 100^3 (its "small
 * matrix" kernels), so a split there would change the result's last bits with the thread
 * count. Above, each element's sum runs in the one order whatever the slab, with the kernels
 * OpenBLAS picks for the processor; not with another family's forced by OPENBLAS_CORETYPE
 * (Haswell's on a Zen 5 gave a slab of rows other bits), where the last bits follow the
 * thread count. */
#define CT_GEMM_MIN_SLAB 1e6
/* Slabs start on multiples of this, so each keeps OpenBLAS's full-width micro-kernels. */
#define CT_GEMM_SLAB_ALIGN 16

#ifdef CT_HAVE_DNNL
static pthread_once_t f32_once = PTHREAD_ONCE_INIT;
static bool f32_onednn;

static void read_f32_choice(void) {
    ct__cpu_dnnl_setup();
    const char *env = getenv("CT_F32_GEMM");
    if (env && strcmp(env, "openblas") == 0)
        f32_onednn = false;
    else if (env && strcmp(env, "onednn") == 0)
        f32_onednn = true;
    else
        f32_onednn = __builtin_cpu_supports("avx512f");
}

/* oneDNN's sgemm on the calling thread; false where it is not chosen, for an empty product
 * and where oneDNN refused the call (OpenBLAS then computes it). Outside a parallel region oneDNN
 * would start as many threads as OpenMP may, so the calling thread's limit is 1 for the call. */
static bool onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                         int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                         int64_t ldc) {
    pthread_once(&f32_once, read_f32_choice);
    if (!f32_onednn || m == 0 || n == 0 || k == 0) return false;
#ifdef _OPENMP
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    dnnl_status_t st =
        dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    return st == dnnl_success;
}
#endif

const char *ct__cpu_f32_gemm_library(void) {
#ifdef CT_HAVE_DNNL
    pthread_once(&f32_once, read_f32_choice);
    if (f32_onednn) return "oneDNN";
#endif
    return "OpenBLAS";
}

static void gemm_call(ct_dtype dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                      const char *a, int64_t lda, const char *b, int64_t ldb, double beta, char *c,
                      int64_t ldc) {
#ifdef CT_HAVE_DNNL
    if (dtype == CT_F32 && onednn_sgemm(ta, tb, m, n, k, (const float *)a, lda, (const float *)b,
                                        ldb, (float)beta, (float *)c, ldc))
        return;
#endif
    CBLAS_TRANSPOSE oa = ta ? CblasTrans : CblasNoTrans, ob = tb ? CblasTrans : CblasNoTrans;
    if (dtype == CT_F64)
        cblas_dgemm(CblasRowMajor, oa, ob, (blasint)m, (blasint)n, (blasint)k, 1.0,
                    (const double *)a, (blasint)lda, (const double *)b, (blasint)ldb, beta,
                    (double *)c, (blasint)ldc);
    else
        cblas_sgemm(CblasRowMajor, oa, ob, (blasint)m, (blasint)n, (blasint)k, 1.0f,
                    (const float *)a, (blasint)lda, (const float *)b, (blasint)ldb, (float)beta,
                    (float *)c, (blasint)ldc);
}

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

/* OpenBLAS starts its pool when it loads, and a new pool thread spins for OpenBLAS's thread
 * timeout (about 0.1 s) before it sleeps. ctensor gives the pool no work, so it is stopped
 * once: on 2 cores its spinning made each of the first parallel regions take 8 ms, and the
 * parallel policy measured then (cpu_threads.c) kept ops of 10^5 elements on one thread.
 * blas_thread_shutdown_ is OpenBLAS's own (its fork handler calls it); OpenBLAS starts the
 * pool again by itself if a caller later asks it for threads. */
static void stop_pool(void) {
    openblas_set_num_threads(1);
    int (*shutdown)(void);
    *(void **)&shutdown = dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
    if (shutdown) shutdown();
}

void ct__cpu_blas_single_threaded(void) {
    pthread_once(&pool_once, stop_pool);
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

/* bias's elements c0.. added to rows [0, rows), columns [c0, c0 + cols) of c. */
static void add_bias(ct_dtype dtype, int64_t rows, int64_t c0, int64_t cols, const char *bias,
                     char *c, int64_t ldc) {
    for (int64_t i = 0; i < rows; i++) {
        if (dtype == CT_F64) {
            double *restrict r = (double *)c + i * ldc + c0;
            const double *restrict b = (const double *)bias + c0;
            for (int64_t j = 0; j < cols; j++) r[j] += b[j];
        } else {
            float *restrict r = (float *)c + i * ldc + c0;
            const float *restrict b = (const float *)bias + c0;
            for (int64_t j = 0; j < cols; j++) r[j] += b[j];
        }
    }
}

/* c = op(a) op(b) + beta c, or with bias (then beta is 0) op(a) op(b) + bias's row: each
 * thread adds the bias to its slab of c right after its GEMM wrote it, the product rounded
 * first (the bits of the product, then the add). */
static void gemm_slabs(ct_dtype dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const void *a, int64_t lda, const void *b, int64_t ldb, double beta,
                       const char *bias, void *c, int64_t ldc) {
    bool nested = false;
#ifdef _OPENMP
    nested = omp_in_parallel();
#endif
    /* In a parallel region, its maker has done this: it writes a global. */
    if (!nested) ct__cpu_blas_single_threaded();
    int threads = nested ? 1 : ct__cpu_threads_for_gemm(m, n, k);
    double mnk = (double)m * (double)n * (double)k;
    while (threads > 1 && mnk / threads <= CT_GEMM_MIN_SLAB) threads--;
    if (threads < 2) {
        gemm_call(dtype, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
        if (bias) add_bias(dtype, m, 0, n, bias, c, ldc);
        return;
    }
    int64_t size = dtype == CT_F64 ? 8 : 4;
    bool by_rows = m >= n;
    int64_t length = by_rows ? m : n;
    int64_t slab = (length + threads - 1) / threads;
    slab = (slab + CT_GEMM_SLAB_ALIGN - 1) / CT_GEMM_SLAB_ALIGN * CT_GEMM_SLAB_ALIGN;
    int64_t slabs = (length + slab - 1) / slab;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static, 1)
#endif
    for (int64_t s = 0; s < slabs; s++) {
        int64_t lo = s * slab, count = length - lo < slab ? length - lo : slab;
        const char *pa = a, *pb = b;
        char *pc = c;
        if (by_rows) { /* rows lo.. of op(a) and of c */
            pa += (ta ? lo : lo * lda) * size;
            pc += lo * ldc * size;
            gemm_call(dtype, ta, tb, count, n, k, pa, lda, pb, ldb, beta, pc, ldc);
            if (bias) add_bias(dtype, count, 0, n, bias, pc, ldc);
        } else { /* columns lo.. of op(b) and of c */
            pb += (tb ? lo * ldb : lo) * size;
            gemm_call(dtype, ta, tb, m, count, k, pa, lda, pb, ldb, beta, pc + lo * size, ldc);
            if (bias) add_bias(dtype, m, lo, count, bias, pc, ldc);
        }
    }
}

void ct__cpu_gemm(ct_dtype dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a,
                  int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    gemm_slabs(dtype, ta, tb, m, n, k, a, lda, b, ldb, beta, NULL, c, ldc);
}

void ct__cpu_gemm_bias(ct_dtype dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const void *a, int64_t lda, const void *b, int64_t ldb, const void *bias,
                       void *c, int64_t ldc) {
    gemm_slabs(dtype, ta, tb, m, n, k, a, lda, b, ldb, 0.0, bias, c, ldc);
}

/* The linalg slot on the CPU: LAPACK from OpenBLAS (declared by lapack.h), one call per
 * matrix of the stack (cpu_linalg_typed_impl.h), with OpenBLAS single-threaded inside, as
 * everywhere in ctensor (cpu_gemm.c). A stack of several matrices is split over ctensor's
 * OpenMP threads, a matrix to a thread; a single large EIGH or SVD with vectors spreads its
 * own stages over them (eigh_split, svd_split). OpenBLAS's own threads, which SVD, CHOLESKY and QR
 * of a single large matrix once took, made them slower in ctensor's process, not faster: at 512 x
 * 512 f64, svd 96 against 73 ms, qr 23.6 against 17.2, cholesky 3.9 against 3.3
 * (docs/PERFORMANCE.md), and their pool, once started, spins after each call on the cores
 * ctensor's next parallel regions need. Complex matrices are C's _Complex types, laid out as
 * ct_complex64 and ct_complex128 are (lapack.h's lapack_complex_float and _double). */
#include <float.h>
#include <lapack.h>
#include <math.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "backend/cpu/cpu_impl.h"
#include "backend/linalg_args_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"

/* After ctensor's headers: its macros (I, complex) reach none of them. */
#include <complex.h>

#define CT_LINALG_NO_MEMORY ((lapack_int)-100000)

/* A matrix alone in its stack from this order takes ctensor's threads itself (EIGH, SVD). */
#define CT_LINALG_THREADED_ORDER 192

/* A work block kept for the next call up to this size (a 512 x 512 complex128 svd's 27 MB
 * fits): larger ones go back to the system, whose page faults then cost a few percent of
 * their factorization's O(n^3) time, where they cost a tenth at 512. */
#define CT_LINALG_SPARE_MAX ((size_t)32 << 20)

/* A block of LAPACK work (eigh_split's and svd_split's arrays), its capacity in a header. */
typedef struct work_block {
    size_t capacity;
    alignas(64) unsigned char data[];
} work_block;

/* The block the last call gave back. Page faults on a fresh block of several MiB cost a
 * tenth of a 512 x 512 eigh (1540 faults a call, about 3 ms); the spare makes them once. */
static _Atomic(work_block *) spare_block;

/* bytes of work: the spare when it is large enough and no other thread holds it, else a new
 * block; NULL when out of memory. */
static work_block *take_work(size_t bytes) {
    work_block *block = atomic_exchange(&spare_block, NULL);
    if (block && block->capacity >= bytes) return block;
    free(block);
    block = malloc(sizeof *block + bytes);
    if (block) block->capacity = bytes;
    return block;
}

/* Back as the spare, unless it is too large or there is one again. */
static void give_work(work_block *block) {
    work_block *none = NULL;
    if (block && (block->capacity > CT_LINALG_SPARE_MAX ||
                  !atomic_compare_exchange_strong(&spare_block, &none, block)))
        free(block);
}

#define T double
#define R double
#define COMPLEX 0
#define ABS(x) fabs(x)
#define LAPACK(name) LAPACK_d##name
#define REAL_LAPACK(name) LAPACK_d##name
#define ORGQR LAPACK_dorgqr
#define GEMM_NN(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)                                      \
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta,   \
                c, ldc)
#define TYPED(name) name##_f64
#include "backend/cpu/cpu_linalg_typed_impl.h"
#undef T
#undef R
#undef COMPLEX
#undef ABS
#undef LAPACK
#undef REAL_LAPACK
#undef ORGQR
#undef GEMM_NN
#undef TYPED
#define T float
#define R float
#define COMPLEX 0
#define ABS(x) fabsf(x)
#define LAPACK(name) LAPACK_s##name
#define REAL_LAPACK(name) LAPACK_s##name
#define ORGQR LAPACK_sorgqr
#define GEMM_NN(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)                                      \
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta,   \
                c, ldc)
#define TYPED(name) name##_f32
#include "backend/cpu/cpu_linalg_typed_impl.h"
#undef T
#undef R
#undef COMPLEX
#undef ABS
#undef LAPACK
#undef REAL_LAPACK
#undef ORGQR
#undef GEMM_NN
#undef TYPED
#define T double _Complex
#define R double
#define COMPLEX 1
#define ABS(x) cabs(x)
#define LAPACK(name) LAPACK_z##name
#define REAL_LAPACK(name) LAPACK_d##name
#define ORGQR LAPACK_zungqr
#define GEMM_NN(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)                                      \
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, &alpha, a, lda, b, ldb, &beta, \
                c, ldc)
#define TYPED(name) name##_c128
#include "backend/cpu/cpu_linalg_typed_impl.h"
#undef T
#undef R
#undef COMPLEX
#undef ABS
#undef LAPACK
#undef REAL_LAPACK
#undef ORGQR
#undef GEMM_NN
#undef TYPED
#define T float _Complex
#define R float
#define COMPLEX 1
#define ABS(x) cabsf(x)
#define LAPACK(name) LAPACK_c##name
#define REAL_LAPACK(name) LAPACK_s##name
#define ORGQR LAPACK_cungqr
#define GEMM_NN(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)                                      \
    cblas_cgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, &alpha, a, lda, b, ldb, &beta, \
                c, ldc)
#define TYPED(name) name##_c64
#include "backend/cpu/cpu_linalg_typed_impl.h"
#undef T
#undef R
#undef COMPLEX
#undef ABS
#undef LAPACK
#undef REAL_LAPACK
#undef ORGQR
#undef GEMM_NN
#undef TYPED

/* The elements of each matrix of a stack of rows x cols. */
static size_t area(int64_t rows, int64_t cols) { return (size_t)rows * (size_t)cols; }

/* Matrix i of args: LAPACK's info for it (T the element type, R its parts' real type: that of
 * the eigenvalues, the singular values and log|det|). */
#define RUN_TYPED(T, R, suffix)                                                                    \
    static lapack_int run_##suffix(const ct__linalg_args *g, int64_t i, int threads) {             \
        lapack_int m = (lapack_int)g->m, n = (lapack_int)g->n, k = (lapack_int)g->k;               \
        lapack_int small = m < n ? m : n;                                                          \
        T *a = (T *)g->a + area(g->m, g->n) * (size_t)i;                                           \
        T *o0 = (T *)g->out0, *o1 = (T *)g->out1, *o2 = (T *)g->out2;                              \
        R *r0 = (R *)g->out0, *r1 = (R *)g->out1;                                                  \
        switch (g->op) {                                                                           \
        case CT_LINALG_CHOLESKY: return cholesky_##suffix(n, a);                                   \
        case CT_LINALG_SOLVE: return solve_##suffix(n, k, a, o0 + area(n, k) * (size_t)i);         \
        case CT_LINALG_DET:                                                                        \
            return det_##suffix(n, a, o0 ? o0 + i : NULL, r1 ? r1 + i : NULL, o2 ? o2 + i : NULL); \
        case CT_LINALG_EIGH:                                                                       \
            if (o1 && threads > 1)                                                                 \
                return eigh_split_##suffix(n, a, r0 + (size_t)n * (size_t)i, threads);             \
            return eigh_##suffix(n, a, r0 + (size_t)n * (size_t)i, o1 != NULL);                    \
        case CT_LINALG_SVD: {                                                                      \
            lapack_int ucols = g->full ? m : small, vrows = g->full ? n : small;                   \
            if (o1 && threads > 1)                                                                 \
                return svd_split_##suffix(m, n, g->full, a, r0 + (size_t)small * (size_t)i,        \
                                          o1 + area(m, ucols) * (size_t)i,                         \
                                          o2 + area(vrows, n) * (size_t)i, threads);               \
            return svd_##suffix(m, n, g->full, a, r0 + (size_t)small * (size_t)i,                  \
                                o1 ? o1 + area(m, ucols) * (size_t)i : NULL,                       \
                                o2 ? o2 + area(vrows, n) * (size_t)i : NULL);                      \
        }                                                                                          \
        case CT_LINALG_QR: {                                                                       \
            lapack_int qcols = g->full ? m : small, rrows = g->full ? m : small;                   \
            return qr_##suffix(m, n, g->full, a, o0 + area(m, qcols) * (size_t)i,                  \
                               o1 + area(rrows, n) * (size_t)i);                                   \
        }                                                                                          \
        }                                                                                          \
        return -1;                                                                                 \
    }
RUN_TYPED(double, double, f64)
RUN_TYPED(float, float, f32)
RUN_TYPED(double _Complex, double, c128)
RUN_TYPED(float _Complex, float, c64)

/* threads: how many OpenMP threads the matrix may use itself (more than 1 only when alone). */
static lapack_int run_one(const ct__linalg_args *args, int64_t i, int threads) {
    switch (args->dtype) {
    case CT_F64: return run_f64(args, i, threads);
    case CT_C128: return run_c128(args, i, threads);
    case CT_C64: return run_c64(args, i, threads);
    default: return run_f32(args, i, threads);
    }
}

ct_status ct__cpu_linalg(int device, const ct__linalg_args *args, int64_t *first_bad) {
    (void)device;
    *first_bad = -1;
    if (args->dtype != CT_F64 && args->dtype != CT_F32 && args->dtype != CT_C64 &&
        args->dtype != CT_C128)
        return ct__error(CT_ERR_DTYPE, "linalg: the CPU has no %s kernel",
                         ct_dtype_name(args->dtype));
    int64_t bad = INT64_MAX;
    lapack_int failure = 0; /* the first info < 0 (an argument LAPACK refused, or no memory) */
    int64_t order = args->m > args->n ? args->m : args->n;
    int threads = args->count < ct__cpu_threads() ? (int)args->count : ct__cpu_threads();
    bool alone_and_large = args->count == 1 && order >= CT_LINALG_THREADED_ORDER;
    ct__cpu_blas_single_threaded();
    if (threads < 1) threads = 1;
    /* A lone matrix's region is inactive (if), so EIGH's own region inside it gets threads. */
    int own_threads = alone_and_large ? ct__cpu_threads() : 1;
#ifdef _OPENMP
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(dynamic)                   \
    reduction(min                                                                                  \
              : bad, failure)
#endif
    for (int64_t i = 0; i < args->count; i++) {
        lapack_int info = run_one(args, i, own_threads);
        if (info > 0 && i < bad) bad = i;
        if (info < 0 && info < failure) failure = info;
    }
    if (failure == CT_LINALG_NO_MEMORY)
        return ct__error(CT_ERR_OUT_OF_MEMORY, "linalg: out of host memory for LAPACK's work");
    if (failure < 0)
        return ct__error(CT_ERR_BACKEND, "linalg: LAPACK refused its argument %d", (int)-failure);
    *first_bad = bad == INT64_MAX ? -1 : bad;
    return CT_OK;
}

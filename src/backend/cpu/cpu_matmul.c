/* CPU matmul kernels (ct__matmul_args in backend_impl.h).
 *
 * f32 and f64 go to GEMM (f32 on oneDNN's sgemm where the build has it, else OpenBLAS; f64 on
 * OpenBLAS), one call per batch index, each split over ctensor's threads (ct__cpu_gemm). An operand
 * whose matrix has a unit stride on either axis is passed as it is, row-major or transposed, with
 * its other stride as the leading dimension; any other layout (broadcast rows, negative or doubly
 * strided views) is packed into a contiguous scratch matrix first. bf16 runs on the CPU's bf16
 * units where it has them (oneDNN, f32 accumulation); otherwise f16 and bf16 are converted to f32,
 * multiplied with sgemm and rounded back once. An f32 or f64 product may carry a bias row
 * (args->bias), which each thread adds to its slab of the result right after its GEMM.
 * Integer dtypes are exact: products and sums wrap modulo 2^bits in unsigned arithmetic, which is
 * what a wrapping accumulator in the output dtype gives; bool is logical (OR over k of a AND b), as
 * numpy.matmul does for bool arrays. complex64 and complex128 go to cblas_cgemm and cblas_zgemm
 * with the same layout rules. */
#include <cblas.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "backend/cpu/cpu_impl.h"
#include "backend/gemm_layout_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"

/* ---- batch iteration ---- */

/* Element offsets of batch index `linear` (C order over args->batch_shape). */
static void batch_offsets(const ct__matmul_args *x, int64_t linear, int64_t *a, int64_t *b,
                          int64_t *out) {
    *a = *b = *out = 0;
    for (int d = x->batch_ndim - 1; d >= 0; d--) {
        int64_t i = linear % x->batch_shape[d];
        linear /= x->batch_shape[d];
        *a += i * x->a_batch_strides[d];
        *b += i * x->b_batch_strides[d];
        *out += i * x->out_batch_strides[d];
    }
}

static int64_t batch_count(const ct__matmul_args *x) {
    int64_t n = 1;
    for (int d = 0; d < x->batch_ndim; d++) n *= x->batch_shape[d];
    return n;
}

/* ---- BLAS path (f32, f64, and f16/bf16 through f32) ---- */

/* Copy a strided rows x cols matrix of dtype into a contiguous one of f32 or f64. */
static void pack(void *dst, bool f64, const char *src, ct_dtype dtype, int64_t rows, int64_t cols,
                 int64_t rs, int64_t cs) {
    int64_t size = (int64_t)ct__dtype_size(dtype);
    for (int64_t i = 0; i < rows; i++) {
        const char *row = src + i * rs * size;
        if (f64) {
            double *d = (double *)dst + i * cols;
            for (int64_t j = 0; j < cols; j++) d[j] = *(const double *)(row + j * cs * size);
        } else if (dtype == CT_F32) {
            float *d = (float *)dst + i * cols;
            for (int64_t j = 0; j < cols; j++) d[j] = *(const float *)(row + j * cs * size);
        } else {
            float *d = (float *)dst + i * cols;
            for (int64_t j = 0; j < cols; j++)
                d[j] = (float)ct__load_f64(row + j * cs * size, dtype);
        }
    }
}

/* Round an f32 m x n result into the f16/bf16 output rows. */
static void unpack(char *out, ct_dtype dtype, int64_t row_stride, const float *c, int64_t m,
                   int64_t n) {
    for (int64_t i = 0; i < m; i++) {
        uint16_t *o = (uint16_t *)out + i * row_stride;
        const float *r = c + i * n;
        if (dtype == CT_F16)
            for (int64_t j = 0; j < n; j++) o[j] = ct__f32_to_f16(r[j]);
        else
            for (int64_t j = 0; j < n; j++) o[j] = ct__f32_to_bf16(r[j]);
    }
}

typedef struct {
    bool f64;     /* compute in f64 (else f32) */
    bool convert; /* f16/bf16: operands and result go through f32 scratch */
    ct__gemm_layout la, lb;
    void *a_pack, *b_pack, *c_tmp; /* scratch, NULL where unused */
} blas_plan;

/* c = a @ b, plus x->bias's row where there is one (f32 and f64 only: the op's contract). */
static void gemm(const blas_plan *p, const ct__matmul_args *x, const void *a, int64_t lda,
                 const void *b, int64_t ldb, void *c, int64_t ldc) {
    ct_dtype dtype = p->f64 ? CT_F64 : CT_F32;
    bool ta = p->la.direct && p->la.transposed, tb = p->lb.direct && p->lb.transposed;
    if (x->bias)
        ct__cpu_gemm_bias(dtype, ta, tb, x->m, x->n, x->k, a, lda, b, ldb, x->bias, c, ldc);
    else
        ct__cpu_gemm(dtype, ta, tb, x->m, x->n, x->k, a, lda, b, ldb, 0.0, c, ldc);
}

/* One batch index: pack what must be packed (skipping a repack of an operand broadcast
 * over the batch), multiply, convert the result where needed. */
static void blas_batch(const blas_plan *p, const ct__matmul_args *x, int64_t ao, int64_t bo,
                       int64_t oo, int64_t *packed_a, int64_t *packed_b) {
    int64_t size = (int64_t)ct__dtype_size(x->dtype);
    const char *a = x->a + ao * size, *b = x->b + bo * size;
    char *out = x->out + oo * size;
    const void *ga = a, *gb = b;
    int64_t lda = p->la.ld, ldb = p->lb.ld;
    if (!p->la.direct) {
        if (*packed_a != ao)
            pack(p->a_pack, p->f64, a, x->dtype, x->m, x->k, x->a_row_stride, x->a_col_stride);
        *packed_a = ao;
        ga = p->a_pack;
        lda = x->k;
    }
    if (!p->lb.direct) {
        if (*packed_b != bo)
            pack(p->b_pack, p->f64, b, x->dtype, x->k, x->n, x->b_row_stride, x->b_col_stride);
        *packed_b = bo;
        gb = p->b_pack;
        ldb = x->n;
    }
    if (p->convert) {
        gemm(p, x, ga, lda, gb, ldb, p->c_tmp, x->n);
        unpack(out, x->dtype, x->out_row_stride, p->c_tmp, x->m, x->n);
    } else {
        gemm(p, x, ga, lda, gb, ldb, out, x->out_row_stride);
    }
}

/* bf16 on the CPU's bf16 units (cpu_gemm_dnnl.c), with an f32 result rounded once, when
 * both operands are usable as they are; false when it is not done (no bf16 units, another
 * layout): the f32 path then does it all. */
static bool native_bf16_matmul(const ct__matmul_args *x) {
    ct__gemm_layout la = ct__gemm_layout_of(x->m, x->k, x->a_row_stride, x->a_col_stride);
    ct__gemm_layout lb = ct__gemm_layout_of(x->k, x->n, x->b_row_stride, x->b_col_stride);
    if (!la.direct || !lb.direct) return false;
    float *c = ct__malloc((size_t)(x->m * x->n) * sizeof *c);
    if (!c) return false;
    bool done = true;
    int64_t batches = batch_count(x);
    for (int64_t i = 0; i < batches && done; i++) {
        int64_t ao, bo, oo;
        batch_offsets(x, i, &ao, &bo, &oo);
        done = ct__cpu_gemm_bf16(false, la.transposed, lb.transposed, x->m, x->n, x->k,
                                 x->a + ao * 2, la.ld, x->b + bo * 2, lb.ld, false, c, x->n);
        if (done) unpack(x->out + oo * 2, CT_BF16, x->out_row_stride, c, x->m, x->n);
    }
    ct__free_mem(c);
    return done; /* when not, the f32 path writes every batch again */
}

static ct_status blas_matmul(const ct__matmul_args *x) {
    if (x->dtype == CT_BF16 && native_bf16_matmul(x)) return CT_OK;
    if (x->m > INT_MAX || x->n > INT_MAX || x->k > INT_MAX || x->out_row_stride > INT_MAX)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_matmul: matrix sizes %lld x %lld @ %lld x %lld exceed BLAS's 32-bit "
                         "sizes; split the product",
                         (long long)x->m, (long long)x->k, (long long)x->k, (long long)x->n);
    blas_plan p = {
        x->dtype == CT_F64, x->dtype == CT_F16 || x->dtype == CT_BF16, {0}, {0}, NULL, NULL, NULL};
    ct__gemm_layout packed = {false, false, 0};
    p.la = p.convert ? packed : ct__gemm_layout_of(x->m, x->k, x->a_row_stride, x->a_col_stride);
    p.lb = p.convert ? packed : ct__gemm_layout_of(x->k, x->n, x->b_row_stride, x->b_col_stride);
    size_t esize = p.f64 ? sizeof(double) : sizeof(float);
    size_t na = p.la.direct ? 0 : (size_t)(x->m * x->k);
    size_t nb = p.lb.direct ? 0 : (size_t)(x->k * x->n);
    size_t nc = p.convert ? (size_t)(x->m * x->n) : 0;
    char *scratch = NULL;
    if (na + nb + nc) {
        scratch = ct__malloc((na + nb + nc) * esize);
        if (!scratch)
            return ct__error(CT_ERR_OUT_OF_MEMORY,
                             "ct_matmul: out of host memory for %zu bytes of packing scratch",
                             (na + nb + nc) * esize);
        p.a_pack = na ? scratch : NULL;
        p.b_pack = nb ? scratch + na * esize : NULL;
        p.c_tmp = nc ? scratch + (na + nb) * esize : NULL;
    }
    int64_t packed_a = -1, packed_b = -1, batches = batch_count(x);
    for (int64_t i = 0; i < batches; i++) {
        int64_t ao, bo, oo;
        batch_offsets(x, i, &ao, &bo, &oo);
        blas_batch(&p, x, ao, bo, oo, &packed_a, &packed_b);
    }
    ct__free_mem(scratch);
    return CT_OK;
}

/* ---- exact integer path ---- */

/* One output row: out[j] = sum_p a[p] * b[p][j], accumulated in place in the unsigned type
 * of the output's width (U), so every overflow wraps as the dtype does. */
#define CT_INT_ROW_(name, T, U)                                                                    \
    static void name(const ct__matmul_args *x, const char *a, const char *b, char *out) {          \
        U *o = (U *)out;                                                                           \
        for (int64_t j = 0; j < x->n; j++) o[j] = 0;                                               \
        for (int64_t p = 0; p < x->k; p++) {                                                       \
            U av = (U)(*(const T *)(a + p * x->a_col_stride * (int64_t)sizeof(T)));                \
            if (av == 0) continue;                                                                 \
            const T *br = (const T *)b + p * x->b_row_stride;                                      \
            int64_t cs = x->b_col_stride;                                                          \
            for (int64_t j = 0; j < x->n; j++) o[j] = (U)(o[j] + av * (U)br[j * cs]);              \
        }                                                                                          \
    }

CT_INT_ROW_(row_i32, int32_t, uint32_t)
CT_INT_ROW_(row_i64, int64_t, uint64_t)
CT_INT_ROW_(row_u8, uint8_t, uint8_t)
CT_INT_ROW_(row_i8, int8_t, uint8_t)
CT_INT_ROW_(row_i16, int16_t, uint16_t)
CT_INT_ROW_(row_u16, uint16_t, uint16_t)
CT_INT_ROW_(row_u32, uint32_t, uint32_t)
CT_INT_ROW_(row_u64, uint64_t, uint64_t)
#undef CT_INT_ROW_

/* bool: out[j] = OR_p (a[p] AND b[p][j]). */
static void row_bool(const ct__matmul_args *x, const char *a, const char *b, char *out) {
    uint8_t *o = (uint8_t *)out;
    for (int64_t j = 0; j < x->n; j++) o[j] = 0;
    for (int64_t p = 0; p < x->k; p++) {
        if (!a[p * x->a_col_stride]) continue;
        const uint8_t *br = (const uint8_t *)b + p * x->b_row_stride;
        for (int64_t j = 0; j < x->n; j++) o[j] |= br[j * x->b_col_stride] != 0;
    }
}

typedef void (*int_row_fn)(const ct__matmul_args *x, const char *a, const char *b, char *out);

static int_row_fn int_row(ct_dtype dtype) {
    switch (dtype) {
    case CT_I32: return row_i32;
    case CT_I64: return row_i64;
    case CT_U8: return row_u8;
    case CT_I8: return row_i8;
    case CT_I16: return row_i16;
    case CT_U16: return row_u16;
    case CT_U32: return row_u32;
    case CT_U64: return row_u64;
    default: return row_bool;
    }
}

static ct_status int_matmul(const ct__matmul_args *x) {
    int_row_fn row = int_row(x->dtype);
    int64_t size = (int64_t)ct__dtype_size(x->dtype);
    int64_t rows = batch_count(x) * x->m;
    /* Work per row is n * k multiply-adds; parallelise over all rows of all batches. */
#ifdef _OPENMP
#pragma omp parallel for if (rows * x->n * x->k >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t r = 0; r < rows; r++) {
        int64_t ao, bo, oo, i = r % x->m;
        batch_offsets(x, r / x->m, &ao, &bo, &oo);
        row(x, x->a + (ao + i * x->a_row_stride) * size, x->b + bo * size,
            x->out + (oo + i * x->out_row_stride) * size);
    }
    return CT_OK;
}

/* Copy a strided rows x cols complex matrix into a contiguous row-major one. */
static void pack_complex(char *dst, const char *src, size_t size, int64_t rows, int64_t cols,
                         int64_t rs, int64_t cs) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            memcpy(dst + (i * cols + j) * (int64_t)size, src + (i * rs + j * cs) * (int64_t)size,
                   size);
}

/* complex64 and complex128: one cblas_cgemm or cblas_zgemm per batch index on the operands
 * where they lie (row-major, or transposed: CblasTrans) and into out's rows; an operand of
 * another layout (broadcast rows, negative or doubly strided views) is packed contiguous
 * first, once for an operand broadcast over the batch. */
static ct_status complex_matmul(const ct__matmul_args *x) {
    if (x->m > INT_MAX || x->n > INT_MAX || x->k > INT_MAX || x->out_row_stride > INT_MAX)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_matmul: matrix sizes %lld x %lld @ %lld x %lld exceed BLAS's 32-bit "
                         "sizes; split the product",
                         (long long)x->m, (long long)x->k, (long long)x->k, (long long)x->n);
    size_t size = ct__dtype_size(x->dtype);
    int64_t m = x->m, n = x->n, k = x->k;
    ct__gemm_layout la = ct__gemm_layout_of(m, k, x->a_row_stride, x->a_col_stride);
    ct__gemm_layout lb = ct__gemm_layout_of(k, n, x->b_row_stride, x->b_col_stride);
    size_t na = la.direct ? 0 : (size_t)(m * k), nb = lb.direct ? 0 : (size_t)(k * n);
    char *scratch = NULL;
    if (na + nb && !(scratch = ct__malloc((na + nb) * size)))
        return ct__error(CT_ERR_OUT_OF_MEMORY,
                         "ct_matmul: out of host memory for %zu bytes of packed complex operands",
                         (na + nb) * size);
    char *a_pack = scratch, *b_pack = scratch + na * size;
    static const ct_complex128 one128 = {1, 0}, zero128 = {0, 0};
    static const ct_complex64 one64 = {1, 0}, zero64 = {0, 0};
    CBLAS_TRANSPOSE ta = la.direct && la.transposed ? CblasTrans : CblasNoTrans;
    CBLAS_TRANSPOSE tb = lb.direct && lb.transposed ? CblasTrans : CblasNoTrans;
    int lda = (int)(la.direct ? la.ld : k), ldb = (int)(lb.direct ? lb.ld : n);
    int64_t packed_a = -1, packed_b = -1, batches = batch_count(x);
    for (int64_t i = 0; i < batches; i++) {
        int64_t ao, bo, oo;
        batch_offsets(x, i, &ao, &bo, &oo);
        const char *a = x->a + ao * (int64_t)size, *b = x->b + bo * (int64_t)size;
        if (!la.direct && packed_a != ao)
            pack_complex(a_pack, a, size, m, k, x->a_row_stride, x->a_col_stride);
        if (!lb.direct && packed_b != bo)
            pack_complex(b_pack, b, size, k, n, x->b_row_stride, x->b_col_stride);
        packed_a = ao;
        packed_b = bo;
        const void *ga = la.direct ? (const void *)a : a_pack;
        const void *gb = lb.direct ? (const void *)b : b_pack;
        void *c = x->out + oo * (int64_t)size;
        if (x->dtype == CT_C128)
            cblas_zgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, &one128, ga, lda, gb, ldb,
                        &zero128, c, (int)x->out_row_stride);
        else
            cblas_cgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, &one64, ga, lda, gb, ldb,
                        &zero64, c, (int)x->out_row_stride);
    }
    ct__free_mem(scratch);
    return CT_OK;
}

/* k == 0 never arrives here: the op layer fills the zeros itself. */
ct_status ct__cpu_matmul(int device, const ct__matmul_args *args) {
    (void)device;
    if (args->bias && args->dtype != CT_F32 && args->dtype != CT_F64)
        return ct__error(CT_ERR_UNSUPPORTED, "ct_matmul: a bias in the product is for f32 and f64");
    if (args->m == 0 || args->n == 0 || batch_count(args) == 0) return CT_OK;
    if (ct__is_complex(args->dtype)) return complex_matmul(args);
    if (ct__is_float(args->dtype)) return blas_matmul(args);
    return int_matmul(args);
}

/* The CPU backend's internals: the kernel functions (one file per op family) and the
 * strided row iterator they share.
 *
 * Iteration: an elementwise iteration space is walked in rows along its last axis. A row
 * function gets each operand's pointer to the row's first element, each operand's byte
 * stride along the row, and the row's length. ct__cpu_parallel_rows splits the space over
 * OpenMP threads when it holds at least CT_CPU_PARALLEL_THRESHOLD elements. */
#ifndef CT_CPU_IMPL_H
#define CT_CPU_IMPL_H

#include "backend/backend_impl.h"

#define CT_CPU_PARALLEL_THRESHOLD 32768

/* Hot loops get an AVX2+FMA clone picked at load time, so a generic x86-64 build still
 * runs them 8 floats at a time where the processor allows. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CT_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CT_CPU_CLONES
#endif

typedef void (*ct_cpu_row_fn)(char *const *ptrs, const int64_t *byte_strides, int64_t n, void *ctx);

/* Walk elements [begin, end) (C-order linear indices) of args in rows. */
void ct__cpu_rows(const ct_ew_args *args, int64_t begin, int64_t end, ct_cpu_row_fn fn, void *ctx);
/* Walk every element, in parallel above the threshold. Row functions must be thread-safe
 * (they may write only their own output elements). */
void ct__cpu_parallel_rows(const ct_ew_args *args, ct_cpu_row_fn fn, void *ctx);
/* Number of OpenMP threads kernels use (1 without OpenMP). */
int ct__cpu_threads(void);

ct_status ct__cpu_unary(int device, ct_unary_op op, const ct_ew_args *args, double p0, double p1);
ct_status ct__cpu_binary(int device, ct_binary_op op, const ct_ew_args *args);
ct_status ct__cpu_where(int device, const ct_ew_args *args);
ct_status ct__cpu_copy(int device, const ct_ew_args *args);
ct_status ct__cpu_fill(int device, const ct_ew_args *args, double value);
ct_status ct__cpu_iota(int device, const ct_ew_args *args, double start, double step);
ct_status ct__cpu_random(int device, const ct_ew_args *args, ct_random_kind kind, uint64_t seed,
                         uint64_t offset);
ct_status ct__cpu_reduce(int device, ct_reduce_op op, const ct_reduce_args *args);
ct_status ct__cpu_matmul(int device, const ct_matmul_args *args);
/* c = op(a) @ op(b) + beta * c for f32 or f64, row-major, leading dimensions in elements
 * (cpu_gemm.c): OpenBLAS on ctensor's OpenMP threads, never on OpenBLAS's own. A parallel
 * region that calls it must call ct__cpu_blas_single_threaded before it opens. */
/* c (f32, m x n, leading dimension ldc) = op(a) @ op(b) (+ c when accumulate), a and b bf16
 * (or, with f32_inputs, f32 holding bf16 values), on the bf16 units through oneDNN
 * (cpu_gemm_dnnl.c). False, c untouched, when the CPU or the build has none (or CT_BF16_GEMM
 * =off): the caller then computes in f32. Safe to call from several threads at once. */
bool ct__cpu_gemm_bf16(bool f32_inputs, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const void *a, int64_t lda, const void *b, int64_t ldb, bool accumulate,
                       float *c, int64_t ldc);
void ct__cpu_gemm(ct_dtype dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a,
                  int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc);
/* Set OpenBLAS's own thread count to 1 (a process-wide setting). */
void ct__cpu_blas_single_threaded(void);
ct_status ct__cpu_gather(int device, const ct_gather_args *args);
/* Convolution and pooling (cpu_conv.c, cpu_pool.c; arguments in backend/conv_args_impl.h). */
ct_status ct__cpu_conv2d_workspace(int device, const struct ct_conv2d_args *args, bool backward,
                                   size_t *bytes);
ct_status ct__cpu_conv2d_forward(int device, const struct ct_conv2d_args *args);
ct_status ct__cpu_conv2d_backward(int device, const struct ct_conv2d_args *args);
ct_status ct__cpu_pool2d_forward(int device, const struct ct_pool2d_args *args);
ct_status ct__cpu_pool2d_backward(int device, const struct ct_pool2d_args *args);

/* Optimisers (cpu_optim.c). */
ct_status ct__cpu_optim_step(int device, const ct_optim_args *args);
ct_status ct__cpu_list_norm(int device, const ct_list_args *args, double p, double *out);
ct_status ct__cpu_list_scale(int device, const ct_list_args *args, double factor);
ct_status ct__cpu_list_unscale(int device, const ct_list_args *args, double inv_scale,
                               int32_t *first_bad);

#endif

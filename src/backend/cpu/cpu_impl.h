/* The CPU backend's internals: the kernel functions (one file per op family) and the
 * strided row iterator they share.
 *
 * Iteration: an elementwise iteration space is walked in rows along its last axis. A row
 * function gets each operand's pointer to the row's first element, each operand's byte
 * stride along the row, and the row's length. ct__cpu_parallel_rows splits the space over
 * as many OpenMP threads as its size pays for (ct__cpu_threads_for_elements). */
#ifndef CT_CPU_IMPL_H
#define CT_CPU_IMPL_H

#include "backend/backend_impl.h"

/* The parallel policy (cpu_threads.c): the work below which an op runs on one thread, in
 * elements of elementwise-like work, from the measured cost of a parallel region. A call,
 * not a constant; INT64_MAX with one thread. */
#define CT_CPU_PARALLEL_THRESHOLD ct__cpu_parallel_threshold()
int64_t ct__cpu_parallel_threshold(void);
/* Per thread, a split never gives less work than this, whatever was measured; so an op of
 * fewer than twice as many elements always runs on one thread, decided with no call (the
 * path of small ops). */
#define CT_CPU_MIN_SPLIT 8192
/* Threads for work of this size (1 inside a parallel region or with one thread): serial
 * time in ns, elements of elementwise-like work, or an m x n x k GEMM. */
int ct__cpu_threads_for(double serial_ns);
int ct__cpu_threads_for_elements(int64_t elements);
int ct__cpu_threads_for_gemm(int64_t m, int64_t n, int64_t k);

/* The monotonic clock in nanoseconds, for the kernels' own measurements (cpu_threads.c). */
double ct__cpu_now_ns(void);

/* The measured cost of opening a parallel region on the whole team, in ns (measured on the
 * first call); ct__cpu_set_region_ns replaces it (tests, to force either side of a split). */
double ct__cpu_region_ns(void);
void ct__cpu_set_region_ns(double ns);

/* Whether the attention kernels take bf16 data's products to the bf16 units
 * (cpu_attention.c): by default (-1) where the processor has AVX512_BF16 and
 * ct_cpu_has_fast_bf16; 1 wherever it has AVX512_BF16, 0 never (tests, to cover both paths). */
void ct__cpu_attention_set_bf16(int mode);

/* Hot loops get an AVX2+FMA clone picked at load time, so a generic x86-64 build still
 * runs them 8 floats at a time where the processor allows. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CT_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
/* The same with an AVX-512 clone, for the f32 <-> bf16 rows: integer shifts and selects that
 * run twice as wide there, around every bf16 elementwise op and pooling plane. */
#define CT_CPU_CLONES_AVX512                                                                       \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CT_CPU_CLONES
#define CT_CPU_CLONES_AVX512
#endif

/* Contiguous rows of f32 <-> bf16 (round to nearest even, NaNs kept quiet), vectorised. */
void ct__cpu_f32_to_bf16_row(uint16_t *out, const float *in, int64_t n);
void ct__cpu_bf16_to_f32_row(float *out, const uint16_t *in, int64_t n);

typedef void (*ct__cpu_row_fn)(char *const *ptrs, const int64_t *byte_strides, int64_t n,
                               void *ctx);

/* Walk elements [begin, end) (C-order linear indices) of args in rows. */
void ct__cpu_rows(const ct__ew_args *args, int64_t begin, int64_t end, ct__cpu_row_fn fn,
                  void *ctx);
/* Walk every element, in parallel above the threshold. Row functions must be thread-safe
 * (they may write only their own output elements). */
void ct__cpu_parallel_rows(const ct__ew_args *args, ct__cpu_row_fn fn, void *ctx);
/* The same with the operands' base addresses from data (nops of them) instead of args->data:
 * a kernel points an operand elsewhere (a scalar's value) without copying args. */
void ct__cpu_parallel_rows_at(const ct__ew_args *args, char *const *data, ct__cpu_row_fn fn,
                              void *ctx);
/* Number of OpenMP threads kernels use (1 without OpenMP). */
int ct__cpu_threads(void);

/* The kernels: ct__cpu_NAME for every row of backend/kernel_slots.h, defined in the cpu_*.c
 * file of its family; the CPU defines every required slot and the optional ones
 * CT_CPU_OPTIONAL_SLOTS lists (cpu_backend.c puts them in its table). */
#define CT_CPU_DECLARE_(name, need, sync, ret, parameters, arguments) ret ct__cpu_##name parameters;
CT_KERNEL_SLOTS(CT_CPU_DECLARE_)
#undef CT_CPU_DECLARE_
#define CT_CPU_OPTIONAL_SLOTS(X)                                                                   \
    X(conv2d_native)                                                                               \
    X(conv2d_channels_last)                                                                        \
    X(pool2d_native) X(pool2d_channels_last) X(batch_norm_channels_last) X(linalg)

/* c = op(a) @ op(b) + beta * c for f32 or f64, row-major, leading dimensions in elements
 * (cpu_gemm.c): OpenBLAS on ctensor's OpenMP threads, never on OpenBLAS's own. A parallel
 * region that calls it must call ct__cpu_blas_single_threaded before it opens. */
void ct__cpu_gemm(ct_dtype dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a,
                  int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc);
/* c = op(a) @ op(b) + bias (n elements of dtype, added to every row), as ct__cpu_gemm: each
 * thread adds the bias to its slab of c right after its GEMM wrote it (the same bits as the
 * product followed by the add). */
void ct__cpu_gemm_bias(ct_dtype dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const void *a, int64_t lda, const void *b, int64_t ldb, const void *bias,
                       void *c, int64_t ldc);
/* c (f32, m x n, leading dimension ldc) = op(a) @ op(b) (+ c when accumulate), a and b bf16
 * (or, with f32_inputs, f32 holding bf16 values), on the bf16 units through oneDNN
 * (cpu_gemm_dnnl.c). False, c untouched, when the CPU or the build has none (or CT_BF16_GEMM
 * =off): the caller then computes in f32. Safe to call from several threads at once. */
bool ct__cpu_gemm_bf16(bool f32_inputs, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const void *a, int64_t lda, const void *b, int64_t ldb, bool accumulate,
                       float *c, int64_t ldc);
#ifdef CT_HAVE_DNNL
/* Once per process, before ctensor's first oneDNN call: oneDNN's JIT profiling off (unless
 * DNNL_JIT_PROFILE asks for it), so that its first kernel does not look for VTune's
 * libJitPI.so with dlopen (cpu_gemm_dnnl.c). */
void ct__cpu_dnnl_setup(void);
#endif
/* Set OpenBLAS's own thread count to 1 (a process-wide setting); the first call also stops
 * OpenBLAS's idle pool. */
void ct__cpu_blas_single_threaded(void);
/* Where OpenBLAS fell back to kernels older than the processor runs (and OPENBLAS_CORETYPE is
 * unset), a constructor made it use the best family it has as libctensor loaded
 * (cpu_blas_core.c): "" when it had nothing to do, else " (chosen by ctensor: ...)", or why
 * it could not, for ct_cpu_kernels. */
const char *ct__cpu_blas_core_note(void);
/* The library f32 GEMM runs on here ("oneDNN" or "OpenBLAS"; cpu_gemm.c), for ct_cpu_kernels. */
const char *ct__cpu_f32_gemm_library(void);
/* The vector row 2x2 max pooling runs here ("AVX-512", "AVX2" or "scalar"; cpu_pool.c), for
 * ct_cpu_kernels. */
const char *ct__cpu_max_pool_row(void);
/* Pooling forward or backward of channels-last args (args->channels_last; cpu_pool_nhwc.c),
 * for cpu_pool.c's kernels. */
ct_status ct__cpu_pool2d_nhwc(const struct ct__pool2d_args *args, bool backward);
/* Whether f32 convolutions with this many input channels per group go to oneDNN where it made
 * their primitives (else im2col + GEMM): by the CPU and the shape, or CT_F32_CONV. */
bool ct__cpu_conv2d_f32_on_onednn(int64_t in_channels_per_group);
/* Convolution through oneDNN (cpu_conv_dnnl.c; ct__cpu_conv2d_native says whether a bf16
 * convolution runs there in bf16): whether oneDNN runs this call (its dtype, bf16 or f32, and
 * which of bias or bias gradient it has); and its workspace, forward and backward, which
 * cpu_conv.c's hand it. */
bool ct__cpu_conv2d_dnnl_runs(const struct ct__conv2d_args *a, bool backward);
/* Whether oneDNN runs this geometry with the Winograd algorithm (cpu_conv_dnnl.c says where),
 * for tests. */
bool ct__cpu_conv2d_dnnl_winograd(const struct ct__conv2d_args *a, bool backward);
ct_status ct__cpu_conv2d_dnnl_workspace(const struct ct__conv2d_args *a, bool backward,
                                        size_t *bytes);
ct_status ct__cpu_conv2d_dnnl_forward(const struct ct__conv2d_args *a);
ct_status ct__cpu_conv2d_dnnl_backward(const struct ct__conv2d_args *a);

#endif

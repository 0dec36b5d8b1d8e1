/* CPU scaled dot-product attention, forward and backward (ct__attention_args in
 * backend/norm_args_impl.h), flash-attention style: no tq x tk matrix, only blocks of keys.
 * f32, f16 and bf16 compute in float, f64 in double; the block products are GEMMs
 * (ct__cpu_gemm on the task's thread), for bf16 data on the bf16 units where they are fast
 * (cpu_attention_bf16.c).
 *
 * Forward: one task per (problem, block of CT_ATT_BR rows), an online softmax over the key
 * blocks. Backward (FlashAttention-2's, recomputing the probabilities from the saved
 * log-sum-exp): one task per (problem, group of key blocks), which writes its keys' rows of
 * grad_k and grad_v and a partial grad_q of its own; the partials are then added in group
 * order. The number of groups comes from the shapes alone, and no sum depends on which
 * thread runs a task, so two runs give the same bits (no atomics). Scratch: per thread O(CT_ATT_BC
 * * (d + dv) + tq * (d + dv)), plus the partial grad_q (groups x tq x d per problem): linear in the
 * sequence. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/cpu_norm_impl.h"
#include "backend/cpu/cpu_simd_impl.h"
#include "ctensor/autocast.h"
#include "core/error_impl.h"
#include "core/philox_impl.h"

#define CT_ATT_BR 64 /* query rows per forward task */
#define CT_ATT_BC 64 /* keys per block */
/* The backward splits a problem's key blocks into groups until there are this many tasks
 * (batch x groups), to keep the threads busy when batch is small. */
#define CT_ATT_BACKWARD_TASKS 16

/* Element offset of problem b's mask plane. */
static int64_t att_mask_base(const ct__attention_args *a, int64_t b) {
    int64_t at = 0;
    for (int ax = a->mask_batch_ndim - 1; ax >= 0; ax--) {
        at += b % a->mask_batch_shape[ax] * a->mask_batch_strides[ax];
        b /= a->mask_batch_shape[ax];
    }
    return at;
}

/* Element offset of problem b's row 0 in an operand laid out as l (norm_args_impl.h). */
static inline int64_t att_at(const ct__attention_args *a, const ct__att_layout *l, int64_t b) {
    return b / a->heads * l->outer + b % a->heads * l->head;
}

/* The mask's term at element `at`: a float mask's value, or 0 / -inf for a bool one. */
static inline double att_mask_term(const ct__attention_args *a, int64_t at) {
    if (a->mask_dtype == CT_BOOL) return ((const uint8_t *)a->mask)[at] ? 0.0 : -INFINITY;
    return ct__ldf(a->mask, at, a->mask_dtype);
}

#define CT_ATT_T float
#define CT_ATT_DTYPE CT_F32
#define CT_ATT_BF16 CT_CPU_SIMD_KERNELS
#define CT_ATT_FN(name) att_##name##_f32
#define CT_ATT_EXP(x) ct__expf(x)
#include "backend/cpu/cpu_attention_typed_impl.h"
#undef CT_ATT_T
#undef CT_ATT_DTYPE
#undef CT_ATT_BF16
#undef CT_ATT_FN
#undef CT_ATT_EXP
#define CT_ATT_T double
#define CT_ATT_DTYPE CT_F64
#define CT_ATT_BF16 0
#define CT_ATT_FN(name) att_##name##_f64
#define CT_ATT_EXP(x) exp(x)
#include "backend/cpu/cpu_attention_typed_impl.h"
#undef CT_ATT_T
#undef CT_ATT_DTYPE
#undef CT_ATT_BF16
#undef CT_ATT_FN
#undef CT_ATT_EXP

/* Threads for `tasks` tasks of the whole problem's products (2 (d + dv) flops per score). */
static int att_threads(const ct__attention_args *a, int64_t tasks) {
    int threads = ct__cpu_threads_for_gemm(a->batch * a->tq, a->tk, a->d + a->dv);
    return tasks < threads ? (int)tasks : threads;
}

static int att_thread(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static void *att_alloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size);
    if (!p) ct__error(CT_ERR_OUT_OF_MEMORY, "attention: out of host memory for the scratch");
    return p;
}

static atomic_int bf16_mode = -1;

void ct__cpu_attention_set_bf16(int mode) { atomic_store(&bf16_mode, mode); }

/* Words of bf16 scratch per thread: 0 unless the products run on the bf16 units (bf16 data
 * on a CPU whose bf16 units are faster than its f32 ones, ct_cpu_has_fast_bf16, unless
 * ct__cpu_attention_set_bf16 says otherwise). */
static size_t att_bf16_words(const ct__attention_args *a) {
#if CT_CPU_SIMD_KERNELS
    int mode = atomic_load(&bf16_mode);
    if (a->dtype == CT_BF16 && ct__cpu_has_avx512bf16() &&
        (mode > 0 || (mode < 0 && ct_cpu_has_fast_bf16()))) {
        int64_t most = CT_ATT_BR > CT_ATT_BC ? CT_ATT_BR : CT_ATT_BC;
        most = a->d > most ? a->d : most;
        return ct__cpu_attention_bf16_scratch(a->dv > most ? a->dv : most);
    }
#else
    (void)a;
#endif
    return 0;
}

/* Thread t's bf16 scratch, or NULL when there is none. */
static uint32_t *att_bf16_at(uint32_t *bf16, size_t words, int t) {
    return words ? bf16 + (size_t)t * words : NULL;
}

ct_status ct__cpu_attention(int device, const ct__attention_args *args) {
    (void)device;
    const bool f64 = args->dtype == CT_F64;
    const size_t elem = f64 ? sizeof(double) : sizeof(float);
    const size_t each = f64 ? att_forward_scratch_f64(args) : att_forward_scratch_f32(args);
    const int64_t blocks = (args->tq + CT_ATT_BR - 1) / CT_ATT_BR, tasks = args->batch * blocks;
    const int threads = att_threads(args, tasks);
    const size_t words = att_bf16_words(args);
    char *scratch = att_alloc((size_t)threads * each, elem);
    uint32_t *bf16 = scratch ? att_alloc((size_t)threads * words, sizeof *bf16) : NULL;
    if (!bf16) {
        free(scratch);
        return CT_ERR_OUT_OF_MEMORY;
    }
    ct__cpu_blas_single_threaded(); /* the tasks' GEMMs run on their own thread */
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
    for (int64_t t = 0; t < tasks; t++) {
        const int64_t b = t / blocks, i0 = t % blocks * CT_ATT_BR;
        const int64_t br = args->tq - i0 < CT_ATT_BR ? args->tq - i0 : CT_ATT_BR;
        const int thread = att_thread();
        void *w = scratch + (size_t)thread * each * elem;
        if (f64)
            att_forward_rows_f64(args, b, i0, br, w, NULL);
        else
            att_forward_rows_f32(args, b, i0, br, w, att_bf16_at(bf16, words, thread));
    }
    free(bf16);
    free(scratch);
    return CT_OK;
}

ct_status ct__cpu_attention_backward(int device, const ct__attention_args *args) {
    (void)device;
    const bool f64 = args->dtype == CT_F64;
    const size_t elem = f64 ? sizeof(double) : sizeof(float);
    const size_t each = f64 ? att_backward_scratch_f64(args) : att_backward_scratch_f32(args);
    const int64_t kblocks = (args->tk + CT_ATT_BC - 1) / CT_ATT_BC;
    int64_t groups = (CT_ATT_BACKWARD_TASKS + args->batch - 1) / args->batch;
    groups = groups < kblocks ? groups : kblocks;
    groups = groups < 1 ? 1 : groups;
    const int64_t tasks = args->batch * groups, dq_each = args->tq * args->d;
    const int threads = att_threads(args, tasks);
    const size_t words = att_bf16_words(args);
    char *scratch = att_alloc((size_t)threads * each, elem);
    char *partial = scratch ? att_alloc((size_t)(tasks * dq_each), elem) : NULL;
    uint32_t *bf16 = partial ? att_alloc((size_t)threads * words, sizeof *bf16) : NULL;
    if (!bf16) {
        free(partial);
        free(scratch);
        return CT_ERR_OUT_OF_MEMORY;
    }
    ct__cpu_blas_single_threaded();
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t t = 0; t < tasks; t++) {
            const int64_t b = t / groups, g = t % groups;
            const int64_t kb0 = kblocks * g / groups, kb1 = kblocks * (g + 1) / groups;
            const int thread = att_thread();
            void *w = scratch + (size_t)thread * each * elem;
            char *dq = partial + (size_t)(t * dq_each) * elem;
            if (f64)
                att_backward_keys_f64(args, b, kb0, kb1, (double *)dq, w, NULL);
            else
                att_backward_keys_f32(args, b, kb0, kb1, (float *)dq, w,
                                      att_bf16_at(bf16, words, thread));
        }
        /* grad_q: each problem's partials added in group order. */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t e = 0; e < args->batch * dq_each; e++) {
            const int64_t b = e / dq_each, at = e % dq_each;
            double sum = 0.0;
            for (int64_t g = 0; g < groups; g++) {
                const size_t p = (size_t)((b * groups + g) * dq_each + at);
                sum += f64 ? ((const double *)partial)[p] : ((const float *)partial)[p];
            }
            const int64_t to =
                att_at(args, &args->q_at, b) + at / args->d * args->q_at.row + at % args->d;
            ct__stf(args->grad_q, to, args->dtype, sum);
        }
    }
    free(bf16);
    free(partial);
    free(scratch);
    return CT_OK;
}

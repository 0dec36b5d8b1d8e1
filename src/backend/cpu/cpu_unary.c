/* CPU unary kernels: out = op(in) for the ops of op_list.h and clamp.
 *
 * Each op is one plain loop per compute domain (float, double, int32, int64; cpu_ew_impl.h)
 * over the formula of backend/ew_formula_impl.h, generated from the table rows: the switch
 * over the op sits outside the loop, so contiguous float32 runs as a single vectorized loop
 * and every other dtype or layout goes through the block loads and stores. Ops that
 * op_list.h marks FLOAT compute in float (or double for float64); SAME ops compute in the
 * input's domain; INT ops in the integer domains; the BOOL predicates test inputs in double
 * (exact for what they test) and write bool. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_ew_impl.h"
#include "backend/ew_cases_impl.h"
#include "backend/cpu/cpu_math_impl.h"
#include "backend/cpu/cpu_simd_impl.h"
#include "core/error_impl.h"

enum { KIND_FLOAT, KIND_SAME, KIND_BOOL, KIND_INT };

static const unsigned char op_kind[] = {
#define CT_UNARY_KIND_(name, NAME, kind, grad, autocast) [CT_UOP_##NAME] = KIND_##kind,
    CT_UNARY_OPS(CT_UNARY_KIND_)
#undef CT_UNARY_KIND_
        [CT_UOP_CLAMP] = KIND_SAME,
};
_Static_assert(sizeof op_kind == CT_UOP_COUNT, "one kind per unary op");

/* One loop over the block: o[i] = expr (x[i]). */
#define MAP(expr)                                                                                  \
    for (int64_t i = 0; i < n; i++) o[i] = (expr);                                                 \
    break

/* What the case lists of ew_cases_impl.h expand to here. The case of a row in the loop of domain S:
 * its formula where the kind computes in S, else nothing (the kernel never runs the op there). */
/* clang-format off */
#define CASE_FORMULA_(name, NAME, S)                                                               \
    case CT_UOP_##NAME: MAP((ct__ew_##name##_##S)(x[i]));
#define CASE_NONE_(name, NAME, S)                                                                  \
    case CT_UOP_##NAME: break;

/* exp on float32 is the op that must run at memory speed, so it gets its own loop with a
 * fused multiply-add version (a quarter fewer instructions), picked per processor. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CT_EXP_FMA_LOOP 1
__attribute__((target("avx2,fma"))) static void exp_loop_fma(float *restrict o,
                                                             const float *restrict x, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = ct__expf_fma(x[i]);
}
#endif

static bool exp_fast(ct__unary_op op, float *restrict o, const float *restrict x, int64_t n) {
#if CT_CPU_SIMD_KERNELS
    if (op == CT_UOP_EXP && ct__cpu_has_avx512()) {
        ct__cpu_exp_f32_avx512(o, x, n);
        return true;
    }
#endif
#if CT_EXP_FMA_LOOP
    if (op == CT_UOP_EXP && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        exp_loop_fma(o, x, n);
        return true;
    }
#endif
    (void)op, (void)o, (void)x, (void)n;
    return false;
}

/* The loop of domain S over element type T (float and double: exp has its FMA loop on
 * float32; integers: clamp keeps the integers inside [lo, hi], bounds ceil(lo) and floor(hi),
 * which the op layer has saturated to the dtype's range). */
#define DEFINE_UNARY_LOOP(fname, T, S, CASES, PROLOGUE, LO, HI)                                    \
    CT_CPU_CLONES static void fname(ct__unary_op op, void *vo, const void *vx, int64_t n,           \
                                    double p0, double p1) {                                        \
        T *restrict o = vo;                                                                        \
        const T *restrict x = vx;                                                                  \
        PROLOGUE;                                                                                  \
        const T lo = (LO), hi = (HI);                                                              \
        switch (op) {                                                                              \
            CT_UNARY_OPS(CASES)                                                                    \
        case CT_UOP_CLAMP: MAP(ct__ew_clamp_##S(x[i], lo, hi));                                     \
        case CT_UOP_COUNT: break;                                                                  \
        }                                                                                          \
    }
DEFINE_UNARY_LOOP(unary_f32, float, f32, CT_EW_U_CASE_F32, if (exp_fast(op, o, x, n)) return,
                  (float)p0, (float)p1)
DEFINE_UNARY_LOOP(unary_f64, double, f64, CT_EW_U_CASE_F64, (void)0, p0, p1)
DEFINE_UNARY_LOOP(unary_i32, int32_t, i32, CT_EW_U_CASE_I32, (void)0,
                  (int32_t)ct__f64_to_i64(ceil(p0)), (int32_t)ct__f64_to_i64(floor(p1)))
DEFINE_UNARY_LOOP(unary_i64, int64_t, i64, CT_EW_U_CASE_I64, (void)0, ct__f64_to_i64(ceil(p0)),
                  ct__f64_to_i64(floor(p1)))
DEFINE_UNARY_LOOP(unary_u64, uint64_t, u64, CT_EW_U_CASE_U64, (void)0, ct__f64_to_u64(ceil(p0)),
                  ct__f64_to_u64(floor(p1)))
/* clang-format on */

/* The predicates: double in, bool (0/1 bytes) out. */
static void unary_test(ct__unary_op op, void *vo, const void *vx, int64_t n, double p0, double p1) {
    (void)p0, (void)p1;
    uint8_t *restrict o = vo;
    const double *restrict x = vx;
    switch (op) {
        CT_UNARY_OPS(CT_EW_U_CASE_TEST)
    case CT_UOP_CLAMP:
    case CT_UOP_COUNT: break;
    }
}

typedef void (*unary_fn)(ct__unary_op op, void *o, const void *x, int64_t n, double p0, double p1);

/* A compute domain: the dtypes its loop reads and writes directly, and its conversions. */
typedef struct unary_domain {
    ct_dtype in_native, out_native;
    ct__cpu_load_fn load;
    ct__cpu_store_fn store;
    unary_fn run;
} unary_domain;

static const unary_domain domain_f32 = {CT_F32, CT_F32, ct__cpu_load_f32, ct__cpu_store_f32,
                                        unary_f32};
static const unary_domain domain_f64 = {CT_F64, CT_F64, ct__cpu_load_f64, ct__cpu_store_f64,
                                        unary_f64};
static const unary_domain domain_i64 = {CT_I64, CT_I64, ct__cpu_load_i64, ct__cpu_store_i64,
                                        unary_i64};
static const unary_domain domain_u64 = {CT_U64, CT_U64, ct__cpu_load_u64, ct__cpu_store_u64,
                                        unary_u64};
static const unary_domain domain_i32 = {CT_I32, CT_I32, ct__cpu_load_i32, ct__cpu_store_i32,
                                        unary_i32};
static const unary_domain domain_test = {CT_F64, CT_BOOL, ct__cpu_load_f64, ct__cpu_store_bool,
                                         unary_test};

typedef struct unary_ctx {
    ct__unary_op op;
    ct_dtype out_dtype, in_dtype;
    const unary_domain *domain;
    double p0, p1;
    bool stream;
} unary_ctx;

static void unary_row(char *const *ptrs, const int64_t *strides, int64_t n, void *vctx) {
    const unary_ctx *c = vctx;
    const unary_domain *d = c->domain;
    int64_t in_size = (int64_t)ct__dtype_size(d->in_native);
    int64_t out_size = (int64_t)ct__dtype_size(d->out_native);
    bool direct_in = c->in_dtype == d->in_native && strides[1] == in_size;
    bool direct_out = c->out_dtype == d->out_native && strides[0] == out_size;
    if (direct_in && direct_out && !c->stream) {
        d->run(c->op, ptrs[0], ptrs[1], n, c->p0, c->p1);
        return;
    }
    _Alignas(64) char xbuf[CT_CPU_BLOCK * 8], obuf[CT_CPU_BLOCK * 8];
    for (int64_t i = 0; i < n; i += CT_CPU_BLOCK) {
        int64_t m = n - i < CT_CPU_BLOCK ? n - i : CT_CPU_BLOCK;
        const char *in = ptrs[1] + i * strides[1];
        char *out = ptrs[0] + i * strides[0];
        if (!direct_in) {
            d->load(xbuf, in, strides[1], c->in_dtype, m);
            in = xbuf;
        }
        if (direct_out && !c->stream) {
            d->run(c->op, out, in, m, c->p0, c->p1);
            continue;
        }
        d->run(c->op, obuf, in, m, c->p0, c->p1);
        if (direct_out)
            ct__cpu_stream_copy(out, obuf, (size_t)(m * out_size));
        else
            d->store(out, strides[0], c->out_dtype, obuf, m);
    }
    if (c->stream) ct__cpu_stream_fence();
}

/* The domain an op computes in: FLOAT ops in float (double for float64 results), SAME and
 * INT ops in the compute dtype's domain (int32 for the integers of at most 32 bits but
 * uint32, and bool; int64 for int64 and uint32; uint64), predicates in their own. */
static const unary_domain *pick_domain(ct__unary_op op, ct_dtype compute) {
    if (op_kind[op] == KIND_BOOL) return &domain_test;
    if (compute == CT_F64) return &domain_f64;
    if (op_kind[op] == KIND_FLOAT || ct__is_float(compute)) return &domain_f32;
    if (compute == CT_U64) return &domain_u64;
    return compute == CT_I64 || compute == CT_U32 ? &domain_i64 : &domain_i32;
}

ct_status ct__cpu_unary(int device, ct__unary_op op, const ct__ew_args *args, double p0,
                        double p1) {
    (void)device;
    if ((unsigned)op >= CT_UOP_COUNT)
        return ct__error(CT_ERR_INVALID_ARG, "cpu unary kernel: unknown op %d", (int)op);
    if (ct__is_complex(args->dtype[1])) {
        ct__cpu_complex_unary(op, args);
        return CT_OK;
    }
    unary_ctx ctx = {op,
                     args->dtype[0],
                     args->dtype[1],
                     pick_domain(op, args->compute_dtype),
                     p0,
                     p1,
                     ct__cpu_should_stream(args)};
    ct__cpu_parallel_rows(args, unary_row, &ctx);
    return CT_OK;
}

/* CPU unary kernels: out = op(in) for the ops of op_list.h and clamp.
 *
 * Each op is one plain loop per compute domain (float, double, int64; cpu_ew_impl.h), so
 * contiguous float32 runs as a single vectorized loop and every other dtype or layout goes
 * through the block loads and stores. Ops that op_list.h marks FLOAT compute in float (or
 * double for float64); SAME ops compute in the input's domain; logical_not tests inputs in
 * double (exact for zero-ness of every dtype) and writes bool. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_ew_impl.h"
#include "backend/cpu/cpu_math_impl.h"
#include "backend/cpu/cpu_simd_impl.h"
#include "core/error_impl.h"

enum { KIND_FLOAT, KIND_SAME, KIND_BOOL };

static const unsigned char op_kind[CT_UOP_COUNT] = {
#define CT_UNARY_KIND_(name, NAME, kind) [CT_UOP_##NAME] = KIND_##kind,
    CT_UNARY_OPS(CT_UNARY_KIND_)
#undef CT_UNARY_KIND_
        [CT_UOP_CLAMP] = KIND_SAME,
};

/* One loop over the block: o[i] = expr (x[i]). */
#define MAP(expr)                                                                                  \
    for (int64_t i = 0; i < n; i++) o[i] = (expr);                                                 \
    break

/* The float and double loops differ only in the libm suffix (SUF) and in exp and sigmoid,
 * which float takes from cpu_math_impl.h so that their loops vectorize (EXP_LOOP runs a
 * whole block). clamp is min(max(x, lo), hi) written with comparisons, which keep NaN; relu
 * likewise. gelu uses erfc(-x/sqrt 2) = 1 + erf(x/sqrt 2), which does not cancel for
 * negative x. */
#define DEFINE_FLOAT_UNARY(name, T, SUF, EXP_LOOP, SIGMOID)                                        \
    CT_CPU_CLONES static void name(ct_unary_op op, void *vo, const void *vx, int64_t n, double p0, \
                                   double p1) {                                                    \
        T *restrict o = vo;                                                                        \
        const T *restrict x = vx;                                                                  \
        const T lo = (T)p0, hi = (T)p1, zero = 0, one = 1;                                         \
        switch (op) {                                                                              \
        case CT_UOP_NEG: MAP(-x[i]);                                                               \
        case CT_UOP_ABS: MAP(fabs##SUF(x[i]));                                                     \
        case CT_UOP_SIGN: MAP(x[i] > zero ? one : (x[i] < zero ? -one : x[i]));                    \
        case CT_UOP_SQRT: MAP(sqrt##SUF(x[i]));                                                    \
        case CT_UOP_RSQRT: MAP(one / sqrt##SUF(x[i]));                                             \
        case CT_UOP_EXP: EXP_LOOP(o, x, n); break;                                                 \
        case CT_UOP_EXPM1: MAP(expm1##SUF(x[i]));                                                  \
        case CT_UOP_LOG: MAP(log##SUF(x[i]));                                                      \
        case CT_UOP_LOG1P: MAP(log1p##SUF(x[i]));                                                  \
        case CT_UOP_SIN: MAP(sin##SUF(x[i]));                                                      \
        case CT_UOP_COS: MAP(cos##SUF(x[i]));                                                      \
        case CT_UOP_TANH: MAP(tanh##SUF(x[i]));                                                    \
        case CT_UOP_SIGMOID: MAP(SIGMOID(x[i]));                                                   \
        case CT_UOP_RELU: MAP(x[i] < zero ? zero : x[i]);                                          \
        case CT_UOP_GELU: MAP((T)0.5 * x[i] * erfc##SUF(-x[i] * (T)0.70710678118654752440));       \
        case CT_UOP_ERF: MAP(erf##SUF(x[i]));                                                      \
        case CT_UOP_FLOOR: MAP(floor##SUF(x[i]));                                                  \
        case CT_UOP_CEIL: MAP(ceil##SUF(x[i]));                                                    \
        case CT_UOP_ROUND: MAP(nearbyint##SUF(x[i])); /* half to even, as numpy.round */           \
        case CT_UOP_CLAMP: {                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T t = x[i] < lo ? lo : x[i];                                                       \
                o[i] = t > hi ? hi : t;                                                            \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
        case CT_UOP_LOGICAL_NOT: /* bool ops have their own loop */                                \
        case CT_UOP_COUNT: break;                                                                  \
        }                                                                                          \
    }

static inline double sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }

static void exp_loop_f64(double *restrict o, const double *restrict x, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = exp(x[i]);
}

/* exp on float32 is the op that must run at memory speed, so it gets its own loop with a
 * fused multiply-add version (a quarter fewer instructions), picked per processor. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CT_EXP_FMA_LOOP 1
__attribute__((target("avx2,fma"))) static void exp_loop_fma(float *restrict o,
                                                             const float *restrict x, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = ct__expf_fma(x[i]);
}
#endif

static void exp_loop(float *restrict o, const float *restrict x, int64_t n) {
#if CT_CPU_AVX512_KERNELS
    if (ct__cpu_has_avx512()) {
        ct__cpu_exp_f32_avx512(o, x, n);
        return;
    }
#endif
#if CT_EXP_FMA_LOOP
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        exp_loop_fma(o, x, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) o[i] = ct__expf(x[i]);
}

DEFINE_FLOAT_UNARY(unary_f32, float, f, exp_loop, ct__sigmoidf)
DEFINE_FLOAT_UNARY(unary_f64, double, , exp_loop_f64, sigmoid_f64)

/* Integers wrap (negating the most negative value gives itself, as in NumPy and PyTorch),
 * so negation goes through the unsigned type UT. clamp keeps the integers inside [lo, hi]:
 * bounds ceil(lo) and floor(hi) (the op layer has saturated them to the dtype's range). */
#define DEFINE_INT_UNARY(name, T, UT)                                                              \
    CT_CPU_CLONES static void name(ct_unary_op op, void *vo, const void *vx, int64_t n, double p0, \
                                   double p1) {                                                    \
        T *restrict o = vo;                                                                        \
        const T *restrict x = vx;                                                                  \
        switch (op) {                                                                              \
        case CT_UOP_NEG: MAP((T)(0u - (UT)x[i]));                                                  \
        case CT_UOP_ABS: MAP(x[i] < 0 ? (T)(0u - (UT)x[i]) : x[i]);                                \
        case CT_UOP_SIGN: MAP((T)((x[i] > 0) - (x[i] < 0)));                                       \
        case CT_UOP_RELU: MAP(x[i] < 0 ? 0 : x[i]);                                                \
        case CT_UOP_CLAMP: {                                                                       \
            T lo = (T)ct__f64_to_i64(ceil(p0)), hi = (T)ct__f64_to_i64(floor(p1));                 \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T t = x[i] < lo ? lo : x[i];                                                       \
                o[i] = t > hi ? hi : t;                                                            \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
        default:                                                                                   \
            /* floor, ceil and round of an integer are the integer; the FLOAT ops never            \
             * compute in this domain (the kernel moves them to float). */                         \
            memcpy(o, x, (size_t)n * sizeof *o);                                                   \
            break;                                                                                 \
        }                                                                                          \
    }
DEFINE_INT_UNARY(unary_i32, int32_t, uint32_t)
DEFINE_INT_UNARY(unary_i64, int64_t, uint64_t)

static void logical_not_f64(ct_unary_op op, void *vo, const void *vx, int64_t n, double p0,
                            double p1) {
    (void)op, (void)p0, (void)p1;
    uint8_t *restrict o = vo;
    const double *restrict x = vx;
    for (int64_t i = 0; i < n; i++) o[i] = x[i] == 0.0;
}

typedef void (*unary_fn)(ct_unary_op op, void *o, const void *x, int64_t n, double p0, double p1);

/* A compute domain: the dtypes its loop reads and writes directly, and its conversions. */
typedef struct unary_domain {
    ct_dtype in_native, out_native;
    ct_cpu_load_fn load;
    ct_cpu_store_fn store;
    unary_fn run;
} unary_domain;

static const unary_domain domain_f32 = {CT_F32, CT_F32, ct__cpu_load_f32, ct__cpu_store_f32,
                                        unary_f32};
static const unary_domain domain_f64 = {CT_F64, CT_F64, ct__cpu_load_f64, ct__cpu_store_f64,
                                        unary_f64};
static const unary_domain domain_i64 = {CT_I64, CT_I64, ct__cpu_load_i64, ct__cpu_store_i64,
                                        unary_i64};
static const unary_domain domain_i32 = {CT_I32, CT_I32, ct__cpu_load_i32, ct__cpu_store_i32,
                                        unary_i32};
static const unary_domain domain_not = {CT_F64, CT_BOOL, ct__cpu_load_f64, ct__cpu_store_bool,
                                        logical_not_f64};

typedef struct unary_ctx {
    ct_unary_op op;
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

/* The domain an op computes in: FLOAT ops in float (double for float64 results), SAME ops
 * in the compute dtype's domain (int32 for int32, uint8 and bool), logical_not in its own. */
static const unary_domain *pick_domain(ct_unary_op op, ct_dtype compute) {
    if (op_kind[op] == KIND_BOOL) return &domain_not;
    if (compute == CT_F64) return &domain_f64;
    if (op_kind[op] == KIND_FLOAT || ct__is_float(compute)) return &domain_f32;
    return compute == CT_I64 ? &domain_i64 : &domain_i32;
}

ct_status ct__cpu_unary(int device, ct_unary_op op, const ct_ew_args *args, double p0, double p1) {
    (void)device;
    if ((unsigned)op >= CT_UOP_COUNT)
        return ct__error(CT_ERR_INVALID_ARG, "cpu unary kernel: unknown op %d", (int)op);
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

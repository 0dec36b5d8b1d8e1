/* CPU binary kernels: out = a op b for the ops of op_list.h, with broadcast (stride 0)
 * operands of any dtypes.
 *
 * Arithmetic computes in the domain of args->compute_dtype (float for f32, f16 and bf16;
 * double for f64; int64 for integers and bool, wrapping on store), true division of
 * integers in float. Comparisons compute in the same domains and write bool; logical ops
 * test each operand for zero in double (exact for every dtype). Each op is one plain loop
 * per domain (cpu_ew_impl.h), so contiguous float32 runs as a single vectorized loop.
 *
 * NumPy semantics: maximum and minimum propagate NaN; remainder has the divisor's sign
 * (Python's %); comparisons with NaN are false except ne. Integer remainder by zero and
 * integer pow with a negative exponent fail with CT_ERR_INVALID_ARG. */
#include <math.h>
#include <stdatomic.h>

#include "backend/cpu/cpu_ew_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"

/* What an integer loop can fail on. */
enum { EW_OK = 0, EW_REMAINDER_BY_ZERO, EW_NEGATIVE_POWER };

/* One loop over the block: o[i] = expr (a[i], b[i]). */
#define MAP(expr)                                                                                  \
    for (int64_t i = 0; i < n; i++) o[i] = (expr);                                                 \
    break

/* Python's float %: fmod, moved into the divisor's sign; a zero takes the divisor's sign. */
#define DEFINE_PY_FMOD(name, T, SUF)                                                               \
    static inline T name(T a, T b) {                                                               \
        T r = fmod##SUF(a, b);                                                                     \
        if (r == 0) return copysign##SUF(0, b);                                                    \
        return (r < 0) != (b < 0) ? r + b : r;                                                     \
    }
DEFINE_PY_FMOD(py_fmod_f32, float, f)
DEFINE_PY_FMOD(py_fmod_f64, double, )

/* maximum and minimum select a when it wins or is NaN, so NaN in either operand wins; the
 * bitwise | keeps the select branch-free. */
#define DEFINE_FLOAT_ARITH(name, T, SUF, FMOD)                                                     \
    CT_CPU_CLONES static int name(ct_binary_op op, void *vo, const void *va, const void *vb,       \
                                  int64_t n) {                                                     \
        T *restrict o = vo;                                                                        \
        const T *restrict a = va, *restrict b = vb;                                                \
        switch (op) {                                                                              \
        case CT_BOP_ADD: MAP(a[i] + b[i]);                                                         \
        case CT_BOP_SUB: MAP(a[i] - b[i]);                                                         \
        case CT_BOP_MUL: MAP(a[i] * b[i]);                                                         \
        case CT_BOP_DIV: MAP(a[i] / b[i]);                                                         \
        case CT_BOP_POW: MAP(pow##SUF(a[i], b[i]));                                                \
        case CT_BOP_MAXIMUM: MAP(((a[i] > b[i]) | (a[i] != a[i])) ? a[i] : b[i]);                  \
        case CT_BOP_MINIMUM: MAP(((a[i] < b[i]) | (a[i] != a[i])) ? a[i] : b[i]);                  \
        case CT_BOP_REMAINDER: MAP(FMOD(a[i], b[i]));                                              \
        case CT_BOP_RELU_GRAD: MAP(b[i] > 0 ? a[i] : 0);                                           \
        default: break; /* comparisons have their own loops */                                     \
        }                                                                                          \
        return EW_OK;                                                                              \
    }
DEFINE_FLOAT_ARITH(arith_f32, float, f, py_fmod_f32)
DEFINE_FLOAT_ARITH(arith_f64, double, , py_fmod_f64)

/* base^exponent by squaring, wrapping modulo 2^64 (exponent >= 0). */
static inline int64_t ipow(int64_t base, int64_t exponent) {
    uint64_t result = 1, square = (uint64_t)base;
    for (uint64_t e = (uint64_t)exponent; e; e >>= 1) {
        if (e & 1u) result *= square;
        square *= square;
    }
    return (int64_t)result;
}

/* Python's integer %: the divisor's sign. b == -1 is special-cased because INT64_MIN % -1
 * overflows in C. */
static inline int64_t py_imod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

/* Integer arithmetic wraps, so it runs on the unsigned type UT (signed overflow is undefined
 * in C); pow and remainder go through int64, which holds every int32 result exactly before
 * the wrap to T. */
#define DEFINE_INT_ARITH(name, T, UT)                                                              \
    CT_CPU_CLONES static int name(ct_binary_op op, void *vo, const void *va, const void *vb,       \
                                  int64_t n) {                                                     \
        T *restrict o = vo;                                                                        \
        const T *restrict a = va, *restrict b = vb;                                                \
        switch (op) {                                                                              \
        case CT_BOP_ADD: MAP((T)((UT)a[i] + (UT)b[i]));                                            \
        case CT_BOP_SUB: MAP((T)((UT)a[i] - (UT)b[i]));                                            \
        case CT_BOP_MUL: MAP((T)((UT)a[i] * (UT)b[i]));                                            \
        case CT_BOP_MAXIMUM: MAP(a[i] > b[i] ? a[i] : b[i]);                                       \
        case CT_BOP_MINIMUM: MAP(a[i] < b[i] ? a[i] : b[i]);                                       \
        case CT_BOP_RELU_GRAD: MAP(b[i] > 0 ? a[i] : 0);                                           \
        case CT_BOP_POW:                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                if (b[i] < 0) return EW_NEGATIVE_POWER;                                            \
                o[i] = (T)ipow(a[i], b[i]);                                                        \
            }                                                                                      \
            break;                                                                                 \
        case CT_BOP_REMAINDER:                                                                     \
            for (int64_t i = 0; i < n; i++) {                                                      \
                if (b[i] == 0) return EW_REMAINDER_BY_ZERO;                                        \
                o[i] = (T)py_imod(a[i], b[i]);                                                     \
            }                                                                                      \
            break;                                                                                 \
        default: break; /* division computes in float; comparisons have their own loops */         \
        }                                                                                          \
        return EW_OK;                                                                              \
    }
DEFINE_INT_ARITH(arith_i32, int32_t, uint32_t)
DEFINE_INT_ARITH(arith_i64, int64_t, uint64_t)

/* Comparisons and logical ops write 0/1 bytes; the | and & keep them branch-free. */
#define DEFINE_COMPARE(name, T)                                                                    \
    CT_CPU_CLONES static int name(ct_binary_op op, void *vo, const void *va, const void *vb,       \
                                  int64_t n) {                                                     \
        uint8_t *restrict o = vo;                                                                  \
        const T *restrict a = va, *restrict b = vb;                                                \
        switch (op) {                                                                              \
        case CT_BOP_EQ: MAP(a[i] == b[i]);                                                         \
        case CT_BOP_NE: MAP(a[i] != b[i]);                                                         \
        case CT_BOP_LT: MAP(a[i] < b[i]);                                                          \
        case CT_BOP_LE: MAP(a[i] <= b[i]);                                                         \
        case CT_BOP_GT: MAP(a[i] > b[i]);                                                          \
        case CT_BOP_GE: MAP(a[i] >= b[i]);                                                         \
        case CT_BOP_LOGICAL_AND: MAP((a[i] != 0) & (b[i] != 0));                                   \
        case CT_BOP_LOGICAL_OR: MAP((a[i] != 0) | (b[i] != 0));                                    \
        default: break; /* arithmetic has its own loops */                                         \
        }                                                                                          \
        return EW_OK;                                                                              \
    }
DEFINE_COMPARE(compare_f32, float)
DEFINE_COMPARE(compare_f64, double)
DEFINE_COMPARE(compare_i32, int32_t)
DEFINE_COMPARE(compare_i64, int64_t)

typedef int (*binary_fn)(ct_binary_op op, void *o, const void *a, const void *b, int64_t n);

/* A compute domain: the dtypes its loop reads and writes directly, and its conversions. */
typedef struct binary_domain {
    ct_dtype in_native, out_native;
    ct_cpu_load_fn load;
    ct_cpu_store_fn store;
    binary_fn run;
} binary_domain;

/* Indexed by ct_compute_domain. */
static const binary_domain arith_domains[4] = {
    [CT_DOMAIN_F32] = {CT_F32, CT_F32, ct__cpu_load_f32, ct__cpu_store_f32, arith_f32},
    [CT_DOMAIN_F64] = {CT_F64, CT_F64, ct__cpu_load_f64, ct__cpu_store_f64, arith_f64},
    [CT_DOMAIN_I64] = {CT_I64, CT_I64, ct__cpu_load_i64, ct__cpu_store_i64, arith_i64},
    [CT_DOMAIN_I32] = {CT_I32, CT_I32, ct__cpu_load_i32, ct__cpu_store_i32, arith_i32},
};
static const binary_domain compare_domains[4] = {
    [CT_DOMAIN_F32] = {CT_F32, CT_BOOL, ct__cpu_load_f32, ct__cpu_store_bool, compare_f32},
    [CT_DOMAIN_F64] = {CT_F64, CT_BOOL, ct__cpu_load_f64, ct__cpu_store_bool, compare_f64},
    [CT_DOMAIN_I64] = {CT_I64, CT_BOOL, ct__cpu_load_i64, ct__cpu_store_bool, compare_i64},
    [CT_DOMAIN_I32] = {CT_I32, CT_BOOL, ct__cpu_load_i32, ct__cpu_store_bool, compare_i32},
};

typedef struct binary_ctx {
    ct_binary_op op;
    ct_dtype dtype[3];
    const binary_domain *domain;
    bool stream;
    atomic_int error;
} binary_ctx;

/* Load operand k's block (number `block` of the row) into buf unless the loop can read it in
 * place. A broadcast operand (stride 0) is loaded once: its first block serves every
 * block after it. */
static const char *operand_block(const binary_ctx *c, int k, const char *p, int64_t stride,
                                 int64_t m, int64_t block, bool direct, char *buf) {
    if (direct) return p;
    if (stride != 0 || block == 0) c->domain->load(buf, p, stride, c->dtype[k], m);
    return buf;
}

static void binary_row(char *const *ptrs, const int64_t *strides, int64_t n, void *vctx) {
    binary_ctx *c = vctx;
    const binary_domain *d = c->domain;
    int64_t in_size = (int64_t)ct__dtype_size(d->in_native);
    int64_t out_size = (int64_t)ct__dtype_size(d->out_native);
    bool direct_a = c->dtype[1] == d->in_native && strides[1] == in_size;
    bool direct_b = c->dtype[2] == d->in_native && strides[2] == in_size;
    bool direct_out = c->dtype[0] == d->out_native && strides[0] == out_size;
    bool write_out = direct_out && !c->stream; /* the loop writes the output in place */
    int error = EW_OK;
    if (direct_a && direct_b && write_out) {
        error = d->run(c->op, ptrs[0], ptrs[1], ptrs[2], n);
    } else {
        _Alignas(64) char abuf[CT_CPU_BLOCK * 8], bbuf[CT_CPU_BLOCK * 8], obuf[CT_CPU_BLOCK * 8];
        for (int64_t i = 0; i < n && error == EW_OK; i += CT_CPU_BLOCK) {
            int64_t m = n - i < CT_CPU_BLOCK ? n - i : CT_CPU_BLOCK;
            int64_t block = i / CT_CPU_BLOCK;
            const char *a =
                operand_block(c, 1, ptrs[1] + i * strides[1], strides[1], m, block, direct_a, abuf);
            const char *b =
                operand_block(c, 2, ptrs[2] + i * strides[2], strides[2], m, block, direct_b, bbuf);
            char *out = ptrs[0] + i * strides[0];
            error = d->run(c->op, write_out ? out : obuf, a, b, m);
            if (write_out) continue;
            if (direct_out)
                ct__cpu_stream_copy(out, obuf, (size_t)(m * out_size));
            else
                d->store(out, strides[0], c->dtype[0], obuf, m);
        }
        if (c->stream) ct__cpu_stream_fence();
    }
    if (error != EW_OK) atomic_store_explicit(&c->error, error, memory_order_relaxed);
}

enum { KIND_ARITH, KIND_DIV, KIND_COMPARE, KIND_LOGICAL };

static const unsigned char op_kind[CT_BOP_COUNT] = {
#define CT_BINARY_KIND_(name, NAME, kind) [CT_BOP_##NAME] = KIND_##kind,
    CT_BINARY_OPS(CT_BINARY_KIND_)
#undef CT_BINARY_KIND_
        [CT_BOP_RELU_GRAD] = KIND_ARITH,
};

static const char *const op_names[CT_BOP_COUNT] = {
#define CT_BINARY_NAME_(name, NAME, kind) [CT_BOP_##NAME] = "ct_" #name,
    CT_BINARY_OPS(CT_BINARY_NAME_)
#undef CT_BINARY_NAME_
        [CT_BOP_RELU_GRAD] = "ReLU's backward",
};

ct_status ct__cpu_binary(int device, ct_binary_op op, const ct_ew_args *args) {
    (void)device;
    if ((unsigned)op >= CT_BOP_COUNT)
        return ct__error(CT_ERR_INVALID_ARG, "cpu binary kernel: unknown op %d", (int)op);
    int index = ct_binary_domain(args);
    const binary_domain *domain = &arith_domains[index];
    if (op_kind[op] == KIND_LOGICAL)
        domain = &compare_domains[CT_DOMAIN_F64];
    else if (op_kind[op] == KIND_COMPARE)
        domain = &compare_domains[index];
    else if (op_kind[op] == KIND_DIV && index >= CT_DOMAIN_I64)
        domain = &arith_domains[CT_DOMAIN_F32];
    binary_ctx ctx = {op,
                      {args->dtype[0], args->dtype[1], args->dtype[2]},
                      domain,
                      ct__cpu_should_stream(args),
                      0};
    ct__cpu_parallel_rows(args, binary_row, &ctx);
    int error = atomic_load(&ctx.error);
    if (error == EW_REMAINDER_BY_ZERO)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: integer remainder by zero (a divisor element is 0); use a "
                         "floating dtype to get NaN instead",
                         op_names[op]);
    if (error == EW_NEGATIVE_POWER)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: integers to negative integer powers are not allowed (an "
                         "exponent element is negative); use a floating dtype",
                         op_names[op]);
    return CT_OK;
}

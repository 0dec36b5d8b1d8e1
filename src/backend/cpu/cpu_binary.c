/* CPU binary kernels: out = a op b for the ops of op_list.h, with broadcast (stride 0)
 * operands of any dtypes.
 *
 * Arithmetic computes in the domain of args->compute_dtype (float for f32, f16 and bf16;
 * double for f64; int32, int64 or uint64 for integers and bool, wrapping on store), FLOAT-kind ops
 * of integers in float. Comparisons compute in the same domains and write bool; logical ops
 * test each operand for zero in double (exact for every dtype). Each op is one plain loop
 * per domain over its formula (backend/ew_formula_impl.h), generated from the table rows
 * with the switch outside the loop, so contiguous float32 runs as a single vectorized loop.
 *
 * NumPy semantics: maximum and minimum propagate NaN; remainder and floor_divide follow
 * Python's % and //; comparisons with NaN are false except ne. Integer remainder or
 * floor_divide by zero and integer pow with a negative exponent fail with
 * CT_ERR_INVALID_ARG. */
#include <math.h>
#include <stdatomic.h>

#include "backend/cpu/cpu_ew_impl.h"
#include "backend/ew_cases_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"

/* One loop over the block: o[i] = expr (a[i], b[i]). */
#define MAP(expr)                                                                                  \
    for (int64_t i = 0; i < n; i++) o[i] = (expr);                                                 \
    break

/* What the case lists of ew_cases_impl.h expand to here. The case of a row in the loop of domain S:
 * its formula (integer formulas report through err) where the kind computes in S, else nothing (the
 * kernel never runs the op there). */
/* clang-format off */
#define CASE_FLOAT_(name, NAME, S)                                                                 \
    case CT_BOP_##NAME: MAP((ct__ew_##name##_##S)(a[i], b[i]));
#define CASE_INT_(name, NAME, S)                                                                   \
    case CT_BOP_##NAME: MAP((ct__ew_##name##_##S)(a[i], b[i], &err));
#define CASE_NONE_(name, NAME, S)                                                                  \
    case CT_BOP_##NAME: break;

/* The loop of domain S over input type T and output type OT, for the table's rows and the
 * internal ones; it returns a ct__ew_error (the last one an integer formula raised). */
#define DEFINE_BINARY_LOOP(fname, T, OT, CASES)                                                    \
    CT_CPU_CLONES static int fname(ct__binary_op op, void *vo, const void *va, const void *vb,      \
                                   int64_t n) {                                                    \
        OT *restrict o = vo;                                                                       \
        const T *restrict a = va, *restrict b = vb;                                                \
        int err = CT_EW_OK;                                                                        \
        switch (op) {                                                                              \
            CT_BINARY_OPS(CASES)                                                                   \
            CT_INTERNAL_BINARY_OPS(CASES)                                                          \
        case CT_BOP_COUNT: break;                                                                  \
        }                                                                                          \
        return err;                                                                                \
    }
DEFINE_BINARY_LOOP(arith_f32, float, float, CT_EW_B_CASE_F32)
DEFINE_BINARY_LOOP(arith_f64, double, double, CT_EW_B_CASE_F64)
DEFINE_BINARY_LOOP(arith_i32, int32_t, int32_t, CT_EW_B_CASE_I32)
DEFINE_BINARY_LOOP(arith_i64, int64_t, int64_t, CT_EW_B_CASE_I64)
DEFINE_BINARY_LOOP(arith_u64, uint64_t, uint64_t, CT_EW_B_CASE_U64)
DEFINE_BINARY_LOOP(compare_f32, float, uint8_t, CT_EW_B_CMP_F32)
DEFINE_BINARY_LOOP(compare_f64, double, uint8_t, CT_EW_B_CMP_F64)
DEFINE_BINARY_LOOP(compare_i32, int32_t, uint8_t, CT_EW_B_CMP_I32)
DEFINE_BINARY_LOOP(compare_i64, int64_t, uint8_t, CT_EW_B_CMP_I64)
DEFINE_BINARY_LOOP(compare_u64, uint64_t, uint8_t, CT_EW_B_CMP_U64)
/* clang-format on */

typedef int (*binary_fn)(ct__binary_op op, void *o, const void *a, const void *b, int64_t n);

/* A compute domain: the dtypes its loop reads and writes directly, and its conversions. */
typedef struct binary_domain {
    ct_dtype in_native, out_native;
    ct__cpu_load_fn load;
    ct__cpu_store_fn store;
    binary_fn run;
} binary_domain;

/* Indexed by ct__compute_domain. */
static const binary_domain arith_domains[CT_DOMAIN_COUNT] = {
    [CT_DOMAIN_F32] = {CT_F32, CT_F32, ct__cpu_load_f32, ct__cpu_store_f32, arith_f32},
    [CT_DOMAIN_F64] = {CT_F64, CT_F64, ct__cpu_load_f64, ct__cpu_store_f64, arith_f64},
    [CT_DOMAIN_I64] = {CT_I64, CT_I64, ct__cpu_load_i64, ct__cpu_store_i64, arith_i64},
    [CT_DOMAIN_I32] = {CT_I32, CT_I32, ct__cpu_load_i32, ct__cpu_store_i32, arith_i32},
    [CT_DOMAIN_U64] = {CT_U64, CT_U64, ct__cpu_load_u64, ct__cpu_store_u64, arith_u64},
};
static const binary_domain compare_domains[CT_DOMAIN_COUNT] = {
    [CT_DOMAIN_F32] = {CT_F32, CT_BOOL, ct__cpu_load_f32, ct__cpu_store_bool, compare_f32},
    [CT_DOMAIN_F64] = {CT_F64, CT_BOOL, ct__cpu_load_f64, ct__cpu_store_bool, compare_f64},
    [CT_DOMAIN_I64] = {CT_I64, CT_BOOL, ct__cpu_load_i64, ct__cpu_store_bool, compare_i64},
    [CT_DOMAIN_I32] = {CT_I32, CT_BOOL, ct__cpu_load_i32, ct__cpu_store_bool, compare_i32},
    [CT_DOMAIN_U64] = {CT_U64, CT_BOOL, ct__cpu_load_u64, ct__cpu_store_bool, compare_u64},
};

typedef struct binary_ctx {
    ct__binary_op op;
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
    /* A row of one element is read in place whatever its stride (a scalar operand's is 0). */
    bool one = n == 1;
    bool direct_a = c->dtype[1] == d->in_native && (strides[1] == in_size || one);
    bool direct_b = c->dtype[2] == d->in_native && (strides[2] == in_size || one);
    bool direct_out = c->dtype[0] == d->out_native && (strides[0] == out_size || one);
    bool write_out = direct_out && !c->stream; /* the loop writes the output in place */
    int error = CT_EW_OK;
    if (direct_a && direct_b && write_out) {
        error = d->run(c->op, ptrs[0], ptrs[1], ptrs[2], n);
    } else {
        _Alignas(64) char abuf[CT_CPU_BLOCK * 8], bbuf[CT_CPU_BLOCK * 8], obuf[CT_CPU_BLOCK * 8];
        for (int64_t i = 0; i < n && error == CT_EW_OK; i += CT_CPU_BLOCK) {
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
    if (error != CT_EW_OK) atomic_store_explicit(&c->error, error, memory_order_relaxed);
}

enum { KIND_ARITH, KIND_FLOAT, KIND_COMPARE, KIND_LOGICAL, KIND_INT, KIND_SHIFT };

static const unsigned char op_kind[] = {
#define CT_BINARY_KIND_(name, NAME, kind, grad, autocast) [CT_BOP_##NAME] = KIND_##kind,
    CT_BINARY_OPS(CT_BINARY_KIND_) CT_INTERNAL_BINARY_OPS(CT_BINARY_KIND_)
#undef CT_BINARY_KIND_
};
_Static_assert(sizeof op_kind == CT_BOP_COUNT, "one kind per binary op");

ct_status ct__cpu_binary(int device, ct__binary_op op, const ct__ew_args *args,
                         ct__ew_scalar scalar) {
    (void)device;
    if ((unsigned)op >= CT_BOP_COUNT)
        return ct__error(CT_ERR_INVALID_ARG, "cpu binary kernel: unknown op %d", (int)op);
    if ((unsigned)scalar.operand > 2)
        return ct__error(CT_ERR_INVALID_ARG, "cpu binary kernel: no operand %d", scalar.operand);
    /* The scalar operand is read in place, as a broadcast operand: this call's copy of it. */
    char *data[CT_EW_MAX_OPERANDS];
    for (int k = 0; k < args->nops; k++) data[k] = args->data[k];
    if (scalar.operand) data[scalar.operand] = (char *)&scalar.value;
    if (ct__is_complex(args->compute_dtype)) {
        ct__cpu_complex_binary(op, args, data);
        return CT_OK;
    }
    int index = ct__binary_domain(args);
    const binary_domain *domain = &arith_domains[index];
    if (op_kind[op] == KIND_LOGICAL)
        domain = &compare_domains[CT_DOMAIN_F64];
    else if (op_kind[op] == KIND_COMPARE)
        domain = &compare_domains[index];
    else if (op_kind[op] == KIND_FLOAT && index >= CT_DOMAIN_I64)
        domain = &arith_domains[CT_DOMAIN_F32];
    binary_ctx ctx = {op,
                      {args->dtype[0], args->dtype[1], args->dtype[2]},
                      domain,
                      ct__cpu_should_stream(args),
                      0};
    ct__cpu_parallel_rows_at(args, data, binary_row, &ctx);
    int error = atomic_load(&ctx.error);
    if (error != CT_EW_OK)
        return ct__error(CT_ERR_INVALID_ARG, "%s: %s", ct__ew_binary_name(op),
                         ct__ew_error_text((ct__ew_error)error));
    return CT_OK;
}

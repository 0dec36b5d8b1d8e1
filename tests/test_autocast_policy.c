/* Autocast's policy column (op_list.h's tables and src/ops/autocast_ops.h) against PyTorch's
 * lists, written out here from PyTorch's sources; then what each policy does to the dtypes of
 * every row's op inside a bf16 region, and that the ops an autocast op calls are not cast
 * again. */
#include <stdlib.h>

#include "ct_ref.h"
#include "ct_test.h"
#include "ops/autocast_impl.h"

#define LOWER CT__AUTOCAST_LOWER
#define F32 CT__AUTOCAST_F32
#define PROMOTE CT__AUTOCAST_PROMOTE
#define AS_IS CT__AUTOCAST_AS_IS

/* The entries of PyTorch's lists that name an op ctensor has, under ctensor's name: CUDA's
 * (aten/src/ATen/autocast_mode.h: AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32,
 * AT_FORALL_FP32_SET_OPT_DTYPE, AT_FORALL_PROMOTE) and the CPU's (autocast_mode.cpp's
 * AutocastCPU registrations); the two agree on every op ctensor has. */
static const struct {
    const char *pytorch, *ctensor;
    ct__autocast_policy policy;
} pytorch_lists[] = {
    {"matmul", "matmul", LOWER},
    {"linear", "linear", LOWER},
    {"conv2d", "conv2d", LOWER},
    {"scaled_dot_product_attention", "scaled_dot_product_attention", LOWER},
    {"acos", "acos", F32},
    {"asin", "asin", F32},
    {"cosh", "cosh", F32},
    {"exp", "exp", F32},
    {"expm1", "expm1", F32},
    {"log", "log", F32},
    {"log10", "log10", F32},
    {"log2", "log2", F32},
    {"log1p", "log1p", F32},
    {"reciprocal", "reciprocal", F32},
    {"rsqrt", "rsqrt", F32},
    {"sinh", "sinh", F32},
    {"tan", "tan", F32},
    {"pow", "pow", F32},
    {"layer_norm", "layer_norm", F32},
    {"mse_loss", "mse_loss", F32},
    {"cross_entropy_loss", "cross_entropy", F32}, /* the CPU's; CUDA lists its two parts */
    {"prod", "prod", F32},
    {"softmax", "softmax", F32},
    {"log_softmax", "log_softmax", F32},
    {"cumsum", "cumulative_sum", F32},
    {"cumprod", "cumulative_prod", F32},
    {"sum", "sum", F32},
    {"atan2", "atan2", PROMOTE},
    {"tensordot", "tensordot", PROMOTE},
    {"scatter_add", "scatter_add", PROMOTE},
    {"cat", "concat", PROMOTE},
    {"stack", "stack", PROMOTE},
};
#define PYTORCH_COUNT ((int)(sizeof pytorch_lists / sizeof pytorch_lists[0]))

/* ctensor's additions to the f32 list (autocast_ops.h, op_list.h): sums, and batch norm. */
static const char *const ctensor_f32[] = {"mean", "var", "std", "batch_norm"};

static const char *policy_name(ct__autocast_policy p) {
    return p == LOWER ? "LOWER" : p == F32 ? "F32" : p == PROMOTE ? "PROMOTE" : "AS_IS";
}

/* The policy this file expects for ctensor's op `name`. */
static ct__autocast_policy expected(const char *name) {
    for (int i = 0; i < PYTORCH_COUNT; i++)
        if (strcmp(pytorch_lists[i].ctensor, name) == 0) return pytorch_lists[i].policy;
    for (size_t i = 0; i < sizeof ctensor_f32 / sizeof ctensor_f32[0]; i++)
        if (strcmp(ctensor_f32[i], name) == 0) return F32;
    return AS_IS;
}

TEST(test_autocast_policy_is_pytorchs_lists) {
    for (int op = 0; op < CT__AC_COUNT; op++) {
        const char *name = ct__autocast_op_name((ct__autocast_op)op);
        CHECK_NOT_NULL(name);
        ct__autocast_policy got = ct__autocast_op_policy((ct__autocast_op)op);
        if (got != expected(name))
            printf("    %s: the column says %s, PyTorch's lists %s\n", name, policy_name(got),
                   policy_name(expected(name)));
        CHECK(got == expected(name));
    }
    /* Every listed op has its row (an op without one would run as given). */
    for (int i = 0; i < PYTORCH_COUNT; i++) {
        bool found = false;
        for (int op = 0; op < CT__AC_COUNT && !found; op++)
            found =
                strcmp(ct__autocast_op_name((ct__autocast_op)op), pytorch_lists[i].ctensor) == 0;
        if (!found)
            printf("    %s (PyTorch's %s) has no row\n", pytorch_lists[i].ctensor,
                   pytorch_lists[i].pytorch);
        CHECK(found);
    }
    CHECK(ct__autocast_op_name(CT__AC_COUNT) == NULL);
}

static ct_tensor *random_tensor(ct_device device, int64_t n, uint64_t seed, ct_dtype dtype) {
    double v[16];
    ref_random(v, n, seed, 0.25, 0.75); /* inside every op's domain */
    return ref_tensor(v, 1, &n, dtype, device);
}

typedef ct_tensor *(*unary_fn)(const ct_tensor *);
typedef ct_tensor *(*binary_fn)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*reduce_fn)(const ct_tensor *, int, const int *, bool);

/* Whether a row's kind keeps a floating input floating (op_list.h's kinds). */
#define KEEPS_FLOAT_FLOAT true
#define KEEPS_FLOAT_SAME true
#define KEEPS_FLOAT_ARITH true
#define KEEPS_FLOAT_BOOL false
#define KEEPS_FLOAT_INT false
#define KEEPS_FLOAT_COMPARE false
#define KEEPS_FLOAT_LOGICAL false
#define KEEPS_FLOAT_SHIFT false

/* The dtype an op of policy p gives for bf16 inputs in a bf16 region, where it keeps a
 * floating dtype. */
static ct_dtype from_bf16(ct__autocast_policy p) { return p == F32 ? CT_F32 : CT_BF16; }

DEVICE_TEST(test_autocast_policy_sets_each_rows_dtype) {
    ct_scope_begin();
    ct_tensor *h = random_tensor(device, 8, 1, CT_BF16), *f = random_tensor(device, 8, 2, CT_F32);
    CHECK_NOT_NULL(f);
    CHECK_OK(ct_autocast_push(device.type, CT_BF16));
    static const struct {
        const char *name;
        unary_fn fn;
        ct__autocast_policy policy;
        bool keeps_float;
    } unary[] = {
#define U_(name, NAME, kind, grad, autocast)                                                       \
    {#name, ct_##name, CT__AUTOCAST_##autocast, KEEPS_FLOAT_##kind},
        CT_UNARY_OPS(U_)
#undef U_
    };
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++) {
        if (!unary[i].keeps_float) continue;
        ct_tensor *y = unary[i].fn(h);
        CHECK_NOT_NULL(y);
        if (ct_dtype_of(y) != from_bf16(unary[i].policy))
            printf("    ct_%s: %s\n", unary[i].name, ct_dtype_name(ct_dtype_of(y)));
        CHECK(ct_dtype_of(y) == from_bf16(unary[i].policy));
    }
    static const struct {
        const char *name;
        binary_fn fn;
        ct__autocast_policy policy;
        bool keeps_float;
    } binary[] = {
#define B_(name, NAME, kind, grad, autocast)                                                       \
    {#name, ct_##name, CT__AUTOCAST_##autocast, KEEPS_FLOAT_##kind},
        CT_BINARY_OPS(B_)
#undef B_
    };
    for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++) {
        if (!binary[i].keeps_float || strcmp(binary[i].name, "nextafter") == 0) continue;
        ct_tensor *y = binary[i].fn(h, h);
        CHECK_NOT_NULL(y);
        if (ct_dtype_of(y) != from_bf16(binary[i].policy))
            printf("    ct_%s: %s\n", binary[i].name, ct_dtype_name(ct_dtype_of(y)));
        CHECK(ct_dtype_of(y) == from_bf16(binary[i].policy));
        /* bf16 with f32: promoted by every policy but LOWER, which no binary row has. */
        CHECK(ct_dtype_of(binary[i].fn(h, f)) == CT_F32);
    }
    CHECK(ct_dtype_of(ct_pow_scalar(h, 2.0)) == CT_F32);
    static const struct {
        const char *name;
        reduce_fn fn;
        ct__autocast_policy policy;
    } reduce[] = {
#define R_(name, NAME, autocast) {#name, ct_##name, CT__AUTOCAST_##autocast},
        CT_REDUCE_OPS(R_)
#undef R_
    };
    for (size_t i = 0; i < sizeof reduce / sizeof reduce[0]; i++) {
        ct_tensor *y = reduce[i].fn(h, 0, NULL, false);
        CHECK_NOT_NULL(y);
        bool predicate = strcmp(reduce[i].name, "all") == 0 || strcmp(reduce[i].name, "any") == 0;
        CHECK(ct_dtype_of(y) == (predicate ? CT_BOOL : from_bf16(reduce[i].policy)));
    }
    CHECK(ct_dtype_of(ct_var(h, 0, NULL, 1.0, false)) == CT_F32);
    CHECK(ct_dtype_of(ct_std(h, 0, NULL, 1.0, false)) == CT_F32);
    CHECK_OK(ct_autocast_pop());
    ct_scope_end();
}

DEVICE_TEST(test_autocast_policy_of_the_other_ops) {
    ct_scope_begin();
    ct_tensor *h = random_tensor(device, 8, 3, CT_BF16), *f = random_tensor(device, 8, 4, CT_F32);
    ct_tensor *index = ct_from_data((int64_t[]){7, 0, 3, 3}, 1, (int64_t[]){4}, CT_I64, device);
    CHECK_NOT_NULL(index);
    ct_tensor *f4 = ct_slice(f, 0, 0, 4, 1);
    CHECK_OK(ct_autocast_push(device.type, CT_BF16));
    /* F32, unless called with an explicit dtype */
    CHECK(ct_dtype_of(ct_cumulative_sum(h, 0, CT_CUMSUM_DEFAULT_DTYPE, false)) == CT_F32);
    CHECK(ct_dtype_of(ct_cumulative_sum(h, 0, CT_BF16, false)) == CT_BF16);
    CHECK(ct_dtype_of(ct_cumulative_prod(h, 0, CT_CUMSUM_DEFAULT_DTYPE, false)) == CT_F32);
    CHECK(ct_dtype_of(ct_cumulative_prod(h, 0, CT_BF16, false)) == CT_BF16);
    /* PROMOTE: the widest input */
    CHECK(ct_dtype_of(ct_scatter_add(h, 0, index, f4)) == CT_F32);
    CHECK(ct_dtype_of(ct_scatter_add(h, 0, index, ct_slice(h, 0, 0, 4, 1))) == CT_BF16);
    const ct_tensor *pair[2] = {h, f};
    CHECK(ct_dtype_of(ct_concat(2, pair, 0)) == CT_F32);
    CHECK(ct_dtype_of(ct_stack(2, pair, 0)) == CT_F32);
    /* tensordot is PROMOTE; the matmul inside it is not lowered again (PyTorch's rule). */
    ct_tensor *dot = ct_tensordot(f, f, 1, (int[]){0}, (int[]){0});
    CHECK_NOT_NULL(dot);
    CHECK(ct_dtype_of(dot) == CT_F32);
    CHECK(ct_dtype_of(ct_tensordot(h, f, 1, (int[]){0}, (int[]){0})) == CT_F32);
    CHECK_OK(ct_autocast_pop());
    ct_scope_end();
}

/* An F32 op's gradient reaches a bf16 input in bf16 (the cast is on the tape). */
DEVICE_TEST(test_autocast_f32_op_gradient_in_input_dtype) {
    ct_scope_begin();
    ct_tensor *h = random_tensor(device, 8, 5, CT_BF16);
    CHECK_OK(ct_set_requires_grad(h, true));
    CHECK_OK(ct_autocast_push(device.type, CT_BF16));
    ct_tensor *y = ct_sum(ct_exp(h), 0, NULL, false);
    CHECK_OK(ct_autocast_pop());
    CHECK_NOT_NULL(y);
    CHECK(ct_dtype_of(y) == CT_F32);
    CHECK_OK(ct_backward(y));
    ct_tensor *g = ct_grad(h);
    CHECK_NOT_NULL(g);
    CHECK(ct_dtype_of(g) == CT_BF16);
    /* d/dh sum(exp(h)) = exp(h), to bf16's precision. */
    double *gv = ref_read(g), *hv = ref_read(h);
    CHECK_NOT_NULL(gv);
    CHECK_NOT_NULL(hv);
    for (int i = 0; i < 8; i++) CHECK(fabs(gv[i] - exp(hv[i])) <= 1e-2 * exp(hv[i]));
    free(gv), free(hv);
    ct_scope_end();
}

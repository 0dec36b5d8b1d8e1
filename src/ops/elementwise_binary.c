/* The binary elementwise ops of op_list.h (ct_add ... ct_logical_or), their *_scalar forms,
 * and ct_where: NumPy broadcasting, dtype promotion, then one kernel call.
 *
 * Dtypes: ARITH ops give ct_promote_types(a, b); FLOAT gives that when it is floating, else
 * float32 (true division, computed in float32 as PyTorch does); COMPARE and LOGICAL give
 * bool; INT and SHIFT give the promoted integer (or, for INT, bool) dtype and refuse floats. The
 * kernel gets compute_dtype = the promoted dtype (the float result for DIV). Subtracting two bools
 * is an error, as in PyTorch. With a complex operand (promoted to a complex dtype) add, sub, mul,
 * div, pow, eq and ne compute in it (backend/complex_impl.h); the other ops refuse it, naming
 * themselves. A real scalar with a complex tensor keeps the tensor's dtype.
 *
 * Scalars (the *_scalar forms) are weak, as Python scalars in NumPy 2 and PyTorch: the
 * tensor's dtype wins, except that a non-integral (or non-finite) scalar with an integer or
 * bool tensor gives float32, and an integral scalar with a bool tensor gives int64 for
 * arithmetic. The scalar joins the computation in the compute domain's own type (float32
 * for f32/f16/bf16, float64, or int32/int64 as it fits), so it is not rounded to a 16-bit or
 * narrow integer dtype first. The scalar reaches the kernel by value (ct__ew_scalar) on every
 * device: no tensor is made for it. The reflected forms (ct_NAME_rscalar: the scalar on the
 * left, Python's __rsub__) follow the same rules. Integer remainder by zero and integer pow
 * with a negative exponent are CT_ERR_INVALID_ARG (NumPy raises for both; PyTorch 1.13 raises
 * for a negative scalar exponent but gives 0, 1 or -1 for a negative exponent in a tensor). */
#include <math.h>
#include <string.h>

#include "ops/autocast_impl.h"
#include "ops/grad_impl.h"
#include "backend/complex_impl.h"
#include "backend/ew_formula_impl.h"
#include "ops/op_impl.h"

enum { KIND_ARITH, KIND_FLOAT, KIND_COMPARE, KIND_LOGICAL, KIND_INT, KIND_SHIFT };

static ct_dtype result_dtype(int kind, ct_dtype promoted) {
    if (kind == KIND_COMPARE || kind == KIND_LOGICAL) return CT_BOOL;
    if (kind == KIND_FLOAT && !ct__is_float(promoted) && !ct__is_complex(promoted)) return CT_F32;
    return promoted;
}

/* A weak scalar operand: the kernel's by-value form (which operand it is, its value) and the
 * dtype it joins as. */
typedef struct scalar_operand {
    ct__ew_scalar kernel;
    ct_dtype dtype;
} scalar_operand;

/* Append the scalar s to args (which holds out and the tensor operand) as a broadcast operand
 * with no data, moving the tensor to operand 2 when the scalar comes first. */
static void add_scalar(ct__ew_args *args, const scalar_operand *s) {
    ct__ew_add_strided(args, NULL, s->dtype, NULL);
    if (s->kernel.operand != 1) return;
    args->data[2] = args->data[1];
    args->dtype[2] = args->dtype[1];
    args->data[1] = NULL;
    args->dtype[1] = s->dtype;
    for (int d = 0; d < args->ndim; d++) {
        args->strides[2][d] = args->strides[1][d];
        args->strides[1][d] = 0;
    }
}

/* Whether t has the result's shape. */
static bool full_shaped(const ct_tensor *t, int ndim, const int64_t *shape) {
    return t && t->ndim == ndim && memcmp(t->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0;
}

/* The result of (ndim, shape): in the layout of the first operand that has its whole shape
 * when that one is dense (channels-last, say), as PyTorch's result follows its first input's
 * memory format; else contiguous. */
static ct_tensor *new_result(ct_device device, ct_dtype dtype, int ndim, const int64_t *shape,
                             const ct_tensor *a, const ct_tensor *b) {
    const ct_tensor *like = full_shaped(a, ndim, shape)   ? a
                            : full_shaped(b, ndim, shape) ? b
                                                          : NULL;
    return like ? ct__tensor_new_like(device, dtype, like)
                : ct__tensor_new(device, dtype, ndim, shape);
}

/* Make out and run the kernel over (ndim, shape) with operands a and b, or the tensor a and
 * the scalar s (on the side s says) when b is NULL. a and b are on device already. */
static ct_tensor *launch(const char *name, ct__binary_op op, int kind, ct_device device, int ndim,
                         const int64_t *shape, ct_dtype promoted, const ct_tensor *a,
                         const ct_tensor *b, const scalar_operand *s) {
    int physical;
    const ct__kernel_table *kernels = ct__kernels(device, &physical);
    if (!kernels) return NULL;
    ct_dtype out_dtype = result_dtype(kind, promoted);
    ct_tensor *out = new_result(device, out_dtype, ndim, shape, a, b);
    if (!out || out->numel == 0) return out;
    ct__ew_args args;
    const ct_tensor *operands[3] = {out, a, b};
    if (b && ct__ew_flat(&args, 3, operands)) {
        /* same shapes, contiguous: no broadcasting to work out */
    } else if (!b && ct__ew_flat(&args, 2, operands)) {
        add_scalar(&args, s);
    } else {
        ct__ew_init(&args, ndim, shape);
        ct__ew_add(&args, out);
        ct__ew_add(&args, a);
        if (b)
            ct__ew_add(&args, b);
        else
            add_scalar(&args, s);
        ct__ew_coalesce(&args);
    }
    args.compute_dtype = kind == KIND_FLOAT ? out_dtype : promoted;
    /* Integer pow, remainder and floor_divide check their operands on the device (negative
     * exponents, zero divisors). */
    bool checked = ct__ew_int_op_can_fail(op) && !ct__is_float(args.compute_dtype) &&
                   !ct__is_complex(args.compute_dtype);
    ct__ew_scalar none = {.operand = 0};
    if ((checked && ct__kernel_readback(device, CT_SLOT_binary, name) != CT_OK) ||
        kernels->binary(physical, op, &args, b ? none : s->kernel) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

/* The dtypes an op refuses: bool - bool, floats (and bool for shifts) in the bitwise ops,
 * and nextafter of float16/bfloat16 (its kernels step in float32, and the rounding back to the
 * narrow dtype undoes the step). Sets the error and returns true when the promoted dtype is
 * one of them. */
static bool refused_dtype(const char *name, ct__binary_op op, int kind, ct_dtype promoted) {
    if (op == CT_BOP_NEXTAFTER && (promoted == CT_F16 || promoted == CT_BF16)) {
        ct__error(CT_ERR_DTYPE,
                  "%s: the next %s value is not computed (the kernels step in float32, which "
                  "rounds back to the same %s); ct_cast the operands to float32 first",
                  name, ct_dtype_name(promoted), ct_dtype_name(promoted));
        return true;
    }
    if (op == CT_BOP_SUB && promoted == CT_BOOL) {
        ct__error(CT_ERR_DTYPE,
                  "%s: subtracting bool tensors is not supported; combine masks with "
                  "ct_logical_and and ct_logical_not, or ct_cast to an integer dtype first",
                  name);
        return true;
    }
    bool is_int = !ct__is_float(promoted) && promoted != CT_BOOL;
    if ((kind == KIND_INT && ct__is_float(promoted)) || (kind == KIND_SHIFT && !is_int)) {
        ct__error(CT_ERR_DTYPE,
                  "%s: takes integer%s tensors, not %s; ct_cast the operands to an integer "
                  "dtype first",
                  name, kind == KIND_INT ? " or bool" : "", ct_dtype_name(promoted));
        return true;
    }
    return false;
}

static ct_tensor *binary(const char *name, ct__binary_op op, int kind, const ct_tensor *a,
                         const ct_tensor *b) {
    const ct_tensor *pair[2] = {a, b};
    ct_device device;
    if (!ct__check_args_complex(name, 2, pair, &device)) return NULL;
    int ndim = a->ndim;
    int64_t shape[CT_MAX_DIMS];
    if (a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0)
        memcpy(shape, a->shape, sizeof(int64_t) * (size_t)a->ndim); /* nothing to broadcast */
    else if (ct__broadcast_shapes(name, 2, pair, &ndim, shape) != CT_OK)
        return NULL;
    ct_dtype promoted = ct_promote_types(a->dtype, b->dtype);
    if (ct__is_complex(promoted) && !ct__z_binary_defined(op) && ct__refuse_complex(name, 2, pair))
        return NULL;
    if (refused_dtype(name, op, kind, promoted)) return NULL;
    if (ct__same_device(a->storage->device, device) && ct__same_device(b->storage->device, device))
        return launch(name, op, kind, device, ndim, shape, promoted, a, b, NULL);
    /* A 0-d CPU tensor joins an op on another device: copy it there first. */
    ct_tensor *da = ct__operand_on(a, device, name);
    ct_tensor *db = da ? ct__operand_on(b, device, name) : NULL;
    ct_tensor *out =
        db ? launch(name, op, kind, device, ndim, shape, promoted, da, db, NULL) : NULL;
    ct_release(da);
    ct_release(db);
    return out;
}

/* The weak-scalar promotion described at the top of this file. */
static ct_dtype scalar_promote(int kind, ct_dtype t, double s) {
    if (ct__is_float(t) || ct__is_complex(t)) return t;
    if (!isfinite(s) || s != floor(s)) return CT_F32;
    if (t == CT_BOOL && kind != KIND_COMPARE && kind != KIND_LOGICAL) return CT_I64;
    return t;
}

/* The scalar's dtype as an operand: float32 (for f32, f16, bf16 results), float64, or an
 * integer that holds it exactly (it is integral here). */
static ct_dtype scalar_dtype(ct_dtype promoted, double s) {
    if (promoted == CT_F64 || ct__is_complex(promoted)) return CT_F64;
    if (ct__is_float(promoted)) return CT_F32;
    return s >= INT32_MIN && s <= INT32_MAX ? CT_I32 : CT_I64;
}

/* a op s, or s op a when first: one kernel call, the scalar passed by value. */
static ct_tensor *binary_scalar(const char *name, ct__binary_op op, int kind, const ct_tensor *a,
                                double s, bool first) {
    ct_device device;
    if (!ct__check_args_complex(name, 1, &a, &device)) return NULL;
    ct_dtype promoted = scalar_promote(kind, a->dtype, s);
    if (ct__is_complex(promoted) && !ct__z_binary_defined(op) && ct__refuse_complex(name, 1, &a))
        return NULL;
    if (refused_dtype(name, op, kind, promoted)) return NULL;
    /* The kernel would find these too, but only this function knows its own name. A scalar
     * first is the dividend or the base: the kernel checks the tensor's values. */
    if (!first && !ct__is_float(promoted) &&
        ((op == CT_BOP_REMAINDER && s == 0) || (op == CT_BOP_FLOOR_DIVIDE && s == 0) ||
         (op == CT_BOP_POW && s < 0)))
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: %s for an integer tensor; ct_cast the tensor to a floating "
                        "dtype first",
                        name,
                        op == CT_BOP_POW ? "integers to negative integer powers are not allowed"
                        : op == CT_BOP_REMAINDER ? "integer remainder by zero"
                                                 : "integer division by zero");
    scalar_operand scalar = {.kernel.operand = first ? 1 : 2, .dtype = scalar_dtype(promoted, s)};
    if (scalar.dtype == CT_F64)
        scalar.kernel.value.f64 = s;
    else if (scalar.dtype == CT_F32)
        scalar.kernel.value.f32 = (float)s;
    else if (scalar.dtype == CT_I32)
        scalar.kernel.value.i32 = (int32_t)s;
    else
        scalar.kernel.value.i64 = ct__f64_to_i64(s);
    return launch(name, op, kind, device, a->ndim, a->shape, promoted, a, NULL, &scalar);
}

/* A binary op through autocast's front door, and its autograd record. */
static ct_tensor *binary_op(const char *name, ct__binary_op op, ct__autocast_op id, int kind,
                            const ct_tensor *a, const ct_tensor *b) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, id, 2, (const ct_tensor **[]){&a, &b})) return NULL;
    ct_tensor *out = binary(name, op, kind, a, b);
    const ct_tensor *in[2] = {a, b};
    if (ct__grad_needed(2, in)) out = ct__record_binary(out, name, op, a, b, 0);
    ct__autocast_end(&ac);
    return out;
}

/* The record of s op a: the backward rules take a scalar on the right only, so the scalar
 * joins the record as a 0-d operand of the result's dtype, which needs no gradient. */
static ct_tensor *record_scalar_first(ct_tensor *out, const char *name, ct__binary_op op,
                                      const ct_tensor *a, double s) {
    if (!out || !ct__grad_dtype(out->dtype)) return out;
    ct_tensor *first = ct__full_on(out->storage->device, 0, NULL, s, out->dtype);
    if (!first) {
        ct_release(out);
        return NULL;
    }
    out = ct__record_binary(out, name, op, first, a, 0);
    ct_release(first);
    return out;
}

static ct_tensor *binary_scalar_op(const char *name, ct__binary_op op, ct__autocast_op id, int kind,
                                   const ct_tensor *a, double s, bool first) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, id, 1, (const ct_tensor **[]){&a})) return NULL;
    ct_tensor *out = binary_scalar(name, op, kind, a, s, first);
    if (ct__grad_needed(1, &a))
        out = first ? record_scalar_first(out, name, op, a, s)
                    : ct__record_binary(out, name, op, a, NULL, s);
    ct__autocast_end(&ac);
    return out;
}

#define CT_DEFINE_BINARY_(name, NAME, kind, grad, autocast)                                        \
    ct_tensor *ct_##name(const ct_tensor *a, const ct_tensor *b) {                                 \
        return binary_op("ct_" #name, CT_BOP_##NAME, CT__AC_B_##NAME, KIND_##kind, a, b);          \
    }                                                                                              \
    ct_tensor *ct_##name##_scalar(const ct_tensor *a, double b) {                                  \
        return binary_scalar_op("ct_" #name "_scalar", CT_BOP_##NAME, CT__AC_B_##NAME,             \
                                KIND_##kind, a, b, false);                                         \
    }                                                                                              \
    ct_tensor *ct_##name##_rscalar(const ct_tensor *b, double a) {                                 \
        return binary_scalar_op("ct_" #name "_rscalar", CT_BOP_##NAME, CT__AC_B_##NAME,            \
                                KIND_##kind, b, a, true);                                          \
    }
CT_BINARY_OPS(CT_DEFINE_BINARY_)
#undef CT_DEFINE_BINARY_

ct_tensor *ct__relu_backward(const ct_tensor *grad, const ct_tensor *x) {
    return binary("ReLU's backward", CT_BOP_RELU_GRAD, KIND_ARITH, grad, x);
}

ct_tensor *ct__gelu_tanh_backward(const ct_tensor *grad, const ct_tensor *x) {
    return binary("GELU's backward", CT_BOP_GELU_TANH_GRAD, KIND_FLOAT, grad, x);
}

/* t on device with dtype, as a new reference (copied or converted when needed). */
static ct_tensor *where_operand(const ct_tensor *t, ct_device device, ct_dtype dtype) {
    ct_tensor *here = ct__operand_on(t, device, "ct_where");
    if (!here || here->dtype == dtype) return here;
    ct_tensor *converted = ct_cast(here, dtype);
    ct_release(here);
    return converted;
}

static ct_tensor *where_launch(ct_device device, int ndim, const int64_t *shape,
                               ct_tensor *const *ops) {
    int physical;
    const ct__kernel_table *kernels = ct__kernels(device, &physical);
    if (!kernels) return NULL;
    ct_tensor *out = ct__tensor_new(device, ops[1]->dtype, ndim, shape);
    if (!out || out->numel == 0) return out;
    ct__ew_args args;
    ct__ew_init(&args, ndim, shape);
    ct__ew_add(&args, out);
    for (int i = 0; i < 3; i++) ct__ew_add(&args, ops[i]);
    ct__ew_coalesce(&args);
    args.compute_dtype = out->dtype;
    if (kernels->where(physical, &args) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) {
    const ct_tensor *in[3] = {cond, a, b};
    ct_device device;
    if (!ct__check_args_complex("ct_where", 3, in, &device)) return NULL;
    if (cond->dtype != CT_BOOL)
        return ct__fail(CT_ERR_DTYPE,
                        "ct_where: the condition has dtype %s but must be bool; make it with a "
                        "comparison (ct_gt, ...) or ct_cast(cond, CT_BOOL)",
                        ct_dtype_name(cond->dtype));
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    if (ct__broadcast_shapes("ct_where", 3, in, &ndim, shape) != CT_OK) return NULL;
    ct_dtype dtype = ct_promote_types(a->dtype, b->dtype);
    ct_tensor *ops[3] = {where_operand(cond, device, CT_BOOL), NULL, NULL};
    if (ops[0]) ops[1] = where_operand(a, device, dtype);
    if (ops[1]) ops[2] = where_operand(b, device, dtype);
    ct_tensor *out = ops[2] ? where_launch(device, ndim, shape, ops) : NULL;
    for (int i = 0; i < 3; i++) ct_release(ops[i]);
    return ct__grad_needed(3, in) ? ct__record_where(out, cond, a, b) : out;
}

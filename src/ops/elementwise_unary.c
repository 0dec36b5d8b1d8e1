/* The unary elementwise ops of op_list.h (ct_neg ... ct_logical_not) and ct_clamp: result
 * dtype, then one kernel call on the input's device.
 *
 * Result dtypes (op_list.h): FLOAT ops give float32 for integer and bool inputs and keep
 * floating dtypes; SAME ops keep the dtype; BOOL ops give bool; INT ops take integer and bool
 * tensors only and keep the dtype (bitwise_invert of bool is logical_not, as in NumPy).
 * Negating a bool tensor is an error, as in PyTorch. Complex tensors keep their dtype (abs gives
 * the parts' real dtype) in the ops backend/complex_impl.h defines for them; the others refuse
 * them, naming the op. The success path makes the output and nothing
 * else, so small ops cost little more than the allocation. */
#include <math.h>

#include "backend/complex_impl.h"
#include "ops/autocast_impl.h"
#include "ops/grad_impl.h"
#include "ops/op_impl.h"

enum { KIND_FLOAT, KIND_SAME, KIND_BOOL, KIND_INT };

static ct_dtype result_dtype(int kind, ct__unary_op op, ct_dtype in) {
    if (kind == KIND_BOOL) return CT_BOOL;
    if (ct__is_complex(in)) return op == CT_UOP_ABS ? ct__complex_part(in) : in;
    if (kind == KIND_FLOAT && !ct__is_float(in)) return CT_F32;
    return in;
}

/* out = op(x) with parameters p0, p1 (clamp's bounds). */
static ct_tensor *unary(const char *name, ct__unary_op op, int kind, const ct_tensor *x, double p0,
                        double p1) {
    ct_device device;
    if (!ct__check_args_complex(name, 1, &x, &device)) return NULL;
    if (ct__is_complex(x->dtype) && !ct__z_unary_defined(op) && ct__refuse_complex(name, 1, &x))
        return NULL;
    if (op == CT_UOP_NEG && x->dtype == CT_BOOL)
        return ct__fail(CT_ERR_DTYPE,
                        "%s: negation of a bool tensor is not supported; use ct_logical_not "
                        "to invert a mask, or ct_cast the tensor to an integer dtype first",
                        name);
    if (kind == KIND_INT && ct__is_float(x->dtype))
        return ct__fail(CT_ERR_DTYPE,
                        "%s: takes integer or bool tensors, not %s; ct_cast the tensor to an "
                        "integer dtype first",
                        name, ct_dtype_name(x->dtype));
    if (op == CT_UOP_BITWISE_INVERT && x->dtype == CT_BOOL) op = CT_UOP_LOGICAL_NOT;
    int physical;
    const ct__kernel_table *kernels = ct__kernels(device, &physical);
    if (!kernels) return NULL;
    ct_dtype out_dtype = result_dtype(kind, op, x->dtype);
    ct_tensor *out = ct__tensor_new_like(device, out_dtype, x); /* x's layout, when dense */
    if (!out) return NULL;
    if (out->numel == 0)
        return ct__grad_needed(1, &x) ? ct__record_unary(out, name, op, x, p0, p1) : out;
    ct__ew_args args;
    if (!ct__ew_flat(&args, 2, (const ct_tensor *[]){out, x})) {
        ct__ew_init(&args, x->ndim, x->shape);
        ct__ew_add(&args, out);
        ct__ew_add(&args, x);
        ct__ew_coalesce(&args);
    }
    args.compute_dtype = kind == KIND_BOOL ? x->dtype : out_dtype;
    if (kernels->unary(physical, op, &args, p0, p1) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return ct__grad_needed(1, &x) ? ct__record_unary(out, name, op, x, p0, p1) : out;
}

#define CT_DEFINE_UNARY_(name, NAME, kind, grad, autocast)                                         \
    ct_tensor *ct_##name(const ct_tensor *x) {                                                     \
        ct__autocast ac;                                                                           \
        if (!ct__autocast_begin(&ac, CT__AC_U_##NAME, 1, (const ct_tensor **[]){&x})) return NULL; \
        ct_tensor *out = unary("ct_" #name, CT_UOP_##NAME, KIND_##kind, x, 0.0, 0.0);              \
        ct__autocast_end(&ac);                                                                     \
        return out;                                                                                \
    }
CT_UNARY_OPS(CT_DEFINE_UNARY_)
#undef CT_DEFINE_UNARY_

/* Saturate a bound to an integer dtype's range (kernels convert bounds to the dtype). */
static double saturate(double bound, ct_dtype dtype) {
    double min = 0, max = 1; /* bool */
    if (dtype == CT_I32) min = INT32_MIN, max = INT32_MAX;
    if (dtype == CT_I64) min = -0x1p63, max = 0x1p63;
    if (dtype == CT_U8) max = UINT8_MAX;
    if (dtype == CT_I8) min = INT8_MIN, max = INT8_MAX;
    if (dtype == CT_I16) min = INT16_MIN, max = INT16_MAX;
    if (dtype == CT_U16) max = UINT16_MAX;
    if (dtype == CT_U32) max = UINT32_MAX;
    if (dtype == CT_U64) max = 0x1p64;
    return bound < min ? min : bound > max ? max : bound;
}

/* Integer tensors are clamped to the integers inside [lo, hi] (ceil(lo), floor(hi)), so the
 * result keeps the dtype and stays within the bounds; bounds outside the dtype's range act as
 * its extremes. */
ct_tensor *ct_clamp(const ct_tensor *x, double lo, double hi) {
    if (!x) return ct__null_arg("ct_clamp", 1);
    if (isnan(lo) || isnan(hi))
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_clamp: bound %s is NaN; pass -INFINITY or INFINITY for no bound",
                        isnan(lo) ? "lo" : "hi");
    if (!ct__is_float(x->dtype)) lo = saturate(lo, x->dtype), hi = saturate(hi, x->dtype);
    return unary("ct_clamp", CT_UOP_CLAMP, KIND_SAME, x, lo, hi);
}

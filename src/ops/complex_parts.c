/* The parts of complex tensors and what is built from them: ct_real, ct_imag, ct_conj,
 * ct_full_complex, ct_fill_complex, ct_linspace_complex.
 *
 * A complex tensor's real and imaginary parts are views of its storage in the parts' real
 * dtype (strides doubled, the imaginary part one element further), so each op here is made
 * of the real kernels every backend already has: a fill or a copy, and for ct_conj one
 * multiplication of the parts by (1, -1). ct_real and ct_imag of a complex tensor are such
 * views (as NumPy's and PyTorch's are): a write into them changes the complex tensor.
 * ct_real, ct_imag and ct_conj compute without recording and record their own backward rule
 * (complex_grad.c). */
#include <math.h>

#include "ops/grad_impl.h"
#include "ops/op_impl.h"

ct_tensor *ct__complex_part_view(const ct_tensor *x, int part) {
    int64_t strides[CT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) strides[d] = x->strides[d] * 2;
    return ct__tensor_view(x, ct__complex_part(x->dtype), x->ndim, x->shape, strides,
                           x->offset * 2 + part);
}

ct_tensor *ct__complex_from_parts(const ct_tensor *re, const ct_tensor *im, ct_dtype dtype,
                                  const char *op) {
    if (!re || !im) return NULL;
    ct_tensor *out = ct__tensor_new(re->storage->device, dtype, re->ndim, re->shape);
    ct_tensor *out_re = out ? ct__complex_part_view(out, 0) : NULL;
    ct_tensor *out_im = out_re ? ct__complex_part_view(out, 1) : NULL;
    bool ok =
        out_im && ct__copy_into(out_re, re, op) == CT_OK && ct__copy_into(out_im, im, op) == CT_OK;
    ct_release(out_re);
    ct_release(out_im);
    if (!ok) {
        ct_release(out);
        return NULL;
    }
    return out;
}

/* Part `part` of x: a view of a complex x's storage; a real x itself, or zeros for the
 * imaginary part. */
static ct_tensor *part_of(const char *op, const ct_tensor *x, int part) {
    ct_device device;
    if (!ct__check_args_complex(op, 1, &x, &device)) return NULL;
    if (!ct__is_complex(x->dtype))
        return part ? ct__full_on(device, x->ndim, x->shape, 0.0, x->dtype) : ct__new_ref(x);
    return ct__complex_part_view(x, part);
}

/* part_of (parts 0 and 1) or conjugate (part 2) of x, recorded when x requires grad. */
static ct_tensor *recorded(const char *op, const ct_tensor *x, int part,
                           ct_tensor *(*compute)(const char *op, const ct_tensor *x, int part)) {
    bool grad = ct__grad_needed(1, &x);
    ct_no_grad_push();
    ct_tensor *out = compute(op, x, part);
    ct_no_grad_pop();
    return grad ? ct__record_complex_part(out, x, part) : out;
}

ct_tensor *ct_real(const ct_tensor *x) { return recorded("ct_real", x, 0, part_of); }

ct_tensor *ct_imag(const ct_tensor *x) { return recorded("ct_imag", x, 1, part_of); }

/* out = x * (1, -1) over x's parts as an extra last axis of 2: one multiplication kernel over
 * the parts' real dtype, which negates every imaginary part (zeros and infinities keep their
 * magnitude and flip their sign) and leaves the real parts as they are. x's axes are coalesced
 * first; a layout that keeps CT_MAX_DIMS axes after that is made contiguous first. */
static ct_status conj_into(ct_tensor *out, const ct_tensor *x, ct_device device) {
    int physical;
    const ct__kernel_table *kernels = ct__kernels(device, &physical);
    if (!kernels) return ct_last_status();
    ct_dtype part = ct__complex_part(x->dtype);
    ct_tensor *signs = ct_arange(1.0, -2.0, -2.0, part, device); /* (1, -1) */
    if (!signs) return ct_last_status();
    ct__ew_args args;
    ct__ew_init(&args, x->ndim, x->shape);
    ct__ew_add(&args, out);
    ct__ew_add(&args, x);
    ct__ew_coalesce(&args);
    ct_status status = CT_OK;
    if (args.ndim < CT_MAX_DIMS) {
        int d = args.ndim++;
        args.shape[d] = 2;
        for (int k = 0; k < args.nops; k++) {
            for (int j = 0; j < d; j++) args.strides[k][j] *= 2;
            args.strides[k][d] = 1;
            args.dtype[k] = part;
        }
        int64_t sign_strides[CT_MAX_DIMS] = {0};
        sign_strides[d] = 1;
        ct__ew_add_strided(&args, ct__data(signs), part, sign_strides);
        args.compute_dtype = part;
        args.numel = 2 * args.numel;
        ct__ew_scalar none = {.operand = 0};
        status = kernels->binary(physical, CT_BOP_MUL, &args, none);
    } else {
        ct_tensor *dense = ct_contiguous(x);
        status = dense ? conj_into(out, dense, device) : ct_last_status();
        ct_release(dense);
    }
    ct_release(signs);
    return status;
}

static ct_tensor *conjugate(const char *op, const ct_tensor *x, int part) {
    (void)part;
    ct_device device;
    if (!ct__check_args_complex(op, 1, &x, &device)) return NULL;
    if (!ct__is_complex(x->dtype)) return ct__new_ref(x);
    ct_tensor *out = ct__tensor_new(device, x->dtype, x->ndim, x->shape);
    if (out && out->numel && conj_into(out, x, device) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

ct_tensor *ct_conj(const ct_tensor *x) { return recorded("ct_conj", x, 2, conjugate); }

ct_status ct_fill_complex(ct_tensor *dst, ct_complex128 value) {
    if (!dst) {
        ct__null_arg("ct_fill_complex", 1);
        return ct_last_status();
    }
    if (!ct__is_complex(dst->dtype))
        return ct__error(CT_ERR_DTYPE,
                         "ct_fill_complex: the tensor is %s, not complex; ct_fill it with a "
                         "real value",
                         ct_dtype_name(dst->dtype));
    if (ct_fill(dst, value.re) != CT_OK) return ct_last_status();
    if (value.im == 0 && !signbit(value.im)) return CT_OK;
    ct_tensor *im = ct__complex_part_view(dst, 1);
    ct_status status = im ? ct_fill(im, value.im) : ct_last_status();
    ct_release(im);
    return status;
}

ct_tensor *ct_full_complex(int ndim, const int64_t *shape, ct_complex128 value, ct_dtype dtype,
                           ct_device device) {
    if (ct_dtype_is_valid(dtype) && !ct__is_complex(dtype))
        return ct__fail(CT_ERR_DTYPE,
                        "ct_full_complex: dtype %s is not complex; use CT_C64 or CT_C128, or "
                        "ct_full for a real value",
                        ct_dtype_name(dtype));
    ct_tensor *t = ct_empty(ndim, shape, dtype, device);
    if (t && ct_fill_complex(t, value) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

ct_tensor *ct_linspace_complex(ct_complex128 start, ct_complex128 stop, int64_t num, ct_dtype dtype,
                               ct_device device) {
    if (!ct_dtype_is_valid(dtype) || !ct__is_complex(dtype))
        return ct__fail(CT_ERR_DTYPE,
                        "ct_linspace_complex: dtype %s is not complex; use CT_C64 or CT_C128, "
                        "or ct_linspace for real values",
                        ct_dtype_name(dtype));
    ct_tensor *re = ct_linspace(start.re, stop.re, num, CT_F64, device);
    ct_tensor *im = re ? ct_linspace(start.im, stop.im, num, CT_F64, device) : NULL;
    ct_tensor *out = ct__complex_from_parts(re, im, dtype, "ct_linspace_complex");
    ct_release(re);
    ct_release(im);
    return out;
}

/* The parts of complex tensors and what is built from them: ct_real, ct_imag, ct_conj,
 * ct_full_complex, ct_fill_complex, ct_linspace_complex.
 *
 * A complex tensor's real and imaginary parts are views of its storage in the parts' real
 * dtype (strides doubled, the imaginary part one element further), so each op here is made
 * of the real ops every backend already has: a fill or a copy, and a negation for ct_conj.
 * ct_real and ct_imag return new tensors (the array API standard's functions), never views
 * a write could go through. ct_real, ct_imag and ct_conj compute without recording and record
 * their own backward rule (complex_grad.c). */
#include <math.h>

#include "ops/grad_impl.h"
#include "ops/op_impl.h"

ct_tensor *ct__complex_part_view(const ct_tensor *x, int part) {
    int64_t strides[CT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) strides[d] = x->strides[d] * 2;
    return ct__tensor_view(x, ct__complex_part(x->dtype), x->ndim, x->shape, strides,
                           x->offset * 2 + part);
}

/* A new tensor holding part `part` of x (a complex x's part; a real x itself, or zeros for
 * the imaginary part). */
static ct_tensor *part_copy(const char *op, const ct_tensor *x, int part) {
    ct_device device;
    if (!ct__check_args_complex(op, 1, &x, &device)) return NULL;
    if (!ct__is_complex(x->dtype))
        return part ? ct__full_on(device, x->ndim, x->shape, 0.0, x->dtype) : ct__new_ref(x);
    ct_tensor *view = ct__complex_part_view(x, part);
    ct_tensor *out = view ? ct_clone(view) : NULL;
    ct_release(view);
    return out;
}

/* part_copy (parts 0 and 1) or conjugate (part 2) of x, recorded when x requires grad. */
static ct_tensor *recorded(const char *op, const ct_tensor *x, int part,
                           ct_tensor *(*compute)(const char *op, const ct_tensor *x, int part)) {
    bool grad = ct__grad_needed(1, &x);
    ct_no_grad_push();
    ct_tensor *out = compute(op, x, part);
    ct_no_grad_pop();
    return grad ? ct__record_complex_part(out, x, part) : out;
}

ct_tensor *ct_real(const ct_tensor *x) { return recorded("ct_real", x, 0, part_copy); }

ct_tensor *ct_imag(const ct_tensor *x) { return recorded("ct_imag", x, 1, part_copy); }

static ct_tensor *conjugate(const char *op, const ct_tensor *x, int part) {
    (void)part;
    ct_device device;
    if (!ct__check_args_complex(op, 1, &x, &device)) return NULL;
    if (!ct__is_complex(x->dtype)) return ct__new_ref(x);
    ct_tensor *out = ct_clone(x);
    ct_tensor *im = ct__complex_part_view(x, 1);
    ct_tensor *negated = im ? ct_neg(im) : NULL;
    ct_tensor *out_im = out && negated ? ct__complex_part_view(out, 1) : NULL;
    ct_status status = out_im ? ct__copy_into(out_im, negated, op) : ct_last_status();
    ct_release(im);
    ct_release(negated);
    ct_release(out_im);
    if (status != CT_OK) {
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
    if (ct_dtype_is_valid(dtype) && !ct__is_complex(dtype))
        return ct__fail(CT_ERR_DTYPE,
                        "ct_linspace_complex: dtype %s is not complex; use CT_C64 or CT_C128, "
                        "or ct_linspace for real values",
                        ct_dtype_name(dtype));
    ct_tensor *re = ct_linspace(start.re, stop.re, num, CT_F64, device);
    ct_tensor *im = re ? ct_linspace(start.im, stop.im, num, CT_F64, device) : NULL;
    ct_tensor *out = im ? ct_empty(1, (int64_t[]){num}, dtype, device) : NULL;
    ct_tensor *out_re = out ? ct__complex_part_view(out, 0) : NULL;
    ct_tensor *out_im = out_re ? ct__complex_part_view(out, 1) : NULL;
    bool ok = out_im && ct__copy_into(out_re, re, "ct_linspace_complex") == CT_OK &&
              ct__copy_into(out_im, im, "ct_linspace_complex") == CT_OK;
    ct_release(re);
    ct_release(im);
    ct_release(out_re);
    ct_release(out_im);
    if (!ok) {
        ct_release(out);
        return NULL;
    }
    return out;
}

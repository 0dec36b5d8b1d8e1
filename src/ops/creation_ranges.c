/* Creation of ranges and diagonal matrices: ct_arange, ct_linspace, ct_eye. Each is built
 * on a device by the iota and fill kernels, so no host data moves.
 *
 * Values are computed in double and rounded (floats) or truncated toward zero (integers)
 * into the dtype, as ct_cast converts; integers above 2^53 are therefore not exact. */
#include <math.h>

#include "ops/op_impl.h"

/* Check dtype and resolve the device; false with the error set. */
static bool prepare(const char *op, ct_dtype dtype, ct_device requested, ct_device *device) {
    if (!ct_dtype_is_valid(dtype)) {
        ct__error(CT_ERR_DTYPE, "%s: invalid dtype %d; use one of CT_F32 .. CT_C128", op,
                  (int)dtype);
        return false;
    }
    return ct__resolve_device(op, requested, device) == CT_OK;
}

/* A 1-D tensor of n elements on device with element i = start + i * step. */
static ct_tensor *iota(const char *op, ct_device device, int64_t n, double start, double step,
                       ct_dtype dtype) {
    int64_t numel;
    if (ct__check_shape(op, 1, &n, &numel) != CT_OK) return NULL;
    ct_tensor *t = ct__tensor_new(device, dtype, 1, &n);
    if (!t || n == 0) return t;
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    ct__ew_args args;
    ct__ew_init(&args, 1, &n);
    ct__ew_add(&args, t);
    if (!k || k->iota(physical, &args, start, step) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

/* numpy.arange: ceil((stop - start) / step) values start + i * step. For integer dtypes,
 * as NumPy, the step is the difference of the first two values after truncation, so
 * arange(0.5, 3, 0.5) as int32 is 0, 1, 2, 3, 4. bool has no ranges (NumPy fails past two
 * elements): CT_ERR_DTYPE. */
ct_tensor *ct_arange(double start, double stop, double step, ct_dtype dtype, ct_device device) {
    const char *op = "ct_arange";
    ct_device d;
    if (!prepare(op, dtype, device, &d)) return NULL;
    if (dtype == CT_BOOL)
        return ct__fail(CT_ERR_DTYPE,
                        "%s: bool has no ranges; make an integer range and ct_cast it to bool", op);
    if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
        return ct__fail(CT_ERR_INVALID_ARG, "%s: start %g, stop %g and step %g must all be finite",
                        op, start, stop, step);
    if (step == 0)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: step is 0; give a positive step to count up or "
                        "a negative one to count down",
                        op);
    double length = ceil((stop - start) / step);
    if (!(length <= 9.0e18))
        return ct__fail(CT_ERR_SHAPE,
                        "%s: [%g, %g) in steps of %g has %g elements; that is too "
                        "many",
                        op, start, stop, step, length);
    int64_t n = length > 0 ? (int64_t)length : 0;
    if (ct_dtype_is_integer(dtype)) {
        double first = trunc(start);
        step = trunc(start + step) - first;
        start = first;
    }
    return iota(op, d, n, start, step, dtype);
}

/* numpy.linspace: num values, start + i * (stop - start) / (num - 1), with the last one
 * exactly stop. num == 1 gives start; num == 0 an empty tensor. Integer dtypes truncate
 * toward zero (NumPy >= 1.20 floors: they differ on negative non-integral values). */
ct_tensor *ct_linspace(double start, double stop, int64_t num, ct_dtype dtype, ct_device device) {
    const char *op = "ct_linspace";
    ct_device d;
    if (!prepare(op, dtype, device, &d)) return NULL;
    if (num < 0)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: num is %lld; the number of values must be 0 or more", op,
                        (long long)num);
    double step = num > 1 ? (stop - start) / (double)(num - 1) : 0.0;
    ct_tensor *t = iota(op, d, num, start, step, dtype);
    if (!t || num < 2) return t;
    /* start + (num - 1) * step need not round to stop: write stop into the last element. */
    int64_t one = 1, unit = 1;
    ct_tensor *last = ct__tensor_view(t, dtype, 1, &one, &unit, t->offset + num - 1);
    ct_status status = last ? ct_fill(last, stop) : ct_last_status();
    ct_release(last);
    if (status != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

/* zeros, then ones written through a view of the diagonal (stride m + 1). */
ct_tensor *ct_eye(int64_t n, int64_t m, ct_dtype dtype, ct_device device) {
    const char *op = "ct_eye";
    ct_device d;
    if (!prepare(op, dtype, device, &d)) return NULL;
    if (n < 0 || m < 0)
        return ct__fail(CT_ERR_INVALID_ARG, "%s: sizes %lld x %lld; both must be 0 or more", op,
                        (long long)n, (long long)m);
    int64_t shape[2] = {n, m}, numel;
    if (ct__check_shape(op, 2, shape, &numel) != CT_OK) return NULL;
    ct_tensor *t = ct__full_on(d, 2, shape, 0.0, dtype);
    int64_t diag = n < m ? n : m, stride = m + 1;
    if (!t || diag == 0) return t;
    ct_tensor *view = ct__tensor_view(t, dtype, 1, &diag, &stride, t->offset);
    ct_status status = view ? ct_fill(view, 1.0) : ct_last_status();
    ct_release(view);
    if (status != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

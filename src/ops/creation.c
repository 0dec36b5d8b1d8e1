/* Creation of tensors from nothing or from host data: empty, zeros, ones, full, scalar,
 * from_data. (arange, linspace and eye live in creation_ranges.c; rand and randn in random_ops.c.)
 */
#include "core/transfer_impl.h"
#include "ops/op_impl.h"

/* Resolve the device and check dtype and shape; false with the error set. */
static bool prepare(const char *op, ct_device requested, ct_dtype dtype, int ndim,
                    const int64_t *shape, ct_device *device) {
    if (!ct_dtype_is_valid(dtype)) {
        ct__error(CT_ERR_DTYPE, "%s: invalid dtype %d; use one of CT_F32 .. CT_C128", op,
                  (int)dtype);
        return false;
    }
    int64_t numel;
    if (ct__check_shape(op, ndim, shape, &numel) != CT_OK) return false;
    return ct__resolve_device(op, requested, device) == CT_OK;
}

ct_tensor *ct_empty(int ndim, const int64_t *shape, ct_dtype dtype, ct_device device) {
    ct_device d;
    if (!prepare("ct_empty", device, dtype, ndim, shape, &d)) return NULL;
    return ct__tensor_new(d, dtype, ndim, shape);
}

/* ct_full under the name of the public function the user called, for its messages. */
static ct_tensor *full_named(const char *op, int ndim, const int64_t *shape, double value,
                             ct_dtype dtype, ct_device device) {
    ct_device d;
    if (!prepare(op, device, dtype, ndim, shape, &d)) return NULL;
    return ct__full_on(d, ndim, shape, value, dtype);
}

ct_tensor *ct_full(int ndim, const int64_t *shape, double value, ct_dtype dtype, ct_device device) {
    return full_named("ct_full", ndim, shape, value, dtype, device);
}

ct_tensor *ct_zeros(int ndim, const int64_t *shape, ct_dtype dtype, ct_device device) {
    return full_named("ct_zeros", ndim, shape, 0.0, dtype, device);
}

ct_tensor *ct_ones(int ndim, const int64_t *shape, ct_dtype dtype, ct_device device) {
    return full_named("ct_ones", ndim, shape, 1.0, dtype, device);
}

ct_tensor *ct_scalar(double value, ct_dtype dtype, ct_device device) {
    return full_named("ct_scalar", 0, NULL, value, dtype, device);
}

ct_tensor *ct_from_data(const void *data, int ndim, const int64_t *shape, ct_dtype dtype,
                        ct_device device) {
    ct_device d;
    if (!prepare("ct_from_data", device, dtype, ndim, shape, &d)) return NULL;
    ct_tensor *t = ct__tensor_new(d, dtype, ndim, shape);
    if (!t) return NULL;
    int64_t numel = t->numel;
    size_t bytes = (size_t)numel * ct__dtype_size(dtype);
    if (bytes && !data) {
        ct_release(t);
        return ct__fail(CT_ERR_INVALID_ARG, "ct_from_data: data is NULL for %lld elements",
                        (long long)numel);
    }
    if (ct__transfer(&d, t->storage->data, NULL, data, bytes, false, "ct_from_data") != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

/* Helpers shared by the nn ops (see nn_impl.h). */
#include <stdio.h>

#include "ops/nn_impl.h"

bool ct__nn_check_float(const char *op, const ct_tensor *t, int position) {
    if (ct_dtype_is_floating(t->dtype)) return true;
    ct__error(CT_ERR_DTYPE,
              "%s: argument %d has dtype %s; this function takes floating tensors (CT_F32, "
              "CT_F64, CT_F16 or CT_BF16): convert it with ct_cast",
              op, position, ct_dtype_name(t->dtype));
    return false;
}

bool ct__nn_check_index(const char *op, const ct_tensor *t, const char *what) {
    if (t->dtype == CT_I32 || t->dtype == CT_I64) return true;
    ct__error(CT_ERR_DTYPE,
              "%s: the %s has dtype %s; it must be CT_I32 or CT_I64 (convert it "
              "with ct_cast)",
              op, what, ct_dtype_name(t->dtype));
    return false;
}

ct_tensor *ct__nn_operand(const ct_tensor *t, ct_dtype dtype, ct_device device, const char *op) {
    ct_tensor *on = ct__operand_on(t, device, op);
    ct_tensor *cast = on ? ct_cast(on, dtype) : NULL;
    ct_release(on);
    ct_tensor *out = cast ? ct_contiguous(cast) : NULL;
    ct_release(cast);
    return out;
}

int64_t ct__nn_numel(const int64_t *shape, int from, int to) {
    int64_t n = 1;
    for (int d = from; d < to; d++) n *= shape[d];
    return n;
}

ct_tensor *ct__nn_alias(const ct_tensor *t) {
    return ct__tensor_view(t, t->dtype, t->ndim, t->shape, t->strides, t->offset);
}

ct_status ct__nn_prefix_error(const char *op) {
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    return ct__error(ct_last_status(), "%s: %s", op, message);
}

/* PLACEHOLDER until the unary kernels land: replace this whole file. */
#include "backend/cpu/cpu_impl.h"
#include "core/error_impl.h"

ct_status ct__cpu_unary(int device, ct_unary_op op, const ct_ew_args *args, double p0, double p1) {
    (void)device;(void)op;(void)args;(void)p0;(void)p1;
    return ct__error(CT_ERR_UNSUPPORTED, "unary kernels are not implemented yet");
}

/* PLACEHOLDER until the binary kernels land: replace this whole file. */
#include "backend/cpu/cpu_impl.h"
#include "core/error_impl.h"

ct_status ct__cpu_binary(int device, ct_binary_op op, const ct_ew_args *args) {
    (void)device;(void)op;(void)args;
    return ct__error(CT_ERR_UNSUPPORTED, "binary kernels are not implemented yet");
}

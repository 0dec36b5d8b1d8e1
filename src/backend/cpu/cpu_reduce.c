/* PLACEHOLDER until the reduce kernels land: replace this whole file. */
#include "backend/cpu/cpu_impl.h"
#include "core/error_impl.h"

ct_status ct__cpu_reduce(int device, ct_reduce_op op, const ct_reduce_args *args) {
    (void)device;(void)op;(void)args;
    return ct__error(CT_ERR_UNSUPPORTED, "reduce kernels are not implemented yet");
}

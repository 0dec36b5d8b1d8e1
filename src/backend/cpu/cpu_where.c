/* PLACEHOLDER until the where kernels land: replace this whole file. */
#include "backend/cpu/cpu_impl.h"
#include "core/error_impl.h"

ct_status ct__cpu_where(int device, const ct_ew_args *args) {
    (void)device;(void)args;
    return ct__error(CT_ERR_UNSUPPORTED, "where kernels are not implemented yet");
}

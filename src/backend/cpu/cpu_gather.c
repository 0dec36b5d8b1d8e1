/* PLACEHOLDER until the gather kernels land: replace this whole file. */
#include "backend/cpu/cpu_impl.h"
#include "core/error_impl.h"

ct_status ct__cpu_gather(int device, const ct_gather_args *args) {
    (void)device;(void)args;
    return ct__error(CT_ERR_UNSUPPORTED, "gather kernels are not implemented yet");
}

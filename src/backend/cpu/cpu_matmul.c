/* PLACEHOLDER until the matmul kernels land: replace this whole file. */
#include "backend/cpu/cpu_impl.h"
#include "core/error_impl.h"

ct_status ct__cpu_matmul(int device, const ct_matmul_args *args) {
    (void)device;(void)args;
    return ct__error(CT_ERR_UNSUPPORTED, "matmul kernels are not implemented yet");
}

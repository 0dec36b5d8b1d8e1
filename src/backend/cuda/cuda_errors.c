/* The CUDA plugin's error reporting: messages go to the core through the host services, and
 * every CUDA call is checked by CT_CUDA_CHECK, which names the statement, file:line, device
 * and CUDA's own message. */
#include <stdarg.h>
#include <stdio.h>

#include "backend/cuda/cuda_impl.h"

const ct__plugin_host *ct_cuda_host;

ct_status ct_cuda_fail(ct_status status, const char *fmt, ...) {
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return ct_cuda_host ? ct_cuda_host->set_error(status, message) : status;
}

ct_status ct_cuda_check_result(cudaError_t result, const char *statement, const char *file,
                               int line, int device) {
    /* Reset the runtime's last error (a non-sticky one), so a later check of
     * cudaGetLastError() after a kernel launch does not report this one again. */
    (void)cudaGetLastError();
    ct_status status = result == cudaErrorMemoryAllocation ? CT_ERR_OUT_OF_MEMORY : CT_ERR_BACKEND;
    return ct_cuda_fail(status, "CUDA error on cuda:%d at %s:%d in %s: %s (%s)", device, file, line,
                        statement, cudaGetErrorString(result), cudaGetErrorName(result));
}

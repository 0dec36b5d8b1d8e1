/* The one probe of the NVIDIA driver (cuda_driver.c), for the registry's CUDA row and, as a
 * host service, for the CUDA plugin. */
#ifndef CT_CUDA_DRIVER_IMPL_H
#define CT_CUDA_DRIVER_IMPL_H

#include <stdbool.h>
#include <stddef.h>

/* Whether libcuda.so.1 loads (ct_cuda_get_driver_info's answer); false with the reason, a
 * whole sentence that names the driver and what to do, in reason. */
bool ct__cuda_driver_present(char *reason, size_t size);

#endif

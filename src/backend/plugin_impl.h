/* The contract between the core library and a backend plugin (libctensor_cuda.so).
 *
 * The core's internal functions are hidden, so the plugin cannot call them; instead the
 * core passes a table of host services to the plugin's entry point. The plugin returns its
 * backend, or NULL with the reason written into `reason`. */
#ifndef CT_PLUGIN_IMPL_H
#define CT_PLUGIN_IMPL_H

#include <stddef.h>

#include "backend/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CT_PLUGIN_ABI_VERSION 1

typedef struct ct__plugin_host {
    int abi_version;
    /* Record a failure on the calling thread (ct_last_status / ct_last_error). */
    ct_status (*set_error)(ct_status status, const char *message);
    /* Send a message through the library's log hook. */
    void (*log)(ct_log_level level, const char *message);
} ct__plugin_host;

typedef const ct__backend_table *(*ct__plugin_entry_fn)(const ct__plugin_host *host, char *reason,
                                                        size_t reason_size);

#define CT_CUDA_PLUGIN_ENTRY "ct_cuda_plugin_entry"

/* A second export that needs no driver: the plugin's build facts (runtime version,
 * architectures) and the driver version it sees, for ct_cuda_get_build_info. Optional: a
 * plugin without it leaves those fields zero. */
typedef void (*ct__plugin_info_fn)(ct_cuda_build_info *out);

#define CT_CUDA_PLUGIN_INFO "ct_cuda_plugin_info"

/* Why CUDA is unusable when libcuda.so.1 does not load (%s: dlerror's text): the plugin
 * says it, and the core says it for the plugin without loading it (backend/registry.c). */
#define CT_NO_DRIVER_REASON                                                                        \
    "no NVIDIA driver: libcuda.so.1 cannot be loaded (%s); install the NVIDIA driver "             \
    "(nvidia-smi should then list the GPU)"

#ifdef __cplusplus
}
#endif
#endif

/* The contract between the core library and a device plugin (libctensor_cuda.so).
 *
 * The core's internal functions are hidden, so the plugin cannot call them; instead the
 * core passes a table of host services to the plugin's start. The plugin's entry
 * (CT_CUDA_PLUGIN_ENTRY, `const void *ENTRY(void)`) gives its ct__device_plugin_api, whose ABI
 * version the core's plugin loader checks (backend/plugin_load_impl.h). */
#ifndef CT_PLUGIN_IMPL_H
#define CT_PLUGIN_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 3: CT_MAX_DIMS 16 (the kernel argument structs' axis arrays doubled). */
#define CT_PLUGIN_ABI_VERSION 3

typedef struct ct__plugin_host {
    /* Record a failure on the calling thread (ct_last_status / ct_last_error). */
    ct_status (*set_error)(ct_status status, const char *message);
    /* Send a message through the library's log hook. */
    void (*log)(ct_log_level level, const char *message);
    /* Whether the NVIDIA driver (libcuda.so.1) loads: the core's one probe of it; false with
     * the reason (no NVIDIA driver, and what to do) in reason. */
    bool (*driver_present)(char *reason, size_t reason_size);
} ct__plugin_host;

typedef struct ct__device_plugin_api {
    int abi_version; /* CT_PLUGIN_ABI_VERSION, first as in every plugin's table */
    /* Starts the backend: its table, or NULL with the reason written into reason. */
    const ct__backend_table *(*start)(const ct__plugin_host *host, char *reason,
                                      size_t reason_size);
    /* Needs no driver and no start: the plugin's build facts (runtime version, architectures)
     * and the driver version it sees, for ct_cuda_get_build_info; leaves the path fields
     * alone. NULL: those fields stay zero. */
    void (*build_info)(ct_cuda_build_info *out);
} ct__device_plugin_api;

#define CT_CUDA_PLUGIN_ENTRY "ct_cuda_plugin_api"

#ifdef __cplusplus
}
#endif
#endif

/* A test-only stand-in for libctensor_cuda.so that simulates a driver too old for the
 * plugin's CUDA runtime: its start refuses with the reason the real plugin gives, and the
 * build info says runtime 13.0, driver 11.4. test_cli_doctor.sh points CT_CUDA_PLUGIN here. */
#include <stdio.h>

#include "backend/plugin_impl.h"

static const ct__backend_table *start(const ct__plugin_host *host, char *reason,
                                      size_t reason_size) {
    (void)host;
    snprintf(reason, reason_size,
             "the NVIDIA driver supports CUDA 11.4, the plugin was built with CUDA 13.0; update "
             "the NVIDIA driver (or build ctensor with a CUDA toolkit no newer than 11.4)");
    return NULL;
}

static void build_info(ct_cuda_build_info *out) {
    out->runtime_version = 13000;
    out->driver_version = 11040;
    snprintf(out->real_archs, sizeof out->real_archs, "80,90");
    snprintf(out->ptx_archs, sizeof out->ptx_archs, "90");
}

static const ct__device_plugin_api api = {CT_PLUGIN_ABI_VERSION, start, build_info};

__attribute__((visibility("default"))) const void *ct_cuda_plugin_api(void) { return &api; }

/* The NVIDIA driver probe: libcuda.so.1 opened once per process, and cuDriverGetVersion from
 * it, without linking CUDA. The library stays loaded: CUDA's libraries are not all made to be
 * unloaded from a running process, and the CUDA plugin loads it again anyway. Opening a
 * missing library costs a search of the loader's path, well under a millisecond, so "is CUDA
 * available" asks this before loading the plugin (registry.c). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "backend/cuda_driver_impl.h"
#include "core/error_impl.h"
#include "ctensor/device.h"

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static ct_cuda_driver_info driver;

static void probe(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) {
        const char *error = dlerror();
        snprintf(driver.error, sizeof driver.error, "%s", error ? error : "not found");
        return;
    }
    driver.loaded = true;
    int (*get_version)(int *);
    *(void **)&get_version = dlsym(lib, "cuDriverGetVersion");
    if (!get_version || get_version(&driver.version) != 0) driver.version = 0;
}

ct_status ct_cuda_get_driver_info(ct_cuda_driver_info *out) {
    if (!out) return ct__error(CT_ERR_INVALID_ARG, "ct_cuda_get_driver_info: out is NULL");
    pthread_once(&probe_once, probe);
    *out = driver;
    return CT_OK;
}

bool ct__cuda_driver_present(char *reason, size_t size) {
    pthread_once(&probe_once, probe);
    if (driver.loaded) return true;
    snprintf(reason, size,
             "no NVIDIA driver: libcuda.so.1 cannot be loaded (%s); install the NVIDIA driver "
             "(nvidia-smi should then list the GPU)",
             driver.error);
    return false;
}

/* A CUDA device's UUID, for finding it in NVML: NVML numbers every GPU of the machine, CUDA
 * only those CUDA_VISIBLE_DEVICES shows (and in its own order), so the UUID is what they
 * share. Read through the driver API (libcuda.so.1, already loaded by the CUDA plugin where
 * there is a GPU): cuInit, cuDeviceGet (the ordinal as the CUDA runtime numbers the visible
 * devices) and cuDeviceGetUuid_v2 (CUDA 11.4 and later; a MIG instance gives its own UUID,
 * which NVML's GPU handles do not match). */
#include <dlfcn.h>

#include "gpu_usage.h"

bool gpu_usage_cuda_uuid(int ordinal, char *out, size_t size) {
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return false;
    int (*init)(unsigned int);
    int (*get)(int *, int);
    int (*uuid)(unsigned char *, int); /* CUuuid is 16 bytes */
    *(void **)&init = dlsym(lib, "cuInit");
    *(void **)&get = dlsym(lib, "cuDeviceGet");
    *(void **)&uuid = dlsym(lib, "cuDeviceGetUuid_v2");
    unsigned char b[16];
    int device;
    /* CUDA_SUCCESS is 0. lib stays loaded: the plugin holds it too. */
    if (!init || !get || !uuid || init(0) != 0 || get(&device, ordinal) != 0 ||
        uuid(b, device) != 0)
        return false;
    snprintf(out, size, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return true;
}

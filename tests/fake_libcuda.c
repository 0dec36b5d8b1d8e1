/* A test-only libcuda.so.1, built into its own folder and reached only through
 * LD_LIBRARY_PATH. cuDriverGetVersion reports CUDA 11.4: with fake_cuda_plugin.c it makes the
 * "driver too old" case of `ctensor doctor` on a machine without a GPU. cuInit, cuDeviceGet
 * and cuDeviceGetUuid_v2 give the one device of the fake GPU the UUID of fake_nvml.c's second
 * GPU (bytes 00..00 a1), so that the command finds it in NVML by UUID. */
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int cuDriverGetVersion(int *version);
EXPORT int cuInit(unsigned int flags);
EXPORT int cuDeviceGet(int *device, int ordinal);
EXPORT int cuDeviceGetUuid_v2(unsigned char uuid[16], int device);

/* CUDA_SUCCESS and CUDA_ERROR_INVALID_DEVICE. */
enum { SUCCESS = 0, INVALID_DEVICE = 101 };

int cuDriverGetVersion(int *version) {
    *version = 11040;
    return SUCCESS;
}

int cuInit(unsigned int flags) { return flags == 0 ? SUCCESS : 1; }

int cuDeviceGet(int *device, int ordinal) {
    if (ordinal != 0) return INVALID_DEVICE;
    *device = ordinal;
    return SUCCESS;
}

int cuDeviceGetUuid_v2(unsigned char uuid[16], int device) {
    if (device != 0) return INVALID_DEVICE;
    memset(uuid, 0, 16);
    uuid[15] = 0xa1;
    return SUCCESS;
}

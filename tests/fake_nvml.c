/* A test-only libnvidia-ml.so.1 (NVML) with two GPUs of fixed figures, for `ctensor devices`,
 * `doctor` and `train` on machines without a GPU (tests/test_cli_gpu_usage.sh, through
 * CT_NVML_LIBRARY). The fake driver (fake_libcuda.c) gives CUDA device 0 the UUID of the
 * second GPU here, as CUDA_VISIBLE_DEVICES=1 would: figures of the first GPU would show that
 * the command matched the GPUs by index instead of by UUID. FAKE_NVML_INIT_FAILS=1 makes
 * nvmlInit_v2 fail as it does without the kernel module. Signatures as in NVIDIA's NVML API
 * reference; only what the command calls. */
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
    const char *uuid;
    unsigned int utilization, memory_utilization;
    unsigned long long total, used;
    unsigned int milliwatts;
} fake_gpu;

/* NVML_SUCCESS, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_FOUND, NVML_ERROR_DRIVER_NOT_LOADED. */
enum { SUCCESS = 0, INVALID_ARGUMENT = 2, NOT_FOUND = 6, DRIVER_NOT_LOADED = 9 };

static const fake_gpu gpus[2] = {
    {"GPU-00000000-0000-0000-0000-0000000000a0", 99, 50, 80ULL << 30, 79ULL << 30, 400000},
    {"GPU-00000000-0000-0000-0000-0000000000a1", 20, 5, 141ULL << 30, 3ULL << 30, 123000},
};

typedef struct {
    unsigned int gpu, memory;
} nvml_utilization;
typedef struct {
    unsigned long long total, free, used;
} nvml_memory;

EXPORT int nvmlInit_v2(void);
EXPORT const char *nvmlErrorString(int status);
EXPORT int nvmlDeviceGetHandleByUUID(const char *uuid, const fake_gpu **device);
EXPORT int nvmlDeviceGetUtilizationRates(const fake_gpu *device, nvml_utilization *out);
EXPORT int nvmlDeviceGetMemoryInfo(const fake_gpu *device, nvml_memory *out);
EXPORT int nvmlDeviceGetPowerUsage(const fake_gpu *device, unsigned int *milliwatts);

int nvmlInit_v2(void) {
    const char *fails = getenv("FAKE_NVML_INIT_FAILS");
    return fails && strcmp(fails, "1") == 0 ? DRIVER_NOT_LOADED : SUCCESS;
}

const char *nvmlErrorString(int status) {
    return status == DRIVER_NOT_LOADED ? "Driver Not Loaded" : "Unknown Error";
}

int nvmlDeviceGetHandleByUUID(const char *uuid, const fake_gpu **device) {
    if (!uuid || !device) return INVALID_ARGUMENT;
    for (int i = 0; i < 2; i++)
        if (strcmp(uuid, gpus[i].uuid) == 0) {
            *device = &gpus[i];
            return SUCCESS;
        }
    return NOT_FOUND;
}

int nvmlDeviceGetUtilizationRates(const fake_gpu *device, nvml_utilization *out) {
    if (!device || !out) return INVALID_ARGUMENT;
    out->gpu = device->utilization;
    out->memory = device->memory_utilization;
    return SUCCESS;
}

int nvmlDeviceGetMemoryInfo(const fake_gpu *device, nvml_memory *out) {
    if (!device || !out) return INVALID_ARGUMENT;
    out->total = device->total;
    out->used = device->used;
    out->free = device->total - device->used;
    return SUCCESS;
}

int nvmlDeviceGetPowerUsage(const fake_gpu *device, unsigned int *milliwatts) {
    if (!device || !milliwatts) return INVALID_ARGUMENT;
    *milliwatts = device->milliwatts;
    return SUCCESS;
}

/* A test-only libnvidia-ml.so.1 (NVML) with two GPUs of fixed figures, for `ctensor devices`,
 * `doctor` and `train` on machines without a GPU (tests/test_cli_gpu_usage.sh, through
 * CT_NVML_LIBRARY). The second GPU here is the fake GPU's device 0 (its UUID by
 * fake_gpu_uuid.h), as CUDA_VISIBLE_DEVICES=1 would make it: figures of the first GPU would
 * show that the command matched the GPUs by index instead of by UUID. FAKE_NVML_INIT_FAILS=1 makes
 * nvmlInit_v2 fail as it does without the kernel module; FAKE_NVML_READING_HANGS=1 makes the
 * utilisation reading never return, as a hung driver's. Signatures as in NVIDIA's NVML API
 * reference; only what the command calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_gpu_uuid.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct {
    char uuid[48];
    unsigned int utilization, memory_utilization;
    unsigned long long total, used;
    unsigned int milliwatts;
} fake_gpu;

/* NVML_SUCCESS, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_FOUND, NVML_ERROR_DRIVER_NOT_LOADED. */
enum { SUCCESS = 0, INVALID_ARGUMENT = 2, NOT_FOUND = 6, DRIVER_NOT_LOADED = 9 };

static fake_gpu gpus[2] = {
    {"GPU-00000000-0000-0000-0000-0000000000a0", 99, 50, 80ULL << 30, 79ULL << 30, 400000},
    {"", 20, 5, 141ULL << 30, 3ULL << 30, 123000}, /* the fake GPU's device 0: nvmlInit_v2 */
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
    if (fails && strcmp(fails, "1") == 0) return DRIVER_NOT_LOADED;
    unsigned char b[16];
    const char text[] = FAKE_GPU_UUID_TEXT " 0";
    fake_gpu_uuid((const unsigned char *)text, sizeof text - 1, b);
    snprintf(gpus[1].uuid, sizeof gpus[1].uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
    return SUCCESS;
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
    const char *hang = getenv("FAKE_NVML_READING_HANGS");
    if (hang && strcmp(hang, "1") == 0)
        for (;;) pause(); /* a driver that does not answer: ends with the process */
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

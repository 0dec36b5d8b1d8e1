/* NVML, loaded with dlopen: the few types and functions the command uses are declared here, as
 * NVIDIA's NVML API reference gives them, so that the build needs no nvml.h. NVML is
 * initialised once (nvmlInit_v2) and stays so until the process ends, as the doctor's CUDA
 * libraries stay loaded. CT_NVML_LIBRARY, when set, names the only library tried: the tests
 * point it at a fake one (tests/fake_nvml.c), or at nothing, to make its absence. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_usage.h"

/* nvmlReturn_t: NVML_SUCCESS is 0. nvmlDevice_t: a pointer to an opaque struct. */
typedef int nvml_return;
typedef struct nvml_device_st *nvml_device;
#define NVML_SUCCESS 0
/* nvmlUtilization_t: percent of the last sample period with a kernel running (gpu), and with
 * device memory read or written (memory). */
typedef struct {
    unsigned int gpu, memory;
} nvml_utilization;
/* nvmlMemory_t (v1): bytes; used includes what the driver reserves. */
typedef struct {
    unsigned long long total, free, used;
} nvml_memory;

static struct {
    nvml_return (*init)(void);                                   /* nvmlInit_v2 */
    const char *(*error_string)(nvml_return);                    /* nvmlErrorString */
    nvml_return (*handle_by_uuid)(const char *, nvml_device *);  /* nvmlDeviceGetHandleByUUID */
    nvml_return (*utilization)(nvml_device, nvml_utilization *); /* ...GetUtilizationRates */
    nvml_return (*memory)(nvml_device, nvml_memory *);           /* ...GetMemoryInfo */
    nvml_return (*power)(nvml_device, unsigned int *);           /* ...GetPowerUsage (mW) */
} nvml;

static char reason[512] = "NVML was not looked for";
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static bool resolve(void *lib, const char *name, void **out) {
    *out = dlsym(lib, name);
    if (!*out) snprintf(reason, sizeof reason, "NVML lacks %s", name);
    return *out != NULL;
}

static void load(void) {
    const char *env = getenv("CT_NVML_LIBRARY");
    const char *path = env && *env ? env : "libnvidia-ml.so.1";
    void *lib = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (!lib) {
        const char *error = dlerror();
        snprintf(reason, sizeof reason, "%s cannot be loaded: %s", path,
                 error ? error : "not found");
        return;
    }
    if (!resolve(lib, "nvmlInit_v2", (void **)&nvml.init) ||
        !resolve(lib, "nvmlErrorString", (void **)&nvml.error_string) ||
        !resolve(lib, "nvmlDeviceGetHandleByUUID", (void **)&nvml.handle_by_uuid) ||
        !resolve(lib, "nvmlDeviceGetUtilizationRates", (void **)&nvml.utilization) ||
        !resolve(lib, "nvmlDeviceGetMemoryInfo", (void **)&nvml.memory) ||
        !resolve(lib, "nvmlDeviceGetPowerUsage", (void **)&nvml.power)) {
        nvml.init = NULL;
        return;
    }
    nvml_return status = nvml.init();
    if (status != NVML_SUCCESS) {
        snprintf(reason, sizeof reason, "nvmlInit_v2 failed: %s", nvml.error_string(status));
        nvml.init = NULL;
        return;
    }
    reason[0] = '\0';
}

const char *gpu_usage_unavailable_reason(void) {
    pthread_once(&load_once, load);
    return reason;
}

/* Each physical CUDA device's NVML device, looked up once. */
#define MAX_GPUS 64
struct gpu_usage_gpu {
    bool looked_up, found;
    nvml_device handle;
};
static struct gpu_usage_gpu gpus[MAX_GPUS];
static pthread_mutex_t gpus_lock = PTHREAD_MUTEX_INITIALIZER;

static bool physical_index(ct_device device, int *out) {
    ct_device_properties p;
    if (ct_device_is_host(device)) return false;
    if (ct_device_info(device, &p) != CT_OK) {
        ct_clear_error();
        return false;
    }
    *out = p.physical_index;
    return p.physical_index >= 0 && p.physical_index < MAX_GPUS;
}

gpu_usage_gpu *gpu_usage_find(ct_device device) {
    int index;
    if (!physical_index(device, &index) || gpu_usage_unavailable_reason()[0]) return NULL;
    pthread_mutex_lock(&gpus_lock);
    gpu_usage_gpu *gpu = &gpus[index];
    if (!gpu->looked_up) {
        char uuid[96];
        gpu->looked_up = true;
        gpu->found = gpu_usage_cuda_uuid(device, uuid, sizeof uuid) &&
                     nvml.handle_by_uuid(uuid, &gpu->handle) == NVML_SUCCESS;
    }
    pthread_mutex_unlock(&gpus_lock);
    return gpu->found ? gpu : NULL;
}

bool gpu_usage_read(gpu_usage_gpu *gpu, gpu_usage *out) {
    *out = (gpu_usage){0};
    if (!gpu) return false;
    nvml_utilization rates;
    nvml_memory memory;
    unsigned int milliwatts;
    if (nvml.utilization(gpu->handle, &rates) == NVML_SUCCESS)
        out->has_utilization = true, out->utilization = rates.gpu;
    if (nvml.memory(gpu->handle, &memory) == NVML_SUCCESS)
        out->has_memory = true, out->memory_used = memory.used, out->memory_total = memory.total;
    if (nvml.power(gpu->handle, &milliwatts) == NVML_SUCCESS)
        out->has_power = true, out->power_watts = milliwatts / 1000.0;
    return out->has_utilization || out->has_memory || out->has_power;
}

static double gib(unsigned long long bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

const char *gpu_usage_text(const gpu_usage *u, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    if (u->has_utilization)
        used += (size_t)snprintf(buf + used, size - used, "%u%% busy", u->utilization);
    if (u->has_memory && used < size)
        used += (size_t)snprintf(buf + used, size - used, "%s%.1f of %.1f GiB in use",
                                 used ? ", " : "", gib(u->memory_used), gib(u->memory_total));
    if (u->has_power && used < size)
        snprintf(buf + used, size - used, "%s%.0f W", used ? ", " : "", u->power_watts);
    return buf;
}

void gpu_usage_json(FILE *out, const gpu_usage *u) {
    if (u->has_utilization)
        fprintf(out, ", \"utilization_percent\": %u", u->utilization);
    else
        fprintf(out, ", \"utilization_percent\": null");
    if (u->has_memory)
        fprintf(out, ", \"memory_used\": %llu, \"memory_total\": %llu", u->memory_used,
                u->memory_total);
    else
        fprintf(out, ", \"memory_used\": null, \"memory_total\": null");
    if (u->has_power)
        fprintf(out, ", \"power_watts\": %.1f", u->power_watts);
    else
        fprintf(out, ", \"power_watts\": null");
}

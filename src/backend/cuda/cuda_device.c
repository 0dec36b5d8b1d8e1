/* The CUDA plugin's entry point and discovery: finds the driver, compares its CUDA version
 * with the runtime the plugin was built with, counts the devices, checks each device's
 * architecture against the build's, and says in one line why CUDA cannot be used when it
 * cannot. Also the device properties and the ct__backend_table table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_core_impl.h"

/* CMake passes the build's architectures, e.g. "80,90" native code and "90" PTX; both
 * empty when it could not tell (CT_CUDA_ARCHITECTURES "native" or "all"). */
#ifndef CT_CUDA_REAL_ARCHS
#define CT_CUDA_REAL_ARCHS ""
#endif
#ifndef CT_CUDA_PTX_ARCHS
#define CT_CUDA_PTX_ARCHS ""
#endif

static int device_total;
static char unusable[CT_CUDA_MAX_DEVICES][256]; /* "" when the device can run the kernels */

int ct_cuda_device_total(void) { return device_total; }

const char *ct_cuda_unusable_reason(int device) {
    if (device < 0 || device >= device_total) return NULL;
    return unusable[device][0] ? unusable[device] : NULL;
}

/* "12.2" from CUDA's 12020. */
static void version_text(int version, char *buf, size_t size) {
    snprintf(buf, size, "%d.%d", version / 1000, version % 1000 / 10);
}

static bool no_device_reason(char *reason, size_t size, int driver) {
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    char dv[16];
    version_text(driver, dv, sizeof dv);
    if (visible)
        snprintf(reason, size,
                 "CUDA_VISIBLE_DEVICES=\"%s\" hides every GPU; unset it or list the index of "
                 "a GPU that nvidia-smi shows",
                 visible);
    else
        snprintf(reason, size,
                 "no CUDA device found: the NVIDIA driver (CUDA %s) is installed but reports "
                 "no GPU",
                 dv);
    return false;
}

/* Counts the devices; false with the reason when there are none or CUDA cannot start. */
static bool count_devices(int *count, char *reason, size_t size) {
    int driver = 0, runtime = 0;
    char dv[16], rv[16];
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    version_text(driver, dv, sizeof dv);
    version_text(runtime, rv, sizeof rv);
    cudaError_t err = cudaGetDeviceCount(count);
    (void)cudaGetLastError();
    if (err == cudaErrorInsufficientDriver && driver == 0) {
        snprintf(reason, size,
                 "no working NVIDIA driver: libcuda.so.1 is present but reports no CUDA "
                 "version (is the kernel module loaded? nvidia-smi tells)");
        return false;
    }
    if (err == cudaErrorNoDevice || (err == cudaSuccess && *count == 0))
        return no_device_reason(reason, size, driver);
    /* A driver of an older major version cannot run this runtime (within a major version,
     * CUDA's minor version compatibility lets it). */
    if (err == cudaErrorInsufficientDriver ||
        (err != cudaSuccess && driver / 1000 < runtime / 1000)) {
        snprintf(reason, size,
                 "the NVIDIA driver supports CUDA %s, the plugin was built with CUDA %s; update "
                 "the NVIDIA driver (or build ctensor with a CUDA toolkit no newer than %s)",
                 dv, rv, dv);
        return false;
    }
    if (err != cudaSuccess) {
        snprintf(reason, size,
                 "CUDA could not start: %s (%s); the driver supports CUDA %s, the plugin was "
                 "built with CUDA %s",
                 cudaGetErrorString(err), cudaGetErrorName(err), dv, rv);
        return false;
    }
    return true;
}

/* Whether a comma-separated list of architectures such as "80,90" holds one that runs
 * on compute capability major.minor: native code needs the same major and a minor no
 * higher; PTX needs an architecture no higher (the driver compiles it). */
static bool arch_list_covers(const char *list, int major, int minor, bool ptx) {
    const char *s = list;
    while (*s) {
        char *end;
        long arch = strtol(s, &end, 10);
        if (end == s) break;
        long cc = major * 10L + minor;
        if (ptx ? arch <= cc : (arch / 10 == major && arch % 10 <= minor)) return true;
        s = *end == ',' ? end + 1 : end;
    }
    return false;
}

/* Writes why device cannot run the kernels into unusable[device] ("" when it can). */
static void check_architecture(int device) {
    int major = 0, minor = 0;
    unusable[device][0] = '\0';
    if (!CT_CUDA_REAL_ARCHS[0] && !CT_CUDA_PTX_ARCHS[0]) return; /* not known: trust it */
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return; /* the first use will report what is wrong */
    }
    if (arch_list_covers(CT_CUDA_REAL_ARCHS, major, minor, false)) return;
    if (arch_list_covers(CT_CUDA_PTX_ARCHS, major, minor, true)) {
        char message[256];
        snprintf(message, sizeof message,
                 "cuda:%d (compute capability %d.%d) has no native code in this build and "
                 "runs its PTX (compute_%s) through the driver's JIT compiler: the first "
                 "launch of each kernel is slow; add %d%d-real to CT_CUDA_ARCHITECTURES",
                 device, major, minor, CT_CUDA_PTX_ARCHS, major, minor);
        ct_cuda_host->log(CT_LOG_INFO, message);
        return;
    }
    snprintf(unusable[device], sizeof unusable[device],
             "cuda:%d has compute capability %d.%d, which this build cannot run (native code "
             "for sm_%s, PTX for compute_%s); rebuild with "
             "-DCT_CUDA_ARCHITECTURES=\"%d%d-real\" added",
             device, major, minor, CT_CUDA_REAL_ARCHS,
             CT_CUDA_PTX_ARCHS[0] ? CT_CUDA_PTX_ARCHS : "none", major, minor);
}

/* Checks every device; false with the reason when none can run the kernels. Devices that
 * cannot are kept (their indices stay CUDA's) and fail on first use with the reason. */
static bool check_architectures(char *reason, size_t size) {
    int usable = 0;
    for (int d = 0; d < device_total; d++) {
        check_architecture(d);
        if (!unusable[d][0])
            usable++;
        else
            ct_cuda_host->log(CT_LOG_WARNING, unusable[d]);
    }
    if (usable > 0) return true;
    snprintf(reason, size, "no usable CUDA device: %s", unusable[0]);
    return false;
}

static int cuda_device_count(void) { return device_total; }

static ct_status cuda_properties(int device, ct_device_properties *out) {
    struct cudaDeviceProp prop;
    size_t free_bytes = 0, total_bytes = 0;
    CT_CUDA_CHECK(device, cudaGetDeviceProperties(&prop, device));
    ct_status status = ct_cuda_set_device(device);
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, cudaMemGetInfo(&free_bytes, &total_bytes));
    memset(out, 0, sizeof *out);
    out->device = (ct_device){CT_DEVICE_CUDA, device};
    snprintf(out->name, sizeof out->name, "%.*s", (int)sizeof out->name - 1, prop.name);
    out->memory_total = prop.totalGlobalMem;
    out->memory_free = free_bytes;
    out->compute_capability_major = prop.major;
    out->compute_capability_minor = prop.minor;
    out->multiprocessors = prop.multiProcessorCount;
    /* cudaDeviceProp::uuid: 16 bytes, the device's (a MIG instance's own under MIG). */
    memcpy(out->uuid, prop.uuid.bytes, sizeof out->uuid);
    _Static_assert(sizeof prop.uuid.bytes == sizeof out->uuid, "a CUDA UUID is 16 bytes");
    return CT_OK;
}

/* Every required slot's ct_cuda_NAME (a missing one fails the plugin's link, naming it), and
 * the optional slots the plugin defines. */
static const ct__kernel_table cuda_kernels = {
#define CT_CUDA_REQUIRED_(name, need, ...) CT_KERNEL_IF_##need(.name = ct_cuda_##name, )
    CT_KERNEL_SLOTS(CT_CUDA_REQUIRED_)
#undef CT_CUDA_REQUIRED_
#define CT_CUDA_OPTIONAL_(name) .name = ct_cuda_##name,
        CT_CUDA_OPTIONAL_SLOTS(CT_CUDA_OPTIONAL_)
#undef CT_CUDA_OPTIONAL_
};

static const ct__backend_table cuda_backend = {
    .name = "cuda",
    .type = CT_DEVICE_CUDA,
    .device_count = cuda_device_count,
    .properties = cuda_properties,
    .raw_alloc = ct_cuda_raw_alloc,
    .raw_free = ct_cuda_raw_free,
    .copy_to_host = ct_cuda_copy_to_host,
    .copy_from_host = ct_cuda_copy_from_host,
    .copy_between = ct_cuda_copy_between,
    .synchronize = ct_cuda_synchronize,
    .kernels = &cuda_kernels,
    .pinned_alloc = ct_cuda_pinned_alloc,
    .pinned_free = ct_cuda_pinned_free,
    .copy_from_pinned = ct_cuda_copy_from_pinned,
    .copy_to_pinned = ct_cuda_copy_to_pinned,
    .fence_done = ct_cuda_fence_done,
    .fence_free = ct_cuda_fence_free,
};

/* The driver library first (the core's probe): without it the runtime can only say
 * "insufficient driver". */
static const ct__backend_table *start(const ct__plugin_host *host, char *reason,
                                      size_t reason_size) {
    ct_cuda_host = host;
    int count = 0;
    if (!host->driver_present(reason, reason_size) || !count_devices(&count, reason, reason_size))
        return NULL;
    if (count > CT_CUDA_MAX_DEVICES) {
        char message[160];
        snprintf(message, sizeof message,
                 "%d CUDA devices found; ctensor uses the first %d (set CUDA_VISIBLE_DEVICES "
                 "to choose them)",
                 count, CT_CUDA_MAX_DEVICES);
        host->log(CT_LOG_WARNING, message);
        count = CT_CUDA_MAX_DEVICES;
    }
    device_total = count;
    if (!check_architectures(reason, reason_size)) return NULL;
    return &cuda_backend;
}

/* Needs no driver: the runtime version is fixed when the plugin is built, and
 * cudaDriverGetVersion gives 0 when there is no driver. Leaves the path fields alone. */
static void build_info(ct_cuda_build_info *out) {
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    (void)cudaGetLastError();
    out->runtime_version = CUDART_VERSION;
    out->driver_version = driver;
    snprintf(out->real_archs, sizeof out->real_archs, "%s", CT_CUDA_REAL_ARCHS);
    snprintf(out->ptx_archs, sizeof out->ptx_archs, "%s", CT_CUDA_PTX_ARCHS);
}

static const ct__device_plugin_api api = {CT_PLUGIN_ABI_VERSION, start, build_info};

__attribute__((visibility("default"))) const void *ct_cuda_plugin_api(void) { return &api; }

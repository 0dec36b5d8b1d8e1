/* The backend registry: the only place that knows which backends exist. The CPU backend is
 * built in; the CUDA backend is the plugin libctensor_cuda.so, loaded with dlopen on first
 * use, so one build runs on machines with and without a GPU, driver or CUDA runtime.
 *
 * The plugin exports `ct_cuda_plugin_entry` (backend/plugin_impl.h), which takes the
 * core's host services and returns its ct_backend or NULL with a reason. CT_CUDA_PLUGIN
 * names the plugin's path explicitly. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "backend/plugin_impl.h"
#include "core/device_impl.h"
#include "core/error_impl.h"

static ct_status host_set_error(ct_status status, const char *message) {
    return ct__error(status, "%s", message);
}

static void host_log(ct_log_level level, const char *message) { ct__log(level, "%s", message); }

static const ct_plugin_host plugin_host = {CT_PLUGIN_ABI_VERSION, host_set_error, host_log};

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static const ct_backend *cuda_backend;
static char cuda_reason[512];

/* The folder of the library holding this code, so the plugin is found beside it. */
static void plugin_path_beside_library(char *path, size_t size) {
    Dl_info info;
    path[0] = '\0';
    if (!dladdr((void *)plugin_path_beside_library, &info) || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    snprintf(path, size, "%.*s/libctensor_cuda.so", (int)(slash - info.dli_fname),
             info.dli_fname);
}

static void why_no_plugin(const char *tried) {
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver) dlclose(driver);
    snprintf(cuda_reason, sizeof cuda_reason,
             "the CUDA plugin libctensor_cuda.so was not built or not found (tried %s; build "
             "with -DCT_CUDA=ON or set CT_CUDA_PLUGIN)%s",
             tried, driver ? "" : "; no NVIDIA driver either: libcuda.so.1 not found");
}

static void load_cuda_plugin(void) {
    char beside[1024];
    const char *env = getenv("CT_CUDA_PLUGIN");
    plugin_path_beside_library(beside, sizeof beside);
    const char *candidates[2] = {env && *env ? env : beside, "libctensor_cuda.so"};
    void *handle = NULL;
    for (int i = 0; i < 2 && !handle; i++)
        if (candidates[i][0]) handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        why_no_plugin(candidates[0][0] ? candidates[0] : "libctensor_cuda.so");
        return;
    }
    ct_plugin_entry_fn entry;
    *(void **)&entry = dlsym(handle, CT_CUDA_PLUGIN_ENTRY);
    if (!entry) {
        snprintf(cuda_reason, sizeof cuda_reason,
                 "the CUDA plugin was found but is not a ctensor plugin (no "
                 "ct_cuda_plugin_entry symbol); rebuild it with this version of ctensor");
        dlclose(handle);
        return;
    }
    cuda_backend = entry(&plugin_host, cuda_reason, sizeof cuda_reason);
    if (cuda_backend && cuda_backend->device_count() == 0) {
        cuda_backend = NULL;
        if (!cuda_reason[0]) snprintf(cuda_reason, sizeof cuda_reason, "no CUDA device found");
    }
}

const ct_backend *ct__backend(ct_device_type type) {
    if (type == CT_DEVICE_CPU) return ct__cpu_backend();
    if (type == CT_DEVICE_CUDA) {
        pthread_once(&cuda_once, load_cuda_plugin);
        if (cuda_backend) return cuda_backend;
        return ct__fail(CT_ERR_DEVICE_UNAVAILABLE, "CUDA is unavailable: %s", cuda_reason);
    }
    return ct__fail(CT_ERR_INVALID_ARG, "invalid device type %d", (int)type);
}

bool ct__physical_device_present(ct_device_type type, int index, char *reason, size_t size) {
    if (type == CT_DEVICE_CPU) {
        if (index == 0) return true;
        snprintf(reason, size, "there is one physical CPU device (cpu:0)");
        return false;
    }
    pthread_once(&cuda_once, load_cuda_plugin);
    if (!cuda_backend) {
        snprintf(reason, size, "%s", cuda_reason);
        return false;
    }
    int count = cuda_backend->device_count();
    if (index < count) return true;
    snprintf(reason, size, "cuda:%d does not exist; %d CUDA device%s present", index, count,
             count == 1 ? " is" : "s are");
    return false;
}

bool ct_cuda_is_available(void) {
    pthread_once(&cuda_once, load_cuda_plugin);
    return cuda_backend != NULL;
}

const char *ct_cuda_unavailable_reason(void) {
    pthread_once(&cuda_once, load_cuda_plugin);
    return cuda_backend ? "" : cuda_reason;
}

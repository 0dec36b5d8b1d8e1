/* The backend registry: the only place that knows which backends exist. The CPU backend is
 * built in; the CUDA backend is the plugin libctensor_cuda.so, loaded with dlopen on first
 * use, so one build runs on machines with and without a GPU, driver or CUDA runtime.
 *
 * The plugin exports `ct_cuda_plugin_entry` (backend/plugin_impl.h), which takes the
 * core's host services and returns its ct__backend_table or NULL with a reason. CT_CUDA_PLUGIN
 * names the plugin's path explicitly.
 *
 * The plugin links the CUDA runtime, cuBLAS, cuDNN and NCCL: loading it costs 70-200 ms and
 * some 200 MB of resident memory, which a CPU-only machine should not pay to learn that it
 * has no GPU. So the question "is CUDA available" first looks for the driver (libcuda.so.1,
 * which is absent or tiny to open), and only with a driver loads the plugin; without one it
 * gives the reason the plugin would give. The plugin's build facts (ct_cuda_get_build_info,
 * for the doctor) still load it. A plugin named by CT_CUDA_PLUGIN is always loaded: it may
 * need no driver (the tests' fake GPUs). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend_impl.h"
#include "backend/plugin_impl.h"
#include "backend/plugin_load_impl.h"
#include "core/device_impl.h"
#include "core/error_impl.h"

static ct_status host_set_error(ct_status status, const char *message) {
    return ct__error(status, "%s", message);
}

static void host_log(ct_log_level level, const char *message) { ct__log(level, "%s", message); }

static const ct__plugin_host plugin_host = {CT_PLUGIN_ABI_VERSION, host_set_error, host_log};

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static pthread_once_t build_info_once = PTHREAD_ONCE_INIT;
static const ct__backend_table *cuda_backend;
static char cuda_reason[2048];
static ct_cuda_build_info cuda_build; /* what the plugin said of itself, and its path */
static bool plugin_skipped;           /* discovery gave the no-driver reason without it */

/* Why no plugin could be loaded, with dlerror()'s text: a plugin that exists but does not
 * load (a missing libcublas.so.13, say) is told apart from no plugin at all. */
static void why_no_plugin(const char *tried, const char *error, bool exists) {
    if (exists) {
        snprintf(cuda_reason, sizeof cuda_reason,
                 "the CUDA plugin %s could not be loaded: %s; install what it names (the CUDA "
                 "libraries the plugin was built with) or add their folder to LD_LIBRARY_PATH",
                 tried, error);
        return;
    }
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver) dlclose(driver);
    snprintf(cuda_reason, sizeof cuda_reason,
             "the CUDA plugin libctensor_cuda.so was not built or not found (tried %s: %s); "
             "build with -DCT_CUDA=ON or set CT_CUDA_PLUGIN to its path%s",
             tried, error, driver ? "" : "; no NVIDIA driver either: libcuda.so.1 not found");
}

/* CT_CUDA_PLUGIN, when set, is the only path tried: a plugin the user named is not
 * replaced silently by another. Otherwise the plugin beside this library, then the
 * loader's search path. */
static void *open_plugin(void) {
    char beside[1024], error[512], tried[1200];
    const char *env = getenv("CT_CUDA_PLUGIN");
    void *handle;
    if (env && *env) {
        snprintf(cuda_build.plugin_path, sizeof cuda_build.plugin_path, "%s", env);
        if (!(handle = ct__plugin_dlopen(env, RTLD_LOCAL, error, sizeof error)))
            snprintf(cuda_reason, sizeof cuda_reason,
                     "CT_CUDA_PLUGIN=\"%s\" names a CUDA plugin that cannot be loaded (%s); "
                     "point it at the libctensor_cuda.so of this build, or unset it",
                     env, error);
        return handle;
    }
    if (!ct__plugin_path_beside_library("libctensor_cuda.so", beside, sizeof beside))
        beside[0] = '\0';
    snprintf(cuda_build.plugin_path, sizeof cuda_build.plugin_path, "%s",
             beside[0] ? beside : "libctensor_cuda.so");
    if (beside[0] && access(beside, F_OK) == 0) {
        if (!(handle = ct__plugin_dlopen(beside, RTLD_LOCAL, error, sizeof error)))
            why_no_plugin(beside, error, true);
        return handle;
    }
    if ((handle = ct__plugin_dlopen("libctensor_cuda.so", RTLD_LOCAL, error, sizeof error)))
        return handle;
    /* dlerror names the plugin when it is not found, else what the plugin lacks. */
    bool exists = !strstr(error, "libctensor_cuda.so:");
    snprintf(tried, sizeof tried, "%s%sthe loader's search path", beside, beside[0] ? " and " : "");
    why_no_plugin(exists ? "libctensor_cuda.so (found on the loader's search path)" : tried, error,
                  exists);
    return NULL;
}

/* The plugin's own account of its build, which it gives without a driver. */
static void read_build_info(void *handle) {
    ct__plugin_info_fn info;
    Dl_info where;
    cuda_build.plugin_loaded = true;
    *(void **)&info = dlsym(handle, CT_CUDA_PLUGIN_INFO);
    void *symbol = dlsym(handle, CT_CUDA_PLUGIN_ENTRY);
    if (symbol && dladdr(symbol, &where) && where.dli_fname)
        snprintf(cuda_build.plugin_path, sizeof cuda_build.plugin_path, "%s", where.dli_fname);
    if (info) info(&cuda_build);
}

/* Whether the NVIDIA driver's library loads; if not, the plugin's own no-driver reason
 * (CT_NO_DRIVER_REASON) goes into cuda_reason. Opening a missing library costs a search of
 * the loader's path, well under a millisecond. */
static bool driver_loadable(void) {
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver) {
        dlclose(driver);
        return true;
    }
    const char *why = dlerror();
    snprintf(cuda_reason, sizeof cuda_reason, CT_NO_DRIVER_REASON, why ? why : "not found");
    return false;
}

static void load_cuda_plugin(void) {
    /* The ABI check is the plugin's: its entry refuses a host of another version. */
    ct__plugin p = {.what = "the CUDA plugin", .handle = open_plugin()};
    if (!p.handle) return;
    snprintf(p.path, sizeof p.path, "%s", cuda_build.plugin_path);
    if (!ct__plugin_find_entry(&p, CT_CUDA_PLUGIN_ENTRY)) {
        snprintf(cuda_reason, sizeof cuda_reason, "%.*s", (int)sizeof cuda_reason - 1, p.error);
        return;
    }
    ct__plugin_entry_fn entry;
    *(void **)&entry = p.entry;
    cuda_backend = entry(&plugin_host, cuda_reason, sizeof cuda_reason);
    read_build_info(p.handle);
    if (cuda_backend && cuda_backend->device_count() == 0) {
        cuda_backend = NULL;
        if (!cuda_reason[0]) snprintf(cuda_reason, sizeof cuda_reason, "no CUDA device found");
    }
}

/* A plugin beside this library on a machine without a driver would say only that there is
 * no driver: say it without loading the plugin. Otherwise (a driver, CT_CUDA_PLUGIN, or no
 * plugin beside this library, whose reason names the plugin) load as usual. */
static bool plugin_needless(void) {
    const char *env = getenv("CT_CUDA_PLUGIN");
    if (env && *env) return false;
    char beside[1024];
    if (!ct__plugin_path_beside_library("libctensor_cuda.so", beside, sizeof beside) ||
        access(beside, F_OK) != 0 || driver_loadable()) {
        cuda_reason[0] = '\0';
        return false;
    }
    snprintf(cuda_build.plugin_path, sizeof cuda_build.plugin_path, "%s", beside);
    return true;
}

static void discover_cuda(void) {
    plugin_skipped = plugin_needless();
    if (!plugin_skipped) load_cuda_plugin();
}

/* For the build facts: the plugin that discovery skipped is opened now (its entry is not
 * called: without a driver it would fail with the reason already given). */
static void load_build_info(void) {
    pthread_once(&cuda_once, discover_cuda);
    if (!plugin_skipped) return;
    char error[512];
    void *handle = ct__plugin_dlopen(cuda_build.plugin_path, RTLD_LOCAL, error, sizeof error);
    if (handle) {
        read_build_info(handle);
        return;
    }
    char path[sizeof cuda_build.plugin_path];
    snprintf(path, sizeof path, "%s", cuda_build.plugin_path);
    why_no_plugin(path, error, true);
}

const ct__backend_table *ct__backend(ct_device_type type) {
    if (type == CT_DEVICE_CPU) return ct__cpu_backend();
    if (type == CT_DEVICE_CUDA) {
        pthread_once(&cuda_once, discover_cuda);
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
    pthread_once(&cuda_once, discover_cuda);
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
    pthread_once(&cuda_once, discover_cuda);
    return cuda_backend != NULL;
}

const char *ct_cuda_unavailable_reason(void) {
    pthread_once(&cuda_once, discover_cuda);
    return cuda_backend ? "" : cuda_reason;
}

ct_status ct_cuda_get_build_info(ct_cuda_build_info *out) {
    if (!out) return ct__error(CT_ERR_INVALID_ARG, "ct_cuda_get_build_info: out is NULL");
    pthread_once(&build_info_once, load_build_info);
    *out = cuda_build;
    return CT_OK;
}

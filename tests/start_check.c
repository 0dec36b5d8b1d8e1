/* The cheap start (backend/registry.c): a program linked with libctensor.so, whose CUDA
 * plugin lies beside it, asks for "auto" on a machine without an NVIDIA driver. It must get
 * the CPU with the plugin's own no-driver reason, without the plugin and the CUDA libraries
 * being loaded (they cost some 200 MB and 100 ms); the build facts (the doctor's) must still
 * come from the plugin. Runs without CT_CUDA_PLUGIN, which would load the named plugin.
 * Usage: start_check [PATH/libctensor_cuda.so]   (none or "": built without the plugin) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor/ctensor.h>

/* Whether a library of this name is already in the process (RTLD_NOLOAD loads nothing). */
static bool loaded(const char *name) {
    void *handle = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (handle) dlclose(handle);
    return handle != NULL;
}

static int check(const char *name, bool ok, const char *why) {
    printf(ok ? "PASS %s\n" : "FAIL %s: %s\n", name, why);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    bool built = argc > 1 && argv[1][0]; /* CMake passes "" without the plugin */
    if (driver || !built || getenv("CT_CUDA_PLUGIN")) {
        printf("SKIP test_start_auto_without_driver: %s\n",
               driver   ? "this machine has an NVIDIA driver"
               : !built ? "built without the CUDA plugin"
                        : "CT_CUDA_PLUGIN is set");
        printf("0 passed, 0 failed, 1 skipped\n");
        return 0;
    }
    ct_device device = {CT_DEVICE_CUDA, 0};
    int failed = 0;
    bool picked_cpu = ct_device_parse("auto", &device) == CT_OK && device.type == CT_DEVICE_CPU;
    failed += check("test_start_auto_picks_cpu", picked_cpu, "auto did not give cpu");
    const char *reason = ct_cuda_unavailable_reason();
    failed +=
        check("test_start_reason_names_driver",
              strstr(reason, "no NVIDIA driver: libcuda.so.1 cannot be loaded") == reason, reason);
    bool light = !loaded(argv[1]) && !loaded("libcudart.so.13") && !loaded("libcublas.so.13");
    failed += check("test_start_loads_no_cuda_library", light,
                    "the plugin or a CUDA library was loaded to learn there is no driver");
    ct_cuda_build_info info;
    bool facts = ct_cuda_get_build_info(&info) == CT_OK && info.plugin_loaded &&
                 info.runtime_version > 0 && strcmp(info.plugin_path, argv[1]) == 0;
    failed += check("test_start_build_info_from_plugin", facts, info.plugin_path);
    failed += check("test_start_reason_unchanged",
                    strstr(ct_cuda_unavailable_reason(), "no NVIDIA driver") == reason, reason);
    printf("%d passed, %d failed, 0 skipped\n", 5 - failed, failed);
    return failed != 0;
}

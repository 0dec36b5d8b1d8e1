/* `ctensor doctor`: checks, in order, what the GPU needs (driver, CUDA runtime, plugin,
 * libraries, visible devices, architectures, a run on each device against the CPU) and
 * what the CPU side has (doctor_host.c); one line each, the reason and fix for each
 * failure. Exit 0 when every device is usable, 1 when the GPU is not (the CPU is used),
 * 2 on a broken install. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor_impl.h"

static const char doctor_help[] =
    "usage: ctensor doctor [--json]\n\n"
    "Checks the NVIDIA driver, the CUDA runtime the plugin was built with, the plugin, cuBLAS,\n"
    "cuDNN and NCCL, the visible devices (CUDA_VISIBLE_DEVICES), each GPU's architecture\n"
    "against the build, a run on each GPU against the CPU, whether NVML reads each GPU's usage\n"
    "(which `ctensor train` reports), memory limits, CPU features, BLAS and threads. Each\n"
    "failed check says why and what to do.\n\n"
    "  --json   one JSON object: {\"checks\": [{name, ok, state, detail, fix}], \"status\",\n"
    "           \"device\", \"verdict\"}\n"
    "  --help   this text\n\n"
    "exit status: 0 every device usable; 1 the GPU is not (the CPU will be used); 2 a broken\n"
    "install, or a usage error (an unknown or repeated option: with --json the object is then\n"
    "{\"error\", \"status\": \"usage\"}); 1 also when writing the output fails\n";

void doctor_add(doctor_report *r, const char *name, check_state state, int fail_status,
                const char *fix, const char *fmt, ...) {
    if (r->count == DOCTOR_MAX_CHECKS) return;
    doctor_check *c = &r->checks[r->count++];
    va_list ap;
    snprintf(c->name, sizeof c->name, "%s", name);
    c->state = state;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
    snprintf(c->fix, sizeof c->fix, "%s",
             fix && (state == CHECK_FAIL || state == CHECK_WARN) ? fix : "");
    if (state == CHECK_FAIL && fail_status > r->status) {
        r->status = fail_status;
        snprintf(r->why, sizeof r->why, "%s", c->detail);
    }
}

/* "13.0" from CUDA's 13000. */
static const char *doctor_version_text(int version, char *buf, size_t size) {
    snprintf(buf, size, "%d.%d", version / 1000, version % 1000 / 10);
    return buf;
}

/* The library's probe of libcuda.so.1 and the CUDA version it supports. */
static void check_driver(doctor_report *r) {
    ct_cuda_driver_info driver;
    char text[16];
    ct_cuda_get_driver_info(&driver);
    if (!driver.loaded) {
        doctor_add(r, "NVIDIA driver", CHECK_FAIL, DOCTOR_NO_GPU,
                   "install the NVIDIA driver (nvidia-smi should then list the GPU)",
                   "libcuda.so.1 cannot be loaded: %s", driver.error);
        return;
    }
    int version = driver.version;
    if (version == 0)
        doctor_add(r, "NVIDIA driver", CHECK_FAIL, DOCTOR_NO_GPU,
                   "check that the kernel module is loaded (nvidia-smi tells) or reinstall the "
                   "driver",
                   "libcuda.so.1 loads but reports no CUDA version");
    else
        doctor_add(r, "NVIDIA driver", CHECK_PASS, DOCTOR_OK, NULL,
                   "libcuda.so.1 loaded; the driver supports CUDA %s",
                   doctor_version_text(version, text, sizeof text));
    r->driver = version;
}

/* A plugin that exists but does not load is a broken install; none at all, or
 * CT_CUDA_PLUGIN naming a missing file, means a CPU-only set-up. */
static void check_plugin(doctor_report *r, const ct_cuda_build_info *info) {
    const char *reason = ct_cuda_unavailable_reason();
    if (strstr(reason, "ABI version"))
        doctor_add(r, "CUDA plugin", CHECK_FAIL, DOCTOR_BROKEN,
                   "rebuild libctensor and the plugin from one ctensor version", "%s: %s",
                   info->plugin_path, reason);
    else if (info->plugin_loaded)
        doctor_add(r, "CUDA plugin", CHECK_PASS, DOCTOR_OK, NULL, "%s", info->plugin_path);
    else if (access(info->plugin_path, F_OK) == 0 || strstr(reason, "could not be loaded"))
        doctor_add(r, "CUDA plugin", CHECK_FAIL, DOCTOR_BROKEN,
                   "install what the error names, or add its folder to LD_LIBRARY_PATH",
                   "%s is present but fails to load: %s", info->plugin_path, reason);
    else
        doctor_add(r, "CUDA plugin", CHECK_FAIL, DOCTOR_NO_GPU,
                   getenv("CT_CUDA_PLUGIN")
                       ? "point CT_CUDA_PLUGIN at the libctensor_cuda.so of this build, or unset it"
                       : "build with -DCT_CUDA=ON (needs the CUDA toolkit) or set CT_CUDA_PLUGIN "
                         "to the path of libctensor_cuda.so",
                   "not found at %s: %s", info->plugin_path, reason);
}

/* Within a major version CUDA's minor version compatibility lets an older driver run the
 * runtime; across major versions it cannot. */
static void check_runtime(doctor_report *r, const ct_cuda_build_info *info) {
    char rv[16], dv[16], fix[256];
    int driver = r->driver ? r->driver : info->driver_version;
    if (!info->plugin_loaded || info->runtime_version == 0) {
        doctor_add(r, "CUDA runtime", CHECK_SKIP, DOCTOR_OK, NULL,
                   "not known: no CUDA plugin loaded to say which runtime it was built with");
        return;
    }
    doctor_version_text(info->runtime_version, rv, sizeof rv);
    doctor_version_text(driver, dv, sizeof dv);
    snprintf(fix, sizeof fix,
             "update the NVIDIA driver to one that supports CUDA %s (or build ctensor with a "
             "CUDA toolkit no newer than the driver supports)",
             rv);
    if (driver == 0)
        doctor_add(r, "CUDA runtime", CHECK_FAIL, DOCTOR_NO_GPU,
                   "install an NVIDIA driver that supports this CUDA version or newer",
                   "the plugin was built with CUDA %s; no driver to run it", rv);
    else if (driver / 1000 < info->runtime_version / 1000)
        doctor_add(r, "CUDA runtime", CHECK_FAIL, DOCTOR_NO_GPU, fix,
                   "the driver is too old: it supports CUDA %s, the plugin was built with CUDA "
                   "%s",
                   dv, rv);
    else
        doctor_add(r, "CUDA runtime", CHECK_PASS, DOCTOR_OK, NULL,
                   "the plugin was built with CUDA %s; the driver supports CUDA %s", rv, dv);
}

/* "a.b.c" from a library's version symbol, or a note on why there is none. */
static void library_version(void *lib, const char *soname, char *buf, size_t size) {
    snprintf(buf, size, "version not reported");
    if (strstr(soname, "cublas")) {
        int (*property)(int, int *);
        int v[3] = {0, 0, 0};
        *(void **)&property = dlsym(lib, "cublasGetProperty");
        /* libraryPropertyType: MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2. */
        if (property && property(0, &v[0]) == 0 && property(1, &v[1]) == 0 &&
            property(2, &v[2]) == 0)
            snprintf(buf, size, "version %d.%d.%d", v[0], v[1], v[2]);
    } else if (strstr(soname, "cudnn")) {
        size_t (*version)(void);
        *(void **)&version = dlsym(lib, "cudnnGetVersion");
        if (version) {
            size_t v = version(); /* major*10000 + minor*100 + patch since cuDNN 9 */
            snprintf(buf, size, "version %zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
        }
    } else {
        int (*version)(int *);
        int v = 0;
        *(void **)&version = dlsym(lib, "ncclGetVersion");
        if (version && version(&v) == 0) /* major*10000 + minor*100 + patch since 2.9 */
            snprintf(buf, size, "version %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    }
}

/* cuBLAS is needed by the plugin; cuDNN and NCCL are not used by ctensor yet, so their
 * absence is only a warning. */
static void check_library(doctor_report *r, const char *name, const char *soname, bool required) {
    void *lib = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
    char version[64], fix[160];
    if (!lib) {
        const char *error = dlerror();
        snprintf(fix, sizeof fix,
                 "install %s (part of the CUDA toolkit or its own package) or add its folder "
                 "to LD_LIBRARY_PATH",
                 name);
        doctor_add(r, name, required ? CHECK_FAIL : CHECK_WARN, DOCTOR_NO_GPU, fix,
                   "%s cannot be loaded: %s%s", soname, error ? error : "not found",
                   required ? "" : " (not used by ctensor yet)");
        return;
    }
    library_version(lib, soname, version, sizeof version);
    doctor_add(r, name, CHECK_PASS, DOCTOR_OK, NULL, "%s loaded, %s", soname, version);
}

static void check_visible(doctor_report *r) {
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    char shown[160];
    snprintf(shown, sizeof shown, "CUDA_VISIBLE_DEVICES%s%.100s%s", env ? "=\"" : " ",
             env ? env : "unset", env ? "\"" : "");
    if (ct_cuda_is_available()) {
        int n = ct_cli_list_devices(NULL, 0, true);
        doctor_add(r, "devices visible", CHECK_PASS, DOCTOR_OK, NULL, "%d CUDA device%s; %s", n,
                   n == 1 ? "" : "s", shown);
    } else if (env && (!env[0] || strstr(ct_cuda_unavailable_reason(), "CUDA_VISIBLE_DEVICES")))
        doctor_add(r, "devices visible", CHECK_FAIL, DOCTOR_NO_GPU,
                   "unset CUDA_VISIBLE_DEVICES or list the index of a GPU that nvidia-smi shows",
                   "none: %s hides every GPU%s", shown,
                   r->driver ? "" : " (and there is no driver either)");
    else
        doctor_add(r, "devices visible", CHECK_FAIL, DOCTOR_NO_GPU,
                   "fix the first failed check above",
                   "none: CUDA is unavailable (the failed checks above say why); %s", shown);
}

/* The log hook: the library's warnings become part of the report instead of stderr. */
static void collect_log(ct_log_level level, const char *message, void *user_data) {
    doctor_report *r = user_data;
    size_t used = strlen(r->log);
    if (level < CT_LOG_INFO || used + 3 >= sizeof r->log) return;
    snprintf(r->log + used, sizeof r->log - used, "%s%s", used ? "; " : "", message);
}

static const char *const state_names[] = {"pass", "fail", "warn", "skip"};
static const char *const state_marks[] = {"\u2713", "\u2717", "!", "-"};

static void print_text(const doctor_report *r, const char *device) {
    for (int i = 0; i < r->count; i++) {
        const doctor_check *c = &r->checks[i];
        printf("%s %s: %s\n", state_marks[c->state], c->name, c->detail);
        if (c->fix[0]) printf("    fix: %s\n", c->fix);
    }
    if (r->status == DOCTOR_OK)
        printf("\nevery device is usable; \"auto\" picks %s\n", device);
    else if (r->status == DOCTOR_NO_GPU)
        printf("\nthe GPU is not usable: %s\nthe CPU will be used (%s)\n", r->why, device);
    else
        printf("\nbroken install: %s\n", r->why);
}

static void print_json(const doctor_report *r, const char *device) {
    printf("{\"checks\": [");
    for (int i = 0; i < r->count; i++) {
        const doctor_check *c = &r->checks[i];
        printf("%s\n  {\"name\": ", i ? "," : "");
        ct_cli_json_string(stdout, c->name);
        printf(", \"ok\": %s, \"state\": \"%s\", \"detail\": ",
               c->state == CHECK_FAIL   ? "false"
               : c->state == CHECK_SKIP ? "null"
                                        : "true",
               state_names[c->state]);
        ct_cli_json_string(stdout, c->detail);
        printf(", \"fix\": ");
        ct_cli_json_string(stdout, c->fix[0] ? c->fix : NULL);
        printf("}");
    }
    printf("\n ],\n \"status\": %d,\n \"device\": ", r->status);
    ct_cli_json_string(stdout, device);
    printf(",\n \"verdict\": ");
    if (r->status == DOCTOR_OK)
        ct_cli_json_string(stdout, "every device is usable");
    else if (r->status == DOCTOR_NO_GPU)
        ct_cli_json_string(stdout, "the GPU is not usable; the CPU will be used");
    else
        ct_cli_json_string(stdout, "broken install");
    printf(",\n \"reason\": ");
    ct_cli_json_string(stdout, r->status == DOCTOR_OK ? NULL : r->why);
    printf("\n}\n");
}

int ct_cli_doctor(int argc, char **argv) {
    static doctor_report report;
    bool json;
    if (argc == 2 && strcmp(argv[1], "--sgemm-probe") == 0) return doctor_sgemm_probe();
    int status = ct_cli_parse_flags(argc, argv, &json, doctor_help);
    if (status >= 0) return status;
    ct_cuda_build_info info;
    ct_set_log_hook(collect_log, &report);
    check_driver(&report);
    ct_cuda_get_build_info(&info);
    check_plugin(&report, &info);
    check_runtime(&report, &info);
    check_library(&report, "cuBLAS", "libcublas.so.13", true);
    check_library(&report, "cuDNN", "libcudnn.so.9", false);
    check_library(&report, "NCCL", "libnccl.so.2", false);
    check_visible(&report);
    doctor_check_gpus(&report, &info);
    doctor_check_memory(&report);
    doctor_check_cpu(&report);
    if (report.log[0])
        doctor_add(&report, "library messages", CHECK_WARN, DOCTOR_OK,
                   "act on what they say; they do not stop ctensor", "%s", report.log);
    ct_set_log_hook(NULL, NULL);
    /* The library's own reason says best why CUDA is unusable, and is given even when each
     * check of a part of the GPU path passed. */
    if (report.status <= DOCTOR_NO_GPU && !ct_cuda_is_available()) {
        report.status = DOCTOR_NO_GPU;
        snprintf(report.why, sizeof report.why, "%s", ct_cuda_unavailable_reason());
    }
    ct_device device = CT_CPU;
    char picked[32];
    if (ct_device_parse("auto", &device) != CT_OK) device = CT_CPU;
    ct_device_str(device, picked, sizeof picked);
    if (json)
        print_json(&report, picked);
    else
        print_text(&report, picked);
    ct_cli_result_printed();
    return report.status;
}

/* What `ctensor devices` and `ctensor doctor` share: flag parsing, a JSON string writer, the
 * CPU's SIMD features and the BLAS library with its thread counts. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_impl.h"
#include "ctensor/ctensor.h"

bool ct_cli_parse_int(const char *text, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

int ct_cli_parse_flags(int argc, char **argv, bool *json, const char *help) {
    *json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            if (*json)
                return ct_cli_usage_error("--json is given twice: give it once (see ctensor %s "
                                          "--help)",
                                          argv[0]);
            *json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(help, stdout);
            return CT_CLI_OK;
        } else {
            return ct_cli_usage_error("unknown option \"%s\" (try ctensor %s --help)", argv[i],
                                      argv[0]);
        }
    }
    return -1;
}

void ct_cli_json_string(FILE *out, const char *s) {
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            /* Other control characters must be escaped; bytes >= 0x80 pass through as UTF-8. */
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* Whether the "flags" line of /proc/cpuinfo holds flag as a whole word: the kernel lists
 * only what the CPU has and the OS has enabled (AVX-512 needs both). */
static bool has_flag(const char *flags, const char *flag) {
    size_t n = strlen(flag);
    for (const char *p = strstr(flags, flag); p; p = strstr(p + 1, flag))
        if ((p == flags || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':') &&
            (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

void ct_cli_cpu_info(ct_cli_cpu *out) {
    static char line[8192];
    memset(out, 0, sizeof *out);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->cores = cores > 0 ? (int)cores : 1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            out->avx2 = has_flag(line, "avx2");
            out->avx512f = has_flag(line, "avx512f");
            out->avx512_bf16 = has_flag(line, "avx512_bf16");
            out->f16c = has_flag(line, "f16c");
            out->fma = has_flag(line, "fma");
            break;
        }
    if (f) fclose(f);
    snprintf(out->features, sizeof out->features, "%s%s%s%s%s", out->avx2 ? "AVX2 " : "",
             out->avx512f ? "AVX-512F " : "", out->avx512_bf16 ? "AVX512_BF16 " : "",
             out->f16c ? "F16C " : "", out->fma ? "FMA " : "");
    size_t n = strlen(out->features);
    if (n > 0)
        out->features[n - 1] = '\0';
    else
        snprintf(out->features, sizeof out->features, "none of AVX2, AVX-512F, F16C, FMA");
}

void ct_cli_cpu_bf16(char *out, size_t size) {
    if (!ct_cpu_has_native_bf16())
        snprintf(out, size,
                 "emulated in f32 (no AVX512_BF16/AMX, or a build without oneDNN): "
                 "--amp bf16 is correct but slower than f32 here");
    else if (ct_cpu_bf16_speedup() > 1.0)
        snprintf(out, size,
                 "native, faster than f32 (bf16 products at %.2fx the f32 rate): "
                 "--amp bf16 runs on the bf16 units (oneDNN)",
                 ct_cpu_bf16_speedup());
    else if (ct_cpu_has_fast_bf16())
        snprintf(out, size, "native, on AMX-BF16 tiles (oneDNN): faster than f32");
    else
        snprintf(out, size,
                 "native but slower than f32 (bf16 products at %.2fx the f32 rate, "
                 "no AMX): --amp bf16 is correct but slower than f32 here, and --amp "
                 "auto keeps f32",
                 ct_cpu_bf16_speedup());
}

/* The OpenMP thread count from the CPU device's name, "host CPU (N OpenMP threads)": the
 * library's own count, which this program cannot ask OpenMP for without linking it. */
static int omp_threads(void) {
    ct_device_properties p;
    if (ct_device_info(CT_CPU, &p) != CT_OK) return 0;
    const char *open = strchr(p.name, '(');
    return open ? atoi(open + 1) : 0;
}

void ct_cli_blas_info(ct_cli_blas *out) {
    const char *(*config)(void);
    int (*threads)(void);
    memset(out, 0, sizeof *out);
    out->omp_threads = omp_threads();
    /* libctensor loaded OpenBLAS already; look in what is loaded rather than loading more. */
    *(void **)&config = dlsym(RTLD_DEFAULT, "openblas_get_config");
    *(void **)&threads = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
    if (config)
        snprintf(out->config, sizeof out->config, "%s", config());
    else
        snprintf(out->config, sizeof out->config,
                 "not OpenBLAS (no openblas_get_config among the loaded libraries)");
    out->threads = threads ? threads() : 0;
}

int ct_cli_list_devices(ct_device *out, int capacity, bool gpus_only) {
    ct_device_type types[8];
    int kinds = ct_device_types(types, 8), n = 0;
    for (int k = (kinds < 8 ? kinds : 8) - 1; k >= 0; k--) {
        int count = ct_device_count(types[k]);
        for (int i = 0; i < count; i++) {
            ct_device device = {types[k], i};
            if (gpus_only && ct_device_is_host(device)) continue;
            if (n < capacity) out[n] = device;
            n++;
        }
    }
    return n;
}

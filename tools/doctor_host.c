/* `ctensor doctor`'s host-side checks: the memory limits in force, a CPU self-test of the
 * library, the CPU's SIMD features, the BLAS library, and whether the thread pools fit the
 * cores. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_impl.h"

/* Appends to buf what fits; buf stays NUL-terminated. */
static void append(char *buf, size_t size, const char *text) {
    size_t used = strlen(buf);
    if (used + 1 < size) snprintf(buf + used, size - used, "%s", text);
}

static void append_limit(char *detail, size_t size, ct_device device, bool *failed) {
    ct_memory_statistics stats;
    char dev[32], part[96];
    ct_device_str(device, dev, sizeof dev);
    if (ct_memory_stats(device, &stats) != CT_OK) {
        snprintf(part, sizeof part, "; %s: %.60s", dev, ct_last_error());
        *failed = true;
    } else if (stats.limit == 0) {
        snprintf(part, sizeof part, "; %s: no limit", dev);
    } else {
        snprintf(part, sizeof part, "; %s: %.2f GiB%s", dev,
                 (double)stats.limit / (1024.0 * 1024.0 * 1024.0),
                 stats.growth ? "" : " reserved up front");
    }
    append(detail, size, part);
}

void doctor_check_memory(doctor_report *r) {
    char detail[1024];
    bool failed = false;
    const char *env = getenv("CT_MEMORY_LIMIT");
    snprintf(detail, sizeof detail, "CT_MEMORY_LIMIT=%s%s%s", env ? "\"" : "",
             env ? env : "(unset)", env ? "\"" : "");
    ct_device devices[128];
    int count = ct_cli_list_devices(devices, 128, false);
    for (int i = 0; i < count && i < 128; i++)
        append_limit(detail, sizeof detail, devices[i], &failed);
    /* The library ignores a CT_MEMORY_LIMIT it cannot read, with a warning. */
    bool misread = strstr(r->log, "CT_MEMORY_LIMIT") != NULL;
    if (misread) append(detail, sizeof detail, " (CT_MEMORY_LIMIT is partly ignored: see below)");
    doctor_add(r, "memory limits",
               failed    ? CHECK_FAIL
               : misread ? CHECK_WARN
                         : CHECK_PASS,
               DOCTOR_BROKEN, "correct CT_MEMORY_LIMIT (e.g. \"cuda:0=8GiB,cpu=2GiB\") or unset it",
               "%s", detail);
}

/* The largest |got - want| over n values of a float32 tensor, or INFINITY when t is NULL
 * or cannot be read. */
static double max_error(const ct_tensor *t, const float *want, int n) {
    float got[4];
    if (!t || n > 4 || ct_copy_to_host(t, got, sizeof got) != CT_OK) return INFINITY;
    double worst = 0.0;
    for (int i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    return worst;
}

/* [[1,2],[3,4]] + [[10,20],[30,40]] and their matrix product, against the values worked
 * out by hand. */
static void cpu_self_test(doctor_report *r) {
    static const float a_data[4] = {1, 2, 3, 4}, b_data[4] = {10, 20, 30, 40};
    static const float sum[4] = {11, 22, 33, 44}, product[4] = {70, 100, 150, 220};
    const int64_t shape[2] = {2, 2};
    ct_clear_error();
    ct_tensor *a = ct_from_data(a_data, 2, shape, CT_F32, CT_CPU);
    ct_tensor *b = ct_from_data(b_data, 2, shape, CT_F32, CT_CPU);
    ct_tensor *s = ct_add(a, b);
    ct_tensor *p = ct_matmul(a, b);
    double add_error = max_error(s, sum, 4), matmul_error = max_error(p, product, 4);
    const char *error = ct_last_status() != CT_OK ? ct_last_error() : "";
    if (add_error == 0.0 && matmul_error == 0.0)
        doctor_add(r, "CPU self-test", CHECK_PASS, DOCTOR_OK, NULL,
                   "ct_add and ct_matmul on cpu:0 give the expected values");
    else
        doctor_add(r, "CPU self-test", CHECK_FAIL, DOCTOR_BROKEN,
                   "reinstall ctensor and its BLAS library; report the output if it persists",
                   "wrong results on cpu:0: ct_add off by %g, ct_matmul off by %g %s", add_error,
                   matmul_error, error);
    ct_release(p);
    ct_release(s);
    ct_release(b);
    ct_release(a);
}

/* Oversubscribed when ctensor's OpenMP pool has more threads than there are cores. ctensor
 * runs each BLAS call single-threaded on its own OpenMP threads (src/backend/cpu/cpu_gemm.c),
 * so OpenBLAS's pool stays idle and OPENBLAS_NUM_THREADS does not matter to it. */
static void check_threads(doctor_report *r, const ct_cli_cpu *cpu, const ct_cli_blas *blas) {
    const char *omp_env = getenv("OMP_NUM_THREADS");
    const char *blas_env = getenv("OPENBLAS_NUM_THREADS");
    bool over = blas->omp_threads > cpu->cores;
    doctor_add(r, "threads", over ? CHECK_WARN : CHECK_PASS, DOCTOR_OK,
               "set OMP_NUM_THREADS to at most the number of cores",
               "%d OpenMP threads (OMP_NUM_THREADS=%s), %d cores: %s; OpenBLAS runs on those "
               "threads, one call each, its own pool idle (OPENBLAS_NUM_THREADS=%s)",
               blas->omp_threads, omp_env ? omp_env : "unset", cpu->cores,
               over ? "more threads than cores oversubscribes them" : "they fit the cores",
               blas_env ? blas_env : "unset");
}

void doctor_check_cpu(doctor_report *r) {
    ct_cli_cpu cpu;
    ct_cli_blas blas;
    ct_cli_cpu_info(&cpu);
    ct_cli_blas_info(&blas);
    cpu_self_test(r);
    doctor_add(r, "CPU features", cpu.avx2 ? CHECK_PASS : CHECK_WARN, DOCTOR_OK,
               "none needed: ctensor runs without them, more slowly", "%d cores; %s%s", cpu.cores,
               cpu.features, cpu.avx2 ? "" : " (no AVX2: the CPU kernels run slower)");
    doctor_check_blas(r, blas.config);
    char bf16[256];
    ct_cli_cpu_bf16(bf16, sizeof bf16);
    doctor_add(r, "CPU bf16", ct_cpu_has_fast_bf16() ? CHECK_PASS : CHECK_WARN, DOCTOR_OK,
               "for fast bf16, a CPU with AMX-BF16 or full-rate AVX512_BF16 (as AMD Zen 5) "
               "and a build with oneDNN (libdnnl-dev)",
               "%s", bf16);
    check_threads(r, &cpu, &blas);
}

/* `ctensor doctor`'s BLAS check: the OpenBLAS build, the kernel family it runs (and who
 * chose it), and, when OPENBLAS_CORETYPE is set, what that setting costs: OpenBLAS's sgemm
 * timed here and in a copy of this program run without the variable (`doctor
 * --sgemm-probe`), so the figure is measured on this machine rather than guessed. OpenBLAS's
 * own sgemm is timed, on one thread, because ctensor's f32 matmul may run on oneDNN. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "doctor_impl.h"

#define PROBE_SIZE 512

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* cblas_sgemm as OpenBLAS exports it (found at run time: the library, not this program, links
 * OpenBLAS); CBLAS fixes the values of row-major (101) and no transpose (111). */
typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                         const float *a, int lda, const float *b, int ldb, float beta, float *c,
                         int ldc);

/* GFLOP/s of a 512^3 OpenBLAS sgemm on one thread, the best of five, with the kernel family
 * ctensor runs; 0 on failure. */
static double sgemm_gflops(void) {
    (void)ct_cpu_kernels(); /* has ctensor pick OpenBLAS's family */
    void (*set_threads)(int);
    *(void **)&set_threads = dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    if (set_threads) set_threads(1);
    const int64_t shape[2] = {PROBE_SIZE, PROBE_SIZE};
    ct_tensor *a = ct_rand(2, shape, CT_F32, CT_CPU), *b = ct_rand(2, shape, CT_F32, CT_CPU);
    ct_tensor *c = ct_zeros(2, shape, CT_F32, CT_CPU);
    sgemm_fn sgemm;
    *(void **)&sgemm = dlsym(RTLD_DEFAULT, "cblas_sgemm");
    double best = 0.0;
    for (int i = 0; sgemm && a && b && c && i < 6; i++) {
        double start = now_s();
        sgemm(101, 111, 111, PROBE_SIZE, PROBE_SIZE, PROBE_SIZE, 1.0f, ct_data_ptr(a), PROBE_SIZE,
              ct_data_ptr(b), PROBE_SIZE, 0.0f, ct_data_ptr(c), PROBE_SIZE);
        double rate = 2.0 * PROBE_SIZE * PROBE_SIZE * PROBE_SIZE / (now_s() - start) * 1e-9;
        if (i > 0 && rate > best) best = rate; /* the first call warms the caches */
    }
    ct_release(a);
    ct_release(b);
    ct_release(c);
    return best;
}

static const char *core_name(void) {
    char *(*corename)(void);
    *(void **)&corename = dlsym(RTLD_DEFAULT, "openblas_get_corename");
    return corename ? corename() : "unknown";
}

int doctor_sgemm_probe(void) {
    double rate = sgemm_gflops();
    printf("%s %.1f\n", core_name(), rate);
    return rate > 0 ? 0 : 1;
}

/* The probe run without OPENBLAS_CORETYPE: its kernel family and rate, false if it failed or
 * did not end within PROBE_TIMEOUT seconds (timeout(1) ends it, so pclose's wait ends). */
#define PROBE_TIMEOUT "60"
static bool probe_unset(char *core, size_t size, double *rate) {
    /* This program's path, read here: in the command line /proc/self/exe would be env's. */
    char self[4096], command[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return false;
    self[n] = '\0';
    if (strchr(self, '\'')) return false; /* it is quoted in single quotes below */
    snprintf(command, sizeof command,
             "env -u OPENBLAS_CORETYPE timeout " PROBE_TIMEOUT " '%s' doctor --sgemm-probe "
             "2>/dev/null",
             self);
    FILE *p = popen(command, "r");
    char line[128] = "";
    bool ok = p && fgets(line, sizeof line, p);
    if (p) ok = pclose(p) == 0 && ok;
    char name[32];
    if (!ok || sscanf(line, "%31s %lf", name, rate) != 2) return false;
    snprintf(core, size, "%s", name);
    return true;
}

void doctor_check_blas(doctor_report *r, const char *config) {
    const char *kernels = ct_cpu_kernels(); /* also has ctensor pick OpenBLAS's family */
    const char *env = getenv("OPENBLAS_CORETYPE");
    const char *blas =
        strncmp(config, "not OpenBLAS", 12) == 0 ? NULL : strstr(kernels, "OpenBLAS ");
    int blas_len = blas ? (int)strcspn(blas, ";") : 0;
    /* Where f32 matmul runs on oneDNN, OpenBLAS (and OPENBLAS_CORETYPE) serve f64 only. */
    const char *uses = strstr(kernels, "f32 GEMM oneDNN") ? " for f64 (f32 GEMM on oneDNN)" : "";
    char other[32];
    double here, unset;
    if (!env || !blas) {
        doctor_add(r, "BLAS", blas ? CHECK_PASS : CHECK_WARN, DOCTOR_OK,
                   "link ctensor with OpenBLAS for fast matmul on the CPU", "%s; runs %.*s%s",
                   config, blas_len, blas ? blas : "", blas ? uses : "");
        return;
    }
    here = sgemm_gflops();
    if (!probe_unset(other, sizeof other, &unset)) {
        doctor_add(r, "BLAS", CHECK_PASS, DOCTOR_OK, NULL,
                   "%s; runs %.*s%s (OPENBLAS_CORETYPE=%s; its sgemm %d^3 at %.0f GFLOP/s on one "
                   "thread; the run without the variable, to compare, failed)",
                   config, blas_len, blas, uses, env, PROBE_SIZE, here);
        return;
    }
    if (strcmp(other, core_name()) == 0 || unset < 1.1 * here) {
        doctor_add(r, "BLAS", CHECK_PASS, DOCTOR_OK, NULL,
                   "%s; runs %.*s%s (OPENBLAS_CORETYPE=%s; its sgemm %d^3 at %.0f GFLOP/s on one "
                   "thread, %.0f GFLOP/s with %s, which it runs without the variable)",
                   config, blas_len, blas, uses, env, PROBE_SIZE, here, unset, other);
        return;
    }
    doctor_add(r, "BLAS", CHECK_WARN, DOCTOR_OK,
               "unset OPENBLAS_CORETYPE (or set it to the faster family) where this OpenBLAS "
               "works on this CPU",
               "%s; OPENBLAS_CORETYPE=%s makes OpenBLAS run its %s kernels%s: sgemm %d^3 at "
               "%.0f GFLOP/s on one thread, against %.0f GFLOP/s (%.1fx) with %s, which it runs "
               "without the variable",
               config, env, core_name(), uses, PROBE_SIZE, here, unset, unset / here, other);
}

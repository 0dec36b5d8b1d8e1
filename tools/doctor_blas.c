/* `ctensor doctor`'s BLAS check: the OpenBLAS build, the kernel family it runs (and who
 * chose it), and, when OPENBLAS_CORETYPE is set, what that setting costs: sgemm timed here
 * and in a copy of this program run without the variable (`doctor --sgemm-probe`), so the
 * figure is measured on this machine rather than guessed. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "doctor_impl.h"

#define PROBE_SIZE 512

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* GFLOP/s of a 512^3 f32 matmul through ctensor on the CPU, the best of five; 0 on failure. */
static double sgemm_gflops(void) {
    const int64_t shape[2] = {PROBE_SIZE, PROBE_SIZE};
    ct_tensor *a = ct_rand(2, shape, CT_F32, CT_CPU), *b = ct_rand(2, shape, CT_F32, CT_CPU);
    double best = 0.0;
    for (int i = 0; a && b && i < 6; i++) {
        double start = now_s();
        ct_tensor *c = ct_matmul(a, b);
        double seconds = now_s() - start;
        if (!c) break;
        ct_release(c);
        double rate = 2.0 * PROBE_SIZE * PROBE_SIZE * PROBE_SIZE / seconds * 1e-9;
        if (i > 0 && rate > best) best = rate; /* the first call warms the caches */
    }
    ct_release(a);
    ct_release(b);
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

/* The probe run without OPENBLAS_CORETYPE: its kernel family and rate, false if it failed. */
static bool probe_unset(char *core, size_t size, double *rate) {
    FILE *p =
        popen("env -u OPENBLAS_CORETYPE /proc/self/exe doctor --sgemm-probe 2>/dev/null", "r");
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
    char other[32];
    double here, unset;
    if (!env || !blas) {
        doctor_add(r, "BLAS", blas ? CHECK_PASS : CHECK_WARN, DOCTOR_OK,
                   "link ctensor with OpenBLAS for fast matmul on the CPU", "%s; runs %.*s", config,
                   blas_len, blas ? blas : "");
        return;
    }
    here = sgemm_gflops();
    if (!probe_unset(other, sizeof other, &unset) || strcmp(other, core_name()) == 0 ||
        unset < 1.1 * here) {
        doctor_add(r, "BLAS", CHECK_PASS, DOCTOR_OK, NULL,
                   "%s; runs %.*s (OPENBLAS_CORETYPE=%s; sgemm %d^3 at %.0f GFLOP/s)", config,
                   blas_len, blas, env, PROBE_SIZE, here);
        return;
    }
    doctor_add(r, "BLAS", CHECK_WARN, DOCTOR_OK,
               "unset OPENBLAS_CORETYPE (or set it to the faster family) where this OpenBLAS "
               "works on this CPU",
               "%s; OPENBLAS_CORETYPE=%s makes OpenBLAS run its %s kernels: sgemm %d^3 at %.0f "
               "GFLOP/s, against %.0f GFLOP/s (%.1fx) with %s, which it runs without the "
               "variable",
               config, env, core_name(), PROBE_SIZE, here, unset, unset / here, other);
}

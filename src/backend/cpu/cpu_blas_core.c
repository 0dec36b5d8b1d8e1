/* OpenBLAS's kernel family for this processor, corrected where OpenBLAS does not know it.
 *
 * A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels from the CPU's model number when it
 * loads. A processor newer than the OpenBLAS release is unknown to it, and it falls back to
 * Prescott (SSE3): OpenBLAS 0.3.21 does so on Intel Xeon model 207 (Emerald Rapids), where
 * sgemm then runs at 9-17 GFLOP/s on one core against 60-100 with its SkylakeX or Cooperlake
 * kernels (docs/PERFORMANCE.md). Before ctensor's first BLAS call, when the user has not set
 * OPENBLAS_CORETYPE, OpenBLAS chose a family without AVX2, and the processor has AVX2 and
 * FMA (and perhaps AVX-512), ctensor asks OpenBLAS to pick again with the best family the
 * processor runs: Cooperlake (AVX-512 with BF16), SkylakeX (AVX-512) or Haswell (AVX2),
 * through OpenBLAS's own re-initialisation (gotoblas_dynamic_quit and _init, which read
 * OPENBLAS_CORETYPE), so its parameters are set as at load. A user's OPENBLAS_CORETYPE is
 * always kept; an OpenBLAS without those functions (not DYNAMIC_ARCH) is left alone. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/cpu/cpu_impl.h"

static pthread_once_t core_once = PTHREAD_ONCE_INIT;
static char core_note[160];

/* OpenBLAS's names of its x86-64 families with AVX2 and FMA kernels. */
static bool core_has_avx2(const char *name) {
    static const char *const modern[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake",
                                         "SapphireRapids"};
    for (size_t i = 0; i < sizeof modern / sizeof modern[0]; i++)
        if (strcasecmp(name, modern[i]) == 0) return true;
    return false;
}

/* The best family this processor runs, or NULL when it has no AVX2 and FMA. */
static const char *best_core(void) {
#if defined(__GNUC__) && defined(__x86_64__)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return NULL;
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512cd");
    if (avx512 && __builtin_cpu_supports("avx512bf16")) return "Cooperlake";
    return avx512 ? "SkylakeX" : "Haswell";
#else
    return NULL;
#endif
}

static void pick_core(void) {
    char *(*corename)(void);
    void (*quit)(void), (*init)(void);
    *(void **)&corename = dlsym(RTLD_DEFAULT, "openblas_get_corename");
    *(void **)&quit = dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
    *(void **)&init = dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
    const char *best = best_core();
    if (!corename || !quit || !init || !best || getenv("OPENBLAS_CORETYPE")) return;
    char before[32];
    snprintf(before, sizeof before, "%s", corename());
    if (core_has_avx2(before)) return;
    /* The environment is read once, here, before any BLAS call of ctensor's; the variable
     * is removed again so that the process's environment is as the user left it. (setenv
     * races with a getenv on another thread at that moment: a risk taken once per process,
     * at the first matmul or convolution.) */
    setenv("OPENBLAS_CORETYPE", best, 1);
    quit();
    init();
    unsetenv("OPENBLAS_CORETYPE");
    snprintf(core_note, sizeof core_note, " (chosen by ctensor: OpenBLAS took this CPU for %s)",
             before);
}

void ct__cpu_blas_pick_core(void) { pthread_once(&core_once, pick_core); }

const char *ct__cpu_blas_core_note(void) {
    ct__cpu_blas_pick_core();
    return core_note;
}

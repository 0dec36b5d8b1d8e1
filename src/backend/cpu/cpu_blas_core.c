/* OpenBLAS's kernel family for this processor, corrected where OpenBLAS does not know it.
 *
 * A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels from the CPU's model number when it
 * loads. A processor newer than the OpenBLAS release is unknown to it, and it falls back to
 * Prescott (SSE3): OpenBLAS 0.3.21 does so on Intel Xeon model 207 (Emerald Rapids), where
 * sgemm then runs at 9-17 GFLOP/s on one core against 60-100 with its SkylakeX or Cooperlake
 * kernels (docs/PERFORMANCE.md). When the user has not set OPENBLAS_CORETYPE, OpenBLAS chose a
 * family without AVX2, and the processor has AVX2 and FMA (and perhaps AVX-512), ctensor asks
 * OpenBLAS to pick again with the best family the processor runs: Cooperlake (AVX-512 with
 * BF16), SkylakeX (AVX-512) or Haswell (AVX2), through OpenBLAS's own re-initialisation
 * (gotoblas_dynamic_quit and _init), so its parameters are set as at load. A user's
 * OPENBLAS_CORETYPE is always kept; an OpenBLAS without those functions (not DYNAMIC_ARCH) is
 * left alone.
 *
 * When: in a constructor, as libctensor loads, and never after. OpenBLAS has no function that
 * sets the family (0.3.21's cblas.h has none; gotoblas_dynamic_init reads only
 * OPENBLAS_CORETYPE, and the family tables' layout is private), so the variable is set for
 * that call and removed again, leaving the environment as the user left it. setenv is unsafe
 * while another thread may read the environment, so it is done only where no thread of the
 * program can exist: libctensor loaded with the program (OpenBLAS's own constructor, which
 * runs before ours, may have started its pool: those threads wait for work and read no
 * environment). Loaded later among other threads (a dlopen, as Python's import), ctensor
 * leaves OpenBLAS's choice and says so in ct_cpu_kernels, naming the variable that fixes it. */
#include <cblas.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/cpu/cpu_impl.h"

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

/* Threads in this process (/proc/self/status), or 0 when unknown. */
static int thread_count(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    int threads = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &threads) == 1) break;
    fclose(f);
    return threads;
}

/* Whether no thread but this one and OpenBLAS's idle pool (a pthreads OpenBLAS starts
 * openblas_get_num_threads() - 1 of them as it loads) can read the environment now. */
static bool alone(void) {
    int threads = thread_count();
    int own = openblas_get_parallel() == 1 ? openblas_get_num_threads() : 1;
    return threads >= 1 && threads <= own;
}

__attribute__((constructor)) static void pick_core(void) {
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
    if (!alone()) {
        snprintf(core_note, sizeof core_note,
                 " (OpenBLAS's choice: ctensor loaded among other threads and left it; "
                 "OPENBLAS_CORETYPE=%s selects this CPU's kernels)",
                 best);
        return;
    }
    setenv("OPENBLAS_CORETYPE", best, 1);
    quit();
    init();
    unsetenv("OPENBLAS_CORETYPE");
    snprintf(core_note, sizeof core_note, " (chosen by ctensor: OpenBLAS took this CPU for %s)",
             before);
}

const char *ct__cpu_blas_core_note(void) { return core_note; }

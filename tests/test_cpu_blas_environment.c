/* The library leaves the process environment alone after start-up: OpenBLAS's kernel family
 * is corrected as libctensor loads (cpu_blas_core.c), never at the first matmul while other
 * threads may read the environment. This program counts every setenv, unsetenv and putenv
 * made after main started (its own definitions, which forward to the C library's), and a
 * thread reads the environment throughout the BLAS work. To exercise the correction on any
 * processor with AVX2 and FMA, a constructor that runs before libctensor's makes OpenBLAS take
 * Prescott's kernels first, as OpenBLAS 0.3.21 does on a processor it does not know (skipped by
 * name where OpenBLAS is not DYNAMIC_ARCH, the processor lacks AVX2, or the user set
 * OPENBLAS_CORETYPE). Its own program: the environment's writers are replaced here. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <strings.h>

#include "ct_test.h"
#include "force_prescott.h"

char *openblas_get_corename(void);

static atomic_bool started;     /* main's tests have begun */
static atomic_int late_writes;  /* environment writes since */
static char forced_reason[160]; /* "" when Prescott was forced before libctensor loaded */

#define FORWARD(name, params, args)                                                                \
    int name params {                                                                              \
        static int(*real) params;                                                                  \
        if (!real) *(void **)&real = dlsym(RTLD_NEXT, #name);                                      \
        if (atomic_load(&started)) atomic_fetch_add(&late_writes, 1);                              \
        return real ? real args : -1;                                                              \
    }
FORWARD(setenv, (const char *name, const char *value, int overwrite), (name, value, overwrite))
FORWARD(unsetenv, (const char *name), (name))
FORWARD(putenv, (char *string), (string))

/* Before libctensor's constructor (a lower priority runs first). */
__attribute__((constructor(101))) static void force(void) {
    force_prescott(forced_reason, sizeof forced_reason);
}

static bool is_avx2_family(const char *name) {
    static const char *const modern[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake",
                                         "SapphireRapids"};
    for (size_t i = 0; i < sizeof modern / sizeof modern[0]; i++)
        if (strcasecmp(name, modern[i]) == 0) return true;
    return false;
}

/* First, before any BLAS call: the family was corrected as the library loaded. */
TEST(test_cpu_blas_environment_kernels_chosen_at_load) {
    atomic_store(&started, true);
    if (forced_reason[0]) {
        ct_test_skip(forced_reason);
        return;
    }
    const char *core = openblas_get_corename();
    if (!is_avx2_family(core))
        ct_test_fail(__FILE__, __LINE__, "OpenBLAS runs %s's kernels before the first matmul",
                     core);
}

static atomic_bool reading;
static atomic_int sightings; /* times the reader saw OPENBLAS_CORETYPE */

static void *read_environment(void *unused) {
    (void)unused;
    while (atomic_load(&reading))
        if (getenv("OPENBLAS_CORETYPE")) atomic_fetch_add(&sightings, 1);
    return NULL;
}

/* The first matmuls (f64 on OpenBLAS, f32 on whichever GEMM the build picks) and a
 * convolution, with a thread reading the environment: nothing writes it. */
TEST(test_cpu_blas_environment_untouched_by_blas) {
    atomic_store(&started, true);
    int before = atomic_load(&late_writes);
    atomic_store(&reading, true);
    pthread_t reader;
    CHECK(pthread_create(&reader, NULL, read_environment, NULL) == 0);
    bool ok = true;
    const ct_dtype dtypes[2] = {CT_F64, CT_F32};
    for (int d = 0; d < 2 && ok; d++) {
        int64_t shape[2] = {64, 64}, image[4] = {1, 2, 8, 8}, kernel[4] = {3, 2, 3, 3};
        ct_tensor *a = ct_ones(2, shape, dtypes[d], CT_CPU);
        ct_tensor *m = ct_matmul(a, a);
        ct_tensor *x = ct_ones(4, image, dtypes[d], CT_CPU);
        ct_tensor *w = ct_ones(4, kernel, dtypes[d], CT_CPU);
        ct_tensor *y = ct_conv2d(x, w, NULL, NULL);
        ok = m && y;
        ct_release(a);
        ct_release(m);
        ct_release(x);
        ct_release(w);
        ct_release(y);
    }
    atomic_store(&reading, false);
    pthread_join(reader, NULL);
    CHECK(ok);
    int writes = atomic_load(&late_writes) - before;
    if (writes || atomic_load(&sightings))
        ct_test_fail(__FILE__, __LINE__,
                     "the environment was written %d times during BLAS work, and a reader "
                     "saw OPENBLAS_CORETYPE %d times",
                     writes, atomic_load(&sightings));
}

/* ct_cpu_kernels names who chose the family. */
TEST(test_cpu_blas_environment_kernels_line_says_so) {
    if (forced_reason[0]) {
        ct_test_skip(forced_reason);
        return;
    }
    CHECK(strstr(ct_cpu_kernels(), "chosen by ctensor: OpenBLAS took this CPU for Prescott"));
}

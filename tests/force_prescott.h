/* For the tests of OpenBLAS's kernel family (cpu_blas_core.c): make OpenBLAS take Prescott's
 * kernels, as OpenBLAS 0.3.21 does on a processor it does not know, from a constructor that
 * runs before libctensor's. Leaves reason empty when it did, else says why it cannot here (an
 * OpenBLAS that is not DYNAMIC_ARCH, a processor without AVX2 and FMA, or the user's own
 * OPENBLAS_CORETYPE). */
#ifndef CT_TEST_FORCE_PRESCOTT_H
#define CT_TEST_FORCE_PRESCOTT_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void force_prescott(char *reason, size_t size) {
    void (*quit)(void), (*init)(void);
    *(void **)&quit = dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
    *(void **)&init = dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
    const char *why = NULL;
    if (!quit || !init)
        why = "this OpenBLAS is not DYNAMIC_ARCH: its kernels are fixed";
    else if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        why = "this processor has no AVX2 and FMA: OpenBLAS's choice is kept";
    else if (getenv("OPENBLAS_CORETYPE"))
        why = "OPENBLAS_CORETYPE is set: the user's choice is kept";
    snprintf(reason, size, "%s", why ? why : "");
    if (why) return;
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    quit();
    init();
    unsetenv("OPENBLAS_CORETYPE");
}

#endif

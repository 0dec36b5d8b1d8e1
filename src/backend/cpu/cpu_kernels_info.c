/* ct_cpu_kernels (ctensor/device.h): the CPU kernels picked for this processor at run time
 * and the parallel policy's measured figures, as one line. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/cpu_simd_impl.h"

/* The elementwise loops' clone that the loader picks (CT_CPU_CLONES: x86-64-v3 or the
 * baseline). */
static const char *clone_width(void) {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "AVX2+FMA";
    return "SSE2";
#else
    return "the compiler's baseline";
#endif
}

/* OpenBLAS's kernel family in use (its run-time choice, OPENBLAS_CORETYPE's or
 * ctensor's), and who chose it. */
static const char *blas_core(void) {
    static char text[224];
    char *(*corename)(void);
    const char *note = ct__cpu_blas_core_note();
    *(void **)&corename = dlsym(RTLD_DEFAULT, "openblas_get_corename");
    snprintf(text, sizeof text, "%s%s", corename ? corename() : "unknown", note);
    return text;
}

CT_API const char *ct_cpu_kernels(void) {
    static char line[512];
    const char *exp = ct__cpu_has_avx512() ? "AVX-512" : clone_width();
    const char *f32_gemm = ct__cpu_f32_gemm_library();
    char libraries[96] = "";
    if (strcmp(f32_gemm, "OpenBLAS") != 0)
        snprintf(libraries, sizeof libraries, "f32 GEMM %s, ", f32_gemm);
    /* Where oneDNN would run f32 convolutions, whether a first layer's single input channel
     * goes to im2col instead (cpu_conv_dnnl.c). */
    if (ct__cpu_conv2d_f32_on_onednn(2) && !ct__cpu_conv2d_f32_on_onednn(1))
        snprintf(libraries + strlen(libraries), sizeof libraries - strlen(libraries),
                 "f32 conv oneDNN, im2col with 1 input channel, ");
    int threads = ct__cpu_threads();
    if (threads < 2) {
        snprintf(line, sizeof line, "elementwise %s, exp %s, max pool %s, %sOpenBLAS %s; 1 thread",
                 clone_width(), exp, ct__cpu_max_pool_row(), libraries, blas_core());
        return line;
    }
    snprintf(line, sizeof line,
             "elementwise %s, exp %s, max pool %s, %sOpenBLAS %s; parallel region %.1f us, ops "
             "of %lld+ elements on 2+ threads",
             clone_width(), exp, ct__cpu_max_pool_row(), libraries, blas_core(),
             ct__cpu_region_ns() / 1000.0, (long long)ct__cpu_parallel_threshold());
    return line;
}

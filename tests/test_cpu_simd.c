/* The CPU kernels picked at run time for wider vectors (backend/cpu/cpu_simd_impl.h) give
 * the same bits as the formula they implement: exp on AVX-512 against ct__expf_fma (the
 * formula with fused multiply-adds, here through fmaf) on a sweep of every 4099th float,
 * the edges (overflow, underflow into subnormals and to zero, infinities, NaN) and every
 * tail length of the vector loop. Skipped by name on processors without AVX-512. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_math_impl.h"
#include "backend/cpu/cpu_simd_impl.h"
#include "ct_test.h"

#if CT_CPU_AVX512_KERNELS
/* Count the lanes whose bits differ from the formula's, reporting the first. */
static int64_t mismatches(const float *x, int64_t n) {
    float *o = malloc((size_t)n * sizeof *o);
    if (!o) return -1;
    ct__cpu_exp_f32_avx512(o, x, n);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float want = ct__expf_fma(x[i]);
        if (memcmp(&want, &o[i], sizeof want) == 0) continue;
        if (bad++ == 0)
            ct_test_fail(__FILE__, __LINE__, "exp(%a): %a, the formula gives %a", (double)x[i],
                         (double)o[i], (double)want);
    }
    free(o);
    return bad;
}
#endif

TEST(test_cpu_simd_exp_avx512_matches_formula) {
#if CT_CPU_AVX512_KERNELS
    if (!ct__cpu_has_avx512()) {
        ct_test_skip("this processor has no AVX-512");
        return;
    }
    const int64_t step = 4099, n = (int64_t)(0x100000000LL / step) + 1;
    float *x = malloc((size_t)n * sizeof *x);
    CHECK(x != NULL);
    if (!x) return;
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)(i * step);
        memcpy(&x[i], &bits, sizeof bits);
    }
    CHECK(mismatches(x, n) == 0);
    const float edges[] = {0.0f,     -0.0f,     1.0f,    -1.0f,    88.72f,   88.73f,
                           89.0f,    -87.33f,   -87.34f, -103.9f,  -103.97f, -104.0f,
                           -104.1f,  -150.0f,   1e10f,   -1e10f,   0x1p21f,  -0x1p21f,
                           0x1p22f,  -0x1p22f,  0x1p23f, -0x1p23f, 1e-40f,   -1e-40f,
                           INFINITY, -INFINITY, NAN,     -NAN,     3.4e38f,  -3.4e38f};
    int64_t count = (int64_t)(sizeof edges / sizeof edges[0]);
    CHECK(mismatches(edges, count) == 0);
    for (int64_t len = 1; len <= 33; len++) CHECK(mismatches(x + 1000, len) == 0);
    free(x);
#else
    ct_test_skip("built without the AVX-512 kernels (not GCC on x86-64)");
#endif
}

/* The CPU kernels picked at run time for wider vectors (backend/cpu/cpu_simd_impl.h) give
 * the same bits as the formula they implement: exp on AVX-512 against ct__expf_fma (the
 * formula with fused multiply-adds, here through fmaf) on a sweep of every 4099th float,
 * the edges (overflow, underflow into subnormals and to zero, infinities, NaN) and every
 * tail length of the vector loop; the rows of 2x2 max pooling (AVX2, AVX-512) against the
 * scalar rule, ties and signed zeros included, at every row length up to 40. Each is skipped
 * by name on processors without its instructions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_math_impl.h"
#include "backend/cpu/cpu_simd_impl.h"
#include "ct_test.h"

#if CT_CPU_SIMD_KERNELS
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
#if CT_CPU_SIMD_KERNELS
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
    ct_test_skip("built without the vector kernels (not GCC on x86-64)");
#endif
}

#if CT_CPU_SIMD_KERNELS
/* Whether row(x0, x1) over n outputs gives the scalar rule's maxima (the first of the four
 * cells in row-major order equal to the largest, so -0 before +0) with their indices, writes
 * nothing past them, and reports a NaN exactly when one is among its cells. Cells from a small
 * set, so that ties are common; a NaN sits just past the row's end, which must not count. */
static bool max_row_matches(ct__cpu_max_row_f32_fn *row, int64_t n, unsigned seed, bool with_nan) {
    enum { MAX_N = 40, W = 2 * MAX_N + 3, AT0 = 1000 };
    const float values[] = {-0.0f, 0.0f, 1.0f, -1.0f, 2.5f};
    float x[2 * W], y[MAX_N + 1];
    int32_t idx[MAX_N + 1];
    for (int i = 0; i < 2 * W; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = values[(seed >> 16) % 5];
    }
    x[2 * n] = x[W + 2 * n] = NAN;
    if (with_nan) x[W + 2 * (n - 1) + 1] = NAN;
    y[n] = 42.0f, idx[n] = 42;
    int nan = row(x, x + W, y, idx, n, AT0, W);
    bool ok = (nan != 0) == with_nan && y[n] == 42.0f && idx[n] == 42;
    for (int64_t o = 0; o < n - (with_nan ? 1 : 0); o++) {
        const float cell[4] = {x[2 * o], x[2 * o + 1], x[W + 2 * o], x[W + 2 * o + 1]};
        const int64_t at[4] = {2 * o, 2 * o + 1, W + 2 * o, W + 2 * o + 1};
        float best = cell[0];
        for (int k = 1; k < 4; k++) best = cell[k] > best ? cell[k] : best;
        int first = 0;
        while (!(cell[first] == best && signbit(cell[first]) == signbit(best))) first++;
        ok &= memcmp(&y[o], &best, sizeof best) == 0 && idx[o] == AT0 + at[first];
    }
    return ok;
}

/* The row of one kind against the scalar rule, where the processor runs that kind. */
static void check_max_row(bool runs_here, ct__cpu_max_row_f32_fn *row, const char *kind) {
    if (!runs_here) {
        char reason[64];
        snprintf(reason, sizeof reason, "this processor has no %s", kind);
        ct_test_skip(reason);
        return;
    }
    for (int64_t n = 1; n <= 40; n++)
        for (unsigned seed = 1; seed <= 20; seed++)
            for (int with_nan = 0; with_nan < 2; with_nan++)
                if (!max_row_matches(row, n, seed * 7919u + (unsigned)n, with_nan)) {
                    ct_test_fail(__FILE__, __LINE__, "%s row: %lld outputs, seed %u%s", kind,
                                 (long long)n, seed, with_nan ? ", a NaN in the last window" : "");
                    return;
                }
}
#endif

TEST(test_cpu_simd_max_row_avx2_matches_scalar_rule) {
#if CT_CPU_SIMD_KERNELS
    check_max_row(ct__cpu_has_avx2(), ct__cpu_max_row_2x2_f32_avx2, "AVX2");
#else
    ct_test_skip("built without the vector kernels (not GCC on x86-64)");
#endif
}

TEST(test_cpu_simd_max_row_avx512_matches_scalar_rule) {
#if CT_CPU_SIMD_KERNELS
    check_max_row(ct__cpu_has_avx512bw(), ct__cpu_max_row_2x2_f32_avx512, "AVX-512 BW");
#else
    ct_test_skip("built without the vector kernels (not GCC on x86-64)");
#endif
}

#if CT_CPU_SIMD_KERNELS
/* x rounded to bf16, nearest even (finite values). */
static double bf16_value(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
    float r;
    memcpy(&r, &bits, sizeof r);
    return r;
}

/* ct__cpu_attention_gemm_bf16 against the double sums of the bf16-rounded products, for one
 * layout and shape; returns whether every element is within f32 summation's error. */
static bool bf16_product_matches(bool ta, bool tb, bool accumulate, int64_t m, int64_t n,
                                 int64_t k) {
    int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
    int64_t arows = ta ? k : m, brows = tb ? n : k, most = m > n ? m : n;
    most = k > most ? k : most;
    float *a = malloc(sizeof(float) * (size_t)(arows * lda));
    float *b = malloc(sizeof(float) * (size_t)(brows * ldb));
    float *c = malloc(sizeof(float) * (size_t)(m * ldc));
    uint32_t *scratch = malloc(sizeof(uint32_t) * ct__cpu_attention_bf16_scratch(most));
    bool ok = a && b && c && scratch;
    uint64_t state = 12345;
    for (int64_t e = 0; ok && e < arows * lda; e++)
        a[e] = (float)((state = state * 6364136223846793005ull + 1) >> 40) / 16777216.0f - 0.5f;
    for (int64_t e = 0; ok && e < brows * ldb; e++)
        b[e] = (float)((state = state * 6364136223846793005ull + 1) >> 40) / 8388608.0f - 1.0f;
    for (int64_t e = 0; ok && e < m * ldc; e++) c[e] = (float)(e % 7) - 3.0f;
    if (ok)
        ct__cpu_attention_gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, accumulate, c, ldc, scratch);
    for (int64_t i = 0; ok && i < m; i++)
        for (int64_t j = 0; ok && j < n; j++) {
            double sum = accumulate ? (double)((i * ldc + j) % 7) - 3.0 : 0.0, size = fabs(sum);
            for (int64_t p = 0; p < k; p++) {
                double x = bf16_value(ta ? a[p * lda + i] : a[i * lda + p]);
                double y = bf16_value(tb ? b[j * ldb + p] : b[p * ldb + j]);
                sum += x * y;
                size += fabs(x * y);
            }
            double got = c[i * ldc + j];
            if (!(fabs(got - sum) <= 1e-6 * size + 1e-30)) {
                printf("    ta %d tb %d acc %d (%lld x %lld x %lld): c[%lld][%lld] = %.9g, "
                       "expected %.9g\n",
                       ta, tb, accumulate, (long long)m, (long long)n, (long long)k, (long long)i,
                       (long long)j, got, sum);
                ok = false;
            }
        }
    free(a), free(b), free(c), free(scratch);
    return ok;
}
#endif

/* The attention's small bf16 products (cpu_attention_bf16.c) in every layout, at sizes that
 * leave partial lane blocks, odd summed lengths and single rows. */
TEST(test_cpu_simd_attention_bf16_products) {
#if CT_CPU_SIMD_KERNELS
    if (!ct__cpu_has_avx512bf16()) {
        ct_test_skip("this processor has no AVX512_BF16");
        return;
    }
    const int64_t shapes[][3] = {{1, 1, 1},    {5, 17, 9},  {64, 64, 64}, {33, 40, 24},
                                 {64, 80, 70}, {2, 130, 3}, {63, 16, 128}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int layout = 0; layout < 8; layout++)
            CHECK(bf16_product_matches(layout & 1, (layout >> 1) & 1, (layout >> 2) & 1,
                                       shapes[s][0], shapes[s][1], shapes[s][2]));
#else
    ct_test_skip("built without the vector kernels (not GCC on x86-64)");
#endif
}

TEST(test_cpu_simd_kernels_line_names_the_pool_row) {
    const char *want = !CT_CPU_SIMD_KERNELS     ? "max pool scalar"
                       : ct__cpu_has_avx512bw() ? "max pool AVX-512"
                       : ct__cpu_has_avx2()     ? "max pool AVX2"
                                                : "max pool scalar";
    if (!strstr(ct_cpu_kernels(), want))
        ct_test_fail(__FILE__, __LINE__, "\"%s\" lacks \"%s\"", ct_cpu_kernels(), want);
}

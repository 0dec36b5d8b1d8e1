/* Random numbers: Philox4x32-10 against Random123's published known-answer vectors; the
 * stream layout of ct_rand and ct_randn recomputed here from the block function; the
 * statistics of 10^6 draws; seeds and offsets; thread-count independence; errors. */
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "ct_ref.h"

/* ---- the block function ---- */

TEST(test_random_philox_known_answers) {
    /* Random123 kat_vectors, philox4x32 10: counter[4] key[2] -> out[4]. */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1}};
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        ct_philox4x32_10(kat[v], kat[v] + 4, out);
        for (int i = 0; i < 4; i++) CHECK(out[i] == kat[v][6 + i]);
    }
}

/* ---- helpers ---- */

/* The words of block `counter` of stream `seed`, by the layout random.h documents. */
static void stream_block(uint64_t seed, uint64_t counter, uint32_t w[4]) {
    uint32_t c[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0, 0};
    uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    ct_philox4x32_10(c, k, w);
}

/* A fresh draw of n values (as doubles) after ct_manual_seed(seed). */
static double *draw_values(bool normal, uint64_t seed, int64_t n, ct_dtype dtype,
                           ct_device device) {
    ct_manual_seed(seed);
    ct_tensor *t = (normal ? ct_randn : ct_rand)(1, &n, dtype, device);
    double *v = t ? ref_read(t) : NULL;
    ct_release(t);
    return v;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Kolmogorov-Smirnov distance of the n values v (sorted here) from the CDF cdf. */
static double ks_distance(double *v, int64_t n, double (*cdf)(double)) {
    qsort(v, (size_t)n, sizeof(double), compare_doubles);
    double d = 0;
    for (int64_t i = 0; i < n; i++) {
        double f = cdf(v[i]);
        double lo = f - (double)i / (double)n, hi = (double)(i + 1) / (double)n - f;
        if (lo > d) d = lo;
        if (hi > d) d = hi;
    }
    return d;
}

static double uniform_cdf(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }
static double normal_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* ---- the stream layout ---- */

DEVICE_TEST(test_random_rand_follows_the_documented_layout) {
    static const struct {
        ct_dtype dtype;
        int bits;
    } cases[] = {{CT_F32, 24}, {CT_F64, 32}, {CT_F16, 11}, {CT_BF16, 8}};
    uint64_t seed = 0x123456789abcdefull;
    for (int c = 0; c < 4; c++) {
        double *v = draw_values(false, seed, 10, cases[c].dtype, device);
        CHECK_NOT_NULL(v);
        for (int64_t i = 0; i < 10; i++) {
            uint32_t w[4];
            stream_block(seed, (uint64_t)i / 4, w);
            double expected = (double)(w[i % 4] >> (32 - cases[c].bits)) * ldexp(1, -cases[c].bits);
            if (v[i] != expected) {
                ct_test_fail(__FILE__, __LINE__, "%s element %lld = %.17g, expected %.17g",
                             ct_dtype_name(cases[c].dtype), (long long)i, v[i], expected);
                break;
            }
        }
        free(v);
    }
}

DEVICE_TEST(test_random_randn_follows_the_documented_layout) {
    uint64_t seed = 77;
    double *v = draw_values(true, seed, 11, CT_F64, device);
    CHECK_NOT_NULL(v);
    bool ok = true;
    for (int64_t i = 0; i < 11 && ok; i++) {
        uint32_t w[4];
        stream_block(seed, (uint64_t)i / 4, w);
        int j = (int)(i % 4) / 2;
        double u1 = ((double)w[2 * j] + 1.0) / 4294967296.0;
        double u2 = (double)w[2 * j + 1] / 4294967296.0;
        double r = sqrt(-2.0 * log(u1)), two_pi = 6.283185307179586476925286766559;
        double expected = i % 2 == 0 ? r * cos(two_pi * u2) : r * sin(two_pi * u2);
        ok = fabs(v[i] - expected) <= 1e-12;
        if (!ok)
            ct_test_fail(__FILE__, __LINE__, "element %lld = %.17g, expected %.17g", (long long)i,
                         v[i], expected);
    }
    free(v);
}

/* ---- statistics ---- */

DEVICE_TEST(test_random_uniform_statistics) {
    static const struct {
        ct_dtype dtype;
        int bits;
    } cases[] = {{CT_F32, 24}, {CT_F64, 32}, {CT_F16, 11}, {CT_BF16, 8}};
    const int64_t n = 1000000;
    for (int c = 0; c < 4; c++) {
        double *v = draw_values(false, 2024 + (uint64_t)c, n, cases[c].dtype, device);
        CHECK_NOT_NULL(v);
        double sum = 0, sq = 0;
        bool in_range = true;
        for (int64_t i = 0; i < n; i++) {
            in_range = in_range && v[i] >= 0 && v[i] < 1;
            sum += v[i];
        }
        double mean = sum / (double)n;
        for (int64_t i = 0; i < n; i++) sq += (v[i] - mean) * (v[i] - mean);
        /* Exact moments of the quantised uniform k * 2^-b, k = 0 .. 2^b - 1; bounds are five
         * standard errors (sd 0.289 for the mean, 0.0745 for the squared deviation). */
        double q = ldexp(1, -cases[c].bits);
        double d = ks_distance(v, n, uniform_cdf);
        free(v);
        CHECK(in_range);
        CHECK_NEAR(mean, (1 - q) / 2, 5 * 0.2887 / 1000);
        CHECK_NEAR(sq / (double)n, (1 - q * q) / 12, 5 * 0.0745 / 1000);
        /* 1.95 / sqrt(n) is the 0.1% critical value; a coarse grid adds up to q. */
        CHECK(d < 1.95 / 1000 + q);
    }
}

DEVICE_TEST(test_random_normal_statistics) {
    static const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
    const int64_t n = 1000000;
    for (int c = 0; c < 4; c++) {
        double *v = draw_values(true, 99 + (uint64_t)c, n, dtypes[c], device);
        CHECK_NOT_NULL(v);
        double sum = 0, sq = 0;
        bool finite = true;
        for (int64_t i = 0; i < n; i++) {
            finite = finite && isfinite(v[i]);
            sum += v[i];
        }
        double mean = sum / (double)n;
        for (int64_t i = 0; i < n; i++) sq += (v[i] - mean) * (v[i] - mean);
        double d = ks_distance(v, n, normal_cdf);
        free(v);
        CHECK(finite);
        CHECK_NEAR(mean, 0.0, 5.0 / 1000);
        /* The sample sd has standard error 1 / sqrt(2n) = 0.0007; bf16 rounds each value by
         * up to 2^-9 relative, which moves the sd by less than 0.002. */
        CHECK_NEAR(sqrt(sq / (double)n), 1.0, dtypes[c] == CT_BF16 ? 0.006 : 0.0035);
        double grid = dtypes[c] == CT_BF16 ? 0.008 : dtypes[c] == CT_F16 ? 0.001 : 0;
        CHECK(d < 1.95 / 1000 + grid);
    }
}

/* ---- seeds and offsets ---- */

static bool same(const double *a, const double *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static int64_t count_equal(const double *a, const double *b, int64_t n) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) k += a[i] == b[i];
    return k;
}

DEVICE_TEST(test_random_seed_reproduces) {
    for (int normal = 0; normal < 2; normal++) {
        double *a = draw_values(normal, 42, 1000, CT_F32, device);
        CHECK(ct_initial_seed() == 42);
        double *b = draw_values(normal, 42, 1000, CT_F32, device);
        double *c = draw_values(normal, 43, 1000, CT_F32, device);
        CHECK(a && b && c);
        bool ok = same(a, b, 1000) && count_equal(a, c, 1000) < 5;
        free(a);
        free(b);
        free(c);
        CHECK(ok);
    }
}

/* Draws of n1 then n2 values equal one draw's elements [0, n1) and, after the unused words
 * of the first draw's last block, [4 * ceil(n1 / 4), + n2). */
static void check_split(ct_device device, bool normal, int64_t n1, int64_t n2) {
    ct_tensor *(*fn)(int, const int64_t *, ct_dtype, ct_device) = normal ? ct_randn : ct_rand;
    int64_t skip = (n1 + 3) / 4 * 4, total = skip + n2;
    ct_manual_seed(5);
    ct_tensor *t1 = fn(1, &n1, CT_F64, device);
    ct_tensor *t2 = fn(1, &n2, CT_F64, device);
    ct_manual_seed(5);
    ct_tensor *all = fn(1, &total, CT_F64, device);
    double *v1 = ref_read(t1), *v2 = ref_read(t2), *va = ref_read(all);
    ct_release(t1);
    ct_release(t2);
    ct_release(all);
    bool ok = v1 && v2 && va && same(v1, va, n1) && same(v2, va + skip, n2) &&
              count_equal(v1, v2, n1 < n2 ? n1 : n2) == 0;
    free(v1);
    free(v2);
    free(va);
    CHECK(ok);
}

DEVICE_TEST(test_random_consecutive_draws_continue_the_stream) {
    for (int normal = 0; normal < 2; normal++) {
        check_split(device, normal, 12, 8);
        check_split(device, normal, 10, 6);
        check_split(device, normal, 1, 3);
        check_split(device, normal, 50000, 40000); /* both above the OpenMP threshold */
    }
}

DEVICE_TEST(test_random_empty_and_scalar_draws) {
    ct_manual_seed(8);
    ct_tensor *empty = ct_rand(2, (int64_t[]){0, 3}, CT_F32, device);
    CHECK_NOT_NULL(empty);
    CHECK(ct_numel(empty) == 0);
    ct_release(empty);
    ct_tensor *s = ct_randn(0, NULL, CT_F32, device);
    CHECK_NOT_NULL(s);
    CHECK(ct_ndim(s) == 0);
    double value;
    CHECK_OK(ct_item(s, &value));
    ct_release(s);
    /* The empty draw took no block: the scalar is element 0 of the stream. */
    double *fresh = draw_values(true, 8, 1, CT_F32, device);
    CHECK_NOT_NULL(fresh);
    bool ok = fresh[0] == value;
    free(fresh);
    CHECK(ok);
}

DEVICE_TEST(test_random_thread_count_does_not_change_values) {
#ifdef _OPENMP
    int saved = omp_get_max_threads();
    const int64_t n = 300001;
    omp_set_num_threads(1);
    double *u1 = draw_values(false, 3, n, CT_F32, device),
           *z1 = draw_values(true, 3, n, CT_F16, device);
    omp_set_num_threads(2);
    double *u2 = draw_values(false, 3, n, CT_F32, device),
           *z2 = draw_values(true, 3, n, CT_F16, device);
    omp_set_num_threads(saved);
    bool ok = u1 && u2 && z1 && z2 && same(u1, u2, n) && same(z1, z2, n);
    free(u1);
    free(u2);
    free(z1);
    free(z2);
    CHECK(ok);
#else
    ct_test_skip("built without OpenMP");
#endif
}

/* ---- errors ---- */

DEVICE_TEST(test_random_rejects_non_float_dtypes) {
    int64_t shape[1] = {4};
    CHECK(ct_rand(1, shape, CT_I32, device) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_rand: dtype int32 is not a floating dtype");
    CHECK(ct_randn(1, shape, CT_BOOL, device) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_randn: dtype bool is not a floating dtype");
    CHECK(ct_rand(1, shape, (ct_dtype)42, device) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_rand: invalid dtype 42");
    CHECK(ct_randn(1, (int64_t[]){-2}, CT_F32, device) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_randn: size -2 of axis 0 is negative");
}

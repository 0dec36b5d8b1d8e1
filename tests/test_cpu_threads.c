/* The CPU parallel policy (backend/cpu/cpu_threads.c): a measured region cost, thread
 * counts that grow with the work, and results that do not depend on the thread count.
 *
 * Bit for bit whatever the thread count: elementwise ops, reductions (fixed chunks merged
 * in order), matmul (slabs of C, each element's sum over k in OpenBLAS's one order), the
 * optimiser update, and so a whole MLP training step. The convolution's weight gradient is
 * the exception of ctensor's own: its per-block partial sums are as many as 4 x threads, so
 * the order of its sum depends on the thread count (differences within 1e-6 of the largest
 * gradient here). So are matmul and the MLP step where the BLAS's own bits depend on the
 * slab's shape (blas_slab_bitwise), which the test then says. Each comparison forces the split
 * (a region cost of 0) on two threads against one thread. A lone large eigh or svd takes
 * other stages on two threads than on one: both are checked for accuracy, and against each
 * other. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor/optim.h>

#include "backend/cpu/cpu_impl.h"
#include "ct_ref.h"
#include "ct_test.h"

/* The bytes of a CPU f32 tensor, in a new buffer (NULL on failure). */
static float *host_copy(const ct_tensor *t) {
    if (!t) return NULL;
    size_t bytes = (size_t)ct_numel(t) * sizeof(float);
    float *out = malloc(bytes);
    if (out && ct_copy_to_host(t, out, bytes) != CT_OK) {
        free(out);
        return NULL;
    }
    return out;
}

typedef float *(*compute_fn)(void *ctx);

/* The largest |a - b| of n floats over the largest |a|. */
static double relative_difference(const float *a, const float *b, int64_t n) {
    double worst = 0, largest = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        worst = d > worst ? d : worst;
        largest = fabs((double)a[i]) > largest ? fabs((double)a[i]) : largest;
    }
    return largest > 0 ? worst / largest : worst;
}

/* Run fn on one thread and on two with the split forced; compare the bits of n floats, or,
 * with tolerance > 0, their relative difference. */
static bool close_on_one_and_two_threads(compute_fn fn, void *ctx, int64_t n, double tolerance) {
    int threads = omp_get_max_threads();
    double region = ct__cpu_region_ns();
    omp_set_num_threads(1);
    float *one = fn(ctx);
    omp_set_num_threads(2);
    ct__cpu_set_region_ns(0.0);
    float *two = fn(ctx);
    ct__cpu_set_region_ns(region);
    omp_set_num_threads(threads);
    bool same = one && two && memcmp(one, two, (size_t)n * sizeof(float)) == 0;
    if (one && two && tolerance > 0) {
        double difference = relative_difference(one, two, n);
        printf("    1 and 2 threads: largest difference %.3g of the largest value (within %g)\n",
               difference, tolerance);
        same = difference <= tolerance;
    }
    free(one);
    free(two);
    return same;
}

static bool same_on_one_and_two_threads(compute_fn fn, void *ctx, int64_t n) {
    return close_on_one_and_two_threads(fn, ctx, n, 0.0);
}

TEST(test_cpu_threads_region_cost_measured) {
    double ns = ct__cpu_region_ns();
    CHECK(ns >= 0.0 && ns < 1e8);     /* under 100 ms, even on a busy machine */
    CHECK(ct__cpu_region_ns() == ns); /* measured once */
    CHECK(ct__cpu_parallel_threshold() >= 8192);
}

TEST(test_cpu_threads_grow_with_work) {
    if (omp_get_max_threads() < 2) {
        ct_test_skip("one OpenMP thread (OMP_NUM_THREADS=1)");
        return;
    }
    double region = ct__cpu_region_ns();
    ct__cpu_set_region_ns(10000.0); /* 10 us: 8 x 10 us of work per split */
    CHECK(ct__cpu_threads_for(1000.0) == 1);
    CHECK(ct__cpu_threads_for(79000.0) == 1);
    CHECK(ct__cpu_threads_for(81000.0) == 2);
    CHECK(ct__cpu_threads_for_elements(32768) == 1); /* an MLP's activations: 8 us */
    CHECK(ct__cpu_threads_for_gemm(128, 256, 784) == 2);
    CHECK(ct__cpu_threads_for_gemm(128, 10, 128) == 1);
    CHECK(ct__cpu_parallel_threshold() == 320000);
    ct__cpu_set_region_ns(region);
}

typedef struct {
    ct_tensor *a, *b;
} pair;

static float *elementwise_chain(void *ctx) {
    pair *p = ctx;
    ct_scope_begin();
    float *out = host_copy(ct_mul(ct_exp(ct_neg(ct_abs(p->a))), ct_add(p->a, p->b)));
    ct_scope_end();
    return out;
}

static float *reductions(void *ctx) {
    pair *p = ctx;
    ct_scope_begin();
    float *out = host_copy(
        ct_concat(3,
                  (const ct_tensor *[]){ct_reshape(ct_sum(p->a, 0, NULL, false), 1, (int64_t[]){1}),
                                        ct_sum(p->a, 1, (int[]){0}, false),
                                        ct_mean(p->a, 1, (int[]){1}, false)},
                  0));
    ct_scope_end();
    return out;
}

static float *product(void *ctx) {
    pair *p = ctx;
    ct_scope_begin();
    float *out = host_copy(ct_matmul(p->a, ct_transpose(p->b, 0, 1)));
    ct_scope_end();
    return out;
}

/* Whether the BLAS gives rows 0..255 of the product the same bits when it computes them
 * alone, as the two-thread split does, as in one call over all 512 rows (one thread both
 * times). OpenBLAS does with the kernels it picks for the processor; with OPENBLAS_CORETYPE
 * forcing another family's (some machines here set Haswell's on an AVX-512 Zen 5) the order
 * of a sum depends on the slab's shape, so the split's bits follow the thread count there. */
static bool blas_slab_bitwise(const pair *p) {
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    ct_scope_begin();
    const ct_tensor *bt = ct_transpose(p->b, 0, 1);
    float *whole = host_copy(ct_slice(ct_matmul(p->a, bt), 0, 0, 256, 1));
    float *slab = host_copy(ct_matmul(ct_slice(p->a, 0, 0, 256, 1), bt));
    ct_scope_end();
    omp_set_num_threads(threads);
    bool same = whole && slab && memcmp(whole, slab, 256 * 512 * sizeof(float)) == 0;
    free(whole);
    free(slab);
    return same;
}

/* The tolerance of a comparison whose products the BLAS may sum in another order: 0 (bit for
 * bit) where the BLAS is slab-invariant (blas_slab_bitwise), else the one given, saying so. */
static double product_tolerance(const pair *p, const char *what, double tolerance) {
    if (blas_slab_bitwise(p)) return 0.0;
    printf("    %s: within %g, not bit for bit: this BLAS (OPENBLAS_CORETYPE=%s) gives a slab of "
           "rows other bits than the whole product\n",
           what, tolerance, getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset");
    return tolerance;
}

static pair product_pair(void) {
    ct_manual_seed(7);
    return (pair){ct_randn(2, (int64_t[]){512, 600}, CT_F32, CT_CPU),
                  ct_randn(2, (int64_t[]){512, 600}, CT_F32, CT_CPU)};
}

TEST(test_cpu_threads_ops_bitwise_equal) {
    pair p = product_pair();
    CHECK_NOT_NULL(p.a);
    CHECK_NOT_NULL(p.b);
    CHECK(same_on_one_and_two_threads(elementwise_chain, &p, 512 * 600));
    CHECK(same_on_one_and_two_threads(reductions, &p, 1 + 600 + 512));
    CHECK(close_on_one_and_two_threads(product, &p, 512 * 512,
                                       product_tolerance(&p, "matmul", 1e-5)));
    ct_release(p.a);
    ct_release(p.b);
}

/* Three Adam steps of the MLP of `ctensor train` (784-256-128-10, batch 128) from one
 * seed; the parameters afterwards, concatenated. */
static float *mlp_steps(void *ctx) {
    (void)ctx;
    ct_manual_seed(3);
    ct_module *model = ct_nn_sequential(
        5, (ct_module *[]){ct_nn_linear(784, 256, true), ct_nn_relu(), ct_nn_linear(256, 128, true),
                           ct_nn_relu(), ct_nn_linear(128, 10, true)});
    ct_tensor *params[8];
    int n = model ? ct_module_parameters(model, params, 8) : 0;
    ct_optimizer *adam = n > 0 ? ct_adam(n, params, NULL) : NULL;
    ct_tensor *x = ct_randn(2, (int64_t[]){128, 784}, CT_F32, CT_CPU);
    ct_tensor *labels = ct_arange(0, 128, 1, CT_I64, CT_CPU);
    ct_tensor *y = ct_remainder_scalar(labels, 10);
    bool ok = adam && x && y;
    for (int step = 0; ok && step < 3; step++) {
        ct_scope_begin();
        ct_tensor *loss = ct_cross_entropy(ct_module_forward(model, x), y, NULL);
        ok = ct_optimizer_zero_grad(adam) == CT_OK && ct_backward(loss) == CT_OK &&
             ct_optimizer_step(adam) == CT_OK;
        ct_scope_end();
    }
    float *out = NULL;
    if (ok) {
        ct_scope_begin();
        ct_tensor *flat[8];
        for (int i = 0; i < n; i++) flat[i] = ct_reshape(params[i], 1, (int64_t[]){-1});
        out = host_copy(ct_concat(n, (const ct_tensor *const *)flat, 0));
        ct_scope_end();
    }
    ct_release(x);
    ct_release(labels);
    ct_release(y);
    ct_optimizer_free(adam);
    ct_module_free(model);
    return out;
}

TEST(test_cpu_threads_mlp_step_bitwise_equal) {
    int64_t n = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;
    pair p = product_pair();
    CHECK(p.a && p.b);
    /* Adam's first steps move a parameter by about the learning rate whatever the size of its
     * gradient, so a near-zero gradient's rounding shows in the parameters 10x over. */
    double tolerance = product_tolerance(&p, "MLP step", 1e-4);
    ct_release(p.a);
    ct_release(p.b);
    CHECK(close_on_one_and_two_threads(mlp_steps, NULL, n, tolerance));
}

/* The weight gradient of a convolution of the CNN's second layer (batch 64). */
static float *conv_weight_grad(void *ctx) {
    pair *p = ctx;
    ct_scope_begin();
    ct_conv2d_options pad = {.padding = {1, 1}};
    float *out = NULL;
    if (ct_backward(ct_sum(ct_conv2d(p->a, p->b, NULL, &pad), 0, NULL, false)) == CT_OK)
        out = host_copy(ct_grad(p->b));
    ct_zero_grad(p->b);
    ct_scope_end();
    return out;
}

TEST(test_cpu_threads_conv_weight_grad_close) {
    ct_manual_seed(11);
    pair p = {ct_randn(4, (int64_t[]){64, 32, 14, 14}, CT_F32, CT_CPU),
              ct_randn(4, (int64_t[]){64, 32, 3, 3}, CT_F32, CT_CPU)};
    CHECK_OK(ct_set_requires_grad(p.b, true));
    /* Each gradient is a sum of 64 x 14 x 14 products of N(0, 1) values (some near 0 by
     * cancellation): the differences are measured against the largest gradient. */
    CHECK(close_on_one_and_two_threads(conv_weight_grad, &p, 64 * 32 * 9, 1e-6));
    ct_release(p.a);
    ct_release(p.b);
}

/* An m x n matrix as complex128 pairs, row-major, parts uniform in [-1, 1) times scale (the
 * imaginary parts 0 when real); Hermitian (m = n) when hermitian. */
static double *matrix_pairs(int64_t m, int64_t n, bool real, bool hermitian, double scale) {
    double *a = malloc(sizeof(double) * (size_t)(2 * m * n));
    ref_random(a, 2 * m * n, 71, -scale, scale);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            if (real || (hermitian && i == j)) a[2 * (i * n + j) + 1] = 0;
            if (hermitian && j < i) /* the transpose of the upper triangle, conjugated */
                a[2 * (i * n + j)] = a[2 * (j * n + i)],
                               a[2 * (i * n + j) + 1] = -a[2 * (j * n + i) + 1];
        }
    return a;
}

/* The matrix of matrix_pairs as a CPU tensor of dtype. */
static ct_tensor *matrix_as(const double *a, int64_t m, int64_t n, ct_dtype dtype) {
    ct_tensor *pairs = ct_from_data(a, 2, (int64_t[]){m, n}, CT_C128, CT_CPU), *x = NULL;
    ct_tensor *parts = pairs && !ct_dtype_is_complex(dtype) ? ct_real(pairs) : ct_retain(pairs);
    if (parts) x = ct_cast(parts, dtype);
    ct_release(pairs), ct_release(parts);
    return x;
}

/* t's elements as complex128 pairs (NULL when t is NULL or cannot be read). */
static double *pairs_of(const ct_tensor *t) {
    ct_tensor *wide = t ? ct_cast(t, CT_C128) : NULL;
    size_t bytes = wide ? (size_t)ct_numel(wide) * 2 * sizeof(double) : 0;
    double *out = wide ? malloc(bytes + 1) : NULL;
    if (out && ct_copy_to_host(wide, out, bytes) != CT_OK) free(out), out = NULL;
    ct_release(wide);
    return out;
}

/* The largest |element| of an m x n matrix of pairs. */
static double largest_of(const double *a, int64_t m, int64_t n) {
    double largest = 0;
    for (int64_t i = 0; i < m * n; i++) largest = fmax(largest, hypot(a[2 * i], a[2 * i + 1]));
    return largest;
}

/* max |X^H X - I| for the rows x cols pairs X (orthonormal columns), or max |X X^H - I| when
 * of_rows (orthonormal rows). */
static double unitary_deviation(const double *x, int64_t rows, int64_t cols, bool of_rows) {
    int64_t count = of_rows ? rows : cols, length = of_rows ? cols : rows;
    double worst = 0;
    for (int64_t i = 0; i < count; i++)
        for (int64_t j = 0; j < count; j++) {
            double re = i == j ? -1 : 0, im = 0;
            for (int64_t k = 0; k < length; k++) {
                int64_t p = of_rows ? j * cols + k : k * cols + i; /* conjugated side */
                int64_t q = of_rows ? i * cols + k : k * cols + j;
                double ur = x[2 * p], ui = -x[2 * p + 1], vr = x[2 * q], vi = x[2 * q + 1];
                re += ur * vr - ui * vi, im += ur * vi + ui * vr;
            }
            worst = fmax(worst, hypot(re, im));
        }
    return worst;
}

typedef struct factor_errors {
    bool ok;
    double residual;  /* eigh: max |A v_j - w_j v_j|; svd: max |U S V^H - A|; over max |a_ij| */
    double unitarity; /* the largest deviation of the vectors from orthonormal */
} factor_errors;

/* eigh of a (n x n pairs, Hermitian) as dtype on `threads` OpenMP threads, its errors
 * measured in double here; w: the eigenvalues (n). */
static factor_errors eigh_on_threads(const double *a, int64_t n, ct_dtype dtype, int threads,
                                     double *w) {
    factor_errors e = {false, INFINITY, INFINITY};
    int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    ct_tensor *x = matrix_as(a, n, n, dtype), *values = NULL, *vectors = NULL;
    ct_status status = x ? ct_linalg_eigh(x, &values, &vectors) : CT_ERR_INVALID_ARG;
    omp_set_num_threads(before);
    double *wv = status == CT_OK ? pairs_of(values) : NULL;
    double *v = status == CT_OK ? pairs_of(vectors) : NULL, largest = largest_of(a, n, n);
    e.ok = wv && v;
    for (int64_t j = 0; e.ok && j < n; j++) w[j] = wv[2 * j];
    if (e.ok) e.residual = 0, e.unitarity = unitary_deviation(v, n, n, false);
    for (int64_t i = 0; e.ok && i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double re = -w[j] * v[2 * (i * n + j)], im = -w[j] * v[2 * (i * n + j) + 1];
            for (int64_t k = 0; k < n; k++) {
                double ar = a[2 * (i * n + k)], ai = a[2 * (i * n + k) + 1];
                double vr = v[2 * (k * n + j)], vi = v[2 * (k * n + j) + 1];
                re += ar * vr - ai * vi, im += ar * vi + ai * vr;
            }
            e.residual = fmax(e.residual, hypot(re, im) / largest);
        }
    ct_release(x), ct_release(values), ct_release(vectors);
    free(wv), free(v);
    return e;
}

/* svd of a (m x n pairs) as dtype on `threads` OpenMP threads, as eigh_on_threads; s: the
 * singular values (min(m, n)). */
static factor_errors svd_on_threads(const double *a, int64_t m, int64_t n, bool full,
                                    ct_dtype dtype, int threads, double *s) {
    factor_errors e = {false, INFINITY, INFINITY};
    int64_t k = m < n ? m : n, ucols = full ? m : k, vrows = full ? n : k;
    int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    ct_tensor *x = matrix_as(a, m, n, dtype), *ut = NULL, *st = NULL, *vht = NULL;
    ct_status status = x ? ct_linalg_svd(x, full, &ut, &st, &vht) : CT_ERR_INVALID_ARG;
    omp_set_num_threads(before);
    double *u = status == CT_OK ? pairs_of(ut) : NULL, *sv = status == CT_OK ? pairs_of(st) : NULL;
    double *vh = status == CT_OK ? pairs_of(vht) : NULL, largest = largest_of(a, m, n);
    e.ok = u && sv && vh;
    for (int64_t j = 0; e.ok && j < k; j++) s[j] = sv[2 * j];
    if (e.ok) {
        e.residual = 0;
        e.unitarity =
            fmax(unitary_deviation(u, m, ucols, false), unitary_deviation(vh, vrows, n, true));
    }
    for (int64_t i = 0; e.ok && i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double re = -a[2 * (i * n + j)], im = -a[2 * (i * n + j) + 1];
            for (int64_t p = 0; p < k; p++) {
                double ur = u[2 * (i * ucols + p)] * s[p], ui = u[2 * (i * ucols + p) + 1] * s[p];
                double vr = vh[2 * (p * n + j)], vi = vh[2 * (p * n + j) + 1];
                re += ur * vr - ui * vi, im += ur * vi + ui * vr;
            }
            e.residual = fmax(e.residual, hypot(re, im) / largest);
        }
    ct_release(x), ct_release(ut), ct_release(st), ct_release(vht);
    free(u), free(sv), free(vh);
    return e;
}

static const ct_dtype linalg_dtypes[] = {CT_F64, CT_F32, CT_C128, CT_C64};

/* Both factorizations to the precision's accuracy, and the same values (within it). */
static void check_one_and_two(const char *what, ct_dtype dtype, factor_errors one,
                              factor_errors two, const double *values1, const double *values2,
                              int64_t count, double largest) {
    double tolerance = dtype == CT_F64 || dtype == CT_C128 ? 1e-12 : 1e-4, apart = 0;
    for (int64_t i = 0; i < count; i++)
        apart = fmax(apart, fabs(values1[i] - values2[i]) / largest);
    printf("    %s %s: residual %.3g / %.3g, unitarity %.3g / %.3g, values %.3g apart (1 / 2 "
           "threads)\n",
           what, ct_dtype_name(dtype), one.residual, two.residual, one.unitarity, two.unitarity,
           apart);
    CHECK(one.ok && two.ok);
    CHECK(one.residual < tolerance && two.residual < tolerance);
    CHECK(one.unitarity < tolerance && two.unitarity < tolerance);
    CHECK(apart < tolerance);
}

/* A lone large matrix's eigh with vectors takes its own path on two threads (eigh_split in
 * cpu_linalg_typed_impl.h: Q formed beside stedc, then a GEMM over the threads), and syevd on
 * one: both are eigendecompositions to the precision's accuracy, with the same eigenvalues.
 * n = 201 (over the 192 of that path) splits the columns unevenly. A matrix syevd might scale
 * (elements near 1e200) goes to syevd on two threads as well. */
TEST(test_cpu_threads_eigh_alone) {
    const int64_t n = 201;
    double w1[201], w2[201];
    for (int d = 0; d < 4; d++) {
        ct_dtype dtype = linalg_dtypes[d];
        for (int scaled = 0; scaled < (d == 0 ? 2 : 1); scaled++) {
            double *a = matrix_pairs(n, n, !ct_dtype_is_complex(dtype), true, scaled ? 1e200 : 1);
            factor_errors one = eigh_on_threads(a, n, dtype, 1, w1);
            factor_errors two = eigh_on_threads(a, n, dtype, 2, w2);
            check_one_and_two(scaled ? "eigh x 1e200" : "eigh", dtype, one, two, w1, w2, n,
                              largest_of(a, n, n));
            free(a);
        }
    }
}

/* The same for svd with vectors (svd_split: Q and P^H formed beside bdsdc, then GEMMs), whose
 * path takes m >= n below 11/6 n: 201 x 201 reduced and 260 x 201 full; 201 x 260 and 400 x 201
 * go to gesdd on two threads too, as does a matrix gesdd might scale. */
TEST(test_cpu_threads_svd_alone) {
    static const struct {
        int64_t m, n;
        bool full;
        double scale;
    } shapes[] = {{201, 201, false, 1},
                  {260, 201, true, 1},
                  {201, 260, false, 1},
                  {400, 201, false, 1},
                  {201, 201, true, 1e200}};
    double s1[201], s2[201];
    char what[64];
    for (int d = 0; d < 4; d++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            ct_dtype dtype = linalg_dtypes[d];
            int64_t m = shapes[i].m, n = shapes[i].n, k = m < n ? m : n;
            if (shapes[i].scale != 1 && dtype != CT_F64) continue; /* f64 alone holds 1e200 */
            double *a = matrix_pairs(m, n, !ct_dtype_is_complex(dtype), false, shapes[i].scale);
            factor_errors one = svd_on_threads(a, m, n, shapes[i].full, dtype, 1, s1);
            factor_errors two = svd_on_threads(a, m, n, shapes[i].full, dtype, 2, s2);
            snprintf(what, sizeof what, "svd %lldx%lld%s%s", (long long)m, (long long)n,
                     shapes[i].full ? " full" : "", shapes[i].scale != 1 ? " x 1e200" : "");
            check_one_and_two(what, dtype, one, two, s1, s2, k, largest_of(a, m, n));
            free(a);
        }
}

/* bench_ops: ctensor's ops timed from C, beside the same work done directly in C: OpenBLAS's
 * cblas_sgemm for matmul, a plain OpenMP loop for add, memcpy for clone. The direct rows
 * say what this machine allows; the ctensor rows how close the library gets.
 *
 * Prints one tab-separated line per figure: benchmark, implementation, unit, value (or
 * "n/a"), note. bench/run.sh joins these lines with NumPy's (bench/peer_numpy.py, which
 * measures the same things the same way) into one table. An op that fails, or that this
 * build of the library does not have yet, is reported as n/a with the reason, and the run
 * carries on.
 *
 * Timing: after a warm-up, calls run in batches long enough (>= 1 ms) for the clock to be
 * exact; a figure is the median batch's time per call (CLOCK_MONOTONIC). A ctensor op and
 * its direct counterpart are timed in alternating batches, so both see the same load.
 * ctensor's elementwise ops make a fresh result on every call, as NumPy's `a + b` does:
 * r = ct_add(a, b); ct_release(r) (the pool hands back the cached block); the direct loops
 * write into one preallocated result. Bandwidth counts bytes read and written: 12 B per f32 element
 * for add and mul, 8 for exp, 4 for sum.
 *
 * Usage: bench_ops [--quick]   (--quick: small sizes and short runs, to check the harness) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctensor/ctensor.h"

#include "bench_clock.h"

typedef ct_status (*call_fn)(void *ctx);

static double budget_s = 0.5;  /* timed seconds per figure (after the warm-up) */
static double warmup_s = 0.05; /* seconds of warm-up calls */
#define BATCH_S 1e-3           /* a batch lasts at least this long */
#define MIN_BATCHES 7
#define MAX_BATCHES 101

/* One function being timed: its warm-up estimate, batch size and batch times. */
typedef struct timing {
    call_fn fn;
    void *ctx;
    double per_call; /* seconds, from the warm-up */
    long batch;      /* calls per timed batch */
    double times[MAX_BATCHES];
    bool failed; /* a call failed: the error is set */
} timing;

static void warm_up(timing *t) {
    long calls = 0;
    double start = bench_now(), elapsed = 0.0;
    while (calls < 2 || elapsed < warmup_s) {
        if (t->fn(t->ctx) != CT_OK) {
            t->failed = true;
            return;
        }
        calls++;
        elapsed = bench_now() - start;
    }
    t->per_call = elapsed / (double)calls;
    t->batch = t->per_call >= BATCH_S ? 1 : (long)(BATCH_S / t->per_call) + 1;
}

static void run_batch(timing *t, long b) {
    double t0 = bench_now();
    for (long i = 0; i < t->batch && !t->failed; i++)
        if (t->fn(t->ctx) != CT_OK) t->failed = true;
    t->times[b] = (bench_now() - t0) / (double)t->batch;
}

/* Time n functions in alternating batches, so that a change in the machine's load falls on
 * all of them alike. Writes each one's median seconds per call, or -1 when it failed. */
static void time_interleaved(int n, timing *t, double *seconds) {
    double round_s = 0.0;
    for (int k = 0; k < n; k++) {
        warm_up(&t[k]);
        if (!t[k].failed) round_s += t[k].per_call * (double)t[k].batch;
    }
    long batches = round_s > 0 ? (long)(budget_s / round_s) : MAX_BATCHES;
    if (batches < MIN_BATCHES) batches = MIN_BATCHES;
    if (batches > MAX_BATCHES) batches = MAX_BATCHES;
    for (long b = 0; b < batches; b++)
        for (int k = 0; k < n; k++)
            if (!t[k].failed) run_batch(&t[k], b);
    for (int k = 0; k < n; k++) {
        qsort(t[k].times, (size_t)batches, sizeof t[k].times[0], bench_compare_doubles);
        seconds[k] = t[k].failed ? -1.0 : t[k].times[batches / 2];
    }
}

/* One output line; value < 0 means n/a, with note saying why. */
static void report(const char *bench, const char *impl, const char *unit, double value,
                   const char *note) {
    char clean[512];
    snprintf(clean, sizeof clean, "%s", note ? note : "");
    for (char *c = clean; *c; c++)
        if (*c == '\t' || *c == '\n') *c = ' ';
    if (value < 0)
        printf("%s\t%s\t%s\tn/a\t%s\n", bench, impl, unit, clean);
    else
        printf("%s\t%s\t%s\t%.6g\t%s\n", bench, impl, unit, value, clean);
    fflush(stdout);
}

/* Report work / seconds-per-call in unit (ns per call when work is 0), or the failure. */
static void report_timing(const char *bench, const char *impl, const char *unit, double work,
                          const timing *t, double seconds) {
    if (t->failed) {
        report(bench, impl, unit, -1.0, ct_last_error());
        ct_clear_error();
        return;
    }
    report(bench, impl, unit, work > 0 ? work / seconds : seconds * 1e9, NULL);
}

/* Time ctensor's call beside a direct C call (NULL: none), in alternating batches when
 * interleave is set (else all of ctensor's, then all of the direct call's), and report
 * both. work: units of work per call (0: report ns). */
static void measure_pair(const char *bench, const char *unit, double work, call_fn ct_fn,
                         void *ct_ctx, call_fn direct_fn, void *direct_ctx, bool interleave) {
    timing t[2] = {{.fn = direct_fn, .ctx = direct_ctx}, {.fn = ct_fn, .ctx = ct_ctx}};
    double seconds[2] = {-1.0, -1.0};
    ct_clear_error();
    if (!direct_fn) {
        time_interleaved(1, &t[1], seconds + 1);
    } else if (interleave) {
        time_interleaved(2, t, seconds);
    } else {
        time_interleaved(1, &t[1], seconds + 1);
        time_interleaved(1, &t[0], seconds);
    }
    if (direct_fn) report_timing(bench, "direct", unit, work, &t[0], seconds[0]);
    report_timing(bench, "ctensor", unit, work, &t[1], seconds[1]);
}

/* n f32 values uniform in [-1, 1) from a fixed LCG (runs compare); malloc'd. */
static float *random_values(int64_t n) {
    float *values = malloc((size_t)(n > 0 ? n : 1) * sizeof *values);
    uint64_t state = 0x9e3779b97f4a7c15ull + (uint64_t)n;
    for (int64_t i = 0; values && i < n; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        values[i] = (float)((double)(state >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
    }
    return values;
}

/* A CPU f32 tensor holding values (NULL values give NULL). */
static ct_tensor *tensor_of(const float *values, int ndim, const int64_t *shape) {
    return values ? ct_from_data(values, ndim, shape, CT_F32, CT_CPU) : NULL;
}

/* ---- the calls being timed ---- */

typedef struct op_ctx {
    ct_tensor *(*binary)(const ct_tensor *, const ct_tensor *);
    ct_tensor *(*unary)(const ct_tensor *);
    const ct_tensor *a, *b;
} op_ctx;

static ct_status keep_status(ct_tensor *result) {
    if (!result) return ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_BACKEND;
    ct_release(result);
    return CT_OK;
}

static ct_status call_binary(void *p) {
    op_ctx *c = p;
    return keep_status(c->binary(c->a, c->b));
}

static ct_status call_unary(void *p) {
    op_ctx *c = p;
    return keep_status(c->unary(c->a));
}

static ct_status call_sum(void *p) {
    op_ctx *c = p;
    return keep_status(ct_sum(c->a, 0, NULL, false));
}

/* blas_threads: OpenBLAS's own thread count as it read it from the environment at load,
 * before ctensor's first product set it to 1 (ctensor threads its products itself). */
typedef struct sgemm_ctx {
    int n, blas_threads;
    const float *a, *b;
    float *c;
} sgemm_ctx;

static int blas_threads_at_load;

/* The direct loops: r = a + b, or a copied into r, over n floats. */
typedef struct direct_ctx {
    int64_t n;
    const float *a, *b;
    float *r;
} direct_ctx;

static ct_status call_direct_add(void *p) {
    direct_ctx *d = p;
    const float *a = d->a, *b = d->b;
    float *r = d->r;
    int64_t n = d->n;
#ifdef _OPENMP
    /* Threads from the library's CT_CPU_PARALLEL_THRESHOLD on; below it no parallel region
     * at all (even a serial one costs a call into the OpenMP runtime). */
    if (n >= 32768) {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) r[i] = a[i] + b[i];
        return CT_OK;
    }
#endif
    for (int64_t i = 0; i < n; i++) r[i] = a[i] + b[i];
    return CT_OK;
}

static ct_status call_memcpy(void *p) {
    direct_ctx *d = p;
    memcpy(d->r, d->a, (size_t)d->n * sizeof *d->r);
    return CT_OK;
}

static ct_status call_sgemm(void *p) {
    sgemm_ctx *g = p;
    openblas_set_num_threads(g->blas_threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n, g->b,
                g->n, 0.0f, g->c, g->n);
    return CT_OK;
}

/* ---- the benchmarks ---- */

static void bench_matmul(int n) {
    char bench[64];
    snprintf(bench, sizeof bench, "matmul f32 %d", n);
    int64_t shape[2] = {n, n};
    float *ha = random_values((int64_t)n * n), *hb = random_values((int64_t)n * n + 1);
    float *hc = malloc((size_t)n * (size_t)n * sizeof(float));
    ct_tensor *a = tensor_of(ha, 2, shape), *b = tensor_of(hb, 2, shape);
    if (a && b && hc) {
        sgemm_ctx g = {n, blas_threads_at_load, ha, hb, hc};
        op_ctx c = {.binary = ct_matmul, .a = a, .b = b};
        /* Not interleaved: after each call OpenBLAS's own threads spin for a while, taking
         * the cores from a ctensor batch that followed. */
        measure_pair(bench, "GFLOP/s", 2.0 * n * (double)n * n * 1e-9, call_binary, &c, call_sgemm,
                     &g, false);
    } else {
        report(bench, "ctensor", "GFLOP/s", -1.0, "could not make the inputs");
    }
    free(ha);
    free(hb);
    free(hc);
    ct_release(a);
    ct_release(b);
}

/* "10^7" for 10000000. */
static void size_label(char *buf, size_t size, int64_t n) {
    int exponent = 0;
    for (int64_t m = n; m >= 10 && m % 10 == 0; m /= 10) exponent++;
    snprintf(buf, size, "10^%d", exponent);
}

static void bench_elementwise(int64_t n) {
    char label[16], bench[64];
    size_label(label, sizeof label, n);
    float *ha = random_values(n), *hb = random_values(n + 1), *hr = malloc((size_t)n * 4);
    ct_tensor *a = tensor_of(ha, 1, &n), *b = tensor_of(hb, 1, &n);
    direct_ctx d = {n, ha, hb, hr};
    struct {
        const char *name;
        ct_tensor *(*binary)(const ct_tensor *, const ct_tensor *);
        ct_tensor *(*unary)(const ct_tensor *);
        double bytes_per_element;
        call_fn direct; /* the same work in plain C, or NULL */
    } ops[] = {{"add", ct_add, NULL, 12, call_direct_add},
               {"mul", ct_mul, NULL, 12, NULL},
               {"exp", NULL, ct_exp, 8, NULL}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        snprintf(bench, sizeof bench, "%s f32 %s", ops[i].name, label);
        op_ctx c = {ops[i].binary, ops[i].unary, a, b};
        call_fn fn = c.binary ? call_binary : call_unary;
        if (!a || !b || !hr)
            report(bench, "ctensor", "GB/s", -1.0, "could not make the inputs");
        else
            measure_pair(bench, "GB/s", ops[i].bytes_per_element * (double)n * 1e-9, fn, &c,
                         ops[i].direct, &d, true);
    }
    free(ha);
    free(hb);
    free(hr);
    ct_release(a);
    ct_release(b);
}

/* Context rows: a copy (ct_clone, beside memcpy) and a sum. */
static void bench_copy_and_sum(int64_t n) {
    char label[16], bench[64];
    size_label(label, sizeof label, n);
    float *ha = random_values(n), *hr = malloc((size_t)n * sizeof *hr);
    ct_tensor *a = tensor_of(ha, 1, &n);
    direct_ctx d = {n, ha, NULL, hr};
    op_ctx c = {NULL, ct_clone, a, NULL};
    snprintf(bench, sizeof bench, "clone f32 %s", label);
    if (a && hr)
        measure_pair(bench, "GB/s", 8.0 * (double)n * 1e-9, call_unary, &c, call_memcpy, &d, true);
    snprintf(bench, sizeof bench, "sum f32 %s", label);
    if (a) measure_pair(bench, "GB/s", 4.0 * (double)n * 1e-9, call_sum, &c, NULL, NULL, true);
    free(ha);
    free(hr);
    ct_release(a);
}

/* The fixed cost of one op: ct_add on two 1-element tensors, in ns per call. */
static void bench_one_element(void) {
    int64_t one = 1;
    float values[2] = {0.5f, 0.25f};
    ct_tensor *a = tensor_of(values, 1, &one), *b = tensor_of(values + 1, 1, &one);
    op_ctx c = {ct_add, NULL, a, b};
    if (a && b) measure_pair("add 1 element", "ns", 0.0, call_binary, &c, NULL, NULL, true);
    ct_release(a);
    ct_release(b);
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (argc > 1 && !quick) {
        fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
        return 2;
    }
    if (quick) {
        budget_s = 0.02;
        warmup_s = 0.005;
    }
    blas_threads_at_load = openblas_get_num_threads();
    static const int full_matmul[] = {512, 1024, 2048}, quick_matmul[] = {64, 128, 256};
    static const int64_t full_sizes[] = {1000, 100000, 10000000}, quick_sizes[] = {1000, 100000};
    const int *matmul_sizes = quick ? quick_matmul : full_matmul;
    const int64_t *sizes = quick ? quick_sizes : full_sizes;
    int n_sizes = quick ? 2 : 3;
    for (int i = 0; i < 3; i++) bench_matmul(matmul_sizes[i]);
    for (int i = 0; i < n_sizes; i++) bench_elementwise(sizes[i]);
    bench_copy_and_sum(sizes[n_sizes - 1]);
    bench_one_element();
    return 0;
}

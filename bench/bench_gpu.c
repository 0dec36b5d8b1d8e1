/* bench_gpu: ctensor on a CUDA device, through the public API only.
 *
 * Measures matmul (f32, TF32 after ct_set_matmul_precision("high"), bf16; n x n by n x n for
 * n = 4096 and 8192) in TFLOP/s; elementwise add and exp on 2^28 f32 elements in GB/s next
 * to a device-to-device copy (ct_clone), counting bytes read and written (add 12 B per
 * element, exp and the copy 8); host-to-device (ct_from_data from pageable memory) and
 * device-to-host (ct_copy_to_host into pageable memory) from 4 KiB to 1 GiB in GB/s and
 * microseconds per copy. ctensor has no public pinned host memory: its host-to-device copies
 * go through its own pinned staging buffers, so the pageable figures are ctensor's only
 * ones; bench/peer_torch_gpu.py gives PyTorch's pageable and pinned figures beside them.
 *
 * Timing: device work is asynchronous, so each timed run is ct_synchronize, the calls,
 * ct_synchronize; after a warm-up, a figure is the median of the runs' time per call
 * (CLOCK_MONOTONIC). Each op makes a fresh result and releases it, as `a + b` does in
 * PyTorch; the pool hands the block back, so no run allocates device memory.
 *
 * Prints the tab-separated lines of bench_ops: benchmark, implementation ("ctensor"), unit,
 * value (or "n/a"), note. bench/run_gpu.sh joins them with PyTorch's into one table.
 * Without a usable CUDA device it prints "no CUDA device: <reason>" and exits 0.
 *
 * Usage: bench_gpu [--quick] [--device cuda:N]   (--quick: small sizes, to check the harness) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctensor/ctensor.h"

#include "bench_clock.h"

/* Declared by ops.h once matmul precision lands; weak so this builds and runs without it. */
CT_API ct_status ct_set_matmul_precision(const char *precision);
#pragma weak ct_set_matmul_precision

#define RUNS 5 /* timed runs per figure, after one warm-up run */

static ct_device device;
static bool quick;

typedef ct_status (*call_fn)(void *ctx);

/* Seconds per call: the median of RUNS runs of `calls` calls, each run between two
 * ct_synchronize calls. A failing call ends the measurement with its status. */
static ct_status time_calls(call_fn fn, void *ctx, int calls, double *seconds) {
    double times[RUNS];
    for (int run = -1; run < RUNS; run++) { /* run -1 warms up */
        if (ct_synchronize(device) != CT_OK) return ct_last_status();
        double start = bench_now();
        for (int i = 0; i < calls; i++)
            if (fn(ctx) != CT_OK) return ct_last_status();
        if (ct_synchronize(device) != CT_OK) return ct_last_status();
        if (run >= 0) times[run] = (bench_now() - start) / calls;
    }
    qsort(times, RUNS, sizeof times[0], bench_compare_doubles);
    *seconds = times[RUNS / 2];
    return CT_OK;
}

static void report(const char *bench, const char *unit, double value, const char *note) {
    printf("%s\tctensor\t%s\t%.6g\t%s\n", bench, unit, value, note);
    fflush(stdout);
}

static void report_failure(const char *bench, const char *unit, const char *why) {
    printf("%s\tctensor\t%s\tn/a\t%s\n", bench, unit, why);
    fflush(stdout);
    ct_clear_error();
}

/* A random n x m tensor of dtype on the device (drawn in f32, then cast). */
static ct_tensor *random_tensor(int64_t n, int64_t m, ct_dtype dtype) {
    ct_tensor *f = ct_randn(2, (int64_t[]){n, m}, CT_F32, device);
    if (!f || dtype == CT_F32) return f;
    ct_tensor *t = ct_cast(f, dtype);
    ct_release(f);
    return t;
}

typedef struct {
    const ct_tensor *a, *b;
    ct_tensor *(*unary)(const ct_tensor *);
    ct_tensor *(*binary)(const ct_tensor *, const ct_tensor *);
} op_ctx;

static ct_status call_op(void *p) {
    op_ctx *c = p;
    ct_tensor *r = c->binary ? c->binary(c->a, c->b) : c->unary(c->a);
    if (!r) return ct_last_status();
    ct_release(r);
    return CT_OK;
}

static void bench_matmul(const char *label, ct_dtype dtype, const char *precision, int64_t n) {
    char bench[64];
    snprintf(bench, sizeof bench, "matmul %s %lld", label, (long long)n);
    if (precision && !ct_set_matmul_precision) {
        report_failure(bench, "TFLOP/s", "ct_set_matmul_precision is not in this build");
        return;
    }
    if (precision && ct_set_matmul_precision(precision) != CT_OK) {
        report_failure(bench, "TFLOP/s", ct_last_error());
        return;
    }
    ct_tensor *a = random_tensor(n, n, dtype), *b = random_tensor(n, n, dtype);
    op_ctx ctx = {a, b, NULL, ct_matmul};
    double flops = 2.0 * (double)n * (double)n * (double)n, seconds = 0;
    /* about 0.2 s a run at the expected rate (f32 ~50, TF32 and bf16 several hundred) */
    int calls = (int)(0.2 / (flops / (dtype == CT_F32 && !precision ? 5e13 : 4e14))) + 1;
    if (!a || !b || time_calls(call_op, &ctx, calls, &seconds) != CT_OK)
        report_failure(bench, "TFLOP/s", ct_last_error());
    else
        report(bench, "TFLOP/s", flops / seconds / 1e12, "");
    ct_release(a);
    ct_release(b);
    if (precision && ct_set_matmul_precision) ct_set_matmul_precision("highest");
}

static void bench_elementwise(int64_t numel, const char *numel_text) {
    ct_tensor *a = ct_randn(1, (int64_t[]){numel}, CT_F32, device);
    ct_tensor *b = ct_randn(1, (int64_t[]){numel}, CT_F32, device);
    struct {
        const char *name;
        op_ctx ctx;
        double bytes_per_element;
    } ops[] = {
        {"add", {a, b, NULL, ct_add}, 12},
        {"exp", {a, NULL, ct_exp, NULL}, 8},
        {"clone (device-to-device copy)", {a, NULL, ct_clone, NULL}, 8},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char bench[96];
        double seconds = 0;
        snprintf(bench, sizeof bench, "%s f32 %s", ops[i].name, numel_text);
        if (!a || !b || time_calls(call_op, &ops[i].ctx, quick ? 2 : 10, &seconds) != CT_OK)
            report_failure(bench, "GB/s", ct_last_error());
        else
            report(bench, "GB/s", ops[i].bytes_per_element * (double)numel / seconds / 1e9,
                   "bytes read and written");
    }
    ct_release(a);
    ct_release(b);
}

typedef struct {
    const void *host;
    void *back;
    size_t size;
    ct_tensor *on_device;
} transfer_ctx;

static ct_status upload(void *p) {
    transfer_ctx *c = p;
    ct_tensor *t = ct_from_data(c->host, 1, (int64_t[]){(int64_t)c->size}, CT_U8, device);
    if (!t) return ct_last_status();
    ct_release(t);
    return CT_OK;
}

static ct_status download(void *p) {
    transfer_ctx *c = p;
    return ct_copy_to_host(c->on_device, c->back, c->size);
}

static void size_text(size_t size, char *buf, size_t n) {
    if (size >= (1u << 30))
        snprintf(buf, n, "%zu GiB", size >> 30);
    else if (size >= (1u << 20))
        snprintf(buf, n, "%zu MiB", size >> 20);
    else
        snprintf(buf, n, "%zu KiB", size >> 10);
}

static void bench_transfer(size_t size) {
    char text[32], bench[64], note[96];
    size_text(size, text, sizeof text);
    transfer_ctx ctx = {malloc(size), malloc(size), size, NULL};
    if (!ctx.host || !ctx.back) {
        free((void *)ctx.host);
        free(ctx.back);
        printf("h2d pageable %s\tctensor\tGB/s\tn/a\tno host memory\n", text);
        return;
    }
    memset((void *)ctx.host, 1, size); /* touch the pages, as a real source would be */
    memset(ctx.back, 0, size);
    /* about 0.05 s a run at 10 us + 20 GB/s a copy, at least 3 calls */
    int calls = (int)(0.05 / (1e-5 + (double)size / 2e10)) + 3;
    call_fn fns[2] = {upload, download};
    const char *names[2] = {"h2d pageable", "d2h pageable"};
    ctx.on_device = ct_from_data(ctx.host, 1, (int64_t[]){(int64_t)size}, CT_U8, device);
    for (int i = 0; i < 2; i++) {
        double seconds = 0;
        snprintf(bench, sizeof bench, "%s %s", names[i], text);
        if (!ctx.on_device || time_calls(fns[i], &ctx, calls, &seconds) != CT_OK) {
            report_failure(bench, "GB/s", ct_last_error());
            continue;
        }
        snprintf(note, sizeof note, "%.1f us per copy%s", seconds * 1e6,
                 i == 0 ? "; ctensor stages through its pinned buffers" : "");
        report(bench, "GB/s", (double)size / seconds / 1e9, note);
    }
    ct_release(ctx.on_device);
    free((void *)ctx.host);
    free(ctx.back);
}

static int parse_args(int argc, char **argv) {
    device = (ct_device){CT_DEVICE_CUDA, 0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            if (ct_device_parse(argv[++i], &device) != CT_OK) {
                fprintf(stderr, "bench_gpu: %s\n", ct_last_error());
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_gpu [--quick] [--device cuda:N]\n");
            return 2;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    int bad = parse_args(argc, argv);
    if (bad) return bad;
    if (!ct_cuda_is_available() || ct_device_check(device) != CT_OK) {
        printf("no CUDA device: %s\n",
               ct_cuda_is_available() ? ct_last_error() : ct_cuda_unavailable_reason());
        return 0;
    }
    const int64_t sizes[2] = {quick ? 512 : 4096, quick ? 1024 : 8192};
    for (int i = 0; i < 2; i++) {
        bench_matmul("f32", CT_F32, NULL, sizes[i]);
        bench_matmul("tf32", CT_F32, "high", sizes[i]);
        bench_matmul("bf16", CT_BF16, NULL, sizes[i]);
    }
    bench_elementwise(quick ? (int64_t)1 << 20 : (int64_t)1 << 28, quick ? "2^20" : "2^28");
    size_t largest = quick ? (size_t)4 << 20 : (size_t)1 << 30;
    for (size_t size = 4096; size <= largest; size *= 4) bench_transfer(size);
    return 0;
}

/* `ctensor bench`: timing. Each figure is the seconds per call of one op at one size on one
 * device, the median over timed batches of calls. Device work is asynchronous, so every
 * batch runs between two ct_synchronize calls. The number of calls per batch is chosen from
 * a warm-up call so that a measurement takes about the plan's budget whatever the size: many
 * calls for a 64-element add, one for a 4096 x 4096 matmul. All data is f32. conv2d is a
 * 3 x 3 convolution of one 16-channel H x W image to 16 channels with padding 1 (the shape of
 * a small CNN's layer), without bias; its size is the input's element count 16 * H * W. Each call
 * makes a fresh result and releases it, as `a + b` does in NumPy or PyTorch; the device's pool
 * hands the block back, so the timed calls allocate no fresh memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_impl.h"
#include "bench_impl.h"

#define BATCHES 5           /* timed batches per measurement at most */
#define MAX_CALLS (1 << 20) /* calls per batch at most */
/* conv2d's largest size, 2^CONV_MAX_EXP input elements (H = W = 2048). */
#define CONV_MAX_EXP 26

/* One measurement's inputs: on cpu:0 (host) and on the device measured. */
typedef struct bench_case {
    bench_op op;
    ct_device device;
    bool with_copies;
    ct_tensor *host[2];
    ct_tensor *on_device[2];
    void *out; /* host buffer for the result, with copies */
    size_t out_bytes;
} bench_case;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static ct_tensor *apply(bench_op op, const ct_tensor *a, const ct_tensor *b) {
    switch (op) {
    case BENCH_MATMUL: return ct_matmul(a, b);
    case BENCH_ADD: return ct_add(a, b);
    case BENCH_CONV2D: return ct_conv2d(a, b, NULL, &(ct_conv2d_options){.padding = {1, 1}});
    default: return ct_sum(a, 0, NULL, false);
    }
}

/* One call: the op on the device's inputs, or, with copies, the inputs copied in from the
 * host (ct_to), the op, and the result copied out (ct_copy_to_host). */
static ct_status run_once(const bench_case *c) {
    const ct_tensor *a = c->on_device[0], *b = c->on_device[1];
    ct_tensor *moved[2] = {NULL, NULL};
    if (c->with_copies) {
        a = moved[0] = ct_to(c->host[0], c->device);
        if (c->host[1]) b = moved[1] = ct_to(c->host[1], c->device);
    }
    ct_tensor *result = a ? apply(c->op, a, b) : NULL;
    ct_status status = result ? CT_OK : ct_last_status();
    if (result && c->with_copies) status = ct_copy_to_host(result, c->out, c->out_bytes);
    ct_release(result);
    ct_release(moved[0]);
    ct_release(moved[1]);
    return status;
}

typedef ct_status (*call_fn)(const void *ctx);

static ct_status case_call(const void *ctx) { return run_once(ctx); }

/* Seconds for `calls` calls of fn, between two ct_synchronize calls on device. */
static ct_status time_batch(call_fn fn, const void *ctx, ct_device device, int calls,
                            double *seconds) {
    if (ct_synchronize(device) != CT_OK) return ct_last_status();
    double start = now_s();
    for (int i = 0; i < calls; i++)
        if (fn(ctx) != CT_OK) return ct_last_status();
    if (ct_synchronize(device) != CT_OK) return ct_last_status();
    *seconds = now_s() - start;
    return CT_OK;
}

/* Seconds per call: one warm-up call (it also fills the pool's cache), then batches sized
 * to fill the budget, until BATCHES batches ran or the budget is spent; the median. */
static ct_status time_calls(call_fn fn, const void *ctx, ct_device device, double budget,
                            double *seconds) {
    double first = 0.0, times[BATCHES];
    ct_status status = time_batch(fn, ctx, device, 1, &first);
    if (status != CT_OK) return status;
    double calls_fit = budget / BATCHES / (first > 1e-9 ? first : 1e-9);
    int calls = calls_fit < 1.0 ? 1 : calls_fit > MAX_CALLS ? MAX_CALLS : (int)calls_fit;
    int batches = 0;
    double start = now_s();
    while (batches < BATCHES && (batches == 0 || now_s() - start < budget)) {
        status = time_batch(fn, ctx, device, calls, &times[batches]);
        if (status != CT_OK) return status;
        times[batches++] /= calls;
    }
    qsort(times, (size_t)batches, sizeof times[0], compare_doubles);
    *seconds = times[batches / 2];
    return CT_OK;
}

/* The sizes an op is measured at, into sizes; returns how many. */
static int op_sizes(bench_op op, const bench_plan *plan, int64_t *sizes) {
    int n = 0;
    if (op == BENCH_MATMUL) {
        for (int64_t s = 16; s <= (plan->quick ? 256 : 4096); s *= 2) sizes[n++] = s;
    } else if (op == BENCH_CONV2D) {
        /* Even powers only: 16 * H * H = 2^e needs H = 2^((e - 4) / 2) whole. */
        for (int e = 6; e <= (plan->quick ? 18 : CONV_MAX_EXP); e += plan->quick ? 4 : 2)
            sizes[n++] = (int64_t)1 << e;
    } else if (bench_is_copy(op)) {
        for (int64_t s = 4096; s <= (plan->quick ? (4 << 20) : (1 << 30)); s *= 4) sizes[n++] = s;
    } else {
        for (int e = 6; e <= (plan->quick ? 20 : 26); e += plan->quick ? 2 : 1)
            sizes[n++] = (int64_t)1 << e;
    }
    return n;
}

static void release_case(bench_case *c) {
    for (int i = 0; i < 2; i++) {
        ct_release(c->host[i]);
        ct_release(c->on_device[i]);
    }
    free(c->out);
    memset(c, 0, sizeof *c);
}

/* The shape of input i (0 or 1) of op at size into shape; returns its rank. */
static int input_shape(bench_op op, int64_t size, int i, int64_t *shape) {
    if (op == BENCH_CONV2D) {
        int64_t side = 1;
        while (BENCH_CONV_CHANNELS * side * side < size) side *= 2;
        int64_t image[4] = {1, BENCH_CONV_CHANNELS, side, side};
        int64_t weight[4] = {BENCH_CONV_CHANNELS, BENCH_CONV_CHANNELS, 3, 3};
        memcpy(shape, i == 0 ? image : weight, sizeof image);
        return 4;
    }
    shape[0] = shape[1] = size;
    return op == BENCH_MATMUL ? 2 : 1;
}

/* Random f32 inputs of the op at size on cpu:0 and on the device, and the result buffer. */
static bool make_case(bench_case *c, bench_op op, int64_t size, ct_device device) {
    int inputs = op == BENCH_SUM ? 1 : 2;
    memset(c, 0, sizeof *c);
    c->op = op;
    c->device = device;
    for (int i = 0; i < inputs; i++) {
        int64_t shape[4];
        int ndim = input_shape(op, size, i, shape);
        c->host[i] = ct_rand(ndim, shape, CT_F32, CT_CPU);
        c->on_device[i] = ct_to(c->host[i], device);
    }
    /* add and conv2d (16 channels in and out, padding 1) give as many elements as they take. */
    int64_t out_elements = op == BENCH_MATMUL                      ? size * size
                           : op == BENCH_ADD || op == BENCH_CONV2D ? size
                                                                   : 1;
    c->out_bytes = (size_t)out_elements * sizeof(float);
    c->out = malloc(c->out_bytes);
    if (c->on_device[0] && (inputs == 1 || c->on_device[1]) && c->out) return true;
    release_case(c);
    return false;
}

static void progress(const bench_plan *plan, ct_device device, const char *what, int64_t size) {
    if (!plan->progress) return;
    char name[32];
    fprintf(stderr, "\r\033[Kbench: %s %s %lld", ct_device_str(device, name, sizeof name), what,
            (long long)size);
    fflush(stderr);
}

static bool report_failure(ct_device device, const char *what, int64_t size) {
    char name[32];
    ct_cli_fail("%s on %s at size %lld failed: %s", what, ct_device_str(device, name, sizeof name),
                (long long)size, ct_last_error());
    ct_clear_error();
    return false;
}

/* One compute op at every size, without and (with_copies) with the copies. */
static bool bench_op_sizes(bench_results *r, const bench_plan *plan, bench_op op, ct_device device,
                           bool with_copies) {
    int64_t sizes[32];
    int n = op_sizes(op, plan, sizes);
    for (int i = 0; i < n; i++) {
        bench_case c;
        progress(plan, device, bench_op_name(op), sizes[i]);
        if (!make_case(&c, op, sizes[i], device))
            return report_failure(device, bench_op_name(op), sizes[i]);
        for (int copies = 0; copies <= (with_copies ? 1 : 0); copies++) {
            bench_measurement m = {device, op, sizes[i], 0.0, copies == 1};
            c.with_copies = m.with_copies;
            if (time_calls(case_call, &c, device, plan->budget, &m.seconds) != CT_OK) {
                release_case(&c);
                return report_failure(device, bench_op_name(op), sizes[i]);
            }
            if (!bench_add(r, m)) {
                release_case(&c);
                return false;
            }
        }
        release_case(&c);
    }
    return true;
}

/* A copy between host and device: the pageable host buffer, the same bytes in pinned host
 * memory (NULL when it cannot be had), the device tensor, the direction. */
typedef struct copy_case {
    bench_op op;
    ct_device device;
    void *host;
    ct_tensor *pinned;
    int64_t bytes;
    ct_tensor *on_device;
} copy_case;

/* Host to device from pageable memory (ct_from_data) or from a pinned tensor (ct_to, which
 * returns once the DMA is queued: the batch's closing ct_synchronize waits for it), or
 * device to host into pageable memory (ct_copy_to_host) or into a pinned tensor (ct_copy). */
static ct_status copy_call(const void *ctx) {
    const copy_case *c = ctx;
    if (c->op == BENCH_COPY_D2H) return ct_copy_to_host(c->on_device, c->host, (size_t)c->bytes);
    if (c->op == BENCH_COPY_D2H_PINNED) return ct_copy(c->pinned, c->on_device);
    ct_tensor *t = c->op == BENCH_COPY_H2D_PINNED
                       ? ct_to(c->pinned, c->device)
                       : ct_from_data(c->host, 1, &c->bytes, CT_U8, c->device);
    ct_release(t);
    return t ? CT_OK : ct_last_status();
}

/* The case's pinned tensor; without one the reason goes to r->pinned_absent (once). */
static void make_pinned(bench_results *r, copy_case *c) {
    ct_tensor *pageable = ct_zeros(1, &c->bytes, CT_U8, CT_CPU);
    c->pinned = pageable ? ct_pin_memory(pageable) : NULL;
    ct_release(pageable);
    if (!c->pinned && !r->pinned_absent[0])
        snprintf(r->pinned_absent, sizeof r->pinned_absent, "%s", ct_last_error());
    if (!c->pinned) ct_clear_error();
}

/* The four copies of one size, each timed; false when one failed. */
static bool time_copies(bench_results *r, const bench_plan *plan, copy_case *c) {
    for (int op = BENCH_COPY_H2D; op <= BENCH_COPY_D2H_PINNED; op++) {
        bool pinned = op == BENCH_COPY_H2D_PINNED || op == BENCH_COPY_D2H_PINNED;
        if (pinned && !c->pinned) continue;
        bench_measurement m = {c->device, (bench_op)op, c->bytes, 0.0, true};
        c->op = (bench_op)op;
        progress(plan, c->device, bench_op_name(c->op), c->bytes);
        if (time_calls(copy_call, c, c->device, plan->budget, &m.seconds) != CT_OK ||
            !bench_add(r, m))
            return false;
    }
    return true;
}

/* Host<->device copies from 4 KiB to 1 GiB, both directions, pageable and pinned. */
static bool bench_copies(bench_results *r, const bench_plan *plan, ct_device device) {
    int64_t sizes[32];
    int n = op_sizes(BENCH_COPY_H2D, plan, sizes);
    for (int i = 0; i < n; i++) {
        copy_case c = {BENCH_COPY_H2D, device, calloc(1, (size_t)sizes[i]), NULL, sizes[i], NULL};
        c.on_device = c.host ? ct_from_data(c.host, 1, &c.bytes, CT_U8, device) : NULL;
        if (c.on_device) make_pinned(r, &c);
        bool ok = c.on_device && time_copies(r, plan, &c);
        ct_release(c.on_device);
        ct_release(c.pinned);
        free(c.host);
        if (!ok) return report_failure(device, "host-device copy", sizes[i]);
    }
    return true;
}

bool bench_device(bench_results *r, const bench_plan *plan, ct_device device, bool with_copies) {
    bool ok = true;
    for (int op = 0; op < BENCH_COMPUTE_OPS; op++)
        ok = bench_op_sizes(r, plan, (bench_op)op, device, with_copies) && ok;
    if (!ct_device_is_host(device)) ok = bench_copies(r, plan, device) && ok;
    if (plan->progress) fprintf(stderr, "\r\033[K");
    return ok;
}

/* bench_conv: the convolution layers of the small MNIST CNN (the training target of issue 4),
 * forward and backward, ctensor against PyTorch on the CPU in one run.
 *
 * The step: x (128, 1, 28, 28) f32 -> ct_conv2d 1->32 3x3 pad 1 -> ct_max_pool2d 2 ->
 * ct_conv2d 32->64 3x3 pad 1 -> ct_max_pool2d 2, then ct_backward_with a gradient of ones
 * (weights and biases require grad, the input does not); gradients are dropped before each
 * step, as zero_grad(set_to_none=True). bench/peer_torch_conv.py does the same in PyTorch
 * with torch.set_num_threads(2), under the settings bench/run_step.sh gives PyTorch. Each side's
 * figure is the median step time over its runs after 3 warm-up steps; the two sides run one after
 * the other (ours, PyTorch, ours again, keeping our better median), so a load change on the shared
 * machine shows as a gap between our two medians, which is printed too.
 *
 * Usage: bench_conv [--runs N] [--peer PATH]   (OMP_NUM_THREADS and OPENBLAS_NUM_THREADS as
 * the caller sets them; unset OPENBLAS_CORETYPE so both sides pick the same kernels) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctensor/ctensor.h"

#include "bench_clock.h"

#ifndef CT_BENCH_DIR
#define CT_BENCH_DIR "bench"
#endif

typedef struct {
    ct_tensor *x, *w1, *b1, *w2, *b2;
} model;

/* One training step's convolution part; CT_OK or the first error. */
static ct_status step(const model *m) {
    ct_tensor *params[4] = {m->w1, m->b1, m->w2, m->b2};
    for (int i = 0; i < 4; i++) ct_zero_grad(params[i]);
    ct_conv2d_options conv = {.padding = {1, 1}};
    ct_pool2d_options pool = {.kernel = {2, 2}};
    ct_status status = ct_scope_begin();
    if (status != CT_OK) return status;
    ct_tensor *p1 = ct_max_pool2d(ct_conv2d(m->x, m->w1, m->b1, &conv), &pool);
    ct_tensor *p2 = ct_max_pool2d(ct_conv2d(p1, m->w2, m->b2, &conv), &pool);
    ct_tensor *g = p2 ? ct_ones(ct_ndim(p2), ct_shape(p2), CT_F32, CT_CPU) : NULL;
    status = g ? ct_backward_with(p2, g, false) : ct_last_status();
    ct_status ended = ct_scope_end();
    return status != CT_OK ? status : ended;
}

/* Median milliseconds per step over `runs` steps after 3 warm-up steps; < 0 on failure. */
static double time_steps(const model *m, int runs) {
    double *times = malloc(sizeof(double) * (size_t)runs);
    if (!times) return -1;
    for (int i = 0; i < 3 + runs; i++) {
        double start = bench_now();
        if (step(m) != CT_OK) {
            free(times);
            return -1;
        }
        if (i >= 3) times[i - 3] = (bench_now() - start) * 1e3;
    }
    qsort(times, (size_t)runs, sizeof *times, bench_compare_doubles);
    double median = times[runs / 2];
    free(times);
    return median;
}

static double run_peer(const char *peer, int runs) {
    char command[1200];
    /* PyTorch's best settings on this machine, as bench/run_step.sh gives them: passive
     * OpenMP waiting and glibc malloc tunables that keep freed memory. */
    snprintf(command, sizeof command,
             "OMP_WAIT_POLICY=passive GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:"
             "glibc.malloc.trim_threshold=4294967296 /usr/bin/python3 %s --runs %d",
             peer, runs);
    FILE *p = popen(command, "r");
    if (!p) return -1;
    /* Read to the end, so the peer never writes into a closed pipe. */
    double ms = -1, value;
    char line[256];
    while (fgets(line, sizeof line, p))
        if (sscanf(line, "torch %lf", &value) == 1) ms = value;
    pclose(p);
    return ms;
}

static ct_tensor *param(int ndim, const int64_t *shape, bool grad) {
    ct_tensor *t = ct_randn(ndim, shape, CT_F32, CT_CPU);
    if (t && grad) ct_set_requires_grad(t, true);
    return t;
}

int main(int argc, char **argv) {
    int runs = 20;
    const char *peer = CT_BENCH_DIR "/peer_torch_conv.py";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--runs") == 0) runs = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--peer") == 0) peer = argv[i + 1];
    }
    if (runs < 1) runs = 1;
    ct_manual_seed(0);
    model m = {param(4, (int64_t[]){128, 1, 28, 28}, false),
               param(4, (int64_t[]){32, 1, 3, 3}, true), param(1, (int64_t[]){32}, true),
               param(4, (int64_t[]){64, 32, 3, 3}, true), param(1, (int64_t[]){64}, true)};
    double ours = m.x && m.w1 && m.b1 && m.w2 && m.b2 ? time_steps(&m, runs) : -1;
    double torch = ours >= 0 ? run_peer(peer, runs) : -1;
    double again = ours >= 0 ? time_steps(&m, runs) : -1;
    ct_tensor *all[5] = {m.x, m.w1, m.b1, m.w2, m.b2};
    for (int i = 0; i < 5; i++) ct_release(all[i]);
    if (ours < 0) {
        fprintf(stderr, "bench_conv: %s: %s\n", ct_status_name(ct_last_status()), ct_last_error());
        return 1;
    }
    double best = again >= 0 && again < ours ? again : ours;
    printf("conv layers fwd+bwd, batch 128 f32, median of %d steps\n", runs);
    printf("ctensor  %8.2f ms  (runs before and after the peer: %.2f, %.2f)\n", best, ours, again);
    if (torch < 0) {
        printf("torch         n/a  (%s did not run: PyTorch missing?)\n", peer);
        return 0;
    }
    printf("torch    %8.2f ms  (2 threads)\n", torch);
    printf("ratio ctensor / torch: %.2f (below 1: ctensor faster)\n", best / torch);
    return 0;
}

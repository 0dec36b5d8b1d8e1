/* bench_resnet_conv: the convolutions of one resnet20 training step on the CPU (batch 128,
 * CIFAR's 32x32 images), forward and backward through ct_conv2d and ct_backward_with, under
 * ct_set_matmul_precision("highest") (oneDNN's direct algorithm) and "high" (Winograd for the
 * 3x3 stride-1 convolutions of 32 and 64 channels), the two settings alternated round by round
 * in one process so that a busy machine slows both alike. Prints each shape's best time per
 * setting and the step's total (each shape times the number of such convolutions in
 * resnet20), best and median over the rounds.
 *
 * Usage: bench_resnet_conv [ROUNDS [BATCH]]   (threads as ct_set_num_threads' default) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor/ctensor.h>

#include "bench_clock.h"

typedef struct conv_shape {
    const char *name;
    int64_t in_c, out_c, hw, kernel, stride, count;
    bool input_grad;
} conv_shape;

static const conv_shape shapes[] = {
    {"stem 3->16 3x3 32x32", 3, 16, 32, 3, 1, 1, false},
    {"16->16 3x3 32x32", 16, 16, 32, 3, 1, 6, true},
    {"16->32 3x3 s2 32x32", 16, 32, 32, 3, 2, 1, true},
    {"16->32 1x1 s2 32x32", 16, 32, 32, 1, 2, 1, true},
    {"32->32 3x3 16x16", 32, 32, 16, 3, 1, 5, true},
    {"32->64 3x3 s2 16x16", 32, 64, 16, 3, 2, 1, true},
    {"32->64 1x1 s2 16x16", 32, 64, 16, 1, 2, 1, true},
    {"64->64 3x3 8x8", 64, 64, 8, 3, 1, 5, true},
};
#define SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static void need(const void *p, const char *what) {
    if (p) return;
    fprintf(stderr, "bench_resnet_conv: %s: %s\n", what, ct_last_error());
    exit(1);
}

/* One forward and backward of shape s (seconds). */
static double once(const conv_shape *s, ct_tensor *x, ct_tensor *w) {
    ct_conv2d_options opt = {.stride = {s->stride, s->stride},
                             .padding = {s->kernel / 2, s->kernel / 2}};
    ct_scope_begin();
    ct_zero_grad(x);
    ct_zero_grad(w);
    double start = bench_now();
    ct_tensor *y = ct_conv2d(x, w, NULL, &opt);
    need(y, "ct_conv2d");
    ct_tensor *g = ct_ones(4, ct_shape(y), CT_F32, CT_CPU);
    need(g, "ct_ones");
    if (ct_backward_with(y, g, false) != CT_OK) need(NULL, "ct_backward_with");
    double time = bench_now() - start;
    ct_scope_end();
    return time;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    int64_t batch = argc > 2 ? atoll(argv[2]) : 128;
    if (rounds < 2 || batch < 1) {
        fprintf(stderr, "usage: bench_resnet_conv [ROUNDS >= 2 [BATCH]]\n");
        return 2;
    }
    static const char *const settings[2] = {"highest", "high"};
    ct_tensor *x[SHAPES], *w[SHAPES];
    for (int i = 0; i < SHAPES; i++) {
        const conv_shape *s = &shapes[i];
        int64_t xs[4] = {batch, s->in_c, s->hw, s->hw};
        int64_t ws[4] = {s->out_c, s->in_c, s->kernel, s->kernel};
        x[i] = ct_rand(4, xs, CT_F32, CT_CPU);
        w[i] = ct_rand(4, ws, CT_F32, CT_CPU);
        need(x[i] && w[i] ? x[i] : NULL, "ct_rand");
        ct_set_requires_grad(x[i], s->input_grad);
        ct_set_requires_grad(w[i], true);
    }
    double *best = malloc(sizeof(double) * 2 * SHAPES), *step = malloc(sizeof(double) * 2 * rounds);
    need(best && step ? best : NULL, "malloc");
    for (int i = 0; i < 2 * SHAPES; i++) best[i] = 1e30;
    for (int r = 0; r <= rounds; r++) /* round 0 warms up: primitives, pool */
        for (int p = 0; p < 2; p++) {
            if (ct_set_matmul_precision(settings[p]) != CT_OK) need(NULL, "precision");
            double total = 0;
            for (int i = 0; i < SHAPES; i++) {
                double t = once(&shapes[i], x[i], w[i]);
                total += t * (double)shapes[i].count;
                if (r > 0 && t < best[p * SHAPES + i]) best[p * SHAPES + i] = t;
            }
            if (r > 0) step[p * rounds + r - 1] = total;
        }
    printf("resnet20 convolutions, batch %lld, forward + backward, best of %d (ms)\n",
           (long long)batch, rounds);
    printf("%-24s %5s %10s %10s\n", "shape", "count", "highest", "high");
    for (int i = 0; i < SHAPES; i++)
        printf("%-24s %5lld %10.2f %10.2f\n", shapes[i].name, (long long)shapes[i].count,
               1e3 * best[i], 1e3 * best[SHAPES + i]);
    for (int p = 0; p < 2; p++)
        qsort(step + p * rounds, (size_t)rounds, sizeof *step, bench_compare_doubles);
    printf("step total, best:   %10.1f %10.1f\n", 1e3 * step[0], 1e3 * step[rounds]);
    printf("step total, median: %10.1f %10.1f\n", 1e3 * step[rounds / 2],
           1e3 * step[rounds + rounds / 2]);
    ct_set_matmul_precision("highest");
    for (int i = 0; i < SHAPES; i++) ct_release(x[i]), ct_release(w[i]);
    free(best);
    free(step);
    return 0;
}

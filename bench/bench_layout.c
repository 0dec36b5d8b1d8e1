/* A/B of the ResNets' activation layout on the CPU: whole training steps (forward, cross
 * entropy, backward, SGD with momentum) of resnet20 on random CIFAR-shaped data, alternating
 * rounds with CT_CHANNELS_LAST=0 (NCHW activations) and unset (channels-last where oneDNN
 * convolves it natively), in one process, so that a busy machine slows both alike.
 *
 * Usage: bench_layout [BATCH [ROUNDS [STEPS [both|nchw|cl]]]]   (defaults 128, 6, 5, both)
 * Prints each round's median step time per layout, wall-clock and the process's CPU time (on
 * a busy machine the CPU time shows the work better: the wall clock also counts the time other
 * processes ran), then the ratios of the sums (NCHW time over channels-last time: above 1
 * means channels-last is faster). One layout alone (nchw or cl) is for profiling it, with
 * ONEDNN_VERBOSE=1 say. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ctensor/ctensor.h>
#include <ctensor/optim.h>

#include "bench_clock.h"

static int fail(const char *what) {
    fprintf(stderr, "bench_layout: %s: %s\n", what, ct_last_error());
    return 1;
}

/* One training step; false on failure. */
static bool step(ct_module *model, ct_optimizer *sgd, const ct_tensor *x, const ct_tensor *y) {
    ct_scope_begin();
    ct_tensor *logits = ct_module_forward(model, x);
    ct_tensor *loss = logits ? ct_cross_entropy(logits, y, NULL) : NULL;
    bool ok = loss && ct_backward(loss) == CT_OK && ct_optimizer_step(sgd) == CT_OK &&
              ct_optimizer_zero_grad(sgd) == CT_OK;
    ct_scope_end();
    return ok;
}

/* The process's CPU time in seconds. */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The median wall and CPU times of `steps` steps, in ms; false on failure. */
static bool median_ms(ct_module *model, ct_optimizer *sgd, const ct_tensor *x, const ct_tensor *y,
                      int steps, double *wall, double *cpu) {
    double t[64], c[64];
    for (int i = 0; i < steps; i++) {
        double start = bench_now(), cpu_start = cpu_now();
        if (!step(model, sgd, x, y)) return false;
        t[i] = (bench_now() - start) * 1e3;
        c[i] = (cpu_now() - cpu_start) * 1e3;
    }
    qsort(t, (size_t)steps, sizeof t[0], bench_compare_doubles);
    qsort(c, (size_t)steps, sizeof c[0], bench_compare_doubles);
    *wall = t[steps / 2];
    *cpu = c[steps / 2];
    return true;
}

int main(int argc, char **argv) {
    int64_t batch = argc > 1 ? atoll(argv[1]) : 128;
    int rounds = argc > 2 ? atoi(argv[2]) : 6, steps = argc > 3 ? atoi(argv[3]) : 5;
    const char *only = argc > 4 ? argv[4] : "both";
    int first = strcmp(only, "cl") == 0 ? 1 : 0, last = strcmp(only, "nchw") == 0 ? 0 : 1;
    if (batch < 1 || rounds < 1 || steps < 1 || steps > 64 ||
        (strcmp(only, "both") && strcmp(only, "nchw") && strcmp(only, "cl"))) {
        fprintf(stderr, "usage: bench_layout [BATCH [ROUNDS [STEPS (1..64) [both|nchw|cl]]]]\n");
        return 2;
    }
    ct_manual_seed(0);
    ct_module *model = ct_nn_resnet20(3, 10);
    if (!model) return fail("model");
    ct_tensor *params[128];
    int n = ct_module_parameters(model, params, 128);
    ct_optimizer *sgd = ct_sgd(n, params, &(ct_sgd_options){.lr = 0.01, .momentum = 0.9});
    ct_tensor *x = ct_randn(4, (int64_t[]){batch, 3, 32, 32}, CT_F32, CT_CPU);
    ct_tensor *r = ct_rand(1, &batch, CT_F32, CT_CPU);
    ct_tensor *scaled = r ? ct_mul_scalar(r, 10.0) : NULL;
    ct_tensor *y = scaled ? ct_cast(scaled, CT_I64) : NULL;
    if (!sgd || !y || !x) return fail("setup");
    double wall_sum[2] = {0.0, 0.0}, cpu_sum[2] = {0.0, 0.0};
    for (int round = 0; round <= rounds; round++) {
        for (int layout = first; layout <= last; layout++) {
            if (layout == 0)
                setenv("CT_CHANNELS_LAST", "0", 1);
            else
                unsetenv("CT_CHANNELS_LAST");
            double wall, cpu;
            if (!median_ms(model, sgd, x, y, steps, &wall, &cpu)) return fail("step");
            if (round == 0) continue; /* warm-up: primitives made, caches filled */
            printf("round %d %-13s wall %8.2f ms (%7.1f samples/s)  cpu %8.2f ms\n", round,
                   layout ? "channels-last" : "nchw", wall, (double)batch * 1e3 / wall, cpu);
            wall_sum[layout] += wall;
            cpu_sum[layout] += cpu;
        }
    }
    if (first == 0 && last == 1)
        printf("nchw / channels-last: wall %.3f, cpu %.3f\n", wall_sum[0] / wall_sum[1],
               cpu_sum[0] / cpu_sum[1]);
    ct_release(x), ct_release(r), ct_release(scaled), ct_release(y);
    ct_optimizer_free(sgd);
    ct_module_free(model);
    return 0;
}

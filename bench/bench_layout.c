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
 * ONEDNN_VERBOSE=1 say.
 *
 * Usage: bench_layout pool [BATCH [ROUNDS [STEPS]]]   (defaults 32, 6, 5)
 * The same A/B for pooling alone, forward and backward: an ImageNet ResNet's stem max pool
 * (3x3 at stride 2, padding 1, 64 channels of 112 x 112) and its global average pool (512
 * channels of 7 x 7), on NCHW inputs and on channels-last ones (which the CPU pools in their
 * layout). Each round prints the mean step time (profiled), the pooling kernels' share, and
 * the copy kernels' time and count per step: with channels-last the count is 1, the autograd
 * engine's clone of the leaf's first gradient into its own contiguous tensor (NCHW has none:
 * its gradient is already contiguous), not a copy of the pooling's. */
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

/* One pooling step, profiled: y = pool(x), then x's gradient from y's (u). Adds the step's
 * wall time, its pooling kernels' time and its copy kernels' time and count to sums[0..3];
 * false on failure. */
static bool pool_step(ct_tensor *x, const ct_tensor *u, bool max, double *sums) {
    ct_pool2d_options stem = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
    ct_scope_begin();
    if (ct_profile_begin() != CT_OK) return false;
    ct_tensor *y = max ? ct_max_pool2d(x, &stem) : ct_adaptive_avg_pool2d(x, 1, 1);
    bool ok = y && ct_backward_with(y, u, false) == CT_OK;
    ct_profile_end();
    ok = ok && ct_zero_grad(x) == CT_OK;
    ct_scope_end();
    ct_profile_stats stats;
    ct_profile_report(&stats);
    sums[0] += stats.seconds * 1e3;
    for (int p = 0; p < CT_PROFILE_PHASES; p++) {
        sums[1] += stats.entries[p][CT_PROFILE_POOL].host_seconds * 1e3;
        sums[2] += stats.entries[p][CT_PROFILE_COPY].host_seconds * 1e3;
        sums[3] += (double)stats.entries[p][CT_PROFILE_COPY].calls;
    }
    return ok;
}

/* A leaf of shape, channels-last when asked, and the gradient of its pooled output (max: the
 * stem's, else the global average's) in the same layout; false on failure. */
static bool pool_operands(const int64_t *shape, bool max, bool channels_last, ct_tensor **x,
                          ct_tensor **u) {
    int64_t out[4] = {shape[0], shape[1], max ? (shape[2] + 1) / 2 : 1,
                      max ? (shape[3] + 1) / 2 : 1};
    ct_tensor *x0 = ct_randn(4, shape, CT_F32, CT_CPU), *u0 = ct_randn(4, out, CT_F32, CT_CPU);
    ct_memory_format format = channels_last ? CT_FORMAT_CHANNELS_LAST : CT_FORMAT_CONTIGUOUS;
    *x = x0 ? ct_contiguous_format(x0, format) : NULL;
    *u = u0 ? ct_contiguous_format(u0, format) : NULL;
    ct_release(x0), ct_release(u0);
    return *x && *u && ct_set_requires_grad(*x, true) == CT_OK;
}

static int bench_pool(int64_t batch, int rounds, int steps) {
    if (batch < 1 || rounds < 1 || steps < 1) {
        fprintf(stderr, "usage: bench_layout pool [BATCH [ROUNDS [STEPS]]]\n");
        return 2;
    }
    static const char *names[2] = {"max 3x3/2 64x112x112", "global avg 512x7x7"};
    int64_t shapes[2][4] = {{batch, 64, 112, 112}, {batch, 512, 7, 7}};
    for (int kind = 0; kind < 2; kind++) {
        ct_tensor *x[2], *u[2];
        for (int layout = 0; layout < 2; layout++)
            if (!pool_operands(shapes[kind], kind == 0, layout == 1, &x[layout], &u[layout]))
                return fail("setup");
        double total[2][4] = {{0.0}};
        for (int round = 0; round <= rounds; round++)
            for (int layout = 0; layout < 2; layout++) {
                double sums[4] = {0.0, 0.0, 0.0, 0.0};
                for (int i = 0; i < steps; i++)
                    if (!pool_step(x[layout], u[layout], kind == 0, sums)) return fail("pool step");
                if (round == 0) continue; /* warm-up */
                printf("round %d %-20s %-13s step %8.3f ms  pool kernels %8.3f ms  copies %6.3f "
                       "ms (%.0f)\n",
                       round, names[kind], layout ? "channels-last" : "nchw", sums[0] / steps,
                       sums[1] / steps, sums[2] / steps, sums[3] / steps);
                for (int j = 0; j < 4; j++) total[layout][j] += sums[j];
            }
        printf("%s: nchw / channels-last: step %.3f, pool kernels %.3f\n", names[kind],
               total[0][0] / total[1][0], total[0][1] / total[1][1]);
        for (int layout = 0; layout < 2; layout++) ct_release(x[layout]), ct_release(u[layout]);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "pool") == 0)
        return bench_pool(argc > 2 ? atoll(argv[2]) : 32, argc > 3 ? atoi(argv[3]) : 6,
                          argc > 4 ? atoi(argv[4]) : 5);
    int64_t batch = argc > 1 ? atoll(argv[1]) : 128;
    int rounds = argc > 2 ? atoi(argv[2]) : 6, steps = argc > 3 ? atoi(argv[3]) : 5;
    const char *only = argc > 4 ? argv[4] : "both";
    int first = strcmp(only, "cl") == 0 ? 1 : 0, last = strcmp(only, "nchw") == 0 ? 0 : 1;
    if (batch < 1 || rounds < 1 || steps < 1 || steps > 64 ||
        (strcmp(only, "both") && strcmp(only, "nchw") && strcmp(only, "cl"))) {
        fprintf(stderr, "usage: bench_layout [BATCH [ROUNDS [STEPS (1..64) [both|nchw|cl]]]]\n"
                        "       bench_layout pool [BATCH [ROUNDS [STEPS]]]\n");
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

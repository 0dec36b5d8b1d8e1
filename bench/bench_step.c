/* ctensor's side of the training-step benchmark (bench/run_step.sh): one step (forward,
 * backward, Adam) of the small CNN or MLP on random data, median time over the steps.
 *
 * Usage: bench_step MODEL BATCH STEPS [DEVICE [AMP]]    (MODEL: cnn | mlp; AMP: off | bf16 | f16)
 * AMP runs forward and loss under autocast, as `ctensor train --amp` does (f16 without its
 * loss scaler: the step's time, not its numbers, is what this measures).
 * Prints one line: `ctensor MODEL BATCH median_ms samples_per_s`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor/ctensor.h>
#include <ctensor/optim.h>

#include "bench_clock.h"

static ct_module *model_for(const char *name) {
    if (strcmp(name, "cnn") == 0) {
        ct_conv2d_options pad = {.padding = {1, 1}};
        ct_pool2d_options pool = {.kernel = {2, 2}};
        return ct_nn_sequential(10, (ct_module *[]){ct_nn_conv2d(1, 32, 3, &pad, true),
                                                    ct_nn_relu(), ct_nn_max_pool2d(&pool),
                                                    ct_nn_conv2d(32, 64, 3, &pad, true),
                                                    ct_nn_relu(), ct_nn_max_pool2d(&pool),
                                                    ct_nn_flatten(), ct_nn_linear(3136, 128, true),
                                                    ct_nn_relu(), ct_nn_linear(128, 10, true)});
    }
    return ct_nn_sequential(6, (ct_module *[]){ct_nn_flatten(), ct_nn_linear(784, 256, true),
                                               ct_nn_relu(), ct_nn_linear(256, 128, true),
                                               ct_nn_relu(), ct_nn_linear(128, 10, true)});
}

static int fail(const char *what) {
    fprintf(stderr, "bench_step: %s: %s\n", what, ct_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench_step cnn|mlp BATCH STEPS [DEVICE [off|bf16|f16]]\n");
        return 2;
    }
    const char *name = argv[1];
    int64_t batch = atoll(argv[2]);
    int steps = atoi(argv[3]);
    ct_device device = CT_CPU;
    if (argc > 4 && ct_device_parse(argv[4], &device) != CT_OK) return fail("device");
    const char *amp = argc > 5 ? argv[5] : "off";
    ct_dtype low = strcmp(amp, "bf16") == 0 ? CT_BF16 : strcmp(amp, "f16") == 0 ? CT_F16 : CT_F32;
    if (low == CT_F32 && strcmp(amp, "off") != 0) {
        fprintf(stderr, "bench_step: AMP is %s; use off, bf16 or f16\n", amp);
        return 2;
    }
    ct_manual_seed(0);
    ct_module *model = model_for(name);
    if (!model || ct_module_to(model, device) != CT_OK) return fail("model");
    ct_tensor *params[16];
    int n = ct_module_parameters(model, params, 16);
    ct_optimizer *adam = ct_adam(n, params, NULL);
    ct_tensor *x = ct_rand(4, (int64_t[]){batch, 1, 28, 28}, CT_F32, device);
    ct_tensor *labels = ct_arange(0, (double)batch, 1, CT_I64, device);
    ct_tensor *y = labels ? ct_remainder_scalar(labels, 10) : NULL;
    if (!adam || !x || !y) return fail("setup");
    double *times = calloc((size_t)steps, sizeof *times);
    for (int step = 0; step < steps + 3; step++) {
        double start = bench_now();
        ct_scope_begin();
        if (low != CT_F32 && ct_autocast_push(device.type, low) != CT_OK) return fail("autocast");
        ct_tensor *loss = ct_cross_entropy(ct_module_forward(model, x), y, NULL);
        if (low != CT_F32 && ct_autocast_pop() != CT_OK) return fail("autocast");
        if (ct_optimizer_zero_grad(adam) != CT_OK || ct_backward(loss) != CT_OK ||
            ct_optimizer_step(adam) != CT_OK || ct_synchronize(device) != CT_OK)
            return fail("step");
        ct_scope_end();
        if (step >= 3) times[step - 3] = bench_now() - start; /* warm-up steps are not timed */
    }
    qsort(times, (size_t)steps, sizeof *times, bench_compare_doubles);
    double median = times[steps / 2];
    printf("ctensor %s %lld %.3f %.0f\n", name, (long long)batch, median * 1e3, batch / median);
    free(times);
    ct_release(x);
    ct_release(labels);
    ct_release(y);
    ct_optimizer_free(adam);
    ct_module_free(model);
    return 0;
}

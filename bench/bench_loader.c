/* Does the data loader keep the device fed? One epoch of MLP training on Fashion-MNIST with
 * batches from ct_loader (workers preparing them while the step runs), against the same
 * batches made beforehand and already on the device. Prints both throughputs and the ratio.
 *
 * Usage: bench_loader [WORKERS] [DEVICE]     (`make bench-loader`) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <ctensor/ctensor.h>
#include <ctensor/data.h>
#include <ctensor/optim.h>

enum { BATCH = 128 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fail(const char *what) {
    fprintf(stderr, "bench_loader: %s: %s\n", what, ct_last_error());
    return 1;
}

static ct_status step(ct_module *model, ct_optimizer *adam, const ct_tensor *x,
                      const ct_tensor *y) {
    ct_scope_begin();
    ct_tensor *loss = ct_cross_entropy(ct_module_forward(model, x), y, NULL);
    ct_status status = ct_optimizer_zero_grad(adam);
    if (status == CT_OK) status = ct_backward(loss);
    if (status == CT_OK) status = ct_optimizer_step(adam);
    ct_scope_end();
    return status;
}

static ct_module *mlp(void) {
    ct_manual_seed(0);
    return ct_nn_sequential(6, (ct_module *[]){ct_nn_flatten(), ct_nn_linear(784, 256, true),
                                               ct_nn_relu(), ct_nn_linear(256, 128, true),
                                               ct_nn_relu(), ct_nn_linear(128, 10, true)});
}

int main(int argc, char **argv) {
    int workers = argc > 1 ? atoi(argv[1]) : 2;
    ct_device device = CT_CPU;
    if (argc > 2 && ct_device_parse(argv[2], &device) != CT_OK) return fail("device");
    ct_mnist data;
    if (ct_load_fashion_mnist(&data) != CT_OK) return fail("dataset");
    ct_loader_options options = {.batch_size = BATCH,
                                 .shuffle = true,
                                 .workers = workers,
                                 .device = device,
                                 .scale = 1.0 / 255,
                                 .mean = {0.2860},
                                 .std = {0.3530}};
    ct_loader *loader = ct_loader_new(data.train_images, data.train_labels, &options);
    if (!loader) return fail("loader");
    int64_t batches = ct_loader_batches(loader);
    /* The same batches, made beforehand on the device. */
    ct_tensor **xs = calloc((size_t)batches, sizeof *xs),
              **ys = calloc((size_t)batches, sizeof *ys);
    if (ct_loader_start_epoch(loader, 0) != CT_OK) return fail("epoch");
    for (int64_t b = 0; b < batches; b++)
        if (ct_loader_next(loader, &xs[b], &ys[b]) != CT_OK) return fail("batch");
    double seconds[2];
    for (int with_loader = 0; with_loader < 2; with_loader++) {
        ct_module *model = mlp();
        ct_tensor *params[8];
        int n = ct_module_parameters(model, params, 8);
        ct_optimizer *adam = ct_adam(n, params, NULL);
        if (!model || !adam || ct_module_to(model, device) != CT_OK) return fail("model");
        if (with_loader && ct_loader_start_epoch(loader, 0) != CT_OK) return fail("epoch");
        double start = now();
        for (int64_t b = 0; b < batches; b++) {
            ct_tensor *x = xs[b], *y = ys[b];
            if (with_loader && ct_loader_next(loader, &x, &y) != CT_OK) return fail("batch");
            if (step(model, adam, x, y) != CT_OK) return fail("step");
            if (with_loader) ct_release(x), ct_release(y);
        }
        ct_synchronize(device);
        seconds[with_loader] = now() - start;
        ct_optimizer_free(adam);
        ct_module_free(model);
    }
    int64_t samples = ct_size(data.train_labels, 0);
    printf("batches on the device: %8.0f samples/s\n", samples / seconds[0]);
    printf("from the loader (%d workers): %8.0f samples/s\n", workers, samples / seconds[1]);
    printf("ratio: %.3f\n", seconds[0] / seconds[1]);
    for (int64_t b = 0; b < batches; b++) ct_release(xs[b]), ct_release(ys[b]);
    free(xs);
    free(ys);
    ct_loader_free(loader);
    ct_mnist_release(&data);
    return 0;
}

/* Does the data loader keep the device fed? Epochs of MLP training on Fashion-MNIST with
 * batches from ct_loader, against the same batches made beforehand and already on the
 * device. Prints both throughputs (median epochs) and the ratio.
 *
 * With no workers the loader makes each batch in the step's own thread, so the two ways run
 * in lockstep: a step of each in turn, each timed alone. The load on this VM changes within
 * a second, and epochs taken in turn differed by up to 30%; in lockstep a change falls on
 * both ways alike. Worker threads work in the background while either way runs, so with
 * workers the two ways take turns by whole epochs instead.
 *
 * Usage: bench_loader [WORKERS] [DEVICE]     (`make bench-loader`) */
#include <stdio.h>
#include <stdlib.h>

#include <ctensor/ctensor.h>
#include <ctensor/data.h>
#include <ctensor/optim.h>

#include "bench_clock.h"

enum { BATCH = 128, ROUNDS = 3 };

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

typedef struct trainer {
    ct_module *model;
    ct_optimizer *adam;
} trainer;

/* A fresh MLP on device and its Adam. */
static ct_status trainer_new(trainer *t, ct_device device) {
    t->model = mlp();
    ct_tensor *params[8];
    int n = t->model ? ct_module_parameters(t->model, params, 8) : 0;
    t->adam = t->model ? ct_adam(n, params, NULL) : NULL;
    return t->adam ? ct_module_to(t->model, device) : ct_last_status();
}

static void trainer_free(trainer *t) {
    ct_optimizer_free(t->adam);
    ct_module_free(t->model);
}

/* A step of t on batch b: from xs and ys, or from the loader (xs NULL). */
static ct_status train_step(trainer *t, ct_loader *loader, ct_tensor **xs, ct_tensor **ys,
                            int64_t b) {
    ct_tensor *x = xs ? xs[b] : NULL, *y = xs ? ys[b] : NULL;
    ct_status status = xs ? CT_OK : ct_loader_next(loader, &x, &y);
    if (status == CT_OK) status = step(t->model, t->adam, x, y);
    if (!xs) ct_release(x), ct_release(y);
    return status;
}

/* train_step, finished on the device; *seconds grows by its time. */
static ct_status timed_step(trainer *t, ct_loader *loader, ct_device device, ct_tensor **xs,
                            ct_tensor **ys, int64_t b, double *seconds) {
    double start = bench_now();
    ct_status status = train_step(t, loader, xs, ys, b);
    if (status == CT_OK) status = ct_synchronize(device);
    *seconds += bench_now() - start;
    return status;
}

/* One epoch of a fresh MLP, its batches from the loader (xs NULL) or from xs and ys;
 * *seconds its time. */
static ct_status epoch(ct_loader *loader, ct_device device, int64_t batches, ct_tensor **xs,
                       ct_tensor **ys, double *seconds) {
    trainer t;
    ct_status status = trainer_new(&t, device);
    if (status == CT_OK && !xs) status = ct_loader_start_epoch(loader, 0);
    double start = bench_now();
    for (int64_t b = 0; status == CT_OK && b < batches; b++)
        status = train_step(&t, loader, xs, ys, b);
    if (status == CT_OK) status = ct_synchronize(device);
    *seconds = bench_now() - start;
    trainer_free(&t);
    return status;
}

/* One epoch each way in lockstep, two fresh MLPs: seconds[0] the steps on batches made
 * beforehand, seconds[1] those on the loader's. */
static ct_status lockstep_epoch(ct_loader *loader, ct_device device, int64_t batches,
                                ct_tensor **xs, ct_tensor **ys, double seconds[2]) {
    trainer premade = {0}, loaded = {0};
    ct_status status = trainer_new(&premade, device);
    if (status == CT_OK) status = trainer_new(&loaded, device);
    if (status == CT_OK) status = ct_loader_start_epoch(loader, 0);
    seconds[0] = seconds[1] = 0;
    for (int64_t b = 0; status == CT_OK && b < batches; b++) {
        status = timed_step(&premade, loader, device, xs, ys, b, &seconds[0]);
        if (status == CT_OK)
            status = timed_step(&loaded, loader, device, NULL, NULL, b, &seconds[1]);
    }
    trainer_free(&premade);
    trainer_free(&loaded);
    return status;
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
    double seconds[2][ROUNDS];
    for (int round = 0; round < ROUNDS; round++) {
        double pair[2];
        ct_status status =
            workers == 0 ? lockstep_epoch(loader, device, batches, xs, ys, pair) : CT_OK;
        for (int with_loader = 0; status == CT_OK && workers > 0 && with_loader < 2; with_loader++)
            status =
                epoch(loader, device, batches, with_loader ? NULL : xs, ys, &pair[with_loader]);
        if (status != CT_OK) return fail("epoch");
        seconds[0][round] = pair[0], seconds[1][round] = pair[1];
    }
    for (int side = 0; side < 2; side++)
        qsort(seconds[side], ROUNDS, sizeof(double), bench_compare_doubles);
    double premade = seconds[0][ROUNDS / 2], loaded = seconds[1][ROUNDS / 2];
    int64_t samples = ct_size(data.train_labels, 0);
    printf("batches on the device: %8.0f samples/s\n", samples / premade);
    printf("from the loader (%d workers): %8.0f samples/s\n", workers, samples / loaded);
    printf("ratio: %.3f (median of %d epochs each, %s)\n", premade / loaded, ROUNDS,
           workers == 0 ? "in lockstep" : "in turn");
    for (int64_t b = 0; b < batches; b++) ct_release(xs[b]), ct_release(ys[b]);
    free(xs);
    free(ys);
    ct_loader_free(loader);
    ct_mnist_release(&data);
    return 0;
}

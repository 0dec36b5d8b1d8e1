/* Train ResNet-20 on Fashion-MNIST with the usual recipe, on the best device present: SGD
 * with Nesterov momentum, weight decay 5e-4 except on batch norm's weights and the biases,
 * label smoothing 0.1 and a one-cycle schedule stepped every batch. The PyTorch equivalent:
 * SGD([{"params": decay}, {"params": no_decay, "weight_decay": 0}], lr=0.1, momentum=0.9,
 * nesterov=True, weight_decay=5e-4), OneCycleLR(opt, max_lr=0.1, total_steps=...),
 * CrossEntropyLoss(label_smoothing=0.1).
 *
 *     train_resnet [EPOCHS [LIMIT]]      (default 5 epochs of all 60000 images)
 *
 * Exits 77 when Fashion-MNIST is not installed (Debian's dataset-fashion-mnist). */
#include <stdio.h>
#include <stdlib.h>

#include <ctensor/ctensor.h>

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, ct_last_error());
    return 1;
}

/* Test accuracy, in evaluation mode without recording. */
static double evaluate(ct_module *model, ct_loader *test) {
    double hits = 0, total = 0, count = 0;
    ct_module_eval(model);
    ct_no_grad_push();
    ct_loader_start_epoch(test, 0);
    ct_tensor *x, *y;
    while (ct_loader_next(test, &x, &y) == CT_OK && x) {
        ct_scope_begin();
        ct_tensor *predicted = ct_argmax(ct_module_forward(model, x), 1, false);
        if (ct_item(ct_sum(ct_eq(predicted, y), 0, NULL, false), &hits) == CT_OK) total += hits;
        count += (double)ct_size(y, 0);
        ct_release(x), ct_release(y);
        ct_scope_end();
    }
    ct_no_grad_pop();
    ct_module_train(model, true);
    return count ? total / count : 0;
}

int main(int argc, char **argv) {
    int epochs = argc > 1 ? atoi(argv[1]) : 5;
    int64_t limit = argc > 2 ? atoll(argv[2]) : 0;
    ct_device device;
    if (ct_device_parse("auto", &device) != CT_OK) return fail("device");

    ct_mnist data;
    if (ct_load_fashion_mnist(&data) != CT_OK) {
        fprintf(stderr, "skipped: %s\n", ct_last_error());
        return 77;
    }
    ct_scope_begin(); /* the data's views go at its end */
    ct_tensor *images = data.train_images, *labels = data.train_labels;
    ct_tensor *test_images = data.test_images, *test_labels = data.test_labels;
    if (limit > 0) { /* the first `limit` images, and as many test images */
        images = ct_slice(images, 0, 0, limit, 1), labels = ct_slice(labels, 0, 0, limit, 1);
        test_images = ct_slice(test_images, 0, 0, limit, 1);
        test_labels = ct_slice(test_labels, 0, 0, limit, 1);
    }
    /* Pixels to [0, 1], then normalised with Fashion-MNIST's mean and standard deviation. */
    ct_loader_options options = {.batch_size = 128,
                                 .shuffle = true,
                                 .device = device,
                                 .scale = 1.0 / 255,
                                 .mean = {0.2860},
                                 .std = {0.3530}};
    ct_loader *train = ct_loader_new(images, labels, &options);
    options.shuffle = false, options.batch_size = 1000;
    ct_loader *test = ct_loader_new(test_images, test_labels, &options);
    if (!train || !test) return fail("data");

    ct_manual_seed(0);
    ct_module *model = ct_nn_resnet20(1, 10); /* gray images: one input channel */
    if (!model || ct_module_to(model, device) != CT_OK) return fail("model");
    ct_tensor *params[128];
    int n = ct_module_parameters(model, params, 128);
    ct_optimizer *sgd = ct_sgd(
        n, params,
        &(ct_sgd_options){.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true});
    if (!sgd) return fail("optimizer");
    for (int i = 0; i < n; i++) /* no decay on batch norm's weights and the biases */
        if (ct_ndim(params[i]) <= 1) ct_optimizer_set_weight_decay(sgd, i, 0.0);
    int64_t steps = ct_loader_batches(train);
    ct_lr_schedule *schedule = ct_lr_schedule_onecycle(
        sgd, &(ct_onecycle_options){.max_lr = 0.1, .total_steps = (int)(steps * epochs)});
    if (!schedule) return fail("schedule");
    ct_cross_entropy_options smoothing = {.label_smoothing = 0.1, .ignore_index = -100};

    for (int epoch = 1; epoch <= epochs; epoch++) {
        ct_loader_start_epoch(train, epoch);
        ct_tensor *x, *y;
        double loss_value = 0;
        for (int64_t step = 1; ct_loader_next(train, &x, &y) == CT_OK && x; step++) {
            ct_scope_begin(); /* everything made in the step goes at its end */
            ct_tensor *loss = ct_cross_entropy(ct_module_forward(model, x), y, &smoothing);
            if (ct_optimizer_zero_grad(sgd) != CT_OK || ct_backward(loss) != CT_OK ||
                ct_optimizer_step(sgd) != CT_OK || ct_lr_schedule_advance(schedule) != CT_OK)
                return fail("training step");
            if (step % 100 == 0 || step == steps) /* a read waits for the device: not every step */
                ct_item(loss, &loss_value);
            ct_release(x), ct_release(y);
            ct_scope_end();
        }
        printf("epoch %d  loss %.4f  test accuracy %.2f%%\n", epoch, loss_value,
               100.0 * evaluate(model, test));
    }
    ct_lr_schedule_free(schedule);
    ct_optimizer_free(sgd);
    ct_module_free(model);
    ct_loader_free(train);
    ct_loader_free(test);
    ct_scope_end();
    ct_mnist_release(&data);
    return 0;
}

/* Train a small MLP to separate two interleaved spirals, on the best device present.
 * The PyTorch equivalent: model.to(device), data on the same device, Adam, cross-entropy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <ctensor/ctensor.h>
#include <ctensor/optim.h>

enum { N = 1024, STEPS = 1000 };

/* Two spirals, one per class: point i of class c at angle t, radius t, rotated by pi * c. */
static void make_spirals(float *x, int64_t *y) {
    for (int i = 0; i < N; i++) {
        int c = i % 2;
        double t = 0.5 + 3.0 * M_PI * (i / 2) / (N / 2);
        x[2 * i] = (float)(t * cos(t + M_PI * c) / 10.0);
        x[2 * i + 1] = (float)(t * sin(t + M_PI * c) / 10.0);
        y[i] = c;
    }
}

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, ct_last_error());
    return 1;
}

int main(void) {
    ct_device device;
    if (ct_device_parse("auto", &device) != CT_OK) return fail("device");
    char name[32];
    printf("training on %s\n", ct_device_str(device, name, sizeof name));

    static float x_host[2 * N];
    static int64_t y_host[N];
    make_spirals(x_host, y_host);
    ct_tensor *x = ct_from_data(x_host, 2, (int64_t[]){N, 2}, CT_F32, device);
    ct_tensor *y = ct_from_data(y_host, 1, (int64_t[]){N}, CT_I64, device);
    if (!x || !y) return fail("data");

    ct_manual_seed(0);
    ct_module *model = ct_nn_sequential(5, (ct_module *[]){ct_nn_linear(2, 64, true), ct_nn_tanh(),
                                                           ct_nn_linear(64, 64, true), ct_nn_tanh(),
                                                           ct_nn_linear(64, 2, true)});
    if (!model || ct_module_to(model, device) != CT_OK) return fail("model");
    ct_tensor *params[8];
    int nparams = ct_module_parameters(model, params, 8);
    ct_optimizer *adam = ct_adam(nparams, params, &(ct_adam_options){.lr = 1e-2});
    if (!adam) return fail("optimizer");

    for (int step = 1; step <= STEPS; step++) {
        ct_scope_begin(); /* everything made in the step goes at its end */
        ct_tensor *loss = ct_cross_entropy(ct_module_forward(model, x), y, NULL);
        double value = 0;
        if (ct_optimizer_zero_grad(adam) != CT_OK || ct_backward(loss) != CT_OK ||
            ct_optimizer_step(adam) != CT_OK || ct_item(loss, &value) != CT_OK)
            return fail("training step");
        if (step % 100 == 0) printf("step %4d  loss %.4f\n", step, value);
        ct_scope_end();
    }

    ct_scope_begin();
    ct_no_grad_push();
    ct_tensor *predicted = ct_argmax(ct_module_forward(model, x), 1, false);
    ct_tensor *correct = ct_sum(ct_cast(ct_eq(predicted, y), CT_F32), 0, NULL, false);
    double hits = 0;
    if (ct_item(correct, &hits) != CT_OK) return fail("evaluation");
    ct_no_grad_pop();
    ct_scope_end();
    printf("training accuracy %.1f%%\n", 100.0 * hits / N);

    ct_optimizer_free(adam);
    ct_module_free(model);
    ct_release(x);
    ct_release(y);
    return hits / N >= 0.95 ? 0 : 1;
}

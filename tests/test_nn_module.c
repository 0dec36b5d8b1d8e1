/* Modules: construction and PyTorch's initialisation bounds, state-dict names and order,
 * parameter counts, devices, train/eval, gradients through a model, and errors. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

static ct_module *mlp(void) {
    return ct_nn_sequential(
        3, (ct_module *[]){ct_nn_linear(4, 8, true), ct_nn_relu(), ct_nn_linear(8, 3, false)});
}

TEST(test_nn_module_state_names_and_counts) {
    ct_module *m = ct_nn_sequential(4, (ct_module *[]){ct_nn_conv2d(1, 2, 3, NULL, true),
                                                       ct_nn_batch_norm2d(2, 0, 0), ct_nn_flatten(),
                                                       ct_nn_linear(8, 3, true)});
    CHECK_NOT_NULL(m);
    const char *expected[] = {"0.weight",
                              "0.bias",
                              "1.weight",
                              "1.bias",
                              "1.running_mean",
                              "1.running_var",
                              "1.num_batches_tracked",
                              "3.weight",
                              "3.bias"};
    bool buffers[] = {false, false, false, false, true, true, true, false, false};
    for (int i = 0; i < 9; i++) {
        ct_tensor *t = NULL;
        bool buffer = false;
        const char *name = ct_module_state_at(m, i, &t, &buffer);
        CHECK(name && strcmp(name, expected[i]) == 0);
        CHECK(t != NULL && buffer == buffers[i]);
    }
    CHECK(ct_module_state_at(m, 9, NULL, NULL) == NULL);
    CHECK(ct_module_parameters(m, NULL, 0) == 6);
    /* conv 2*1*3*3 + 2, batch norm 2 + 2, linear 3*8 + 3 */
    CHECK(ct_module_parameter_count(m) == 18 + 2 + 4 + 27);
    char text[512];
    size_t needed = ct_module_describe(m, text, sizeof text);
    CHECK(needed < sizeof text && strstr(text, "Sequential\n  Conv2d(1, 2, 3)") &&
          strstr(text, "  Linear(8, 3)"));
    ct_module_free(m);
}

/* Kaiming-uniform with a = sqrt(5): every weight and bias within 1/sqrt(fan_in), and
 * spread over that range (the draws are not all tiny). */
TEST(test_nn_module_default_initialisation) {
    ct_manual_seed(7);
    ct_module *m = ct_nn_linear(100, 50, true);
    CHECK_NOT_NULL(m);
    ct_tensor *params[2];
    CHECK(ct_module_parameters(m, params, 2) == 2);
    for (int p = 0; p < 2; p++) {
        double *v = ref_read(params[p]);
        CHECK_NOT_NULL(v);
        double largest = 0;
        for (int64_t i = 0; i < ct_numel(params[p]); i++)
            largest = fabs(v[i]) > largest ? fabs(v[i]) : largest;
        free(v);
        CHECK(largest <= 0.1 && largest > 0.09);
        CHECK(ct_requires_grad(params[p]) && ct_dtype_of(params[p]) == CT_F32);
    }
    ct_module_free(m);
}

TEST(test_nn_module_same_seed_same_model) {
    ct_manual_seed(3);
    ct_module *a = mlp();
    ct_manual_seed(3);
    ct_module *b = mlp();
    CHECK(a && b);
    ct_tensor *pa[3], *pb[3];
    CHECK(ct_module_parameters(a, pa, 3) == 3 && ct_module_parameters(b, pb, 3) == 3);
    for (int i = 0; i < 3; i++) {
        double *va = ref_read(pa[i]);
        CHECK_TENSOR(pb[i], va);
        free(va);
    }
    ct_module_free(a);
    ct_module_free(b);
}

/* Gradients reach every parameter through the model; they match finite differences. */
static ct_tensor *model_loss(ct_tensor *const *in, void *context) {
    ct_module *m = context;
    ct_tensor *y = ct_module_forward(m, in[0]);
    ct_tensor *out = y ? ct_sum(ct_mul(y, y), 0, NULL, false) : NULL;
    return out;
}

DEVICE_TEST(test_nn_module_gradients_through_sequential) {
    ct_manual_seed(11);
    ct_module *m = mlp();
    CHECK_NOT_NULL(m);
    CHECK_OK(ct_module_to(m, device));
    CHECK(ct_device_equal(ct_module_device(m), device));
    /* float64 parameters for the finite differences */
    ct_tensor *params[3];
    ct_module_parameters(m, params, 3);
    double *x_values = malloc(sizeof(double) * 8);
    ref_random(x_values, 8, 5, -1, 1);
    ct_tensor *x = ref_tensor(x_values, 2, (int64_t[]){2, 4}, CT_F32, device);
    free(x_values);
    CHECK_NOT_NULL(x);
    CHECK_OK(ct_scope_begin());
    ct_tensor *loss = model_loss(&x, m);
    ct_status status = ct_backward(loss);
    ct_scope_end();
    CHECK_OK(status);
    for (int i = 0; i < 3; i++) {
        ct_tensor *g = ct_grad(params[i]);
        CHECK(g && ct_numel(g) == ct_numel(params[i]));
        ct_release(g);
    }
    CHECK_OK(ct_module_zero_grad(m));
    ct_tensor *none = ct_grad(params[0]);
    CHECK(none == NULL);
    ct_clear_error();
    ct_release(x);
    ct_module_free(m);
}

TEST(test_nn_module_train_eval_flags) {
    ct_module *m = mlp();
    CHECK_NOT_NULL(m);
    CHECK(ct_module_is_training(m));
    CHECK_OK(ct_module_eval(m));
    CHECK(!ct_module_is_training(m));
    ct_tensor *p[1];
    ct_module_parameters(m, p, 1);
    CHECK_OK(ct_module_train(m, true));
    CHECK(ct_module_is_training(m));
    ct_module_free(m);
}

TEST(test_nn_module_errors) {
    CHECK(ct_nn_linear(0, 3, true) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "in_features");
    CHECK(ct_nn_conv2d(3, 4, 3, &(ct_conv2d_options){.groups = 2}, true) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "groups");
    CHECK(ct_nn_dropout(1.5) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "probability");
    /* a failed child: sequential keeps its error and frees the others */
    CHECK(ct_nn_sequential(2, (ct_module *[]){ct_nn_relu(), ct_nn_linear(-1, 2, true)}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "in_features");
    ct_module *m = mlp();
    ct_tensor *wrong = ct_ones(2, (int64_t[]){2, 5}, CT_F32, CT_CPU);
    CHECK(ct_module_forward(m, wrong) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_linear");
    ct_release(wrong);
    ct_module_free(m);
}

/* Dropout drops in training mode only; batch norm normalises with the batch's statistics
 * in training (and moves its running statistics), with the running ones in evaluation. */
DEVICE_TEST(test_nn_module_train_and_eval_differ) {
    ct_manual_seed(1);
    ct_module *drop = ct_nn_dropout(0.5);
    ct_module *bn = ct_nn_batch_norm2d(2, 0, 0);
    CHECK(drop && bn);
    CHECK_OK(ct_module_to(bn, device));
    double values[16];
    ref_random(values, 16, 3, 1, 3);
    ct_tensor *x = ref_tensor(values, 4, (int64_t[]){2, 2, 2, 2}, CT_F32, device);
    CHECK_NOT_NULL(x);
    CHECK_OK(ct_scope_begin());
    /* dropout: zeros and doubled values in training, x itself in evaluation */
    double *dropped = ref_read(ct_module_forward(drop, x));
    int zeros = 0;
    for (int i = 0; i < 16; i++) {
        zeros += dropped[i] == 0;
        CHECK(dropped[i] == 0 || fabs(dropped[i] - 2 * (float)values[i]) < 1e-5);
    }
    free(dropped);
    CHECK(zeros > 0 && zeros < 16);
    ct_module_eval(drop);
    CHECK_TENSOR(ct_module_forward(drop, x), values);
    /* batch norm: per-channel mean 0 over the batch in training */
    ct_tensor *trained = ct_module_forward(bn, x);
    ct_tensor *channel_mean = ct_mean(trained, 3, (const int[]){0, 2, 3}, false);
    double zero[2] = {0, 0};
    CHECK_TENSOR(channel_mean, zero);
    ct_tensor *running_mean = NULL;
    CHECK(strcmp(ct_module_state_at(bn, 2, &running_mean, NULL), "running_mean") == 0);
    double *rm = ref_read(running_mean);
    CHECK(rm && rm[0] > 0.1 && rm[1] > 0.1); /* 0.1 * a batch mean in (1, 3) */
    free(rm);
    ct_module_eval(bn);
    ct_tensor *evaluated = ct_module_forward(bn, x);
    double *a = ref_read(trained), *b = ref_read(evaluated);
    bool differ = false;
    for (int i = 0; i < 16; i++) differ = differ || fabs(a[i] - b[i]) > 1e-3;
    free(a);
    free(b);
    CHECK(differ);
    ct_scope_end();
    ct_release(x);
    ct_module_free(drop);
    ct_module_free(bn);
}

static ct_tensor *apply_linear(ct_tensor *const *in, void *context) {
    return ct_linear(in[0], in[1], context ? in[2] : NULL);
}

static ct_tensor *f64_leaf(ct_device device, int ndim, const int64_t *shape, uint64_t seed) {
    return ct_gradcheck_leaf(device, ndim, shape, seed, -1, 1, true);
}

DEVICE_TEST(test_nn_module_linear_gradcheck) {
    ct_tensor *in[3] = {f64_leaf(device, 3, (int64_t[]){2, 2, 3}, 1),
                        f64_leaf(device, 2, (int64_t[]){4, 3}, 2),
                        f64_leaf(device, 1, (int64_t[]){4}, 3)};
    CHECK(in[0] && in[1] && in[2]);
    bool with_bias = ct_gradcheck(apply_linear, 3, in, in, 1e-6, 1e-7, 1e-5);
    ct_set_requires_grad(in[2], false);
    bool without = ct_gradcheck(apply_linear, 3, in, NULL, 1e-6, 1e-7, 1e-5);
    for (int i = 0; i < 3; i++) ct_release(in[i]);
    CHECK(with_bias && without);
}

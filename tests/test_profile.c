/* The profiler (ctensor/profile.h): the kinds and counts of a tiny model's training steps by
 * phase (conv, batch norm, matmul, loss, optimizer update), phases that add up to the whole,
 * nothing counted once ended or on another thread, and its state errors. No timed assertion:
 * the machines that run the tests are shared. */
#include <pthread.h>

#include "ct_test.h"

/* conv 3x3 (1 -> 4 channels) -> batch norm -> ReLU -> flatten -> linear (4*6*6 -> 3). */
static ct_module *tiny_model(void) {
    ct_module *layers[5] = {ct_nn_conv2d(1, 4, 3, NULL, true), ct_nn_batch_norm2d(4, 1e-5, 0.1),
                            ct_nn_relu(), ct_nn_flatten(), ct_nn_linear(4 * 6 * 6, 3, true)};
    return ct_nn_sequential(5, layers);
}

/* `steps` SGD steps of the tiny model on device, the forward marked by the caller as the
 * train command does (ct_backward and the optimiser mark their own phases). */
static void train_steps(ct_device device, ct_module *model, ct_optimizer *opt, int steps) {
    for (int i = 0; i < steps; i++) {
        ct_scope_begin();
        ct_tensor *x = ct_randn(4, (int64_t[]){2, 1, 8, 8}, CT_F32, device);
        ct_tensor *y = ct_zeros(1, (int64_t[]){2}, CT_I64, device);
        ct_profile_set_phase(CT_PROFILE_FORWARD);
        ct_tensor *loss = ct_cross_entropy(ct_module_forward(model, x), y, NULL);
        CHECK_OK(ct_optimizer_zero_grad(opt));
        CHECK_OK(ct_backward(loss));
        CHECK_OK(ct_optimizer_step(opt));
        ct_profile_set_phase(CT_PROFILE_OTHER);
        ct_scope_end();
    }
}

DEVICE_TEST(test_profile_tiny_model_kinds_and_phases) {
    ct_manual_seed(1);
    ct_module *model = tiny_model();
    CHECK_OK(ct_module_to(model, device));
    ct_tensor *params[8];
    int n = ct_module_parameters(model, params, 8);
    ct_optimizer *opt = ct_sgd(n, params, &(ct_sgd_options){.lr = 0.01});
    CHECK_NOT_NULL(opt);
    if (!opt) return;
    train_steps(device, model, opt, 1); /* warm-up outside the profile */
    CHECK_OK(ct_profile_begin());
    train_steps(device, model, opt, 3);
    CHECK_OK(ct_profile_end());
    ct_profile_stats p;
    ct_profile_report(&p);
    const ct_profile_entry(*e)[CT_PROFILE_KINDS] = p.entries;
    /* Per step: one convolution forward and one backward, batch norm forward and backward,
     * the linear layer's product forward and its two backward, the loss forward and backward,
     * one fused SGD update. */
    CHECK(e[CT_PROFILE_FORWARD][CT_PROFILE_CONV].calls == 3);
    CHECK(e[CT_PROFILE_BACKWARD][CT_PROFILE_CONV].calls == 3);
    CHECK(e[CT_PROFILE_FORWARD][CT_PROFILE_NORM].calls == 3);
    CHECK(e[CT_PROFILE_BACKWARD][CT_PROFILE_NORM].calls == 3);
    CHECK(e[CT_PROFILE_FORWARD][CT_PROFILE_MATMUL].calls == 3);
    CHECK(e[CT_PROFILE_BACKWARD][CT_PROFILE_MATMUL].calls == 6);
    CHECK(e[CT_PROFILE_FORWARD][CT_PROFILE_LOSS].calls == 3);
    CHECK(e[CT_PROFILE_BACKWARD][CT_PROFILE_LOSS].calls == 3);
    CHECK(e[CT_PROFILE_OPTIMIZER][CT_PROFILE_UPDATE].calls == 3);
    CHECK(e[CT_PROFILE_FORWARD][CT_PROFILE_ELEMENTWISE].calls >= 3); /* ReLU at least */
    for (int k = 0; k < CT_PROFILE_KINDS; k++) CHECK(e[CT_PROFILE_DATA][k].calls == 0);
    CHECK(p.device_timed == (device.type != CT_DEVICE_CPU));
    double total = 0;
    for (int phase = 0; phase < CT_PROFILE_PHASES; phase++) {
        total += p.phase_seconds[phase];
        double kernels = 0;
        for (int k = 0; k < CT_PROFILE_KINDS; k++) {
            CHECK(e[phase][k].host_seconds >= 0);
            CHECK(e[phase][k].device_seconds >= e[phase][k].host_seconds);
            kernels += e[phase][k].host_seconds;
        }
        CHECK(kernels <= p.phase_seconds[phase] + 1e-6);
    }
    CHECK_NEAR(total, p.seconds, 1e-6 + 1e-9 * p.seconds);
    CHECK(p.seconds > 0);
    /* Ended: more steps count nothing. */
    train_steps(device, model, opt, 1);
    ct_profile_stats after;
    ct_profile_report(&after);
    CHECK(after.entries[CT_PROFILE_FORWARD][CT_PROFILE_CONV].calls == 3);
    CHECK(after.seconds == p.seconds);
    ct_optimizer_free(opt);
    ct_module_free(model);
}

static void *begin_elsewhere(void *status) {
    *(ct_status *)status = ct_profile_begin();
    return NULL;
}

static void *begin_and_end_elsewhere(void *status) {
    *(ct_status *)status = ct_profile_begin();
    if (*(ct_status *)status == CT_OK) *(ct_status *)status = ct_profile_end();
    return NULL;
}

static void *run_elsewhere(void *unused) {
    (void)unused;
    ct_scope_begin();
    ct_tensor *a = ct_ones(1, (int64_t[]){4}, CT_F32, CT_CPU);
    ct_add(a, a);
    ct_scope_end();
    return NULL;
}

TEST(test_profile_one_thread_at_a_time) {
    CHECK_OK(ct_profile_begin());
    ct_status elsewhere = CT_OK;
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, begin_elsewhere, &elsewhere) == 0);
    pthread_join(thread, NULL);
    CHECK(elsewhere == CT_ERR_STATE);
    /* Kernels another thread runs are not counted. */
    CHECK(pthread_create(&thread, NULL, run_elsewhere, NULL) == 0);
    pthread_join(thread, NULL);
    CHECK_OK(ct_profile_end());
    ct_profile_stats p;
    ct_profile_report(&p);
    for (int phase = 0; phase < CT_PROFILE_PHASES; phase++)
        for (int k = 0; k < CT_PROFILE_KINDS; k++) CHECK(p.entries[phase][k].calls == 0);
    /* Once ended here, another thread may begin. */
    CHECK(pthread_create(&thread, NULL, begin_and_end_elsewhere, &elsewhere) == 0);
    pthread_join(thread, NULL);
    CHECK(elsewhere == CT_OK);
}

TEST(test_profile_state_errors_and_names) {
    CHECK(ct_profile_end() == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "does not profile");
    CHECK(ct_profile_set_phase(CT_PROFILE_FORWARD) == CT_PROFILE_OTHER); /* nothing when off */
    CHECK_OK(ct_profile_begin());
    CHECK(ct_profile_set_phase(CT_PROFILE_BACKWARD) == CT_PROFILE_OTHER);
    CHECK(ct_profile_set_phase((ct_profile_phase)99) == CT_PROFILE_BACKWARD);
    CHECK(ct_profile_set_phase(CT_PROFILE_FORWARD) == CT_PROFILE_OTHER);
    CHECK_OK(ct_profile_end());
    CHECK(strcmp(ct_profile_kind_name(CT_PROFILE_CONV), "conv") == 0);
    CHECK(strcmp(ct_profile_kind_name(CT_PROFILE_UPDATE), "optimizer update") == 0);
    CHECK(strcmp(ct_profile_kind_name((ct_profile_kind)99), "?") == 0);
    CHECK(strcmp(ct_profile_phase_name(CT_PROFILE_DATA), "data wait") == 0);
    CHECK(strcmp(ct_profile_phase_name((ct_profile_phase)-1), "?") == 0);
    ct_profile_report(NULL); /* nothing to write */
}

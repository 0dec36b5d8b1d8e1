/* Learning-rate schedules (step and cosine, each with and without a linear warm-up) against
 * PyTorch's closed forms computed here, one-cycle against PyTorch's values, and their error
 * paths. */
#include "ct_ref.h"
#include "optim/optim_impl.h"

static double cosine_lr(double base, double eta_min, int t, int t_max) {
    return eta_min + (base - eta_min) * (1.0 + cos(acos(-1.0) * t / t_max)) / 2.0;
}

/* The schedule gives expected(t) for t = 0 .. 24 (warmup: its length, 0 for none). */
static void check_schedule(ct_lr_schedule *s, ct_optimizer *opt, bool cosine, int warmup,
                           double start_factor) {
    const double base = 0.1;
    for (int t = 0; t < 25; t++) {
        double expected;
        if (t < warmup)
            expected = base * (start_factor + (1.0 - start_factor) * t / warmup);
        else if (cosine)
            expected = cosine_lr(base, 0.001, t - warmup, 10);
        else
            expected = base * pow(0.5, (t - warmup) / 3);
        CHECK(ct_lr_schedule_epoch(s) == t);
        CHECK_NEAR(ct_optimizer_get_lr(opt), expected, 1e-15);
        CHECK_OK(ct_lr_schedule_advance(s));
    }
}

TEST(test_optim_schedule_closed_forms) {
    ct_tensor *p = ct_zeros(0, NULL, CT_F32, CT_CPU);
    for (int i = 0; i < 4; i++) {
        bool cosine = i & 1, warm = i & 2;
        ct_sgd_options o = {.lr = 0.1};
        ct_optimizer *opt = ct_sgd(1, &p, &o);
        CHECK_NOT_NULL(opt);
        ct_lr_schedule *s =
            cosine ? ct_lr_schedule_cosine(opt, 10, 0.001) : ct_lr_schedule_step(opt, 3, 0.5);
        CHECK_NOT_NULL(s);
        if (warm) CHECK_OK(ct_lr_schedule_warmup(s, 4, 0.25));
        check_schedule(s, opt, cosine, warm ? 4 : 0, 0.25);
        if (ct_test_failed()) return;
        ct_lr_schedule_free(s);
        ct_optimizer_free(opt);
    }
    ct_release(p);
}

/* OneCycleLR against the lrs and momenta torch 1.13 gives (printed from
 * torch.optim.lr_scheduler.OneCycleLR over SGD(lr=0.1, momentum=0.9) at t = 0 .. total_steps):
 *   a: OneCycleLR(opt, max_lr=0.4, total_steps=10)
 *   b: OneCycleLR(opt, max_lr=0.4, total_steps=12, pct_start=0.25, anneal_strategy="linear",
 *                 three_phase=True, div_factor=10, final_div_factor=100, base_momentum=0.8,
 *                 max_momentum=0.9) */
static const double onecycle_a_lr[11] = {0.016000000000000014,
                                         0.20800000000000002,
                                         0.4,
                                         0.38019385280538953,
                                         0.3246982615799052,
                                         0.24450480877451572,
                                         0.1554967912254843,
                                         0.0753033384200948,
                                         0.019807747194610516,
                                         1.6e-06,
                                         0.019807747194610495};
static const double onecycle_a_momentum[11] = {0.95,
                                               0.8999999999999999,
                                               0.85,
                                               0.854951556604879,
                                               0.8688255099070633,
                                               0.8888739533021842,
                                               0.9111260466978157,
                                               0.9311744900929366,
                                               0.945048443395121,
                                               0.95,
                                               0.945048443395121};
static const double onecycle_b_lr[13] = {0.04,
                                         0.22000000000000003,
                                         0.4,
                                         0.22,
                                         0.03999999999999998,
                                         0.03434285714285715,
                                         0.028685714285714287,
                                         0.02302857142857143,
                                         0.017371428571428572,
                                         0.011714285714285712,
                                         0.006057142857142858,
                                         0.0003999999999999976,
                                         -0.005257142857142856};
static const double onecycle_b_momentum[13] = {
    0.9, 0.8500000000000001, 0.8, 0.8500000000000001, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9};

static void check_onecycle(ct_optimizer *opt, const ct_onecycle_options *o, const double *lr,
                           const double *momentum, bool adam) {
    ct_lr_schedule *s = ct_lr_schedule_onecycle(opt, o);
    CHECK_NOT_NULL(s);
    for (int t = 0; t <= o->total_steps; t++) {
        CHECK(ct_lr_schedule_epoch(s) == t);
        CHECK_NEAR(ct_optimizer_get_lr(opt), lr[t], 1e-15);
        CHECK_NEAR(adam ? opt->hyper.beta1 : opt->hyper.momentum, momentum[t], 1e-15);
        if (t < o->total_steps) CHECK_OK(ct_lr_schedule_advance(s));
    }
    /* PyTorch's ValueError: stepped once more than total_steps. */
    CHECK(ct_lr_schedule_advance(s) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "has total_steps");
    CHECK(ct_lr_schedule_warmup(s, 2, 0.5) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "warms up by itself");
    ct_lr_schedule_free(s);
}

TEST(test_optim_schedule_onecycle) {
    ct_tensor *p = ct_zeros(0, NULL, CT_F32, CT_CPU);
    ct_optimizer *sgd = ct_sgd(1, &p, &(ct_sgd_options){.lr = 0.1, .momentum = 0.9});
    ct_optimizer *adam = ct_adam(1, &p, NULL);
    CHECK_NOT_NULL(sgd);
    CHECK_NOT_NULL(adam);
    ct_onecycle_options a = {.max_lr = 0.4, .total_steps = 10};
    ct_onecycle_options b = {.max_lr = 0.4,
                             .total_steps = 12,
                             .pct_start = 0.25,
                             .linear = true,
                             .three_phase = true,
                             .div_factor = 10,
                             .final_div_factor = 100,
                             .base_momentum = 0.8,
                             .max_momentum = 0.9};
    check_onecycle(sgd, &a, onecycle_a_lr, onecycle_a_momentum, false);
    check_onecycle(sgd, &b, onecycle_b_lr, onecycle_b_momentum, false);
    /* Adam cycles beta1 as PyTorch's use_beta1. */
    check_onecycle(adam, &a, onecycle_a_lr, onecycle_a_momentum, true);
    /* cycle_momentum=False leaves the momentum alone. */
    a.fixed_momentum = true;
    ct_optimizer_free(sgd);
    sgd = ct_sgd(1, &p, &(ct_sgd_options){.lr = 0.1, .momentum = 0.9});
    ct_lr_schedule *s = ct_lr_schedule_onecycle(sgd, &a);
    CHECK_NOT_NULL(s);
    CHECK_OK(ct_lr_schedule_advance(s));
    CHECK_NEAR(ct_optimizer_get_lr(sgd), onecycle_a_lr[1], 1e-15);
    CHECK(sgd->hyper.momentum == 0.9);
    ct_lr_schedule_free(s);
    /* Refused settings. */
    CHECK(!ct_lr_schedule_onecycle(sgd, NULL));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "options is NULL");
    CHECK(!ct_lr_schedule_onecycle(sgd, &(ct_onecycle_options){.total_steps = 5}));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "max_lr is 0");
    CHECK(!ct_lr_schedule_onecycle(sgd, &(ct_onecycle_options){.max_lr = 0.1}));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "total_steps is 0");
    CHECK(!ct_lr_schedule_onecycle(
        sgd, &(ct_onecycle_options){.max_lr = 0.1, .total_steps = 5, .pct_start = 1.5}));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "pct_start is 1.5");
    CHECK(!ct_lr_schedule_onecycle(
        sgd, &(ct_onecycle_options){.max_lr = 0.1, .total_steps = 5, .base_momentum = 0.99}));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "base_momentum 0.99 and max_momentum 0.95");
    CHECK(!ct_lr_schedule_onecycle(NULL, &a));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "opt is NULL");
    ct_optimizer_free(sgd);
    ct_optimizer_free(adam);
    ct_release(p);
}

TEST(test_optim_schedule_errors) {
    ct_tensor *p = ct_zeros(0, NULL, CT_F32, CT_CPU);
    ct_sgd_options o = {.lr = 0.1};
    ct_optimizer *opt = ct_sgd(1, &p, &o);
    CHECK_NOT_NULL(opt);
    CHECK(!ct_lr_schedule_step(opt, 0, 0.5));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_lr_schedule_step: step_size is 0");
    CHECK(!ct_lr_schedule_step(opt, 2, NAN));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "gamma is nan");
    CHECK(!ct_lr_schedule_step(NULL, 2, 0.5));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "opt is NULL");
    CHECK(!ct_lr_schedule_cosine(opt, 0, 0.0));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_lr_schedule_cosine: t_max is 0");
    CHECK(!ct_lr_schedule_cosine(opt, 5, -1.0));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "eta_min is -1");
    ct_lr_schedule *s = ct_lr_schedule_cosine(opt, 5, 0.0);
    CHECK_NOT_NULL(s);
    CHECK(ct_lr_schedule_warmup(s, 0, 0.5) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "warmup_steps is 0");
    CHECK(ct_lr_schedule_warmup(s, 2, 0.0) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "start_factor is 0");
    CHECK_OK(ct_lr_schedule_advance(s));
    CHECK(ct_lr_schedule_warmup(s, 2, 0.5) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "add the warm-up right after making it");
    CHECK(ct_lr_schedule_advance(NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "s is NULL");
    CHECK(ct_lr_schedule_epoch(NULL) == -1);
    ct_lr_schedule_free(s);
    ct_lr_schedule_free(NULL);
    ct_optimizer_free(opt);
    ct_release(p);
}

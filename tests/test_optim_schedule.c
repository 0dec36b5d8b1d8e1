/* Learning-rate schedules (step and cosine, each with and without a linear warm-up) against
 * PyTorch's closed forms computed here, and their error paths. */
#include "ct_ref.h"

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

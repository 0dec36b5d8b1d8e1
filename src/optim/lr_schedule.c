/* Learning-rate schedules (torch.optim.lr_scheduler StepLR and CosineAnnealingLR, each
 * optionally behind a LinearLR warm-up joined by SequentialLR). The lr of epoch t comes from
 * the closed forms (optim.h), not PyTorch's recursive updates: the same values up to
 * rounding, and no drift over long runs. */
#include <limits.h>
#include <math.h>

#include "optim/optim_impl.h"

typedef enum schedule_kind { SCHEDULE_STEP, SCHEDULE_COSINE } schedule_kind;

struct ct_lr_schedule {
    ct_optimizer *opt; /* not owned */
    schedule_kind kind;
    double base_lr;
    int epoch;
    int step_size; /* step */
    double gamma;
    int t_max; /* cosine */
    double eta_min;
    int warmup; /* 0: none */
    double start_factor;
};

static double lr_at(const ct_lr_schedule *s, int t) {
    if (t < s->warmup)
        return s->base_lr * (s->start_factor + (1.0 - s->start_factor) * t / s->warmup);
    t -= s->warmup;
    if (s->kind == SCHEDULE_STEP) return s->base_lr * pow(s->gamma, (double)(t / s->step_size));
    const double pi = 3.14159265358979323846;
    return s->eta_min + (s->base_lr - s->eta_min) * (1.0 + cos(pi * t / s->t_max)) / 2.0;
}

/* Set the optimiser's lr for the current epoch. */
static void apply(ct_lr_schedule *s) { s->opt->hyper.lr = lr_at(s, s->epoch); }

static ct_lr_schedule *schedule_new(const char *op, ct_optimizer *opt, schedule_kind kind) {
    if (!opt) return ct__fail(CT_ERR_INVALID_ARG, "%s: opt is NULL", op);
    ct_lr_schedule *s = ct__calloc(1, sizeof *s);
    if (!s) return ct__fail(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    s->opt = opt;
    s->kind = kind;
    s->base_lr = opt->hyper.lr;
    return s;
}

ct_lr_schedule *ct_lr_schedule_step(ct_optimizer *opt, int step_size, double gamma) {
    if (step_size < 1)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_lr_schedule_step: step_size is %d; it must be "
                        ">= 1 (epochs between decays)",
                        step_size);
    if (!(gamma >= 0.0) || isinf(gamma))
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_lr_schedule_step: gamma is %g; it must be a "
                        "finite factor >= 0",
                        gamma);
    ct_lr_schedule *s = schedule_new("ct_lr_schedule_step", opt, SCHEDULE_STEP);
    if (!s) return NULL;
    s->step_size = step_size;
    s->gamma = gamma;
    apply(s);
    return s;
}

ct_lr_schedule *ct_lr_schedule_cosine(ct_optimizer *opt, int t_max, double eta_min) {
    if (t_max < 1)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_lr_schedule_cosine: t_max is %d; it must be "
                        ">= 1 (epochs from the base lr to eta_min)",
                        t_max);
    if (!(eta_min >= 0.0) || isinf(eta_min))
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_lr_schedule_cosine: eta_min is %g; it must be "
                        "a finite learning rate >= 0",
                        eta_min);
    ct_lr_schedule *s = schedule_new("ct_lr_schedule_cosine", opt, SCHEDULE_COSINE);
    if (!s) return NULL;
    s->t_max = t_max;
    s->eta_min = eta_min;
    apply(s);
    return s;
}

ct_status ct_lr_schedule_warmup(ct_lr_schedule *s, int warmup_steps, double start_factor) {
    if (!s) return ct__error(CT_ERR_INVALID_ARG, "ct_lr_schedule_warmup: s is NULL");
    if (s->epoch != 0)
        return ct__error(CT_ERR_STATE,
                         "ct_lr_schedule_warmup: the schedule has advanced %d "
                         "times; add the warm-up right after making it",
                         s->epoch);
    if (warmup_steps < 1)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_lr_schedule_warmup: warmup_steps is %d; it "
                         "must be >= 1",
                         warmup_steps);
    if (!(start_factor > 0.0 && start_factor <= 1.0))
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_lr_schedule_warmup: start_factor is %g; it "
                         "must be in (0, 1]",
                         start_factor);
    s->warmup = warmup_steps;
    s->start_factor = start_factor;
    apply(s);
    return CT_OK;
}

ct_status ct_lr_schedule_advance(ct_lr_schedule *s) {
    if (!s) return ct__error(CT_ERR_INVALID_ARG, "ct_lr_schedule_advance: s is NULL");
    if (s->epoch == INT_MAX)
        return ct__error(CT_ERR_STATE,
                         "ct_lr_schedule_advance: the epoch count is at its "
                         "largest (%d)",
                         INT_MAX);
    s->epoch++;
    apply(s);
    return CT_OK;
}

int ct_lr_schedule_epoch(const ct_lr_schedule *s) { return s ? s->epoch : -1; }

void ct_lr_schedule_free(ct_lr_schedule *s) { ct__free_mem(s); }

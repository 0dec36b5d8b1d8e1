/* Learning-rate schedules (torch.optim.lr_scheduler StepLR and CosineAnnealingLR, each
 * optionally behind a LinearLR warm-up joined by SequentialLR, and OneCycleLR). The lr of
 * epoch t comes from the closed forms (optim.h), not PyTorch's recursive updates: the same
 * values up to rounding, and no drift over long runs. */
#include <limits.h>
#include <math.h>

#include "optim/optim_impl.h"

typedef enum schedule_kind { SCHEDULE_STEP, SCHEDULE_COSINE, SCHEDULE_ONECYCLE } schedule_kind;

/* A phase of the one-cycle schedule: from start to end (lr and momentum) over the steps after
 * the previous phase's end_step up to its own. */
typedef struct onecycle_phase {
    double end_step, start_lr, end_lr, start_momentum, end_momentum;
} onecycle_phase;

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
    int total_steps; /* one-cycle */
    bool linear, cycle_momentum;
    onecycle_phase phases[3];
    int nphases;
};

/* OneCycleLR's annealing from start to end at pct (cosine or linear). */
static double anneal(const ct_lr_schedule *s, double start, double end, double pct) {
    const double pi = 3.14159265358979323846;
    if (s->linear) return (end - start) * pct + start;
    return end + (start - end) / 2.0 * (cos(pi * pct) + 1.0);
}

/* OneCycleLR.get_lr at step t: the phase holding t (the last one past its end), and the lr
 * and momentum at t's fraction of it. A phase of no steps (which PyTorch divides by) counts
 * as done. */
static void onecycle_at(const ct_lr_schedule *s, int t, double *lr, double *momentum) {
    double start_step = 0;
    for (int i = 0; i < s->nphases; i++) {
        const onecycle_phase *p = &s->phases[i];
        if (t <= p->end_step || i == s->nphases - 1) {
            double span = p->end_step - start_step;
            double pct = span != 0 ? (t - start_step) / span : 1.0;
            *lr = anneal(s, p->start_lr, p->end_lr, pct);
            *momentum = anneal(s, p->start_momentum, p->end_momentum, pct);
            return;
        }
        start_step = p->end_step;
    }
}

static double lr_at(const ct_lr_schedule *s, int t) {
    if (t < s->warmup)
        return s->base_lr * (s->start_factor + (1.0 - s->start_factor) * t / s->warmup);
    t -= s->warmup;
    if (s->kind == SCHEDULE_STEP) return s->base_lr * pow(s->gamma, (double)(t / s->step_size));
    const double pi = 3.14159265358979323846;
    return s->eta_min + (s->base_lr - s->eta_min) * (1.0 + cos(pi * t / s->t_max)) / 2.0;
}

/* Set the optimiser's lr (and with a one-cycle schedule its momentum, Adam's beta1) for the
 * current epoch. */
static void apply(ct_lr_schedule *s) {
    if (s->kind != SCHEDULE_ONECYCLE) {
        s->opt->hyper.lr = lr_at(s, s->epoch);
        return;
    }
    double momentum = 0;
    onecycle_at(s, s->epoch, &s->opt->hyper.lr, &momentum);
    if (!s->cycle_momentum) return;
    if (s->opt->hyper.kind == CT_OPTIM_SGD)
        s->opt->hyper.momentum = momentum;
    else
        s->opt->hyper.beta1 = momentum;
}

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

/* A one-cycle setting: given (> 0) or PyTorch's default. */
static double or_default(double given, double fallback) { return given > 0 ? given : fallback; }

static ct_status check_onecycle(const ct_onecycle_options *o, double pct_start, double div,
                                double final_div, double base_m, double max_m) {
    const char *op = "ct_lr_schedule_onecycle";
    if (!o)
        return ct__error(CT_ERR_INVALID_ARG, "%s: options is NULL; give max_lr and total_steps",
                         op);
    if (!(o->max_lr > 0) || isinf(o->max_lr))
        return ct__error(CT_ERR_INVALID_ARG, "%s: max_lr is %g; it must be finite and > 0", op,
                         o->max_lr);
    if (o->total_steps < 1)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: total_steps is %d; it must be >= 1 (the steps of the whole run)", op,
                         o->total_steps);
    if (!(pct_start >= 0 && pct_start <= 1))
        return ct__error(CT_ERR_INVALID_ARG, "%s: pct_start is %g; it must be in [0, 1]", op,
                         pct_start);
    if (isinf(div) || isinf(final_div) || isnan(div) || isnan(final_div))
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: div_factor %g and final_div_factor %g must be finite", op, div,
                         final_div);
    if (!(base_m >= 0 && base_m <= max_m && max_m < 1))
        return ct__error(
            CT_ERR_INVALID_ARG,
            "%s: base_momentum %g and max_momentum %g must satisfy 0 <= base <= max < 1", op,
            base_m, max_m);
    return CT_OK;
}

ct_lr_schedule *ct_lr_schedule_onecycle(ct_optimizer *opt, const ct_onecycle_options *options) {
    const ct_onecycle_options *o = options;
    double pct = o ? (o->pct_start > 0 ? o->pct_start : 0.3) : 0;
    double div = o ? or_default(o->div_factor, 25.0) : 0;
    double final_div = o ? or_default(o->final_div_factor, 1e4) : 0;
    double base_m = o ? or_default(o->base_momentum, 0.85) : 0;
    double max_m = o ? or_default(o->max_momentum, 0.95) : 0;
    if (check_onecycle(o, pct, div, final_div, base_m, max_m) != CT_OK) return NULL;
    ct_lr_schedule *s = schedule_new("ct_lr_schedule_onecycle", opt, SCHEDULE_ONECYCLE);
    if (!s) return NULL;
    double initial = o->max_lr / div, min_lr = initial / final_div, total = o->total_steps;
    s->base_lr = initial;
    s->total_steps = o->total_steps;
    s->linear = o->linear;
    s->cycle_momentum = !o->fixed_momentum;
    if (o->three_phase) {
        s->phases[0] = (onecycle_phase){pct * total - 1, initial, o->max_lr, max_m, base_m};
        s->phases[1] = (onecycle_phase){2 * pct * total - 2, o->max_lr, initial, base_m, max_m};
        s->phases[2] = (onecycle_phase){total - 1, initial, min_lr, max_m, max_m};
        s->nphases = 3;
    } else {
        s->phases[0] = (onecycle_phase){pct * total - 1, initial, o->max_lr, max_m, base_m};
        s->phases[1] = (onecycle_phase){total - 1, o->max_lr, min_lr, base_m, max_m};
        s->nphases = 2;
    }
    apply(s);
    return s;
}

ct_status ct_lr_schedule_warmup(ct_lr_schedule *s, int warmup_steps, double start_factor) {
    if (!s) return ct__error(CT_ERR_INVALID_ARG, "ct_lr_schedule_warmup: s is NULL");
    if (s->kind == SCHEDULE_ONECYCLE)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_lr_schedule_warmup: a one-cycle schedule warms up by itself "
                         "(pct_start); it takes no warm-up before it");
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
    if (s->kind == SCHEDULE_ONECYCLE && s->epoch >= s->total_steps)
        return ct__error(CT_ERR_STATE,
                         "ct_lr_schedule_advance: tried to step %d times; the one-cycle "
                         "schedule has total_steps %d",
                         s->epoch + 1, s->total_steps);
    s->epoch++;
    apply(s);
    return CT_OK;
}

int ct_lr_schedule_epoch(const ct_lr_schedule *s) { return s ? s->epoch : -1; }

void ct_lr_schedule_free(ct_lr_schedule *s) { ct__free_mem(s); }

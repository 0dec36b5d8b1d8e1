/* Optimisers: construction with PyTorch's hyperparameter checks, the learning rate,
 * zero_grad, and the step, which gathers every parameter that has a gradient, makes missing
 * state, and runs one fused update kernel per device (optim_update_impl.h has the formulas).
 * A complex parameter is updated as its real and imaginary parts, as PyTorch's
 * torch.view_as_real: the kernel reads its interleaved storage, its gradient's and its
 * state's (complex tensors like it) as twice as many real parts, so Adam's second moment is
 * each part's square, not |g|^2. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/dispatch_impl.h"
#include "core/device_impl.h"
#include "ctensor/autograd.h"
#include "optim/optim_impl.h"

ct_adam_options ct_adam_defaults(void) {
    return (ct_adam_options){
        .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.0};
}

ct_adam_options ct_adamw_defaults(void) {
    ct_adam_options o = ct_adam_defaults();
    o.weight_decay = 1e-2;
    return o;
}

/* value >= 0 (NaN fails), else CT_ERR_INVALID_ARG naming it. */
static ct_status check_nonneg(const char *op, const char *what, double value) {
    if (value >= 0.0) return CT_OK;
    return ct__error(CT_ERR_INVALID_ARG, "%s: invalid %s %g; it must be >= 0", op, what, value);
}

static ct_status check_sgd(const ct_sgd_options *o) {
    if (!o)
        return ct__error(CT_ERR_INVALID_ARG, "ct_sgd: options is NULL; SGD has no default "
                                             "learning rate: pass options with lr set");
    ct_status s = check_nonneg("ct_sgd", "learning rate", o->lr);
    if (s == CT_OK) s = check_nonneg("ct_sgd", "momentum", o->momentum);
    if (s == CT_OK) s = check_nonneg("ct_sgd", "weight_decay", o->weight_decay);
    if (s == CT_OK && isnan(o->dampening))
        s = ct__error(CT_ERR_INVALID_ARG, "ct_sgd: dampening is NaN");
    if (s == CT_OK && o->nesterov && (o->momentum <= 0.0 || o->dampening != 0.0))
        s = ct__error(CT_ERR_INVALID_ARG,
                      "ct_sgd: Nesterov momentum requires a momentum > 0 and zero dampening "
                      "(given momentum %g, dampening %g)",
                      o->momentum, o->dampening);
    return s;
}

static ct_status check_beta(const char *op, int index, double beta) {
    if (beta >= 0.0 && beta < 1.0) return CT_OK;
    return ct__error(CT_ERR_INVALID_ARG,
                     "%s: invalid beta parameter at index %d: %g; it must be "
                     "in [0, 1)",
                     op, index, beta);
}

static ct_status check_adam(const char *op, const ct_adam_options *o) {
    ct_status s = check_nonneg(op, "learning rate", o->lr);
    if (s == CT_OK) s = check_nonneg(op, "epsilon value", o->eps);
    if (s == CT_OK) s = check_beta(op, 0, o->beta1);
    if (s == CT_OK) s = check_beta(op, 1, o->beta2);
    if (s == CT_OK) s = check_nonneg(op, "weight_decay value", o->weight_decay);
    return s;
}

static ct_status check_param(const char *op, int i, const ct_tensor *p) {
    if (!p) return ct__error(CT_ERR_INVALID_ARG, "%s: parameter %d is NULL", op, i);
    if (!ct__is_float(p->dtype) && !ct__is_complex(p->dtype))
        return ct__error(CT_ERR_DTYPE,
                         "%s: parameter %d is %s; optimisers take floating or complex "
                         "parameters (f32, f64, complex64 or complex128)",
                         op, i, ct_dtype_name(p->dtype));
    if (ct__complex_part(p->dtype) != CT_F32 && ct__complex_part(p->dtype) != CT_F64)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "%s: parameter %d is %s; optimisers update f32, f64, "
                         "complex64 or complex128 parameters: keep f32 master weights and "
                         "cast them for low-precision compute",
                         op, i, ct_dtype_name(p->dtype));
    if (p->grad_fn)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: parameter %d is not a leaf (an op made it); "
                         "optimise the leaf tensors, or ct_detach it",
                         op, i);
    if (!p->contiguous)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: parameter %d is a non-contiguous view; "
                         "optimisers update contiguous tensors: pass "
                         "ct_contiguous of it as the parameter",
                         op, i);
    return CT_OK;
}

static ct_status check_params(const char *op, int n, ct_tensor *const *params) {
    if (n <= 0 || !params)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: got an empty parameter list (n = %d%s); pass "
                         "at least one parameter",
                         op, n, params ? "" : ", params NULL");
    for (int i = 0; i < n; i++) {
        ct_status s = check_param(op, i, params[i]);
        if (s != CT_OK) return s;
        for (int j = 0; j < i; j++)
            if (params[j] == params[i])
                return ct__error(CT_ERR_INVALID_ARG,
                                 "%s: parameters %d and %d are the same "
                                 "tensor; pass each parameter once",
                                 op, j, i);
    }
    return CT_OK;
}

static ct_optimizer *optimizer_new(const char *op, int n, ct_tensor *const *params,
                                   const ct__optim_args *hyper) {
    ct_optimizer *opt = ct__calloc(1, sizeof *opt);
    ct_tensor **refs = ct__calloc((size_t)n, sizeof *refs);
    ct__param_state *state = ct__calloc((size_t)n, sizeof *state);
    double *decay = ct__calloc((size_t)n, sizeof *decay);
    if (!opt || !refs || !state || !decay) {
        ct__free_mem(opt), ct__free_mem(refs), ct__free_mem(state), ct__free_mem(decay);
        return ct__fail(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory for %d parameters", op, n);
    }
    for (int i = 0; i < n; i++) refs[i] = ct_retain(params[i]), decay[i] = hyper->weight_decay;
    opt->name = op;
    opt->n = n;
    opt->params = refs;
    opt->state = state;
    opt->weight_decay = decay;
    opt->hyper = *hyper;
    return opt;
}

ct_optimizer *ct_sgd(int n, ct_tensor *const *params, const ct_sgd_options *options) {
    if (check_sgd(options) != CT_OK || check_params("ct_sgd", n, params) != CT_OK) return NULL;
    ct__optim_args hyper = {.kind = CT_OPTIM_SGD,
                            .lr = options->lr,
                            .momentum = options->momentum,
                            .dampening = options->dampening,
                            .weight_decay = options->weight_decay,
                            .nesterov = options->nesterov};
    return optimizer_new("ct_sgd", n, params, &hyper);
}

static ct_optimizer *adam_new(const char *op, ct__optim_kind kind, int n, ct_tensor *const *params,
                              const ct_adam_options *o) {
    if (check_adam(op, o) != CT_OK || check_params(op, n, params) != CT_OK) return NULL;
    ct__optim_args hyper = {.kind = kind,
                            .lr = o->lr,
                            .beta1 = o->beta1,
                            .beta2 = o->beta2,
                            .eps = o->eps,
                            .weight_decay = o->weight_decay,
                            .amsgrad = o->amsgrad};
    return optimizer_new(op, n, params, &hyper);
}

ct_optimizer *ct_adam(int n, ct_tensor *const *params, const ct_adam_options *options) {
    ct_adam_options defaults = ct_adam_defaults();
    return adam_new("ct_adam", CT_OPTIM_ADAM, n, params, options ? options : &defaults);
}

ct_optimizer *ct_adamw(int n, ct_tensor *const *params, const ct_adam_options *options) {
    ct_adam_options defaults = ct_adamw_defaults();
    return adam_new("ct_adamw", CT_OPTIM_ADAMW, n, params, options ? options : &defaults);
}

void ct_optimizer_free(ct_optimizer *opt) {
    if (!opt) return;
    for (int i = 0; i < opt->n; i++) {
        for (int b = 0; b < CT_OPTIM_BUFFERS; b++)
            if (opt->state[i].buf[b]) ct__tensor_drop(opt->state[i].buf[b]);
        ct__tensor_drop(opt->params[i]);
    }
    ct__free_mem(opt->params);
    ct__free_mem(opt->state);
    ct__free_mem(opt->weight_decay);
    ct__free_mem(opt);
}

double ct_optimizer_get_lr(const ct_optimizer *opt) { return opt ? opt->hyper.lr : NAN; }

ct_status ct_optimizer_set_lr(ct_optimizer *opt, double lr) {
    if (!opt) return ct__error(CT_ERR_INVALID_ARG, "ct_optimizer_set_lr: opt is NULL");
    if (!(lr >= 0.0) || isinf(lr))
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_optimizer_set_lr: invalid learning rate %g; it must be finite and "
                         ">= 0",
                         lr);
    opt->hyper.lr = lr;
    return CT_OK;
}

double ct_optimizer_get_momentum(const ct_optimizer *opt) {
    if (!opt) return NAN;
    return opt->hyper.kind == CT_OPTIM_SGD ? opt->hyper.momentum : opt->hyper.beta1;
}

ct_status ct_optimizer_set_momentum(ct_optimizer *opt, double momentum) {
    const char *op = "ct_optimizer_set_momentum";
    if (!opt) return ct__error(CT_ERR_INVALID_ARG, "%s: opt is NULL", op);
    if (opt->hyper.kind != CT_OPTIM_SGD) {
        if (!(momentum >= 0.0 && momentum < 1.0))
            return ct__error(CT_ERR_INVALID_ARG, "%s: beta1 %g must be in [0, 1)", op, momentum);
        opt->hyper.beta1 = momentum;
        return CT_OK;
    }
    if (!(momentum >= 0.0) || isinf(momentum))
        return ct__error(CT_ERR_INVALID_ARG, "%s: momentum %g must be finite and >= 0", op,
                         momentum);
    opt->hyper.momentum = momentum;
    return CT_OK;
}

ct_status ct_optimizer_set_weight_decay(ct_optimizer *opt, int index, double weight_decay) {
    const char *op = "ct_optimizer_set_weight_decay";
    if (!opt) return ct__error(CT_ERR_INVALID_ARG, "%s: opt is NULL", op);
    if (index < 0 || index >= opt->n)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: index %d is out of range: the optimiser has %d "
                         "parameters",
                         op, index, opt->n);
    if (!(weight_decay >= 0.0) || isinf(weight_decay))
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: invalid weight_decay %g; it must be finite and >= 0", op,
                         weight_decay);
    opt->weight_decay[index] = weight_decay;
    return CT_OK;
}

double ct_optimizer_get_weight_decay(const ct_optimizer *opt, int i) {
    return opt && i >= 0 && i < opt->n ? opt->weight_decay[i] : NAN;
}

ct_status ct_optimizer_zero_grad(ct_optimizer *opt) {
    if (!opt) return ct__error(CT_ERR_INVALID_ARG, "ct_optimizer_zero_grad: opt is NULL");
    ct_profile_phase phase = ct_profile_set_phase(CT_PROFILE_OPTIMIZER);
    for (int i = 0; i < opt->n; i++) ct_zero_grad(opt->params[i]);
    ct_profile_set_phase(phase);
    return CT_OK;
}

unsigned ct__optim_buffer_mask(const ct_optimizer *opt) {
    if (opt->hyper.kind == CT_OPTIM_SGD) return opt->hyper.momentum != 0.0 ? 1u : 0u;
    return opt->hyper.amsgrad ? 7u : 3u;
}

/* ---- the step ---- */

/* What the step knows of one parameter. */
typedef struct param_work {
    ct_tensor *grad;   /* the gradient as the kernel reads it, or NULL: skipped */
    bool temporary;    /* grad is a converted copy to release */
    unsigned new_bufs; /* buffers this step made (dropped again if it fails) */
} param_work;

static const char *shape_str(const ct_tensor *t, char *buf, size_t size) {
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < t->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld",
                                 (long long)t->shape[d]);
    if (used < size) snprintf(buf + used, size - used, ")");
    return buf;
}

/* Check parameter i's gradient, converting it to the parameter's dtype (a real one of a
 * complex parameter gets imaginary parts 0) and a contiguous layout when needed. */
static ct_status prepare_grad(const ct_tensor *p, int i, param_work *w) {
    ct_tensor *g = p->grad;
    if (!g) return CT_OK;
    if (g->ndim != p->ndim || memcmp(g->shape, p->shape, (size_t)p->ndim * sizeof(int64_t))) {
        char gs[160], ps[160];
        return ct__error(CT_ERR_SHAPE,
                         "ct_optimizer_step: the gradient of parameter %d has "
                         "shape %s, the parameter %s; a gradient must have its "
                         "parameter's shape",
                         i, shape_str(g, gs, sizeof gs), shape_str(p, ps, sizeof ps));
    }
    if (!ct__same_device(g->storage->device, p->storage->device)) {
        char gd[32], pd[32];
        return ct__error(CT_ERR_DEVICE_MISMATCH,
                         "ct_optimizer_step: the gradient of parameter %d is on %s, the "
                         "parameter on %s; move the gradient with ct_to()",
                         i, ct_device_str(g->storage->device, gd, sizeof gd),
                         ct_device_str(p->storage->device, pd, sizeof pd));
    }
    if (!ct__is_float(g->dtype) && !ct__is_complex(g->dtype))
        return ct__error(CT_ERR_DTYPE,
                         "ct_optimizer_step: the gradient of parameter %d is %s; "
                         "gradients are floating or complex",
                         i, ct_dtype_name(g->dtype));
    if (ct__is_complex(g->dtype) && !ct__is_complex(p->dtype))
        return ct__error(CT_ERR_DTYPE,
                         "ct_optimizer_step: the gradient of parameter %d is %s, the "
                         "parameter %s; a real parameter's gradient is real",
                         i, ct_dtype_name(g->dtype), ct_dtype_name(p->dtype));
    w->grad = g;
    if (g->dtype == p->dtype && g->contiguous) return CT_OK;
    ct_tensor *cast = ct_cast(g, p->dtype);
    w->grad = ct_contiguous(cast);
    ct_release(cast);
    w->temporary = w->grad != NULL;
    return w->grad ? CT_OK : ct_last_status();
}

/* Make the buffers parameter i lacks (zeros; SGD's momentum buffer is filled by the
 * kernel). */
static ct_status prepare_state(ct_optimizer *opt, int i, param_work *w) {
    const ct_tensor *p = opt->params[i];
    unsigned mask = ct__optim_buffer_mask(opt);
    for (int b = 0; b < CT_OPTIM_BUFFERS; b++) {
        if (!(mask & (1u << b)) || opt->state[i].buf[b]) continue;
        ct_tensor *t = ct__tensor_new(p->storage->device, p->dtype, p->ndim, p->shape);
        if (t) ct__scope_forget(t);
        if (t && opt->hyper.kind != CT_OPTIM_SGD && ct_fill(t, 0.0) != CT_OK) {
            ct__tensor_drop(t);
            t = NULL;
        }
        if (!t) return ct_last_status();
        opt->state[i].buf[b] = t;
        w->new_bufs |= 1u << b;
    }
    return CT_OK;
}

static void fill_entry(const ct_optimizer *opt, int i, const param_work *w, ct__optim_tensor *e) {
    const ct_tensor *p = opt->params[i];
    const ct__param_state *s = &opt->state[i];
    memset(e, 0, sizeof *e);
    e->param = ct__data(p);
    e->grad = ct__data(w->grad);
    for (int b = 0; b < CT_OPTIM_BUFFERS; b++) e->state[b] = s->buf[b] ? ct__data(s->buf[b]) : NULL;
    /* A complex parameter as its real and imaginary parts. */
    e->numel = ct__is_complex(p->dtype) ? 2 * p->numel : p->numel;
    e->dtype = ct__complex_part(p->dtype);
    e->fresh = (w->new_bufs & 1u) != 0;
    if (opt->hyper.kind != CT_OPTIM_SGD) {
        double step = s->step + 1.0;
        e->step_size = opt->hyper.lr / (1.0 - pow(opt->hyper.beta1, step));
        e->bias_correction2_sqrt = sqrt(1.0 - pow(opt->hyper.beta2, step));
    }
}

/* Whether parameter i has a gradient to apply and goes with parameter first: the same
 * device and weight decay. */
static bool same_update(const ct_optimizer *opt, const param_work *w, int first, int i) {
    return w[i].grad &&
           ct__same_device(opt->params[i]->storage->device, opt->params[first]->storage->device) &&
           opt->weight_decay[i] == opt->weight_decay[first];
}

/* Update every parameter with a gradient on the device and with the weight decay of
 * parameter `first`; marks them done (w[i].grad = NULL after release) and commits their
 * step. */
static ct_status step_device(ct_optimizer *opt, int first, param_work *w,
                             ct__optim_tensor *entries) {
    ct_device device = opt->params[first]->storage->device;
    ct__optim_args args = opt->hyper;
    args.weight_decay = opt->weight_decay[first];
    int count = 0;
    args.total = 0;
    for (int i = first; i < opt->n; i++) {
        if (!same_update(opt, w, first, i)) continue;
        fill_entry(opt, i, &w[i], &entries[count]);
        args.total += entries[count++].numel;
    }
    args.count = count;
    args.tensors = entries;
    int physical;
    const ct__kernel_table *k =
        ct__kernel_find(device, CT_SLOT_optim_step, "ct_optimizer_step", &physical);
    if (!k) return ct_last_status();
    ct_status status = k->optim_step(physical, &args);
    if (status != CT_OK) return status;
    for (int i = opt->n - 1; i >= first; i--) { /* first last: it is what the others match */
        if (!same_update(opt, w, first, i)) continue;
        ct__storage_written(opt->params[i]); /* updated in place */
        if (opt->hyper.kind != CT_OPTIM_SGD) {
            opt->state[i].step += 1.0;
            opt->state[i].has_step = true;
        }
        w[i].new_bufs = 0;
        if (w[i].temporary) ct_release(w[i].grad);
        w[i].grad = NULL;
    }
    return CT_OK;
}

/* Release the step's temporaries; drop the buffers of parameters it did not update. */
static void step_cleanup(ct_optimizer *opt, param_work *w) {
    for (int i = 0; i < opt->n; i++) {
        if (w[i].temporary && w[i].grad) ct_release(w[i].grad);
        for (int b = 0; b < CT_OPTIM_BUFFERS; b++) {
            if (!(w[i].new_bufs & (1u << b))) continue;
            ct__tensor_drop(opt->state[i].buf[b]);
            opt->state[i].buf[b] = NULL;
        }
    }
}

static ct_status step_all(ct_optimizer *opt, param_work *w, ct__optim_tensor *entries) {
    for (int i = 0; i < opt->n; i++) {
        ct_status s = prepare_grad(opt->params[i], i, &w[i]);
        if (s != CT_OK) return s;
    }
    for (int i = 0; i < opt->n; i++) {
        ct_status s = w[i].grad ? prepare_state(opt, i, &w[i]) : CT_OK;
        if (s != CT_OK) return s;
    }
    for (int i = 0; i < opt->n; i++) {
        ct_status s = w[i].grad ? step_device(opt, i, w, entries) : CT_OK;
        if (s != CT_OK) return s;
    }
    return CT_OK;
}

ct_status ct_optimizer_step(ct_optimizer *opt) {
    if (!opt) return ct__error(CT_ERR_INVALID_ARG, "ct_optimizer_step: opt is NULL");
    param_work *w = ct__calloc((size_t)opt->n, sizeof *w);
    ct__optim_tensor *entries = ct__calloc((size_t)opt->n, sizeof *entries);
    if (!w || !entries) {
        ct__free_mem(w), ct__free_mem(entries);
        return ct__error(CT_ERR_OUT_OF_MEMORY,
                         "ct_optimizer_step: out of host memory for %d parameters", opt->n);
    }
    ct_no_grad_push();
    ct_profile_phase phase = ct_profile_set_phase(CT_PROFILE_OPTIMIZER);
    ct_status status = step_all(opt, w, entries);
    ct_profile_set_phase(phase);
    ct_no_grad_pop();
    step_cleanup(opt, w);
    ct__free_mem(w);
    ct__free_mem(entries);
    return status;
}

/* Optimisers: SGD, Adam and AdamW against their formulas written out here as plain float64
 * loops (PyTorch's documented algorithms), three steps each, for every variant (momentum,
 * dampening, Nesterov, weight decay, amsgrad, decoupled decay), over f32, f64 and mixed
 * parameter lists that hold a large tensor (the parallel path), an empty one and a 0-d one;
 * parameters without a gradient skipped; gradients converted; state export and import;
 * gradient clipping; a training loop with the autograd engine; error paths. Schedules are in
 * test_optim_schedule.c. */
#include <stdlib.h>

#include "autograd/tape_impl.h"
#include "core/tensor_impl.h"
#include "ct_ref.h"

#define NPARAMS 4

/* The parameters of the step tests: small, large enough for the kernels' parallel split,
 * empty, and 0-d. */
static const int param_ndim[NPARAMS] = {1, 1, 1, 0};
static const int64_t param_shape[NPARAMS][1] = {{7}, {40000}, {0}, {1}};

enum { KIND_SGD, KIND_ADAM, KIND_ADAMW };

typedef struct opt_case {
    int kind;
    ct_sgd_options sgd;
    ct_adam_options adam;
} opt_case;

/* A parameter and its float64 reference: values, state and step count. */
typedef struct ref_param {
    int64_t n;
    double *p, *g, *buf, *m, *v, *vmax;
    bool has_buf;
    int step;
    ct_dtype dtype;
    ct_tensor *t;
} ref_param;

static double *alloc_values(int64_t n) { return calloc((size_t)(n ? n : 1), sizeof(double)); }

/* Random values in [lo, hi) that dtype holds exactly. */
static void random_values(double *v, int64_t n, uint64_t seed, double lo, double hi,
                          ct_dtype dtype) {
    ref_random(v, n, seed, lo, hi);
    for (int64_t i = 0; i < n; i++) v[i] = ref_round(v[i], dtype);
}

static bool ref_param_init(ref_param *r, int k, ct_dtype dtype, ct_device device, uint64_t seed) {
    memset(r, 0, sizeof *r);
    r->n = ref_numel(param_ndim[k], param_shape[k]);
    r->dtype = dtype;
    r->p = alloc_values(r->n), r->g = alloc_values(r->n), r->buf = alloc_values(r->n);
    r->m = alloc_values(r->n), r->v = alloc_values(r->n), r->vmax = alloc_values(r->n);
    random_values(r->p, r->n, seed, -1.0, 1.0, dtype);
    r->t = ref_tensor(r->p, param_ndim[k], param_shape[k], dtype, device);
    return r->t != NULL;
}

static void ref_param_free(ref_param *r) {
    free(r->p), free(r->g), free(r->buf), free(r->m), free(r->v), free(r->vmax);
    ct_release(r->t);
}

/* Give t a gradient (replacing any), as the autograd engine leaves it. */
static bool set_grad(ct_tensor *t, const double *values, ct_dtype dtype) {
    ct_tensor *g = ref_tensor(values, t->ndim, t->shape, dtype, ct_device_of(t));
    if (!g) return false;
    ct__scope_forget(g); /* the parameter holds it, beyond any scope */
    if (t->grad) ct__tensor_drop(t->grad);
    t->grad = g;
    return true;
}

/* ---- the float64 references ---- */

static void ref_sgd(const ct_sgd_options *o, ref_param *r) {
    for (int64_t i = 0; i < r->n; i++) {
        double g = r->g[i] + o->weight_decay * r->p[i];
        if (o->momentum != 0.0) {
            r->buf[i] = r->has_buf ? o->momentum * r->buf[i] + (1.0 - o->dampening) * g : g;
            g = o->nesterov ? g + o->momentum * r->buf[i] : r->buf[i];
        }
        r->p[i] -= o->lr * g;
    }
    r->has_buf = o->momentum != 0.0;
}

static void ref_adam(const ct_adam_options *o, bool decoupled, ref_param *r) {
    r->step++;
    double bc1 = 1.0 - pow(o->beta1, r->step), bc2 = 1.0 - pow(o->beta2, r->step);
    for (int64_t i = 0; i < r->n; i++) {
        double g = r->g[i];
        if (decoupled)
            r->p[i] *= 1.0 - o->lr * o->weight_decay;
        else
            g += o->weight_decay * r->p[i];
        r->m[i] = o->beta1 * r->m[i] + (1.0 - o->beta1) * g;
        r->v[i] = o->beta2 * r->v[i] + (1.0 - o->beta2) * g * g;
        double v = r->v[i];
        if (o->amsgrad) v = r->vmax[i] = fmax(r->vmax[i], r->v[i]);
        r->p[i] -= o->lr / bc1 * r->m[i] / (sqrt(v) / sqrt(bc2) + o->eps);
    }
}

static void ref_step(const opt_case *c, ref_param *r) {
    if (c->kind == KIND_SGD)
        ref_sgd(&c->sgd, r);
    else
        ref_adam(&c->adam, c->kind == KIND_ADAMW, r);
}

/* Parameters on two devices (the CPU split into cpu:0 and cpu:1): each device's are updated
 * by its own kernel, and clipping takes the norm over both. First in the file: the split
 * must happen before any CPU memory is used. */
TEST(test_optim_two_devices) {
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 2, NULL));
    const ct_device devices[2] = {CT_CPU, {CT_DEVICE_CPU, 1}};
    const ct_dtype dtypes[2] = {CT_F32, CT_F64};
    ct_sgd_options o = {.lr = 0.1, .momentum = 0.9};
    ref_param r[2];
    for (int k = 0; k < 2; k++) CHECK(ref_param_init(&r[k], 0, dtypes[k], devices[k], 300u + k));
    ct_tensor *params[2] = {r[0].t, r[1].t};
    ct_optimizer *opt = ct_sgd(2, params, &o);
    CHECK_NOT_NULL(opt);
    for (int step = 0; step < 2; step++) {
        for (int k = 0; k < 2; k++) {
            random_values(r[k].g, r[k].n, 310u + (uint64_t)(2 * step + k), -1.0, 1.0, dtypes[k]);
            CHECK(set_grad(params[k], r[k].g, dtypes[k]));
        }
        CHECK_OK(ct_optimizer_step(opt));
        for (int k = 0; k < 2; k++) {
            ref_sgd(&o, &r[k]);
            CHECK_TENSOR(params[k], r[k].p);
        }
    }
    double sum = 0.0, total = 0.0;
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; i < r[k].n; i++) sum += r[k].g[i] * r[k].g[i];
    CHECK_OK(ct_clip_grad_norm(2, params, 1e9, 2.0, &total));
    CHECK_NEAR(total, sqrt(sum), 1e-12);
    /* A gradient on another device than its parameter. */
    ct_tensor *moved = ct_to(params[0]->grad, devices[1]);
    CHECK_NOT_NULL(moved);
    ct__scope_forget(moved);
    ct__tensor_drop(params[0]->grad);
    params[0]->grad = moved;
    CHECK(ct_optimizer_step(opt) == CT_ERR_DEVICE_MISMATCH);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "the gradient of parameter 0 is on cpu:1, the "
                                        "parameter on cpu:0");
    ct_optimizer_free(opt);
    for (int k = 0; k < 2; k++) ref_param_free(&r[k]);
}

static ct_optimizer *make_opt(const opt_case *c, int n, ct_tensor *const *params) {
    if (c->kind == KIND_SGD) return ct_sgd(n, params, &c->sgd);
    return c->kind == KIND_ADAM ? ct_adam(n, params, &c->adam) : ct_adamw(n, params, &c->adam);
}

/* The state entry called name (a new reference), or NULL. */
static ct_tensor *find_state(const ct_optimizer *opt, const char *name) {
    for (int i = 0; i < ct_optimizer_state_count(opt); i++) {
        const char *entry;
        ct_tensor *t;
        if (ct_optimizer_state_at(opt, i, &entry, &t) != CT_OK) return NULL;
        if (strcmp(entry, name) == 0) return t;
        ct_release(t);
    }
    return NULL;
}

/* The state entry `key` of parameter k holds expected. */
#define CHECK_STATE(opt, k, key, expected)                                                         \
    do {                                                                                           \
        char check_name_[64];                                                                      \
        snprintf(check_name_, sizeof check_name_, "state.%d.%s", (k), (key));                      \
        ct_tensor *check_state_ = find_state((opt), check_name_);                                  \
        CHECK_TENSOR(check_state_, (expected));                                                    \
        ct_release(check_state_);                                                                  \
    } while (0)

static void check_state(const ct_optimizer *opt, const opt_case *c, const ref_param *r) {
    for (int k = 0; k < NPARAMS; k++) {
        if (c->kind == KIND_SGD) {
            if (c->sgd.momentum != 0.0) CHECK_STATE(opt, k, "momentum_buffer", r[k].buf);
            continue;
        }
        double step = 3.0;
        CHECK_STATE(opt, k, "step", &step);
        CHECK_STATE(opt, k, "exp_avg", r[k].m);
        CHECK_STATE(opt, k, "exp_avg_sq", r[k].v);
        if (c->adam.amsgrad) CHECK_STATE(opt, k, "max_exp_avg_sq", r[k].vmax);
    }
    int per_param = c->kind == KIND_SGD ? (c->sgd.momentum != 0.0) : 3 + c->adam.amsgrad;
    CHECK(ct_optimizer_state_count(opt) == NPARAMS * per_param);
}

/* Three steps of case c on parameters of the given dtypes, each checked against the
 * reference; gradients shrink tenfold per step, so amsgrad's maximum matters. */
static void run_case(ct_device device, const opt_case *c, const ct_dtype *dtypes, uint64_t seed) {
    ref_param r[NPARAMS];
    ct_tensor *params[NPARAMS];
    for (int k = 0; k < NPARAMS; k++) {
        CHECK(ref_param_init(&r[k], k, dtypes[k], device, seed + (uint64_t)k));
        params[k] = r[k].t;
    }
    ct_optimizer *opt = make_opt(c, NPARAMS, params);
    CHECK_NOT_NULL(opt);
    for (int step = 0; step < 3; step++) {
        double scale = pow(10.0, -step);
        for (int k = 0; k < NPARAMS; k++) {
            random_values(r[k].g, r[k].n, seed * 31 + (uint64_t)(10 * step + k), -scale, scale,
                          dtypes[k]);
            CHECK(set_grad(params[k], r[k].g, dtypes[k]));
        }
        CHECK_OK(ct_optimizer_step(opt));
        for (int k = 0; k < NPARAMS; k++) {
            ref_step(c, &r[k]);
            CHECK_TENSOR(params[k], r[k].p);
        }
    }
    check_state(opt, c, r);
    if (ct_test_failed()) return;
    ct_optimizer_free(opt);
    for (int k = 0; k < NPARAMS; k++) ref_param_free(&r[k]);
}

static const ct_dtype dtype_sets[3][NPARAMS] = {{CT_F32, CT_F32, CT_F32, CT_F32},
                                                {CT_F64, CT_F64, CT_F64, CT_F64},
                                                {CT_F64, CT_F32, CT_F64, CT_F32}};

static void run_cases(ct_device device, const opt_case *cases, int ncases) {
    for (int i = 0; i < ncases; i++)
        for (int d = 0; d < 3; d++) {
            run_case(device, &cases[i], dtype_sets[d], 1000u + 10u * (uint64_t)i);
            if (ct_test_failed()) {
                printf("  (case %d, dtype set %d)\n", i, d);
                return;
            }
        }
}

DEVICE_TEST(test_optim_sgd_variants) {
    const opt_case cases[] = {
        {.kind = KIND_SGD, .sgd = {.lr = 0.1}},
        {.kind = KIND_SGD, .sgd = {.lr = 0.1, .momentum = 0.9}},
        {.kind = KIND_SGD, .sgd = {.lr = 0.05, .momentum = 0.8, .dampening = 0.3}},
        {.kind = KIND_SGD, .sgd = {.lr = 0.1, .momentum = 0.9, .nesterov = true}},
        {.kind = KIND_SGD, .sgd = {.lr = 0.1, .weight_decay = 0.1}},
        {.kind = KIND_SGD,
         .sgd = {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true}},
    };
    run_cases(device, cases, (int)(sizeof cases / sizeof cases[0]));
}

DEVICE_TEST(test_optim_adam_variants) {
    const ct_adam_options base = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    opt_case cases[6];
    for (int i = 0; i < 6; i++) cases[i] = (opt_case){.kind = KIND_ADAM, .adam = base};
    cases[1].adam.weight_decay = 0.1;
    cases[2].adam.amsgrad = true;
    cases[2].adam.beta2 = 0.5;
    cases[3].adam.beta1 = 0.3; /* torch.lerp's other branch (weight >= 0.5) */
    cases[3].adam.eps = 1e-3;
    cases[4].kind = KIND_ADAMW;
    cases[4].adam.weight_decay = 0.01;
    cases[5].kind = KIND_ADAMW;
    cases[5].adam.weight_decay = 0.5;
    cases[5].adam.amsgrad = true;
    cases[5].adam.beta2 = 0.5;
    run_cases(device, cases, 6);
}

/* Parameter groups: parameters 1 and 3 set to no weight decay (as batch norm's weights and
 * the biases in PyTorch's SGD([{..}, {.., "weight_decay": 0}])) against per-parameter
 * references, for Nesterov SGD and AdamW; the others keep the options' decay. */
DEVICE_TEST(test_optim_per_parameter_weight_decay) {
    opt_case cases[2] = {
        {.kind = KIND_SGD,
         .sgd = {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.05, .nesterov = true}},
        {.kind = KIND_ADAMW, .adam = ct_adamw_defaults()}};
    cases[1].adam.weight_decay = 0.3;
    for (int c = 0; c < 2; c++) {
        ref_param r[NPARAMS];
        ct_tensor *params[NPARAMS];
        opt_case per[NPARAMS];
        for (int k = 0; k < NPARAMS; k++) {
            CHECK(ref_param_init(&r[k], k, CT_F32, device, 500u + (uint64_t)k));
            params[k] = r[k].t;
            per[k] = cases[c];
            if (k & 1) per[k].sgd.weight_decay = per[k].adam.weight_decay = 0.0;
        }
        ct_optimizer *opt = make_opt(&cases[c], NPARAMS, params);
        CHECK_NOT_NULL(opt);
        CHECK_OK(ct_optimizer_set_weight_decay(opt, 1, 0.0));
        CHECK_OK(ct_optimizer_set_weight_decay(opt, 3, 0.0));
        for (int step = 0; step < 3; step++) {
            for (int k = 0; k < NPARAMS; k++) {
                random_values(r[k].g, r[k].n, 520u + (uint64_t)(10 * step + k), -1.0, 1.0, CT_F32);
                CHECK(set_grad(params[k], r[k].g, CT_F32));
            }
            CHECK_OK(ct_optimizer_step(opt));
            for (int k = 0; k < NPARAMS; k++) {
                ref_step(&per[k], &r[k]);
                CHECK_TENSOR(params[k], r[k].p);
            }
        }
        CHECK(ct_optimizer_set_weight_decay(opt, 4, 0.0) == CT_ERR_INVALID_ARG);
        CHECK_ERROR(CT_ERR_INVALID_ARG, "index 4 is out of range: the optimiser has 4 parameters");
        CHECK(ct_optimizer_set_weight_decay(opt, 0, -1.0) == CT_ERR_INVALID_ARG);
        CHECK_ERROR(CT_ERR_INVALID_ARG, "invalid weight_decay -1");
        CHECK(ct_optimizer_set_weight_decay(NULL, 0, 0.0) == CT_ERR_INVALID_ARG);
        CHECK_ERROR(CT_ERR_INVALID_ARG, "opt is NULL");
        ct_optimizer_free(opt);
        for (int k = 0; k < NPARAMS; k++) ref_param_free(&r[k]);
    }
}

/* param_groups[0]["momentum"] and ["betas"][0]: read, set (the next step uses it), refused. */
TEST(test_optim_momentum_get_set) {
    ref_param r;
    CHECK(ref_param_init(&r, 0, CT_F64, CT_CPU, 700u));
    ct_sgd_options o = {.lr = 0.1, .momentum = 0.9};
    ct_optimizer *sgd = ct_sgd(1, &r.t, &o), *plain = ct_sgd(1, &r.t, &(ct_sgd_options){.lr = 0.1});
    ct_optimizer *adam = ct_adam(1, &r.t, NULL);
    CHECK(sgd && plain && adam);
    CHECK(ct_optimizer_get_momentum(sgd) == 0.9 && ct_optimizer_get_momentum(adam) == 0.9);
    CHECK(isnan(ct_optimizer_get_momentum(NULL)));
    for (int step = 0; step < 2; step++) { /* the second step runs with momentum 0.5 */
        random_values(r.g, r.n, 710u + (uint64_t)step, -1.0, 1.0, CT_F64);
        CHECK(set_grad(r.t, r.g, CT_F64));
        CHECK_OK(ct_optimizer_step(sgd));
        ref_sgd(&o, &r);
        CHECK_TENSOR(r.t, r.p);
        CHECK_OK(ct_optimizer_set_momentum(sgd, 0.5));
        o.momentum = 0.5;
    }
    CHECK_OK(ct_optimizer_set_momentum(adam, 0.8));
    CHECK(ct_optimizer_get_momentum(adam) == 0.8);
    CHECK(ct_optimizer_set_momentum(adam, 1.0) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "beta1 1 must be in [0, 1)");
    CHECK(ct_optimizer_set_momentum(sgd, -0.5) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "momentum -0.5 must be finite and >= 0");
    CHECK(ct_optimizer_set_momentum(sgd, INFINITY) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "must be finite");
    /* Made without momentum, given one: the buffer starts as PyTorch's, with the gradient. */
    CHECK_OK(ct_optimizer_set_momentum(plain, 0.9));
    ct_sgd_options p = {.lr = 0.1, .momentum = 0.9};
    ref_param q;
    CHECK(ref_param_init(&q, 0, CT_F64, CT_CPU, 720u));
    ct_optimizer *late = ct_sgd(1, &q.t, &(ct_sgd_options){.lr = 0.1});
    CHECK_NOT_NULL(late);
    for (int step = 0; step < 2; step++) {
        random_values(q.g, q.n, 730u + (uint64_t)step, -1.0, 1.0, CT_F64);
        CHECK(set_grad(q.t, q.g, CT_F64));
        if (step == 1) CHECK_OK(ct_optimizer_set_momentum(late, 0.9));
        CHECK_OK(ct_optimizer_step(late));
        ct_sgd_options now = step ? p : (ct_sgd_options){.lr = 0.1};
        ref_sgd(&now, &q);
        CHECK_TENSOR(q.t, q.p);
    }
    ct_optimizer_free(late);
    ref_param_free(&q);
    ct_optimizer_free(sgd);
    ct_optimizer_free(plain);
    ct_optimizer_free(adam);
    ref_param_free(&r);
}

/* Per-parameter weight decay (GPT's groups: decay the matrices, not the biases): parameters
 * 0 and 3 without decay, 1 and 2 with it, in one AdamW; each against its float64 reference. */
DEVICE_TEST(test_optim_adamw_per_parameter_weight_decay) {
    opt_case decayed = {
        .kind = KIND_ADAMW,
        .adam = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.5}};
    opt_case plain = decayed;
    plain.adam.weight_decay = 0.0;
    ref_param r[NPARAMS];
    ct_tensor *params[NPARAMS];
    for (int k = 0; k < NPARAMS; k++) {
        CHECK(ref_param_init(&r[k], k, CT_F32, device, 3000u + (uint64_t)k));
        params[k] = r[k].t;
    }
    ct_optimizer *opt = make_opt(&decayed, NPARAMS, params);
    CHECK_NOT_NULL(opt);
    CHECK_OK(ct_optimizer_set_weight_decay(opt, 0, 0.0));
    CHECK_OK(ct_optimizer_set_weight_decay(opt, 3, 0.0));
    CHECK(ct_optimizer_get_weight_decay(opt, 0) == 0.0);
    CHECK(ct_optimizer_get_weight_decay(opt, 1) == 0.5);
    CHECK(isnan(ct_optimizer_get_weight_decay(opt, NPARAMS)));
    CHECK(ct_optimizer_set_weight_decay(opt, NPARAMS, 0.0) == CT_ERR_INVALID_ARG);
    CHECK(ct_optimizer_set_weight_decay(opt, 1, -1.0) == CT_ERR_INVALID_ARG);
    CHECK(ct_optimizer_get_weight_decay(opt, 1) == 0.5);
    for (int step = 0; step < 3; step++) {
        for (int k = 0; k < NPARAMS; k++) {
            random_values(r[k].g, r[k].n, 77u + (uint64_t)(10 * step + k), -1.0, 1.0, CT_F32);
            CHECK(set_grad(params[k], r[k].g, CT_F32));
        }
        CHECK_OK(ct_optimizer_step(opt));
        for (int k = 0; k < NPARAMS; k++) {
            ref_step(k == 0 || k == 3 ? &plain : &decayed, &r[k]);
            CHECK_TENSOR(params[k], r[k].p);
        }
    }
    ct_optimizer_free(opt);
    for (int k = 0; k < NPARAMS; k++) ref_param_free(&r[k]);
}

TEST(test_optim_adam_defaults_are_pytorchs) {
    ct_adam_options a = ct_adam_defaults(), w = ct_adamw_defaults();
    CHECK(a.lr == 1e-3 && a.beta1 == 0.9 && a.beta2 == 0.999 && a.eps == 1e-8);
    CHECK(a.weight_decay == 0.0 && !a.amsgrad);
    CHECK(w.lr == 1e-3 && w.beta1 == 0.9 && w.beta2 == 0.999 && w.eps == 1e-8);
    CHECK(w.weight_decay == 1e-2 && !w.amsgrad);
    /* NULL options are those defaults: one AdamW step from NULL matches the reference. */
    ref_param r;
    CHECK(ref_param_init(&r, 0, CT_F64, CT_CPU, 7));
    ct_optimizer *opt = ct_adamw(1, &r.t, NULL);
    CHECK_NOT_NULL(opt);
    CHECK(ct_optimizer_get_lr(opt) == 1e-3);
    random_values(r.g, r.n, 8, -1.0, 1.0, CT_F64);
    CHECK(set_grad(r.t, r.g, CT_F64));
    CHECK_OK(ct_optimizer_step(opt));
    ref_adam(&w, true, &r);
    CHECK_TENSOR(r.t, r.p);
    ct_optimizer_free(opt);
    ref_param_free(&r);
}

/* A parameter without a gradient is left alone and gets no state; its step count starts with
 * its first gradient. */
DEVICE_TEST(test_optim_null_grad_skipped) {
    const opt_case adam = {.kind = KIND_ADAM,
                           .adam = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8}};
    const opt_case sgd = {.kind = KIND_SGD, .sgd = {.lr = 0.1, .momentum = 0.9}};
    const opt_case *cases[2] = {&adam, &sgd};
    for (int ci = 0; ci < 2; ci++) {
        const opt_case *c = cases[ci];
        ref_param r[2];
        CHECK(ref_param_init(&r[0], 0, CT_F64, device, 50));
        CHECK(ref_param_init(&r[1], 0, CT_F32, device, 51));
        ct_tensor *params[2] = {r[0].t, r[1].t};
        ct_optimizer *opt = make_opt(c, 2, params);
        CHECK_NOT_NULL(opt);
        for (int step = 0; step < 3; step++) {
            for (int k = 0; k < 2; k++) {
                if (k == 1 && step == 0) continue; /* parameter 1 starts without gradient */
                random_values(r[k].g, r[k].n, 60u + (uint64_t)(10 * step + k), -1.0, 1.0,
                              r[k].dtype);
                CHECK(set_grad(params[k], r[k].g, r[k].dtype));
                if (step == 2 && k == 0) {
                    ct__tensor_drop(params[0]->grad); /* and parameter 0 ends without */
                    params[0]->grad = NULL;
                }
            }
            CHECK_OK(ct_optimizer_step(opt));
            for (int k = 0; k < 2; k++) {
                if (params[k]->grad) ref_step(c, &r[k]);
                CHECK_TENSOR(params[k], r[k].p);
            }
            int per_param = c->kind == KIND_SGD ? 1 : 3;
            CHECK(ct_optimizer_state_count(opt) == (step == 0 ? per_param : 2 * per_param));
        }
        if (c->kind == KIND_ADAM) {
            double steps[2] = {2.0, 2.0};
            CHECK_STATE(opt, 0, "step", &steps[0]);
            CHECK_STATE(opt, 1, "step", &steps[1]);
        }
        ct_optimizer_free(opt);
        ref_param_free(&r[0]);
        ref_param_free(&r[1]);
    }
}

/* Gradients of another floating dtype or a non-contiguous layout are converted first. */
DEVICE_TEST(test_optim_grad_converted) {
    int64_t shape[2] = {3, 4};
    double p[12], g[12];
    random_values(p, 12, 70, -1.0, 1.0, CT_F32);
    random_values(g, 12, 71, -1.0, 1.0, CT_F32);
    ct_tensor *param = ref_tensor(p, 2, shape, CT_F32, device);
    CHECK_NOT_NULL(param);
    ct_sgd_options o = {.lr = 0.5};
    ct_optimizer *opt = ct_sgd(1, &param, &o);
    CHECK_NOT_NULL(opt);
    param->grad = ref_tensor_strided(g, 2, shape, CT_F64, device);
    CHECK(param->grad && !param->grad->contiguous);
    CHECK_OK(ct_optimizer_step(opt));
    double expected[12];
    for (int i = 0; i < 12; i++) expected[i] = p[i] - 0.5 * g[i];
    CHECK_TENSOR(param, expected);
    ct_optimizer_free(opt);
    ct_release(param);
}

/* The state made by a step inside a scope outlives the scope; zero_grad drops gradients. */
DEVICE_TEST(test_optim_scope_and_zero_grad) {
    ref_param r;
    CHECK(ref_param_init(&r, 0, CT_F32, device, 80));
    ct_adam_options o = ct_adam_defaults();
    ct_optimizer *opt = ct_adam(1, &r.t, &o);
    CHECK_NOT_NULL(opt);
    for (int step = 0; step < 2; step++) {
        CHECK_OK(ct_scope_begin());
        random_values(r.g, r.n, 81u + (uint64_t)step, -1.0, 1.0, CT_F32);
        CHECK(set_grad(r.t, r.g, CT_F32));
        CHECK_OK(ct_optimizer_step(opt));
        CHECK_OK(ct_scope_end());
        ref_adam(&o, false, &r);
        CHECK_TENSOR(r.t, r.p);
    }
    CHECK_STATE(opt, 0, "exp_avg", r.m);
    CHECK(r.t->grad != NULL);
    CHECK_OK(ct_optimizer_zero_grad(opt));
    CHECK(r.t->grad == NULL);
    /* A step with no gradient anywhere changes nothing. */
    CHECK_OK(ct_optimizer_step(opt));
    CHECK_TENSOR(r.t, r.p);
    ct_optimizer_free(opt);
    ref_param_free(&r);
}

/* ---- state export and import ---- */

/* Copy every state entry of a into b. */
static ct_status copy_state(const ct_optimizer *a, ct_optimizer *b) {
    for (int i = 0; i < ct_optimizer_state_count(a); i++) {
        const char *name;
        ct_tensor *t;
        ct_status s = ct_optimizer_state_at(a, i, &name, &t);
        if (s == CT_OK) s = ct_optimizer_load_state(b, name, t);
        ct_release(t);
        if (s != CT_OK) return s;
    }
    return CT_OK;
}

static void roundtrip_case(ct_device device, const opt_case *c, const char *const *names,
                           int nnames) {
    ref_param r[2];
    CHECK(ref_param_init(&r[0], 0, CT_F32, device, 90));
    CHECK(ref_param_init(&r[1], 3, CT_F64, device, 91));
    ct_tensor *a_params[2] = {r[0].t, r[1].t};
    ct_optimizer *a = make_opt(c, 2, a_params);
    CHECK_NOT_NULL(a);
    for (int step = 0; step < 2; step++)
        for (int k = 0; k < 2; k++) {
            random_values(r[k].g, r[k].n, 92u + (uint64_t)(2 * step + k), -1.0, 1.0, r[k].dtype);
            CHECK(set_grad(a_params[k], r[k].g, r[k].dtype));
            if (k == 1) CHECK_OK(ct_optimizer_step(a));
        }
    CHECK(ct_optimizer_state_count(a) == nnames);
    for (int i = 0; i < nnames; i++) {
        const char *name;
        ct_tensor *t;
        CHECK_OK(ct_optimizer_state_at(a, i, &name, &t));
        bool same = strcmp(name, names[i]) == 0;
        ct_release(t);
        CHECK(same);
    }
    /* b: the same parameter values, state loaded from a; then one more step on each. */
    ct_tensor *b_params[2] = {ct_clone(a_params[0]), ct_clone(a_params[1])};
    CHECK(b_params[0] && b_params[1]);
    ct_optimizer *b = make_opt(c, 2, b_params);
    CHECK_NOT_NULL(b);
    CHECK_OK(copy_state(a, b));
    CHECK(ct_optimizer_state_count(b) == nnames);
    for (int k = 0; k < 2; k++) {
        random_values(r[k].g, r[k].n, 99u + (uint64_t)k, -1.0, 1.0, r[k].dtype);
        CHECK(set_grad(a_params[k], r[k].g, r[k].dtype));
        CHECK(set_grad(b_params[k], r[k].g, r[k].dtype));
    }
    CHECK_OK(ct_optimizer_step(a));
    CHECK_OK(ct_optimizer_step(b));
    for (int k = 0; k < 2; k++) {
        double *expected = ref_read(a_params[k]);
        CHECK_NOT_NULL(expected);
        CHECK_TENSOR(b_params[k], expected);
        free(expected);
    }
    ct_optimizer_free(a);
    ct_optimizer_free(b);
    for (int k = 0; k < 2; k++) ct_release(b_params[k]), ref_param_free(&r[k]);
}

DEVICE_TEST(test_optim_state_roundtrip) {
    const opt_case adam = {
        .kind = KIND_ADAM,
        .adam = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.9, .eps = 1e-8, .amsgrad = true}};
    const char *const adam_names[] = {
        "state.0.step", "state.0.exp_avg", "state.0.exp_avg_sq", "state.0.max_exp_avg_sq",
        "state.1.step", "state.1.exp_avg", "state.1.exp_avg_sq", "state.1.max_exp_avg_sq"};
    roundtrip_case(device, &adam, adam_names, 8);
    if (ct_test_failed()) return;
    const opt_case sgd = {.kind = KIND_SGD, .sgd = {.lr = 0.1, .momentum = 0.9, .dampening = 0.5}};
    const char *const sgd_names[] = {"state.0.momentum_buffer", "state.1.momentum_buffer"};
    roundtrip_case(device, &sgd, sgd_names, 2);
    if (ct_test_failed()) return;
    const opt_case plain = {.kind = KIND_SGD, .sgd = {.lr = 0.1}};
    roundtrip_case(device, &plain, NULL, 0);
}

TEST(test_optim_load_state_errors) {
    int64_t shape[2] = {2, 3}, wrong_shape[2] = {3, 2};
    ct_tensor *p = ct_zeros(2, shape, CT_F32, CT_CPU);
    ct_optimizer *opt = ct_adam(1, &p, NULL);
    CHECK_NOT_NULL(opt);
    ct_tensor *good = ct_ones(2, shape, CT_F32, CT_CPU);
    ct_tensor *bad_shape = ct_ones(2, wrong_shape, CT_F32, CT_CPU);
    ct_tensor *bad_dtype = ct_ones(2, shape, CT_F64, CT_CPU);
    ct_tensor *step_f64 = ct_scalar(3.0, CT_F64, CT_CPU);
    ct_tensor *step_half = ct_scalar(1.5, CT_F32, CT_CPU);
    const char *bad_names[] = {"state.1.exp_avg",
                               "state.0.max_exp_avg_sq",
                               "state.0.momentum_buffer",
                               "state.-1.step",
                               "state.0",
                               "state0.step",
                               "state.x.step",
                               "exp_avg"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        CHECK(ct_optimizer_load_state(opt, bad_names[i], good) == CT_ERR_FORMAT);
        CHECK_ERROR(CT_ERR_FORMAT, "is no state entry of this adam optimiser");
    }
    CHECK(ct_optimizer_load_state(opt, "state.0.exp_avg", bad_shape) == CT_ERR_FORMAT);
    CHECK_ERROR(CT_ERR_FORMAT, "must have its parameter's shape and dtype");
    CHECK(ct_optimizer_load_state(opt, "state.0.exp_avg_sq", bad_dtype) == CT_ERR_FORMAT);
    CHECK_ERROR(CT_ERR_FORMAT, "got a 2-d float64 tensor");
    CHECK(ct_optimizer_load_state(opt, "state.0.step", step_f64) == CT_ERR_FORMAT);
    CHECK_ERROR(CT_ERR_FORMAT, "must be a 0-d f32 tensor");
    CHECK(ct_optimizer_load_state(opt, "state.0.step", good) == CT_ERR_FORMAT);
    CHECK_ERROR(CT_ERR_FORMAT, "must be a 0-d f32 tensor");
    CHECK(ct_optimizer_load_state(opt, "state.0.step", step_half) == CT_ERR_FORMAT);
    CHECK_ERROR(CT_ERR_FORMAT, "whole number");
    CHECK(ct_optimizer_state_count(opt) == 0); /* nothing changed */
    CHECK(ct_optimizer_load_state(opt, "state.0.exp_avg", NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "argument 3 is NULL");
    const char *name;
    ct_tensor *t;
    CHECK(ct_optimizer_state_at(opt, 0, &name, &t) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "index 0 is out of range");
    /* A good entry loads and counts. */
    CHECK_OK(ct_optimizer_load_state(opt, "state.0.exp_avg", good));
    CHECK(ct_optimizer_state_count(opt) == 1);
    ct_sgd_options so = {.lr = 0.1};
    ct_optimizer *plain = ct_sgd(1, &p, &so);
    CHECK(ct_optimizer_load_state(plain, "state.0.momentum_buffer", good) == CT_ERR_FORMAT);
    CHECK_ERROR(CT_ERR_FORMAT, "(none: it keeps no state)");
    ct_optimizer_free(plain);
    ct_optimizer_free(opt);
    ct_release(good), ct_release(bad_shape), ct_release(bad_dtype);
    ct_release(step_f64), ct_release(step_half), ct_release(p);
}

/* ---- construction and step errors ---- */

TEST(test_optim_constructor_errors) {
    int64_t shape[2] = {2, 3};
    ct_tensor *p = ct_zeros(2, shape, CT_F32, CT_CPU);
    ct_tensor *ints = ct_zeros(2, shape, CT_I32, CT_CPU);
    ct_tensor *half = ct_zeros(2, shape, CT_F16, CT_CPU);
    ct_tensor *view = ct_transpose(p, 0, 1);
    ct_tensor *nonleaf = ct_zeros(2, shape, CT_F32, CT_CPU);
    CHECK(p && ints && half && view && nonleaf);
    nonleaf->grad_fn = ct__node_new("ct_test_op", NULL, 0, NULL);
    ct_sgd_options sgd = {.lr = 0.1};
    ct_adam_options adam = ct_adam_defaults();
    CHECK(!ct_sgd(1, &p, NULL));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "SGD has no default learning rate");
    CHECK(!ct_sgd(0, &p, &sgd));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "empty parameter list");
    CHECK(!ct_adam(1, NULL, NULL));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "empty parameter list");
    ct_tensor *list[2] = {p, NULL};
    CHECK(!ct_adam(2, list, NULL));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "parameter 1 is NULL");
    list[1] = p;
    CHECK(!ct_adamw(2, list, NULL));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "parameters 0 and 1 are the same tensor");
    CHECK(!ct_sgd(1, &ints, &sgd));
    CHECK_ERROR(CT_ERR_DTYPE, "parameter 0 is int32");
    CHECK(!ct_adam(1, &half, NULL));
    CHECK_ERROR(CT_ERR_UNSUPPORTED, "keep f32 master weights");
    CHECK(!ct_adam(1, &view, NULL));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "non-contiguous view");
    CHECK(!ct_adam(1, &nonleaf, NULL));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "is not a leaf");
    struct {
        ct_sgd_options o;
        const char *message;
    } sgd_bad[] = {
        {{.lr = -0.1}, "invalid learning rate -0.1"},
        {{.lr = NAN}, "invalid learning rate nan"},
        {{.lr = 0.1, .momentum = -1}, "invalid momentum -1"},
        {{.lr = 0.1, .weight_decay = -1}, "invalid weight_decay -1"},
        {{.lr = 0.1, .nesterov = true}, "Nesterov momentum requires a momentum > 0"},
        {{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}, "zero dampening"},
    };
    for (size_t i = 0; i < sizeof sgd_bad / sizeof sgd_bad[0]; i++) {
        CHECK(!ct_sgd(1, &p, &sgd_bad[i].o));
        CHECK_ERROR(CT_ERR_INVALID_ARG, sgd_bad[i].message);
    }
    ct_adam_options a = adam;
    a.beta1 = 1.0;
    CHECK(!ct_adam(1, &p, &a));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "invalid beta parameter at index 0: 1");
    a = adam, a.beta2 = -0.1;
    CHECK(!ct_adamw(1, &p, &a));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_adamw: invalid beta parameter at index 1");
    a = adam, a.eps = -1e-8;
    CHECK(!ct_adam(1, &p, &a));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "invalid epsilon value");
    a = adam, a.weight_decay = -1;
    CHECK(!ct_adam(1, &p, &a));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "invalid weight_decay value");
    a = adam, a.lr = -1;
    CHECK(!ct_adam(1, &p, &a));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_adam: invalid learning rate");
    ct_release(p), ct_release(ints), ct_release(half), ct_release(view), ct_release(nonleaf);
}

TEST(test_optim_step_errors_change_nothing) {
    int64_t shape[1] = {4}, other[1] = {5};
    double ones[5] = {1, 1, 1, 1, 1};
    ct_tensor *p[2] = {ct_zeros(1, shape, CT_F32, CT_CPU), ct_zeros(1, shape, CT_F32, CT_CPU)};
    CHECK(p[0] && p[1]);
    ct_adam_options o = ct_adam_defaults();
    ct_optimizer *opt = ct_adam(2, p, &o);
    CHECK_NOT_NULL(opt);
    CHECK(set_grad(p[0], ones, CT_F32));
    p[1]->grad = ref_tensor(ones, 1, other, CT_F32, CT_CPU);
    CHECK(ct_optimizer_step(opt) == CT_ERR_SHAPE);
    CHECK_ERROR(CT_ERR_SHAPE, "the gradient of parameter 1 has shape (5), the parameter (4)");
    double zeros[4] = {0};
    CHECK_TENSOR(p[0], zeros);
    CHECK(ct_optimizer_state_count(opt) == 0);
    CHECK(set_grad(p[1], ones, CT_I32));
    CHECK(ct_optimizer_step(opt) == CT_ERR_DTYPE);
    CHECK_ERROR(CT_ERR_DTYPE, "the gradient of parameter 1 is int32");
    CHECK_TENSOR(p[0], zeros);
    CHECK(ct_optimizer_step(NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_optimizer_step: opt is NULL");
    CHECK(ct_optimizer_zero_grad(NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "opt is NULL");
    ct_optimizer_free(NULL);
    ct_optimizer_free(opt);
    ct_release(p[0]), ct_release(p[1]);
}

TEST(test_optim_lr_get_set) {
    ct_tensor *p = ct_zeros(0, NULL, CT_F64, CT_CPU);
    ct_sgd_options o = {.lr = 0.25};
    ct_optimizer *opt = ct_sgd(1, &p, &o);
    CHECK_NOT_NULL(opt);
    CHECK(ct_optimizer_get_lr(opt) == 0.25);
    CHECK_OK(ct_optimizer_set_lr(opt, 0.5));
    CHECK(ct_optimizer_get_lr(opt) == 0.5);
    CHECK(ct_optimizer_set_lr(opt, -1.0) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_optimizer_set_lr: invalid learning rate -1");
    CHECK(ct_optimizer_set_lr(opt, INFINITY) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "must be finite");
    CHECK(ct_optimizer_get_lr(opt) == 0.5);
    CHECK(isnan(ct_optimizer_get_lr(NULL)));
    /* The new lr is the one the step uses: p = 0 - 0.5 * 2. */
    double two = 2.0, expected = -1.0;
    CHECK(set_grad(p, &two, CT_F64));
    CHECK_OK(ct_optimizer_step(opt));
    CHECK_TENSOR(p, &expected);
    ct_optimizer_free(opt);
    ct_release(p);
}

/* ---- gradient clipping ---- */

#define CLIP_N 3

/* Gradients of three parameters (f32 (2, 3) non-contiguous, f64 (40000), f32 (5)) and a
 * fourth parameter without one. */
static const int64_t clip_shapes[CLIP_N][2] = {{2, 3}, {40000, 1}, {5, 1}};
static const int clip_ndim[CLIP_N] = {2, 1, 1};
static const ct_dtype clip_dtypes[CLIP_N] = {CT_F32, CT_F64, CT_F32};

static void clip_case(ct_device device, double norm_type, double max_norm, bool with_nan) {
    double *g[CLIP_N];
    ct_tensor *params[CLIP_N + 1];
    for (int k = 0; k < CLIP_N; k++) {
        int64_t n = ref_numel(clip_ndim[k], clip_shapes[k]);
        g[k] = alloc_values(n);
        random_values(g[k], n, 200u + (uint64_t)k, -1.0, 1.0, clip_dtypes[k]);
        if (with_nan && k == 2) g[k][3] = NAN;
        params[k] = ct_zeros(clip_ndim[k], clip_shapes[k], clip_dtypes[k], device);
        CHECK_NOT_NULL(params[k]);
        params[k]->grad =
            k == 0 ? ref_tensor_strided(g[k], 2, clip_shapes[k], CT_F32, device)
                   : ref_tensor(g[k], clip_ndim[k], clip_shapes[k], clip_dtypes[k], device);
        CHECK_NOT_NULL(params[k]->grad);
    }
    params[CLIP_N] = ct_zeros(1, clip_shapes[2], CT_F32, device);
    double acc = 0.0;
    for (int k = 0; k < CLIP_N; k++)
        for (int64_t i = 0; i < ref_numel(clip_ndim[k], clip_shapes[k]); i++)
            acc = isinf(norm_type) ? fmax(acc, fabs(g[k][i])) : acc + pow(fabs(g[k][i]), norm_type);
    double expected = isinf(norm_type) ? acc : pow(acc, 1.0 / norm_type);
    if (with_nan) expected = NAN;
    double total = -1.0;
    CHECK_OK(ct_clip_grad_norm(CLIP_N + 1, params, max_norm, norm_type, &total));
    CHECK_NEAR(total, expected, 1e-12 * expected);
    double coef = fmin(max_norm / (expected + 1e-6), 1.0);
    if (with_nan) coef = NAN;
    for (int k = 0; k < CLIP_N; k++) {
        for (int64_t i = 0; i < ref_numel(clip_ndim[k], clip_shapes[k]); i++) g[k][i] *= coef;
        CHECK_TENSOR(params[k]->grad, g[k]);
        free(g[k]);
        ct_release(params[k]);
    }
    CHECK(params[CLIP_N]->grad == NULL);
    ct_release(params[CLIP_N]);
}

DEVICE_TEST(test_optim_clip_grad_norm) {
    const double norm_types[] = {2.0, INFINITY, 1.0, 3.0};
    for (int i = 0; i < 4; i++) {
        clip_case(device, norm_types[i], 0.5, false); /* clipped */
        clip_case(device, norm_types[i], 1e9, false); /* under the limit: unchanged */
        if (ct_test_failed()) return;
    }
    clip_case(device, 2.0, 1.0, true);
    if (ct_test_failed()) return;
    clip_case(device, INFINITY, 1.0, true);
}

TEST(test_optim_clip_grad_norm_edges_and_errors) {
    double total = -1.0;
    CHECK_OK(ct_clip_grad_norm(0, NULL, 1.0, 2.0, &total));
    CHECK(total == 0.0);
    int64_t shape[1] = {3};
    ct_tensor *p = ct_zeros(1, shape, CT_F32, CT_CPU);
    CHECK_OK(ct_clip_grad_norm(1, &p, 1.0, 2.0, NULL)); /* no gradient, no norm to report */
    CHECK(ct_clip_grad_norm(1, &p, 1.0, 0.0, &total) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_clip_grad_norm: norm_type is 0");
    CHECK(ct_clip_grad_norm(1, &p, 1.0, NAN, &total) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "norm_type is nan");
    CHECK(ct_clip_grad_norm(1, &p, -1.0, 2.0, &total) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "max_norm is -1");
    CHECK(ct_clip_grad_norm(-1, &p, 1.0, 2.0, &total) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "n is negative");
    ct_tensor *list[2] = {p, NULL};
    CHECK(ct_clip_grad_norm(2, list, 1.0, 2.0, &total) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "parameter 1 is NULL");
    double ones[3] = {1, 1, 1};
    CHECK(set_grad(p, ones, CT_I32));
    CHECK(ct_clip_grad_norm(1, &p, 1.0, 2.0, &total) == CT_ERR_DTYPE);
    CHECK_ERROR(CT_ERR_DTYPE, "the gradient of parameter 0 is int32");
    ct_release(p);
}

/* Every host allocation of a step failing in turn: the step reports CT_ERR_OUT_OF_MEMORY,
 * changes nothing and leaks nothing; the step after succeeds. */
TEST(test_optim_step_allocation_failures) {
    bool succeeded = false;
    for (long fail = 1; fail < 40 && !succeeded; fail++) {
        ref_param r[2];
        for (int k = 0; k < 2; k++) {
            CHECK(ref_param_init(&r[k], 0, CT_F32, CT_CPU, 400u + (uint64_t)k));
            random_values(r[k].g, r[k].n, 410u + (uint64_t)k, -1.0, 1.0, CT_F32);
            CHECK(set_grad(r[k].t, r[k].g, CT_F64)); /* converted: temporaries to release */
        }
        ct_tensor *params[2] = {r[0].t, r[1].t};
        ct_adam_options o = ct_adam_defaults();
        o.amsgrad = true;
        ct_optimizer *opt = ct_adam(2, params, &o);
        CHECK_NOT_NULL(opt);
        ct__malloc_fail_after(fail, 0);
        ct_status status = ct_optimizer_step(opt);
        ct__malloc_fail_after(0, 0);
        if (status == CT_OK) {
            succeeded = true;
        } else {
            CHECK_ERROR(CT_ERR_OUT_OF_MEMORY, "out of host memory");
            CHECK(ct_optimizer_state_count(opt) == 0);
            for (int k = 0; k < 2; k++) CHECK_TENSOR(r[k].t, r[k].p);
            CHECK_OK(ct_optimizer_step(opt));
        }
        for (int k = 0; k < 2; k++) ref_adam(&o, false, &r[k]);
        for (int k = 0; k < 2; k++) CHECK_TENSOR(r[k].t, r[k].p);
        ct_optimizer_free(opt);
        for (int k = 0; k < 2; k++) ref_param_free(&r[k]);
    }
    CHECK(succeeded);
}

/* A training loop with the autograd engine: loss = sum((w * x - y)^2), whose gradient
 * 2 x (w x - y) the reference computes by hand, zero_grad, backward and an AdamW step. */
DEVICE_TEST(test_optim_trains_with_backward) {
    enum { N = 6 };
    int64_t shape[1] = {N};
    double x[N], y[N];
    ref_random(x, N, 500, -1.0, 1.0);
    ref_random(y, N, 501, -1.0, 1.0);
    ref_param r;
    CHECK(ref_param_init(&r, 0, CT_F64, device, 502)); /* shape (7): use the first N */
    ct_release(r.t);
    r.n = N;
    r.t = ref_tensor(r.p, 1, shape, CT_F64, device);
    ct_tensor *xt = ref_tensor(x, 1, shape, CT_F64, device);
    ct_tensor *yt = ref_tensor(y, 1, shape, CT_F64, device);
    CHECK(r.t && xt && yt);
    CHECK_OK(ct_set_requires_grad(r.t, true));
    ct_adam_options o = ct_adamw_defaults();
    o.lr = 0.05;
    ct_optimizer *opt = ct_adamw(1, &r.t, &o);
    CHECK_NOT_NULL(opt);
    for (int step = 0; step < 3; step++) {
        CHECK_OK(ct_scope_begin());
        CHECK_OK(ct_optimizer_zero_grad(opt));
        CHECK(r.t->grad == NULL);
        ct_tensor *d = ct_sub(ct_mul(r.t, xt), yt);
        ct_tensor *loss = ct_sum(ct_mul(d, d), 0, NULL, false);
        CHECK_NOT_NULL(loss);
        CHECK_OK(ct_backward(loss));
        CHECK_OK(ct_optimizer_step(opt));
        CHECK_OK(ct_scope_end());
        for (int i = 0; i < N; i++) r.g[i] = 2.0 * x[i] * (r.p[i] * x[i] - y[i]);
        ref_adam(&o, true, &r);
        CHECK_TENSOR(r.t, r.p);
    }
    ct_optimizer_free(opt);
    ct_release(xt), ct_release(yt);
    ref_param_free(&r);
}

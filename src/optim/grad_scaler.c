/* The loss scaler (torch.amp.GradScaler) for f16 training: the loss is multiplied by a
 * scale before backward so that small gradients survive f16; before the optimiser steps,
 * the gradients are divided by it and checked for inf/NaN — one fused kernel per device over
 * all its gradients, one 4-byte read-back per device — and a step with a non-finite gradient
 * is skipped and the scale backed off; after growth_interval clean steps it grows.
 * PyTorch's algorithm and defaults, with two additions: a floor under the scale (so a
 * model that makes NaNs on its own cannot drive it to 0), and the name of the first
 * parameter whose gradient was not finite, in a warning through the log hook on each
 * skipped step. The scale lives on the host: the per-step read-back tells the host all it
 * needs, so the update costs no further wait. */
#include <math.h>
#include <string.h>

#include "backend/dispatch_impl.h"
#include "core/device_impl.h"
#include "ctensor/autocast.h"
#include "ctensor/autograd.h"
#include "optim/optim_impl.h"

#define OP "ct_grad_scaler"

struct ct_grad_scaler {
    ct_grad_scaler_params p;
    int n;
    ct_tensor **params; /* unscoped references */
    char **names;       /* n copies, or NULL */
    double scale;
    int64_t growth_tracker, skipped;
    bool unscaled;            /* unscale ran this step */
    int first_bad;            /* this step's first non-finite gradient, or -1 */
    int last_bad;             /* the last step's, for ct_grad_scaler_last_bad_param */
    ct__list_tensor *entries; /* n entries of scratch */
    int *index;               /* n: the parameter of each entry */
};

ct_grad_scaler_params ct_grad_scaler_params_default(void) {
    return (ct_grad_scaler_params){.init_scale = 65536.0,
                                   .growth_factor = 2.0,
                                   .backoff_factor = 0.5,
                                   .growth_interval = 2000,
                                   .min_scale = 0.0,
                                   .enabled = true};
}

static ct_status check_params(const ct_grad_scaler_params *p) {
    if (!(p->init_scale > 0.0) || !isfinite(p->init_scale))
        return ct__error(CT_ERR_INVALID_ARG, OP ": init_scale is %g; it must be finite and > 0",
                         p->init_scale);
    if (!(p->growth_factor > 1.0) || !isfinite(p->growth_factor))
        return ct__error(CT_ERR_INVALID_ARG, OP ": growth_factor is %g; it must be > 1",
                         p->growth_factor);
    if (!(p->backoff_factor > 0.0 && p->backoff_factor < 1.0))
        return ct__error(CT_ERR_INVALID_ARG, OP ": backoff_factor is %g; it must be in (0, 1)",
                         p->backoff_factor);
    if (p->growth_interval < 1)
        return ct__error(CT_ERR_INVALID_ARG, OP ": growth_interval is %lld; it must be >= 1",
                         (long long)p->growth_interval);
    if (!(p->min_scale >= 0.0 && p->min_scale <= p->init_scale))
        return ct__error(CT_ERR_INVALID_ARG,
                         OP ": min_scale is %g; it must be >= 0 and at most init_scale (%g)",
                         p->min_scale, p->init_scale);
    return CT_OK;
}

static char *copy_string(const char *s) {
    size_t len = strlen(s) + 1;
    char *c = ct__malloc(len);
    if (c) memcpy(c, s, len);
    return c;
}

ct_grad_scaler *ct_grad_scaler_new(int n, ct_tensor *const *params, const char *const *names,
                                   const ct_grad_scaler_params *params_in) {
    ct_grad_scaler_params p = params_in ? *params_in : ct_grad_scaler_params_default();
    if (n < 0 || (n > 0 && !params))
        return ct__fail(CT_ERR_INVALID_ARG, OP ": %s; pass n >= 0 parameters",
                        n < 0 ? "n is negative" : "params is NULL");
    for (int i = 0; i < n; i++)
        if (!params[i]) return ct__fail(CT_ERR_INVALID_ARG, OP ": parameter %d is NULL", i);
    if (check_params(&p) != CT_OK) return NULL;
    ct_grad_scaler *s = ct__calloc(1, sizeof *s);
    size_t count = n ? (size_t)n : 1;
    if (s) {
        s->params = ct__calloc(count, sizeof *s->params);
        s->entries = ct__calloc(count, sizeof *s->entries);
        s->index = ct__calloc(count, sizeof *s->index);
        s->names = names ? ct__calloc(count, sizeof *s->names) : NULL;
    }
    bool ok = s && s->params && s->entries && s->index && (!names || s->names);
    for (int i = 0; ok && i < n; i++) {
        s->params[i] = ct_retain(params[i]);
        s->n = i + 1;
        if (names && !(s->names[i] = copy_string(names[i] ? names[i] : "?"))) ok = false;
    }
    if (!ok) {
        ct_grad_scaler_free(s);
        return ct__fail(CT_ERR_OUT_OF_MEMORY, OP ": out of host memory for %d parameters", n);
    }
    s->p = p;
    s->scale = p.init_scale;
    s->first_bad = s->last_bad = -1;
    return s;
}

void ct_grad_scaler_free(ct_grad_scaler *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        ct__tensor_drop(s->params[i]);
        if (s->names) ct__free_mem(s->names[i]);
    }
    ct__free_mem(s->params);
    ct__free_mem(s->names);
    ct__free_mem(s->entries);
    ct__free_mem(s->index);
    ct__free_mem(s);
}

ct_tensor *ct_grad_scaler_scale(ct_grad_scaler *s, const ct_tensor *loss) {
    if (!s) return ct__fail(CT_ERR_INVALID_ARG, OP "_scale: the scaler is NULL");
    if (!loss) return ct__null_arg(OP "_scale", 2);
    if (!s->p.enabled) return ct__new_ref(loss);
    return ct_mul_scalar(loss, s->scale);
}

/* One device's gradients, starting at parameter `first`: one kernel and one read-back. */
static ct_status unscale_device(ct_grad_scaler *s, int first, bool *visited) {
    ct_device device = s->params[first]->grad->storage->device;
    ct__list_args args = {.count = 0, .tensors = s->entries, .total = 0};
    for (int i = first; i < s->n; i++) {
        const ct_tensor *g = s->params[i]->grad;
        if (!g || visited[i] || !ct__same_device(g->storage->device, device)) continue;
        visited[i] = true;
        s->index[args.count] = i;
        /* A complex gradient as its real and imaginary parts. */
        int64_t parts = ct__is_complex(g->dtype) ? 2 : 1;
        s->entries[args.count++] =
            (ct__list_tensor){ct__data(g), parts * g->numel, ct__complex_part(g->dtype)};
        args.total += parts * g->numel;
    }
    int physical;
    const ct__kernel_table *k =
        ct__kernel_find(device, CT_SLOT_list_unscale, OP "_unscale", &physical);
    if (!k) return ct_last_status();
    ct_status st = ct__kernel_readback(device, CT_SLOT_list_unscale, OP "_unscale");
    int32_t bad = -1;
    if (st == CT_OK) st = k->list_unscale(physical, &args, 1.0 / s->scale, &bad);
    if (st == CT_OK && bad >= 0 && (s->first_bad < 0 || s->index[bad] < s->first_bad))
        s->first_bad = s->index[bad];
    return st;
}

static ct_status check_grads(const ct_grad_scaler *s) {
    for (int i = 0; i < s->n; i++) {
        const ct_tensor *g = s->params[i]->grad;
        if (!g) continue;
        if (!ct__is_float(g->dtype) && !ct__is_complex(g->dtype))
            return ct__error(CT_ERR_DTYPE, OP "_unscale: the gradient of parameter %d is %s", i,
                             ct_dtype_name(g->dtype));
        if (!ct__is_dense(g)) /* contiguous or channels-last: a flat run of elements */
            return ct__error(CT_ERR_INVALID_ARG,
                             OP "_unscale: the gradient of parameter %d is a view with gaps; "
                                "the scaler unscales gradients in place",
                             i);
    }
    return CT_OK;
}

ct_status ct_grad_scaler_unscale(ct_grad_scaler *s) {
    if (!s) return ct__error(CT_ERR_INVALID_ARG, OP "_unscale: the scaler is NULL");
    if (!s->p.enabled || s->unscaled) return CT_OK;
    ct_status st = check_grads(s);
    if (st != CT_OK) return st;
    bool *visited = ct__calloc(s->n ? (size_t)s->n : 1, sizeof *visited);
    if (!visited) return ct__error(CT_ERR_OUT_OF_MEMORY, OP "_unscale: out of host memory");
    s->first_bad = -1;
    for (int i = 0; i < s->n && st == CT_OK; i++)
        if (s->params[i]->grad && !visited[i]) st = unscale_device(s, i, visited);
    ct__free_mem(visited);
    if (st == CT_OK) s->unscaled = true;
    return st;
}

static double backed_off(const ct_grad_scaler *s) {
    double next = s->scale * s->p.backoff_factor;
    return next < s->p.min_scale ? s->p.min_scale : next;
}

ct_status ct_grad_scaler_step(ct_grad_scaler *s, ct_optimizer *opt, bool *skipped) {
    if (skipped) *skipped = false;
    if (!s || !opt)
        return ct__error(CT_ERR_INVALID_ARG, OP "_step: the %s is NULL",
                         s ? "optimizer" : "scaler");
    if (!s->p.enabled) return ct_optimizer_step(opt);
    ct_status st = ct_grad_scaler_unscale(s);
    if (st != CT_OK) return st;
    if (s->first_bad < 0) return ct_optimizer_step(opt);
    if (skipped) *skipped = true;
    ct__log(CT_LOG_WARNING,
            "grad scaler: step skipped: the gradient of parameter %d (%s) holds inf or NaN at "
            "loss scale %g; the scale backs off to %g",
            s->first_bad, s->names ? s->names[s->first_bad] : "unnamed", s->scale, backed_off(s));
    return CT_OK;
}

ct_status ct_grad_scaler_update(ct_grad_scaler *s) {
    if (!s) return ct__error(CT_ERR_INVALID_ARG, OP "_update: the scaler is NULL");
    if (!s->p.enabled) return CT_OK;
    if (!s->unscaled)
        return ct__error(CT_ERR_STATE,
                         OP "_update: no gradients were checked this step; call "
                            "ct_grad_scaler_step (or _unscale) after backward, then update");
    if (s->first_bad >= 0) {
        s->scale = backed_off(s);
        s->growth_tracker = 0;
        s->skipped++;
    } else if (++s->growth_tracker == s->p.growth_interval) {
        double grown = s->scale * s->p.growth_factor;
        if (isfinite(grown)) s->scale = grown;
        s->growth_tracker = 0;
    }
    s->last_bad = s->first_bad;
    s->first_bad = -1;
    s->unscaled = false;
    return CT_OK;
}

double ct_grad_scaler_get_scale(const ct_grad_scaler *s) {
    return s ? (s->p.enabled ? s->scale : 1.0) : 0.0;
}

int64_t ct_grad_scaler_skipped_steps(const ct_grad_scaler *s) { return s ? s->skipped : 0; }

int ct_grad_scaler_last_bad_param(const ct_grad_scaler *s) { return s ? s->last_bad : -1; }

ct_grad_scaler_state ct_grad_scaler_get_state(const ct_grad_scaler *s) {
    if (!s) return (ct_grad_scaler_state){0.0, 0, 0};
    return (ct_grad_scaler_state){s->scale, s->growth_tracker, s->skipped};
}

ct_status ct_grad_scaler_set_state(ct_grad_scaler *s, const ct_grad_scaler_state *state) {
    if (!s || !state)
        return ct__error(CT_ERR_INVALID_ARG, OP "_set_state: the %s is NULL",
                         s ? "state" : "scaler");
    if (!(state->scale > 0.0) || !isfinite(state->scale) || state->growth_tracker < 0 ||
        state->skipped_steps < 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         OP "_set_state: scale %g, growth tracker %lld, skipped %lld; the scale "
                            "must be finite and > 0 and the counts >= 0",
                         state->scale, (long long)state->growth_tracker,
                         (long long)state->skipped_steps);
    s->scale = state->scale;
    s->growth_tracker = state->growth_tracker;
    s->skipped = state->skipped_steps;
    return CT_OK;
}

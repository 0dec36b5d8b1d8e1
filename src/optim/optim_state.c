/* An optimiser's state as named entries, for checkpoints: PyTorch's state_dict()["state"]
 * flattened to "state.<parameter index>.<key>", each parameter's keys in the order PyTorch
 * makes them (Adam: step, exp_avg, exp_avg_sq, max_exp_avg_sq; SGD: momentum_buffer). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctensor/autograd.h"
#include "optim/optim_impl.h"

typedef struct state_key {
    const char *key;
    int slot; /* the buffer, or -1 for the step count */
} state_key;

static const state_key adam_keys[] = {
    {"step", -1}, {"exp_avg", 0}, {"exp_avg_sq", 1}, {"max_exp_avg_sq", 2}};
static const state_key sgd_keys[] = {{"momentum_buffer", 0}};

/* The keys this optimiser's parameters have once stepped. */
static int keys_of(const ct_optimizer *opt, const state_key **keys) {
    if (opt->hyper.kind == CT_OPTIM_SGD) {
        *keys = sgd_keys;
        return opt->hyper.momentum != 0.0 ? 1 : 0;
    }
    *keys = adam_keys;
    return opt->hyper.amsgrad ? 4 : 3;
}

/* The keys of this optimiser, comma-separated, for messages. */
static const char *key_list(const ct_optimizer *opt, char *buf, size_t size) {
    const state_key *keys;
    int nkeys = keys_of(opt, &keys);
    size_t used = (size_t)snprintf(buf, size, "%s", nkeys ? "" : "(none: it keeps no state)");
    for (int k = 0; k < nkeys && used < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", k ? ", " : "", keys[k].key);
    return buf;
}

static bool has_entry(const ct__param_state *s, const state_key *key) {
    return key->slot < 0 ? s->has_step : s->buf[key->slot] != NULL;
}

int ct_optimizer_state_count(const ct_optimizer *opt) {
    if (!opt) return 0;
    const state_key *keys;
    int nkeys = keys_of(opt, &keys), count = 0;
    for (int i = 0; i < opt->n; i++)
        for (int k = 0; k < nkeys; k++) count += has_entry(&opt->state[i], &keys[k]);
    return count;
}

/* The name returned last, per thread. */
static _Thread_local char entry_name[64];

ct_status ct_optimizer_state_at(const ct_optimizer *opt, int i, const char **name,
                                ct_tensor **tensor) {
    if (!opt || !name || !tensor)
        return ct__error(CT_ERR_INVALID_ARG, "ct_optimizer_state_at: %s is NULL",
                         !opt    ? "opt"
                         : !name ? "name"
                                 : "tensor");
    const state_key *keys;
    int nkeys = keys_of(opt, &keys), seen = 0;
    for (int p = 0; p < opt->n; p++) {
        const ct__param_state *s = &opt->state[p];
        for (int k = 0; k < nkeys; k++) {
            if (!has_entry(s, &keys[k]) || seen++ != i) continue;
            ct_tensor *t = keys[k].slot < 0 ? ct_scalar(s->step, CT_F32, CT_CPU)
                                            : ct__new_ref(s->buf[keys[k].slot]);
            if (!t) return ct_last_status();
            snprintf(entry_name, sizeof entry_name, "state.%d.%s", p, keys[k].key);
            *name = entry_name;
            *tensor = t;
            return CT_OK;
        }
    }
    return ct__error(CT_ERR_INVALID_ARG,
                     "ct_optimizer_state_at: index %d is out of range; the optimiser has %d "
                     "state entries (ct_optimizer_state_count)",
                     i, seen);
}

/* Parse "state.<index>.<key>" against this optimiser: the parameter and key, or false. */
static bool parse_name(const ct_optimizer *opt, const char *name, int *param,
                       const state_key **key) {
    if (strncmp(name, "state.", 6) != 0 || name[6] < '0' || name[6] > '9') return false;
    char *end;
    errno = 0;
    long index = strtol(name + 6, &end, 10);
    if (errno || *end != '.' || index < 0 || index >= opt->n) return false;
    const state_key *keys;
    int nkeys = keys_of(opt, &keys);
    for (int k = 0; k < nkeys; k++) {
        if (strcmp(end + 1, keys[k].key) == 0) {
            *param = (int)index;
            *key = &keys[k];
            return true;
        }
    }
    return false;
}

static ct_status load_step(ct__param_state *s, const char *name, const ct_tensor *value) {
    if (value->ndim != 0 || value->dtype != CT_F32)
        return ct__error(CT_ERR_FORMAT,
                         "ct_optimizer_load_state: \"%s\" must be a 0-d f32 "
                         "tensor (as PyTorch saves it), got a %d-d %s tensor",
                         name, value->ndim, ct_dtype_name(value->dtype));
    double step;
    if (ct_item(value, &step) != CT_OK) return ct_last_status();
    if (!(step >= 0.0) || isinf(step) || step != floor(step))
        return ct__error(CT_ERR_FORMAT,
                         "ct_optimizer_load_state: \"%s\" is %g; a step count "
                         "is a whole number >= 0",
                         name, step);
    s->step = step;
    s->has_step = true;
    return CT_OK;
}

static ct_status load_buffer(ct__param_state *s, int slot, const ct_tensor *param, const char *name,
                             const ct_tensor *value) {
    if (!ct__same_shape(value, param) || value->dtype != param->dtype)
        return ct__error(CT_ERR_FORMAT,
                         "ct_optimizer_load_state: \"%s\" must have its "
                         "parameter's shape and dtype (%d-d %s, %lld elements), "
                         "got a %d-d %s tensor of %lld elements",
                         name, param->ndim, ct_dtype_name(param->dtype), (long long)param->numel,
                         value->ndim, ct_dtype_name(value->dtype), (long long)value->numel);
    ct_tensor *t = ct__tensor_new(param->storage->device, param->dtype, param->ndim, param->shape);
    if (!t) return ct_last_status();
    ct__scope_forget(t);
    ct_no_grad_push();
    ct_status status = ct_copy(t, value);
    ct_no_grad_pop();
    if (status != CT_OK) {
        ct__tensor_drop(t);
        return status;
    }
    if (s->buf[slot]) ct__tensor_drop(s->buf[slot]);
    s->buf[slot] = t;
    return CT_OK;
}

ct_status ct_optimizer_load_state(ct_optimizer *opt, const char *name, const ct_tensor *value) {
    if (!opt || !name)
        return ct__error(CT_ERR_INVALID_ARG, "ct_optimizer_load_state: %s is NULL",
                         !opt ? "opt" : "name");
    if (!value) {
        if (ct_last_status() == CT_OK)
            ct__error(CT_ERR_INVALID_ARG, "ct_optimizer_load_state: argument 3 is NULL");
        return ct_last_status();
    }
    int param;
    const state_key *key;
    if (!parse_name(opt, name, &param, &key)) {
        char keys[96];
        return ct__error(CT_ERR_FORMAT,
                         "ct_optimizer_load_state: \"%s\" is no state entry of "
                         "this %s optimiser over %d parameters; its names are "
                         "\"state.<0..%d>.<key>\" with key one of: %s",
                         name, opt->name + 3, opt->n, opt->n - 1, key_list(opt, keys, sizeof keys));
    }
    ct__param_state *s = &opt->state[param];
    if (key->slot < 0) return load_step(s, name, value);
    return load_buffer(s, key->slot, opt->params[param], name, value);
}

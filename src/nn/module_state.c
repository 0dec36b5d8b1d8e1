/* A module's state as a state dict, and back; checkpoints in safetensors. Loading checks
 * every name, shape and dtype before it changes anything. */
#include <stdio.h>

#include "autograd/tape_impl.h"
#include "nn/module_impl.h"
#include "ops/op_impl.h"

ct_status ct_module_state_dict(const ct_module *m, ct_state_dict *sd, const char *prefix) {
    if (!m || !sd) {
        ct__null_arg("ct_module_state_dict", !m ? 1 : 2);
        return ct_last_status();
    }
    for (int i = 0;; i++) {
        ct_tensor *t;
        const char *name = ct_module_state_at(m, i, &t, NULL);
        if (!name) return ct_last_status() == CT_OK || i > 0 ? CT_OK : ct_last_status();
        char full[512];
        int n = snprintf(full, sizeof full, "%s%s", prefix ? prefix : "", name);
        if (n < 0 || (size_t)n >= sizeof full)
            return ct__error(CT_ERR_INVALID_ARG, "ct_module_state_dict: the name %s%s is too long",
                             prefix, name);
        ct_status status = ct_state_dict_set(sd, full, t);
        if (status != CT_OK) return status;
    }
}

/* The value of entry `name` in sd, checked against the module's tensor t. */
static const ct_tensor *matching(const ct_state_dict *sd, const char *name, const ct_tensor *t,
                                 const char *op) {
    ct_tensor *v = ct_state_dict_get(sd, name);
    if (!v) {
        ct__error(CT_ERR_FORMAT, "%s: the state has no entry \"%s\" that the module needs", op,
                  name);
        return NULL;
    }
    if (!ct__same_shape(v, t) || v->dtype != t->dtype) {
        ct__error(CT_ERR_FORMAT,
                  "%s: entry \"%s\" has dtype %s and %d axes of sizes (%lld, ...), but the "
                  "module's has dtype %s and %d axes of sizes (%lld, ...); the state belongs to "
                  "another model",
                  op, name, ct_dtype_name(v->dtype), v->ndim,
                  (long long)(v->ndim ? v->shape[0] : 0), ct_dtype_name(t->dtype), t->ndim,
                  (long long)(t->ndim ? t->shape[0] : 0));
        return NULL;
    }
    return v;
}

ct_status ct_module_load_state_dict(ct_module *m, const ct_state_dict *sd, const char *prefix) {
    const char *op = "ct_module_load_state_dict";
    if (!m || !sd) {
        ct__null_arg(op, !m ? 1 : 2);
        return ct_last_status();
    }
    /* Check everything first, so that a bad state changes nothing. */
    char full[512];
    ct_tensor *t;
    const char *name;
    for (int i = 0; (name = ct_module_state_at(m, i, &t, NULL)); i++) {
        snprintf(full, sizeof full, "%s%s", prefix ? prefix : "", name);
        if (!matching(sd, full, t, op)) return ct_last_status();
    }
    ct_status status = CT_OK;
    ct_no_grad_push();
    for (int i = 0; status == CT_OK && (name = ct_module_state_at(m, i, &t, NULL)); i++) {
        snprintf(full, sizeof full, "%s%s", prefix ? prefix : "", name);
        status = ct_copy(t, ct_state_dict_get(sd, full));
    }
    ct_no_grad_pop();
    return status;
}

ct_status ct_module_save(const ct_module *m, const char *path) {
    ct_state_dict *sd = ct_state_dict_new();
    if (!sd) return ct_last_status();
    ct_status status = ct_module_state_dict(m, sd, NULL);
    if (status == CT_OK) status = ct_safetensors_save(path, sd);
    ct_state_dict_free(sd);
    return status;
}

ct_status ct_module_load(ct_module *m, const char *path) {
    if (!m) {
        ct__null_arg("ct_module_load", 1);
        return ct_last_status();
    }
    ct_state_dict *sd = ct_safetensors_load(path, CT_CPU);
    if (!sd) return ct_last_status();
    ct_status status = ct_module_load_state_dict(m, sd, NULL);
    ct_state_dict_free(sd);
    return status;
}

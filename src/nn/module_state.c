/* A module's state as a state dict, and back; checkpoints in safetensors. Loading checks
 * every name, shape and dtype before it changes anything. */
#include <stdio.h>

#include "autograd/tape_impl.h"
#include "nn/module_impl.h"
#include "ops/op_impl.h"

/* prefix + the name of m's state entry i into full (of size CT_STATE_NAME_MAX); false with
 * the error set when it does not fit. */
#define CT_STATE_NAME_MAX 512
static bool full_name(const ct_module *m, int i, const char *prefix, char *full, ct_tensor **t,
                      const char *op) {
    const char *name = ct_module_state_at(m, i, t, NULL);
    int n = snprintf(full, CT_STATE_NAME_MAX, "%s%s", prefix, name);
    if (n >= 0 && n < CT_STATE_NAME_MAX) return true;
    ct__error(CT_ERR_INVALID_ARG, "%s: the name %s%s is longer than %d bytes", op, prefix, name,
              CT_STATE_NAME_MAX - 1);
    return false;
}

ct_status ct_module_state_dict(const ct_module *m, ct_state_dict *sd, const char *prefix) {
    const char *op = "ct_module_state_dict";
    if (!m || !sd) {
        ct__null_arg(op, !m ? 1 : 2);
        return ct_last_status();
    }
    int entries = ct__module_state_size(m, op);
    if (entries < 0) return ct_last_status();
    for (int i = 0; i < entries; i++) {
        char full[CT_STATE_NAME_MAX];
        ct_tensor *t;
        if (!full_name(m, i, prefix ? prefix : "", full, &t, op)) return ct_last_status();
        ct_status status = ct_state_dict_set(sd, full, t);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

/* "(256, 784)": every size of t's shape; "()" for a scalar, "(3,)" for one axis. */
static const char *shape_text(const ct_tensor *t, char *buf, size_t size) {
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < t->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld",
                                 (long long)t->shape[d]);
    if (used < size) snprintf(buf + used, size - used, t->ndim == 1 ? ",)" : ")");
    return buf;
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
        char vs[CT_MAX_DIMS * 21 + 4], ts[CT_MAX_DIMS * 21 + 4];
        ct__error(CT_ERR_FORMAT,
                  "%s: entry \"%s\" has dtype %s and shape %s, but the module's has dtype %s and "
                  "shape %s; the state belongs to another model",
                  op, name, ct_dtype_name(v->dtype), shape_text(v, vs, sizeof vs),
                  ct_dtype_name(t->dtype), shape_text(t, ts, sizeof ts));
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
    int entries = ct__module_state_size(m, op);
    if (entries < 0) return ct_last_status();
    if (!prefix) prefix = "";
    /* Check everything first, so that a bad state changes nothing. */
    char full[CT_STATE_NAME_MAX];
    ct_tensor *t;
    for (int i = 0; i < entries; i++)
        if (!full_name(m, i, prefix, full, &t, op) || !matching(sd, full, t, op))
            return ct_last_status();
    ct_status status = CT_OK;
    ct_no_grad_push();
    for (int i = 0; status == CT_OK && i < entries; i++) {
        full_name(m, i, prefix, full, &t, op);
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

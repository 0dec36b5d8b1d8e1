/* What every module does: free, forward, move between devices, train and eval, list its
 * parameters and state with dotted names. */
#include <stdio.h>
#include <string.h>

#include "autograd/tape_impl.h"
#include "core/c_locale_impl.h"
#include "nn/module_impl.h"
#include "ops/op_impl.h"

ct_module *ct__module_new(const char *kind, ct__forward_fn forward) {
    ct_module *m = ct__calloc(1, sizeof *m);
    if (!m) return ct__fail(CT_ERR_OUT_OF_MEMORY, "out of host memory for a %s module", kind);
    m->kind = kind;
    m->forward = forward;
    m->training = true;
    return m;
}

ct_status ct__module_add(ct_module *m, const char *name, ct_tensor *t, bool buffer) {
    if (!t) return ct_last_status();
    ct__scope_forget(t); /* the module owns it, whatever scope is open */
    if (!buffer && ct_set_requires_grad(t, true) != CT_OK) {
        ct__tensor_drop(t);
        return ct_last_status();
    }
    m->tensors[m->ntensors++] = (ct__module_tensor){name, t, buffer};
    return CT_OK;
}

static void free_state(ct_module *m) {
    for (int i = 0; i < m->nstate; i++) ct__free_mem(m->state[i].name);
    ct__free_mem(m->state);
    m->state = NULL;
    m->nstate = 0;
}

void ct_module_free(ct_module *m) {
    if (!m) return;
    for (int i = 0; i < m->ntensors; i++) ct__tensor_drop(m->tensors[i].tensor);
    for (int i = 0; i < m->nchildren; i++) ct_module_free(m->children[i]);
    ct__free_mem(m->children);
    free_state(m);
    ct__free_mem(m);
}

ct_tensor *ct_module_forward(ct_module *m, const ct_tensor *x) {
    if (!m) return ct__null_arg("ct_module_forward", 1);
    if (!x) return ct__null_arg("ct_module_forward", 2);
    return m->forward(m, x);
}

/* ---- the flattened state ---- */

static bool add_entry(ct_module *root, const char *prefix, ct__module_tensor *slot, int *capacity) {
    if (root->nstate == *capacity) {
        int grown = *capacity ? *capacity * 2 : 16;
        ct__state_entry *state = ct__realloc(root->state, sizeof *state * (size_t)grown);
        if (!state) return false;
        root->state = state;
        *capacity = grown;
    }
    size_t size = strlen(prefix) + strlen(slot->name) + 1;
    char *name = ct__malloc(size);
    if (!name) return false;
    snprintf(name, size, "%s%s", prefix, slot->name);
    root->state[root->nstate++] = (ct__state_entry){name, slot};
    return true;
}

static bool collect(ct_module *root, ct_module *m, const char *prefix, int *capacity) {
    for (int i = 0; i < m->ntensors; i++)
        if (!add_entry(root, prefix, &m->tensors[i], capacity)) return false;
    for (int c = 0; c < m->nchildren; c++) {
        char child_prefix[256];
        const char *label = m->children[c]->label;
        int n = label ? snprintf(child_prefix, sizeof child_prefix, "%s%s.", prefix, label)
                      : snprintf(child_prefix, sizeof child_prefix, "%s%d.", prefix, c);
        if (n < 0 || (size_t)n >= sizeof child_prefix) return false;
        if (!collect(root, m->children[c], child_prefix, capacity)) return false;
    }
    return true;
}

/* The flattened state of m (built once); false with the error set. */
static bool state_of(const ct_module *cm, const char *op) {
    ct_module *m = (ct_module *)cm; /* the cache is not part of the module's value */
    if (m->state) return true;
    int capacity = 0;
    if (collect(m, m, "", &capacity)) return true;
    free_state(m);
    ct__error(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory for the module's state names", op);
    return false;
}

int ct__module_state_size(const ct_module *m, const char *op) {
    return state_of(m, op) ? m->nstate : -1;
}

const char *ct_module_state_at(const ct_module *m, int i, ct_tensor **tensor, bool *buffer) {
    if (!m) return ct__null_arg("ct_module_state_at", 1);
    if (!state_of(m, "ct_module_state_at") || i < 0 || i >= m->nstate) return NULL;
    if (tensor) *tensor = m->state[i].slot->tensor;
    if (buffer) *buffer = m->state[i].slot->buffer;
    return m->state[i].name;
}

int ct_module_parameters(const ct_module *m, ct_tensor **out, int capacity) {
    if (!m) {
        ct__null_arg("ct_module_parameters", 1);
        return 0;
    }
    if (!state_of(m, "ct_module_parameters")) return 0;
    int count = 0;
    for (int i = 0; i < m->nstate; i++) {
        if (m->state[i].slot->buffer) continue;
        if (out && count < capacity) out[count] = m->state[i].slot->tensor;
        count++;
    }
    return count;
}

int64_t ct_module_parameter_count(const ct_module *m) {
    if (!m || !state_of(m, "ct_module_parameter_count")) return 0;
    int64_t total = 0;
    for (int i = 0; i < m->nstate; i++)
        if (!m->state[i].slot->buffer) total += m->state[i].slot->tensor->numel;
    return total;
}

ct_status ct_module_zero_grad(ct_module *m) {
    if (!m) {
        ct__null_arg("ct_module_zero_grad", 1);
        return ct_last_status();
    }
    if (!state_of(m, "ct_module_zero_grad")) return ct_last_status();
    for (int i = 0; i < m->nstate; i++) ct_zero_grad(m->state[i].slot->tensor);
    return CT_OK;
}

/* ---- devices and modes ---- */

ct_status ct_module_to(ct_module *m, ct_device device) {
    if (!m) {
        ct__null_arg("ct_module_to", 1);
        return ct_last_status();
    }
    if (!state_of(m, "ct_module_to")) return ct_last_status();
    /* Move everything first, then swap, so a failure leaves the module as it was. */
    ct_tensor **moved = ct__calloc((size_t)m->nstate + 1, sizeof *moved);
    if (!moved) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_module_to: out of host memory");
    ct_status status = CT_OK;
    ct_no_grad_push(); /* the moved tensors are new leaves, not results of a recorded ct_to */
    for (int i = 0; i < m->nstate && status == CT_OK; i++) {
        moved[i] = ct_to(m->state[i].slot->tensor, device);
        if (moved[i]) ct__scope_forget(moved[i]);
        status = moved[i] ? CT_OK : ct_last_status();
    }
    ct_no_grad_pop();
    for (int i = 0; i < m->nstate; i++) {
        if (!moved[i]) continue;
        ct__module_tensor *slot = m->state[i].slot;
        if (status != CT_OK) {
            ct__tensor_drop(moved[i]);
            continue;
        }
        /* In place, so that an optimiser holding the tensor follows the move. */
        if (ct__adopt_moved(slot->tensor, moved[i])) {
            ct_zero_grad(slot->tensor); /* a gradient on the old device is stale */
            continue;
        }
        moved[i]->requires_grad = slot->tensor->requires_grad;
        ct__tensor_drop(slot->tensor);
        slot->tensor = moved[i];
    }
    ct__free_mem(moved);
    return status;
}

ct_device ct_module_device(const ct_module *m) {
    if (!m || !state_of(m, "ct_module_device") || m->nstate == 0) return CT_CPU;
    return m->state[0].slot->tensor->storage->device;
}

ct_status ct_module_train(ct_module *m, bool training) {
    if (!m) {
        ct__null_arg("ct_module_train", 1);
        return ct_last_status();
    }
    m->training = training;
    for (int i = 0; i < m->nchildren; i++) ct_module_train(m->children[i], training);
    return CT_OK;
}

ct_status ct_module_eval(ct_module *m) { return ct_module_train(m, false); }

bool ct_module_is_training(const ct_module *m) { return m && m->training; }

/* ---- description ---- */

static size_t describe(const ct_module *m, int depth, char *buf, size_t size, size_t used) {
    char line[256];
    int n = snprintf(line, sizeof line, "%*s%s", 2 * depth, "", m->kind);
    if (m->nsizes && n >= 0 && (size_t)n < sizeof line) {
        n += snprintf(line + n, sizeof line - (size_t)n, "(");
        for (int i = 0; i < m->nsizes && (size_t)n < sizeof line; i++)
            n += snprintf(line + n, sizeof line - (size_t)n, "%s%lld", i ? ", " : "",
                          (long long)m->sizes[i]);
        if ((size_t)n < sizeof line) n += snprintf(line + n, sizeof line - (size_t)n, ")");
    }
    if (m->kind[0] == 'D' && (size_t)n < sizeof line) /* Dropout */
        n += ct__snprintf_c(line + n, sizeof line - (size_t)n, "(p=%g)", m->p);
    int written =
        snprintf(used < size ? buf + used : NULL, used < size ? size - used : 0, "%s\n", line);
    used += written > 0 ? (size_t)written : 0;
    for (int i = 0; i < m->nchildren; i++)
        used = describe(m->children[i], depth + 1, buf, size, used);
    return used;
}

size_t ct_module_describe(const ct_module *m, char *buf, size_t size) {
    if (!m) {
        ct__null_arg("ct_module_describe", 1);
        return 0;
    }
    if (size) buf[0] = '\0';
    return describe(m, 0, buf, size, 0);
}

/* `ctensor train`'s checkpoints: one safetensors file with the model's state under its
 * PyTorch names, the optimiser's under "optimizer.", and the epoch and seed (and with
 * --amp f16 the loss scaler's state) as metadata.
 * Loading is strict, so that a resumed run is the run it claims to continue: every tensor of
 * the model and (after epoch 1) every entry of the optimiser's state must be there, nothing
 * else may be, and every value must be finite; --resume-weights-only takes the weights alone
 * on purpose, with a warning. Each error is one line on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_impl.h"
#include "train_impl.h"

#define OPTIMIZER_PREFIX "optimizer."
#define MAX_KEYS 8
#define KEY_SIZE 32
#define LISTED 4 /* names listed in a message before "and N more" */

static ct_status add_optimizer(ct_state_dict *sd, const ct_optimizer *optimizer) {
    ct_status status = CT_OK;
    for (int i = 0; status == CT_OK && i < ct_optimizer_state_count(optimizer); i++) {
        const char *name;
        ct_tensor *t;
        status = ct_optimizer_state_at(optimizer, i, &name, &t);
        if (status != CT_OK) break;
        char full[256];
        snprintf(full, sizeof full, OPTIMIZER_PREFIX "%s", name);
        status = ct_state_dict_set(sd, full, t);
        ct_release(t);
    }
    return status;
}

bool train_checkpoint_folder_writable(const char *path) {
    const char *slash = strrchr(path, '/');
    char folder[4096];
    if (!slash)
        snprintf(folder, sizeof folder, ".");
    else
        snprintf(folder, sizeof folder, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    if (access(folder, W_OK) == 0) return true;
    ct_cli_fail("%s: its folder %s cannot take the checkpoint (%s)", path, folder, strerror(errno));
    return false;
}

ct_status train_save_checkpoint(const char *path, const ct_module *model,
                                const ct_optimizer *optimizer, const ct_grad_scaler *scaler,
                                int epoch, uint64_t seed) {
    return train_save_checkpoint_with(path, model, optimizer, scaler, epoch, seed, NULL);
}

ct_status train_save_checkpoint_with(const char *path, const ct_module *model,
                                     const ct_optimizer *optimizer, const ct_grad_scaler *scaler,
                                     int epoch, uint64_t seed, const char *const *metadata) {
    ct_state_dict *sd = ct_state_dict_new();
    if (!sd) return ct_last_status();
    char text[32];
    ct_status status = ct_module_state_dict(model, sd, NULL);
    for (int i = 0; status == CT_OK && metadata && metadata[i]; i += 2)
        status = ct_state_dict_set_metadata(sd, metadata[i], metadata[i + 1]);
    if (status == CT_OK) status = add_optimizer(sd, optimizer);
    snprintf(text, sizeof text, "%d", epoch);
    if (status == CT_OK) status = ct_state_dict_set_metadata(sd, "epoch", text);
    snprintf(text, sizeof text, "%llu", (unsigned long long)seed);
    if (status == CT_OK) status = ct_state_dict_set_metadata(sd, "seed", text);
    if (status == CT_OK) status = train_amp_save(sd, scaler);
    if (status == CT_OK) status = ct_safetensors_save(path, sd);
    ct_state_dict_free(sd);
    return status;
}

/* The state keys one parameter has once it has taken a step ("step", "exp_avg", ...): those
 * of an optimiser of the same kind after one step on a scalar. */
static int state_keys(const train_options *o, char keys[MAX_KEYS][KEY_SIZE]) {
    ct_scope_begin();
    ct_tensor *p = ct_zeros(0, NULL, CT_F32, CT_CPU);
    ct_optimizer *probe =
        p && ct_set_requires_grad(p, true) == CT_OK ? train_optimizer(o, 1, &p) : NULL;
    int n = 0;
    if (probe && ct_backward(ct_mul_scalar(p, 2.0)) == CT_OK && ct_optimizer_step(probe) == CT_OK)
        for (int i = 0; n < MAX_KEYS && i < ct_optimizer_state_count(probe); i++) {
            const char *name;
            ct_tensor *t;
            if (ct_optimizer_state_at(probe, i, &name, &t) != CT_OK) break;
            ct_release(t);
            snprintf(keys[n++], KEY_SIZE, "%s", name + strlen("state.0."));
        }
    ct_optimizer_free(probe);
    ct_scope_end();
    return n;
}

/* A list of names for a message: "a, b, c, d and 3 more". */
typedef struct name_list {
    char text[512];
    int count;
} name_list;

static void list_add(name_list *l, const char *name) {
    size_t len = strlen(l->text);
    if (l->count < LISTED)
        snprintf(l->text + len, sizeof l->text - len, "%s%s", l->count ? ", " : "", name);
    l->count++;
}

static const char *list_text(name_list *l) {
    size_t len = strlen(l->text);
    if (l->count > LISTED)
        snprintf(l->text + len, sizeof l->text - len, " and %d more", l->count - LISTED);
    return l->text;
}

static bool model_has(const ct_module *model, const char *name) {
    ct_tensor *t;
    bool buffer;
    for (int i = 0;; i++) {
        const char *own = ct_module_state_at(model, i, &t, &buffer);
        if (!own) return false;
        if (strcmp(own, name) == 0) return true;
    }
}

/* Whether every value of t is finite: t * 0 sums to 0 exactly when it is. */
static bool finite(const ct_tensor *t) {
    if (!ct_dtype_is_floating(ct_dtype_of(t)) || ct_numel(t) == 0) return true;
    ct_scope_begin();
    double sum = 1;
    bool read = ct_item(ct_sum(ct_mul_scalar(t, 0.0), 0, NULL, false), &sum) == CT_OK;
    ct_scope_end();
    return !read || sum == 0;
}

/* What is wrong with sd as a checkpoint of this model and optimiser at epoch done. */
typedef struct problems {
    name_list missing, extra, not_finite;
} problems;

static bool known_state(const char *entry, char keys[MAX_KEYS][KEY_SIZE], int nkeys, int params) {
    char name[256];
    for (int k = 0; k < nkeys; k++)
        for (int j = 0; j < params; j++) {
            snprintf(name, sizeof name, OPTIMIZER_PREFIX "state.%d.%.31s", j, keys[k]);
            if (strcmp(name, entry) == 0) return true;
        }
    return false;
}

static void find_problems(const train_options *o, const ct_module *model, const ct_state_dict *sd,
                          int done, problems *p) {
    char keys[MAX_KEYS][KEY_SIZE], name[256];
    int nkeys = state_keys(o, keys);
    ct_tensor *tensors[64];
    int params = ct_module_parameters(model, tensors, 64);
    for (int i = 0; i < ct_state_dict_size(sd); i++) {
        const char *entry = ct_state_dict_name_at(sd, i);
        if (!model_has(model, entry) && !known_state(entry, keys, nkeys, params))
            list_add(&p->extra, entry);
        if (!finite(ct_state_dict_tensor_at(sd, i))) list_add(&p->not_finite, entry);
    }
    /* Before the first epoch the optimiser has no state yet. */
    for (int j = 0; done > 0 && j < params; j++)
        for (int k = 0; k < nkeys; k++) {
            snprintf(name, sizeof name, OPTIMIZER_PREFIX "state.%d.%.31s", j, keys[k]);
            if (!ct_state_dict_get(sd, name)) list_add(&p->missing, name);
        }
    ct_clear_error();
}

/* The epoch in sd's metadata, or -1 after printing what is wrong with it. */
static int saved_epoch(const char *path, const ct_state_dict *sd) {
    const char *text = ct_state_dict_get_metadata(sd, "epoch");
    char *end = NULL;
    errno = 0;
    long done = text ? strtol(text, &end, 10) : -1;
    if (text && text[0] && !*end && !errno && done >= 0 && done <= 100000) return (int)done;
    if (text)
        ct_cli_fail("%s: the checkpoint's \"epoch\" is \"%.40s\"; expected a whole "
                    "number from 0 to 100000",
                    path, text);
    else
        ct_cli_fail("%s: the checkpoint has no \"epoch\" in its metadata: it was not "
                    "written by ctensor train",
                    path);
    return -1;
}

/* One line for what makes sd unusable; true when it is usable (with a warning line for what
 * --resume-weights-only leaves out). */
static bool usable(const train_options *o, problems *p) {
    const char *path = o->checkpoint;
    if (p->not_finite.count) {
        ct_cli_fail("%s: refused: non-finite values (NaN or infinity) in %s; the run "
                    "that wrote it diverged: resume from an earlier checkpoint or start again",
                    path, list_text(&p->not_finite));
        return false;
    }
    if (!p->missing.count && !p->extra.count) return true;
    char what[1200] = "";
    if (p->missing.count)
        snprintf(what, sizeof what, "the optimiser's state lacks %s", list_text(&p->missing));
    if (p->extra.count)
        snprintf(what + strlen(what), sizeof what - strlen(what),
                 "%sit holds tensors this model and optimiser do not have: %s",
                 p->missing.count ? "; " : "", list_text(&p->extra));
    if (o->resume_weights_only) {
        fprintf(stderr,
                "ctensor train: warning: %s: %s; --resume-weights-only: the weights are loaded, "
                "the optimiser starts afresh\n",
                path, what);
        return true;
    }
    ct_cli_fail("%s: refused: %s (the run would not continue the one that wrote it; "
                "--resume-weights-only loads the weights alone)",
                path, what);
    return false;
}

/* The model's tensors, and the optimiser's state unless weights only, from sd. */
static ct_status load_into(const train_options *o, const ct_state_dict *sd, ct_module *model,
                           ct_optimizer *optimizer) {
    ct_status status = ct_module_load_state_dict(model, sd, NULL);
    for (int i = 0; status == CT_OK && !o->resume_weights_only && i < ct_state_dict_size(sd); i++) {
        const char *name = ct_state_dict_name_at(sd, i);
        if (strncmp(name, OPTIMIZER_PREFIX, strlen(OPTIMIZER_PREFIX)) == 0)
            status = ct_optimizer_load_state(optimizer, name + strlen(OPTIMIZER_PREFIX),
                                             ct_state_dict_tensor_at(sd, i));
    }
    if (status != CT_OK) ct_cli_fail("%s: %s", o->checkpoint, ct_last_error());
    return status;
}

ct_status train_load_checkpoint(const train_options *o, ct_module *model, ct_optimizer *optimizer,
                                ct_grad_scaler *scaler, int *epoch) {
    ct_state_dict *sd = ct_safetensors_load(o->checkpoint, CT_CPU);
    if (!sd) {
        ct_cli_fail("%s", ct_last_error());
        return ct_last_status();
    }
    problems p = {0};
    ct_status status = CT_ERR_FORMAT;
    *epoch = saved_epoch(o->checkpoint, sd);
    if (*epoch >= 0) {
        find_problems(o, model, sd, *epoch, &p);
        if (usable(o, &p)) status = load_into(o, sd, model, optimizer);
        if (status == CT_OK) status = train_amp_load(o->checkpoint, sd, scaler);
    }
    ct_state_dict_free(sd);
    return status;
}

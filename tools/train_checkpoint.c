/* `ctensor train`'s checkpoints: one safetensors file with the model's state under its
 * PyTorch names, the optimiser's under "optimizer.", and the epoch and seed (and with
 * --amp f16 the loss scaler's state) as metadata. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train_impl.h"

#define OPTIMIZER_PREFIX "optimizer."

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
    fprintf(stderr, "ctensor train: %s: its folder %s cannot take the checkpoint (%s)\n", path,
            folder, strerror(errno));
    return false;
}

ct_status train_save_checkpoint(const char *path, const ct_module *model,
                                const ct_optimizer *optimizer, const ct_grad_scaler *scaler,
                                int epoch, uint64_t seed) {
    ct_state_dict *sd = ct_state_dict_new();
    if (!sd) return ct_last_status();
    char text[32];
    ct_status status = ct_module_state_dict(model, sd, NULL);
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

ct_status train_load_checkpoint(const char *path, ct_module *model, ct_optimizer *optimizer,
                                ct_grad_scaler *scaler, int *epoch) {
    ct_state_dict *sd = ct_safetensors_load(path, CT_CPU);
    if (!sd) return ct_last_status();
    const char *text = ct_state_dict_get_metadata(sd, "epoch");
    char *end = NULL;
    long done = text ? strtol(text, &end, 10) : -1;
    ct_status status = CT_OK;
    if (!text || *end || done < 0 || done > 100000) {
        fprintf(stderr, "ctensor train: %s: no valid \"epoch\" in the checkpoint's metadata\n",
                path);
        status = CT_ERR_FORMAT;
    }
    if (status == CT_OK) status = ct_module_load_state_dict(model, sd, NULL);
    for (int i = 0; status == CT_OK && i < ct_state_dict_size(sd); i++) {
        const char *name = ct_state_dict_name_at(sd, i);
        if (strncmp(name, OPTIMIZER_PREFIX, strlen(OPTIMIZER_PREFIX)) == 0)
            status = ct_optimizer_load_state(optimizer, name + strlen(OPTIMIZER_PREFIX),
                                             ct_state_dict_tensor_at(sd, i));
    }
    if (status == CT_OK) status = train_amp_load(path, sd, scaler);
    ct_state_dict_free(sd);
    *epoch = (int)done;
    return status;
}

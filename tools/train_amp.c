/* `ctensor train --amp`: the precision a run trains in, and the loss scaler's state in its
 * checkpoints. bf16 needs no scaler (its range is f32's); f16 uses one with GradScaler's
 * defaults. The scaler's state (scale, growth tracker, skipped steps) is kept in the
 * checkpoint's metadata as decimal text with 17 significant digits, so a resumed run
 * continues with the same scale. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_impl.h"
#include "train_impl.h"

ct_status train_amp_resolve(const char *amp, ct_device device, ct_dtype *out) {
    if (strcmp(amp, "off") == 0) {
        *out = CT_F32;
    } else if (strcmp(amp, "bf16") == 0) {
        *out = CT_BF16;
    } else if (strcmp(amp, "f16") == 0) {
        *out = CT_F16;
    } else if (ct_device_is_host(device)) { /* auto */
        *out = ct_cpu_has_fast_bf16() ? CT_BF16 : CT_F32;
    } else {
        ct_device_properties p;
        ct_status status = ct_device_info(device, &p);
        if (status != CT_OK) return status;
        *out = p.compute_capability_major >= 8 ? CT_BF16 : CT_F32; /* Ampere and later */
    }
    return CT_OK;
}

const char *train_amp_name(ct_dtype amp) {
    return amp == CT_BF16 ? "bf16" : amp == CT_F16 ? "f16" : "f32";
}

ct_status train_amp_save(ct_state_dict *sd, const ct_grad_scaler *scaler) {
    if (!scaler) return CT_OK;
    ct_grad_scaler_state s = ct_grad_scaler_get_state(scaler);
    char text[40];
    snprintf(text, sizeof text, "%.17g", s.scale);
    ct_status status = ct_state_dict_set_metadata(sd, "amp_scale", text);
    snprintf(text, sizeof text, "%lld", (long long)s.growth_tracker);
    if (status == CT_OK) status = ct_state_dict_set_metadata(sd, "amp_growth_tracker", text);
    snprintf(text, sizeof text, "%lld", (long long)s.skipped_steps);
    if (status == CT_OK) status = ct_state_dict_set_metadata(sd, "amp_skipped_steps", text);
    return status;
}

/* A whole number of the checkpoint's metadata, or -1 when missing or malformed. */
static long long metadata_count(const ct_state_dict *sd, const char *key) {
    const char *text = ct_state_dict_get_metadata(sd, key);
    char *end = NULL;
    errno = 0;
    long long v = text ? strtoll(text, &end, 10) : -1;
    return text && !errno && end != text && !*end && v >= 0 ? v : -1;
}

ct_status train_amp_load(const char *path, const ct_state_dict *sd, ct_grad_scaler *scaler) {
    if (!scaler) return CT_OK;
    const char *text = ct_state_dict_get_metadata(sd, "amp_scale");
    if (!text) return CT_OK; /* a checkpoint of a run without f16: the scaler starts afresh */
    char *end = NULL;
    ct_grad_scaler_state s = {strtod(text, &end), metadata_count(sd, "amp_growth_tracker"),
                              metadata_count(sd, "amp_skipped_steps")};
    if (end == text || *end || s.growth_tracker < 0 || s.skipped_steps < 0 ||
        ct_grad_scaler_set_state(scaler, &s) != CT_OK) {
        ct_cli_fail("%s: the loss scaler's state in the metadata is not valid", path);
        return CT_ERR_FORMAT;
    }
    return CT_OK;
}

/* ct_device_info: a (logical) device's properties, from its backend's physical device and
 * the logical device table. */
#include <stdio.h>

#include "backend/backend_impl.h"
#include "core/device_impl.h"
#include "core/error_impl.h"

ct_status ct_device_info(ct_device device, ct_device_properties *out) {
    if (!out) return ct__error(CT_ERR_INVALID_ARG, "ct_device_info: out must not be NULL");
    if (ct_device_check(device) != CT_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ct_last_error());
        return ct__error(ct_last_status(), "ct_device_info: %s", message);
    }
    const ct__backend_table *backend = ct__backend(device.type);
    if (!backend) return ct_last_status();
    int physical = ct__physical_index(device);
    ct_status status = backend->properties(physical, out);
    if (status != CT_OK) return status;
    out->device = device;
    out->physical_index = physical;
    out->is_logical = ct__device_is_split(device.type);
    ct_memory_statistics stats; /* the pool's limit: configured, or set since */
    out->memory_limit = ct_memory_stats(device, &stats) == CT_OK ? stats.limit : 0;
    return CT_OK;
}

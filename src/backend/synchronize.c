/* ct_synchronize: wait for the work queued on a device, through its backend. */
#include <stdio.h>

#include "backend/backend_impl.h"
#include "core/device_impl.h"
#include "core/error_impl.h"

ct_status ct_synchronize(ct_device device) {
    if (device.type == CT_DEVICE_DEFAULT) device = ct_default_device();
    if (ct_device_check(device) != CT_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ct_last_error());
        return ct__error(ct_last_status(), "ct_synchronize: %s", message);
    }
    if (device.type == CT_DEVICE_CPU) return CT_OK;
    const ct__backend_table *backend = ct__backend(device.type);
    if (!backend) return ct_last_status();
    return backend->synchronize(ct__physical_index(device));
}

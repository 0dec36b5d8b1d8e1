/* The dispatch (see dispatch_impl.h): finding a device's kernels, the missing-slot error and
 * the read-back accounting, generated from the rows of backend/kernel_slots.h. */
#include "backend/dispatch_impl.h"

#include "core/device_impl.h"
#include "core/error_impl.h"
#include "core/profile_impl.h"
#include "core/transfer_impl.h"

const ct__kernel_table *ct__kernels(ct_device device, int *physical) {
    const ct__backend_table *backend = ct__backend(device.type);
    if (!backend) return NULL;
    *physical = ct__physical_index(device);
    if (ct__profile_maybe()) return ct__profile_kernels(device.type, backend->kernels);
    return backend->kernels;
}

static const char *slot_name(ct__kernel_slot slot) {
    switch (slot) {
#define CT_SLOT_NAME_(name, need, sync, ret, parameters, arguments)                                \
    case CT_SLOT_##name: return #name;
        CT_KERNEL_SLOTS(CT_SLOT_NAME_)
#undef CT_SLOT_NAME_
    case CT_SLOT_COUNT: break;
    }
    return "unknown";
}

static bool has_slot(const ct__kernel_table *k, ct__kernel_slot slot) {
    switch (slot) {
#define CT_SLOT_PRESENT_(name, need, sync, ret, parameters, arguments)                             \
    case CT_SLOT_##name: return k->name != NULL;
        CT_KERNEL_SLOTS(CT_SLOT_PRESENT_)
#undef CT_SLOT_PRESENT_
    case CT_SLOT_COUNT: break;
    }
    return false;
}

const ct__kernel_table *ct__kernel_find(ct_device device, ct__kernel_slot slot, const char *op,
                                        int *physical) {
    const ct__kernel_table *k = ct__kernels(device, physical);
    if (!k || has_slot(k, slot)) return k;
    char where[32];
    ct__error(CT_ERR_UNSUPPORTED, "%s: not supported on %s (the %s backend has no %s kernel)", op,
              ct_device_str(device, where, sizeof where), ct__backend(device.type)->name,
              slot_name(slot));
    return NULL;
}

static size_t readback_bytes(ct__kernel_slot slot) {
    switch (slot) {
#define CT_SLOT_READBACK_(name, need, sync, ret, parameters, arguments)                            \
    case CT_SLOT_##name: return CT_KERNEL_READBACK_BYTES_##sync;
        CT_KERNEL_SLOTS(CT_SLOT_READBACK_)
#undef CT_SLOT_READBACK_
    case CT_SLOT_COUNT: break;
    }
    return 0;
}

ct_status ct__kernel_readback(ct_device device, ct__kernel_slot slot, const char *op) {
    size_t bytes = readback_bytes(slot);
    return bytes ? ct__transfer_account_readback(device, bytes, op) : CT_OK;
}

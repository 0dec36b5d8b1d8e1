/* The dispatch: the one place that finds a device's kernels for a caller (the op layer, the
 * optimisers), checks that a backend has a slot, names a backend that lacks one, and counts
 * what a kernel reads back. The slots come from backend/kernel_slots.h. */
#ifndef CT_DISPATCH_IMPL_H
#define CT_DISPATCH_IMPL_H

#include "backend/backend_impl.h"

/* One value per row of CT_KERNEL_SLOTS. */
typedef enum ct__kernel_slot {
#define CT_KERNEL_SLOT_ENUM_(name, need, sync, ret, parameters, arguments) CT_SLOT_##name,
    CT_KERNEL_SLOTS(CT_KERNEL_SLOT_ENUM_)
#undef CT_KERNEL_SLOT_ENUM_
        CT_SLOT_COUNT
} ct__kernel_slot;

/* The kernels of device's backend, and the device's physical index in *physical. NULL with
 * the registry's reason recorded (CT_ERR_DEVICE_UNAVAILABLE) when the backend is missing. */
const ct__kernel_table *ct__kernels(ct_device device, int *physical);

/* ct__kernels for a caller about to run `slot`: also NULL, with CT_ERR_UNSUPPORTED
 * "<op>: not supported on <device> (the <backend> backend has no <slot> kernel)", when the
 * backend lacks the slot (an optional one: a required slot is always there). */
const ct__kernel_table *ct__kernel_find(ct_device device, ct__kernel_slot slot, const char *op,
                                        int *physical);

/* Before a kernel that reads a result back runs on device: count the bytes its row reads
 * back (kernel_slots.h's sync column) as an implicit device-to-host transfer, under the
 * transfer guard (core/transfer_impl.h); CT_OK without counting on the CPU. A CHECKED slot's
 * caller calls it only for the calls that check. `op` names the call in a guard's message. */
ct_status ct__kernel_readback(ct_device device, ct__kernel_slot slot, const char *op);

/* While the calling thread profiles (ctensor/profile.h): the table of type's backend whose
 * kernels call `own`'s and add their time to the profile (backend/profile_kernels.c); else
 * `own`. */
const ct__kernel_table *ct__profile_kernels(ct_device_type type, const ct__kernel_table *own);

#endif

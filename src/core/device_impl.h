/* Internal device helpers: resolving the default placement, logical-to-physical mapping. */
#ifndef CT_DEVICE_IMPL_H
#define CT_DEVICE_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "ctensor/ctensor.h"

/* Resolve CT_DEFAULT to the default placement and check that the device exists (applying
 * soft placement). `op` names the caller in the message. */
ct_status ct__resolve_device(const char *op, ct_device requested, ct_device *out);

/* The physical device index behind a (logical) device. */
int ct__physical_index(ct_device device);

/* Logical device count of a type (1 for the CPU unless split). */
int ct__logical_count(ct_device_type type);

/* Whether the physical device of this type was split with ct_configure_logical_devices. */
bool ct__device_is_split(ct_device_type type);

/* ct_device_equal for the library's hot paths (inlined). */
static inline bool ct__same_device(ct_device a, ct_device b) {
    return a.type == b.type && a.index == b.index;
}

/* How many device types there are: ct_device_type's values are 0 .. CT__DEVICE_TYPES - 1
 * (the registry's rows, backend/registry.c). */
#define CT__DEVICE_TYPES 2

/* A dense id for (type, index), for per-device tables: 0 .. CT_DEVICE_SLOTS - 1. */
#define CT_DEVICE_SLOTS (CT__DEVICE_TYPES * CT_MAX_LOGICAL_DEVICES)
static inline int ct__device_slot(ct_device device) {
    return (int)device.type * CT_MAX_LOGICAL_DEVICES + device.index;
}

#endif

/* Implemented by the backend registry (src/backend/registry.c), the table of device types.
 * The public queries are ctensor/device.h's: ct_device_types (best first), ct_device_type_name,
 * ct_device_is_host. */

/* Whether physical device (type, index) exists; on false, writes the reason into reason
 * (size bytes). */
bool ct__physical_device_present(ct_device_type type, int index, char *reason, size_t size);

/* How many physical devices of the type are usable: 0 when it is unavailable or no type. */
int ct__physical_device_count(ct_device_type type);

/* Whether the type is a row of the table. */
bool ct__device_type_known(ct_device_type type);

/* Another name ct_device_parse takes for the type ("gpu" for cuda), or NULL. */
const char *ct__device_type_alias(ct_device_type type);

/* Why the type's devices cannot be used, or "" when they can (loads its plugin). */
const char *ct__device_type_unavailable_reason(ct_device_type type);

/* Whether the type's backend allocates pinned host memory, from which copies to its devices
 * are DMAs (so a loader assembles batches bound for it there). */
bool ct__device_type_pins(ct_device_type type);

/* The first type whose backend allocates pinned host memory; false when none does. */
bool ct__pinning_device_type(ct_device_type *out);

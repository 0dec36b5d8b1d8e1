/* The one function every copy between host memory and devices, or between devices, goes
 * through: it decides whether the copy is a transfer, accounts it, and asks the backends. */
#include <string.h>

#include "backend/backend_impl.h"
#include "core/device_impl.h"
#include "core/error_impl.h"
#include "core/profile_impl.h"
#include "core/transfer_impl.h"
#include "mem/pinned_impl.h"

static bool is_host_side(const ct_device *device) {
    return device == NULL || device->type == CT_DEVICE_CPU;
}

static ct_status copy(const ct_device *dst_device, void *dst, const ct_device *src_device,
                      const void *src, size_t size, bool implicit, const char *what) {
    bool dst_host = is_host_side(dst_device), src_host = is_host_side(src_device);
    bool between_devices = dst_device && src_device && !ct_device_equal(*dst_device, *src_device);
    if (dst_host && src_host) {
        /* Host memory and CPU devices share an address space; two logical CPU devices are
         * still two devices, so that copy is a device-to-device transfer. */
        if (between_devices && ct__transfer_account(CT_TRANSFER_D2D, size, implicit, what) != CT_OK)
            return ct_last_status();
        if (size) memmove(dst, src, size);
        return CT_OK;
    }
    ct_transfer_direction direction = dst_host   ? CT_TRANSFER_D2H
                                      : src_host ? CT_TRANSFER_H2D
                                                 : CT_TRANSFER_D2D;
    if (ct__transfer_account(direction, size, implicit, what) != CT_OK) return ct_last_status();
    if (size == 0) return CT_OK;
    /* Pinned host memory is copied by one direct DMA; pageable memory by the backend's
     * staged copies. */
    ct_status status = CT_OK;
    if (direction == CT_TRANSFER_H2D) {
        const ct__backend_table *b = ct__backend(dst_device->type);
        if (!b) return ct_last_status();
        int device = ct__physical_index(*dst_device);
        if (ct__pinned_upload(b, device, dst, src, size, &status)) return status;
        return b->copy_from_host(device, dst, src, size);
    }
    if (direction == CT_TRANSFER_D2H) {
        const ct__backend_table *b = ct__backend(src_device->type);
        if (!b) return ct_last_status();
        int device = ct__physical_index(*src_device);
        if (ct__pinned_download(b, device, dst, src, size, &status)) return status;
        return b->copy_to_host(device, dst, src, size);
    }
    const ct__backend_table *b = ct__backend(dst_device->type);
    return b ? b->copy_between(ct__physical_index(*dst_device), dst,
                               ct__physical_index(*src_device), src, size)
             : ct_last_status();
}

/* The copy, timed as a transfer while the thread profiles (ctensor/profile.h). */
ct_status ct__transfer(const ct_device *dst_device, void *dst, const ct_device *src_device,
                       const void *src, size_t size, bool implicit, const char *what) {
    if (!ct__profile_maybe() || !ct__profile_here() ||
        (is_host_side(dst_device) && is_host_side(src_device)))
        return copy(dst_device, dst, src_device, src, size, implicit, what);
    double start = ct__profile_now();
    ct_status status = copy(dst_device, dst, src_device, src, size, implicit, what);
    double seconds = ct__profile_now() - start;
    ct__profile_add(CT_PROFILE_TRANSFER, seconds, seconds, true);
    return status;
}

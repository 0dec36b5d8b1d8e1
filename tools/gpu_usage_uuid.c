/* A CUDA device's UUID as NVML writes it, for finding the device in NVML: NVML numbers every
 * GPU of the machine, CUDA only those CUDA_VISIBLE_DEVICES shows (and in its own order), so the
 * UUID is what they share. The library reads it with the device's properties
 * (ct_device_properties.uuid, the runtime's cudaDeviceProp.uuid; a MIG instance gives its own,
 * which NVML's GPU handles do not match). */
#include <stdio.h>
#include <string.h>

#include "gpu_usage.h"

bool gpu_usage_cuda_uuid(ct_device device, char *out, size_t size) {
    ct_device_properties p;
    if (ct_device_info(device, &p) != CT_OK) {
        ct_clear_error();
        return false;
    }
    const unsigned char *b = p.uuid;
    static const unsigned char unknown[16];
    if (memcmp(b, unknown, sizeof unknown) == 0) return false;
    snprintf(out, size, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return true;
}

/* The fake GPU's UUID (fake_gpu_plugin.c): FNV-1a over a text, 64 bits per half, so that the
 * fake NVML (fake_nvml.c) can know the GPU by the same UUID. The text is
 * FAKE_GPU_UUID_TEXT and the device's index unless the test sets CT_FAKE_GPU_UUID. */
#ifndef FAKE_GPU_UUID_H
#define FAKE_GPU_UUID_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FAKE_GPU_UUID_TEXT "fake GPU"

static inline void fake_gpu_uuid(const unsigned char *text, size_t length, unsigned char out[16]) {
    for (size_t half = 0; half < 2; half++) {
        uint64_t h = 14695981039346656037ull ^ half;
        for (size_t i = 0; i < length; i++) h = (h ^ text[i]) * 1099511628211ull;
        memcpy(out + 8 * half, &h, 8);
    }
}

#endif

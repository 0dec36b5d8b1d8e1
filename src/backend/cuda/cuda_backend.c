/* PLACEHOLDER until the CUDA backend lands: replace this whole file. */
#include <stdio.h>

#include "backend/cuda/cuda_impl.h"

cudaStream_t ct_cuda_stream(int device) {
    (void)device;
    return NULL;
}

ct_status ct_cuda_set_device(int device) {
    CT_CUDA_CHECK(device, cudaSetDevice(device));
    return CT_OK;
}

__attribute__((visibility("default"))) const ct_backend *
ct_cuda_plugin_entry(const ct_plugin_host *host, char *reason, size_t reason_size) {
    ct_cuda_host = host;
    snprintf(reason, reason_size, "the CUDA backend is not implemented yet");
    return NULL;
}

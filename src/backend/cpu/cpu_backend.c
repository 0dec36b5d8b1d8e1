/* The CPU backend: one physical device (the host), 64-byte aligned raw memory, memcpy
 * copies, and the kernel table filled from the cpu_*.c files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/cpu_norm_impl.h"
#include "core/error_impl.h"

static int cpu_device_count(void) { return 1; }

static size_t physical_memory(size_t *available) {
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    *available = avail > 0 && page > 0 ? (size_t)avail * (size_t)page : 0;
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

static ct_status cpu_properties(int device, ct_device_properties *out) {
    (void)device;
    memset(out, 0, sizeof *out);
    out->device = CT_CPU;
    snprintf(out->name, sizeof out->name, "host CPU (%d OpenMP threads)", ct__cpu_threads());
    out->memory_total = physical_memory(&out->memory_free);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->multiprocessors = cores > 0 ? (int)cores : 1;
    return CT_OK;
}

static ct_status cpu_raw_alloc(int device, size_t size, void **out) {
    (void)device;
    void *p = ct__aligned_host_block(size);
    if (!p) return CT_ERR_OUT_OF_MEMORY;
    *out = p;
    return CT_OK;
}

static void cpu_raw_free(int device, void *ptr, size_t size) {
    (void)device;
    (void)size;
    free(ptr);
}

static ct_status cpu_copy_bytes(int device, void *dst, const void *src, size_t size) {
    (void)device;
    memmove(dst, src, size);
    return CT_OK;
}

static ct_status cpu_copy_between(int dst_device, void *dst, int src_device, const void *src,
                                  size_t size) {
    (void)dst_device;
    (void)src_device;
    memmove(dst, src, size);
    return CT_OK;
}

static ct_status cpu_synchronize(int device) {
    (void)device;
    return CT_OK;
}

static const ct__kernel_table cpu_kernels = {
    .unary = ct__cpu_unary,
    .binary = ct__cpu_binary,
    .where = ct__cpu_where,
    .copy = ct__cpu_copy,
    .fill = ct__cpu_fill,
    .iota = ct__cpu_iota,
    .random = ct__cpu_random,
    .reduce = ct__cpu_reduce,
    .matmul = ct__cpu_matmul,
    .gather = ct__cpu_gather,
    .optim_step = ct__cpu_optim_step,
    .list_norm = ct__cpu_list_norm,
    .list_scale = ct__cpu_list_scale,
    .list_unscale = ct__cpu_list_unscale,
    .softmax = ct__cpu_softmax,
    .softmax_backward = ct__cpu_softmax_backward,
    .cross_entropy = ct__cpu_cross_entropy,
    .cross_entropy_backward = ct__cpu_cross_entropy_backward,
    .batch_norm = ct__cpu_batch_norm,
    .batch_norm_backward = ct__cpu_batch_norm_backward,
    .layer_norm = ct__cpu_layer_norm,
    .layer_norm_backward = ct__cpu_layer_norm_backward,
    .dropout = ct__cpu_dropout,
    .index_add = ct__cpu_index_add,
    .conv2d_workspace = ct__cpu_conv2d_workspace,
    .conv2d_forward = ct__cpu_conv2d_forward,
    .conv2d_native = ct__cpu_conv2d_native,
    .conv2d_backward = ct__cpu_conv2d_backward,
    .pool2d_forward = ct__cpu_pool2d_forward,
    .pool2d_backward = ct__cpu_pool2d_backward,
    .pool2d_native = ct__cpu_pool2d_native,
    .argsort = ct__cpu_argsort,
    .cumsum = ct__cpu_cumsum,
};

static const ct__backend_table cpu_backend = {
    .name = "cpu",
    .type = CT_DEVICE_CPU,
    .device_count = cpu_device_count,
    .properties = cpu_properties,
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
    .copy_to_host = cpu_copy_bytes,
    .copy_from_host = cpu_copy_bytes,
    .copy_between = cpu_copy_between,
    .synchronize = cpu_synchronize,
    .kernels = &cpu_kernels,
};

const ct__backend_table *ct__cpu_backend(void) { return &cpu_backend; }

/* The CPU backend: one physical device (the host), 64-byte aligned raw memory, memcpy
 * copies, and the kernel table filled from the cpu_*.c files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu_impl.h"
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

/* Every required slot's ct__cpu_NAME (a missing one fails the link, naming it), and the
 * optional slots the CPU defines. */
static const ct__kernel_table cpu_kernels = {
#define CT_CPU_REQUIRED_(name, need, ...) CT_KERNEL_IF_##need(.name = ct__cpu_##name, )
    CT_KERNEL_SLOTS(CT_CPU_REQUIRED_)
#undef CT_CPU_REQUIRED_
#define CT_CPU_OPTIONAL_(name) .name = ct__cpu_##name,
        CT_CPU_OPTIONAL_SLOTS(CT_CPU_OPTIONAL_)
#undef CT_CPU_OPTIONAL_
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

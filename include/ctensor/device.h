/* ctensor — devices, discovery and placement.
 *
 * A ct_device is a value {type, index}. The default placement for new tensors is the top
 * of a thread-local stack (ct_device_push/pop, the `with tf.device()` of C), else the
 * CT_DEVICE environment variable, else "auto" (cuda:0 when CUDA is usable, else cpu).
 * Logical devices: before a physical device is used, ct_configure_logical_devices() splits
 * it into N logical devices, each with its own memory pool and limit; cpu:1 is then a
 * different device from cpu:0 and copies between them count as device-to-device. */
#ifndef CTENSOR_DEVICE_H
#define CTENSOR_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_device_type {
    CT_DEVICE_CPU = 0,
    CT_DEVICE_CUDA = 1,
    /* Not a device: "use the default placement", for creation functions. */
    CT_DEVICE_DEFAULT = -1,
} ct_device_type;

typedef struct ct_device {
    ct_device_type type;
    int index;
} ct_device;

#define CT_MAX_LOGICAL_DEVICES 16

/* Creation functions take a device; CT_DEFAULT asks for the default placement. */
#define CT_DEFAULT ((ct_device){CT_DEVICE_DEFAULT, 0})
#define CT_CPU ((ct_device){CT_DEVICE_CPU, 0})

/* The device types this library knows, best first: the order in which "auto" takes the
 * first present (cuda, then cpu). Writes at most capacity of them into out (which may be NULL)
 * and returns how many there are. */
CT_API int ct_device_types(ct_device_type *out, int capacity);

/* The type's name as ct_device_str writes it ("cpu", "cuda"); NULL for no device type. */
CT_API const char *ct_device_type_name(ct_device_type type);

/* Whether tensors on the device live in host memory, which the CPU reads without a copy
 * (the CPU's logical devices); false for a GPU, and for no device type. */
CT_API bool ct_device_is_host(ct_device device);

/* Parse "cpu", "cpu:1", "cuda", "cuda:1", "gpu:0", "/gpu:0", "/device:GPU:1", "/cpu:0"
 * (any case) and "auto" (the best device present). The device need not exist: ask
 * ct_device_check() for that. CT_ERR_INVALID_ARG with the accepted spellings otherwise. */
CT_API ct_status ct_device_parse(const char *text, ct_device *out);

/* Write "cpu:0" or "cuda:1" into buf (always NUL-terminated when size > 0); returns buf. */
CT_API const char *ct_device_str(ct_device device, char *buf, size_t size);

CT_API bool ct_device_equal(ct_device a, ct_device b);

/* CT_OK when the device exists and can be used; else CT_ERR_DEVICE_UNAVAILABLE with the
 * reason (for CUDA, ct_cuda_unavailable_reason()). Sets the thread's error on failure. */
CT_API ct_status ct_device_check(ct_device device);

/* Whether a usable CUDA device is present. Loads the CUDA plugin on first call. */
CT_API bool ct_cuda_is_available(void);

/* Why CUDA cannot be used, in one line, or "" when it can. Never NULL. */
CT_API const char *ct_cuda_unavailable_reason(void);

/* What the CUDA plugin was built with and where it was found, for diagnosis (`ctensor
 * doctor`). Filled even when CUDA is unusable, as far as the plugin could be loaded: a
 * plugin that loads but finds no driver still tells its CUDA runtime version. */
typedef struct ct_cuda_build_info {
    bool plugin_loaded;     /* the plugin library was found and loaded */
    char plugin_path[1024]; /* the library loaded, or the path tried when none loaded */
    int runtime_version;    /* CUDA runtime built in, e.g. 13000 for 13.0; 0 unknown */
    int driver_version;     /* CUDA version the driver supports, as the plugin saw it; 0 none */
    char real_archs[64];    /* native code in the build, e.g. "80,90"; "" unknown */
    char ptx_archs[64];     /* PTX in the build, e.g. "90" */
} ct_cuda_build_info;

/* Loads the plugin on first call like ct_cuda_is_available(); CT_OK even when there is no
 * plugin (plugin_loaded false), CT_ERR_INVALID_ARG for a NULL out. */
CT_API ct_status ct_cuda_get_build_info(ct_cuda_build_info *out);

/* The NVIDIA driver as this library finds it, without loading the CUDA plugin: whether its
 * library (libcuda.so.1) loads and the CUDA version it supports. */
typedef struct ct_cuda_driver_info {
    bool loaded;     /* libcuda.so.1 loads */
    int version;     /* the CUDA version it supports (cuDriverGetVersion), e.g. 12040 for
                        12.4; 0 when it reports none */
    char error[512]; /* why it does not load, the loader's text; "" when it loads */
} ct_cuda_driver_info;

/* Probes the driver once per process (later calls give the same answer). CT_OK even without
 * a driver (loaded false), CT_ERR_INVALID_ARG for a NULL out. */
CT_API ct_status ct_cuda_get_driver_info(ct_cuda_driver_info *out);

/* Number of (logical) devices of a type: at least 1 for the CPU. */
CT_API int ct_device_count(ct_device_type type);

typedef struct ct_device_properties {
    ct_device device;
    char name[128];
    size_t memory_total;          /* bytes of the physical device */
    size_t memory_free;           /* bytes free on the physical device now */
    size_t memory_limit;          /* this (logical) device's pool limit; 0 = none */
    int compute_capability_major; /* 0 on the CPU */
    int compute_capability_minor;
    int multiprocessors; /* streaming multiprocessors, or CPU cores online */
    int physical_index;  /* the physical device a logical device lives on */
    bool is_logical;     /* true when the physical device was split */
    /* The physical device's 16-byte UUID (CUDA's cudaDeviceProp.uuid, which nvidia-smi shows
     * as GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx): the same for every logical device of it and
     * in every process that sees it, whatever its index there. All zero where unknown (the CPU). */
    unsigned char uuid[16];
} ct_device_properties;

CT_API ct_status ct_device_info(ct_device device, ct_device_properties *out);

/* Wait until the work queued on a device has finished (torch.cuda.synchronize()). Device
 * work is asynchronous: an op returns once it is queued, so time device work between two
 * ct_synchronize calls. Reading a tensor on the host (ct_copy_to_host, ct_item) waits by
 * itself. CT_OK at once on the CPU, whose work is done when each call returns; CT_DEFAULT
 * means the default device. CT_ERR_DEVICE_UNAVAILABLE with the reason for a device that is
 * not present; an error of work queued earlier is reported here (CT_ERR_BACKEND). */
CT_API ct_status ct_synchronize(ct_device device);

/* The default placement of this thread now (never CT_DEVICE_DEFAULT). */
CT_API ct_device ct_default_device(void);

/* Push a device on this thread's placement stack; checks that it is usable (with soft
 * placement, an unusable device falls back to the CPU with one warning). */
CT_API ct_status ct_device_push(ct_device device);
/* ct_device_push of a parsed string: ct_device_push_str("/gpu:0"). */
CT_API ct_status ct_device_push_str(const char *text);
/* Pop; CT_ERR_STATE when the stack is empty. */
CT_API ct_status ct_device_pop(void);

/* Soft placement: asking for an unavailable device gives the CPU and one warning through
 * the log hook, instead of CT_ERR_DEVICE_UNAVAILABLE. Off unless CT_SOFT_PLACEMENT=1, read
 * once, at the first discovery of devices (the first tensor) at the latest: a value that is
 * not 1, true, 0 or false is one warning through the log hook then. */
CT_API void ct_set_soft_placement(bool enabled);
CT_API bool ct_soft_placement(void);

/* Split physical device (type, physical_index) into n logical devices with the given
 * memory limits in bytes (a 0 entry: no limit). memory_limits may be NULL: then each logical
 * device gets the limit CT_MEMORY_LIMIT names for it ("cpu:1=1GiB"), else the whole limit
 * of its physical device ("cpu=2GiB" limits every logical CPU device to 2 GiB), else none.
 * Logical device i is then (type, i). CT_ERR_STATE when the device holds memory already,
 * CT_ERR_INVALID_ARG when n is outside 1..CT_MAX_LOGICAL_DEVICES. */
CT_API ct_status ct_configure_logical_devices(ct_device_type type, int physical_index, int n,
                                              const size_t *memory_limits);

/* Which CPU kernels run on this processor and how the CPU splits work over threads, in one
 * line for people (`ctensor devices`): the vector width of the elementwise loops and of exp,
 * the library of f32 GEMM where it is not OpenBLAS, OpenBLAS's kernel family, and the measured cost
 * of a parallel region with the smallest op that gets two threads. A static string, valid until the
 * next call; thread-safe to call, though concurrent callers share the buffer. Measures the region
 * on first use. */
CT_API const char *ct_cpu_kernels(void);

#ifdef __cplusplus
}
#endif
#endif

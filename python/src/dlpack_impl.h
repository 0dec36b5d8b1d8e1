/* The DLPack ABI (the data-interchange structs of the DLPack specification, 1.x, and the
 * legacy 0.x managed tensor), written from the specification: only what ctensor exchanges.
 * The capsules are named "dltensor_versioned" (DLManagedTensorVersioned) and "dltensor"
 * (DLManagedTensor); a consumer renames them "used_..." once it owns the tensor. */
#ifndef CTPY_DLPACK_IMPL_H
#define CTPY_DLPACK_IMPL_H

#include <stdint.h>

#define CTPY_DLPACK_MAJOR 1
#define CTPY_DLPACK_MINOR 0

enum { CTPY_DL_CPU = 1, CTPY_DL_CUDA = 2, CTPY_DL_CUDA_HOST = 3 };
/* DLDataTypeCode, named as ctensor/dtype.h's dl_code column names them. */
enum {
    CTPY_DL_Int = 0,
    CTPY_DL_UInt = 1,
    CTPY_DL_Float = 2,
    CTPY_DL_Bfloat = 4,
    CTPY_DL_Complex = 5,
    CTPY_DL_Bool = 6
};
#define CTPY_DL_FLAG_READ_ONLY (1ULL << 0)
#define CTPY_DL_FLAG_IS_COPIED (1ULL << 1)

typedef struct ctpy_dl_device {
    int32_t device_type;
    int32_t device_id;
} ctpy_dl_device;

typedef struct ctpy_dl_dtype {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} ctpy_dl_dtype;

typedef struct ctpy_dl_tensor {
    void *data;
    ctpy_dl_device device;
    int32_t ndim;
    ctpy_dl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL: C order */
    uint64_t byte_offset;
} ctpy_dl_tensor;

typedef struct ctpy_dl_managed {
    ctpy_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct ctpy_dl_managed *self);
} ctpy_dl_managed;

typedef struct ctpy_dl_version {
    uint32_t major;
    uint32_t minor;
} ctpy_dl_version;

typedef struct ctpy_dl_managed_versioned {
    ctpy_dl_version version;
    void *manager_ctx;
    void (*deleter)(struct ctpy_dl_managed_versioned *self);
    uint64_t flags;
    ctpy_dl_tensor dl_tensor;
} ctpy_dl_managed_versioned;

#endif

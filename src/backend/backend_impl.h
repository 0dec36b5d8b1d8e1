/* The backend interface: a struct of function pointers per device type.
 *
 * A backend provides discovery, raw memory, copies, synchronisation and a kernel table (its
 * slots and their contracts in backend/kernel_slots.h). All "device" arguments are physical
 * device indices. */
#ifndef CT_BACKEND_IMPL_H
#define CT_BACKEND_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/kernel_slots.h"
#include "backend/optim_args_impl.h"
#include "ctensor/ctensor.h"

#define CT_EW_MAX_OPERANDS 4

struct ct__conv2d_args;
struct ct__pool2d_args;

/* Unary op ids: the op_list.h table, then ops that are not in the public unary table. */
typedef enum ct__unary_op {
#define CT_UNARY_ENUM_(name, NAME, kind, grad, autocast) CT_UOP_##NAME,
    CT_UNARY_OPS(CT_UNARY_ENUM_)
#undef CT_UNARY_ENUM_
        CT_UOP_CLAMP, /* p0 = lo, p1 = hi */
    CT_UOP_COUNT
} ct__unary_op;

/* Binary ops that are not in the public table: the backward passes of activations, with the
 * columns of op_list.h's rows (no autograd record of their own; the backends run them as rows
 * of their kind, from their formulas in ew_formula_impl.h). */
#define CT_INTERNAL_BINARY_OPS(X)                                                                  \
    /* ReLU's backward: a where b > 0, else 0 */                                                   \
    X(relu_grad, RELU_GRAD, ARITH, NOGRAD, AS_IS)                                                  \
    /* gelu_tanh's backward: a * gelu_tanh'(b) (a the output's gradient, b the input) */           \
    X(gelu_tanh_grad, GELU_TANH_GRAD, FLOAT, NOGRAD, AS_IS)

/* Binary op ids: the op_list.h table, then the internal ops. */
typedef enum ct__binary_op {
#define CT_BINARY_ENUM_(name, NAME, kind, grad, autocast) CT_BOP_##NAME,
    CT_BINARY_OPS(CT_BINARY_ENUM_) CT_INTERNAL_BINARY_OPS(CT_BINARY_ENUM_)
#undef CT_BINARY_ENUM_
        CT_BOP_COUNT
} ct__binary_op;

typedef enum ct__reduce_op {
#define CT_REDUCE_ENUM_(name, NAME, autocast) CT_ROP_##NAME,
    CT_REDUCE_OPS(CT_REDUCE_ENUM_)
#undef CT_REDUCE_ENUM_
        CT_ROP_VAR, /* uses correction */
    CT_ROP_STD,
    CT_ROP_ARGMAX, /* index into the flattened (C-order) reduced axes */
    CT_ROP_ARGMIN,
    CT_ROP_COUNT
} ct__reduce_op;

typedef enum ct__random_kind { CT_RANDOM_UNIFORM = 0, CT_RANDOM_NORMAL = 1 } ct__random_kind;

/* Elementwise operands over one iteration space of shape `shape`. Operand 0 is the output.
 * Strides are in elements of each operand's dtype; a stride of 0 broadcasts. The op layer
 * coalesces axes, so operands that are all contiguous arrive as ndim == 1, stride 1. */
typedef struct ct__ew_args {
    int ndim;
    int nops;
    int64_t numel;
    int64_t shape[CT_MAX_DIMS];
    char *data[CT_EW_MAX_OPERANDS];
    int64_t strides[CT_EW_MAX_OPERANDS][CT_MAX_DIMS];
    ct_dtype dtype[CT_EW_MAX_OPERANDS];
    /* Binary and compare ops: the dtype the inputs are converted to before the op (the
     * promoted dtype); unary ops: the dtype the op computes in (the output's, or the
     * input's for BOOL ops). */
    ct_dtype compute_dtype;
} ct__ew_args;

/* A binary kernel's scalar operand, passed by value, so that a kernel that returns before its
 * work runs keeps the value with the call. operand 0: there is none (the operands are
 * tensors). 1 or 2: operand a or b of the kernel's ct__ew_args is this value: its data
 * pointer there is NULL, its strides 0, and its dtype (f32, f64, i32 or i64) names the member
 * that holds it. */
typedef struct ct__ew_scalar {
    union {
        float f32;
        double f64;
        int32_t i32;
        int64_t i64;
    } value;
    int operand;
} ct__ew_scalar;

/* Reduction of `in` over its inner axes, for every index over its outer axes. The output
 * has the outer shape (keepdim is the op layer's business). An empty inner space gives the
 * op's identity (sum 0, prod 1, all true, any false) or NaN (mean, var, std); the op layer
 * rejects max/min/argmax/argmin over an empty space. */
typedef struct ct__reduce_args {
    int outer_ndim;
    int inner_ndim;
    int64_t outer_shape[CT_MAX_DIMS];
    int64_t inner_shape[CT_MAX_DIMS];
    char *in;
    ct_dtype in_dtype;
    int64_t in_outer_strides[CT_MAX_DIMS];
    int64_t in_inner_strides[CT_MAX_DIMS];
    char *out;
    ct_dtype out_dtype;
    int64_t out_strides[CT_MAX_DIMS];
    double correction; /* var and std */
} ct__reduce_args;

/* out[b] (m x n) = a[b] (m x k) @ b[b] (k x n) for every batch index b, with broadcast batch
 * strides (0 where an operand is broadcast). a, b and out share dtype. out is row-major with
 * unit column stride. */
typedef struct ct__matmul_args {
    ct_dtype dtype;
    int64_t m, n, k;
    int batch_ndim;
    int64_t batch_shape[CT_MAX_DIMS];
    char *a, *b, *out;
    int64_t a_batch_strides[CT_MAX_DIMS];
    int64_t b_batch_strides[CT_MAX_DIMS];
    int64_t out_batch_strides[CT_MAX_DIMS];
    int64_t a_row_stride, a_col_stride;
    int64_t b_row_stride, b_col_stride;
    int64_t out_row_stride;
    bool allow_tf32; /* f32 may use TF32 (ct_set_matmul_precision("high")); CPU ignores it */
    /* ct_are_deterministic_algorithms_enabled(): the same bits from run to run (on cuBLAS, one
     * workspace of its own per stream); the CPU's products are so always and ignore it */
    bool deterministic;
    /* NULL, or n contiguous elements of dtype added to every row of every out[b] after the
     * product (a linear layer's bias, right after each thread's GEMM). Only the CPU kernel takes
     * one, for f32 and f64; the op gives every other backend and dtype NULL. */
    const char *bias;
} ct__matmul_args;

/* Gather: iteration over the output's shape with operands out, index (i32 or i64), and
 * src (the source with its stride along `axis` set to 0). Each element reads
 * src[... + idx * src_axis_stride], idx < 0 counting from src_axis_size. */
typedef struct ct__gather_args {
    ct__ew_args it;
    int64_t src_axis_stride;
    int64_t src_axis_size;
} ct__gather_args;

/* Sorting and scanning (src/ops/sort.c): `rows` rows of `n` elements, the rows `in_row`
 * elements apart and each row's elements `in_stride` apart, in `dtype`.
 * argsort writes into `indices` (int64, contiguous rows of n) the positions of each row's
 * elements in ascending order (descending: the reverse order of the keys, equal keys still
 * in their original order), stable, NaN after every number (descending: before), -0.0 equal
 * to 0.0. cumsum writes the running sums of each row into `out` (out_dtype, rows
 * `out_row` elements apart, unit stride), summed in float64 for float dtypes and in int64
 * (wrapping) for the others. cumprod writes the running products likewise, multiplied in
 * float64 for float dtypes, in int64 (wrapping) for integers and bool, and in complex128 when
 * dtype or out_dtype is complex (the others then read as complex with imaginary part 0). */
typedef struct ct__sort_args {
    int64_t rows, n;
    ct_dtype dtype;
    const char *in;
    int64_t in_row, in_stride;
    int64_t *indices;
    bool descending;
    char *out;
    ct_dtype out_dtype;
    int64_t out_row;
} ct__sort_args;

/* Discrete Fourier transforms (src/ops/fft.c): `batch` transforms of length n in the
 * precision of dtype (CT_F32: complex64 and float32 data, CT_F64: complex128 and float64),
 * unnormalised then multiplied by scale: c2c forward (sign -1) or backward (+1), r2c
 * (forward, n reals in, n/2 + 1 complex out) and c2r (backward, n/2 + 1 complex in, the
 * imaginary parts of bin 0 and, for even n, of bin n/2 ignored, n reals out). Strides and
 * distances count elements of each operand's own type (complex or real); in and out do not
 * overlap. */
typedef enum ct__fft_type { CT_FFT_TYPE_C2C, CT_FFT_TYPE_R2C, CT_FFT_TYPE_C2R } ct__fft_type;
typedef struct ct__fft_args {
    ct__fft_type type;
    int sign;
    ct_dtype dtype;
    int64_t n, batch;
    const char *in;
    int64_t in_stride, in_dist;
    char *out;
    int64_t out_stride, out_dist;
    double scale;
} ct__fft_args;

/* The arithmetic domain a binary kernel computes in, chosen alike on every backend so that
 * results match bit for bit: f64, f32 (also for f16 and bf16), or for integers int32 when
 * the promoted dtype and both inputs fit in 32 bits (exact: results wrap to the output's
 * width on store), uint64 when the promoted dtype is uint64 (its operands are then unsigned
 * or bool), and int64 otherwise. The order indexes the backends' kernel tables. */
typedef enum ct__compute_domain {
    CT_DOMAIN_F32,
    CT_DOMAIN_F64,
    CT_DOMAIN_I64,
    CT_DOMAIN_I32,
    CT_DOMAIN_U64
} ct__compute_domain;

#define CT_DOMAIN_COUNT 5

static inline bool ct__fits_i32_domain(ct_dtype dtype) {
    return dtype == CT_I32 || dtype == CT_U8 || dtype == CT_BOOL || dtype == CT_I8 ||
           dtype == CT_I16 || dtype == CT_U16;
}

/* The domain of a binary op's arguments (out, a, b) with its compute dtype. */
static inline ct__compute_domain ct__binary_domain(const ct__ew_args *args) {
    ct_dtype compute = args->compute_dtype;
    if (compute == CT_F64) return CT_DOMAIN_F64;
    if (compute == CT_F32 || compute == CT_F16 || compute == CT_BF16) return CT_DOMAIN_F32;
    if (compute == CT_U64) return CT_DOMAIN_U64;
    if (ct__fits_i32_domain(compute) && ct__fits_i32_domain(args->dtype[1]) &&
        ct__fits_i32_domain(args->dtype[2]))
        return CT_DOMAIN_I32;
    return CT_DOMAIN_I64;
}

/* The nn family's argument structs (backend/norm_args_impl.h). */
typedef struct ct__softmax_args ct__softmax_args;
typedef struct ct__cross_entropy_args ct__cross_entropy_args;
typedef struct ct__batch_norm_args ct__batch_norm_args;
typedef struct ct__layer_norm_args ct__layer_norm_args;
typedef struct ct__dropout_args ct__dropout_args;
typedef struct ct__index_add_args ct__index_add_args;
typedef struct ct__attention_args ct__attention_args;
/* The linalg slot's (backend/linalg_args_impl.h). */
typedef struct ct__linalg_args ct__linalg_args;

/* The kernel table: one member per row of CT_KERNEL_SLOTS (backend/kernel_slots.h, which
 * gives each slot's contract); an optional slot a backend lacks is NULL. */
typedef struct ct__kernel_table {
#define CT_KERNEL_MEMBER_(name, need, sync, ret, parameters, arguments) ret(*name) parameters;
    CT_KERNEL_SLOTS(CT_KERNEL_MEMBER_)
#undef CT_KERNEL_MEMBER_
} ct__kernel_table;

typedef struct ct__backend_table {
    const char *name;
    ct_device_type type;
    /* Physical devices present (0 when none); never fails. */
    int (*device_count)(void);
    ct_status (*properties)(int device, ct_device_properties *out);
    ct_status (*raw_alloc)(int device, size_t size, void **out);
    void (*raw_free)(int device, void *ptr, size_t size);
    ct_status (*copy_to_host)(int device, void *dst, const void *src, size_t size);
    ct_status (*copy_from_host)(int device, void *dst, const void *src, size_t size);
    ct_status (*copy_between)(int dst_device, void *dst, int src_device, const void *src,
                              size_t size);
    ct_status (*synchronize)(int device);
    const ct__kernel_table *kernels;
    /* ---- pinned host memory (src/mem/pinned.c; NULL in a backend without it) ---- */
    /* Page-locked host memory that every device of the backend can copy from and into by
     * DMA. CT_ERR_OUT_OF_MEMORY without a message (the core writes it). */
    ct_status (*pinned_alloc)(size_t size, void **out);
    void (*pinned_free)(void *ptr);
    /* Host to device from pinned src: one DMA queued on the device's stream, returning
     * before it ends. *fence (NULL at first, then the backend's) is recorded after it, so
     * that fence_done tells when src may be written or freed again. */
    ct_status (*copy_from_pinned)(int device, void *dst, const void *src, size_t size,
                                  void **fence);
    /* Device to host into pinned dst: one DMA, waited for. */
    ct_status (*copy_to_pinned)(int device, void *dst, const void *src, size_t size);
    /* Whether the DMA before the fence's last record has ended (a NULL fence: true); with
     * wait, blocks until it has. */
    bool (*fence_done)(void *fence, bool wait);
    void (*fence_free)(void *fence);
} ct__backend_table;

/* The registry (src/backend/registry.c): the backend of a device type, or NULL with the
 * reason recorded as CT_ERR_DEVICE_UNAVAILABLE. */
const ct__backend_table *ct__backend_find(ct_device_type type);

#ifndef __cplusplus /* the core's: plugins do not ask the registry */
#include <stdatomic.h>

#include "core/device_impl.h"

/* Each type's backend once ct__backend_find found it: every op asks, several times. */
extern const ct__backend_table *_Atomic ct__found_backends[CT__DEVICE_TYPES];

static inline const ct__backend_table *ct__backend(ct_device_type type) {
    const ct__backend_table *b =
        (unsigned)type < CT__DEVICE_TYPES
            ? atomic_load_explicit(&ct__found_backends[type], memory_order_acquire)
            : NULL;
    return b ? b : ct__backend_find(type);
}
#endif
/* The CPU backend, always present. */
const ct__backend_table *ct__cpu_backend(void);

#endif

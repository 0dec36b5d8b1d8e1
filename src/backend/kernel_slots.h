/* The kernel slots: the one list of the kernels a backend gives the op layer. Each row is
 * one slot; from the rows come the kernel table (ct__kernel_table in backend_impl.h), each
 * backend's declarations (ct__cpu_NAME in cpu/cpu_impl.h, ct_cuda_NAME in cuda/cuda_impl.h)
 * and its table initialiser (cpu/cpu_backend.c, cuda/cuda_device.c), the fake GPU's
 * wrappers (tests/fake_gpu_kernels.c), and the dispatch's checks and read-back accounting
 * (dispatch.c). Kernels receive raw pointers already offset to element (0, ..., 0) of each
 * operand and strides in elements; the op layer has checked shapes, dtypes and devices, so
 * kernels only fail on what they alone can see (an index out of range, an integer division
 * by zero, a device error). `device` is always a physical device index.
 *
 * Columns: X(name, need, sync, ret, (parameters), (arguments)), and a one-line contract
 * above each row.
 *   need: REQUIRED  every backend defines it: the initialisers name the backend's function
 *                   for each such row, so a backend without it does not link, and the linker
 *                   names the function (undefined reference to `ct__cpu_NAME'); the
 *                   libraries and plugins link with --no-undefined, so a plugin fails at
 *                   build time, not when loaded. tools/check-kernel-slots.sh checks this.
 *         OPTIONAL  a backend may lack it (NULL in its table; it lists the optional slots it
 *                   defines); callers look it up through ct__kernel_find (dispatch_impl.h),
 *                   which says "<op>: not supported on <device>", or treat NULL as the
 *                   contract says.
 *   sync: how a device backend runs it, as CUDA does (the fake GPU follows this column):
 *         QUEUED          on the device's stream; returns before it runs
 *         READBACK(bytes) waits for a result of `bytes` (CT_READBACK_*) read back to the host
 *         CHECKED(bytes)  QUEUED, except where its contract says the kernel checks its
 *                         operands: then as READBACK(bytes)
 *         QUERY           answered on the host at once; no device work
 *       The op layer counts each read-back as an implicit device-to-host transfer before the
 *       launch (ct__kernel_readback); CPU kernels read nothing back.
 *   ret, (parameters), (arguments): the signature, and the parameters' names in order. Queued
 *       and read-back kernels take their argument struct as `args`; the fake GPU copies it.
 *
 * Adding a kernel: a row here, the function in each backend (a required row), and the op
 * that calls it (docs/ARCHITECTURE.md). */
#ifndef CT_KERNEL_SLOTS_H
#define CT_KERNEL_SLOTS_H

/* What device kernels read back to the host, in bytes. The CUDA plugin asserts these sizes. */
#define CT_READBACK_BAD_VALUE 16   /* cross_entropy targets, index_add indices: {failed, value} */
#define CT_READBACK_BAD_POSITION 8 /* gather indices: the first bad position */
#define CT_READBACK_RAISED_FLAG 4  /* integer pow and remainder: a flag the operands raised */
#define CT_READBACK_NORM 8         /* list_norm: its double result */
#define CT_READBACK_UNSCALE 4      /* list_unscale: the first non-finite tensor's index */
#define CT_READBACK_LINALG 8       /* linalg: the first bad matrix of the stack */

#define CT_KERNEL_SLOTS(X)                                                                         \
    /* out = op(in); operands out, in. p0, p1: op parameters (clamp bounds). */                    \
    X(unary, REQUIRED, QUEUED, ct_status,                                                          \
      (int device, ct__unary_op op, const ct__ew_args *args, double p0, double p1),                \
      (device, op, args, p0, p1))                                                                  \
    /* out = a op b; operands out, a, b (any dtypes; computed in args->compute_dtype), a or b      \
     * the host scalar `scalar` when scalar.operand says so (ct__ew_scalar, backend_impl.h).       \
     * Integer pow, remainder and floor_divide (ct__ew_int_op_can_fail) check their operands. */   \
    X(binary, REQUIRED, CHECKED(CT_READBACK_RAISED_FLAG), ct_status,                               \
      (int device, ct__binary_op op, const ct__ew_args *args, ct__ew_scalar scalar),               \
      (device, op, args, scalar))                                                                  \
    /* out = cond ? a : b; operands out, cond (bool), a, b (a, b of out's dtype). */               \
    X(where, REQUIRED, QUEUED, ct_status, (int device, const ct__ew_args *args), (device, args))   \
    /* out = in, converting dtypes; operands out, in. */                                           \
    X(copy, REQUIRED, QUEUED, ct_status, (int device, const ct__ew_args *args), (device, args))    \
    /* out = value; operand out. */                                                                \
    X(fill, REQUIRED, QUEUED, ct_status, (int device, const ct__ew_args *args, double value),      \
      (device, args, value))                                                                       \
    /* out[i] = start + i * step, i the C-order linear index of the iteration; operand out. */     \
    X(iota, REQUIRED, QUEUED, ct_status,                                                           \
      (int device, const ct__ew_args *args, double start, double step),                            \
      (device, args, start, step))                                                                 \
    /* Philox draws (random.h gives the stream layout); operand out, contiguous. */                \
    X(random, REQUIRED, QUEUED, ct_status,                                                         \
      (int device, const ct__ew_args *args, ct__random_kind kind, uint64_t seed, uint64_t offset), \
      (device, args, kind, seed, offset))                                                          \
    /* The reduction of ct__reduce_args (backend_impl.h). */                                       \
    X(reduce, REQUIRED, QUEUED, ct_status,                                                         \
      (int device, ct__reduce_op op, const ct__reduce_args *args), (device, op, args))             \
    /* The batched product of ct__matmul_args (backend_impl.h). */                                 \
    X(matmul, REQUIRED, QUEUED, ct_status, (int device, const ct__matmul_args *args),              \
      (device, args))                                                                              \
    /* ct__gather_args (backend_impl.h); an index out of range is an error naming it. */           \
    X(gather, REQUIRED, READBACK(CT_READBACK_BAD_POSITION), ct_status,                             \
      (int device, const ct__gather_args *args), (device, args))                                   \
    /* One fused update of every tensor of the list (SGD, Adam or AdamW;                           \
     * backend/optim_args_impl.h). */                                                              \
    X(optim_step, REQUIRED, QUEUED, ct_status, (int device, const ct__optim_args *args),           \
      (device, args))                                                                              \
    /* *out = sum of |x|^p over every element of the list (p finite), or the largest |x| (p        \
     * infinite), NaN when an element is NaN. */                                                   \
    X(list_norm, REQUIRED, READBACK(CT_READBACK_NORM), ct_status,                                  \
      (int device, const ct__list_args *args, double p, double *out), (device, args, p, out))      \
    /* x *= factor for every element of the list. */                                               \
    X(list_scale, REQUIRED, QUEUED, ct_status,                                                     \
      (int device, const ct__list_args *args, double factor), (device, args, factor))              \
    /* The loss scaler's unscale: every element times inv_scale (in f32 for f32, f16 and bf16),    \
     * and *first_bad the index in the list of the first tensor that held an inf or NaN before     \
     * the multiply, or -1: one pass, one read-back. */                                            \
    X(list_unscale, REQUIRED, READBACK(CT_READBACK_UNSCALE), ct_status,                            \
      (int device, const ct__list_args *args, double inv_scale, int32_t *first_bad),               \
      (device, args, inv_scale, first_bad))                                                        \
    /* The nn family: contracts in backend/norm_args_impl.h. */                                    \
    X(softmax, REQUIRED, QUEUED, ct_status, (int device, const ct__softmax_args *args),            \
      (device, args))                                                                              \
    X(softmax_backward, REQUIRED, QUEUED, ct_status, (int device, const ct__softmax_args *args),   \
      (device, args))                                                                              \
    /* Checks the targets when args->check_targets: one out of range is an error naming it. */     \
    X(cross_entropy, REQUIRED, CHECKED(CT_READBACK_BAD_VALUE), ct_status,                          \
      (int device, const ct__cross_entropy_args *args), (device, args))                            \
    X(cross_entropy_backward, REQUIRED, QUEUED, ct_status,                                         \
      (int device, const ct__cross_entropy_args *args), (device, args))                            \
    X(batch_norm, REQUIRED, QUEUED, ct_status, (int device, const ct__batch_norm_args *args),      \
      (device, args))                                                                              \
    X(batch_norm_backward, REQUIRED, QUEUED, ct_status,                                            \
      (int device, const ct__batch_norm_args *args), (device, args))                               \
    /* Whether batch_norm and batch_norm_backward take args (sizes and dtype set, pointers         \
     * not) with channels_last (x, y, grad_out and grad_x channel-innermost). NULL means never     \
     * (the op layer then hands NCHW copies). Never fails. */                                      \
    X(batch_norm_channels_last, OPTIONAL, QUERY, bool,                                             \
      (int device, const ct__batch_norm_args *args), (device, args))                               \
    X(layer_norm, REQUIRED, QUEUED, ct_status, (int device, const ct__layer_norm_args *args),      \
      (device, args))                                                                              \
    X(layer_norm_backward, REQUIRED, QUEUED, ct_status,                                            \
      (int device, const ct__layer_norm_args *args), (device, args))                               \
    X(dropout, REQUIRED, QUEUED, ct_status, (int device, const ct__dropout_args *args),            \
      (device, args))                                                                              \
    /* Scaled dot-product attention and its backward: ct__attention_args (norm_args_impl.h). */    \
    X(attention, REQUIRED, QUEUED, ct_status, (int device, const ct__attention_args *args),        \
      (device, args))                                                                              \
    X(attention_backward, REQUIRED, QUEUED, ct_status,                                             \
      (int device, const ct__attention_args *args), (device, args))                                \
    /* Checks the indices: one out of range is an error naming it. */                              \
    X(index_add, REQUIRED, READBACK(CT_READBACK_BAD_VALUE), ct_status,                             \
      (int device, const ct__index_add_args *args), (device, args))                                \
    /* Convolution and pooling: arguments in backend/conv_args_impl.h. Bytes of scratch            \
     * conv2d_forward (backward false) or conv2d_backward needs for args (whose pointers may       \
     * still be NULL); the op layer allocates it from the device pool. */                          \
    X(conv2d_workspace, REQUIRED, QUERY, ct_status,                                                \
      (int device, const struct ct__conv2d_args *args, bool backward, size_t *bytes),              \
      (device, args, backward, bytes))                                                             \
    X(conv2d_forward, REQUIRED, QUEUED, ct_status,                                                 \
      (int device, const struct ct__conv2d_args *args), (device, args))                            \
    /* Whether the backend convolves args (geometry and dtype set, pointers not) in its            \
     * args->dtype, f16 or bf16, forward and backward, without the op layer's f32 copies.          \
     * NULL means never. Never fails. */                                                           \
    X(conv2d_native, OPTIONAL, QUERY, bool, (int device, const struct ct__conv2d_args *args),      \
      (device, args))                                                                              \
    /* Whether conv2d_forward and conv2d_backward take args (geometry and dtype set, pointers      \
     * not) with channels_last: x, y, grad_x and the output's gradient in NHWC memory (the         \
     * weight OIHW), both directions. NULL means never (the op layer then hands NCHW copies).      \
     * Never fails. */                                                                             \
    X(conv2d_channels_last, OPTIONAL, QUERY, bool,                                                 \
      (int device, const struct ct__conv2d_args *args), (device, args))                            \
    X(conv2d_backward, REQUIRED, QUEUED, ct_status,                                                \
      (int device, const struct ct__conv2d_args *args), (device, args))                            \
    X(pool2d_forward, REQUIRED, QUEUED, ct_status,                                                 \
      (int device, const struct ct__pool2d_args *args), (device, args))                            \
    X(pool2d_backward, REQUIRED, QUEUED, ct_status,                                                \
      (int device, const struct ct__pool2d_args *args), (device, args))                            \
    /* Whether the backend pools args (geometry, kind and dtype set, pointers not) in its          \
     * args->dtype, f16 or bf16, forward and backward, with the results of the f32 path, so the    \
     * op layer need not copy the operands to f32 and back. NULL means never. Never fails. */      \
    X(pool2d_native, OPTIONAL, QUERY, bool, (int device, const struct ct__pool2d_args *args),      \
      (device, args))                                                                              \
    /* Whether pool2d_forward and pool2d_backward take args (geometry, kind and dtype set,         \
     * pointers not) with channels_last: x, y, indices and the gradients in NHWC memory, both      \
     * directions (a yes for f16 or bf16 holds for f32 too: a backward may sum in f32). NULL       \
     * means never (the op layer then hands NCHW copies). Never fails. */                          \
    X(pool2d_channels_last, OPTIONAL, QUERY, bool,                                                 \
      (int device, const struct ct__pool2d_args *args), (device, args))                            \
    /* Sorting and scanning: ct__sort_args (backend_impl.h). */                                    \
    X(argsort, REQUIRED, QUEUED, ct_status, (int device, const ct__sort_args *args),               \
      (device, args))                                                                              \
    X(cumsum, REQUIRED, QUEUED, ct_status, (int device, const ct__sort_args *args),                \
      (device, args))                                                                              \
    X(cumprod, REQUIRED, QUEUED, ct_status, (int device, const ct__sort_args *args),               \
      (device, args))                                                                              \
    /* The factorization of ct__linalg_args (backend/linalg_args_impl.h) on every matrix of the    \
     * stack; *first_bad = the index of the first matrix the factorization failed on (its op       \
     * says what fails), or -1. */                                                                 \
    X(linalg, OPTIONAL, READBACK(CT_READBACK_LINALG), ct_status,                                   \
      (int device, const struct ct__linalg_args *args, int64_t *first_bad),                        \
      (device, args, first_bad))                                                                   \
    /* Fourier transforms: ct__fft_args (backend_impl.h). */                                       \
    X(fft, REQUIRED, QUEUED, ct_status, (int device, const ct__fft_args *args), (device, args))

/* For the generators: CT_KERNEL_IF_##need(text) keeps text for required rows only, and
 * CT_KERNEL_READBACK_BYTES_##sync the bytes a row reads back (0 for QUEUED and QUERY). */
#define CT_KERNEL_IF_REQUIRED(...) __VA_ARGS__
#define CT_KERNEL_IF_OPTIONAL(...)
#define CT_KERNEL_READBACK_BYTES_QUEUED 0
#define CT_KERNEL_READBACK_BYTES_QUERY 0
#define CT_KERNEL_READBACK_BYTES_READBACK(bytes) bytes
#define CT_KERNEL_READBACK_BYTES_CHECKED(bytes) bytes

#endif

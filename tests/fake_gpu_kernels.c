/* The kernels of the fake GPU with kernels (fake_gpu_plugin.c built with
 * CT_FAKE_GPU_KERNELS): the CPU backend's, from the plugin's own copy of the library, run on
 * the device's stream (fake_gpu_queue.c) as CUDA kernels are. A call copies its arguments
 * (the structs live on the caller's stack, and the lists of the optimiser and clipping
 * kernels in host memory the caller frees: both are copied whole), queues the kernel and
 * returns before it runs; a failure then is the device's sticky error. The kernels whose CUDA
 * counterpart reads a result back to the host (CT_READBACK_* in backend_impl.h) wait for
 * their work and return its status, as the real plugin's do; so do the queries, which run at
 * once. A CPU kernel records its errors in the plugin's copy of the library, on the thread
 * that ran it, where the host never looks, so the message is passed on through the host. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/conv_args_impl.h"
#include "backend/ew_formula_impl.h"
#include "backend/norm_args_impl.h"
#include "core/dtype_impl.h"
#include "fake_gpu_queue.h"

const ct__backend_table *ct__cpu_backend(void);

static const ct__plugin_host *host;
static const ct__kernel_table *cpu;
static ct__kernel_table kernels;

/* A kernel call: the device, its scalars, a copy of its argument struct, and the host
 * arrays the struct points to (optimiser and clipping lists) copied after it. */
typedef struct call {
    int device;
    int op;
    double d0, d1;
    uint64_t u0, u1;
    void *out; /* a read-back's destination (the caller waits) */
    union {
        ct__ew_args ew;
        ct__reduce_args reduce;
        ct__matmul_args matmul;
        ct__gather_args gather;
        ct__optim_args optim;
        ct__list_args list;
        ct__softmax_args softmax;
        ct__cross_entropy_args cross_entropy;
        ct__batch_norm_args batch_norm;
        ct__layer_norm_args layer_norm;
        ct__dropout_args dropout;
        ct__index_add_args index_add;
        ct__conv2d_args conv;
        ct__pool2d_args pool;
        ct__sort_args sort;
    } a;
    _Alignas(max_align_t) char lists[];
} call;

/* A CPU kernel's status, its message taken from the thread that ran it. */
static ct_status finished(ct_status status, char *message, size_t size) {
    if (status != CT_OK) snprintf(message, size, "%s", ct_last_error());
    return status;
}

static call *new_call(int device, size_t lists) {
    call *c = calloc(1, sizeof *c + lists);
    if (!c)
        host->set_error(CT_ERR_OUT_OF_MEMORY, "fake GPU: out of host memory for a kernel");
    else
        c->device = device;
    return c;
}

#define STRIP(...) __VA_ARGS__

/* The kernels queued, once each: X(name, the union's member for *a, (parameters), (the
 * call's fields set from them), (the CPU kernel's arguments from call c)). */
#define QUEUED_KERNELS(X)                                                                          \
    X(unary, ew, (int device, ct__unary_op op, const ct__ew_args *a, double p0, double p1),        \
      (c->op = (int)op, c->d0 = p0, c->d1 = p1),                                                   \
      (c->device, (ct__unary_op)c->op, &c->a.ew, c->d0, c->d1))                                    \
    X(where, ew, (int device, const ct__ew_args *a), (), (c->device, &c->a.ew))                    \
    X(copy, ew, (int device, const ct__ew_args *a), (), (c->device, &c->a.ew))                     \
    X(fill, ew, (int device, const ct__ew_args *a, double value), (c->d0 = value),                 \
      (c->device, &c->a.ew, c->d0))                                                                \
    X(iota, ew, (int device, const ct__ew_args *a, double start, double step),                     \
      (c->d0 = start, c->d1 = step), (c->device, &c->a.ew, c->d0, c->d1))                          \
    X(random, ew,                                                                                  \
      (int device, const ct__ew_args *a, ct__random_kind kind, uint64_t seed, uint64_t offset),    \
      (c->op = (int)kind, c->u0 = seed, c->u1 = offset),                                           \
      (c->device, &c->a.ew, (ct__random_kind)c->op, c->u0, c->u1))                                 \
    X(reduce, reduce, (int device, ct__reduce_op op, const ct__reduce_args *a), (c->op = (int)op), \
      (c->device, (ct__reduce_op)c->op, &c->a.reduce))                                             \
    X(matmul, matmul, (int device, const ct__matmul_args *a), (), (c->device, &c->a.matmul))       \
    X(softmax, softmax, (int device, const ct__softmax_args *a), (), (c->device, &c->a.softmax))   \
    X(softmax_backward, softmax, (int device, const ct__softmax_args *a), (),                      \
      (c->device, &c->a.softmax))                                                                  \
    X(cross_entropy_backward, cross_entropy, (int device, const ct__cross_entropy_args *a), (),    \
      (c->device, &c->a.cross_entropy))                                                            \
    X(batch_norm, batch_norm, (int device, const ct__batch_norm_args *a), (),                      \
      (c->device, &c->a.batch_norm))                                                               \
    X(batch_norm_backward, batch_norm, (int device, const ct__batch_norm_args *a), (),             \
      (c->device, &c->a.batch_norm))                                                               \
    X(layer_norm, layer_norm, (int device, const ct__layer_norm_args *a), (),                      \
      (c->device, &c->a.layer_norm))                                                               \
    X(layer_norm_backward, layer_norm, (int device, const ct__layer_norm_args *a), (),             \
      (c->device, &c->a.layer_norm))                                                               \
    X(dropout, dropout, (int device, const ct__dropout_args *a), (), (c->device, &c->a.dropout))   \
    X(conv2d_forward, conv, (int device, const struct ct__conv2d_args *a), (),                     \
      (c->device, &c->a.conv))                                                                     \
    X(conv2d_backward, conv, (int device, const struct ct__conv2d_args *a), (),                    \
      (c->device, &c->a.conv))                                                                     \
    X(pool2d_forward, pool, (int device, const struct ct__pool2d_args *a), (),                     \
      (c->device, &c->a.pool))                                                                     \
    X(pool2d_backward, pool, (int device, const struct ct__pool2d_args *a), (),                    \
      (c->device, &c->a.pool))                                                                     \
    X(argsort, sort, (int device, const ct__sort_args *a), (), (c->device, &c->a.sort))            \
    X(cumsum, sort, (int device, const ct__sort_args *a), (), (c->device, &c->a.sort))

/* The kernels that read a result back, waited for: X(name, member, (parameters), (fields),
 * (arguments)) as above. */
#define WAITED_KERNELS(X)                                                                          \
    X(gather, gather, (int device, const ct__gather_args *a), (), (c->device, &c->a.gather))       \
    X(list_norm, list, (int device, const ct__list_args *a, double p, double *out),                \
      (c->d0 = p, c->out = out), (c->device, &c->a.list, c->d0, (double *)c->out))                 \
    X(list_unscale, list, (int device, const ct__list_args *a, double inv, int32_t *bad),          \
      (c->d0 = inv, c->out = bad), (c->device, &c->a.list, c->d0, (int32_t *)c->out))              \
    X(cross_entropy, cross_entropy, (int device, const ct__cross_entropy_args *a), (),             \
      (c->device, &c->a.cross_entropy))                                                            \
    X(index_add, index_add, (int device, const ct__index_add_args *a), (),                         \
      (c->device, &c->a.index_add))

#define RUN(name, member, parameters, fields, arguments)                                           \
    static ct_status run_##name(void *payload, char *message, size_t size) {                       \
        call *c = payload;                                                                         \
        return finished(cpu->name arguments, message, size);                                       \
    }
QUEUED_KERNELS(RUN)
WAITED_KERNELS(RUN)

#define QUEUE(name, member, parameters, fields, arguments)                                         \
    static ct_status queued_##name parameters {                                                    \
        call *c = new_call(device, 0);                                                             \
        if (!c) return CT_ERR_OUT_OF_MEMORY;                                                       \
        c->a.member = *a;                                                                          \
        STRIP fields;                                                                              \
        return fake_queue_submit(device, #name, run_##name, c, 0, NULL);                           \
    }
QUEUED_KERNELS(QUEUE)

#define WAIT(name, member, parameters, fields, arguments)                                          \
    static ct_status waited_##name parameters {                                                    \
        call on_stack = {.device = device}, *c = &on_stack;                                        \
        c->a.member = *a;                                                                          \
        STRIP fields;                                                                              \
        return fake_queue_run(device, #name, run_##name, c);                                       \
    }
WAITED_KERNELS(WAIT)

/* Integer pow, remainder and floor_divide read their operands' check back: waited for. */
static ct_status run_binary(void *payload, char *message, size_t size) {
    call *c = payload;
    return finished(cpu->binary(c->device, (ct__binary_op)c->op, &c->a.ew), message, size);
}

static ct_status binary(int device, ct__binary_op op, const ct__ew_args *a) {
    if (ct__ew_int_op_can_fail(op) && !ct__is_float(a->compute_dtype)) {
        call on_stack = {.device = device, .op = (int)op, .a.ew = *a};
        return fake_queue_run(device, "binary", run_binary, &on_stack);
    }
    call *c = new_call(device, 0);
    if (!c) return CT_ERR_OUT_OF_MEMORY;
    c->op = (int)op;
    c->a.ew = *a;
    return fake_queue_submit(device, "binary", run_binary, c, 0, NULL);
}

/* The list kernels that return nothing: the list copied after the call. */
static ct_status run_optim_step(void *payload, char *message, size_t size) {
    call *c = payload;
    return finished(cpu->optim_step(c->device, &c->a.optim), message, size);
}

static ct_status optim_step(int device, const ct__optim_args *a) {
    size_t bytes = (size_t)a->count * sizeof *a->tensors;
    call *c = new_call(device, bytes);
    if (!c) return CT_ERR_OUT_OF_MEMORY;
    c->a.optim = *a;
    if (bytes) memcpy(c->lists, a->tensors, bytes);
    c->a.optim.tensors = (const ct__optim_tensor *)c->lists;
    return fake_queue_submit(device, "optim_step", run_optim_step, c, bytes, NULL);
}

static ct_status run_list_scale(void *payload, char *message, size_t size) {
    call *c = payload;
    return finished(cpu->list_scale(c->device, &c->a.list, c->d0), message, size);
}

static ct_status list_scale(int device, const ct__list_args *a, double factor) {
    size_t bytes = (size_t)a->count * sizeof *a->tensors;
    call *c = new_call(device, bytes);
    if (!c) return CT_ERR_OUT_OF_MEMORY;
    c->a.list = *a;
    c->d0 = factor;
    if (bytes) memcpy(c->lists, a->tensors, bytes);
    c->a.list.tensors = (const ct__list_tensor *)c->lists;
    return fake_queue_submit(device, "list_scale", run_list_scale, c, bytes, NULL);
}

/* A query of the host's, answered at once; its error passed on. */
static ct_status conv2d_workspace(int device, const struct ct__conv2d_args *a, bool backward,
                                  size_t *bytes) {
    ct_status status = cpu->conv2d_workspace(device, a, backward, bytes);
    return status == CT_OK ? CT_OK : host->set_error(status, ct_last_error());
}

/* Whether an f16 or bf16 convolution runs as it is: for f16, "no" with an error, as the CUDA
 * plugin answers when cuDNN has no plan for the geometry (the op layer then computes in f32
 * and must leave the caller's last error as it was); the CPU's answer otherwise. */
static bool conv2d_native(int device, const struct ct__conv2d_args *a) {
    if (a->dtype != CT_F16) return cpu->conv2d_native(device, a);
    host->set_error(CT_ERR_BACKEND, "fake GPU: no f16 convolution plan (as cuDNN may say)");
    return false;
}

const ct__kernel_table *fake_gpu_kernels(const ct__plugin_host *the_host) {
    host = the_host;
    cpu = ct__cpu_backend()->kernels;
    kernels = *cpu; /* pool2d_native: the CPU's answer, at once */
#define INSTALL_QUEUED(name, member, parameters, fields, arguments) kernels.name = queued_##name;
#define INSTALL_WAITED(name, member, parameters, fields, arguments) kernels.name = waited_##name;
    QUEUED_KERNELS(INSTALL_QUEUED)
    WAITED_KERNELS(INSTALL_WAITED)
    kernels.binary = binary;
    kernels.optim_step = optim_step;
    kernels.list_scale = list_scale;
    kernels.conv2d_workspace = conv2d_workspace;
    kernels.conv2d_native = conv2d_native;
    /* The CUDA plugin pools f16 and bf16 in f32 (it has no pool2d_native): so does this GPU. */
    kernels.pool2d_native = NULL;
    return &kernels;
}

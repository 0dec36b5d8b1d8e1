/* The kernels of the fake GPU with kernels (fake_gpu_plugin.c built with
 * CT_FAKE_GPU_KERNELS): the CPU backend's, from the plugin's own copy of the library, run on
 * the device's stream (fake_gpu_queue.c) as CUDA kernels are. The wrappers are generated from
 * the kernel slots (backend/kernel_slots.h), each as its row's sync column says: a QUEUED
 * call copies its arguments (the structs live on the caller's stack, and the lists of the
 * optimiser and clipping kernels in host memory the caller frees: both are copied whole; the
 * binary kernel's scalar operand is a parameter by value, kept in the call as the others),
 * queues the kernel and returns before it runs, a failure then being the device's sticky
 * error; a READBACK call waits for its work and returns its status, as the real plugin's
 * kernels that read a result back do; a QUERY is answered at once. A CPU kernel records its
 * errors in the plugin's copy of the library, on the thread that ran it, where the host never
 * looks, so the message is passed on through the host. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/conv_args_impl.h"
#include "backend/ew_formula_impl.h"
#include "backend/norm_args_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"
#include "fake_gpu_queue.h"

static const ct__plugin_host *host;
static const ct__kernel_table *cpu;
static ct__kernel_table kernels;

#define STRIP(...) __VA_ARGS__

/* FOR_EACH(m, sep, a, b, ...): m(a) sep() m(b) ..., for up to 6 items. */
#define FOR_EACH_1(m, sep, x) m(x)
#define FOR_EACH_2(m, sep, x, ...) m(x) sep() FOR_EACH_1(m, sep, __VA_ARGS__)
#define FOR_EACH_3(m, sep, x, ...) m(x) sep() FOR_EACH_2(m, sep, __VA_ARGS__)
#define FOR_EACH_4(m, sep, x, ...) m(x) sep() FOR_EACH_3(m, sep, __VA_ARGS__)
#define FOR_EACH_5(m, sep, x, ...) m(x) sep() FOR_EACH_4(m, sep, __VA_ARGS__)
#define FOR_EACH_6(m, sep, x, ...) m(x) sep() FOR_EACH_5(m, sep, __VA_ARGS__)
#define FOR_EACH_PICK(_1, _2, _3, _4, _5, _6, n, ...) n
#define FOR_EACH(m, sep, ...)                                                                      \
    FOR_EACH_PICK(__VA_ARGS__, FOR_EACH_6, FOR_EACH_5, FOR_EACH_4, FOR_EACH_3, FOR_EACH_2,         \
                  FOR_EACH_1, none)                                                                \
    (m, sep, __VA_ARGS__)
#define COMMA() ,
#define NOTHING()
#define FIELD(parameter) parameter;
#define FROM_CALL(name) p->name

/* Each slot's parameters as a struct, which a call keeps until its work runs. */
#define PARAMETERS(name, need, sync, ret, parameters, arguments)                                   \
    struct parameters_##name {                                                                     \
        FOR_EACH(FIELD, NOTHING, STRIP parameters)                                                 \
    };
CT_KERNEL_SLOTS(PARAMETERS)

/* A kernel call: its parameters, then (queued) the copy of *args and of the host lists it
 * points to, which the parameters' args then points to. */
typedef struct call {
    union {
#define MEMBER(name, need, sync, ret, parameters, arguments) struct parameters_##name name;
        CT_KERNEL_SLOTS(MEMBER)
    } p;
    _Alignas(max_align_t) char copy[];
} call;

/* The host lists an argument struct points to (the optimiser and clipping kernels'), which a
 * queued call copies with it; every other struct points to device memory only. */
static size_t no_lists(const void *a) { return 0; }
static size_t optim_lists(const ct__optim_args *a) { return (size_t)a->count * sizeof *a->tensors; }
static size_t list_lists(const ct__list_args *a) { return (size_t)a->count * sizeof *a->tensors; }
#define LIST_BYTES(a)                                                                              \
    _Generic((a), const ct__optim_args *: optim_lists, const ct__list_args *: list_lists,          \
             default: no_lists)(a)

/* Copies *a (size bytes) to `to`, its lists after it at `lists`; returns the copy. */
static const void *copy_plain(const void *a, size_t size, char *to, char *lists) {
    return memcpy(to, a, size);
}
static const void *copy_optim(const ct__optim_args *a, size_t size, char *to, char *lists) {
    ct__optim_args *copy = memcpy(to, a, size);
    if (a->count) copy->tensors = memcpy(lists, a->tensors, optim_lists(a));
    return copy;
}
static const void *copy_list(const ct__list_args *a, size_t size, char *to, char *lists) {
    ct__list_args *copy = memcpy(to, a, size);
    if (a->count) copy->tensors = memcpy(lists, a->tensors, list_lists(a));
    return copy;
}
#define COPY_ARGS(a, to, lists)                                                                    \
    _Generic((a), const ct__optim_args *: copy_optim, const ct__list_args *: copy_list,            \
             default: copy_plain)(a, sizeof *(a), to, lists)

/* The struct's bytes rounded up so that the lists after it stay aligned. */
#define ALIGNED(size)                                                                              \
    (((size) + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) * _Alignof(max_align_t))

/* A CPU kernel's status, its message taken from the thread that ran it. */
static ct_status finished(ct_status status, char *message, size_t size) {
    if (status != CT_OK) snprintf(message, size, "%s", ct_last_error());
    return status;
}

/* A query's answer, a failure's message passed on through the host. */
static ct_status answered_status(ct_status status) {
    return status == CT_OK ? CT_OK : host->set_error(status, ct_last_error());
}
static bool answered_bool(bool answer) { return answer; }
#define ANSWERED(result) _Generic((result), bool : answered_bool, default : answered_status)(result)

static call *new_call(size_t copy) {
    call *c = calloc(1, sizeof *c + copy);
    if (!c) host->set_error(CT_ERR_OUT_OF_MEMORY, "fake GPU: out of host memory for a kernel");
    return c;
}

/* The CPU's kernel for a row: its function for a required slot (so that a slot the CPU lacks
 * fails this plugin's link, naming it), its table's for an optional one. */
#define CPU_REQUIRED(name) ct__cpu_##name
#define CPU_OPTIONAL(name) cpu->name

/* Per row, by its sync column: run_NAME runs a call on the stream, queued_NAME queues it and
 * returns, waited_NAME queues it and waits, query_NAME answers at once; a CHECKED row's
 * checked_NAME (written below) chooses between queued_NAME and waited_NAME. */
#define RUN(name, need, arguments)                                                                 \
    static ct_status run_##name(void *payload, char *message, size_t size) {                       \
        const struct parameters_##name *p = &((call *)payload)->p.name;                            \
        return finished(CPU_##need(name)(FOR_EACH(FROM_CALL, COMMA, STRIP arguments)), message,    \
                        size);                                                                     \
    }
#define QUEUE(name, parameters, arguments)                                                         \
    static ct_status queued_##name parameters {                                                    \
        size_t lists = LIST_BYTES(args), at = ALIGNED(sizeof *args);                               \
        call *c = new_call(at + lists);                                                            \
        if (!c) return CT_ERR_OUT_OF_MEMORY;                                                       \
        c->p.name = (struct parameters_##name){STRIP arguments};                                   \
        c->p.name.args = COPY_ARGS(args, c->copy, c->copy + at);                                   \
        return fake_queue_submit(device, #name, run_##name, c, lists, NULL);                       \
    }
#define WAIT(name, parameters, arguments)                                                          \
    static ct_status waited_##name parameters {                                                    \
        call c = {.p.name = {STRIP arguments}};                                                    \
        return fake_queue_run(device, #name, run_##name, &c);                                      \
    }
#define WRAP_QUEUED(name, need, ret, parameters, arguments)                                        \
    RUN(name, need, arguments) QUEUE(name, parameters, arguments)
#define WRAP_READBACK(bytes) WRAP_WAITED
#define WRAP_WAITED(name, need, ret, parameters, arguments)                                        \
    RUN(name, need, arguments) WAIT(name, parameters, arguments)
#define WRAP_CHECKED(bytes) WRAP_BOTH
#define WRAP_BOTH(name, need, ret, parameters, arguments)                                          \
    RUN(name, need, arguments) QUEUE(name, parameters, arguments) WAIT(name, parameters, arguments)
#define WRAP_QUERY(name, need, ret, parameters, arguments)                                         \
    static ret query_##name parameters { return ANSWERED(CPU_##need(name) arguments); }
#define WRAP(name, need, sync, ret, parameters, arguments)                                         \
    WRAP_##sync(name, need, ret, parameters, arguments)
CT_KERNEL_SLOTS(WRAP)

/* Integer pow, remainder and floor_divide read their operands' check back: waited for. */
static ct_status checked_binary(int device, ct__binary_op op, const ct__ew_args *args,
                                ct__ew_scalar scalar) {
    if (ct__ew_int_op_can_fail(op) && !ct__is_float(args->compute_dtype))
        return waited_binary(device, op, args, scalar);
    return queued_binary(device, op, args, scalar);
}

/* Cross-entropy reads its check of the targets back only when asked to (unchecked_targets). */
static ct_status checked_cross_entropy(int device, const ct__cross_entropy_args *args) {
    return args->check_targets ? waited_cross_entropy(device, args)
                               : queued_cross_entropy(device, args);
}

/* Whether an f16 or bf16 convolution runs as it is: for f16, "no" with an error, as the CUDA
 * plugin answers when cuDNN has no plan for the geometry (the op layer then computes in f32
 * and must leave the caller's last error as it was); the CPU's answer otherwise. */
static bool conv2d_native(int device, const struct ct__conv2d_args *args) {
    if (args->dtype != CT_F16) return query_conv2d_native(device, args);
    host->set_error(CT_ERR_BACKEND, "fake GPU: no f16 convolution plan (as cuDNN may say)");
    return false;
}

/* The wrapper of each row (an optional row's only where the CPU has the slot). */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define KIND_QUEUED queued_
#define KIND_READBACK(bytes) waited_
#define KIND_CHECKED(bytes) checked_
#define KIND_QUERY query_
#define INSTALL_REQUIRED(name, kind) kernels.name = CAT(kind, name);
#define INSTALL_OPTIONAL(name, kind) kernels.name = cpu->name ? CAT(kind, name) : NULL;
#define INSTALL(name, need, sync, ret, parameters, arguments) INSTALL_##need(name, KIND_##sync)

const ct__kernel_table *fake_gpu_kernels(const ct__plugin_host *the_host) {
    host = the_host;
    cpu = ct__cpu_backend()->kernels;
    CT_KERNEL_SLOTS(INSTALL)
    kernels.conv2d_native = conv2d_native;
    /* conv2d_channels_last and batch_norm_channels_last are the CPU's answers, as the CUDA
     * plugin takes channels-last (cuDNN's NHWC convolutions, its strided batch norm): the op
     * layer's native channels-last path for devices is tested here (the convolutions where this
     * build has oneDNN, which the CPU's NHWC kernels need; NCHW copies elsewhere). So is
     * pool2d_channels_last, which the CUDA plugin has not (it pools NCHW copies): the fake GPU
     * covers the op layer's native pooling path for devices. */
    /* The CUDA plugin pools f16 and bf16 in f32 (it has no pool2d_native): so does this GPU. */
    kernels.pool2d_native = NULL;
    return &kernels;
}

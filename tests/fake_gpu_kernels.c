/* The kernels of the fake GPU with kernels (fake_gpu_plugin.c built with
 * CT_FAKE_GPU_KERNELS): the CPU backend's, from the plugin's own copy of the library. A CPU
 * kernel records its errors in that copy, where the host never looks, so the kernels that
 * can fail are wrapped to pass their error on through the host, as the real plugin's do. */
#include "backend/conv_args_impl.h"
#include "backend/plugin_impl.h"

const ct__backend_table *ct__cpu_backend(void);

static const ct__plugin_host *host;
static const ct__kernel_table *cpu;
static ct__kernel_table kernels;

static ct_status passed_on(ct_status status) {
    return status == CT_OK ? CT_OK : host->set_error(status, ct_last_error());
}

/* The kernels that can fail, once each: X(name, (parameters), (arguments)). */
#define FAILING_KERNELS(X)                                                                         \
    X(unary, (int device, ct__unary_op op, const ct__ew_args *a, double p0, double p1),            \
      (device, op, a, p0, p1))                                                                     \
    X(binary, (int device, ct__binary_op op, const ct__ew_args *a), (device, op, a))               \
    X(matmul, (int device, const ct__matmul_args *a), (device, a))                                 \
    X(gather, (int device, const ct__gather_args *a), (device, a))                                 \
    X(optim_step, (int device, const ct__optim_args *a), (device, a))                              \
    X(list_norm, (int device, const ct__list_args *a, double p, double *out), (device, a, p, out)) \
    X(list_scale, (int device, const ct__list_args *a, double factor), (device, a, factor))        \
    X(list_unscale, (int device, const ct__list_args *a, double inv, int32_t *bad),                \
      (device, a, inv, bad))                                                                       \
    X(cross_entropy, (int device, const ct__cross_entropy_args *a), (device, a))                   \
    X(cross_entropy_backward, (int device, const ct__cross_entropy_args *a), (device, a))          \
    X(index_add, (int device, const ct__index_add_args *a), (device, a))                           \
    X(conv2d_workspace,                                                                            \
      (int device, const struct ct__conv2d_args *a, bool backward, size_t *bytes),                 \
      (device, a, backward, bytes))                                                                \
    X(conv2d_forward, (int device, const struct ct__conv2d_args *a), (device, a))                  \
    X(conv2d_backward, (int device, const struct ct__conv2d_args *a), (device, a))

/* A kernel of the CPU's, its error passed on. */
#define PASSED_ON(name, parameters, arguments)                                                     \
    static ct_status name parameters { return passed_on(cpu->name arguments); }
FAILING_KERNELS(PASSED_ON)

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
    kernels = *cpu;
#define INSTALL(name, parameters, arguments) kernels.name = name;
    FAILING_KERNELS(INSTALL)
    kernels.conv2d_native = conv2d_native;
    /* The CUDA plugin pools f16 and bf16 in f32 (it has no pool2d_native): so does this GPU. */
    kernels.pool2d_native = NULL;
    return &kernels;
}

/* The kernels of the fake GPU with kernels (fake_gpu_plugin.c built with
 * CT_FAKE_GPU_KERNELS): the CPU backend's, from the plugin's own copy of the library. A CPU
 * kernel records its errors in that copy, where the host never looks, so the kernels that
 * can fail are wrapped to pass their error on through the host, as the real plugin's do. */
#include "backend/plugin_impl.h"

const ct_backend *ct__cpu_backend(void);

static const ct_plugin_host *host;
static const ct_kernels *cpu;
static ct_kernels kernels;

static ct_status passed_on(ct_status status) {
    return status == CT_OK ? CT_OK : host->set_error(status, ct_last_error());
}

static ct_status unary(int device, ct_unary_op op, const ct_ew_args *args, double p0, double p1) {
    return passed_on(cpu->unary(device, op, args, p0, p1));
}
static ct_status binary(int device, ct_binary_op op, const ct_ew_args *args) {
    return passed_on(cpu->binary(device, op, args));
}
static ct_status matmul(int device, const ct_matmul_args *args) {
    return passed_on(cpu->matmul(device, args));
}
static ct_status gather(int device, const ct_gather_args *args) {
    return passed_on(cpu->gather(device, args));
}
static ct_status optim_step(int device, const ct_optim_args *args) {
    return passed_on(cpu->optim_step(device, args));
}
static ct_status list_norm(int device, const ct_list_args *args, double p, double *out) {
    return passed_on(cpu->list_norm(device, args, p, out));
}
static ct_status list_scale(int device, const ct_list_args *args, double factor) {
    return passed_on(cpu->list_scale(device, args, factor));
}
static ct_status cross_entropy(int device, const ct_cross_entropy_args *args) {
    return passed_on(cpu->cross_entropy(device, args));
}
static ct_status cross_entropy_backward(int device, const ct_cross_entropy_args *args) {
    return passed_on(cpu->cross_entropy_backward(device, args));
}
static ct_status index_add(int device, const ct_index_add_args *args) {
    return passed_on(cpu->index_add(device, args));
}
static ct_status conv2d_workspace(int device, const struct ct_conv2d_args *args, bool backward,
                                  size_t *bytes) {
    return passed_on(cpu->conv2d_workspace(device, args, backward, bytes));
}
static ct_status conv2d_forward(int device, const struct ct_conv2d_args *args) {
    return passed_on(cpu->conv2d_forward(device, args));
}
static ct_status conv2d_backward(int device, const struct ct_conv2d_args *args) {
    return passed_on(cpu->conv2d_backward(device, args));
}

const ct_kernels *fake_gpu_kernels(const ct_plugin_host *the_host) {
    host = the_host;
    cpu = ct__cpu_backend()->kernels;
    kernels = *cpu;
    kernels.unary = unary;
    kernels.binary = binary;
    kernels.matmul = matmul;
    kernels.gather = gather;
    kernels.optim_step = optim_step;
    kernels.list_norm = list_norm;
    kernels.list_scale = list_scale;
    kernels.cross_entropy = cross_entropy;
    kernels.cross_entropy_backward = cross_entropy_backward;
    kernels.index_add = index_add;
    kernels.conv2d_workspace = conv2d_workspace;
    kernels.conv2d_forward = conv2d_forward;
    kernels.conv2d_backward = conv2d_backward;
    return &kernels;
}

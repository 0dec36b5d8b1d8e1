/* The profiler's kernel tables (core/profile_impl.h): while a thread profiles, the dispatch
 * hands it a table per device type whose kernels call the backend's and add their time to the
 * profile under the slot's kind; on a device backend each kernel is then waited for, so that
 * its device time is its own. QUERY slots (answered on the host, no device work) are not
 * counted. The tables are made from the rows of backend/kernel_slots.h. */
#include <pthread.h>

#include "backend/dispatch_impl.h"
#include "core/profile_impl.h"

/* The kind of each slot's work. */
static ct_profile_kind slot_kind(ct__kernel_slot slot) {
    switch (slot) {
    case CT_SLOT_conv2d_forward:
    case CT_SLOT_conv2d_backward: return CT_PROFILE_CONV;
    case CT_SLOT_matmul: return CT_PROFILE_MATMUL;
    case CT_SLOT_batch_norm:
    case CT_SLOT_batch_norm_backward:
    case CT_SLOT_layer_norm:
    case CT_SLOT_layer_norm_backward: return CT_PROFILE_NORM;
    case CT_SLOT_pool2d_forward:
    case CT_SLOT_pool2d_backward: return CT_PROFILE_POOL;
    case CT_SLOT_reduce: return CT_PROFILE_REDUCTION;
    case CT_SLOT_softmax:
    case CT_SLOT_softmax_backward:
    case CT_SLOT_cross_entropy:
    case CT_SLOT_cross_entropy_backward: return CT_PROFILE_LOSS;
    case CT_SLOT_optim_step:
    case CT_SLOT_list_norm:
    case CT_SLOT_list_scale:
    case CT_SLOT_list_unscale: return CT_PROFILE_UPDATE;
    case CT_SLOT_copy: return CT_PROFILE_COPY;
    case CT_SLOT_gather:
    case CT_SLOT_index_add: return CT_PROFILE_INDEX;
    case CT_SLOT_argsort:
    case CT_SLOT_cumsum:
    case CT_SLOT_cumprod: return CT_PROFILE_SORT;
    default: return CT_PROFILE_ELEMENTWISE;
    }
}

/* The backends' own tables, per device type, once a profiled table was asked for. */
static const ct__kernel_table *real[CT__DEVICE_TYPES];

/* After a timed kernel of `type` that began at `start` returned `status`: on a device, wait
 * for it; add its time. The kernel's failure, else the wait's. */
static ct_status finish(ct_device_type type, int device, ct__kernel_slot slot, double start,
                        ct_status status) {
    double returned = ct__profile_now(), done = returned;
    bool on_device = type != CT_DEVICE_CPU;
    if (on_device && status == CT_OK) {
        status = ct__backend(type)->synchronize(device);
        done = ct__profile_now();
    }
    ct__profile_add(slot_kind(slot), returned - start, done - start, on_device);
    return status;
}

/* Whether a row's kernels are timed: those that run work (not QUERY). */
#define TIMED_QUEUED 1
#define TIMED_QUERY 0
#define TIMED_READBACK(bytes) 1
#define TIMED_CHECKED(bytes) 1

#define WRAP_(type, name, sync, ret, parameters, arguments)                                        \
    static ret type##_##name parameters {                                                          \
        if (!TIMED_##sync || !ct__profile_here()) return real[type]->name arguments;               \
        double began_ = ct__profile_now();                                                         \
        ret result_ = real[type]->name arguments;                                                  \
        return (ret)finish(type, device, CT_SLOT_##name, began_, (ct_status)result_);              \
    }
#define WRAP_CPU_(name, need, sync, ret, parameters, arguments)                                    \
    WRAP_(CT_DEVICE_CPU, name, sync, ret, parameters, arguments)
#define WRAP_CUDA_(name, need, sync, ret, parameters, arguments)                                   \
    WRAP_(CT_DEVICE_CUDA, name, sync, ret, parameters, arguments)
CT_KERNEL_SLOTS(WRAP_CPU_)
CT_KERNEL_SLOTS(WRAP_CUDA_)

static ct__kernel_table tables[CT__DEVICE_TYPES];

/* A type's table: the wrapper where the backend has the kernel (an optional slot it lacks
 * stays NULL, as in its own table). */
static void make_table(ct_device_type type, const ct__kernel_table *own) {
    ct__kernel_table *t = &tables[type];
#define INSTALL_(prefix, name) t->name = own->name ? prefix##_##name : NULL;
#define INSTALL_CPU_(name, need, sync, ret, parameters, arguments) INSTALL_(CT_DEVICE_CPU, name)
#define INSTALL_CUDA_(name, need, sync, ret, parameters, arguments) INSTALL_(CT_DEVICE_CUDA, name)
    if (type == CT_DEVICE_CPU) {
        CT_KERNEL_SLOTS(INSTALL_CPU_)
    } else {
        CT_KERNEL_SLOTS(INSTALL_CUDA_)
    }
#undef INSTALL_CPU_
#undef INSTALL_CUDA_
#undef INSTALL_
    real[type] = own;
}

const ct__kernel_table *ct__profile_kernels(ct_device_type type, const ct__kernel_table *own) {
    /* The types with wrappers above (a new device type adds its WRAP and INSTALL lines). */
    if (!ct__profile_here() || (type != CT_DEVICE_CPU && type != CT_DEVICE_CUDA)) return own;
    /* A backend's table never changes once found: the first one seen stays. */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    if (!real[type]) make_table(type, own);
    bool same = real[type] == own;
    pthread_mutex_unlock(&lock);
    return same ? &tables[type] : own;
}

/* The op layer's shared front door (see op_impl.h). */
#include <stdio.h>
#include <string.h>

#include "core/transfer_impl.h"
#include "ops/op_impl.h"

static bool is_scalar_on_cpu(const ct_tensor *t) {
    return t->ndim == 0 && t->storage->device.type == CT_DEVICE_CPU;
}

bool ct__refuse_complex(const char *op, int n, const ct_tensor *const *args) {
    for (int i = 0; i < n; i++)
        if (ct__is_complex(args[i]->dtype)) {
            ct__error(CT_ERR_DTYPE,
                      "%s: not defined for complex tensors (argument %d is %s); take a real "
                      "tensor from it first with ct_real, ct_imag or ct_abs",
                      op, i + 1, ct_dtype_name(args[i]->dtype));
            return true;
        }
    return false;
}

bool ct__check_args(const char *op, int n, const ct_tensor *const *args, ct_device *device) {
    return ct__check_args_complex(op, n, args, device) && !ct__refuse_complex(op, n, args);
}

bool ct__check_args_complex(const char *op, int n, const ct_tensor *const *args,
                            ct_device *device) {
    if (n == 2 && args[0] && args[1] &&
        ct__same_device(args[0]->storage->device, args[1]->storage->device)) {
        *device = args[0]->storage->device; /* the common case: both on one device */
        return true;
    }
    for (int i = 0; i < n; i++)
        if (!args[i]) return ct__null_arg(op, i + 1), false;
    int anchor = 0; /* the first argument that is not a CPU scalar decides the device */
    for (int i = 0; i < n; i++)
        if (!is_scalar_on_cpu(args[i])) {
            anchor = i;
            break;
        }
    ct_device d = args[anchor]->storage->device;
    for (int i = 0; i < n; i++) {
        ct_device di = args[i]->storage->device;
        if (ct__same_device(di, d) || is_scalar_on_cpu(args[i])) continue;
        char a[32], b[32];
        ct_device_str(di, a, sizeof a);
        ct_device_str(d, b, sizeof b);
        ct__error(CT_ERR_DEVICE_MISMATCH,
                  "%s: argument %d is on %s, argument %d on %s; move both to one device with "
                  "ct_to()",
                  op, i + 1, a, anchor + 1, b);
        return false;
    }
    *device = d;
    return true;
}

static void format_shape(char *buf, size_t size, int ndim, const int64_t *shape) {
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < ndim && used < size; i++)
        used +=
            (size_t)snprintf(buf + used, size - used, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (used < size) snprintf(buf + used, size - used, ndim == 1 ? ",)" : ")");
}

ct_status ct__broadcast_shapes(const char *op, int n, const ct_tensor *const *args, int *ndim,
                               int64_t *shape) {
    int out_ndim = 0;
    for (int i = 0; i < n; i++)
        if (args[i]->ndim > out_ndim) out_ndim = args[i]->ndim;
    for (int d = 0; d < out_ndim; d++) shape[d] = 1;
    for (int i = 0; i < n; i++) {
        const ct_tensor *t = args[i];
        for (int d = 0; d < t->ndim; d++) {
            int od = out_ndim - t->ndim + d;
            int64_t size = t->shape[d];
            if (size == shape[od] || size == 1) continue;
            if (shape[od] == 1) {
                shape[od] = size;
                continue;
            }
            char sa[CT__SHAPE_TEXT_SIZE], sb[CT__SHAPE_TEXT_SIZE];
            format_shape(sa, sizeof sa, t->ndim, t->shape);
            format_shape(sb, sizeof sb, args[0]->ndim, args[0]->shape);
            return ct__error(CT_ERR_SHAPE,
                             "%s: shapes %s (argument %d) and %s (argument 1) do not broadcast: "
                             "axis %d has size %lld against %lld; sizes must match or be 1",
                             op, sa, i + 1, sb, od - out_ndim, (long long)size,
                             (long long)shape[od]);
        }
    }
    *ndim = out_ndim;
    return CT_OK;
}

ct_status ct__normalize_axis(const char *op, int axis, int ndim, int *out) {
    int a = axis < 0 ? axis + ndim : axis;
    if (ndim == 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: axis %d is out of range for a tensor of rank 0 (it has no axes)", op,
                         axis);
    if (a < 0 || a >= ndim)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: axis %d is out of range for a tensor of rank %d (use -%d to %d)", op,
                         axis, ndim, ndim, ndim - 1);
    *out = a;
    return CT_OK;
}

void ct__ew_init(ct__ew_args *args, int ndim, const int64_t *shape) {
    /* No memset: the struct is large and this runs on every op; kernels read only the
     * fields set here and by ct__ew_add. */
    args->nops = 0;
    args->compute_dtype = CT_F32;
    args->ndim = ndim;
    args->numel = 1;
    for (int d = 0; d < ndim; d++) {
        args->shape[d] = shape[d];
        args->numel *= shape[d];
    }
}

void ct__ew_add(ct__ew_args *args, const ct_tensor *t) {
    int k = args->nops++;
    args->data[k] = ct__data(t);
    args->dtype[k] = t->dtype;
    for (int d = 0; d < args->ndim; d++) {
        int td = d - (args->ndim - t->ndim);
        args->strides[k][d] = td < 0 || t->shape[td] == 1 ? 0 : t->strides[td];
    }
}

bool ct__ew_flat(ct__ew_args *args, int n, const ct_tensor *const *tensors) {
    const ct_tensor *first = tensors[0];
    bool contiguous = true;
    for (int i = 0; i < n; i++) {
        const ct_tensor *t = tensors[i];
        if (!ct__same_shape(t, first)) return false;
        contiguous = contiguous && t->contiguous;
    }
    for (int i = 1; i < n && !contiguous; i++)
        if (!ct__same_dense_layout(first, tensors[i])) return false;
    args->nops = n;
    args->compute_dtype = CT_F32;
    args->ndim = 1;
    args->numel = first->numel;
    args->shape[0] = first->numel;
    for (int i = 0; i < n; i++) {
        args->data[i] = ct__data(tensors[i]);
        args->dtype[i] = tensors[i]->dtype;
        args->strides[i][0] = 1;
    }
    return true;
}

void ct__ew_add_strided(ct__ew_args *args, char *data, ct_dtype dtype, const int64_t *strides) {
    int k = args->nops++;
    args->data[k] = data;
    args->dtype[k] = dtype;
    for (int d = 0; d < args->ndim; d++) args->strides[k][d] = strides ? strides[d] : 0;
}

static void ew_move_axis(ct__ew_args *args, int to, int from) {
    args->shape[to] = args->shape[from];
    for (int k = 0; k < args->nops; k++) args->strides[k][to] = args->strides[k][from];
}

/* Merge neighbouring axes when, for every operand, a step of the outer axis equals a full
 * sweep of the inner one; drop size-1 axes. Contiguous operands end as one axis. */
void ct__ew_coalesce(ct__ew_args *args) {
    if (args->ndim <= 1) return;
    int out = 0;
    for (int d = 1; d < args->ndim; d++) {
        if (args->shape[out] == 1) {
            ew_move_axis(args, out, d);
            continue;
        }
        if (args->shape[d] == 1) continue;
        bool mergeable = true;
        for (int k = 0; k < args->nops && mergeable; k++)
            mergeable = args->strides[k][out] == args->strides[k][d] * args->shape[d];
        if (mergeable) {
            args->shape[out] *= args->shape[d];
            for (int k = 0; k < args->nops; k++) args->strides[k][out] = args->strides[k][d];
        } else {
            ew_move_axis(args, ++out, d);
        }
    }
    args->ndim = out + 1;
}

ct_tensor *ct__operand_on(const ct_tensor *t, ct_device device, const char *op) {
    if (ct__same_device(t->storage->device, device)) return ct__new_ref(t);
    ct_tensor *moved = ct__tensor_new(device, t->dtype, 0, NULL);
    if (!moved) return NULL;
    if (ct__transfer(&device, moved->storage->data, &t->storage->device, ct__data(t),
                     ct__dtype_size(t->dtype), true, op) != CT_OK) {
        ct_release(moved);
        return NULL;
    }
    return moved;
}

ct_tensor *ct__full_on(ct_device device, int ndim, const int64_t *shape, double value,
                       ct_dtype dtype) {
    ct_tensor *t = ct__tensor_new(device, dtype, ndim, shape);
    if (!t || t->numel == 0) return t;
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    ct__ew_args args;
    ct__ew_init(&args, ndim, shape);
    ct__ew_add(&args, t);
    ct__ew_coalesce(&args);
    if (!k || k->fill(physical, &args, value) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

ct_status ct__copy_into(ct_tensor *dst, const ct_tensor *src, const char *op) {
    const ct_tensor *pair[2] = {dst, src};
    int ndim = 0;
    int64_t shape[CT_MAX_DIMS];
    if (ct__broadcast_shapes(op, 2, pair, &ndim, shape) != CT_OK) return ct_last_status();
    if (ndim != dst->ndim || memcmp(shape, dst->shape, sizeof(int64_t) * (size_t)ndim) != 0)
        return ct__error(CT_ERR_SHAPE,
                         "%s: the source does not broadcast to the destination's "
                         "shape",
                         op);
    if (ct__is_complex(src->dtype) && !ct__is_complex(dst->dtype))
        return ct__error(CT_ERR_DTYPE,
                         "%s: a %s tensor does not convert to %s (the imaginary part would be "
                         "lost); take ct_real, ct_imag or ct_abs of it first",
                         op, ct_dtype_name(src->dtype), ct_dtype_name(dst->dtype));
    if (dst->numel == 0) return CT_OK;
    int physical;
    const ct__kernel_table *k = ct__kernels(dst->storage->device, &physical);
    if (!k) return ct_last_status();
    ct__ew_args args;
    ct__ew_init(&args, dst->ndim, dst->shape);
    ct__ew_add(&args, dst);
    ct__ew_add(&args, src);
    ct__ew_coalesce(&args);
    return k->copy(physical, &args);
}

/* Ops that copy or convert whole tensors, within a device or between devices and the host:
 * ct_to, ct_copy_to_host, ct_item, ct_item_complex, ct_copy, ct_contiguous, ct_contiguous_format,
 * ct_clone, ct_cast,
 * ct_fill, ct_fill_complex. */
#include <string.h>

#include "core/transfer_impl.h"
#include "ops/grad_impl.h"
#include "ops/op_impl.h"

ct_tensor *ct_contiguous(const ct_tensor *x) {
    if (!x) return ct__null_arg("ct_contiguous", 1);
    if (ct_is_contiguous(x)) return ct__new_ref(x);
    return ct_clone(x);
}

ct_tensor *ct_contiguous_format(const ct_tensor *x, ct_memory_format format) {
    const char *op = "ct_contiguous_format";
    if (!x) return ct__null_arg(op, 1);
    if (format == CT_FORMAT_CONTIGUOUS) return ct_contiguous(x);
    if (format != CT_FORMAT_CHANNELS_LAST)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: unknown memory format %d; use CT_FORMAT_CONTIGUOUS or "
                        "CT_FORMAT_CHANNELS_LAST",
                        op, (int)format);
    if (x->ndim != 4)
        return ct__fail(CT_ERR_SHAPE,
                        "%s: channels-last needs a 4-d (N, C, H, W) tensor; got %d-d (add a "
                        "batch axis with ct_unsqueeze)",
                        op, x->ndim);
    if (ct__is_channels_last(x)) return ct__new_ref(x);
    int64_t strides[4];
    ct__channels_last_strides(x->shape, strides);
    ct_tensor *out = ct__tensor_new_strided(x->storage->device, x->dtype, 4, x->shape, strides);
    if (out && ct__copy_into(out, x, op) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return ct__grad_needed(1, &x) ? ct__record_identity(out, x, op) : out;
}

/* A copy of x with dtype, on x's device: contiguous, or channels-last when x is and keep_layout
 * says so. */
static ct_tensor *converted_copy(const ct_tensor *x, ct_dtype dtype, const char *op,
                                 bool keep_layout) {
    ct_tensor *out = keep_layout && ct__is_channels_last(x)
                         ? ct__tensor_new_like(x->storage->device, dtype, x)
                         : ct__tensor_new(x->storage->device, dtype, x->ndim, x->shape);
    if (!out) return NULL;
    if (ct__copy_into(out, x, op) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

ct_tensor *ct_clone(const ct_tensor *x) {
    if (!x) return ct__null_arg("ct_clone", 1);
    ct_tensor *out = converted_copy(x, x->dtype, "ct_clone", false);
    return ct__grad_needed(1, &x) ? ct__record_identity(out, x, "ct_clone") : out;
}

ct_tensor *ct_cast(const ct_tensor *x, ct_dtype dtype) {
    if (!x) return ct__null_arg("ct_cast", 1);
    if (!ct_dtype_is_valid(dtype))
        return ct__fail(CT_ERR_DTYPE, "ct_cast: invalid dtype %d; use one of CT_F32 .. CT_C128",
                        (int)dtype);
    if (dtype == x->dtype) return ct__new_ref(x);
    ct_tensor *out = converted_copy(x, dtype, "ct_cast", true);
    return ct__grad_needed(1, &x) ? ct__record_identity(out, x, "ct_cast") : out;
}

ct_status ct_fill(ct_tensor *dst, double value) {
    if (!dst) {
        ct__null_arg("ct_fill", 1);
        return ct_last_status();
    }
    if (ct__check_writable("ct_fill", dst) != CT_OK) return ct_last_status();
    if (dst->numel == 0) return CT_OK;
    ct__storage_written(dst);
    int physical;
    const ct__kernel_table *k = ct__kernels(dst->storage->device, &physical);
    if (!k) return ct_last_status();
    ct__ew_args args;
    ct__ew_init(&args, dst->ndim, dst->shape);
    ct__ew_add(&args, dst);
    ct__ew_coalesce(&args);
    return k->fill(physical, &args, value);
}

/* A contiguous tensor on device holding x's values (x's dtype): an explicit or implicit
 * transfer of x's bytes. */
static ct_tensor *moved_copy(const ct_tensor *x, ct_device device, bool implicit, const char *op) {
    ct_tensor *src = ct_contiguous(x);
    if (!src) return NULL;
    ct_tensor *out = ct__tensor_new(device, x->dtype, x->ndim, x->shape);
    if (out && ct__transfer(&device, out->storage->data, &src->storage->device, ct__data(src),
                            (size_t)x->numel * ct__dtype_size(x->dtype), implicit, op) != CT_OK) {
        ct_release(out);
        out = NULL;
    }
    ct_release(src);
    return out;
}

ct_tensor *ct_to(const ct_tensor *x, ct_device device) {
    if (!x) return ct__null_arg("ct_to", 1);
    ct_device d;
    if (ct__resolve_device("ct_to", device, &d) != CT_OK) return NULL;
    if (ct_device_equal(d, x->storage->device)) return ct__new_ref(x);
    ct_tensor *out = moved_copy(x, d, false, "ct_to");
    return ct__grad_needed(1, &x) ? ct__record_identity(out, x, "ct_to") : out;
}

ct_status ct_copy(ct_tensor *dst, const ct_tensor *src) {
    if (!dst || !src) {
        ct__null_arg("ct_copy", dst ? 2 : 1);
        return ct_last_status();
    }
    if (ct__check_writable("ct_copy", dst) != CT_OK) return ct_last_status();
    /* Elements of an expanded dst share memory: which of src's values they kept would depend
     * on the kernel's order (PyTorch refuses too). */
    for (int d = 0; d < dst->ndim && dst->numel > 0; d++)
        if (dst->shape[d] > 1 && dst->strides[d] == 0)
            return ct__error(CT_ERR_INVALID_ARG,
                             "ct_copy: the destination's axis %d has %lld elements in one memory "
                             "location (stride 0: an expanded view); copy into a ct_clone of it",
                             d, (long long)dst->shape[d]);
    ct__storage_written(dst);
    if (ct_device_equal(dst->storage->device, src->storage->device)) {
        if (dst == src || !ct_shares_storage(dst, src)) return ct__copy_into(dst, src, "ct_copy");
        /* Views of one storage may overlap: copy from a snapshot of src, as NumPy does. */
        ct_tensor *snapshot = ct_clone(src);
        if (!snapshot) return ct_last_status();
        ct_status status = ct__copy_into(dst, snapshot, "ct_copy");
        ct_release(snapshot);
        return status;
    }
    /* Alike and contiguous: straight into dst (one DMA when dst is pinned memory). */
    if (dst->contiguous && src->contiguous && dst->dtype == src->dtype && ct__same_shape(dst, src))
        return ct__transfer(&dst->storage->device, ct__data(dst), &src->storage->device,
                            ct__data(src), (size_t)src->numel * ct__dtype_size(src->dtype), false,
                            "ct_copy");
    ct_tensor *here = moved_copy(src, dst->storage->device, false, "ct_copy");
    if (!here) return ct_last_status();
    ct_status status = ct__copy_into(dst, here, "ct_copy");
    ct_release(here);
    return status;
}

/* Copy x's elements in C order into host memory: an explicit or implicit transfer. */
static ct_status to_host(const ct_tensor *x, void *dst, size_t size, bool implicit,
                         const char *op) {
    size_t bytes = (size_t)x->numel * ct__dtype_size(x->dtype);
    if (size < bytes)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: the destination holds %zu bytes but the tensor needs %zu", op, size,
                         bytes);
    ct_tensor *src = ct_contiguous(x);
    if (!src) return ct_last_status();
    ct_status status =
        ct__transfer(NULL, dst, &src->storage->device, ct__data(src), bytes, implicit, op);
    ct_release(src);
    return status;
}

ct_status ct_copy_to_host(const ct_tensor *x, void *dst, size_t size) {
    if (!x || !dst) {
        if (!x)
            ct__null_arg("ct_copy_to_host", 1);
        else
            ct__error(CT_ERR_INVALID_ARG, "ct_copy_to_host: dst is NULL");
        return ct_last_status();
    }
    return to_host(x, dst, size, false, "ct_copy_to_host");
}

ct_status ct_item(const ct_tensor *x, double *out) {
    if (!x || !out) {
        if (!x)
            ct__null_arg("ct_item", 1);
        else
            ct__error(CT_ERR_INVALID_ARG, "ct_item: out is NULL");
        return ct_last_status();
    }
    if (x->numel != 1)
        return ct__error(CT_ERR_SHAPE,
                         "ct_item: the tensor has %lld elements; ct_item needs exactly one "
                         "(reduce it first, e.g. with ct_sum)",
                         (long long)x->numel);
    if (ct__is_complex(x->dtype))
        return ct__error(CT_ERR_DTYPE,
                         "ct_item: the tensor is %s; read it with ct_item_complex, or take "
                         "ct_real, ct_imag or ct_abs of it first",
                         ct_dtype_name(x->dtype));
    unsigned char value[8];
    if (to_host(x, value, sizeof value, true, "ct_item") != CT_OK) return ct_last_status();
    *out = ct__load_f64((const char *)value, x->dtype);
    return CT_OK;
}

ct_status ct_item_complex(const ct_tensor *x, ct_complex128 *out) {
    if (!x || !out) {
        if (!x)
            ct__null_arg("ct_item_complex", 1);
        else
            ct__error(CT_ERR_INVALID_ARG, "ct_item_complex: out is NULL");
        return ct_last_status();
    }
    if (x->numel != 1)
        return ct__error(CT_ERR_SHAPE,
                         "ct_item_complex: the tensor has %lld elements; ct_item_complex needs "
                         "exactly one (reduce it first, e.g. with ct_sum)",
                         (long long)x->numel);
    _Alignas(16) unsigned char value[16];
    if (to_host(x, value, ct__dtype_size(x->dtype), true, "ct_item_complex") != CT_OK)
        return ct_last_status();
    if (x->dtype == CT_C128) {
        memcpy(out, value, sizeof *out);
    } else if (x->dtype == CT_C64) {
        ct_complex64 z;
        memcpy(&z, value, sizeof z);
        *out = (ct_complex128){z.re, z.im};
    } else {
        *out = (ct_complex128){ct__load_f64((const char *)value, x->dtype), 0.0};
    }
    return CT_OK;
}

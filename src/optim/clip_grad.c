/* Gradient-norm clipping (torch.nn.utils.clip_grad_norm_): the norm of all gradients
 * together, by one reduction kernel per device over the list of its gradients and one wait
 * for each device's partial, then one scaling kernel per device when the norm is over the
 * limit. A complex gradient is scaled as its real and imaginary parts; its norm is that of
 * its elements' magnitudes, as PyTorch's (for p = 2 the parts' norm, read in place; for
 * another p, of a temporary |g|). */
#include <math.h>

#include "backend/dispatch_impl.h"
#include "backend/optim_update_impl.h"
#include "core/device_impl.h"
#include "ctensor/autograd.h"
#include "optim/optim_impl.h"

#define OP "ct_clip_grad_norm"

/* One gradient: itself when contiguous, else a contiguous copy scaled and copied back. */
typedef struct clip_item {
    ct_tensor *grad;      /* NULL: the parameter has none */
    ct_tensor *flat;      /* what the kernels read and write */
    ct_tensor *magnitude; /* |flat| for the norm of a complex gradient with p != 2, or NULL */
    bool visited;         /* taken by a device's list in the current pass */
} clip_item;

/* A dense tensor (contiguous or channels-last) as the kernels' list entry: a complex one as
 * its parts. */
static ct__list_tensor list_entry(const ct_tensor *t) {
    int64_t parts = ct__is_complex(t->dtype) ? 2 : 1;
    return (ct__list_tensor){ct__data(t), parts * t->numel, ct__complex_part(t->dtype)};
}

static ct_status gather_grads(int n, ct_tensor *const *params, double p, clip_item *items) {
    for (int i = 0; i < n; i++) {
        if (!params[i]) return ct__error(CT_ERR_INVALID_ARG, OP ": parameter %d is NULL", i);
        ct_tensor *g = params[i]->grad;
        if (!g) continue;
        if (!ct__is_float(g->dtype) && !ct__is_complex(g->dtype))
            return ct__error(CT_ERR_DTYPE,
                             OP ": the gradient of parameter %d is %s; gradients "
                                "are floating or complex",
                             i, ct_dtype_name(g->dtype));
        items[i].grad = g;
        items[i].flat = ct__is_dense(g) ? g : ct_clone(g);
        if (!items[i].flat) return ct_last_status();
        if (ct__is_complex(g->dtype) && p != 2.0) {
            items[i].magnitude = ct_abs(items[i].flat);
            if (!items[i].magnitude) return ct_last_status();
        }
    }
    return CT_OK;
}

/* Run the norm (scale == false) or the scaling over the gradients of each device in turn;
 * the norm partials combine into *acc. */
static ct_status per_device(int n, clip_item *items, ct__list_tensor *entries, bool scale, double p,
                            double factor, double *acc) {
    for (int i = 0; i < n; i++) items[i].visited = false;
    for (int first = 0; first < n; first++) {
        if (!items[first].flat || items[first].visited) continue;
        ct_device device = items[first].flat->storage->device;
        ct__list_args args = {.count = 0, .tensors = entries, .total = 0};
        for (int i = first; i < n; i++) {
            const ct_tensor *t = items[i].flat;
            if (!t || items[i].visited || !ct__same_device(t->storage->device, device)) continue;
            items[i].visited = true;
            if (!scale && items[i].magnitude) t = items[i].magnitude;
            entries[args.count] = list_entry(t);
            args.total += entries[args.count++].numel;
        }
        int physical;
        ct__kernel_slot slot = scale ? CT_SLOT_list_scale : CT_SLOT_list_norm;
        const ct__kernel_table *k = ct__kernel_find(device, slot, OP, &physical);
        if (!k) return ct_last_status();
        double part = 0.0;
        ct_status s = CT_OK;
        if (scale) {
            s = k->list_scale(physical, &args, factor);
        } else {
            /* The norm of empty gradients is 0 without a kernel or a read. */
            if (args.total > 0) s = ct__kernel_readback(device, CT_SLOT_list_norm, OP);
            if (s == CT_OK) s = k->list_norm(physical, &args, p, &part);
        }
        if (s != CT_OK) return s;
        *acc = isinf(p) ? ct__norm_max(*acc, part) : *acc + part;
    }
    return CT_OK;
}

static ct_status check_args(int n, ct_tensor *const *params, double max_norm, double norm_type) {
    if (n < 0 || (n > 0 && !params))
        return ct__error(CT_ERR_INVALID_ARG, OP ": %s; pass n >= 0 parameters",
                         n < 0 ? "n is negative" : "params is NULL");
    if (!(max_norm >= 0.0))
        return ct__error(CT_ERR_INVALID_ARG, OP ": max_norm is %g; it must be >= 0", max_norm);
    if (!(norm_type > 0.0))
        return ct__error(CT_ERR_INVALID_ARG,
                         OP ": norm_type is %g; use 2.0, another p > 0, or "
                            "INFINITY",
                         norm_type);
    return CT_OK;
}

/* The norm, then the scaling when it is over max_norm; the gradients with gaps get their
 * scaled copies back. */
static ct_status clip(int n, clip_item *items, ct__list_tensor *entries, double max_norm, double p,
                      double *total) {
    double acc = 0.0;
    ct_status s = per_device(n, items, entries, false, p, 1.0, &acc);
    if (s != CT_OK) return s;
    *total = isinf(p) ? acc : p == 2.0 ? sqrt(acc) : pow(acc, 1.0 / p);
    double coef = max_norm / (*total + 1e-6);
    /* PyTorch multiplies by min(coef, 1) always; multiplying by 1 changes nothing. */
    if (!(coef < 1.0) && !isnan(coef)) return CT_OK;
    double unused = 0.0;
    s = per_device(n, items, entries, true, p, coef, &unused);
    for (int i = 0; i < n && s == CT_OK; i++)
        if (items[i].flat && items[i].flat != items[i].grad)
            s = ct_copy(items[i].grad, items[i].flat);
    return s;
}

ct_status ct_clip_grad_norm(int n, ct_tensor *const *params, double max_norm, double norm_type,
                            double *total_norm) {
    ct_status s = check_args(n, params, max_norm, norm_type);
    if (s != CT_OK) return s;
    clip_item *items = ct__calloc(n ? (size_t)n : 1, sizeof *items);
    ct__list_tensor *entries = ct__calloc(n ? (size_t)n : 1, sizeof *entries);
    if (!items || !entries) {
        ct__free_mem(items), ct__free_mem(entries);
        return ct__error(CT_ERR_OUT_OF_MEMORY, OP ": out of host memory for %d parameters", n);
    }
    double total = 0.0;
    ct_no_grad_push();
    s = gather_grads(n, params, norm_type, items);
    if (s == CT_OK) s = clip(n, items, entries, max_norm, norm_type, &total);
    ct_no_grad_pop();
    for (int i = 0; i < n; i++) {
        if (items[i].flat && items[i].flat != items[i].grad) ct_release(items[i].flat);
        ct_release(items[i].magnitude);
    }
    ct__free_mem(items);
    ct__free_mem(entries);
    if (s == CT_OK && total_norm) *total_norm = total;
    return s;
}

/* ct_pin_memory and ct_is_pinned: CPU tensors in pinned host memory (src/mem/pinned_impl.h),
 * whose copies to and from a GPU are direct DMAs (backend/transfer_copy.c). */
#include "ops/grad_impl.h"
#include "ops/op_impl.h"

bool ct_is_pinned(const ct_tensor *t) { return t && t->storage->pinned; }

ct_tensor *ct_pin_memory(const ct_tensor *t) {
    const char *op = "ct_pin_memory";
    if (!t) return ct__null_arg(op, 1);
    ct_device device = t->storage->device;
    if (device.type != CT_DEVICE_CPU) {
        char name[32];
        return ct__fail(CT_ERR_DEVICE_MISMATCH,
                        "%s: the tensor is on %s; pinned memory is host memory, so pin a CPU "
                        "tensor (ct_to(t, CT_CPU) first), or use the tensor where it is",
                        op, ct_device_str(device, name, sizeof name));
    }
    if (ct_is_pinned(t)) return ct__new_ref(t);
    ct_tensor *out = ct__pinned_tensor_new(op, device, t->dtype, t->ndim, t->shape);
    if (out && ct__copy_into(out, t, op) != CT_OK) {
        ct_release(out);
        out = NULL;
    }
    return ct__grad_needed(1, &t) ? ct__record_identity(out, t, op) : out;
}

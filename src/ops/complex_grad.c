/* Backward rules of ct_real, ct_imag and ct_conj (complex_parts.c), in PyTorch's convention
 * (grad_impl.h): for z = x + iy, real(z) = x passes its gradient g as g + 0i, imag(z) = y as
 * i g, and conj(z) its complex gradient g as conj(g). */
#include "ops/grad_impl.h"
#include "ops/op_impl.h"

static ct_tensor *part_gradient(int part, const ct_tensor *g) {
    if (part == 0) return ct__new_ref(g); /* the engine casts it to the complex input */
    if (part == 2) return ct_conj(g);
    ct_complex128 i = {0.0, 1.0};
    ct_tensor *unit =
        ct_full_complex(0, NULL, i, g->dtype == CT_F64 ? CT_C128 : CT_C64, g->storage->device);
    ct_tensor *out = unit ? ct_mul(g, unit) : NULL;
    ct_release(unit);
    return out;
}

static ct_status part_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    grad_in[0] = part_gradient((int)node->ints[0], g);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct__record_complex_part(ct_tensor *out, const ct_tensor *x, int part) {
    static const char *const names[3] = {"ct_real", "ct_imag", "ct_conj"};
    if (!out || !ct__is_complex(x->dtype)) return out; /* a real x: x itself, or zeros */
    ct__node *node = ct__node_new(names[part], part_backward, 1, &x);
    if (node) node->ints[0] = part;
    return ct__record(out, node);
}

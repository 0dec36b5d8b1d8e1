/* ct__add_layer_norm (the residual add fused into the layer norm after it, as a GPT block
 * uses it): the same values and gradients as ct_add followed by ct_layer_norm, bit for bit
 * in float32 on the fused path, on every device; the fallback (broadcast residual, bfloat16)
 * through the two ops; the finite-difference gradient check through both outputs. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"
#include "ops/nn_impl.h"

enum { B = 3, T = 4, W = 24 };

static ct_tensor *random_tensor(int ndim, const int64_t *shape, uint64_t seed, ct_dtype dtype,
                                ct_device device) {
    int64_t n = ref_numel(ndim, shape);
    double *v = malloc(sizeof(double) * (size_t)n);
    if (!v) return NULL;
    ref_random(v, n, seed, -2, 2);
    ct_tensor *t = ref_tensor(v, ndim, shape, dtype, device);
    free(v);
    if (t) ct_set_requires_grad(t, true);
    return t;
}

/* y = layer_norm(x + r) and s = x + r, fused or as the two ops, then backward of
 * sum(y * gy) + sum(s * gs); the gradients of x, r, w and b in grads. */
static bool run(bool fused, ct_tensor *x, ct_tensor *r, ct_tensor *w, ct_tensor *b,
                const ct_tensor *gy, const ct_tensor *gs, ct_tensor **y, ct_tensor **s,
                ct_tensor **grads) {
    ct_tensor *leaves[4] = {x, r, w, b};
    for (int i = 0; i < 4; i++) ct_zero_grad(leaves[i]);
    if (ct_scope_begin() != CT_OK) return false;
    if (fused) {
        *y = ct__add_layer_norm(x, r, 1, w, b, 1e-5, s);
    } else {
        *s = ct_add(x, r);
        *y = *s ? ct_layer_norm(*s, 1, w, b, 1e-5) : NULL;
    }
    ct_tensor *loss = *y && *s ? ct_add(ct_sum(ct_mul(*y, gy), 0, NULL, false),
                                        ct_sum(ct_mul(*s, gs), 0, NULL, false))
                               : NULL;
    bool ok = loss && ct_backward(loss) == CT_OK;
    if (ok) ct_keep(*y), ct_keep(*s);
    ct_scope_end();
    for (int i = 0; i < 4; i++) grads[i] = ok ? ct_grad(leaves[i]) : NULL;
    return ok;
}

static void compare(ct_device device, ct_dtype dtype, const int64_t *r_shape, int r_ndim,
                    double tolerance) {
    int64_t shape[3] = {B, T, W}, wshape[1] = {W};
    ct_tensor *x = random_tensor(3, shape, 1, dtype, device);
    ct_tensor *r = random_tensor(r_ndim, r_shape, 2, dtype, device);
    ct_tensor *w = random_tensor(1, wshape, 3, dtype, device);
    ct_tensor *b = random_tensor(1, wshape, 4, dtype, device);
    ct_tensor *gy = random_tensor(3, shape, 5, dtype, device);
    ct_tensor *gs = random_tensor(3, shape, 6, dtype, device);
    CHECK(x && r && w && b && gy && gs);
    ct_tensor *y[2], *s[2], *g[2][4];
    for (int k = 0; k < 2; k++) CHECK(run(k == 1, x, r, w, b, gy, gs, &y[k], &s[k], g[k]));
    CHECK(ref_max_diff(y[0], y[1], NULL) <= tolerance);
    CHECK(ref_max_diff(s[0], s[1], NULL) == 0.0);
    for (int i = 0; i < 4; i++) CHECK(ref_max_diff(g[0][i], g[1][i], NULL) <= tolerance);
    for (int k = 0; k < 2; k++) {
        ct_release(y[k]);
        ct_release(s[k]);
        for (int i = 0; i < 4; i++) ct_release(g[k][i]);
    }
    ct_tensor *all[6] = {x, r, w, b, gy, gs};
    for (int i = 0; i < 6; i++) ct_release(all[i]);
}

DEVICE_TEST(test_add_layer_norm_equals_add_then_layer_norm) {
    int64_t shape[3] = {B, T, W};
    compare(device, CT_F32, shape, 3, 0.0);
    compare(device, CT_F64, shape, 3, 0.0);
}

/* A residual that broadcasts, and bfloat16: the two ops themselves. */
DEVICE_TEST(test_add_layer_norm_fallbacks) {
    int64_t row[1] = {W}, shape[3] = {B, T, W};
    compare(device, CT_F32, row, 1, 0.0);
    compare(device, CT_BF16, shape, 3, 0.0);
}

/* Without gradients: no history on either result. */
DEVICE_TEST(test_add_layer_norm_without_grad) {
    int64_t shape[3] = {B, T, W};
    ct_tensor *x = random_tensor(3, shape, 1, CT_F32, device);
    ct_tensor *r = random_tensor(3, shape, 2, CT_F32, device);
    CHECK(x && r);
    ct_no_grad_push();
    ct_tensor *s = NULL, *y = ct__add_layer_norm(x, r, 1, NULL, NULL, 1e-5, &s);
    ct_no_grad_pop();
    CHECK(y && s);
    CHECK(!ct_requires_grad(y) && !ct_requires_grad(s));
    ct_release(y);
    ct_release(s);
    ct_release(x);
    ct_release(r);
}

static ct_tensor *both(ct_tensor *const *in, void *context) {
    (void)context;
    if (ct_scope_begin() != CT_OK) return NULL;
    ct_tensor *s = NULL;
    ct_tensor *y = ct__add_layer_norm(in[0], in[1], 1, in[2], in[3], 1e-5, &s);
    /* Both outputs reach the loss: y, and s through a product that is not linear. */
    ct_tensor *out = y && s ? ct_add(y, ct_mul(s, s)) : NULL;
    if (out) ct_keep(out);
    ct_scope_end();
    return out;
}

DEVICE_TEST(test_add_layer_norm_gradcheck) {
    int64_t shape[2] = {5, 6}, wshape[1] = {6};
    ct_tensor *in[4] = {ct_gradcheck_leaf(device, 2, shape, 1, -2, 2, true),
                        ct_gradcheck_leaf(device, 2, shape, 2, -2, 2, true),
                        ct_gradcheck_leaf(device, 1, wshape, 3, 0.5, 1.5, true),
                        ct_gradcheck_leaf(device, 1, wshape, 4, -1, 1, true)};
    for (int i = 0; i < 4; i++) CHECK_NOT_NULL(in[i]);
    CHECK(ct_gradcheck(both, 4, in, NULL, 1e-6, 1e-6, 1e-5));
    for (int i = 0; i < 4; i++) ct_release(in[i]);
}

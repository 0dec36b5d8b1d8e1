/* The autograd engine: accumulation, shared inputs, broadcasting, errors, no-grad regions,
 * detach, in-place guards, graph lifetime with scopes, and deep graphs. */
#include <stdlib.h>

#include "autograd/tape_impl.h"
#include "ct_ref.h"

static ct_tensor *leaf_values(ct_device device, const double *values, int64_t n) {
    ct_tensor *t = ref_tensor(values, 1, &n, CT_F64, device);
    if (t) ct_set_requires_grad(t, true);
    return t;
}

/* y = sum(x * x + x): dy/dx = 2x + 1, and twice that after two backward passes. */
DEVICE_TEST(test_autograd_shared_input_and_accumulation) {
    double v[3] = {1, -2, 0.5};
    ct_tensor *x = leaf_values(device, v, 3);
    CHECK_NOT_NULL(x);
    for (int pass = 1; pass <= 2; pass++) {
        CHECK_OK(ct_scope_begin());
        ct_tensor *y = ct_sum(ct_add(ct_mul(x, x), x), 0, NULL, false);
        ct_status status = ct_backward(y);
        ct_scope_end();
        CHECK_OK(status);
        ct_tensor *g = ct_grad(x);
        double expected[3];
        for (int i = 0; i < 3; i++) expected[i] = pass * (2 * v[i] + 1);
        CHECK_TENSOR(g, expected);
        ct_release(g);
    }
    CHECK_OK(ct_zero_grad(x));
    CHECK(ct_grad(x) == NULL);
    CHECK_ERROR(CT_ERR_STATE, "no gradient");
    ct_release(x);
}

DEVICE_TEST(test_autograd_broadcast_reduced_to_input_shape) {
    double bv[2] = {1, 2};
    ct_tensor *b = leaf_values(device, bv, 2);
    ct_tensor *x = ct_ones(2, (int64_t[]){3, 2}, CT_F64, device);
    CHECK_OK(ct_scope_begin());
    ct_status status = ct_backward(ct_sum(ct_mul(ct_add(x, b), x), 0, NULL, false));
    ct_scope_end();
    CHECK_OK(status);
    ct_tensor *g = ct_grad(b);
    double expected[2] = {3, 3};
    CHECK_TENSOR(g, expected);
    CHECK(ct_ndim(g) == 1);
    ct_release(g);
    ct_release(x);
    ct_release(b);
}

DEVICE_TEST(test_autograd_errors) {
    ct_tensor *plain = ct_ones(1, (int64_t[]){2}, CT_F64, device);
    CHECK(ct_backward(plain) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "does not require grad");
    ct_tensor *ints = ct_ones(1, (int64_t[]){2}, CT_I64, device);
    CHECK(ct_set_requires_grad(ints, true) == CT_ERR_DTYPE);
    CHECK_ERROR(CT_ERR_DTYPE, "floating");
    double v[2] = {1, 2};
    ct_tensor *x = leaf_values(device, v, 2);
    ct_tensor *y = ct_mul_scalar(x, 3);
    CHECK(ct_backward(y) == CT_ERR_SHAPE);
    CHECK_ERROR(CT_ERR_SHAPE, "one-element");
    CHECK(ct_set_requires_grad(y, false) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "not a leaf");
    ct_tensor *wrong = ct_ones(1, (int64_t[]){3}, CT_F64, device);
    CHECK(ct_backward_with(y, wrong, false) == CT_ERR_SHAPE);
    CHECK_ERROR(CT_ERR_SHAPE, "gradient's shape");
    CHECK(ct_backward(NULL) == CT_ERR_INVALID_ARG);
    ct_clear_error();
    CHECK(ct_no_grad_pop() == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "no no-grad region");
    ct_release(wrong);
    ct_release(y);
    ct_release(x);
    ct_release(ints);
    ct_release(plain);
}

DEVICE_TEST(test_autograd_freed_graph_and_retain) {
    double v[2] = {1, 2};
    ct_tensor *x = leaf_values(device, v, 2);
    ct_tensor *e = ct_exp(x);
    ct_tensor *y = ct_sum(e, 0, NULL, false);
    ct_release(e);
    CHECK_NOT_NULL(y);
    CHECK_OK(ct_backward_with(y, NULL, true));
    CHECK_OK(ct_backward(y)); /* the graph was retained once */
    CHECK(ct_backward(y) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "freed by an earlier backward");
    ct_tensor *g = ct_grad(x);
    double expected[2] = {2 * exp(1.0), 2 * exp(2.0)};
    CHECK_TENSOR(g, expected);
    ct_release(g);
    ct_release(y);
    ct_release(x);
}

DEVICE_TEST(test_autograd_no_grad_and_detach) {
    double v[2] = {1, 2};
    ct_tensor *x = leaf_values(device, v, 2);
    CHECK_OK(ct_no_grad_push());
    CHECK(!ct_grad_enabled());
    ct_tensor *a = ct_mul(x, x);
    CHECK_OK(ct_no_grad_pop());
    CHECK(ct_grad_enabled());
    CHECK(!ct_requires_grad(a));
    ct_tensor *d = ct_detach(x);
    CHECK(!ct_requires_grad(d) && ct_is_leaf(d) && ct_shares_storage(d, x));
    ct_tensor *b = ct_mul(x, x);
    CHECK(ct_requires_grad(b) && !ct_is_leaf(b));
    ct_release(a);
    ct_release(b);
    ct_release(d);
    ct_release(x);
}

DEVICE_TEST(test_autograd_in_place_guards) {
    double v[2] = {1, 2};
    ct_tensor *x = leaf_values(device, v, 2);
    CHECK(ct_fill(x, 0) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "ct_no_grad_push");
    ct_tensor *y = ct_mul_scalar(x, 2);
    CHECK(ct_copy(y, x) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "recorded graph");
    CHECK_OK(ct_no_grad_push());
    ct_status status = ct_fill(x, 3);
    ct_no_grad_pop();
    CHECK_OK(status);
    double expected[2] = {3, 3};
    CHECK_TENSOR(x, expected);
    ct_release(y);
    ct_release(x);
}

/* A tensor an op saved for backward, written in place before the backward pass, makes the
 * pass refuse (as PyTorch's version counter), before any gradient changes; an operand no
 * gradient reads may be written. */
DEVICE_TEST(test_autograd_saved_tensor_written_in_place) {
    double v[2] = {1, 2}, w[2] = {3, 4};
    ct_tensor *x = leaf_values(device, v, 2);
    ct_tensor *c = ref_tensor(w, 1, (int64_t[]){2}, CT_F64, device);
    CHECK_NOT_NULL(c);
    CHECK_OK(ct_scope_begin()); /* the scope releases the graphs' tensors */
    ct_tensor *y = ct_sum(ct_mul(ct_add(x, x), c), 0, NULL, false); /* saves c, not x + x */
    CHECK_OK(ct_fill(c, 5));
    CHECK(ct_backward(y) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "ct_mul saved for the backward pass has been written in place");
    CHECK(ct_grad(x) == NULL);
    /* A view shares the count: writing the base refuses a backward through the view. */
    y = ct_sum(ct_mul(x, ct_reshape(c, 2, (int64_t[]){1, 2})), 0, NULL, false);
    CHECK_OK(ct_fill(c, 6));
    CHECK(ct_backward(y) == CT_ERR_STATE);
    /* A leaf changed in place by a no-grad write (as an optimiser step does) after a retained
     * backward: the second backward refuses. */
    y = ct_sum(ct_mul(x, x), 0, NULL, false);
    CHECK_OK(ct_backward_with(y, NULL, true));
    CHECK_OK(ct_no_grad_push());
    ct_status status = ct_fill(x, 0);
    ct_no_grad_pop();
    CHECK_OK(status);
    CHECK(ct_backward(y) == CT_ERR_STATE);
    /* ct_add saves nothing, and x * c with only x requiring grad saves c alone: writing c
     * after x + c, or x after x * c, leaves those backward passes valid. */
    y = ct_sum(ct_add(x, c), 0, NULL, false);
    CHECK_OK(ct_fill(c, 1));
    CHECK_OK(ct_backward(y));
    y = ct_sum(ct_mul(x, c), 0, NULL, false);
    CHECK_OK(ct_no_grad_push());
    status = ct_fill(x, 7);
    ct_no_grad_pop();
    CHECK_OK(status);
    CHECK_OK(ct_backward(y));
    ct_scope_end();
    ct_release(c);
    ct_release(x);
}

/* A backward from a leaf itself adds the seed to its gradient. */
DEVICE_TEST(test_autograd_backward_of_leaf) {
    double v[1] = {4};
    ct_tensor *x = leaf_values(device, v, 1);
    CHECK_OK(ct_backward(x));
    ct_tensor *g = ct_grad(x);
    double expected[1] = {1};
    CHECK_TENSOR(g, expected);
    ct_release(g);
    ct_release(x);
}

/* The gradient of a leaf is its own tensor: a pass-through op (add) must not make two
 * leaves share one gradient. */
DEVICE_TEST(test_autograd_leaf_gradients_are_distinct) {
    double v[2] = {1, 2};
    ct_tensor *a = leaf_values(device, v, 2), *b = leaf_values(device, v, 2);
    ct_tensor *y = ct_add(a, b);
    CHECK_NOT_NULL(y);
    ct_tensor *seed = ct_ones(1, (int64_t[]){2}, CT_F64, device);
    CHECK_OK(ct_backward_with(y, seed, false));
    ct_tensor *ga = ct_grad(a), *gb = ct_grad(b);
    CHECK(!ct_shares_storage(ga, gb) && !ct_shares_storage(ga, seed));
    ct_release(ga);
    ct_release(gb);
    ct_release(seed);
    ct_release(y);
    ct_release(a);
    ct_release(b);
}

/* A training step in a scope: the graph and every temporary go with the scope (the runner
 * checks that no tensor leaked). A long chain backpropagates without deep recursion. */
DEVICE_TEST(test_autograd_deep_chain_in_scope) {
    double v[1] = {0.5};
    ct_tensor *x = leaf_values(device, v, 1);
    CHECK_OK(ct_scope_begin());
    ct_tensor *y = x;
    for (int i = 0; i < 5000; i++) y = ct_mul_scalar(y, 1.0001);
    ct_status status = ct_backward(ct_sum(y, 0, NULL, false));
    ct_scope_end();
    CHECK_OK(status);
    ct_tensor *g = ct_grad(x);
    double expected[1] = {pow(1.0001, 5000)};
    CHECK_TENSOR(g, expected);
    ct_release(g);
    ct_release(x);
}

static ct_status no_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    (void)node, (void)g, (void)grad_in;
    return CT_OK;
}

/* An op that returns its argument as its result (ct_contiguous of a contiguous tensor) must
 * not turn a leaf into a recorded tensor: ct__record leaves such a result as it is. */
TEST(test_autograd_record_keeps_an_input_returned_as_result) {
    double v[2] = {1, 2};
    ct_tensor *x = leaf_values(CT_CPU, v, 2);
    const ct_tensor *in[1] = {x};
    ct_tensor *same = ct__record(ct_retain(x), ct__node_new("test_op", no_backward, 1, in));
    CHECK(same == x && ct_is_leaf(x) && ct_requires_grad(x));
    ct__tensor_drop(same);
    ct_release(x);
}

/* ct_set_grad: a copy of a gradient of the leaf's shape, dtype and device; backward adds to
 * it; NULL drops it; anything else is refused with the leaf unchanged. */
DEVICE_TEST(test_autograd_set_grad) {
    double v[2] = {1, 2}, half[2] = {0.5, 0.5};
    ct_tensor *x = leaf_values(device, v, 2),
              *g = ref_tensor(half, 1, (int64_t[]){2}, CT_F64, device);
    CHECK_NOT_NULL(x);
    CHECK_NOT_NULL(g);
    CHECK_OK(ct_set_grad(x, g));
    CHECK_OK(ct_fill(g, 9)); /* a copy: the leaf's gradient does not change */
    CHECK_OK(ct_scope_begin());
    ct_status status = ct_backward(ct_sum(ct_mul(x, x), 0, NULL, false));
    ct_scope_end();
    CHECK_OK(status);
    ct_tensor *got = ct_grad(x);
    CHECK_TENSOR(got, ((double[]){2.5, 4.5}));
    ct_release(got);
    ct_tensor *wide = ct_ones(1, (int64_t[]){3}, CT_F64, device);
    CHECK(ct_set_grad(x, wide) == CT_ERR_SHAPE);
    CHECK_ERROR(CT_ERR_SHAPE, "shape");
    ct_tensor *single = ct_ones(1, (int64_t[]){2}, CT_F32, device);
    CHECK(ct_set_grad(x, single) == CT_ERR_DTYPE);
    CHECK_ERROR(CT_ERR_DTYPE, "float32");
    CHECK_OK(ct_scope_begin());
    ct_tensor *y = ct_mul(x, x);
    CHECK(ct_set_grad(y, g) == CT_ERR_STATE);
    ct_scope_end();
    CHECK_ERROR(CT_ERR_STATE, "not a leaf");
    CHECK_OK(ct_set_grad(x, NULL));
    CHECK(ct_grad(x) == NULL);
    ct_clear_error();
    ct_release(wide);
    ct_release(single);
    ct_release(g);
    ct_release(x);
}

/* ct_move_to: the same tensor, and every view of its storage, hold its values on the device;
 * its gradient moves too; a recorded result or a part of a storage is refused. */
DEVICE_TEST(test_autograd_move_to_in_place) {
    double v[4] = {1, 2, 3, 4}, twos[4] = {2, 4, 6, 8};
    ct_tensor *x = leaf_values(CT_CPU, v, 4);
    CHECK_NOT_NULL(x);
    CHECK_OK(ct_scope_begin());
    ct_status status = ct_backward(ct_sum(ct_mul(x, x), 0, NULL, false));
    ct_scope_end();
    CHECK_OK(status);
    ct_tensor *view = ct_detach(x);
    CHECK_OK(ct_move_to(x, device));
    CHECK(ct_device_equal(ct_device_of(x), device) && ct_device_equal(ct_device_of(view), device));
    CHECK(ct_requires_grad(x));
    CHECK_TENSOR(x, v);
    CHECK_TENSOR(view, v);
    ct_tensor *g = ct_grad(x);
    CHECK(ct_device_equal(ct_device_of(g), device));
    CHECK_TENSOR(g, twos);
    ct_release(g);
    ct_tensor *part = ct_slice(view, 0, 1, 3, 1);
    CHECK(ct_move_to(part, CT_CPU) == CT_ERR_UNSUPPORTED);
    CHECK_ERROR(CT_ERR_UNSUPPORTED, "view of part");
    CHECK_OK(ct_scope_begin());
    ct_tensor *y = ct_mul(x, x);
    CHECK(ct_move_to(y, CT_CPU) == CT_ERR_STATE);
    ct_scope_end();
    CHECK_ERROR(CT_ERR_STATE, "leaf");
    CHECK_OK(ct_move_to(x, CT_CPU));
    CHECK_TENSOR(view, v);
    ct_release(part);
    ct_release(view);
    ct_release(x);
}

/* The backward pass: find the nodes behind an output in topological order, run each node's
 * backward once every consumer has added its gradient, conform each input gradient to its
 * input (shape, dtype, device) and add it to the input's node or, for a leaf, to its .grad.
 *
 * The pass runs in a private scope with grad mode off; each gradient is released as soon as
 * its node has run, so memory peaks near the forward pass's, as in PyTorch. */

#include <stdlib.h>

#include "autograd/grad_hook_impl.h"
#include "autograd/tape_impl.h"
#include "ops/op_impl.h"

static atomic_uint_fast64_t pass_counter;

typedef struct node_list {
    ct__node **items;
    size_t count, capacity;
} node_list;

static bool list_push(node_list *list, ct__node *node) {
    if (list->count == list->capacity) {
        size_t grown = list->capacity ? list->capacity * 2 : 64;
        ct__node **items = ct__realloc(list->items, grown * sizeof *items);
        if (!items) return false;
        list->items = items;
        list->capacity = grown;
    }
    list->items[list->count++] = node;
    return true;
}

/* The node of an input that has one, else NULL (leaves and inputs needing no grad). */
static ct__node *input_node(const ct__node *node, int i) {
    const ct_tensor *input = node->inputs[i];
    return input ? input->grad_fn : NULL;
}

/* Depth-first post-order from root without recursion (graphs may be thousands of nodes
 * deep); each node is retained for the pass. Reversed, the order is topological. */
static ct_status topological_order(const char *op, ct__node *root, node_list *order) {
    uint64_t pass = atomic_fetch_add(&pass_counter, 1) + 1;
    node_list stack = {0};
    ct_status status = CT_OK;
    root->visit = pass;
    if (!list_push(&stack, root)) status = CT_ERR_OUT_OF_MEMORY;
    /* The stack holds nodes whose inputs are being visited; a node leaves it once none of
     * its inputs' nodes is unvisited (nodes have few inputs, so rescanning is cheap). */
    while (status == CT_OK && stack.count) {
        ct__node *node = stack.items[stack.count - 1];
        if (node->released) {
            status = ct__error(CT_ERR_STATE,
                               "%s: the graph behind this tensor was freed by an earlier "
                               "backward (at its %s node); pass retain_graph = true to "
                               "ct_backward_with to run backward through it twice",
                               op, node->name);
            break;
        }
        ct__node *next = NULL;
        for (int i = 0; i < node->ninputs && !next; i++) {
            ct__node *child = input_node(node, i);
            if (child && child->visit != pass) next = child;
        }
        if (next) {
            next->visit = pass;
            if (!list_push(&stack, next)) status = CT_ERR_OUT_OF_MEMORY;
            continue;
        }
        stack.count--;
        if (!list_push(order, ct__node_retain(node))) {
            ct__node_release(node);
            status = CT_ERR_OUT_OF_MEMORY;
        }
    }
    ct__free_mem(stack.items);
    if (status == CT_ERR_OUT_OF_MEMORY)
        ct__error(status, "%s: out of host memory for the backward pass", op);
    return status;
}

/* Sum g over the axes where it was broadcast against shape (ndim, shape). */
static ct_tensor *sum_to_shape(ct_tensor *g, const ct_tensor *input) {
    int lead = g->ndim - input->ndim;
    int axes[CT_MAX_DIMS], naxes = 0;
    for (int d = 0; d < g->ndim; d++)
        if (d < lead || (input->shape[d - lead] == 1 && g->shape[d] != 1)) axes[naxes++] = d;
    ct_tensor *summed = naxes ? ct_sum(g, naxes, axes, true) : ct__new_ref(g);
    ct_tensor *out = summed ? ct_reshape(summed, input->ndim, input->shape) : NULL;
    ct_release(summed);
    return out;
}

/* g (consumed) with input's shape, dtype and device; a complex g of a real input gives its
 * real part (the input reached a complex op through a real-to-complex promotion or cast). */
static ct_tensor *conform(ct_tensor *g, const ct_tensor *input) {
    ct_tensor *t = g;
    if (ct__is_complex(t->dtype) && !ct__is_complex(input->dtype)) {
        ct_tensor *next = ct_real(t);
        ct_release(t);
        if (!next) return NULL;
        t = next;
    }
    if (!ct__same_shape(t, input)) {
        ct_tensor *next = sum_to_shape(t, input);
        ct_release(t);
        if (!next) return NULL;
        t = next;
    }
    if (t->dtype != input->dtype) {
        ct_tensor *next = ct_cast(t, input->dtype);
        ct_release(t);
        if (!next) return NULL;
        t = next;
    }
    if (!ct__same_device(t->storage->device, input->storage->device)) {
        ct_tensor *next = ct_to(t, input->storage->device);
        ct_release(t);
        t = next;
    }
    return t;
}

/* g (consumed) added to *slot (a scoped reference or NULL). */
static ct_status accumulate(ct_tensor **slot, ct_tensor *g) {
    if (!*slot) {
        *slot = g;
        return CT_OK;
    }
    ct_tensor *sum = ct_add(*slot, g);
    ct_release(g);
    if (!sum) return ct_last_status();
    ct_release(*slot);
    *slot = sum;
    return CT_OK;
}

/* A copy of g, dense in memory: channels-last when channels_last, else contiguous. */
static ct_tensor *layout_copy(const ct_tensor *g, bool channels_last) {
    if (!channels_last) return ct_clone(g);
    int64_t strides[4];
    ct__channels_last_strides(g->shape, strides);
    ct_tensor *out = ct__tensor_new_strided(g->storage->device, g->dtype, 4, g->shape, strides);
    if (out && ct__copy_into(out, g, "ct_backward") != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

/* A leaf's .grad is its own tensor, so that in-place updates of one gradient (clipping)
 * never reach another tensor, dense in the leaf's layout (PyTorch's gradient layout
 * contract): channels-last for a channels-last leaf, whose gradient then arrives from a
 * channels-last network without a copy into NCHW; else contiguous. */
static ct_status accumulate_leaf(ct_tensor *leaf, ct_tensor *g) {
    ct_tensor *value = g;
    bool channels_last = ct__is_channels_last(leaf);
    bool dense = channels_last ? ct__is_channels_last(g) : g->contiguous;
    bool owned = atomic_load(&g->refcount) == 1 && atomic_load(&g->storage->refcount) == 1 && dense;
    if (leaf->grad || !owned) {
        value = leaf->grad ? ct_add(leaf->grad, g) : layout_copy(g, channels_last);
        ct_release(g);
        if (!value) return ct_last_status();
    }
    ct__scope_forget(value); /* the leaf owns it now, outside every scope */
    if (leaf->grad) ct__tensor_drop(leaf->grad);
    leaf->grad = value;
    return CT_OK;
}

/* The leaves of a pass, each with the deliveries (node inputs) still to come: the gradient
 * ready hook hears of a leaf once, after the last of them, with the sum of every use (a
 * parameter used twice, as a tied embedding, included), as PyTorch's AccumulateGrad node
 * runs once per pass. Sorted by address. */
typedef struct leaf_use {
    ct_tensor *leaf;
    int pending;
    bool got; /* a gradient reached it in this pass */
} leaf_use;

typedef struct leaf_uses {
    leaf_use *items;
    size_t count;
} leaf_uses;

static int by_leaf(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const leaf_use *)a)->leaf,
              y = (uintptr_t)((const leaf_use *)b)->leaf;
    return (x > y) - (x < y);
}

static ct_status count_leaf_uses(const char *op, const node_list *order, leaf_uses *uses) {
    size_t n = 0;
    for (size_t i = 0; i < order->count; i++)
        for (int j = 0; j < order->items[i]->ninputs; j++) {
            const ct_tensor *input = order->items[i]->inputs[j];
            n += input && !input->grad_fn;
        }
    uses->items = ct__calloc(n ? n : 1, sizeof *uses->items);
    if (!uses->items)
        return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory for the backward pass", op);
    for (size_t i = 0; i < order->count; i++)
        for (int j = 0; j < order->items[i]->ninputs; j++) {
            ct_tensor *input = order->items[i]->inputs[j];
            if (input && !input->grad_fn) uses->items[uses->count++] = (leaf_use){input, 1, false};
        }
    qsort(uses->items, uses->count, sizeof *uses->items, by_leaf);
    size_t kept = 0;
    for (size_t i = 0; i < uses->count; i++)
        if (kept && uses->items[kept - 1].leaf == uses->items[i].leaf)
            uses->items[kept - 1].pending++;
        else
            uses->items[kept++] = uses->items[i];
    uses->count = kept;
    return CT_OK;
}

/* One of leaf's deliveries is done (got: with a gradient): the hook once it was the last. */
static void leaf_delivered(leaf_uses *uses, ct_tensor *leaf, bool got) {
    leaf_use key = {.leaf = leaf};
    leaf_use *use = bsearch(&key, uses->items, uses->count, sizeof key, by_leaf);
    if (!use) return;
    use->got |= got;
    if (--use->pending == 0 && use->got) ct__grad_ready(leaf);
}

/* Hand the gradients a node computed to its inputs. */
static ct_status deliver(ct__node *node, ct_tensor **grads, leaf_uses *uses) {
    ct_status status = CT_OK;
    for (int i = 0; i < node->ninputs; i++) {
        ct_tensor *g = grads[i];
        grads[i] = NULL;
        ct_tensor *input = node->inputs[i];
        if (!input || !g || status != CT_OK) {
            ct_release(g);
            if (input && !input->grad_fn) leaf_delivered(uses, input, false);
            continue;
        }
        g = conform(g, input);
        if (!g) {
            status = ct_last_status();
        } else if (input->grad_fn) {
            status = accumulate(&input->grad_fn->grad, g);
        } else {
            status = accumulate_leaf(input, g);
            leaf_delivered(uses, input, status == CT_OK);
        }
    }
    return status;
}

static ct_status run_node(ct__node *node, bool retain_graph, leaf_uses *uses) {
    ct_tensor *g = node->grad;
    node->grad = NULL;
    if (!g) { /* no gradient reached this node: its leaves' deliveries are done, empty */
        for (int i = 0; i < node->ninputs; i++)
            if (node->inputs[i] && !node->inputs[i]->grad_fn)
                leaf_delivered(uses, node->inputs[i], false);
        return CT_OK;
    }
    ct_tensor *local[8] = {0};
    ct_tensor **grads =
        node->ninputs <= 8 ? local : ct__calloc((size_t)node->ninputs, sizeof *grads);
    if (!grads) {
        ct_release(g);
        return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_backward: out of host memory");
    }
    ct_status status = node->backward(node, g, grads);
    ct_release(g);
    if (status == CT_OK) status = deliver(node, grads, uses);
    for (int i = 0; i < node->ninputs; i++) ct_release(grads[i]);
    if (grads != local) ct__free_mem(grads);
    if (status == CT_OK && !retain_graph) ct__node_free_graph_state(node);
    return status;
}

static ct_status run_pass(const char *op, ct_tensor *output, ct_tensor *seed, bool retain_graph) {
    if (!output->grad_fn) {
        ct_status status = accumulate_leaf(output, seed);
        if (status == CT_OK) ct__grad_ready(output);
        return status;
    }
    node_list order = {0};
    leaf_uses uses = {0};
    ct_status status = topological_order(op, output->grad_fn, &order);
    if (status == CT_OK) status = count_leaf_uses(op, &order, &uses);
    /* Every node is checked before any runs, so a refused pass changes no gradient. */
    for (size_t i = 0; i < order.count && status == CT_OK; i++)
        status = ct__check_saved_unchanged(op, order.items[i]);
    if (status == CT_OK) {
        output->grad_fn->grad = seed;
        seed = NULL;
    }
    for (size_t i = order.count; i-- > 0 && status == CT_OK;) {
        status = run_node(order.items[i], retain_graph, &uses);
        ct__backward_node_ran();
    }
    for (size_t i = 0; i < order.count; i++) {
        ct_release(order.items[i]->grad); /* left only when the pass failed */
        order.items[i]->grad = NULL;
        ct__node_release(order.items[i]);
    }
    ct__free_mem(order.items);
    ct__free_mem(uses.items);
    ct_release(seed);
    return status;
}

/* The gradient to start from: ones for a one-element output, else the given one checked. */
static ct_tensor *seed_gradient(const char *op, const ct_tensor *output,
                                const ct_tensor *gradient) {
    if (!gradient) {
        if (ct__is_complex(output->dtype))
            return ct__fail(CT_ERR_DTYPE,
                            "%s: a gradient can be implied only for a real scalar output, and "
                            "this one is %s; take a real loss from it (ct_abs, ct_real) or pass "
                            "its gradient to ct_backward_with",
                            op, ct_dtype_name(output->dtype));
        if (output->numel != 1)
            return ct__fail(CT_ERR_SHAPE,
                            "%s: a gradient is implied only for a one-element output, and this "
                            "one has %lld elements; reduce it to a scalar loss (ct_sum, "
                            "ct_mean) or pass its gradient to ct_backward_with",
                            op, (long long)output->numel);
        return ct__full_on(output->storage->device, output->ndim, output->shape, 1.0,
                           output->dtype);
    }
    if (!ct__same_shape(gradient, output))
        return ct__fail(CT_ERR_SHAPE,
                        "%s: the gradient's shape differs from the output's; pass "
                        "a gradient of the output's shape",
                        op);
    if (!ct__same_device(gradient->storage->device, output->storage->device))
        return ct__fail(CT_ERR_DEVICE_MISMATCH,
                        "%s: the gradient is on another device than the output; move it with "
                        "ct_to()",
                        op);
    return ct_cast(gradient, output->dtype);
}

ct_status ct_backward_with(const ct_tensor *output, const ct_tensor *gradient, bool retain_graph) {
    const char *op = gradient ? "ct_backward_with" : "ct_backward";
    if (!output) {
        ct__null_arg(op, 1);
        return ct_last_status();
    }
    if (!output->requires_grad)
        return ct__error(CT_ERR_STATE,
                         "%s: the tensor does not require grad, so there is nothing to "
                         "backpropagate; call ct_set_requires_grad on the parameters before "
                         "the forward pass, outside any no-grad region",
                         op);
    if (ct_scope_begin() != CT_OK) return ct_last_status();
    ct_no_grad_push();
    ct_profile_phase phase = ct_profile_set_phase(CT_PROFILE_BACKWARD);
    ct_tensor *seed = seed_gradient(op, output, gradient);
    ct_status status =
        seed ? run_pass(op, (ct_tensor *)output, seed, retain_graph) : ct_last_status();
    ct_profile_set_phase(phase);
    ct_no_grad_pop();
    /* Keep the pass's error: ending the scope does not fail once begun. */
    ct_scope_end();
    return status;
}

ct_status ct_backward(const ct_tensor *loss) { return ct_backward_with(loss, NULL, false); }

/* The tape: grad mode, nodes and their recording (tape_impl.h gives the contract). */
#include "autograd/tape_impl.h"

static _Thread_local int no_grad_depth;

ct_status ct_no_grad_push(void) {
    no_grad_depth++;
    return CT_OK;
}

ct_status ct_no_grad_pop(void) {
    if (no_grad_depth == 0)
        return ct__error(CT_ERR_STATE,
                         "ct_no_grad_pop: no no-grad region is open on this thread; each "
                         "ct_no_grad_pop must follow a ct_no_grad_push");
    no_grad_depth--;
    return CT_OK;
}

bool ct_grad_enabled(void) { return no_grad_depth == 0; }

bool ct__grad_needed(int n, const ct_tensor *const *inputs) {
    if (no_grad_depth) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i]->requires_grad) return true;
    return false;
}

ct__node *ct__node_new(const char *name, ct__backward_fn backward, int n,
                       const ct_tensor *const *inputs) {
    ct__node *node = ct__calloc(1, sizeof *node + (size_t)n * sizeof(ct_tensor *));
    if (!node)
        return ct__fail(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory for its autograd node", name);
    ct__register_node_release(ct__node_release); /* for the tensors that will hold it */
    atomic_init(&node->refcount, 1);
    node->name = name;
    node->backward = backward;
    node->ninputs = n;
    node->inputs = (ct_tensor **)(node + 1);
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i]->requires_grad)
            node->inputs[i] = ct_retain((ct_tensor *)inputs[i]);
    return node;
}

void ct__node_save(ct__node *node, int slot, const ct_tensor *t) {
    ct_release(node->saved[slot]);
    node->saved[slot] = ct_retain((ct_tensor *)t);
    node->saved_version[slot] = t ? ct__storage_version(t) : 0;
}

ct_tensor *ct__record(ct_tensor *out, ct__node *node) {
    if (!out || !node) {
        ct_release(out);
        if (node) ct__node_release(node);
        return NULL;
    }
    /* A result that is one of the inputs (an op that returned its argument), or that an
     * inner op already recorded, keeps the history it has. */
    bool is_input = false;
    for (int i = 0; i < node->ninputs; i++) is_input = is_input || node->inputs[i] == out;
    if (is_input || out->grad_fn) {
        ct__node_release(node);
        return out;
    }
    out->requires_grad = true;
    out->grad_fn = node;
    return out;
}

ct__node *ct__node_retain(ct__node *node) {
    atomic_fetch_add_explicit(&node->refcount, 1, memory_order_relaxed);
    return node;
}

/* The unscoped references a node holds are dropped with ct__tensor_drop's counterpart:
 * ct_release would look for them in this thread's scopes, which never held them. */
void ct__node_free_graph_state(ct__node *node) {
    for (int i = 0; i < node->ninputs; i++) {
        ct_tensor *input = node->inputs[i];
        node->inputs[i] = NULL;
        if (input) ct__tensor_drop(input);
    }
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++) {
        ct_tensor *saved = node->saved[i];
        node->saved[i] = NULL;
        if (saved) ct__tensor_drop(saved);
    }
    if (node->context && node->context_free) node->context_free(node->context);
    node->context = NULL;
    node->released = true;
}

void ct__node_release(ct__node *node) {
    if (atomic_fetch_sub_explicit(&node->refcount, 1, memory_order_acq_rel) != 1) return;
    ct__node_free_graph_state(node);
    ct__free_mem(node);
}

ct_status ct__check_saved_unchanged(const char *op, const ct__node *node) {
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++) {
        const ct_tensor *t = node->saved[i];
        if (!t || ct__storage_version(t) == node->saved_version[i]) continue;
        return ct__error(CT_ERR_STATE,
                         "%s: a tensor that %s saved for the backward pass has been written "
                         "in place since (ct_fill, ct_copy, an optimiser step, ...), so its "
                         "gradients would be wrong; run backward before writing into it, or "
                         "write into a ct_clone of it",
                         op, node->name);
    }
    return CT_OK;
}

ct_status ct__check_writable(const char *op, const ct_tensor *dst) {
    if (dst->grad_fn)
        return ct__error(CT_ERR_STATE,
                         "%s: the destination was made by %s and is part of a recorded graph; "
                         "in-place writes would make its gradients wrong: write into a "
                         "ct_detach of it, or compute a new tensor",
                         op, dst->grad_fn->name);
    if (dst->requires_grad && no_grad_depth == 0)
        return ct__error(CT_ERR_STATE,
                         "%s: the destination is a leaf that requires grad; write into it "
                         "inside ct_no_grad_push() ... ct_no_grad_pop(), as under torch.no_grad()",
                         op);
    return CT_OK;
}

/* The per-thread "gradient ready" hook of the backward engine (grad_hook_impl.h). */
#include "autograd/grad_hook_impl.h"

static _Thread_local ct__grad_ready_fn hook;
static _Thread_local void *hook_user;

void ct__set_grad_ready_hook(ct__grad_ready_fn fn, void *user) {
    hook = fn;
    hook_user = user;
}

void ct__grad_ready(ct_tensor *leaf) {
    if (hook) hook(leaf, hook_user);
}

void ct__backward_node_ran(void) {
    if (hook) hook(NULL, hook_user);
}

void ct__set_leaf_grad(ct_tensor *leaf, ct_tensor *grad) {
    ct__scope_forget(grad); /* the leaf owns it now, outside every scope */
    if (leaf->grad) ct__tensor_drop(leaf->grad);
    leaf->grad = grad;
}

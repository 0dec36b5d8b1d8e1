/* A per-thread "gradient ready" hook of the backward engine, for data-parallel training
 * (src/dist/ddp.c): called once per pass for each leaf a gradient reached, after the last of
 * its uses in the graph added to its .grad, so that the gradient can be sent while the rest
 * of backward runs (PyTorch's AccumulateGrad hooks), and between
 * nodes, so that what was sent keeps moving. */
#ifndef CT_GRAD_HOOK_IMPL_H
#define CT_GRAD_HOOK_IMPL_H

#include "core/tensor_impl.h"

typedef void (*ct__grad_ready_fn)(ct_tensor *leaf, void *user);

/* Install fn (NULL removes it) for backward passes run by this thread. */
void ct__set_grad_ready_hook(ct__grad_ready_fn fn, void *user);
/* Called by the engine once leaf->grad holds every use's gradient of the pass. */
void ct__grad_ready(ct_tensor *leaf);
/* Called by the engine after each node of a pass: the hook gets a NULL leaf, a chance to
 * advance the communication in flight (Open MPI moves data only inside MPI calls, so a
 * collective started early in backward moves only when polled). */
void ct__backward_node_ran(void);
/* Make grad (a new reference, consumed) leaf's gradient, replacing any. */
void ct__set_leaf_grad(ct_tensor *leaf, ct_tensor *grad);

#endif

/* The tape: autograd nodes, how ops record them, and the grad mode.
 *
 * An op whose inputs require grad (and grad mode is on) makes a node holding what its
 * backward needs, and attaches it to its result as grad_fn:
 *
 *     if (ct__grad_needed(2, inputs)) {
 *         ct__node *node = ct__node_new("ct_mul", mul_backward, 2, inputs);
 *         if (node) ct__node_save(node, 0, a), ct__node_save(node, 1, b);
 *         out = ct__record(out, node);   // NULL (and out released) if node is NULL
 *     }
 *
 * The node holds a reference to each input that requires grad (the engine needs its shape,
 * dtype and grad_fn, and leaves receive their gradient through it) and to each saved
 * tensor; backward drops them unless the graph is retained. Nothing refers back from a node
 * to its result, so graphs have no cycles and die with their last result. */
#ifndef CT_TAPE_IMPL_H
#define CT_TAPE_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"

typedef struct ct__node ct__node;

/* Gradients of a node's inputs from grad_out (the gradient of its result: the result's
 * shape, dtype and device). Write into grad_in[i] a new reference, or leave NULL when input
 * i gets no gradient (the engine skips inputs that need none: node->inputs[i] == NULL). A
 * gradient may have any shape that broadcasts to the input's (the engine sums it back) and
 * any floating dtype (the engine casts it). Runs with grad mode off. */
typedef ct_status (*ct__backward_fn)(ct__node *node, const ct_tensor *grad_out,
                                     ct_tensor **grad_in);

#define CT_NODE_MAX_SAVED 6
/* The most parameters of each kind: a reduction keeps its op and a flag for each of up to
 * CT_MAX_DIMS axes. */
#define CT_NODE_MAX_PARAMS (CT_MAX_DIMS + 1)

struct ct__node {
    atomic_int refcount;
    const char *name; /* the op, for messages: "ct_mul" */
    ct__backward_fn backward;
    int ninputs;
    ct_tensor **inputs;                  /* ninputs entries; NULL for inputs needing no grad */
    ct_tensor *saved[CT_NODE_MAX_SAVED]; /* what backward reads (ct__node_save) */
    uint64_t saved_version[CT_NODE_MAX_SAVED]; /* each saved storage's version when saved */
    double scalars[CT_NODE_MAX_PARAMS];        /* op parameters: axes, strides, p, eps, ... */
    int64_t ints[CT_NODE_MAX_PARAMS];
    void *context; /* larger op state, freed with context_free */
    void (*context_free)(void *context);
    bool released; /* backward dropped inputs and saved tensors (graph not retained) */
    /* Engine scratch for one backward pass. */
    ct_tensor *grad;
    uint64_t visit;
};

/* Grad mode on for this thread (no ct_no_grad_push region open) and some input requires
 * grad. NULL inputs are ignored (the op has failed already or takes no such input). */
bool ct__grad_needed(int n, const ct_tensor *const *inputs);

/* A node for op `name` over n inputs (entries may be NULL); NULL with CT_ERR_OUT_OF_MEMORY. */
ct__node *ct__node_new(const char *name, ct__backward_fn backward, int n,
                       const ct_tensor *const *inputs);
/* Keep a reference to t in node->saved[slot] (t may be NULL), and its storage's version:
 * backward refuses to run once t has been written in place since. */
void ct__node_save(ct__node *node, int slot, const ct_tensor *t);
/* Attach node to out as its grad_fn and mark out as requiring grad; returns out. When node
 * or out is NULL, releases the other and returns NULL (the error is already set). A result
 * that is one of the node's inputs, or already has a grad_fn, is returned unchanged and the
 * node released. */
ct_tensor *ct__record(ct_tensor *out, ct__node *node);

/* In-place writes: CT_ERR_STATE for a tensor an op recorded (its history would be wrong),
 * and for a leaf that requires grad outside a no-grad region (as PyTorch). */
ct_status ct__check_writable(const char *op, const ct_tensor *dst);

/* CT_ERR_STATE when a tensor node saved has been written in place since it was saved. */
ct_status ct__check_saved_unchanged(const char *op, const ct__node *node);

ct__node *ct__node_retain(ct__node *node);
void ct__node_release(ct__node *node);
/* Drop a node's inputs, saved tensors and context (after a backward that does not retain). */
void ct__node_free_graph_state(ct__node *node);

#endif

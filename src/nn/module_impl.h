/* The module struct: a layer's parameters, buffers and settings, or a sequence of child
 * modules, with its forward function. */
#ifndef CT_MODULE_IMPL_H
#define CT_MODULE_IMPL_H

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ctensor/nn.h"

#define CT_MODULE_MAX_TENSORS 5

/* A named parameter or buffer slot; the tensor is an unscoped reference the module owns. */
typedef struct ct__module_tensor {
    const char *name; /* "weight", "running_mean", ... (static strings) */
    ct_tensor *tensor;
    bool buffer;
} ct__module_tensor;

/* One entry of the flattened state: its full dotted name and its slot. */
typedef struct ct__state_entry {
    char *name;
    ct__module_tensor *slot;
} ct__state_entry;

typedef ct_tensor *(*ct__forward_fn)(ct_module *m, const ct_tensor *x);

struct ct_module {
    const char *kind; /* "Linear", "Conv2d", ... as PyTorch prints them */
    ct__forward_fn forward;
    ct__module_tensor tensors[CT_MODULE_MAX_TENSORS];
    int ntensors;
    ct_module **children;
    int nchildren;
    /* The name under its parent in state-dict names ("wte" in "transformer.wte.weight"): a
     * static string, or NULL for the child's index ("0.weight"). */
    const char *label;
    bool training;
    /* Settings, by kind. */
    ct_conv2d_options conv;
    ct_pool2d_options pool;
    int64_t sizes[CT_MAX_DIMS]; /* linear: in, out; conv: in, out, k; pool: out h, w; ... */
    int nsizes;
    double eps, momentum, p;
    int axis;
    /* The flattened state, built on first use (the structure never changes after
     * construction). */
    ct__state_entry *state;
    int nstate;
};

/* A module of kind with its forward; NULL with CT_ERR_OUT_OF_MEMORY. */
ct_module *ct__module_new(const char *kind, ct__forward_fn forward);
/* A module of kind owning the n children, child i named labels[i] in state-dict names
 * (labels static, or NULL for the indices); when a child is NULL (a constructor that failed,
 * whose error stays) or memory runs out, every child is freed and NULL. */
ct_module *ct__module_container(const char *kind, ct__forward_fn forward, int n,
                                ct_module *const *children, const char *const *labels);
/* relu(m(x)): for a BatchNorm2d, one fused op (ct_batch_norm_relu); otherwise the module's
 * forward, then ct_relu. */
ct_tensor *ct__module_forward_relu(ct_module *m, const ct_tensor *x);
/* Add a parameter (requires grad) or buffer; t is consumed (the module owns it). */
ct_status ct__module_add(ct_module *m, const char *name, ct_tensor *t, bool buffer);
/* How many entries m's state has (its parameters and buffers); -1 with the error set (op
 * leads the message) when the state's names cannot be built. */
int ct__module_state_size(const ct_module *m, const char *op);

#endif

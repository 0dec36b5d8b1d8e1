/* Layers without parameters (activations, pooling, dropout, flatten, softmax) and the
 * sequential container. */
#include "nn/module_impl.h"
#include "ops/op_impl.h"

#define CT_ACTIVATION_(fn_name, kind, op)                                                          \
    static ct_tensor *fn_name##_forward(ct_module *m, const ct_tensor *x) {                        \
        (void)m;                                                                                   \
        return op(x);                                                                              \
    }                                                                                              \
    ct_module *ct_nn_##fn_name(void) { return ct__module_new(kind, fn_name##_forward); }
CT_ACTIVATION_(relu, "ReLU", ct_relu)
CT_ACTIVATION_(gelu, "GELU", ct_gelu)
CT_ACTIVATION_(gelu_tanh, "GELU(approximate='tanh')", ct_gelu_tanh)
CT_ACTIVATION_(tanh, "Tanh", ct_tanh)
CT_ACTIVATION_(sigmoid, "Sigmoid", ct_sigmoid)
#undef CT_ACTIVATION_

static ct_tensor *flatten_forward(ct_module *m, const ct_tensor *x) {
    (void)m;
    return ct_flatten(x, 1, -1);
}

ct_module *ct_nn_flatten(void) { return ct__module_new("Flatten", flatten_forward); }

static ct_tensor *softmax_forward(ct_module *m, const ct_tensor *x) {
    return ct_softmax(x, m->axis);
}

static ct_tensor *log_softmax_forward(ct_module *m, const ct_tensor *x) {
    return ct_log_softmax(x, m->axis);
}

ct_module *ct_nn_softmax(int axis) {
    ct_module *m = ct__module_new("Softmax", softmax_forward);
    if (m) m->axis = axis;
    return m;
}

ct_module *ct_nn_log_softmax(int axis) {
    ct_module *m = ct__module_new("LogSoftmax", log_softmax_forward);
    if (m) m->axis = axis;
    return m;
}

static ct_tensor *dropout_forward(ct_module *m, const ct_tensor *x) {
    return ct_dropout(x, m->p, m->training);
}

ct_module *ct_nn_dropout(double p) {
    if (!(p >= 0 && p <= 1))
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_nn_dropout: p is %g; it must be a probability in [0, 1]", p);
    ct_module *m = ct__module_new("Dropout", dropout_forward);
    if (m) m->p = p;
    return m;
}

static ct_tensor *max_pool_forward(ct_module *m, const ct_tensor *x) {
    return ct_max_pool2d(x, &m->pool);
}

static ct_tensor *avg_pool_forward(ct_module *m, const ct_tensor *x) {
    return ct_avg_pool2d(x, &m->pool);
}

static ct_module *pool(const char *op, const char *kind, ct__forward_fn forward,
                       const ct_pool2d_options *options) {
    if (!options)
        return ct__fail(CT_ERR_INVALID_ARG, "%s: options are NULL; give at least the kernel size",
                        op);
    ct_module *m = ct__module_new(kind, forward);
    if (m) m->pool = *options;
    return m;
}

ct_module *ct_nn_max_pool2d(const ct_pool2d_options *options) {
    return pool("ct_nn_max_pool2d", "MaxPool2d", max_pool_forward, options);
}

ct_module *ct_nn_avg_pool2d(const ct_pool2d_options *options) {
    return pool("ct_nn_avg_pool2d", "AvgPool2d", avg_pool_forward, options);
}

static ct_tensor *adaptive_forward(ct_module *m, const ct_tensor *x) {
    return ct_adaptive_avg_pool2d(x, m->sizes[0], m->sizes[1]);
}

ct_module *ct_nn_adaptive_avg_pool2d(int64_t out_h, int64_t out_w) {
    if (out_h < 1 || out_w < 1)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_nn_adaptive_avg_pool2d: the output size %lldx%lld must be positive",
                        (long long)out_h, (long long)out_w);
    ct_module *m = ct__module_new("AdaptiveAvgPool2d", adaptive_forward);
    if (m) m->sizes[0] = out_h, m->sizes[1] = out_w, m->nsizes = 2;
    return m;
}

/* Each child's output feeds the next; intermediate results are released as soon as the
 * next child has consumed them (autograd keeps what backward needs). */
static ct_tensor *sequential_forward(ct_module *m, const ct_tensor *x) {
    ct_tensor *current = ct__new_ref(x);
    for (int i = 0; i < m->nchildren && current; i++) {
        ct_tensor *next = ct_module_forward(m->children[i], current);
        ct_release(current);
        current = next;
    }
    return current;
}

ct_module *ct_nn_sequential(int n, ct_module *const *children) {
    if (n < 0 || (n > 0 && !children))
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_nn_sequential: n is %d with %s children; give n >= 0 modules", n,
                        children ? "an array of" : "NULL");
    int missing = -1;
    for (int i = 0; i < n && missing < 0; i++)
        if (!children[i]) missing = i;
    ct_module *m = missing < 0 ? ct__module_new("Sequential", sequential_forward) : NULL;
    ct_module **owned = m && n ? ct__calloc((size_t)n, sizeof *owned) : NULL;
    if (!m || (n && !owned)) {
        /* A NULL child is a constructor that failed: keep its error. */
        if (missing >= 0) ct__null_arg("ct_nn_sequential", missing + 2);
        for (int i = 0; i < n; i++) ct_module_free(children[i]);
        ct__free_mem(m);
        return NULL;
    }
    for (int i = 0; i < n; i++) owned[i] = children[i];
    m->children = owned;
    m->nchildren = n;
    return m;
}

ct_module *ct__module_container(const char *kind, ct__forward_fn forward, int n,
                                ct_module *const *children, const char *const *labels) {
    ct_module *m = ct_nn_sequential(n, children);
    if (!m) return NULL;
    m->kind = kind;
    m->forward = forward;
    for (int i = 0; labels && i < n; i++) m->children[i]->label = labels[i];
    return m;
}

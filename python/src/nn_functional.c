/* ct.nn.functional's C functions: each is one call into nn_functional.h with PyTorch's
 * arguments and defaults (python/ctensor/nn.py re-exports them under their names). */
#include "ctpy_impl.h"

/* A Tensor, or None (NULL). */
static int opt_tensor(PyObject *o, void *out) {
    if (o == Py_None) {
        *(ct_tensor **)out = NULL;
        return 1;
    }
    if (!ctpy_is_tensor(o)) {
        PyErr_Format(PyExc_TypeError, "expected a ctensor.Tensor or None, got %R", o);
        return 0;
    }
    *(ct_tensor **)out = ctpy_tensor_of(o);
    return 1;
}

static int tensor_arg(PyObject *o, void *out) {
    if (o == Py_None) {
        PyErr_SetString(PyExc_TypeError, "expected a ctensor.Tensor, got None");
        return 0;
    }
    return opt_tensor(o, out);
}

/* An int or a pair of ints into out[2]. */
static int pair(PyObject *o, void *out) {
    int64_t *v = out;
    if (PyLong_Check(o)) {
        v[0] = v[1] = PyLong_AsLongLong(o);
        return !PyErr_Occurred();
    }
    if (PyTuple_Check(o) && PyTuple_Size(o) == 2) {
        v[0] = PyLong_AsLongLong(PyTuple_GetItem(o, 0));
        v[1] = PyLong_AsLongLong(PyTuple_GetItem(o, 1));
        return !PyErr_Occurred();
    }
    PyErr_Format(PyExc_TypeError, "expected an int or a pair of ints, got %R", o);
    return 0;
}

static int reduction(PyObject *o, void *out) {
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    ct_reduction *r = out;
    if (s && !strcmp(s, "mean"))
        *r = CT_REDUCTION_MEAN;
    else if (s && !strcmp(s, "sum"))
        *r = CT_REDUCTION_SUM;
    else if (s && !strcmp(s, "none"))
        *r = CT_REDUCTION_NONE;
    else {
        PyErr_Format(PyExc_ValueError, "reduction must be 'mean', 'sum' or 'none', got %R", o);
        return 0;
    }
    return 1;
}

static PyObject *f_linear(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"input", "weight", "bias", NULL};
    ct_tensor *x, *w, *b = NULL, *y;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&|O&:linear", kw, tensor_arg, &x, tensor_arg,
                                     &w, opt_tensor, &b))
        return NULL;
    CTPY_NOGIL(y = ct_linear(x, w, b));
    return ctpy_wrap(y);
}

static PyObject *f_conv2d(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"input",   "weight",   "bias",   "stride",
                         "padding", "dilation", "groups", NULL};
    ct_tensor *x, *w, *b = NULL, *y;
    ct_conv2d_options o = {{1, 1}, {0, 0}, {1, 1}, 1};
    long long groups = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&|O&O&O&O&L:conv2d", kw, tensor_arg, &x,
                                     tensor_arg, &w, opt_tensor, &b, pair, o.stride, pair,
                                     o.padding, pair, o.dilation, &groups))
        return NULL;
    o.groups = groups;
    CTPY_NOGIL(y = ct_conv2d(x, w, b, &o));
    return ctpy_wrap(y);
}

static PyObject *pool(PyObject *args, PyObject *kwargs, bool max) {
    static char *kw[] = {"input", "kernel_size", "stride", "padding", NULL};
    ct_tensor *x, *y;
    ct_pool2d_options o = {{0, 0}, {0, 0}, {0, 0}};
    PyObject *stride = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&|OO&:pool2d", kw, tensor_arg, &x, pair,
                                     o.kernel, &stride, pair, o.padding))
        return NULL;
    if (stride != Py_None && !pair(stride, o.stride)) return NULL;
    CTPY_NOGIL(y = max ? ct_max_pool2d(x, &o) : ct_avg_pool2d(x, &o));
    return ctpy_wrap(y);
}

static PyObject *f_max_pool2d(PyObject *self, PyObject *args, PyObject *kwargs) {
    return pool(args, kwargs, true);
}

static PyObject *f_avg_pool2d(PyObject *self, PyObject *args, PyObject *kwargs) {
    return pool(args, kwargs, false);
}

static PyObject *f_adaptive_avg_pool2d(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"input", "output_size", NULL};
    ct_tensor *x, *y;
    int64_t size[2];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&:adaptive_avg_pool2d", kw, tensor_arg, &x,
                                     pair, size))
        return NULL;
    CTPY_NOGIL(y = ct_adaptive_avg_pool2d(x, size[0], size[1]));
    return ctpy_wrap(y);
}

static PyObject *f_batch_norm(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"input",    "running_mean", "running_var", "weight", "bias",
                         "training", "momentum",     "eps",         NULL};
    ct_tensor *x, *mean, *var, *w = NULL, *b = NULL, *y;
    int training = 0;
    double momentum = 0.1, eps = 1e-5;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&O&|O&O&pdd:batch_norm", kw, tensor_arg, &x,
                                     opt_tensor, &mean, opt_tensor, &var, opt_tensor, &w,
                                     opt_tensor, &b, &training, &momentum, &eps))
        return NULL;
    CTPY_NOGIL(y = ct_batch_norm(x, mean, var, w, b, training, momentum, eps));
    return ctpy_wrap(y);
}

static PyObject *f_layer_norm(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"input", "normalized_shape", "weight", "bias", "eps", NULL};
    ct_tensor *x, *w = NULL, *b = NULL, *y;
    PyObject *shape_obj;
    double eps = 1e-5;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O|O&O&d:layer_norm", kw, tensor_arg, &x,
                                     &shape_obj, opt_tensor, &w, opt_tensor, &b, &eps))
        return NULL;
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    if (ctpy_parse_shape(shape_obj, "layer_norm: normalized_shape", shape, &ndim) < 0) return NULL;
    CTPY_NOGIL(y = ct_layer_norm(x, ndim, w, b, eps));
    return ctpy_wrap(y);
}

static PyObject *f_dropout(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"input", "p", "training", NULL};
    ct_tensor *x, *y;
    double p = 0.5;
    int training = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|dp:dropout", kw, tensor_arg, &x, &p,
                                     &training))
        return NULL;
    CTPY_NOGIL(y = ct_dropout(x, p, training));
    return ctpy_wrap(y);
}

/* scale: None (1 / sqrt(E)) or a nonzero float (0 is the C function's "default"). */
static PyObject *f_scaled_dot_product_attention(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"query",     "key",       "value", "attn_mask",
                         "dropout_p", "is_causal", "scale", NULL};
    ct_tensor *q, *k, *v, *mask = NULL, *y;
    double dropout_p = 0.0, scale = 0.0;
    int causal = 0;
    PyObject *scale_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&O&|O&dpO:scaled_dot_product_attention", kw,
                                     tensor_arg, &q, tensor_arg, &k, tensor_arg, &v, opt_tensor,
                                     &mask, &dropout_p, &causal, &scale_obj))
        return NULL;
    if (scale_obj != Py_None) {
        scale = PyFloat_AsDouble(scale_obj);
        if (scale == -1.0 && PyErr_Occurred()) return NULL;
        if (scale == 0.0) {
            PyErr_SetString(PyExc_ValueError,
                            "scaled_dot_product_attention: scale=0 is not supported (every key "
                            "would weigh the same); pass None for 1 / sqrt(E)");
            return NULL;
        }
    }
    CTPY_NOGIL(y = ct_scaled_dot_product_attention(q, k, v, mask, causal, dropout_p, scale));
    return ctpy_wrap(y);
}

static PyObject *f_embedding(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"input", "weight", NULL};
    ct_tensor *x, *w, *y;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&:embedding", kw, tensor_arg, &x, tensor_arg,
                                     &w))
        return NULL;
    CTPY_NOGIL(y = ct_embedding(x, w));
    return ctpy_wrap(y);
}

static PyObject *softmaxes(PyObject *args, PyObject *kwargs, bool log) {
    static char *kw[] = {"input", "dim", NULL};
    ct_tensor *x, *y;
    int dim;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&i:softmax", kw, tensor_arg, &x, &dim))
        return NULL;
    CTPY_NOGIL(y = log ? ct_log_softmax(x, dim) : ct_softmax(x, dim));
    return ctpy_wrap(y);
}

static PyObject *f_softmax(PyObject *self, PyObject *args, PyObject *kwargs) {
    return softmaxes(args, kwargs, false);
}

static PyObject *f_log_softmax(PyObject *self, PyObject *args, PyObject *kwargs) {
    return softmaxes(args, kwargs, true);
}

static PyObject *f_cross_entropy(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"input", "target", "reduction", "label_smoothing", "ignore_index", NULL};
    ct_tensor *x, *t, *y;
    ct_cross_entropy_options o = {CT_REDUCTION_MEAN, 0.0, -100};
    long long ignore = -100;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&|O&dL:cross_entropy", kw, tensor_arg, &x,
                                     tensor_arg, &t, reduction, &o.reduction, &o.label_smoothing,
                                     &ignore))
        return NULL;
    o.ignore_index = ignore;
    CTPY_NOGIL(y = ct_cross_entropy(x, t, &o));
    return ctpy_wrap(y);
}

static PyObject *f_mse_loss(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"input", "target", "reduction", NULL};
    ct_tensor *x, *t, *y;
    ct_reduction r = CT_REDUCTION_MEAN;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&|O&:mse_loss", kw, tensor_arg, &x,
                                     tensor_arg, &t, reduction, &r))
        return NULL;
    CTPY_NOGIL(y = ct_mse_loss(x, t, r));
    return ctpy_wrap(y);
}

static PyObject *f_clip_grad_norm(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"parameters", "max_norm", "norm_type", NULL};
    PyObject *seq;
    double max_norm, norm_type = 2.0, total = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Od|d:clip_grad_norm_", kw, &seq, &max_norm,
                                     &norm_type))
        return NULL;
    /* a snapshot that holds the tensors while the GIL is released (another thread may
     * change the caller's list meanwhile) */
    PyObject *fast = ctpy_snapshot(seq, PY_SSIZE_T_MAX - 1, "clip_grad_norm_: parameters");
    if (!fast) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(fast);
    ct_tensor **params = PyMem_Calloc((size_t)n + 1, sizeof *params);
    bool ok = params != NULL;
    for (Py_ssize_t i = 0; ok && i < n; i++) ok = tensor_arg(PyTuple_GET_ITEM(fast, i), &params[i]);
    ct_status status = CT_OK;
    if (ok) CTPY_NOGIL(status = ct_clip_grad_norm((int)n, params, max_norm, norm_type, &total));
    PyMem_Free(params);
    Py_DECREF(fast);
    if (!params) return PyErr_NoMemory();
    if (!ok || ctpy_check(status) < 0) return NULL;
    return PyFloat_FromDouble(total);
}

static PyMethodDef functional_functions[] = {
    {"_f_linear", KW f_linear, KWARGS, "F.linear"},
    {"_f_conv2d", KW f_conv2d, KWARGS, "F.conv2d"},
    {"_f_max_pool2d", KW f_max_pool2d, KWARGS, "F.max_pool2d"},
    {"_f_avg_pool2d", KW f_avg_pool2d, KWARGS, "F.avg_pool2d"},
    {"_f_adaptive_avg_pool2d", KW f_adaptive_avg_pool2d, KWARGS, "F.adaptive_avg_pool2d"},
    {"_f_batch_norm", KW f_batch_norm, KWARGS, "F.batch_norm"},
    {"_f_layer_norm", KW f_layer_norm, KWARGS, "F.layer_norm"},
    {"_f_dropout", KW f_dropout, KWARGS, "F.dropout"},
    {"_f_embedding", KW f_embedding, KWARGS, "F.embedding"},
    {"_f_scaled_dot_product_attention", KW f_scaled_dot_product_attention, KWARGS,
     "F.scaled_dot_product_attention"},
    {"_f_softmax", KW f_softmax, KWARGS, "F.softmax"},
    {"_f_log_softmax", KW f_log_softmax, KWARGS, "F.log_softmax"},
    {"_f_cross_entropy", KW f_cross_entropy, KWARGS, "F.cross_entropy"},
    {"_f_mse_loss", KW f_mse_loss, KWARGS, "F.mse_loss"},
    {"_clip_grad_norm", KW f_clip_grad_norm, KWARGS, "nn.utils.clip_grad_norm_"},
    {0}, /* sentinel */
};

int ctpy_nn_functional_init(PyObject *module) {
    return PyModule_AddFunctions(module, functional_functions);
}

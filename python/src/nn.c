/* ct.nn's C side: the library's layers (nn.h) as handles that ct.nn's built-in modules
 * (python/ctensor/nn.py) hold, and ct.nn.functional (nn_functional.h). A handle owns one
 * ct_module; its forward, move, mode switch and state listing are each one C call. */
#include "ctpy_impl.h"

typedef struct ctpy_module {
    PyObject_HEAD ct_module *m;
} ctpy_module;

static void module_dealloc(PyObject *self) {
    ct_module_free(((ctpy_module *)self)->m);
    Py_TYPE(self)->tp_free(self);
}

static ct_module *module_of(PyObject *self) { return ((ctpy_module *)self)->m; }

/* PyTorch's rule: a floating input of another dtype than the layer's floating parameters is
 * an error outside autocast (the C layer would compute in the wider dtype and return it, so
 * float64 would spread silently). true with the DTypeError set. */
static bool input_dtype_differs(const ct_module *m, const ct_tensor *x) {
    ct_tensor *weight;
    bool buffer;
    ct_dtype in = ct_dtype_of(x);
    if (!ct_dtype_is_floating(in) || !ct_module_state_at(m, 0, &weight, &buffer)) return false;
    ct_dtype own = ct_dtype_of(weight);
    if (!ct_dtype_is_floating(own) || own == in ||
        ct_autocast_dtype(ct_device_of(x).type) != CT_F32)
        return false;
    char what[64] = "the layer";
    ct_module_describe(m, what, sizeof what);
    what[strcspn(what, "(")] = '\0';
    ctpy_raise_status(CT_ERR_DTYPE,
                      "%s: the input is %s but the layer's parameters are %s; convert the input "
                      "(x.%s(), or x.to(ctensor.%s)), or run the step under ctensor.autocast",
                      what, ct_dtype_name(in), ct_dtype_name(own),
                      own == CT_F32   ? "float"
                      : own == CT_F64 ? "double"
                      : own == CT_F16 ? "half"
                                      : "bfloat16",
                      ct_dtype_name(own));
    return true;
}

static PyObject *module_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *x;
    if (!PyArg_ParseTuple(args, "O!:forward", &ctpy_tensor_type, &x)) return NULL;
    if (kwargs && PyDict_Size(kwargs) > 0) {
        PyErr_SetString(PyExc_TypeError, "a built-in module's forward takes one tensor");
        return NULL;
    }
    if (input_dtype_differs(module_of(self), ctpy_tensor_of(x))) return NULL;
    ct_tensor *y;
    CTPY_NOGIL(y = ct_module_forward(module_of(self), ctpy_tensor_of(x)));
    return ctpy_wrap(y);
}

static PyObject *module_to(PyObject *self, PyObject *arg) {
    ct_device device;
    if (!ctpy_opt_device(arg, &device)) return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_module_to(module_of(self), device));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *module_train(PyObject *self, PyObject *arg) {
    int flag = PyObject_IsTrue(arg);
    if (flag < 0 || ctpy_check(ct_module_train(module_of(self), flag)) < 0) return NULL;
    Py_RETURN_NONE;
}

/* [(name, tensor, is_buffer), ...] in state-dict order; the tensors are the module's own. */
static PyObject *module_state(PyObject *self, PyObject *unused) {
    (void)unused;
    PyObject *list = PyList_New(0);
    for (int i = 0; list; i++) {
        ct_tensor *t;
        bool buffer;
        const char *name = ct_module_state_at(module_of(self), i, &t, &buffer);
        if (!name) break;
        PyObject *item =
            Py_BuildValue("(sNO)", name, ctpy_wrap(ct_retain(t)), buffer ? Py_True : Py_False);
        if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

static PyObject *module_repr(PyObject *self) {
    char buf[256];
    ct_module_describe(module_of(self), buf, sizeof buf);
    buf[strcspn(buf, "\n")] = '\0';
    return PyUnicode_FromString(buf);
}

static PyMethodDef module_methods[] = {
    {"to", module_to, METH_O, "to(device): move the parameters and buffers."},
    {"train", module_train, METH_O, "train(flag): training or evaluation mode."},
    {"state", module_state, METH_NOARGS, "[(name, tensor, is_buffer)] in state-dict order."},
    {0}, /* sentinel */
};

static PyTypeObject module_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._ctensor._CModule",
    .tp_basicsize = sizeof(ctpy_module),
    .tp_dealloc = module_dealloc,
    .tp_call = module_call,
    .tp_repr = module_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A handle on one of the C library's modules (ct.nn's built-in layers).",
    .tp_methods = module_methods,
};

static PyObject *wrap_module(ct_module *m) {
    if (!m) return ctpy_raise();
    ctpy_module *o = PyObject_New(ctpy_module, &module_type);
    if (!o) {
        ct_module_free(m);
        return NULL;
    }
    o->m = m;
    return (PyObject *)o;
}

/* ---- constructors: _layer(kind, ...) with PyTorch's arguments ---- */

static PyObject *make_pool(const char *kind, PyObject *args) {
    long long k, stride = 0, pad = 0;
    if (!PyArg_ParseTuple(args, "sL|LL", &kind, &k, &stride, &pad)) return NULL;
    ct_pool2d_options o = {{k, k}, {stride, stride}, {pad, pad}};
    return wrap_module(kind[0] == 'm' ? ct_nn_max_pool2d(&o) : ct_nn_avg_pool2d(&o));
}

static PyObject *make_conv(PyObject *args) {
    const char *kind;
    long long in, out, k, stride, pad, dil, groups;
    int bias;
    if (!PyArg_ParseTuple(args, "sLLLLLLLp", &kind, &in, &out, &k, &stride, &pad, &dil, &groups,
                          &bias))
        return NULL;
    ct_conv2d_options o = {{stride, stride}, {pad, pad}, {dil, dil}, groups};
    return wrap_module(ct_nn_conv2d(in, out, k, &o, bias));
}

static PyObject *make_layer_norm(PyObject *args) {
    const char *kind;
    PyObject *shape_obj;
    double eps;
    if (!PyArg_ParseTuple(args, "sOd", &kind, &shape_obj, &eps)) return NULL;
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    if (ctpy_parse_shape(shape_obj, "LayerNorm: normalized_shape", shape, &ndim) < 0) return NULL;
    return wrap_module(ct_nn_layer_norm(ndim, shape, eps));
}

static PyObject *make_sized(const char *kind, PyObject *args) {
    long long a = 0, b = 0;
    int flag = 1;
    double x = 0, y = 0;
    if (!strcmp(kind, "linear")) {
        if (!PyArg_ParseTuple(args, "sLLp", &kind, &a, &b, &flag)) return NULL;
        return wrap_module(ct_nn_linear(a, b, flag));
    }
    if (!strcmp(kind, "adaptive_avg_pool2d") || !strcmp(kind, "embedding")) {
        if (!PyArg_ParseTuple(args, "sLL", &kind, &a, &b)) return NULL;
        return wrap_module(kind[0] == 'a' ? ct_nn_adaptive_avg_pool2d(a, b)
                                          : ct_nn_embedding(a, b));
    }
    if (!strcmp(kind, "batch_norm2d")) {
        if (!PyArg_ParseTuple(args, "sLdd", &kind, &a, &x, &y)) return NULL;
        return wrap_module(ct_nn_batch_norm2d(a, x, y));
    }
    return NULL;
}

static PyObject *make_simple(const char *kind, PyObject *args) {
    int axis = -1;
    double p = 0.5;
    if (!strcmp(kind, "dropout")) {
        if (!PyArg_ParseTuple(args, "sd", &kind, &p)) return NULL;
        return wrap_module(ct_nn_dropout(p));
    }
    if (!strcmp(kind, "softmax") || !strcmp(kind, "log_softmax")) {
        if (!PyArg_ParseTuple(args, "si", &kind, &axis)) return NULL;
        return wrap_module(kind[0] == 's' ? ct_nn_softmax(axis) : ct_nn_log_softmax(axis));
    }
    static const struct {
        const char *name;
        ct_module *(*make)(void);
    } plain[] = {{"flatten", ct_nn_flatten},     {"relu", ct_nn_relu}, {"gelu", ct_nn_gelu},
                 {"gelu_tanh", ct_nn_gelu_tanh}, {"tanh", ct_nn_tanh}, {"sigmoid", ct_nn_sigmoid}};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (!strcmp(kind, plain[i].name)) return wrap_module(plain[i].make());
    return ctpy_raise_status(CT_ERR_INVALID_ARG, "no built-in layer named '%s'", kind);
}

static PyObject *py_layer(PyObject *self, PyObject *args) {
    (void)self;
    const char *kind;
    if (PyTuple_Size(args) < 1 || !(kind = PyUnicode_AsUTF8(PyTuple_GetItem(args, 0)))) {
        PyErr_SetString(PyExc_TypeError, "_layer(kind, ...): kind must be a string");
        return NULL;
    }
    if (!strcmp(kind, "max_pool2d") || !strcmp(kind, "avg_pool2d")) return make_pool(kind, args);
    if (!strcmp(kind, "conv2d")) return make_conv(args);
    if (!strcmp(kind, "layer_norm")) return make_layer_norm(args);
    PyObject *sized = make_sized(kind, args);
    if (sized || PyErr_Occurred()) return sized;
    return make_simple(kind, args);
}

static PyMethodDef nn_functions[] = {
    {"_layer", py_layer, METH_VARARGS, "_layer(kind, ...): one of the C library's layers."},
    {0}, /* sentinel */
};

int ctpy_nn_init(PyObject *module) {
    if (PyType_Ready(&module_type) < 0) return -1;
    if (PyModule_AddFunctions(module, nn_functions) < 0) return -1;
    return ctpy_nn_functional_init(module);
}

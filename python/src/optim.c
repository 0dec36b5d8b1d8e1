/* ct.optim's C side: a handle on one ct_optimizer (SGD, Adam, AdamW over one parameter
 * group, with the fused C updates), its lr, and its state for state_dict(). ct.optim
 * (python/ctensor/optim.py) makes one per parameter group. */
#include "ctpy_impl.h"

typedef struct ctpy_optimizer {
    PyObject_HEAD ct_optimizer *opt;
} ctpy_optimizer;

static void optimizer_dealloc(PyObject *self) {
    ct_optimizer_free(((ctpy_optimizer *)self)->opt);
    Py_TYPE(self)->tp_free(self);
}

static ct_optimizer *opt_of(PyObject *self) { return ((ctpy_optimizer *)self)->opt; }

static PyObject *o_step(PyObject *self, PyObject *unused) {
    ct_status status;
    CTPY_NOGIL(status = ct_optimizer_step(opt_of(self)));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *o_zero_grad(PyObject *self, PyObject *unused) {
    if (ctpy_check(ct_optimizer_zero_grad(opt_of(self))) < 0) return NULL;
    Py_RETURN_NONE;
}

/* [(name, tensor)]: "state.<i>.<key>" as ct_optimizer_state_at names them. */
static PyObject *o_state(PyObject *self, PyObject *unused) {
    int n = ct_optimizer_state_count(opt_of(self));
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < n; i++) {
        const char *name;
        ct_tensor *t;
        if (ctpy_check(ct_optimizer_state_at(opt_of(self), i, &name, &t)) < 0) {
            Py_CLEAR(list);
            break;
        }
        PyObject *item = Py_BuildValue("(sN)", name, ctpy_wrap(t));
        if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

static PyObject *o_load_state(PyObject *self, PyObject *args) {
    const char *name;
    PyObject *value;
    if (!PyArg_ParseTuple(args, "sO!:load_state", &name, &ctpy_tensor_type, &value)) return NULL;
    if (ctpy_check(ct_optimizer_load_state(opt_of(self), name, ctpy_tensor_of(value))) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *o_get_lr(PyObject *self, void *unused) {
    return PyFloat_FromDouble(ct_optimizer_get_lr(opt_of(self)));
}

static int o_set_lr(PyObject *self, PyObject *value, void *unused) {
    double lr = value ? PyFloat_AsDouble(value) : -1.0;
    if (lr == -1.0 && PyErr_Occurred()) return -1;
    return ctpy_check(ct_optimizer_set_lr(opt_of(self), lr));
}

static PyObject *o_get_momentum(PyObject *self, void *unused) {
    return PyFloat_FromDouble(ct_optimizer_get_momentum(opt_of(self)));
}

static int o_set_momentum(PyObject *self, PyObject *value, void *unused) {
    double momentum = value ? PyFloat_AsDouble(value) : -1.0;
    if (momentum == -1.0 && PyErr_Occurred()) return -1;
    return ctpy_check(ct_optimizer_set_momentum(opt_of(self), momentum));
}

static PyMethodDef optimizer_methods[] = {
    {"step", o_step, METH_NOARGS, "Update every parameter that has a gradient."},
    {"zero_grad", o_zero_grad, METH_NOARGS, "Drop every parameter's gradient."},
    {"state", o_state, METH_NOARGS, "[(name, tensor)] of the optimiser's state."},
    {"load_state", o_load_state, METH_VARARGS, "load_state(name, tensor): set one entry."},
    {0}, /* sentinel */
};

static PyGetSetDef optimizer_getset[] = {
    {"lr", o_get_lr, o_set_lr, "The learning rate.", NULL},
    {"momentum", o_get_momentum, o_set_momentum, "SGD's momentum, or Adam's beta1.", NULL},
    {0},
};

static PyTypeObject optimizer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._ctensor._COptimizer",
    .tp_basicsize = sizeof(ctpy_optimizer),
    .tp_dealloc = optimizer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A handle on one of the C library's optimisers (one parameter group).",
    .tp_methods = optimizer_methods,
    .tp_getset = optimizer_getset,
};

ct_tensor **ctpy_tensor_array(PyObject *seq, int *n) {
    PyObject *fast = PySequence_Fast(seq, "params must be a sequence of tensors");
    if (!fast) return NULL;
    Py_ssize_t size = PySequence_Fast_GET_SIZE(fast);
    ct_tensor **out = size < INT32_MAX ? PyMem_Calloc((size_t)size + 1, sizeof *out) : NULL;
    if (!out) PyErr_NoMemory();
    for (Py_ssize_t i = 0; out && i < size; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        if (!ctpy_is_tensor(o)) {
            PyErr_Format(PyExc_TypeError, "params[%zd] is not a ctensor.Tensor", i);
            PyMem_Free(out);
            out = NULL;
        } else {
            out[i] = ctpy_tensor_of(o);
        }
    }
    *n = (int)size;
    Py_DECREF(fast);
    return out;
}

ct_optimizer *ctpy_optimizer_of(PyObject *o) {
    if (!PyObject_TypeCheck(o, &optimizer_type)) {
        PyErr_SetString(PyExc_TypeError, "expected a C optimiser handle");
        return NULL;
    }
    return opt_of(o);
}

static PyObject *wrap_optimizer(ct_optimizer *opt) {
    if (!opt) return ctpy_raise();
    ctpy_optimizer *o = PyObject_New(ctpy_optimizer, &optimizer_type);
    if (!o) {
        ct_optimizer_free(opt);
        return NULL;
    }
    o->opt = opt;
    return (PyObject *)o;
}

static PyObject *py_sgd(PyObject *self, PyObject *args) {
    PyObject *seq;
    ct_sgd_options o = {0};
    int nesterov = 0, n;
    if (!PyArg_ParseTuple(args, "Oddddp:_sgd", &seq, &o.lr, &o.momentum, &o.dampening,
                          &o.weight_decay, &nesterov))
        return NULL;
    o.nesterov = nesterov;
    ct_tensor **params = ctpy_tensor_array(seq, &n);
    if (!params) return NULL;
    ct_optimizer *opt = ct_sgd(n, params, &o);
    PyMem_Free(params);
    return wrap_optimizer(opt);
}

static PyObject *py_adam(PyObject *self, PyObject *args) {
    PyObject *seq;
    ct_adam_options o;
    int amsgrad = 0, decoupled = 0, n;
    if (!PyArg_ParseTuple(args, "Odddddpp:_adam", &seq, &o.lr, &o.beta1, &o.beta2, &o.eps,
                          &o.weight_decay, &amsgrad, &decoupled))
        return NULL;
    o.amsgrad = amsgrad;
    ct_tensor **params = ctpy_tensor_array(seq, &n);
    if (!params) return NULL;
    ct_optimizer *opt = decoupled ? ct_adamw(n, params, &o) : ct_adam(n, params, &o);
    PyMem_Free(params);
    return wrap_optimizer(opt);
}

static PyMethodDef optim_functions[] = {
    {"_sgd", py_sgd, METH_VARARGS,
     "_sgd(params, lr, momentum, dampening, weight_decay, nesterov): a C SGD."},
    {"_adam", py_adam, METH_VARARGS,
     "_adam(params, lr, beta1, beta2, eps, weight_decay, amsgrad, decoupled): a C Adam(W)."},
    {0}, /* sentinel */
};

int ctpy_optim_init(PyObject *module) {
    if (PyType_Ready(&optimizer_type) < 0) return -1;
    return PyModule_AddFunctions(module, optim_functions);
}

/* Autograd from Python: Tensor.requires_grad, .requires_grad_(), .grad (assignable),
 * .is_leaf, .backward() (handed to an armed DistributedDataParallel, ddp.c), .detach(),
 * ._move_to_() (Module.to's in-place move), and the no-grad switch behind ct.no_grad() /
 * ct.enable_grad() (python/ctensor/autograd.py). Every call is one call into the C tape
 * (autograd.h): a Python training step records no Python-level graph. */
#include "ctpy_impl.h"

static PyObject *get_requires_grad(PyObject *self, void *unused) {
    (void)unused;
    return PyBool_FromLong(ct_requires_grad(ctpy_tensor_of(self)));
}

static int set_requires_grad(PyObject *self, PyObject *value, void *unused) {
    (void)unused;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "requires_grad cannot be deleted");
        return -1;
    }
    int flag = PyObject_IsTrue(value);
    if (flag < 0) return -1;
    return ctpy_check(ct_set_requires_grad(ctpy_tensor_of(self), flag));
}

static PyObject *get_grad(PyObject *self, void *unused) {
    (void)unused;
    ct_tensor *t = ctpy_tensor_of(self);
    if (!ct_requires_grad(t) && !ct_is_leaf(t)) Py_RETURN_NONE;
    ct_tensor *g = ct_grad(t);
    if (!g) {
        if (ct_last_status() != CT_ERR_STATE) return ctpy_raise();
        ct_clear_error(); /* no gradient yet: None, as PyTorch's */
        Py_RETURN_NONE;
    }
    return ctpy_wrap(g);
}

/* `t.grad = g` (a tensor of t's shape, dtype and device, copied) or `t.grad = None`. */
static int set_grad(PyObject *self, PyObject *value, void *unused) {
    (void)unused;
    ct_tensor *t = ctpy_tensor_of(self);
    if (!value || value == Py_None) return ctpy_check(ct_zero_grad(t));
    if (!ctpy_is_tensor(value)) {
        PyErr_Format(PyExc_TypeError, "assigned grad must be a ctensor Tensor or None, not %s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    ct_status status;
    CTPY_NOGIL(status = ct_set_grad(t, ctpy_tensor_of(value)));
    return ctpy_check(status);
}

static PyObject *get_is_leaf(PyObject *self, void *unused) {
    (void)unused;
    return PyBool_FromLong(ct_is_leaf(ctpy_tensor_of(self)));
}

static PyGetSetDef autograd_getset[] = {
    {"requires_grad", get_requires_grad, set_requires_grad,
     "Whether ops on this tensor record their backward.", NULL},
    {"grad", get_grad, set_grad,
     "The accumulated gradient (None until a backward reaches the tensor).", NULL},
    {"is_leaf", get_is_leaf, NULL, "True for a tensor no recorded op made.", NULL},
    {0}, /* sentinel */
};

static PyObject *t_requires_grad_(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"requires_grad", NULL};
    int flag = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:requires_grad_", kw, &flag)) return NULL;
    if (ctpy_check(ct_set_requires_grad(ctpy_tensor_of(self), flag)) < 0) return NULL;
    return Py_NewRef(self);
}

static PyObject *t_backward(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"gradient", "retain_graph", NULL};
    PyObject *gradient = Py_None;
    int retain = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Op:backward", kw, &gradient, &retain))
        return NULL;
    ct_tensor *t = ctpy_tensor_of(self), *g = NULL;
    ct_status status;
    int handed = ctpy_ddp_backward(t, gradient != Py_None, retain, &status);
    if (handed < 0 || (handed > 0 && ctpy_check(status) < 0)) return NULL;
    if (handed > 0) Py_RETURN_NONE;
    if (gradient != Py_None) {
        g = ctpy_as_tensor(gradient, ct_dtype_of(t), ct_device_of(t));
        if (!g) return NULL;
    }
    CTPY_NOGIL(status = ct_backward_with(t, g, retain));
    ct_release(g);
    if (ctpy_check(status) < 0 || ctpy_after_backward() < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *t_detach(PyObject *self, PyObject *unused) {
    (void)unused;
    return ctpy_wrap(ct_detach(ctpy_tensor_of(self)));
}

/* Module.to's move of a parameter: the same Tensor, its data (and gradient) on device. */
static PyObject *t_move_to_(PyObject *self, PyObject *arg) {
    ct_device device;
    if (!ctpy_opt_device(arg, &device)) return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_move_to(ctpy_tensor_of(self), device));
    if (ctpy_check(status) < 0) return NULL;
    return Py_NewRef(self);
}

static PyMethodDef autograd_methods[] = {
    {"requires_grad_", KW t_requires_grad_, KWARGS,
     "requires_grad_(requires_grad=True): mark this leaf; returns it."},
    {"backward", KW t_backward, KWARGS,
     "backward(gradient=None, retain_graph=False): backpropagate into the leaves' .grad."},
    {"detach", t_detach, METH_NOARGS, "The same data without its history."},
    {"_move_to_", t_move_to_, METH_O,
     "_move_to_(device): move this leaf's data and gradient to device in place; returns it."},
    {0}, /* sentinel */
};

static PyObject *py_no_grad_push(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    if (ctpy_check(ct_no_grad_push()) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_no_grad_pop(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    if (ctpy_check(ct_no_grad_pop()) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_is_grad_enabled(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyBool_FromLong(ct_grad_enabled());
}

static PyObject *py_live_tensors(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyLong_FromLongLong(ct_live_tensor_count());
}

static PyMethodDef autograd_functions[] = {
    {"_no_grad_push", py_no_grad_push, METH_NOARGS, "Enter a no-grad region (this thread)."},
    {"_no_grad_pop", py_no_grad_pop, METH_NOARGS, "Leave the innermost no-grad region."},
    {"is_grad_enabled", py_is_grad_enabled, METH_NOARGS,
     "Whether ops record their backward on this thread."},
    {"live_tensor_count", py_live_tensors, METH_NOARGS,
     "Tensors alive in the process (the C library's count)."},
    {0}, /* sentinel */
};

static int add_to_type(PyObject *descr, const char *name) {
    if (!descr) return -1;
    int rc = PyDict_SetItemString(ctpy_tensor_type.tp_dict, name, descr);
    Py_DECREF(descr);
    return rc;
}

int ctpy_autograd_init(PyObject *module) {
    for (PyGetSetDef *d = autograd_getset; d->name; d++)
        if (add_to_type(PyDescr_NewGetSet(&ctpy_tensor_type, d), d->name) < 0) return -1;
    for (PyMethodDef *d = autograd_methods; d->ml_name; d++)
        if (add_to_type(PyDescr_NewMethod(&ctpy_tensor_type, d), d->ml_name) < 0) return -1;
    PyType_Modified(&ctpy_tensor_type);
    return PyModule_AddFunctions(module, autograd_functions);
}

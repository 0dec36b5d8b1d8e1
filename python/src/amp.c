/* ct.autocast and ct.amp.GradScaler's C side: the autocast region switch (autocast.h) and
 * a handle on one ct_grad_scaler (loss scaling with a fused unscale-and-check per device).
 * python/ctensor/amp.py gives them PyTorch's names and methods. */
#include "ctpy_impl.h"

typedef struct ctpy_scaler {
    PyObject_HEAD ct_grad_scaler *s;
} ctpy_scaler;

static void scaler_dealloc(PyObject *self) {
    ct_grad_scaler_free(((ctpy_scaler *)self)->s);
    Py_TYPE(self)->tp_free(self);
}

static ct_grad_scaler *scaler_of(PyObject *self) { return ((ctpy_scaler *)self)->s; }

static PyObject *s_scale(PyObject *self, PyObject *loss) {
    if (!ctpy_is_tensor(loss)) {
        PyErr_SetString(PyExc_TypeError, "GradScaler.scale takes a ctensor.Tensor");
        return NULL;
    }
    return ctpy_wrap(ct_grad_scaler_scale(scaler_of(self), ctpy_tensor_of(loss)));
}

static PyObject *s_unscale(PyObject *self, PyObject *unused) {
    ct_status status;
    CTPY_NOGIL(status = ct_grad_scaler_unscale(scaler_of(self)));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

/* step(c_optimizer): True when the step was skipped (a gradient was not finite). */
static PyObject *s_step(PyObject *self, PyObject *opt) {
    ct_optimizer *o = ctpy_optimizer_of(opt);
    if (!o) return NULL;
    bool skipped = false;
    ct_status status;
    CTPY_NOGIL(status = ct_grad_scaler_step(scaler_of(self), o, &skipped));
    if (ctpy_check(status) < 0) return NULL;
    return PyBool_FromLong(skipped);
}

static PyObject *s_update(PyObject *self, PyObject *unused) {
    if (ctpy_check(ct_grad_scaler_update(scaler_of(self))) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *s_get_state(PyObject *self, PyObject *unused) {
    ct_grad_scaler_state st = ct_grad_scaler_get_state(scaler_of(self));
    return Py_BuildValue("(dLL)", st.scale, (long long)st.growth_tracker,
                         (long long)st.skipped_steps);
}

static PyObject *s_set_state(PyObject *self, PyObject *args) {
    ct_grad_scaler_state st;
    long long tracker, skipped;
    if (!PyArg_ParseTuple(args, "dLL:set_state", &st.scale, &tracker, &skipped)) return NULL;
    st.growth_tracker = tracker;
    st.skipped_steps = skipped;
    if (ctpy_check(ct_grad_scaler_set_state(scaler_of(self), &st)) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef scaler_methods[] = {
    {"scale", s_scale, METH_O, "scale(loss): loss times the scale, on the tape."},
    {"unscale", s_unscale, METH_NOARGS, "Divide the gradients by the scale and check them."},
    {"step", s_step, METH_O, "step(c_optimizer): step unless a gradient was not finite."},
    {"update", s_update, METH_NOARGS, "Back off or grow the scale."},
    {"get_state", s_get_state, METH_NOARGS, "(scale, growth_tracker, skipped_steps)."},
    {"set_state", s_set_state, METH_VARARGS, "set_state(scale, growth_tracker, skipped)."},
    {0}, /* sentinel */
};

static PyTypeObject scaler_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._ctensor._CGradScaler",
    .tp_basicsize = sizeof(ctpy_scaler),
    .tp_dealloc = scaler_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A handle on the C library's loss scaler.",
    .tp_methods = scaler_methods,
};

static PyObject *py_grad_scaler(PyObject *self, PyObject *args) {
    PyObject *seq;
    ct_grad_scaler_params p = ct_grad_scaler_params_default();
    long long interval;
    int enabled;
    if (!PyArg_ParseTuple(args, "OdddLp:_grad_scaler", &seq, &p.init_scale, &p.growth_factor,
                          &p.backoff_factor, &interval, &enabled))
        return NULL;
    p.growth_interval = interval;
    p.enabled = enabled;
    int n;
    ct_tensor **params = ctpy_tensor_array(seq, &n);
    if (!params) return NULL;
    ct_grad_scaler *s = ct_grad_scaler_new(n, params, NULL, &p);
    PyMem_Free(params);
    if (!s) return ctpy_raise();
    ctpy_scaler *o = PyObject_New(ctpy_scaler, &scaler_type);
    if (!o) {
        ct_grad_scaler_free(s);
        return NULL;
    }
    o->s = s;
    return (PyObject *)o;
}

static int device_type(const char *name, ct_device_type *out) {
    if (!strcmp(name, "cpu"))
        *out = CT_DEVICE_CPU;
    else if (!strcmp(name, "cuda"))
        *out = CT_DEVICE_CUDA;
    else {
        ctpy_raise_status(CT_ERR_INVALID_ARG, "autocast: device_type is 'cpu' or 'cuda', not '%s'",
                          name);
        return -1;
    }
    return 0;
}

static PyObject *py_autocast_push(PyObject *self, PyObject *args) {
    const char *type_name;
    ct_dtype dtype;
    ct_device_type type;
    if (!PyArg_ParseTuple(args, "sO&:_autocast_push", &type_name, ctpy_to_dtype, &dtype) ||
        device_type(type_name, &type) < 0 || ctpy_check(ct_autocast_push(type, dtype)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_autocast_pop(PyObject *self, PyObject *unused) {
    if (ctpy_check(ct_autocast_pop()) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_autocast_dtype(PyObject *self, PyObject *args) {
    const char *type_name;
    ct_device_type type;
    if (!PyArg_ParseTuple(args, "s:get_autocast_dtype", &type_name) ||
        device_type(type_name, &type) < 0)
        return NULL;
    return ctpy_dtype_object(ct_autocast_dtype(type));
}

static PyMethodDef amp_functions[] = {
    {"_grad_scaler", py_grad_scaler, METH_VARARGS,
     "_grad_scaler(params, init_scale, growth, backoff, interval, enabled)."},
    {"_autocast_push", py_autocast_push, METH_VARARGS, "Enter an autocast region."},
    {"_autocast_pop", py_autocast_pop, METH_NOARGS, "Leave the innermost autocast region."},
    {"get_autocast_dtype", py_autocast_dtype, METH_VARARGS,
     "get_autocast_dtype(device_type): the dtype autocast lowers to (float32: off)."},
    {0}, /* sentinel */
};

int ctpy_amp_init(PyObject *module) {
    if (PyType_Ready(&scaler_type) < 0) return -1;
    return PyModule_AddFunctions(module, amp_functions);
}

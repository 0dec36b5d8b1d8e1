/* The value types: ctensor.Device (hashable, ==, .type, .index, str "cuda:0", and a context
 * manager for the default placement, as `with torch.device(...)` and `with tf.device(...)`)
 * and ctensor.DType (one object per dtype: ctensor.float32 ...), with the converters that
 * read a device or a dtype from what a Python user writes; and the Tensor objects that wrap
 * a ct_tensor (ctpy_wrap: the type itself is tensor.c's). */
#include "ctpy_impl.h"

/* ---- DType ---- */

static PyObject *dtype_objects[CT_DTYPE_COUNT];

PyObject *ctpy_dtype_object(ct_dtype dtype) {
    if (!ct_dtype_is_valid(dtype)) return ctpy_raise_status(CT_ERR_DTYPE, "invalid dtype");
    return Py_NewRef(dtype_objects[dtype]);
}

static PyObject *dtype_repr(PyObject *self) {
    return PyUnicode_FromFormat("ctensor.%s", ct_dtype_name(((ctpy_dtype *)self)->dtype));
}

static PyObject *dtype_name(PyObject *self, void *closure) {
    return PyUnicode_FromString(ct_dtype_name(((ctpy_dtype *)self)->dtype));
}

static PyObject *dtype_itemsize(PyObject *self, void *closure) {
    return PyLong_FromSize_t(ct_dtype_size(((ctpy_dtype *)self)->dtype));
}

static PyGetSetDef dtype_getset[] = {
    {"name", dtype_name, NULL, "The dtype's name: 'float32' ...", NULL},
    {"itemsize", dtype_itemsize, NULL, "Bytes per element.", NULL},
    {0}, /* sentinel */
};

/* A dtype written as its name ("float32"), or an object with a name (a NumPy dtype). */
static int dtype_from_name(PyObject *o, ct_dtype *out) {
    PyObject *name = PyUnicode_Check(o) ? Py_NewRef(o) : PyObject_GetAttrString(o, "name");
    if (!name) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "expected a dtype (ctensor.float32, 'float32'), got %R", o);
        return 0;
    }
    const char *text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    for (int d = 0; text && d < CT_DTYPE_COUNT; d++)
        if (strcmp(text, ct_dtype_name((ct_dtype)d)) == 0) {
            *out = (ct_dtype)d;
            Py_DECREF(name);
            return 1;
        }
    if (!PyErr_Occurred())
        ctpy_raise_status(CT_ERR_DTYPE,
                          "ctensor has no dtype %R: it has float32, float64, float16, bfloat16, "
                          "int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool, "
                          "complex64 and complex128",
                          name);
    Py_DECREF(name);
    return 0;
}

int ctpy_to_dtype(PyObject *o, void *out) {
    if (PyObject_TypeCheck(o, &ctpy_dtype_type)) {
        *(ct_dtype *)out = ((ctpy_dtype *)o)->dtype;
        return 1;
    }
    if (o == (PyObject *)&PyFloat_Type) return *(ct_dtype *)out = CTPY_DEFAULT_FLOAT, 1;
    if (o == (PyObject *)&PyLong_Type) return *(ct_dtype *)out = CTPY_DEFAULT_INT, 1;
    if (o == (PyObject *)&PyBool_Type) return *(ct_dtype *)out = CT_BOOL, 1;
    return dtype_from_name(o, out);
}

int ctpy_opt_dtype(PyObject *o, void *out) {
    if (o == Py_None) {
        *(ct_dtype *)out = (ct_dtype)-1;
        return 1;
    }
    return ctpy_to_dtype(o, out);
}

PyTypeObject ctpy_dtype_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor.DType",
    .tp_basicsize = sizeof(ctpy_dtype),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An element type: ctensor.float32, ctensor.int64, ctensor.bool, ...",
    .tp_repr = dtype_repr,
    .tp_getset = dtype_getset,
};

int ctpy_dtypes_init(PyObject *module) {
    if (PyType_Ready(&ctpy_dtype_type) < 0) return -1;
    for (int d = 0; d < CT_DTYPE_COUNT; d++) {
        ctpy_dtype *o = PyObject_New(ctpy_dtype, &ctpy_dtype_type);
        if (!o) return -1;
        o->dtype = (ct_dtype)d;
        dtype_objects[d] = (PyObject *)o;
        if (PyModule_AddObjectRef(module, ct_dtype_name((ct_dtype)d), (PyObject *)o) < 0) return -1;
    }
    return PyModule_AddObjectRef(module, "DType", (PyObject *)&ctpy_dtype_type);
}

/* ---- Device ---- */

PyObject *ctpy_device_object(ct_device device) {
    ctpy_device *o = PyObject_New(ctpy_device, &ctpy_device_type);
    if (o) o->device = device;
    return (PyObject *)o;
}

int ctpy_opt_device(PyObject *o, void *out) {
    ct_device *device = out;
    if (o == Py_None) {
        *device = CT_DEFAULT;
        return 1;
    }
    if (PyObject_TypeCheck(o, &ctpy_device_type)) {
        *device = ((ctpy_device *)o)->device;
        return 1;
    }
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError,
                     "expected a device (ctensor.device('cuda:0'), 'cpu', '/gpu:0'), got %R", o);
        return 0;
    }
    const char *text = PyUnicode_AsUTF8(o);
    if (!text) return 0;
    return ctpy_check(ct_device_parse(text, device)) == 0;
}

static PyObject *device_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"device", NULL};
    PyObject *spec;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:device", keywords, &spec)) return NULL;
    if (PyObject_TypeCheck(spec, &ctpy_device_type)) return Py_NewRef(spec);
    ct_device device;
    if (!PyUnicode_Check(spec)) {
        PyErr_Format(PyExc_TypeError, "ctensor.device: expected a string such as 'cuda:0', got %R",
                     spec);
        return NULL;
    }
    if (!ctpy_opt_device(spec, &device)) return NULL;
    return ctpy_device_object(device);
}

static PyObject *device_str(PyObject *self) {
    char text[32];
    return PyUnicode_FromString(ct_device_str(((ctpy_device *)self)->device, text, sizeof text));
}

static PyObject *device_repr(PyObject *self) {
    char text[32];
    return PyUnicode_FromFormat("ctensor.device('%s')",
                                ct_device_str(((ctpy_device *)self)->device, text, sizeof text));
}

static Py_hash_t device_hash(PyObject *self) {
    ct_device d = ((ctpy_device *)self)->device;
    Py_hash_t h = (Py_hash_t)d.type * 1000003 + d.index + 17;
    return h == -1 ? -2 : h;
}

static PyObject *device_richcompare(PyObject *a, PyObject *b, int op) {
    if (!PyObject_TypeCheck(b, &ctpy_device_type) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    bool same = ct_device_equal(((ctpy_device *)a)->device, ((ctpy_device *)b)->device);
    return PyBool_FromLong(op == Py_EQ ? same : !same);
}

static PyObject *device_type(PyObject *self, void *closure) {
    return PyUnicode_FromString(ct_device_type_name(((ctpy_device *)self)->device.type));
}

static PyObject *device_index(PyObject *self, void *closure) {
    return PyLong_FromLong(((ctpy_device *)self)->device.index);
}

static PyObject *device_enter(PyObject *self, PyObject *unused) {
    if (ctpy_check(ct_device_push(((ctpy_device *)self)->device)) < 0) return NULL;
    return Py_NewRef(self);
}

static PyObject *device_exit(PyObject *self, PyObject *args) {
    if (ctpy_check(ct_device_pop()) < 0) return NULL;
    Py_RETURN_FALSE;
}

static PyGetSetDef device_getset[] = {
    {"type", device_type, NULL, "'cpu' or 'cuda'.", NULL},
    {"index", device_index, NULL, "The (logical) device's index.", NULL},
    {0}, /* sentinel */
};

static PyMethodDef device_methods[] = {
    {"__enter__", device_enter, METH_NOARGS, "Make this device the default placement."},
    {"__exit__", device_exit, METH_VARARGS, "Restore the previous default placement."},
    {0}, /* sentinel */
};

PyTypeObject ctpy_device_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor.device",
    .tp_basicsize = sizeof(ctpy_device),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "device(spec): 'cpu', 'cuda', 'cuda:1', '/gpu:0', '/device:GPU:1' or 'auto' (the "
              "best device present). `with ctensor.device('cuda:0'):` places new arrays there.",
    .tp_new = device_new,
    .tp_str = device_str,
    .tp_repr = device_repr,
    .tp_hash = device_hash,
    .tp_richcompare = device_richcompare,
    .tp_getset = device_getset,
    .tp_methods = device_methods,
};

/* ---- Tensor objects ---- */

PyObject *ctpy_wrap(ct_tensor *t) {
    if (!t) return ctpy_raise();
    ctpy_tensor *o = PyObject_New(ctpy_tensor, &ctpy_tensor_type);
    if (!o) {
        ct_release(t);
        return NULL;
    }
    o->t = t;
    return (PyObject *)o;
}

PyObject *ctpy_wrap_leaf(ct_tensor *t, int requires_grad) {
    if (t && requires_grad && ctpy_check(ct_set_requires_grad(t, true)) < 0) {
        ct_release(t);
        return NULL;
    }
    return ctpy_wrap(t);
}

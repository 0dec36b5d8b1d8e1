/* Memory formats as PyTorch's: the objects ctensor.contiguous_format, ctensor.channels_last and
 * ctensor.preserve_format (of type ctensor.memory_format), and the Tensor methods that take one:
 * x.contiguous(memory_format=...), x.is_contiguous(memory_format=...) (C's
 * ct_contiguous_format and ct_is_contiguous_format) and x.stride(); x.to(..., memory_format=...)
 * is tensor.c's through ctpy_memory_format. */
#include <limits.h>

#include "ctpy_impl.h"

typedef struct {
    PyObject_HEAD int format; /* a ct_memory_format, or CTPY_PRESERVE_FORMAT */
    const char *name;
} ctpy_memory_format_object;

static PyObject *format_repr(PyObject *self) {
    return PyUnicode_FromFormat("ctensor.%s", ((ctpy_memory_format_object *)self)->name);
}

static PyTypeObject memory_format_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor.memory_format",
    .tp_basicsize = sizeof(ctpy_memory_format_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A memory format, as torch.memory_format: ctensor.contiguous_format, "
              "ctensor.channels_last (a 4-D (N, C, H, W) tensor laid out as (N, H, W, C)) or "
              "ctensor.preserve_format.",
    .tp_repr = format_repr,
};

static ctpy_memory_format_object formats[] = {
    {PyObject_HEAD_INIT(&memory_format_type) CT_FORMAT_CONTIGUOUS, "contiguous_format"},
    {PyObject_HEAD_INIT(&memory_format_type) CT_FORMAT_CHANNELS_LAST, "channels_last"},
    {PyObject_HEAD_INIT(&memory_format_type) CTPY_PRESERVE_FORMAT, "preserve_format"},
};

int ctpy_memory_format(PyObject *o, void *out) {
    if (!PyObject_TypeCheck(o, &memory_format_type)) {
        PyErr_Format(PyExc_TypeError,
                     "memory_format must be ctensor.contiguous_format, ctensor.channels_last or "
                     "ctensor.preserve_format, not %.100s",
                     Py_TYPE(o)->tp_name);
        return 0;
    }
    *(int *)out = ((ctpy_memory_format_object *)o)->format;
    return 1;
}

/* The format of a contiguous/is_contiguous call: preserve_format refused, as PyTorch does. */
static bool parse_format(PyObject *args, PyObject *kwargs, const char *spec, int *format) {
    static char *keywords[] = {"memory_format", NULL};
    *format = CT_FORMAT_CONTIGUOUS;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, spec, keywords, ctpy_memory_format, format))
        return false;
    if (*format != CTPY_PRESERVE_FORMAT) return true;
    PyErr_SetString(PyExc_ValueError,
                    "memory_format=ctensor.preserve_format means the format a tensor has; "
                    "ask for contiguous_format or channels_last");
    return false;
}

static PyObject *tensor_contiguous(PyObject *self, PyObject *args, PyObject *kwargs) {
    int format;
    if (!parse_format(args, kwargs, "|O&:contiguous", &format)) return NULL;
    ct_tensor *t = ctpy_tensor_of(self), *out;
    CTPY_NOGIL(out = ct_contiguous_format(t, (ct_memory_format)format));
    if (!out) return ctpy_raise();
    if (out != t) return ctpy_wrap(out);
    ct_release(out);
    return Py_NewRef(self);
}

static PyObject *tensor_is_contiguous(PyObject *self, PyObject *args, PyObject *kwargs) {
    int format;
    if (!parse_format(args, kwargs, "|O&:is_contiguous", &format)) return NULL;
    return PyBool_FromLong(ct_is_contiguous_format(ctpy_tensor_of(self), (ct_memory_format)format));
}

static PyObject *tensor_stride(PyObject *self, PyObject *args) {
    int dim = INT_MIN;
    if (!PyArg_ParseTuple(args, "|i:stride", &dim)) return NULL;
    const ct_tensor *t = ctpy_tensor_of(self);
    int ndim = ct_ndim(t);
    const int64_t *strides = ct_strides(t);
    if (dim != INT_MIN) {
        if (dim < -ndim || dim >= ndim)
            return ctpy_raise_status(CT_ERR_INVALID_ARG, "stride: dim %d is out of range for %d-d",
                                     dim, ndim);
        return PyLong_FromLongLong(strides[dim < 0 ? dim + ndim : dim]);
    }
    PyObject *out = PyTuple_New(ndim);
    for (int d = 0; out && d < ndim; d++) {
        PyObject *v = PyLong_FromLongLong(strides[d]);
        if (!v) return Py_DECREF(out), NULL;
        PyTuple_SET_ITEM(out, d, v);
    }
    return out;
}

PyMethodDef ctpy_memory_format_methods[] = {
    {"stride", tensor_stride, METH_VARARGS,
     "stride(dim=None): the strides in elements, a tuple (one dimension's, an int, with dim), "
     "as in PyTorch."},
    {"contiguous", KW tensor_contiguous, KWARGS,
     "contiguous(memory_format=ctensor.contiguous_format): itself when laid out in that format, "
     "else a copy that is (differentiable)."},
    {"is_contiguous", KW tensor_is_contiguous, KWARGS,
     "is_contiguous(memory_format=ctensor.contiguous_format): whether the elements lie densely "
     "in that order (size-1 axes' strides do not matter, so both may be true)."},
    {0}, /* sentinel */
};

int ctpy_memory_format_init(PyObject *module) {
    if (PyType_Ready(&memory_format_type) < 0 ||
        PyModule_AddObjectRef(module, "memory_format", (PyObject *)&memory_format_type) < 0)
        return -1;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (PyModule_AddObjectRef(module, formats[i].name, (PyObject *)&formats[i]) < 0) return -1;
    return 0;
}

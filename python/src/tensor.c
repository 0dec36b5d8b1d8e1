/* The array type ctensor.Tensor over ct_tensor: its attributes (shape, ndim, size, dtype,
 * device, T, mT), moving and converting (to, to_device, cpu, cuda, astype, and PyTorch's
 * float(), long() ...), item() and
 * repr (ct_format's text, which names the dtype and the device). Printing and item() of a device
 * array are implicit transfers, counted and guarded by the C library. Operators, indexing and the
 * NumPy/DLPack/buffer interop live in their own files. */
#include "ctpy_impl.h"

static void tensor_dealloc(PyObject *self) {
    ct_release(((ctpy_tensor *)self)->t);
    PyObject_Free(self);
}

static PyObject *tensor_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"obj", "dtype", "device", NULL};
    PyObject *obj;
    ct_dtype dtype = (ct_dtype)-1;
    ct_device device = CT_DEFAULT;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O&O&:Tensor", keywords, &obj, ctpy_opt_dtype,
                                     &dtype, ctpy_opt_device, &device))
        return NULL;
    ct_tensor *t = ctpy_as_tensor(obj, dtype, device);
    return t ? ctpy_wrap(t) : NULL;
}

static PyObject *tensor_str(PyObject *self) {
    char *text;
    CTPY_NOGIL(text = ct_format(ctpy_tensor_of(self)));
    if (!text) return ctpy_raise();
    PyObject *out = PyUnicode_FromString(text);
    ct_free(text);
    return out;
}

/* ---- attributes ---- */

static PyObject *get_shape(PyObject *self, void *closure) {
    ct_tensor *t = ctpy_tensor_of(self);
    int ndim = ct_ndim(t);
    const int64_t *shape = ct_shape(t);
    PyObject *out = PyTuple_New(ndim);
    for (int d = 0; out && d < ndim; d++) {
        PyObject *size = PyLong_FromLongLong(shape[d]);
        if (!size) return Py_DECREF(out), NULL;
        PyTuple_SET_ITEM(out, d, size);
    }
    return out;
}

static PyObject *get_ndim(PyObject *self, void *closure) {
    return PyLong_FromLong(ct_ndim(ctpy_tensor_of(self)));
}

static PyObject *get_size(PyObject *self, void *closure) { return ctpy_size_new(self); }

static PyObject *get_dtype(PyObject *self, void *closure) {
    return ctpy_dtype_object(ct_dtype_of(ctpy_tensor_of(self)));
}

static PyObject *get_device(PyObject *self, void *closure) {
    return ctpy_device_object(ct_device_of(ctpy_tensor_of(self)));
}

static PyObject *get_T(PyObject *self, void *closure) {
    ct_tensor *t = ctpy_tensor_of(self);
    if (ct_ndim(t) != 2)
        return ctpy_raise_status(CT_ERR_SHAPE,
                                 "Tensor.T: the array has %d dimensions, .T needs 2; use .mT or "
                                 "permute_dims for others",
                                 ct_ndim(t));
    return ctpy_wrap(ct_transpose(t, 0, 1));
}

static PyObject *get_mT(PyObject *self, void *closure) {
    ct_tensor *t = ctpy_tensor_of(self);
    if (ct_ndim(t) < 2)
        return ctpy_raise_status(CT_ERR_SHAPE,
                                 "Tensor.mT: the array has %d dimensions, .mT needs at least 2",
                                 ct_ndim(t));
    return ctpy_wrap(ct_transpose(t, -2, -1));
}

static PyGetSetDef tensor_getset[] = {
    {"shape", get_shape, NULL, "The sizes of the axes, a tuple.", NULL},
    {"ndim", get_ndim, NULL, "The number of axes.", NULL},
    {"size", get_size, NULL,
     "The number of elements, an int; x.size() is the shape and x.size(d) one dimension's "
     "length, as in PyTorch.",
     NULL},
    {"dtype", get_dtype, NULL, "The element type (a ctensor.DType).", NULL},
    {"device", get_device, NULL, "The device holding the data (a ctensor.device).", NULL},
    {"T", get_T, NULL, "The transpose of a 2-D array (a view).", NULL},
    {"mT", get_mT, NULL, "The transpose of the last two axes (a view).", NULL},
    {0}, /* sentinel */
};

/* ---- moving and converting ---- */

static PyObject *moved(PyObject *self, ct_device device, ct_dtype dtype, bool copy) {
    ct_tensor *t = ctpy_tensor_of(self), *out = ct_retain(t), *next;
    if (device.type != CT_DEVICE_DEFAULT && !ct_device_equal(device, ct_device_of(t))) {
        CTPY_NOGIL(next = ct_to(out, device));
        ct_release(out);
        out = next;
    }
    if (out && (int)dtype >= 0 && dtype != ct_dtype_of(out)) {
        next = ctpy_cast(out, dtype);
        ct_release(out);
        if (!next) return NULL;
        out = next;
    }
    if (out == t && copy) {
        CTPY_NOGIL(next = ct_clone(out));
        ct_release(out);
        out = next;
    }
    if (out == t) {
        ct_release(out);
        return Py_NewRef(self);
    }
    return ctpy_wrap(out);
}

static PyObject *converted(PyObject *self, PyObject *target, ct_dtype dtype, int copy);

/* out (whose reference this takes) laid out in format: itself when it is. */
static PyObject *in_format(PyObject *out, int format) {
    ct_tensor *t = ctpy_tensor_of(out), *next;
    CTPY_NOGIL(next = ct_contiguous_format(t, (ct_memory_format)format));
    if (next == t) {
        ct_release(next);
        return out;
    }
    Py_DECREF(out);
    return next ? ctpy_wrap(next) : ctpy_raise();
}

static PyObject *tensor_to(PyObject *self, PyObject *args, PyObject *kwargs) {
    /* PyTorch's order: to(device=None, dtype=None, non_blocking=False, copy=False,
     * memory_format=preserve_format); the copy to a device is ordered on ctensor's streams
     * either way, so non_blocking changes nothing. */
    static char *keywords[] = {"target", "dtype", "non_blocking", "copy", "memory_format", NULL};
    PyObject *target = Py_None;
    ct_dtype dtype = (ct_dtype)-1;
    int non_blocking = 0, copy = 0, format = CTPY_PRESERVE_FORMAT;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO&ppO&:to", keywords, &target, ctpy_opt_dtype,
                                     &dtype, &non_blocking, &copy, ctpy_memory_format, &format))
        return NULL;
    PyObject *out = converted(self, target, dtype, copy);
    return out && format != CTPY_PRESERVE_FORMAT ? in_format(out, format) : out;
}

/* to()'s device and dtype conversion: target a Tensor (its device and dtype), a dtype or a
 * device. */
static PyObject *converted(PyObject *self, PyObject *target, ct_dtype dtype, int copy) {
    ct_device device = CT_DEFAULT;
    if (ctpy_is_tensor(target)) { /* to(other): other's device and dtype */
        const ct_tensor *other = ctpy_tensor_of(target);
        return moved(self, ct_device_of(other), (int)dtype >= 0 ? dtype : ct_dtype_of(other), copy);
    }
    if (PyObject_TypeCheck(target, &ctpy_dtype_type) || PyType_Check(target))
        return ctpy_to_dtype(target, &dtype) ? moved(self, device, dtype, copy) : NULL;
    if (!ctpy_opt_device(target, &device)) return NULL;
    return moved(self, device, dtype, copy);
}

static PyObject *tensor_to_device(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"device", "stream", NULL};
    ct_device device;
    PyObject *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|O:to_device", keywords, ctpy_opt_device,
                                     &device, &stream))
        return NULL;
    if (stream != Py_None)
        return ctpy_raise_status(CT_ERR_UNSUPPORTED,
                                 "to_device: ctensor uses its own stream per device; pass "
                                 "stream=None");
    return moved(self, device, (ct_dtype)-1, false);
}

static PyObject *tensor_cpu(PyObject *self, PyObject *unused) {
    return moved(self, CT_CPU, (ct_dtype)-1, false);
}

static PyObject *tensor_cuda(PyObject *self, PyObject *args) {
    int index = 0;
    if (!PyArg_ParseTuple(args, "|i:cuda", &index)) return NULL;
    return moved(self, (ct_device){CT_DEVICE_CUDA, index}, (ct_dtype)-1, false);
}

static PyObject *tensor_astype(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"dtype", "copy", NULL};
    ct_dtype dtype;
    int copy = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|p:astype", keywords, ctpy_to_dtype, &dtype,
                                     &copy))
        return NULL;
    return moved(self, CT_DEFAULT, dtype, copy);
}

/* PyTorch's conversions x.float(), x.long() ...: the array as that dtype, itself when it is
 * one already. */
#define CTPY_DTYPE_METHOD_(name, dtype)                                                            \
    static PyObject *tensor_##name(PyObject *self, PyObject *unused) {                             \
        return moved(self, CT_DEFAULT, dtype, false);                                              \
    }
CTPY_DTYPE_METHOD_(float, CT_F32)
CTPY_DTYPE_METHOD_(double, CT_F64)
CTPY_DTYPE_METHOD_(half, CT_F16)
CTPY_DTYPE_METHOD_(bfloat16, CT_BF16)
CTPY_DTYPE_METHOD_(long, CT_I64)
CTPY_DTYPE_METHOD_(int, CT_I32)
CTPY_DTYPE_METHOD_(short, CT_I16)
CTPY_DTYPE_METHOD_(char, CT_I8)
CTPY_DTYPE_METHOD_(byte, CT_U8)
CTPY_DTYPE_METHOD_(bool, CT_BOOL)
#undef CTPY_DTYPE_METHOD_

/* A Python bool, int, float or complex for a one-element array of dtype (an implicit transfer from
 * a device). */
static PyObject *scalar_of(ct_tensor *t) {
    double value;
    ct_status status;
    if (ct_dtype_is_complex(ct_dtype_of(t))) {
        ct_complex128 z;
        CTPY_NOGIL(status = ct_item_complex(t, &z));
        return ctpy_check(status) < 0 ? NULL : PyComplex_FromDoubles(z.re, z.im);
    }
    CTPY_NOGIL(status = ct_item(t, &value));
    if (ctpy_check(status) < 0) return NULL;
    ct_dtype dtype = ct_dtype_of(t);
    if (dtype == CT_BOOL) return PyBool_FromLong(value != 0);
    if (ct_dtype_is_integer(dtype)) return PyLong_FromDouble(value);
    return PyFloat_FromDouble(value);
}

static PyObject *tensor_item(PyObject *self, PyObject *unused) {
    ct_tensor *t = ctpy_tensor_of(self);
    if (ct_numel(t) != 1)
        return ctpy_raise_status(CT_ERR_SHAPE,
                                 "Tensor.item: the array has %lld elements; item() needs one",
                                 (long long)ct_numel(t));
    if (ct_dtype_of(t) == CT_I64) {
        /* Exact for every int64, which a double is not. */
        int64_t value;
        ct_status status;
        CTPY_NOGIL(status = ct_copy_to_host(t, &value, sizeof value));
        return ctpy_check(status) < 0 ? NULL : PyLong_FromLongLong(value);
    }
    if (ct_dtype_of(t) == CT_U64) {
        uint64_t value;
        ct_status status;
        CTPY_NOGIL(status = ct_copy_to_host(t, &value, sizeof value));
        return ctpy_check(status) < 0 ? NULL : PyLong_FromUnsignedLongLong(value);
    }
    return scalar_of(t);
}

/* complex(x): a one-element array's value as a Python complex. */
static PyObject *tensor_complex(PyObject *self, PyObject *unused) {
    PyObject *value = tensor_item(self, NULL);
    if (!value) return NULL;
    PyObject *out = PyComplex_Check(value) ? Py_NewRef(value) : PyNumber_Float(value);
    Py_DECREF(value);
    if (out && !PyComplex_Check(out)) {
        double re = PyFloat_AsDouble(out);
        Py_DECREF(out);
        out = PyComplex_FromDoubles(re, 0.0);
    }
    return out;
}

static PyObject *tensor_namespace(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"api_version", NULL};
    PyObject *version = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$O:__array_namespace__", keywords, &version))
        return NULL;
    if (version != Py_None &&
        (!PyUnicode_Check(version) || (PyUnicode_CompareWithASCIIString(version, "2023.12") != 0 &&
                                       PyUnicode_CompareWithASCIIString(version, "2022.12") != 0)))
        return PyErr_Format(PyExc_ValueError, "ctensor implements the array API 2023.12, not %R",
                            version);
    return PyImport_ImportModule("ctensor");
}

static PyMethodDef tensor_methods[] = {
    {"to", KW tensor_to, KWARGS,
     "to(device_or_dtype_or_tensor, dtype=None, non_blocking=False, copy=False, "
     "memory_format=ctensor.preserve_format): the array on a device, as a dtype and/or in a "
     "memory format (ctensor.channels_last: a 4-D array laid out as (N, H, W, C)); itself "
     "when nothing changes."},
    {"to_device", KW tensor_to_device, KWARGS,
     "to_device($self, device, stream=None)\n--\n\nThe array on device (itself when already "
     "there)."},
    {"cpu", tensor_cpu, METH_NOARGS, "The array on the CPU (itself when already there)."},
    {"cuda", tensor_cuda, METH_VARARGS, "cuda(index=0): the array on cuda:index."},
    {"astype", KW tensor_astype, KWARGS, "astype(dtype, copy=True): the array converted to dtype."},
    {"item", tensor_item, METH_NOARGS, "The value of a one-element array as a Python number."},
    {"__complex__", tensor_complex, METH_NOARGS, "complex(x) of a one-element array."},
    {"float", tensor_float, METH_NOARGS, "The array as float32 (itself when it is one)."},
    {"double", tensor_double, METH_NOARGS, "The array as float64 (itself when it is one)."},
    {"half", tensor_half, METH_NOARGS, "The array as float16 (itself when it is one)."},
    {"bfloat16", tensor_bfloat16, METH_NOARGS, "The array as bfloat16 (itself when it is one)."},
    {"long", tensor_long, METH_NOARGS, "The array as int64 (itself when it is one)."},
    {"int", tensor_int, METH_NOARGS, "The array as int32 (itself when it is one)."},
    {"short", tensor_short, METH_NOARGS, "The array as int16 (itself when it is one)."},
    {"char", tensor_char, METH_NOARGS, "The array as int8 (itself when it is one)."},
    {"byte", tensor_byte, METH_NOARGS, "The array as uint8 (itself when it is one)."},
    {"bool", tensor_bool, METH_NOARGS, "The array as bool (itself when it is one)."},
    {"__array_namespace__", KW tensor_namespace, KWARGS,
     "The ctensor module (the array API namespace)."},
    {0}, /* sentinel */
};

PyTypeObject ctpy_tensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor.Tensor",
    .tp_basicsize = sizeof(ctpy_tensor),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tensor(obj, dtype=None, device=None): an array on a device (asarray's copy).",
    .tp_new = tensor_new,
    .tp_dealloc = tensor_dealloc,
    .tp_repr = tensor_str,
    .tp_str = tensor_str,
    .tp_getset = tensor_getset,
    .tp_methods = tensor_methods,
    .tp_as_number = &ctpy_tensor_number,
    .tp_as_mapping = &ctpy_tensor_mapping,
    .tp_iter = ctpy_tensor_iter,
    .tp_as_buffer = &ctpy_tensor_buffer,
    .tp_richcompare = ctpy_tensor_richcompare,
};

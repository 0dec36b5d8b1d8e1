/* Integer arguments from Python (axes, shapes, counts): each is range-checked as a Python int
 * before it narrows to a C integer, so that no value is truncated into another, and every
 * failure names the argument. A sequence argument is read from a snapshot (a tuple copied
 * first), so that an element's __index__ that changes the sequence cannot move it under the
 * reader. */
#include "ctpy_impl.h"

/* o as a Python int (a new reference): an int or an object with __index__; a TypeError
 * naming what for anything else (a float included, as NumPy). */
static PyObject *as_int(PyObject *o, const char *what) {
    if (!PyIndex_Check(o) || PyFloat_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PyNumber_Index(o);
}

int ctpy_axis_value(PyObject *o, const char *what, int *axis) {
    PyObject *i = as_int(o, what);
    if (!i) return -1;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    bool failed = v == -1 && PyErr_Occurred();
    if (!failed && (overflow || v < -CT_MAX_DIMS || v >= CT_MAX_DIMS)) {
        ctpy_raise_status(CT_ERR_INVALID_ARG,
                          "%s %S is out of range (an array has at most %d axes: an axis is "
                          "-%d to %d at most)",
                          what, i, CT_MAX_DIMS, CT_MAX_DIMS, CT_MAX_DIMS - 1);
        failed = true;
    }
    Py_DECREF(i);
    if (failed) return -1;
    *axis = (int)v;
    return 0;
}

int ctpy_axis_arg(PyObject *o, void *out) { return ctpy_axis_value(o, "axis", out) < 0 ? 0 : 1; }

int ctpy_int64_value(PyObject *o, const char *what, int64_t *out) {
    PyObject *i = as_int(o, what);
    if (!i) return -1;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    bool failed = v == -1 && PyErr_Occurred();
    if (!failed && overflow) {
        PyErr_Format(PyExc_OverflowError, "%s %S does not fit in int64", what, i);
        failed = true;
    }
    Py_DECREF(i);
    if (failed) return -1;
    *out = (int64_t)v;
    return 0;
}

int ctpy_parse_axes(PyObject *o, const char *what, int *axes, int *naxes) {
    if (o == Py_None) return *naxes = -1, 0;
    if (PyIndex_Check(o) && !PyFloat_Check(o)) {
        *naxes = 1;
        return ctpy_axis_value(o, what, &axes[0]);
    }
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) > CT_MAX_DIMS) {
        PyErr_Format(PyExc_TypeError,
                     "%s must be None, an int or a tuple of at most %d ints, not %.200R", what,
                     CT_MAX_DIMS, o);
        return -1;
    }
    *naxes = (int)PyTuple_GET_SIZE(o);
    for (int i = 0; i < *naxes; i++)
        if (ctpy_axis_value(PyTuple_GET_ITEM(o, i), what, &axes[i]) < 0) return -1;
    return 0;
}

PyObject *ctpy_snapshot(PyObject *o, Py_ssize_t most, const char *what) {
    if (PyTuple_Check(o)) return Py_NewRef(o);
    if (PyList_Check(o)) return PyList_AsTuple(o);
    PyObject *it = PyObject_GetIter(o);
    if (!it) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s must be a sequence, not %.100s", what,
                         Py_TYPE(o)->tp_name);
        }
        return NULL;
    }
    PyObject *items = PyList_New(0), *item = NULL;
    while (items && PyList_GET_SIZE(items) <= most && (item = PyIter_Next(it))) {
        if (PyList_Append(items, item) < 0) Py_CLEAR(items);
        Py_DECREF(item);
    }
    Py_DECREF(it);
    PyObject *out = items && !PyErr_Occurred() ? PyList_AsTuple(items) : NULL;
    Py_XDECREF(items);
    return out;
}

int ctpy_parse_shape(PyObject *o, const char *what, int64_t *shape, int *ndim) {
    if (PyIndex_Check(o) && !PyFloat_Check(o)) {
        *ndim = 1;
        return ctpy_int64_value(o, what, &shape[0]);
    }
    PyObject *snapshot = ctpy_snapshot(o, CT_MAX_DIMS, what);
    if (!snapshot) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(snapshot);
    int result = 0;
    if (n > CT_MAX_DIMS) {
        ctpy_raise_status(CT_ERR_SHAPE, "%s has more than %d entries; ctensor has at most %d axes",
                          what, CT_MAX_DIMS, CT_MAX_DIMS);
        result = -1;
    }
    *ndim = (int)n;
    for (Py_ssize_t i = 0; result == 0 && i < n; i++)
        result = ctpy_int64_value(PyTuple_GET_ITEM(snapshot, i), what, &shape[i]);
    Py_DECREF(snapshot);
    return result;
}

/* Tensor.size: the array API's element count, an int, that is also PyTorch's method:
 * x.size() is the shape, x.size(d) one dimension's length (d may be negative; out of range is
 * an IndexError). It is an int subclass made in C, holding its tensor for the call.
 *
 * An int subclass cannot declare fields after the base's (an int's digits vary in number),
 * so the tensor is kept past room for the digits of any int64: CPython lays an int's digits
 * from PyLong_Type.tp_basicsize on, and an element count (below 2**63) takes at most
 * ceil(64 / 15) of them whatever the digit's width. Instances are made here only (Python
 * cannot make one, which could hold a longer int), and copy and pickle as a plain int. */
#include "ctpy_impl.h"

#define SIZE_MAX_DIGITS 5 /* digits of an int below 2**64, at 15 bits (the narrowest) each */

static Py_ssize_t tensor_at; /* the byte offset of the held tensor */

static PyObject **held_tensor(PyObject *self) { return (PyObject **)((char *)self + tensor_at); }

static void size_dealloc(PyObject *self) {
    Py_XDECREF(*held_tensor(self));
    Py_TYPE(self)->tp_free(self);
}

/* size(): the shape; size(d): the length of dimension d. */
static PyObject *size_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"dim", NULL};
    PyObject *dim = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:size", keywords, &dim)) return NULL;
    PyObject *tensor = *held_tensor(self);
    if (dim == Py_None) return PyObject_GetAttrString(tensor, "shape");
    Py_ssize_t d = PyNumber_AsSsize_t(dim, PyExc_IndexError);
    if (d == -1 && PyErr_Occurred()) return NULL;
    const ct_tensor *t = ctpy_tensor_of(tensor);
    int ndim = ct_ndim(t);
    if (d < -ndim || d >= ndim)
        return PyErr_Format(PyExc_IndexError,
                            "size: dimension %zd is out of range for %d dimensions", d, ndim);
    return PyLong_FromLongLong(ct_shape(t)[d < 0 ? d + ndim : d]);
}

/* A copy or a pickle is the plain int. */
static PyObject *size_reduce(PyObject *self, PyObject *unused) {
    return Py_BuildValue("(O(N))", (PyObject *)&PyLong_Type, PyNumber_Long(self));
}

static PyMethodDef size_methods[] = {
    {"__reduce__", size_reduce, METH_NOARGS, NULL}, {0}, /* sentinel */
};

static PyTypeObject size_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._Size",
    .tp_doc = "x.size: the number of elements (the array API's attribute), callable as "
              "PyTorch's x.size() (the shape) and x.size(d) (one dimension's length).",
    .tp_base = &PyLong_Type,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .tp_dealloc = size_dealloc,
    .tp_call = size_call,
    .tp_methods = size_methods,
};

PyObject *ctpy_size_new(PyObject *tensor) {
    PyObject *count = PyLong_FromLongLong(ct_numel(ctpy_tensor_of(tensor)));
    PyObject *args = count ? PyTuple_Pack(1, count) : NULL;
    Py_XDECREF(count);
    if (!args) return NULL;
    /* int's constructor for a subtype copies the digits into an object of size_type's size. */
    PyObject *out = PyLong_Type.tp_new(&size_type, args, NULL);
    Py_DECREF(args);
    if (out) *held_tensor(out) = Py_NewRef(tensor);
    return out;
}

int ctpy_size_init(void) {
    Py_ssize_t digits = PyLong_Type.tp_basicsize + SIZE_MAX_DIGITS * PyLong_Type.tp_itemsize;
    tensor_at = (digits + (Py_ssize_t)sizeof(PyObject *) - 1) / (Py_ssize_t)sizeof(PyObject *) *
                (Py_ssize_t)sizeof(PyObject *);
    size_type.tp_basicsize = tensor_at + (Py_ssize_t)sizeof(PyObject *);
    return PyType_Ready(&size_type);
}

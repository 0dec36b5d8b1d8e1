/* PyTorch's everyday Tensor methods that are one C call each, as methods of the C type:
 * view and reshape (sizes as a tuple or as separate ints), clone, numel, dim,
 * ndimension, transpose, t, permute, unsqueeze and flatten. view shares storage or fails with
 * a ShapeError that names .reshape(); the composite methods are Python
 * (python/ctensor/tensor_methods.py). */
#include "ctpy_impl.h"

/* The sizes of view(*shape) / reshape(*shape): one tuple, list or int, or several ints. */
static int sizes_of(PyObject *const *args, Py_ssize_t nargs, const char *name, int64_t *shape,
                    int *ndim) {
    if (nargs == 1) return ctpy_parse_shape(args[0], name, shape, ndim);
    if (nargs > CT_MAX_DIMS) {
        ctpy_raise_status(CT_ERR_SHAPE, "%s: %zd sizes; ctensor has at most %d axes", name, nargs,
                          CT_MAX_DIMS);
        return -1;
    }
    *ndim = (int)nargs;
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (ctpy_int64_value(args[i], name, &shape[i]) < 0) return -1;
    return 0;
}

/* The text of a shape "(2, 3)" into buf. */
static void shape_text(const ct_tensor *t, char *buf, size_t size) {
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < ct_ndim(t) && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "",
                                 (long long)ct_shape(t)[d]);
    if (used < size) snprintf(buf + used, size - used, ")");
}

static PyObject *tensor_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs == 1 && PyObject_TypeCheck(args[0], &ctpy_dtype_type))
        return ctpy_raise_status(CT_ERR_UNSUPPORTED,
                                 "view(dtype): reinterpreting the bytes as another dtype is not "
                                 "supported; convert with .to(dtype)");
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    if (sizes_of(args, nargs, "view", shape, &ndim) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_of(self), *out = ct_view(t, ndim, shape);
    if (out) return ctpy_wrap(out);
    if (ct_last_status() != CT_ERR_SHAPE) return ctpy_raise();
    ct_clear_error(); /* the C message names ct_view: this one is in Python's words */
    char text[CT_MAX_DIMS * 22 + 4]; /* every size at its longest, "(", ")" and a NUL */
    shape_text(t, text, sizeof text);
    int64_t known = 1; /* the element count of the sizes other than -1 */
    int infer = 0;
    bool negative = false;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == -1)
            infer++;
        else if (shape[d] < 0)
            negative = true;
        else
            known *= shape[d];
    }
    int64_t numel = ct_numel(t);
    if (negative || infer > 1 || (infer ? known == 0 || numel % known != 0 : known != numel))
        return ctpy_raise_status(CT_ERR_SHAPE,
                                 "view: the array of shape %s has %lld elements, which the sizes "
                                 "given do not hold (sizes >= 0, and at most one -1)",
                                 text, (long long)numel);
    return ctpy_raise_status(CT_ERR_SHAPE,
                             "view: the array of shape %s cannot be seen in that shape without a "
                             "copy (its strides do not allow it); use .reshape(...), which copies "
                             "when it must, or .contiguous().view(...)",
                             text);
}

static PyObject *tensor_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    if (sizes_of(args, nargs, "reshape", shape, &ndim) < 0) return NULL;
    ct_tensor *out;
    CTPY_NOGIL(out = ct_reshape(ctpy_tensor_of(self), ndim, shape));
    return ctpy_wrap(out);
}

static PyObject *tensor_clone(PyObject *self, PyObject *unused) {
    ct_tensor *out;
    CTPY_NOGIL(out = ct_clone(ctpy_tensor_of(self)));
    return ctpy_wrap(out);
}

static PyObject *tensor_numel(PyObject *self, PyObject *unused) {
    return PyLong_FromLongLong(ct_numel(ctpy_tensor_of(self)));
}

static PyObject *tensor_dim(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(ct_ndim(ctpy_tensor_of(self)));
}

/* An axis argument in [-ndim, ndim) (ndim + 1 for unsqueeze) as a non-negative int; -1 with
 * IndexError naming the method. */
static int axis_of(PyObject *o, int ndim, const char *name) {
    int overflow;
    long long axis = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (axis == -1 && PyErr_Occurred()) return -1;
    if (overflow || axis < -ndim || axis >= ndim || ndim == 0) {
        PyErr_Format(PyExc_IndexError, "%s: dimension %S is out of range for %d dimensions", name,
                     o, ndim);
        return -1;
    }
    return (int)(axis < 0 ? axis + ndim : axis);
}

static PyObject *tensor_transpose(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "transpose(dim0, dim1) takes 2 dimensions (%zd given)",
                            nargs);
    ct_tensor *t = ctpy_tensor_of(self);
    int a = axis_of(args[0], ct_ndim(t), "transpose");
    int b = a < 0 ? -1 : axis_of(args[1], ct_ndim(t), "transpose");
    return b < 0 ? NULL : ctpy_wrap(ct_transpose(t, a, b));
}

static PyObject *tensor_t(PyObject *self, PyObject *unused) {
    ct_tensor *t = ctpy_tensor_of(self);
    if (ct_ndim(t) > 2)
        return ctpy_raise_status(CT_ERR_SHAPE,
                                 "t(): the array has %d dimensions, t() takes at most 2; use "
                                 ".transpose(dim0, dim1) or .mT",
                                 ct_ndim(t));
    return ct_ndim(t) < 2 ? Py_NewRef(self) : ctpy_wrap(ct_transpose(t, 0, 1));
}

static PyObject *tensor_permute(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    ct_tensor *t = ctpy_tensor_of(self);
    int ndim = ct_ndim(t), perm[CT_MAX_DIMS];
    PyObject *seq = nargs == 1 && !PyIndex_Check(args[0])
                        ? PySequence_Fast(args[0], "permute(*dims): dims are ints or one tuple")
                        : NULL;
    if (nargs == 1 && !PyIndex_Check(args[0]) && !seq) return NULL;
    Py_ssize_t n = seq ? PySequence_Fast_GET_SIZE(seq) : nargs;
    PyObject *const *items = seq ? PySequence_Fast_ITEMS(seq) : args;
    int ok = n == ndim;
    if (!ok)
        ctpy_raise_status(CT_ERR_SHAPE,
                          "permute: %zd dimensions given for an array of %d; name each once", n,
                          ndim);
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = (perm[i] = axis_of(items[i], ndim, "permute")) >= 0;
    Py_XDECREF(seq);
    return ok ? ctpy_wrap(ct_permute(t, ndim, perm)) : NULL;
}

static PyObject *tensor_unsqueeze(PyObject *self, PyObject *dim) {
    ct_tensor *t = ctpy_tensor_of(self);
    int axis = axis_of(dim, ct_ndim(t) + 1, "unsqueeze");
    return axis < 0 ? NULL : ctpy_wrap(ct_unsqueeze(t, axis));
}

static PyObject *tensor_flatten(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"start_dim", "end_dim", NULL};
    PyObject *start_obj = NULL, *end_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:flatten", keywords, &start_obj, &end_obj))
        return NULL;
    ct_tensor *t = ctpy_tensor_of(self);
    int ndim = ct_ndim(t);
    if (ndim == 0) return ctpy_wrap(ct_reshape(t, 1, (int64_t[]){1}));
    int start = start_obj ? axis_of(start_obj, ndim, "flatten") : 0;
    int end = start < 0 ? -1 : end_obj ? axis_of(end_obj, ndim, "flatten") : ndim - 1;
    if (end < 0) return NULL;
    if (start > end)
        return PyErr_Format(PyExc_IndexError, "flatten: start_dim %d comes after end_dim %d", start,
                            end);
    int64_t shape[CT_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < start; d++) shape[n++] = ct_shape(t)[d];
    int64_t merged = 1;
    for (int d = start; d <= end; d++) merged *= ct_shape(t)[d];
    shape[n++] = merged;
    for (int d = end + 1; d < ndim; d++) shape[n++] = ct_shape(t)[d];
    ct_tensor *out;
    CTPY_NOGIL(out = ct_reshape(t, n, shape));
    return ctpy_wrap(out);
}

PyMethodDef ctpy_tensor_torch_methods[] = {
    {"view", KW tensor_view, METH_FASTCALL,
     "view(*shape): the same storage seen in another shape (-1: inferred); a ShapeError when "
     "the strides do not allow it (use reshape)."},
    {"reshape", KW tensor_reshape, METH_FASTCALL,
     "reshape(*shape): a view when the strides allow it, else a copy."},
    {"clone", tensor_clone, METH_NOARGS, "clone(): a contiguous copy (differentiable)."},
    {"numel", tensor_numel, METH_NOARGS, "numel(): the number of elements."},
    {"dim", tensor_dim, METH_NOARGS, "dim(): the number of dimensions."},
    {"ndimension", tensor_dim, METH_NOARGS, "ndimension(): the number of dimensions."},
    {"transpose", KW tensor_transpose, METH_FASTCALL,
     "transpose(dim0, dim1): the two dimensions swapped (a view)."},
    {"t", tensor_t, METH_NOARGS, "t(): the transpose of a 2-D array (a 0-D or 1-D one as is)."},
    {"permute", KW tensor_permute, METH_FASTCALL,
     "permute(*dims): the dimensions in that order (a view)."},
    {"unsqueeze", tensor_unsqueeze, METH_O, "unsqueeze(dim): a new axis of size 1 at dim."},
    {"flatten", KW tensor_flatten, KWARGS,
     "flatten(start_dim=0, end_dim=-1): those dimensions merged into one."},
    {0}, /* sentinel */
};

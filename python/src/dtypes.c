/* The dtype functions of the array API: finfo, iinfo, isdtype, result_type (the C
 * library's promotion table, ct_promote_types, but for mixed kinds, which the standard leaves
 * to the implementation: the operators' rule, ctpy_promote_types), can_cast and astype. */
#include <float.h>

#include "ctpy_impl.h"

PyObject *ctpy_namespace_of(PyObject *dict) {
    if (!dict) return NULL;
    PyObject *types = PyImport_ImportModule("types");
    PyObject *cls = types ? PyObject_GetAttrString(types, "SimpleNamespace") : NULL;
    PyObject *empty = cls ? PyTuple_New(0) : NULL;
    PyObject *out = empty ? PyObject_Call(cls, empty, dict) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(cls);
    Py_XDECREF(types);
    Py_DECREF(dict);
    return out;
}

/* The dtype of a DType or an array argument. */
static int dtype_or_array(PyObject *o, ct_dtype *out) {
    if (ctpy_is_tensor(o)) return *out = ct_dtype_of(ctpy_tensor_of(o)), 0;
    return ctpy_to_dtype(o, out) ? 0 : -1;
}

static PyObject *py_finfo(PyObject *self, PyObject *arg) {
    ct_dtype d;
    if (dtype_or_array(arg, &d) < 0) return NULL;
    /* a complex dtype's finfo is its parts' (NumPy's and the standard's: dtype float32 for
     * complex64) */
    if (d == CT_C64) d = CT_F32;
    if (d == CT_C128) d = CT_F64;
    double eps, max, tiny;
    int bits = (int)ct_dtype_size(d) * 8;
    if (d == CT_F32)
        eps = FLT_EPSILON, max = FLT_MAX, tiny = FLT_MIN;
    else if (d == CT_F64)
        eps = DBL_EPSILON, max = DBL_MAX, tiny = DBL_MIN;
    else if (d == CT_F16)
        eps = 0x1p-10, max = 65504.0, tiny = 0x1p-14;
    else if (d == CT_BF16)
        eps = 0x1p-7, max = 0x1.fep127, tiny = 0x1p-126;
    else
        return PyErr_Format(PyExc_TypeError, "finfo: %s is not a floating dtype", ct_dtype_name(d));
    PyObject *dtype = ctpy_dtype_object(d);
    PyObject *dict =
        dtype ? Py_BuildValue("{s:i,s:d,s:d,s:d,s:d,s:O}", "bits", bits, "eps", eps, "max", max,
                              "min", -max, "smallest_normal", tiny, "dtype", dtype)
              : NULL;
    Py_XDECREF(dtype);
    return ctpy_namespace_of(dict);
}

static PyObject *py_iinfo(PyObject *self, PyObject *arg) {
    ct_dtype d;
    if (dtype_or_array(arg, &d) < 0) return NULL;
    if (!ct_dtype_is_integer(d))
        return PyErr_Format(PyExc_TypeError, "iinfo: %s is not an integer dtype", ct_dtype_name(d));
    int bits = (int)ct_dtype_size(d) * 8;
    long long min = 0;
    unsigned long long max = bits == 64 ? UINT64_MAX : (1ull << bits) - 1; /* unsigned */
    if (!ct_dtype_is_unsigned(d)) min = bits == 64 ? INT64_MIN : -(1ll << (bits - 1)), max >>= 1;
    PyObject *dtype = ctpy_dtype_object(d);
    PyObject *dict = dtype ? Py_BuildValue("{s:i,s:L,s:K,s:O}", "bits", bits, "min", min, "max",
                                           max, "dtype", dtype)
                           : NULL;
    Py_XDECREF(dtype);
    return ctpy_namespace_of(dict);
}

/* Whether dtype d is of kind (a kind name, a DType, or a tuple of them); -1 on error. */
static int is_kind(ct_dtype d, PyObject *kind) {
    if (PyTuple_Check(kind)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kind); i++) {
            int r = is_kind(d, PyTuple_GET_ITEM(kind, i));
            if (r != 0) return r;
        }
        return 0;
    }
    if (PyObject_TypeCheck(kind, &ctpy_dtype_type)) return ((ctpy_dtype *)kind)->dtype == d;
    const char *k = PyUnicode_Check(kind) ? PyUnicode_AsUTF8(kind) : NULL;
    if (!k) return PyErr_Format(PyExc_TypeError, "isdtype: a kind is a str or a dtype"), -1;
    bool floating = ct_dtype_is_floating(d), integer = ct_dtype_is_integer(d);
    if (!strcmp(k, "bool")) return d == CT_BOOL;
    if (!strcmp(k, "signed integer")) return integer && !ct_dtype_is_unsigned(d);
    if (!strcmp(k, "unsigned integer")) return ct_dtype_is_unsigned(d);
    if (!strcmp(k, "integral")) return integer;
    if (!strcmp(k, "real floating")) return floating;
    if (!strcmp(k, "complex floating")) return ct_dtype_is_complex(d);
    if (!strcmp(k, "numeric")) return integer || floating || ct_dtype_is_complex(d);
    PyErr_Format(PyExc_ValueError, "isdtype: unknown kind %R", kind);
    return -1;
}

static PyObject *py_isdtype(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"dtype", "kind", NULL};
    PyObject *dtype_obj, *kind;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O:isdtype", keywords, &ctpy_dtype_type,
                                     &dtype_obj, &kind))
        return NULL;
    int r = is_kind(((ctpy_dtype *)dtype_obj)->dtype, kind);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *py_result_type(PyObject *self, PyObject *args) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n == 0) return PyErr_Format(PyExc_ValueError, "result_type: at least one argument");
    ct_dtype out = (ct_dtype)-1;
    for (Py_ssize_t i = 0; i < n; i++) {
        ct_dtype d;
        if (dtype_or_array(PyTuple_GET_ITEM(args, i), &d) < 0) return NULL;
        out = i == 0 ? d : ctpy_promote_types(out, d);
    }
    return ctpy_dtype_object(out);
}

static PyObject *py_can_cast(PyObject *self, PyObject *args) {
    PyObject *from_obj, *to_obj;
    if (!PyArg_ParseTuple(args, "OO:can_cast", &from_obj, &to_obj)) return NULL;
    ct_dtype from, to;
    if (dtype_or_array(from_obj, &from) < 0 || !ctpy_to_dtype(to_obj, &to)) return NULL;
    return PyBool_FromLong(ct_promote_types(from, to) == to);
}

static PyObject *py_astype(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "dtype", "copy", "device", NULL};
    PyObject *x;
    ct_dtype dtype;
    int copy = 1;
    ct_device device = CT_DEFAULT;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO&|$pO&:astype", keywords, &x, ctpy_to_dtype,
                                     &dtype, &copy, ctpy_opt_device, &device))
        return NULL;
    /* x itself when it is a Tensor, so that copy=False can give x back */
    ct_tensor *t = ctpy_is_tensor(x) ? NULL : ctpy_tensor_arg(x, "astype", NULL);
    PyObject *array = t ? ctpy_wrap(t) : ctpy_is_tensor(x) ? Py_NewRef(x) : NULL;
    if (!array) return NULL;
    PyObject *moved =
        device.type == CT_DEVICE_DEFAULT
            ? Py_NewRef(array)
            : PyObject_CallMethod(array, "to_device", "N", ctpy_device_object(device));
    PyObject *out = moved ? PyObject_CallMethod(moved, "astype", "NO", ctpy_dtype_object(dtype),
                                                copy && moved == array ? Py_True : Py_False)
                          : NULL;
    Py_XDECREF(moved);
    Py_DECREF(array);
    return out;
}

PyMethodDef ctpy_dtype_functions[] = {
    {"finfo", py_finfo, METH_O, "finfo(dtype): bits, eps, max, min, smallest_normal, dtype."},
    {"iinfo", py_iinfo, METH_O, "iinfo(dtype): bits, max, min, dtype."},
    {"isdtype", KW py_isdtype, KWARGS,
     "isdtype($module, dtype, kind)\n--\n\nWhether dtype is of the kind (a name, a dtype, or a "
     "tuple of them)."},
    {"result_type", py_result_type, METH_VARARGS,
     "result_type($module, *arrays_and_dtypes)\n--\n\nThe dtype the standard's promotion gives."},
    {"can_cast", py_can_cast, METH_VARARGS,
     "can_cast($module, from_, to, /)\n--\n\nWhether promotion of from_ with to keeps to."},
    {"astype", KW py_astype, METH_VARARGS | METH_KEYWORDS,
     "astype($module, x, dtype, *, copy=True, device=None)\n--\n\nx converted to dtype."},
    {0}, /* sentinel */
};

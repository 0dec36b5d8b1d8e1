/* Creation functions of the array API: asarray, zeros, ones, empty, full and their *_like
 * forms, arange, linspace, eye, each with PyTorch's requires_grad= keyword. Each is one call of the
 * C library's creation function on the device asked for (the default placement otherwise, which
 * `with ctensor.device(...)` sets). */
#include <math.h>

#include "ctpy_impl.h"

static PyObject *py_asarray(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"obj", "dtype", "device", "copy", "requires_grad", NULL};
    PyObject *obj, *copy = Py_None;
    ct_dtype dtype = (ct_dtype)-1;
    ct_device device = CT_DEFAULT;
    int requires_grad = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O&O&Op:asarray", keywords, &obj,
                                     ctpy_opt_dtype, &dtype, ctpy_opt_device, &device, &copy,
                                     &requires_grad))
        return NULL;
    bool was_tensor = ctpy_is_tensor(obj);
    if (copy == Py_False && was_tensor) {
        ct_tensor *t = ctpy_tensor_of(obj);
        bool moves = device.type != CT_DEVICE_DEFAULT && !ct_device_equal(device, ct_device_of(t));
        if (moves || ((int)dtype >= 0 && dtype != ct_dtype_of(t)))
            return PyErr_Format(PyExc_ValueError,
                                "asarray(copy=False): the array would have to be copied");
    } else if (copy == Py_False && !PyObject_CheckBuffer(obj) &&
               !PyObject_HasAttrString(obj, "__dlpack__")) {
        return PyErr_Format(PyExc_ValueError, "asarray(copy=False): a %s is always copied",
                            Py_TYPE(obj)->tp_name);
    }
    ct_tensor *t = ctpy_as_tensor(obj, dtype, device);
    if (!t) return NULL;
    bool may_share = was_tensor ? ct_shares_storage(t, ctpy_tensor_of(obj))
                                : PyObject_CheckBuffer(obj) || !ctpy_is_scalar(obj);
    if (copy == Py_True && may_share) {
        ct_tensor *clone;
        CTPY_NOGIL(clone = ct_clone(t));
        ct_release(t);
        t = clone;
    }
    if (was_tensor && t == ctpy_tensor_of(obj)) {
        ct_release(t);
        if (requires_grad && ctpy_check(ct_set_requires_grad(t, true)) < 0) return NULL;
        return Py_NewRef(obj);
    }
    return ctpy_wrap_leaf(t, requires_grad);
}

/* ---- zeros, ones, empty, full ---- */

enum fill_kind { FILL_ZEROS, FILL_ONES, FILL_EMPTY, FILL_FULL };

static PyObject *filled(int ndim, const int64_t *shape, enum fill_kind kind, PyObject *value,
                        ct_dtype dtype, ct_device device, int requires_grad) {
    ct_tensor *out;
    if (kind == FILL_FULL && PyComplex_Check(value)) {
        if (!ct_dtype_is_complex(dtype))
            return ctpy_raise_status(CT_ERR_DTYPE,
                                     "full: a complex fill_value needs a complex dtype, not %s",
                                     ct_dtype_name(dtype));
        ct_complex128 z = {PyComplex_RealAsDouble(value), PyComplex_ImagAsDouble(value)};
        CTPY_NOGIL(out = ct_full_complex(ndim, shape, z, dtype, device));
        return ctpy_wrap_leaf(out, requires_grad);
    }
    if (kind == FILL_FULL && ctpy_check_scalar(value, dtype) < 0) return NULL;
    /* ct_full takes a double: an int that a double does not hold fills from its exact 0-d
     * array */
    if (kind == FILL_FULL && ctpy_needs_exact_int(value, dtype)) {
        ct_tensor *exact = ctpy_as_tensor(value, dtype, device);
        if (!exact) return NULL;
        CTPY_NOGIL({
            ct_tensor *wide = ct_expand(exact, ndim, shape);
            out = wide ? ct_clone(wide) : NULL;
            ct_release(wide);
        });
        ct_release(exact);
        return ctpy_wrap_leaf(out, requires_grad);
    }
    double v = value ? PyFloat_AsDouble(value) : 0;
    if (v == -1.0 && PyErr_Occurred()) return NULL;
    CTPY_NOGIL(out = kind == FILL_ZEROS   ? ct_zeros(ndim, shape, dtype, device)
                     : kind == FILL_ONES  ? ct_ones(ndim, shape, dtype, device)
                     : kind == FILL_EMPTY ? ct_empty(ndim, shape, dtype, device)
                                          : ct_full(ndim, shape, v, dtype, device));
    return ctpy_wrap_leaf(out, requires_grad);
}

/* The dtype full() gives fill_value when none is asked for. */
static ct_dtype value_dtype(PyObject *value) {
    return PyBool_Check(value)      ? CT_BOOL
           : PyLong_Check(value)    ? CTPY_DEFAULT_INT
           : PyComplex_Check(value) ? CTPY_DEFAULT_COMPLEX
                                    : CTPY_DEFAULT_FLOAT;
}

/* A fill function's arguments: the first (a shape, or x for the *_like forms), fill_value
 * (full only) and the dtype=, device= and requires_grad= keywords. */
typedef struct fill_args {
    PyObject *first, *value;
    ct_dtype dtype;
    ct_device device;
    int requires_grad;
} fill_args;

static bool parse_fill(PyObject *args, PyObject *kwargs, enum fill_kind kind, const char *name,
                       bool like, fill_args *a) {
    char *plain[] = {like ? "x" : "shape", "dtype", "device", "requires_grad", NULL};
    char *full[] = {like ? "x" : "shape", "fill_value", "dtype", "device", "requires_grad", NULL};
    *a = (fill_args){.dtype = (ct_dtype)-1, .device = CT_DEFAULT};
    char format[32];
    snprintf(format, sizeof format, kind == FILL_FULL ? "OO|$O&O&p:%s" : "O|$O&O&p:%s", name);
    return kind == FILL_FULL
               ? PyArg_ParseTupleAndKeywords(args, kwargs, format, full, &a->first, &a->value,
                                             ctpy_opt_dtype, &a->dtype, ctpy_opt_device, &a->device,
                                             &a->requires_grad)
               : PyArg_ParseTupleAndKeywords(args, kwargs, format, plain, &a->first, ctpy_opt_dtype,
                                             &a->dtype, ctpy_opt_device, &a->device,
                                             &a->requires_grad);
}

/* A 0-d array as fill_value stands for its value, as in array-api-strict's full: a->value
 * becomes that Python number (a new reference, *held, which the caller releases) and, when
 * no dtype was asked for, a->dtype the array's. Other values are left alone (*held NULL). */
static int fill_value_of_array(fill_args *a, PyObject **held) {
    *held = NULL;
    if (!a->value || !ctpy_is_tensor(a->value) || ct_ndim(ctpy_tensor_of(a->value)) != 0) return 0;
    if ((int)a->dtype < 0) a->dtype = ct_dtype_of(ctpy_tensor_of(a->value));
    *held = PyObject_CallMethod(a->value, "item", NULL);
    if (!*held) return -1;
    a->value = *held;
    return 0;
}

static PyObject *make(PyObject *args, PyObject *kwargs, enum fill_kind kind, const char *name) {
    fill_args a;
    /* PyTorch's zeros(4, 3) beside the standard's zeros((4, 3)): sizes as separate ints. */
    bool sizes = kind != FILL_FULL && PyTuple_GET_SIZE(args) > 1;
    PyObject *packed = sizes ? PyTuple_Pack(1, args) : Py_NewRef(args);
    bool ok = packed && parse_fill(packed, kwargs, kind, name, false, &a);
    Py_XDECREF(packed);
    if (!ok) return NULL;
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    PyObject *held;
    if (ctpy_parse_shape(a.first, "shape", shape, &ndim) < 0 || fill_value_of_array(&a, &held) < 0)
        return NULL;
    if (a.value) {
        if (!ctpy_is_scalar(a.value) && !PyComplex_Check(a.value)) {
            Py_XDECREF(held);
            return PyErr_Format(PyExc_TypeError,
                                "full: fill_value must be a Python number or a 0-d array");
        }
        if ((int)a.dtype < 0) a.dtype = value_dtype(a.value);
    }
    if ((int)a.dtype < 0) a.dtype = CTPY_DEFAULT_FLOAT;
    PyObject *out = filled(ndim, shape, kind, a.value, a.dtype, a.device, a.requires_grad);
    Py_XDECREF(held);
    return out;
}

static PyObject *py_zeros(PyObject *s, PyObject *a, PyObject *k) {
    return make(a, k, FILL_ZEROS, "zeros");
}
static PyObject *py_ones(PyObject *s, PyObject *a, PyObject *k) {
    return make(a, k, FILL_ONES, "ones");
}
static PyObject *py_empty(PyObject *s, PyObject *a, PyObject *k) {
    return make(a, k, FILL_EMPTY, "empty");
}
static PyObject *py_full(PyObject *s, PyObject *a, PyObject *k) {
    return make(a, k, FILL_FULL, "full");
}

static PyObject *make_like(PyObject *args, PyObject *kwargs, enum fill_kind kind,
                           const char *name) {
    fill_args a;
    ct_tensor *t = parse_fill(args, kwargs, kind, name, true, &a)
                       ? ctpy_tensor_arg(a.first, name, NULL)
                       : NULL;
    if (!t) return NULL;
    if ((int)a.dtype < 0) a.dtype = ct_dtype_of(t);
    if (a.device.type == CT_DEVICE_DEFAULT) a.device = ct_device_of(t);
    PyObject *held, *out = NULL;
    if (fill_value_of_array(&a, &held) == 0)
        out = filled(ct_ndim(t), ct_shape(t), kind, a.value, a.dtype, a.device, a.requires_grad);
    Py_XDECREF(held);
    ct_release(t);
    return out;
}

static PyObject *py_zeros_like(PyObject *s, PyObject *a, PyObject *k) {
    return make_like(a, k, FILL_ZEROS, "zeros_like");
}
static PyObject *py_ones_like(PyObject *s, PyObject *a, PyObject *k) {
    return make_like(a, k, FILL_ONES, "ones_like");
}
static PyObject *py_empty_like(PyObject *s, PyObject *a, PyObject *k) {
    return make_like(a, k, FILL_EMPTY, "empty_like");
}
static PyObject *py_full_like(PyObject *s, PyObject *a, PyObject *k) {
    return make_like(a, k, FILL_FULL, "full_like");
}

/* ---- ranges ---- */

/* An integer range into an integer dtype: its first and last values (Python ints) must be
 * values of dtype (NumPy 2: an OverflowError otherwise, not a wrapped range) and exact in the
 * doubles ct_arange takes (within 2**53). 0, or -1 with the exception. */
static int check_int_range(PyObject *start, PyObject *stop, PyObject *step, ct_dtype dtype) {
    PyObject *zero = PyLong_FromLong(0), *one = PyLong_FromLong(1);
    PyObject *range =
        zero && one ? PyObject_CallFunctionObjArgs((PyObject *)&PyRange_Type, start ? start : zero,
                                                   stop, step ? step : one, NULL)
                    : NULL;
    Py_XDECREF(zero);
    Py_XDECREF(one);
    if (!range && PyErr_ExceptionMatches(PyExc_ValueError)) { /* a zero step: ct_arange's to say */
        PyErr_Clear();
        return 0;
    }
    Py_ssize_t n = range ? PyObject_Size(range) : -1;
    if (n < 0 && PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_MemoryError, "arange: the range has more elements than memory holds");
    }
    int result = n < 0 ? -1 : 0;
    for (int end = 0; result == 0 && n > 0 && end < 2; end++) {
        PyObject *value = PySequence_GetItem(range, end ? n - 1 : 0);
        result = value ? ctpy_check_scalar(value, dtype) : -1;
        if (result == 0) {
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (overflow || v > (INT64_C(1) << 53) || v < -(INT64_C(1) << 53)) {
                PyErr_Format(PyExc_OverflowError,
                             "arange: %S is beyond 2**53, where ct_arange's double arguments "
                             "are exact",
                             value);
                result = -1;
            }
        }
        Py_XDECREF(value);
    }
    Py_XDECREF(range);
    return result;
}

static PyObject *py_arange(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"start", "stop", "step", "dtype", "device", "requires_grad", NULL};
    PyObject *start, *stop = Py_None, *step = NULL;
    ct_dtype dtype = (ct_dtype)-1;
    ct_device device = CT_DEFAULT;
    int requires_grad = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO$O&O&p:arange", keywords, &start, &stop,
                                     &step, ctpy_opt_dtype, &dtype, ctpy_opt_device, &device,
                                     &requires_grad))
        return NULL;
    if (stop == Py_None) {
        stop = start;
        start = NULL;
    }
    double a = start ? PyFloat_AsDouble(start) : 0, b = PyFloat_AsDouble(stop);
    double s = step ? PyFloat_AsDouble(step) : 1;
    if (PyErr_Occurred()) return NULL;
    bool integral =
        (!start || PyLong_Check(start)) && PyLong_Check(stop) && (!step || PyLong_Check(step));
    if ((int)dtype < 0) dtype = integral ? CTPY_DEFAULT_INT : CTPY_DEFAULT_FLOAT;
    if (integral && ct_dtype_is_integer(dtype) && check_int_range(start, stop, step, dtype) < 0)
        return NULL;
    ct_tensor *out;
    CTPY_NOGIL(out = ct_arange(a, b, s, dtype, device));
    return ctpy_wrap_leaf(out, requires_grad);
}

static PyObject *py_linspace(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"start",  "stop",     "num",           "dtype",
                               "device", "endpoint", "requires_grad", NULL};
    PyObject *start_obj, *stop_obj;
    Py_ssize_t num;
    ct_dtype dtype = (ct_dtype)-1;
    ct_device device = CT_DEFAULT;
    int endpoint = 1, requires_grad = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOn|$O&O&pp:linspace", keywords, &start_obj,
                                     &stop_obj, &num, ctpy_opt_dtype, &dtype, ctpy_opt_device,
                                     &device, &endpoint, &requires_grad))
        return NULL;
    /* complex ends make complex points (the default complex dtype unless one is asked) */
    bool complex = PyComplex_Check(start_obj) || PyComplex_Check(stop_obj);
    if ((int)dtype < 0) dtype = complex ? CTPY_DEFAULT_COMPLEX : CTPY_DEFAULT_FLOAT;
    if (complex && !ct_dtype_is_complex(dtype))
        return ctpy_raise_status(CT_ERR_DTYPE,
                                 "linspace: complex ends need a complex dtype, not %s",
                                 ct_dtype_name(dtype));
    Py_complex start = PyComplex_AsCComplex(start_obj), stop = PyComplex_AsCComplex(stop_obj);
    if (PyErr_Occurred()) return NULL;
    ct_complex128 z0 = {start.real, start.imag}, z1 = {stop.real, stop.imag};
    ct_tensor *out, *all;
    int64_t points = endpoint ? num : num + 1; /* without the endpoint: the first num of num + 1 */
    if (ct_dtype_is_complex(dtype))
        CTPY_NOGIL(all = ct_linspace_complex(z0, z1, points, dtype, device));
    else
        CTPY_NOGIL(all = ct_linspace(start.real, stop.real, points, dtype, device));
    if (endpoint) return ctpy_wrap_leaf(all, requires_grad);
    out = all ? ct_slice(all, 0, 0, num, 1) : NULL;
    ct_release(all);
    return ctpy_wrap_leaf(out, requires_grad);
}

/* The diagonal k of an n x m eye (any Python int): one past the matrix where it lies beyond
 * it, which keeps every element zero and the arithmetic in range (NumPy's answer for any k). */
static int eye_diagonal(PyObject *k_obj, Py_ssize_t n, Py_ssize_t m, long long *k) {
    PyObject *index = PyNumber_Index(k_obj);
    if (!index) return -1;
    int overflow;
    *k = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (*k == -1 && PyErr_Occurred()) return -1;
    if (overflow > 0 || *k > (long long)m) *k = (long long)m + 1;
    if (overflow < 0 || *k < -(long long)n) *k = -(long long)n - 1;
    return 0;
}

static PyObject *py_eye(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"n_rows", "n_cols", "k", "dtype", "device", "requires_grad", NULL};
    Py_ssize_t n, m = -1;
    PyObject *cols = Py_None, *k_obj = NULL;
    ct_dtype dtype = CTPY_DEFAULT_FLOAT;
    ct_device device = CT_DEFAULT;
    int requires_grad = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n|O$OO&O&p:eye", keywords, &n, &cols, &k_obj,
                                     ctpy_opt_dtype, &dtype, ctpy_opt_device, &device,
                                     &requires_grad))
        return NULL;
    if (cols != Py_None && (m = PyLong_AsSsize_t(cols)) == -1 && PyErr_Occurred()) return NULL;
    if ((int)dtype < 0) dtype = CTPY_DEFAULT_FLOAT;
    if (m < 0) m = n;
    long long k = 0;
    if (k_obj && eye_diagonal(k_obj, n, m, &k) < 0) return NULL;
    ct_tensor *out;
    if (k == 0) {
        CTPY_NOGIL(out = ct_eye(n, m, dtype, device));
        return ctpy_wrap_leaf(out, requires_grad);
    }
    /* Another diagonal: the ones where both tril and triu at k keep them (j - i == k). */
    CTPY_NOGIL({
        ct_tensor *ones = ct_ones(2, (int64_t[]){n, m}, dtype, device);
        ct_tensor *below = ones ? ct_tril(ones, k) : NULL;
        out = below ? ct_triu(below, k) : NULL;
        ct_release(below);
        ct_release(ones);
    });
    return ctpy_wrap_leaf(out, requires_grad);
}

PyMethodDef ctpy_creation_functions[] = {
    {"asarray", KW py_asarray, KWARGS,
     "asarray(obj, /, *, dtype=None, device=None, copy=None, requires_grad=False): an array "
     "from a Tensor, a Python number, nested lists, a buffer (NumPy array) or a DLPack "
     "producer."},
    {"zeros", KW py_zeros, KWARGS,
     "zeros($module, shape, *, dtype=None, device=None, requires_grad=False)\n--\n\n"
     "An array of zeros."},
    {"ones", KW py_ones, KWARGS,
     "ones($module, shape, *, dtype=None, device=None, requires_grad=False)\n--\n\nAn array of "
     "ones."},
    {"empty", KW py_empty, KWARGS,
     "empty($module, shape, *, dtype=None, device=None, requires_grad=False)\n--\n\n"
     "An uninitialized array."},
    {"full", KW py_full, KWARGS,
     "full($module, shape, fill_value, *, dtype=None, device=None, requires_grad=False)\n--\n\n"
     "An array filled with fill_value."},
    {"zeros_like", KW py_zeros_like, KWARGS,
     "zeros_like(x, *, dtype=None, device=None, requires_grad=False)."},
    {"ones_like", KW py_ones_like, KWARGS,
     "ones_like(x, *, dtype=None, device=None, requires_grad=False)."},
    {"empty_like", KW py_empty_like, KWARGS,
     "empty_like(x, *, dtype=None, device=None, requires_grad=False)."},
    {"full_like", KW py_full_like, KWARGS,
     "full_like(x, fill_value, *, dtype=None, device=None, requires_grad=False)."},
    {"arange", KW py_arange, KWARGS,
     "arange($module, start, stop=None, step=1, *, dtype=None, device=None, "
     "requires_grad=False)\n--\n\nEvenly spaced values in [start, stop) (one argument: [0, "
     "start))."},
    {"linspace", KW py_linspace, KWARGS,
     "linspace($module, start, stop, num, *, dtype=None, device=None, endpoint=True, "
     "requires_grad=False)\n--\n\nnum evenly spaced values from start to stop."},
    {"eye", KW py_eye, KWARGS,
     "eye($module, n_rows, n_cols=None, *, k=0, dtype=None, device=None, "
     "requires_grad=False)\n--\n\nOnes on the k-th diagonal, zeros elsewhere."},
    {0}, /* sentinel */
};

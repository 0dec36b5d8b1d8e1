/* Order statistics and NaN-aware ops over the C library's (ctensor/stats.h), in PyTorch's
 * words: quantile, nanquantile, nansum, nanmean, nan_to_num, lerp; and _median (ct_median or
 * ct_median_dim, NaN-ignoring on request), which python/ctensor/tensor_methods.py gives
 * PyTorch's (values, indices) named tuple as median and nanmedian. Each also takes the
 * standard's axis= and keepdims= (ctpy_torch_kwargs). */
#include "ctpy_impl.h"
#include "ctensor/stats.h"

/* kwargs with PyTorch's spellings renamed (a new reference or NULL, NULL with an
 * exception when the renaming failed). */
static int torch_kwargs(PyObject *kwargs, PyObject **out) {
    bool torch_style;
    *out = ctpy_torch_kwargs(kwargs, &torch_style);
    return *out || !PyErr_Occurred() ? 0 : -1;
}

/* nansum and nanmean: axis None, an int or a tuple; dtype casts x first (as ct.sum's). */
static PyObject *nan_reduce(PyObject *args, PyObject *kwargs, const char *name,
                            ct_tensor *(*fn)(const ct_tensor *, int, const int *, bool)) {
    static char *keywords[] = {"x", "axis", "keepdims", "dtype", NULL};
    PyObject *x, *axis = Py_None, *kw;
    int keepdims = 0, axes[CT_MAX_DIMS], naxes;
    ct_dtype dtype = (ct_dtype)-1;
    char format[32], what[32];
    snprintf(format, sizeof format, "O|OpO&:%s", name);
    snprintf(what, sizeof what, "%s: axis", name);
    if (torch_kwargs(kwargs, &kw) < 0) return NULL;
    int ok = PyArg_ParseTupleAndKeywords(args, kw, format, keywords, &x, &axis, &keepdims,
                                         ctpy_opt_dtype, &dtype);
    Py_XDECREF(kw);
    if (!ok || ctpy_parse_axes(axis, what, axes, &naxes) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, name, NULL), *out;
    if (!t) return NULL;
    if ((int)dtype >= 0 && dtype != ct_dtype_of(t)) {
        ct_tensor *cast = ctpy_cast(t, dtype);
        ct_release(t);
        if (!(t = cast)) return NULL;
    }
    CTPY_NOGIL(out = fn(t, naxes < 0 ? 0 : naxes, naxes < 0 ? NULL : axes, keepdims));
    ct_release(t);
    /* a given dtype is the result's too (the sum of small integers widens otherwise) */
    if (out && (int)dtype >= 0 && ct_dtype_of(out) != dtype) {
        ct_tensor *narrow = ctpy_cast(out, dtype);
        ct_release(out);
        return narrow ? ctpy_wrap(narrow) : NULL;
    }
    return ctpy_wrap(out);
}

static PyObject *py_nansum(PyObject *self, PyObject *args, PyObject *kwargs) {
    return nan_reduce(args, kwargs, "nansum", ct_nansum);
}

static PyObject *py_nanmean(PyObject *self, PyObject *args, PyObject *kwargs) {
    return nan_reduce(args, kwargs, "nanmean", ct_nanmean);
}

/* An optional float argument: None gives *given false. */
static int opt_double(PyObject *o, const char *what, double *value, bool *given) {
    *given = o != Py_None;
    if (!*given) return 0;
    *value = PyFloat_AsDouble(o);
    if (*value == -1.0 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "%s must be a number or None, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

static PyObject *py_nan_to_num(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "nan", "posinf", "neginf", NULL};
    PyObject *x, *pos_obj = Py_None, *neg_obj = Py_None;
    double nan = 0.0, pos = 0.0, neg = 0.0;
    bool has_pos, has_neg;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|dOO:nan_to_num", keywords, &x, &nan, &pos_obj,
                                     &neg_obj) ||
        opt_double(pos_obj, "nan_to_num: posinf", &pos, &has_pos) < 0 ||
        opt_double(neg_obj, "nan_to_num: neginf", &neg, &has_neg) < 0)
        return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "nan_to_num", NULL), *out;
    if (!t) return NULL;
    CTPY_NOGIL(out = ct_nan_to_num(t, nan, has_pos ? &pos : NULL, has_neg ? &neg : NULL));
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_lerp(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"input", "end", "weight", NULL};
    PyObject *a, *b, *w;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:lerp", keywords, &a, &b, &w)) return NULL;
    const ct_tensor *near =
        ctpy_tensor_or_null(a) ? ctpy_tensor_or_null(a) : ctpy_tensor_or_null(b);
    ct_tensor *start = ctpy_tensor_arg(a, "lerp", near), *out = NULL;
    ct_tensor *end = start ? ctpy_tensor_arg(b, "lerp", start) : NULL;
    bool scalar = !ctpy_is_tensor(w) && ctpy_is_scalar(w);
    double weight = scalar ? PyFloat_AsDouble(w) : 0.0;
    ct_tensor *wt = end && !scalar ? ctpy_tensor_arg(w, "lerp", start) : NULL;
    bool converted = end && (scalar ? !PyErr_Occurred() : wt != NULL);
    if (converted)
        CTPY_NOGIL(out = scalar ? ct_lerp_scalar(start, end, weight) : ct_lerp(start, end, wt));
    ct_release(start);
    ct_release(end);
    ct_release(wt);
    return converted ? ctpy_wrap(out) : NULL;
}

static const char *const interpolations[] = {"linear", "lower", "higher", "midpoint", "nearest"};

static PyObject *quantile(PyObject *args, PyObject *kwargs, const char *name, bool ignore_nan) {
    static char *keywords[] = {"x", "q", "axis", "keepdims", "interpolation", NULL};
    PyObject *x, *q_obj, *axis_obj = Py_None, *kw;
    int keepdims = 0, axis = CT_AXIS_NONE, how = -1;
    const char *interpolation = "linear";
    char format[40], what[40];
    snprintf(format, sizeof format, "OO|Op$s:%s", name);
    snprintf(what, sizeof what, "%s: dim", name);
    if (torch_kwargs(kwargs, &kw) < 0) return NULL;
    int ok = PyArg_ParseTupleAndKeywords(args, kw, format, keywords, &x, &q_obj, &axis_obj,
                                         &keepdims, &interpolation);
    Py_XDECREF(kw);
    if (!ok || (axis_obj != Py_None && ctpy_axis_value(axis_obj, what, &axis) < 0)) return NULL;
    for (int i = 0; i < 5; i++)
        if (strcmp(interpolation, interpolations[i]) == 0) how = i;
    if (how < 0)
        return PyErr_Format(PyExc_ValueError,
                            "%s: interpolation must be one of 'linear', 'lower', 'higher', "
                            "'midpoint' or 'nearest', not '%s'",
                            name, interpolation);
    ct_tensor *t = ctpy_tensor_arg(x, name, NULL), *out = NULL;
    if (!t) return NULL;
    /* q: a Tensor as it is; a Python float as a 0-d CPU scalar of x's dtype; a sequence as
     * an array of x's dtype beside x */
    ct_tensor *q = ctpy_is_tensor(q_obj) ? ctpy_tensor_arg(q_obj, name, t)
                   : PyFloat_Check(q_obj) || PyLong_Check(q_obj)
                       ? ctpy_as_tensor(q_obj, ct_dtype_of(t), CT_CPU)
                       : ctpy_as_tensor(q_obj, ct_dtype_of(t), ct_device_of(t));
    if (q)
        CTPY_NOGIL(out = (ignore_nan ? ct_nanquantile : ct_quantile)(
                       t, q, axis, keepdims, (ct_quantile_interpolation)how));
    bool converted = q != NULL;
    ct_release(t);
    ct_release(q);
    return converted ? ctpy_wrap(out) : NULL;
}

static PyObject *py_quantile(PyObject *self, PyObject *args, PyObject *kwargs) {
    return quantile(args, kwargs, "quantile", false);
}

static PyObject *py_nanquantile(PyObject *self, PyObject *args, PyObject *kwargs) {
    return quantile(args, kwargs, "nanquantile", true);
}

/* _median(x, dim, keepdim, ignore_nan): the median of all elements (dim None, a Tensor), or
 * along dim (values, indices). */
static PyObject *py_median(PyObject *self, PyObject *args) {
    PyObject *x, *axis_obj;
    int keepdim, ignore_nan, axis = 0;
    if (!PyArg_ParseTuple(args, "OOpp:_median", &x, &axis_obj, &keepdim, &ignore_nan)) return NULL;
    const char *name = ignore_nan ? "nanmedian" : "median";
    if (axis_obj != Py_None &&
        ctpy_axis_value(axis_obj, ignore_nan ? "nanmedian: dim" : "median: dim", &axis) < 0)
        return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, name, NULL), *values = NULL, *indices = NULL;
    if (!t) return NULL;
    if (axis_obj == Py_None) {
        CTPY_NOGIL(values = ignore_nan ? ct_nanmedian(t) : ct_median(t));
        ct_release(t);
        return ctpy_wrap(values);
    }
    ct_status status;
    CTPY_NOGIL(status = (ignore_nan ? ct_nanmedian_dim : ct_median_dim)(t, axis, keepdim, &values,
                                                                        &indices));
    ct_release(t);
    if (status != CT_OK) return ctpy_raise();
    PyObject *v = ctpy_wrap(values);
    PyObject *i = v ? ctpy_wrap(indices) : (ct_release(indices), NULL);
    PyObject *out = v && i ? PyTuple_Pack(2, v, i) : NULL;
    Py_XDECREF(v);
    Py_XDECREF(i);
    return out;
}

PyMethodDef ctpy_stats_ops_functions[] = {
    {"nansum", KW py_nansum, KWARGS,
     "nansum(x, /, dim=None, keepdim=False, *, dtype=None): the sum with NaN as 0."},
    {"nanmean", KW py_nanmean, KWARGS,
     "nanmean(x, /, dim=None, keepdim=False, *, dtype=None): the mean of the non-NaN "
     "elements."},
    {"nan_to_num", KW py_nan_to_num, KWARGS,
     "nan_to_num(x, nan=0.0, posinf=None, neginf=None): NaN and infinities replaced (None: "
     "the dtype's largest or lowest finite value)."},
    {"lerp", KW py_lerp, KWARGS,
     "lerp(input, end, weight): input + weight * (end - input), by PyTorch's formula."},
    {"quantile", KW py_quantile, KWARGS,
     "quantile(x, q, dim=None, keepdim=False, *, interpolation='linear'): torch.quantile."},
    {"nanquantile", KW py_nanquantile, KWARGS,
     "nanquantile(x, q, dim=None, keepdim=False, *, interpolation='linear'): quantiles of "
     "the non-NaN elements."},
    {"_median", py_median, METH_VARARGS,
     "_median(x, dim, keepdim, ignore_nan): ct_median, or ct_median_dim's (values, indices)."},
    {0}, /* sentinel */
};

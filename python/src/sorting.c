/* Sorting, searching, sets and the composed manipulation functions of the array API over
 * the C library's (ctensor/sorting.h): sort, argsort, cumulative_sum, cumulative_prod,
 * nonzero, searchsorted, isin, unique_all, unique_counts, unique_inverse, unique_values, tril,
 * triu, tile, repeat, tensordot, diff; and the cheap ones composed of C ops: take_along_axis
 * (ct_gather), count_nonzero, positive, logical_xor. The unique_* results are named tuples (struct
 * sequences) with the standard's field names. */
#include <math.h>

#include "ctpy_impl.h"

typedef ct_tensor *(*sort_fn)(const ct_tensor *, int, bool);

static PyObject *sorted(PyObject *args, PyObject *kwargs, const char *name, const char *format,
                        sort_fn fn) {
    static char *keywords[] = {"x", "axis", "descending", "stable", NULL};
    PyObject *x;
    int axis = -1, descending = 0, stable = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &x, ctpy_axis_arg, &axis,
                                     &descending, &stable))
        return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, name, NULL), *out;
    if (!t) return NULL;
    /* every sort is stable, so stable=False (any order of equal elements) is served too */
    CTPY_NOGIL(out = fn(t, axis, descending));
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_sort(PyObject *self, PyObject *args, PyObject *kwargs) {
    return sorted(args, kwargs, "sort", "O|O&pp:sort", ct_sort);
}

static PyObject *py_argsort(PyObject *self, PyObject *args, PyObject *kwargs) {
    return sorted(args, kwargs, "argsort", "O|O&pp:argsort", ct_argsort);
}

typedef ct_tensor *(*scan_fn)(const ct_tensor *, int, ct_dtype, bool);

/* cumulative_sum and cumulative_prod: (x, *, axis=None, dtype=None, include_initial=False). */
static PyObject *scanned(PyObject *args, PyObject *kwargs, const char *name, const char *format,
                         scan_fn fn) {
    static char *keywords[] = {"x", "axis", "dtype", "include_initial", NULL};
    PyObject *x, *axis_obj = Py_None;
    int dtype = -1, initial = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &x, &axis_obj, ctpy_opt_dtype,
                                     &dtype, &initial))
        return NULL;
    int axis = 0;
    char what[48];
    snprintf(what, sizeof what, "%s: axis", name);
    if (axis_obj != Py_None && ctpy_axis_value(axis_obj, what, &axis) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, name, NULL), *out;
    if (!t) return NULL;
    if (axis_obj == Py_None && ct_ndim(t) != 1) {
        ctpy_raise_status(CT_ERR_SHAPE, "%s: x has %d axes; give axis= unless x is 1-D", name,
                          ct_ndim(t));
        ct_release(t);
        return NULL;
    }
    CTPY_NOGIL(out = fn(t, axis, (ct_dtype)dtype, initial));
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_cumulative_sum(PyObject *self, PyObject *args, PyObject *kwargs) {
    return scanned(args, kwargs, "cumulative_sum", "O|$OO&p:cumulative_sum", ct_cumulative_sum);
}

static PyObject *py_cumulative_prod(PyObject *self, PyObject *args, PyObject *kwargs) {
    return scanned(args, kwargs, "cumulative_prod", "O|$OO&p:cumulative_prod", ct_cumulative_prod);
}

/* o beside the tensor t: a Python bool, int or float as a 0-d tensor on t's device, of t's
 * dtype where that holds its value (weak, as torch takes a scalar beside a tensor), else
 * float64 (a fraction beside integers) or int64 (an integer out of t's range, or beside
 * bool); any other o as ctpy_tensor_arg converts it. */
static ct_tensor *beside(PyObject *o, const ct_tensor *t, const char *fn) {
    if (!ctpy_is_scalar(o)) return ctpy_tensor_arg(o, fn, t);
    double s = PyFloat_AsDouble(o);
    if (s == -1.0 && PyErr_Occurred()) return NULL;
    ct_dtype dtype = ct_dtype_of(t);
    if (ct_dtype_is_integer(dtype)) {
        double bits = (double)(8 * ct_dtype_size(dtype));
        double lo = ct_dtype_is_unsigned(dtype) ? 0.0 : -ldexp(1.0, (int)bits - 1);
        double hi = ct_dtype_is_unsigned(dtype) ? ldexp(1.0, (int)bits) : -lo;
        if (s != floor(s))
            dtype = CT_F64;
        else if (s < lo || s >= hi)
            dtype = CT_I64;
    } else if (dtype == CT_BOOL && !PyBool_Check(o)) {
        dtype = s == floor(s) ? CT_I64 : CT_F64;
    }
    ct_tensor *out = ct_full(0, NULL, s, dtype, ct_device_of(t));
    if (!out) ctpy_raise();
    return out;
}

/* diff(x, /, *, axis=-1, n=1, prepend=None, append=None), n also second (torch.diff's
 * order): prepend and append may be Python scalars (typed beside x) or arrays. */
static PyObject *py_diff(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "n", "axis", "prepend", "append", NULL};
    PyObject *x, *pre = Py_None, *post = Py_None;
    int axis = -1;
    long long n = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|L$O&OO:diff", keywords, &x, &n, ctpy_axis_arg,
                                     &axis, &pre, &post))
        return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "diff", NULL), *out = NULL;
    ct_tensor *p = t && pre != Py_None ? beside(pre, t, "diff") : NULL;
    ct_tensor *q = t && post != Py_None ? beside(post, t, "diff") : NULL;
    bool converted = t && (pre == Py_None || p) && (post == Py_None || q);
    if (converted) CTPY_NOGIL(out = ct_diff(t, axis, (int64_t)n, p, q));
    ct_release(t);
    ct_release(p);
    ct_release(q);
    return converted ? ctpy_wrap(out) : NULL;
}

/* isin(elements, test_elements, *, assume_unique=False, invert=False): either side may be a
 * Python scalar (typed beside the other side, as torch.isin takes it). */
static PyObject *py_isin(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"elements", "test_elements", "assume_unique", "invert", NULL};
    PyObject *a, *b;
    int unique = 0, invert = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$pp:isin", keywords, &a, &b, &unique,
                                     &invert))
        return NULL;
    bool scalar_first = ctpy_is_scalar(a) && !ctpy_is_scalar(b);
    ct_tensor *x = NULL, *y = NULL, *out = NULL;
    if (scalar_first) {
        y = ctpy_tensor_arg(b, "isin", NULL);
        x = y ? beside(a, y, "isin") : NULL;
    } else {
        x = ctpy_tensor_arg(a, "isin", ctpy_tensor_or_null(b));
        y = x ? beside(b, x, "isin") : NULL;
    }
    bool converted = x && y;
    if (converted) CTPY_NOGIL(out = ct_isin(x, y, unique, invert));
    ct_release(x);
    ct_release(y);
    return converted ? ctpy_wrap(out) : NULL;
}

/* A tuple of n wrapped tensors (consumed), or NULL when one is missing. */
static PyObject *tuple_of(int n, ct_tensor **ts) {
    PyObject *tuple = PyTuple_New(n);
    for (int i = 0; i < n; i++) {
        PyObject *item = tuple ? ctpy_wrap(ts[i]) : (ct_release(ts[i]), NULL);
        if (tuple && !item) Py_CLEAR(tuple);
        if (tuple) PyTuple_SET_ITEM(tuple, i, item);
    }
    return tuple;
}

static PyObject *py_nonzero(PyObject *self, PyObject *x) {
    ct_tensor *t = ctpy_tensor_arg(x, "nonzero", NULL), *out[CT_MAX_DIMS] = {NULL};
    if (!t) return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_nonzero(t, out));
    int ndim = ct_ndim(t);
    ct_release(t);
    if (status != CT_OK) return ctpy_raise();
    return tuple_of(ndim, out);
}

static PyObject *py_searchsorted(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x1", "x2", "side", "sorter", NULL};
    PyObject *a, *b, *sorter_obj = Py_None;
    const char *side = "left";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$sO:searchsorted", keywords, &a, &b, &side,
                                     &sorter_obj))
        return NULL;
    bool right = strcmp(side, "right") == 0;
    if (!right && strcmp(side, "left") != 0)
        return PyErr_Format(PyExc_ValueError, "searchsorted: side must be 'left' or 'right'");
    ct_tensor *x1 = ctpy_tensor_arg(a, "searchsorted", ctpy_tensor_or_null(b));
    ct_tensor *x2 = x1 ? ctpy_tensor_arg(b, "searchsorted", x1) : NULL;
    ct_tensor *sorter =
        x2 && sorter_obj != Py_None ? ctpy_tensor_arg(sorter_obj, "searchsorted", x1) : NULL;
    ct_tensor *out = NULL;
    bool converted = x2 && (sorter || sorter_obj == Py_None);
    if (converted)
        CTPY_NOGIL(ct_tensor *in_order = sorter ? ct_index_select(x1, 0, sorter) : ct_retain(x1);
                   out = in_order ? ct_searchsorted(in_order, x2, right) : NULL;
                   ct_release(in_order));
    ct_release(x1);
    ct_release(x2);
    ct_release(sorter);
    return converted ? ctpy_wrap(out) : NULL;
}

/* The named tuples of unique_all, unique_counts and unique_inverse. */
static PyStructSequence_Field all_fields[] = {
    {"values", NULL}, {"indices", NULL}, {"inverse_indices", NULL}, {"counts", NULL}, {0}};
static PyStructSequence_Field counts_fields[] = {{"values", NULL}, {"counts", NULL}, {0}};
static PyStructSequence_Field inverse_fields[] = {{"values", NULL}, {"inverse_indices", NULL}, {0}};
static PyStructSequence_Desc all_desc = {"ctensor.UniqueAllResult", NULL, all_fields, 4};
static PyStructSequence_Desc counts_desc = {"ctensor.UniqueCountsResult", NULL, counts_fields, 2};
static PyStructSequence_Desc inverse_desc = {"ctensor.UniqueInverseResult", NULL, inverse_fields,
                                             2};
static PyTypeObject *all_type, *counts_type, *inverse_type;

/* unique of x, as the fields picked (indices into values, indices, inverse, counts). */
static PyObject *unique(PyObject *x, PyTypeObject *type, int n, const int *pick) {
    ct_tensor *t = ctpy_tensor_arg(x, "unique", NULL);
    if (!t) return NULL;
    ct_unique_result r;
    ct_status status;
    CTPY_NOGIL(status = ct_unique(t, &r));
    ct_release(t);
    if (status != CT_OK) return ctpy_raise();
    ct_tensor *all[4] = {r.values, r.indices, r.inverse, r.counts}, *chosen[4];
    for (int i = 0; i < 4; i++) {
        bool kept = false;
        for (int j = 0; j < n; j++)
            if (pick[j] == i) chosen[j] = all[i], kept = true;
        if (!kept) ct_release(all[i]);
    }
    if (!type) return ctpy_wrap(chosen[0]);
    PyObject *result = PyStructSequence_New(type);
    for (int j = 0; j < n; j++) {
        PyObject *item = result ? ctpy_wrap(chosen[j]) : (ct_release(chosen[j]), NULL);
        if (result && !item) Py_CLEAR(result);
        if (result) PyStructSequence_SET_ITEM(result, j, item);
    }
    return result;
}

static PyObject *py_unique_all(PyObject *self, PyObject *x) {
    return unique(x, all_type, 4, (int[]){0, 1, 2, 3});
}

static PyObject *py_unique_counts(PyObject *self, PyObject *x) {
    return unique(x, counts_type, 2, (int[]){0, 3});
}

static PyObject *py_unique_inverse(PyObject *self, PyObject *x) {
    return unique(x, inverse_type, 2, (int[]){0, 2});
}

static PyObject *py_unique_values(PyObject *self, PyObject *x) {
    return unique(x, NULL, 1, (int[]){0});
}

static PyObject *triangle(PyObject *args, PyObject *kwargs, const char *name, const char *format,
                          ct_tensor *(*fn)(const ct_tensor *, int64_t)) {
    static char *keywords[] = {"x", "k", NULL};
    PyObject *x, *k_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &x, &k_obj)) return NULL;
    /* any k (a Python int): one beyond int64 selects as int64's end does, on any array */
    long long k = 0;
    if (k_obj) {
        PyObject *index =
            PyIndex_Check(k_obj) && !PyFloat_Check(k_obj) ? PyNumber_Index(k_obj) : NULL;
        if (!index)
            return PyErr_Occurred()
                       ? NULL
                       : PyErr_Format(PyExc_TypeError, "%s: k must be an int, not %.100s", name,
                                      Py_TYPE(k_obj)->tp_name);
        int overflow;
        k = PyLong_AsLongLongAndOverflow(index, &overflow);
        Py_DECREF(index);
        if (k == -1 && PyErr_Occurred()) return NULL;
        if (overflow) k = overflow > 0 ? LLONG_MAX : LLONG_MIN;
    }
    ct_tensor *t = ctpy_tensor_arg(x, name, NULL), *out;
    if (!t) return NULL;
    CTPY_NOGIL(out = fn(t, (int64_t)k));
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_tril(PyObject *self, PyObject *args, PyObject *kwargs) {
    return triangle(args, kwargs, "tril", "O|$O:tril", ct_tril);
}

static PyObject *py_triu(PyObject *self, PyObject *args, PyObject *kwargs) {
    return triangle(args, kwargs, "triu", "O|$O:triu", ct_triu);
}

static PyObject *py_tile(PyObject *self, PyObject *args) {
    PyObject *x, *reps_obj;
    if (!PyArg_ParseTuple(args, "OO:tile", &x, &reps_obj)) return NULL;
    int64_t reps[CT_MAX_DIMS];
    int n;
    if (ctpy_parse_shape(reps_obj, "tile: repetitions", reps, &n) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "tile", NULL), *out;
    if (!t) return NULL;
    CTPY_NOGIL(out = ct_tile(t, n, reps));
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_repeat(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "repeats", "axis", NULL};
    PyObject *x, *repeats, *axis_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:repeat", keywords, &x, &repeats,
                                     &axis_obj))
        return NULL;
    int axis = CT_AXIS_NONE;
    if (axis_obj != Py_None && ctpy_axis_value(axis_obj, "repeat: axis", &axis) < 0) return NULL;
    /* one count (an int), or an array of counts (a Tensor or an array-like) */
    bool one = !ctpy_is_tensor(repeats) && PyIndex_Check(repeats) && !PyFloat_Check(repeats);
    int64_t n = 0;
    if (one && ctpy_int64_value(repeats, "repeat: repeats", &n) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "repeat", ctpy_tensor_or_null(repeats)), *out = NULL;
    ct_tensor *counts = t && !one ? ctpy_tensor_arg(repeats, "repeat", t) : NULL;
    bool converted = t && (one || counts);
    if (converted)
        CTPY_NOGIL(out = counts ? ct_repeat_each(t, counts, axis) : ct_repeat(t, (int64_t)n, axis));
    ct_release(t);
    ct_release(counts);
    return converted ? ctpy_wrap(out) : NULL;
}

/* tensordot's axes: an int n (a's last n with b's first n) or a pair of sequences. */
static int tensordot_axes(PyObject *o, int nda, int *axes_a, int *axes_b, int *n) {
    if (PyLong_Check(o)) {
        int64_t k;
        if (ctpy_int64_value(o, "tensordot: axes", &k) < 0) return -1;
        if (k < 0 || k > CT_MAX_DIMS || k > nda) {
            ctpy_raise_status(CT_ERR_INVALID_ARG, "tensordot: axes=%lld for an x1 of %d axes",
                              (long long)k, nda);
            return -1;
        }
        *n = (int)k;
        for (int i = 0; i < *n; i++) axes_a[i] = nda - *n + i, axes_b[i] = i;
        return 0;
    }
    PyObject *pa, *pb;
    if (!PyArg_ParseTuple(o, "OO:tensordot axes", &pa, &pb)) return -1;
    int na, nb;
    if (PyLong_Check(pa))
        pa = PyTuple_Pack(1, pa);
    else
        pa = PySequence_Tuple(pa);
    if (PyLong_Check(pb))
        pb = PyTuple_Pack(1, pb);
    else
        pb = PySequence_Tuple(pb);
    int ok = pa && pb && ctpy_parse_axes(pa, "tensordot: axes", axes_a, &na) == 0 &&
             ctpy_parse_axes(pb, "tensordot: axes", axes_b, &nb) == 0;
    Py_XDECREF(pa);
    Py_XDECREF(pb);
    if (!ok) return -1;
    if (na != nb) {
        ctpy_raise_status(CT_ERR_INVALID_ARG, "tensordot: %d axes of x1 but %d of x2", na, nb);
        return -1;
    }
    *n = na;
    return 0;
}

static PyObject *py_tensordot(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x1", "x2", "axes", NULL};
    PyObject *a, *b, *axes_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:tensordot", keywords, &a, &b, &axes_obj))
        return NULL;
    ct_tensor *x1 = ctpy_tensor_arg(a, "tensordot", ctpy_tensor_or_null(b)), *out = NULL;
    ct_tensor *x2 = x1 ? ctpy_tensor_arg(b, "tensordot", x1) : NULL;
    int axes_a[CT_MAX_DIMS], axes_b[CT_MAX_DIMS], n = 0;
    PyObject *two = x2 && !axes_obj ? PyLong_FromLong(2) : NULL;
    bool parsed =
        x2 && tensordot_axes(axes_obj ? axes_obj : two, ct_ndim(x1), axes_a, axes_b, &n) == 0;
    Py_XDECREF(two);
    if (parsed) CTPY_NOGIL(out = ct_tensordot(x1, x2, n, axes_a, axes_b));
    ct_release(x1);
    ct_release(x2);
    return parsed ? ctpy_wrap(out) : NULL;
}

static PyObject *py_take_along_axis(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "indices", "axis", NULL};
    PyObject *x, *i;
    int axis = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O&:take_along_axis", keywords, &x, &i,
                                     ctpy_axis_arg, &axis))
        return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "take_along_axis", ctpy_tensor_or_null(i)), *out = NULL;
    ct_tensor *index = t ? ctpy_tensor_arg(i, "take_along_axis", t) : NULL;
    bool converted = index != NULL;
    if (converted) CTPY_NOGIL(out = ct_gather(t, axis, index));
    ct_release(t);
    ct_release(index);
    return converted ? ctpy_wrap(out) : NULL;
}

static PyObject *py_count_nonzero(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "axis", "keepdims", NULL};
    PyObject *x, *axis_obj = Py_None;
    int keepdims = 0, axes[CT_MAX_DIMS], n;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$Op:count_nonzero", keywords, &x, &axis_obj,
                                     &keepdims))
        return NULL;
    if (ctpy_parse_axes(axis_obj, "count_nonzero: axis", axes, &n) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "count_nonzero", NULL), *out;
    if (!t) return NULL;
    CTPY_NOGIL(ct_tensor *mask = ct_ne_scalar(t, 0.0);
               ct_tensor *wide = mask ? ct_cast(mask, CT_I64) : NULL;
               out = wide ? ct_sum(wide, n < 0 ? 0 : n, n < 0 ? NULL : axes, keepdims) : NULL;
               ct_release(mask); ct_release(wide); ct_release(t));
    return ctpy_wrap(out);
}

static PyObject *py_positive(PyObject *self, PyObject *x) {
    ct_tensor *t = ctpy_tensor_arg(x, "positive", NULL), *out;
    if (!t) return NULL;
    CTPY_NOGIL(out = ct_clone(t));
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_logical_xor(PyObject *self, PyObject *args) {
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO:logical_xor", &a, &b)) return NULL;
    ct_tensor *x = ctpy_tensor_arg(a, "logical_xor", ctpy_tensor_or_null(b)), *out = NULL;
    ct_tensor *y = x ? ctpy_tensor_arg(b, "logical_xor", x) : NULL;
    bool converted = y != NULL;
    if (converted)
        CTPY_NOGIL(ct_tensor *p = ct_cast(x, CT_BOOL);
                   ct_tensor *q = p ? ct_cast(y, CT_BOOL) : NULL; out = q ? ct_ne(p, q) : NULL;
                   ct_release(p); ct_release(q));
    ct_release(x);
    ct_release(y);
    return converted ? ctpy_wrap(out) : NULL;
}

int ctpy_sorting_init(PyObject *module) {
    (void)module;
    all_type = PyStructSequence_NewType(&all_desc);
    counts_type = PyStructSequence_NewType(&counts_desc);
    inverse_type = PyStructSequence_NewType(&inverse_desc);
    return all_type && counts_type && inverse_type ? 0 : -1;
}

PyMethodDef ctpy_sorting_functions[] = {
    {"sort", KW py_sort, KWARGS, "sort(x, *, axis=-1, descending=False, stable=True)."},
    {"argsort", KW py_argsort, KWARGS, "argsort(x, *, axis=-1, descending=False, stable=True)."},
    {"cumulative_sum", KW py_cumulative_sum, KWARGS,
     "cumulative_sum(x, *, axis=None, dtype=None, include_initial=False)."},
    {"cumulative_prod", KW py_cumulative_prod, KWARGS,
     "cumulative_prod(x, *, axis=None, dtype=None, include_initial=False)."},
    {"diff", KW py_diff, KWARGS, "diff(x, n=1, *, axis=-1, prepend=None, append=None)."},
    {"isin", KW py_isin, KWARGS,
     "isin(elements, test_elements, *, assume_unique=False, invert=False)."},
    {"nonzero", py_nonzero, METH_O, "nonzero(x): a tuple of index arrays, one per axis."},
    {"searchsorted", KW py_searchsorted, KWARGS,
     "searchsorted(x1, x2, *, side='left', sorter=None)."},
    {"unique_all", py_unique_all, METH_O, "unique_all(x): values, indices, inverse, counts."},
    {"unique_counts", py_unique_counts, METH_O, "unique_counts(x): values, counts."},
    {"unique_inverse", py_unique_inverse, METH_O, "unique_inverse(x): values, inverse."},
    {"unique_values", py_unique_values, METH_O, "unique_values(x): the sorted unique values."},
    {"tril", KW py_tril, KWARGS, "tril(x, *, k=0)."},
    {"triu", KW py_triu, KWARGS, "triu(x, *, k=0)."},
    {"tile", py_tile, METH_VARARGS,
     "tile($module, x, repetitions, /)\n--\n\nx repeated along each axis."},
    {"repeat", KW py_repeat, KWARGS,
     "repeat($module, x, repeats, *, axis=None)\n--\n\nEach element repeated."},
    {"tensordot", KW py_tensordot, KWARGS,
     "tensordot($module, x1, x2, *, axes=2)\n--\n\nThe sum of products over the given axes."},
    {"take_along_axis", KW py_take_along_axis, KWARGS, "take_along_axis(x, indices, *, axis=-1)."},
    {"count_nonzero", KW py_count_nonzero, KWARGS,
     "count_nonzero(x, *, axis=None, keepdims=False)."},
    {"positive", py_positive, METH_O, "positive(x): a copy of x."},
    {"logical_xor", py_logical_xor, METH_VARARGS, "logical_xor(x1, x2)."},
    {0}, /* sentinel */
};

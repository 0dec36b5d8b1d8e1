/* Manipulation functions of the array API over the C library's shape ops: reshape,
 * permute_dims, expand_dims, squeeze, broadcast_to, broadcast_arrays, concat, stack, flip,
 * moveaxis, roll, unstack, meshgrid, take, matrix_transpose, vecdot and einsum; views where
 * the C op makes views. */
#include "ctpy_impl.h"

static PyObject *py_reshape(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "shape", "copy", NULL};
    PyObject *x, *spec, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:reshape", keywords, &x, &spec, &copy))
        return NULL;
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    if (ctpy_parse_shape(spec, "reshape: shape", shape, &ndim) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "reshape", NULL), *out;
    if (!t) return NULL;
    CTPY_NOGIL(out = copy == Py_False ? ct_view(t, ndim, shape) : ct_reshape(t, ndim, shape));
    if (out && copy == Py_True && ct_shares_storage(out, t)) {
        ct_tensor *clone = ct_clone(out);
        ct_release(out);
        out = clone;
    }
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_permute_dims(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"", "axes", NULL};
    PyObject *x, *axes_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:permute_dims", keywords, &x, &axes_obj))
        return NULL;
    int axes[CT_MAX_DIMS], n;
    if (ctpy_parse_axes(axes_obj, "permute_dims: axes", axes, &n) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "permute_dims", NULL);
    if (!t) return NULL;
    ct_tensor *out = ct_permute(t, n < 0 ? 0 : n, axes);
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_expand_dims(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "axis", NULL};
    PyObject *x;
    int axis = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O&:expand_dims", keywords, &x, ctpy_axis_arg,
                                     &axis))
        return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "expand_dims", NULL);
    if (!t) return NULL;
    int ndim = ct_ndim(t);
    if (axis < -ndim - 1 || axis > ndim) {
        ct_release(t);
        return PyErr_Format(PyExc_IndexError, "expand_dims: axis %d is out of range for %d axes",
                            axis, ndim);
    }
    ct_tensor *out = ct_unsqueeze(t, axis < 0 ? axis + ndim + 1 : axis);
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_squeeze(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "axis", NULL};
    PyObject *x, *axis_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:squeeze", keywords, &x, &axis_obj))
        return NULL;
    int axes[CT_MAX_DIMS], n;
    if (ctpy_parse_axes(axis_obj, "squeeze: axis", axes, &n) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "squeeze", NULL);
    if (!t) return NULL;
    if (n < 0) {
        ct_tensor *out = ct_squeeze(t, CT_AXIS_NONE);
        ct_release(t);
        return ctpy_wrap(out);
    }
    int ndim = ct_ndim(t);
    /* Highest axis first, so that the others keep their numbers. */
    for (int i = 0; i < n; i++) axes[i] = axes[i] < 0 ? axes[i] + ndim : axes[i];
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && axes[j] > axes[j - 1]; j--) {
            int swap = axes[j];
            axes[j] = axes[j - 1];
            axes[j - 1] = swap;
        }
    ct_tensor *cur = t;
    for (int i = 0; cur && i < n; i++) {
        ct_tensor *next = ct_squeeze(cur, axes[i]);
        ct_release(cur);
        cur = next;
    }
    return ctpy_wrap(cur);
}

static PyObject *py_broadcast_to(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"", "shape", NULL};
    PyObject *x, *spec;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:broadcast_to", keywords, &x, &spec))
        return NULL;
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    if (ctpy_parse_shape(spec, "broadcast_to: shape", shape, &ndim) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "broadcast_to", NULL);
    if (!t) return NULL;
    ct_tensor *out = ct_expand(t, ndim, shape);
    ct_release(t);
    return ctpy_wrap(out);
}

/* The NumPy broadcast of n shapes into shape/ndim; CT_ERR_SHAPE raised when they clash. */
static int broadcast_shape(int n, ct_tensor **ts, int64_t *shape, int *ndim) {
    *ndim = 0;
    for (int i = 0; i < n; i++) *ndim = ct_ndim(ts[i]) > *ndim ? ct_ndim(ts[i]) : *ndim;
    for (int d = 0; d < *ndim; d++) shape[d] = 1;
    for (int i = 0; i < n; i++) {
        int off = *ndim - ct_ndim(ts[i]);
        for (int d = 0; d < ct_ndim(ts[i]); d++) {
            int64_t s = ct_shape(ts[i])[d];
            if (s == shape[off + d] || s == 1) continue;
            if (shape[off + d] != 1) {
                ctpy_raise_status(CT_ERR_SHAPE,
                                  "broadcast_arrays: axis %d has sizes %lld and %lld, which do "
                                  "not broadcast",
                                  off + d, (long long)shape[off + d], (long long)s);
                return -1;
            }
            shape[off + d] = s;
        }
    }
    return 0;
}

static void release_all(int n, ct_tensor **ts) {
    for (int i = 0; i < n; i++) ct_release(ts[i]);
}

/* The arrays of a sequence as new references in ts (release_all them) and their count in
 * *n; array-likes join the device of the first Tensor among them. The sequence is read from
 * a snapshot (a converted element may run Python code that changes it). -1 with an
 * exception. */
static int tensor_list(PyObject *seq_obj, ct_tensor **ts, int capacity, int *n, const char *name) {
    PyObject *seq = ctpy_snapshot(seq_obj, capacity, name);
    if (!seq) return -1;
    Py_ssize_t count = PyTuple_GET_SIZE(seq);
    if (count > capacity) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: at most %d arrays", name, capacity);
        return -1;
    }
    ct_tensor *near = NULL;
    for (Py_ssize_t i = 0; !near && i < count; i++)
        if (ctpy_is_tensor(PyTuple_GET_ITEM(seq, i)))
            near = ct_retain(ctpy_tensor_of(PyTuple_GET_ITEM(seq, i)));
    for (*n = 0; *n < count; (*n)++)
        if (!(ts[*n] = ctpy_tensor_arg(PyTuple_GET_ITEM(seq, *n), name, near))) break;
    ct_release(near);
    Py_DECREF(seq);
    if (*n == count) return 0;
    release_all(*n, ts);
    return -1;
}

#define CTPY_MAX_ARRAYS 1024

static PyObject *py_broadcast_arrays(PyObject *self, PyObject *args) {
    ct_tensor *ts[CTPY_MAX_ARRAYS];
    int n;
    if (tensor_list(args, ts, CTPY_MAX_ARRAYS, &n, "broadcast_arrays") < 0) return NULL;
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    PyObject *out = broadcast_shape(n, ts, shape, &ndim) < 0 ? NULL : PyList_New(n);
    for (int i = 0; out && i < n; i++) {
        PyObject *o = ctpy_wrap(ct_expand(ts[i], ndim, shape));
        if (!o)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, o);
    }
    release_all(n, ts);
    return out;
}

typedef ct_tensor *(*join_fn)(int, const ct_tensor *const *, int);

static PyObject *join(PyObject *args, PyObject *kwargs, const char *name, const char *format,
                      join_fn fn) {
    static char *keywords[] = {"arrays", "axis", NULL};
    PyObject *arrays, *axis_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &arrays, &axis_obj))
        return NULL;
    ct_tensor *ts[CTPY_MAX_ARRAYS];
    int n;
    ct_tensor *flat[CTPY_MAX_ARRAYS];
    int axis = 0;
    bool flatten = axis_obj == Py_None;
    char what[32];
    snprintf(what, sizeof what, "%s: axis", name);
    if (axis_obj && !flatten && ctpy_axis_value(axis_obj, what, &axis) < 0) return NULL;
    if (tensor_list(arrays, ts, CTPY_MAX_ARRAYS, &n, name) < 0) return NULL;
    for (int i = 0; flatten && i < n; i++) flat[i] = ct_reshape(ts[i], 1, (int64_t[]){-1});
    ct_tensor *out;
    CTPY_NOGIL(out = fn(n, (const ct_tensor *const *)(flatten ? flat : ts), axis));
    for (int i = 0; flatten && i < n; i++) ct_release(flat[i]);
    release_all(n, ts);
    return ctpy_wrap(out);
}

static PyObject *py_concat(PyObject *self, PyObject *args, PyObject *kwargs) {
    return join(args, kwargs, "concat", "O|O:concat", ct_concat);
}

static PyObject *py_stack(PyObject *self, PyObject *args, PyObject *kwargs) {
    return join(args, kwargs, "stack", "O|O:stack", ct_stack);
}

static PyObject *py_flip(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "axis", NULL};
    PyObject *x, *axis_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:flip", keywords, &x, &axis_obj))
        return NULL;
    int axes[CT_MAX_DIMS], n;
    if (ctpy_parse_axes(axis_obj, "flip: axis", axes, &n) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "flip", NULL);
    if (!t) return NULL;
    if (n < 0)
        for (n = 0; n < ct_ndim(t); n++) axes[n] = n;
    ct_tensor *cur = t;
    for (int i = 0; cur && i < n; i++) {
        ct_tensor *next = ct_slice(cur, axes[i], INT64_MAX, INT64_MIN, -1);
        ct_release(cur);
        cur = next;
    }
    return ctpy_wrap(cur);
}

/* moveaxis's permutation of ndim axes: src[i] goes to dst[i] (n of each), the others keep
 * their order. -1 with a ValueError for bad or repeated axes. */
static int moved_axes(int ndim, const int *src, const int *dst, int n, int *perm) {
    int taken[CT_MAX_DIMS] = {0};
    for (int d = 0; d < ndim; d++) perm[d] = -1;
    for (int i = 0; i < n; i++) {
        int s = src[i] < 0 ? src[i] + ndim : src[i], e = dst[i] < 0 ? dst[i] + ndim : dst[i];
        if (s < 0 || s >= ndim || e < 0 || e >= ndim || taken[s] || perm[e] >= 0) {
            PyErr_Format(PyExc_ValueError, "moveaxis: bad or repeated axes");
            return -1;
        }
        perm[e] = s;
        taken[s] = 1;
    }
    for (int d = 0, next = 0; d < ndim; d++) {
        if (perm[d] >= 0) continue;
        while (taken[next]) next++;
        perm[d] = next;
        taken[next] = 1;
    }
    return 0;
}

static PyObject *py_moveaxis(PyObject *self, PyObject *args) {
    PyObject *x, *src_obj, *dst_obj;
    if (!PyArg_ParseTuple(args, "OOO:moveaxis", &x, &src_obj, &dst_obj)) return NULL;
    int src[CT_MAX_DIMS], dst[CT_MAX_DIMS], ns, nd, perm[CT_MAX_DIMS];
    if (ctpy_parse_axes(src_obj, "moveaxis: source", src, &ns) < 0 ||
        ctpy_parse_axes(dst_obj, "moveaxis: destination", dst, &nd) < 0)
        return NULL;
    if (ns != nd || ns < 0)
        return PyErr_Format(PyExc_ValueError, "moveaxis: source and destination differ in length");
    ct_tensor *t = ctpy_tensor_arg(x, "moveaxis", NULL), *out = NULL;
    if (!t) return NULL;
    int ndim = ct_ndim(t);
    bool ok = moved_axes(ndim, src, dst, ns, perm) == 0;
    if (ok) out = ct_permute(t, ndim, perm);
    ct_release(t);
    return ok ? ctpy_wrap(out) : NULL;
}

/* src rolled by shift along axis: a new array. */
static ct_tensor *roll_axis(ct_tensor *src, int axis, int64_t shift) {
    int64_t size = ct_size(src, axis), k = size ? ((shift % size) + size) % size : 0;
    ct_tensor *parts[2] = {ct_slice(src, axis, size - k, INT64_MAX, 1),
                           ct_slice(src, axis, 0, size - k, 1)};
    ct_tensor *joined = NULL;
    if (parts[0] && parts[1])
        CTPY_NOGIL(joined = ct_concat(2, (const ct_tensor *const *)parts, axis));
    ct_release(parts[0]);
    ct_release(parts[1]);
    return joined;
}

/* roll(x, shift, *, axis=None): shift an int, or a tuple of one shift per axis of the
 * axis tuple (an int shift applies to every axis given); no axis rolls the flattened
 * array. */
static PyObject *py_roll(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "shift", "axis", NULL};
    PyObject *x, *axis_obj = Py_None;
    PyObject *shift_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:roll", keywords, &x, &shift_obj,
                                     &axis_obj))
        return NULL;
    int axes[CT_MAX_DIMS], n;
    int64_t shifts[CT_MAX_DIMS];
    if (ctpy_parse_axes(axis_obj, "roll: axis", axes, &n) < 0) return NULL;
    bool many = PyTuple_Check(shift_obj) || PyList_Check(shift_obj);
    Py_ssize_t count = many ? PySequence_Size(shift_obj) : 1;
    if (many && count != (n < 0 ? -1 : n))
        return PyErr_Format(PyExc_ValueError,
                            "roll: a tuple of shifts needs an axis tuple of the same length");
    for (int i = 0; i < (n < 0 ? 1 : n); i++) {
        PyObject *item = many ? PySequence_GetItem(shift_obj, i) : Py_NewRef(shift_obj);
        int bad = !item || ctpy_int64_value(item, "roll: shift", &shifts[i]) < 0;
        Py_XDECREF(item);
        if (bad) return NULL;
    }
    ct_tensor *t = ctpy_tensor_arg(x, "roll", NULL);
    if (!t) return NULL;
    bool flat = n < 0;
    ct_tensor *cur = flat ? ct_reshape(t, 1, (int64_t[]){-1}) : ct_retain(t);
    for (int i = 0; cur && i < (flat ? 1 : n); i++) {
        ct_tensor *next = roll_axis(cur, flat ? 0 : axes[i], shifts[i]);
        ct_release(cur);
        cur = next;
    }
    ct_tensor *out = !cur ? NULL : flat ? ct_reshape(cur, ct_ndim(t), ct_shape(t)) : ct_retain(cur);
    ct_release(cur);
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_unstack(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "axis", NULL};
    PyObject *x;
    int axis = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O&:unstack", keywords, &x, ctpy_axis_arg,
                                     &axis))
        return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "unstack", NULL);
    if (!t) return NULL;
    if (axis < -ct_ndim(t) || axis >= ct_ndim(t)) {
        ct_release(t);
        return PyErr_Format(PyExc_IndexError, "unstack: axis %d out of range", axis);
    }
    if (axis < 0) axis += ct_ndim(t);
    int64_t n = ct_shape(t)[axis];
    PyObject *out = PyTuple_New(n);
    for (int64_t i = 0; out && i < n; i++) {
        ct_tensor *row = ct_slice(t, axis, i, i + 1, 1);
        PyObject *o = ctpy_wrap(row ? ct_squeeze(row, axis) : NULL);
        ct_release(row);
        if (!o)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, o);
    }
    ct_release(t);
    return out;
}

static PyObject *py_meshgrid(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"indexing", NULL};
    const char *indexing = "xy";
    PyObject *empty = PyTuple_New(0);
    int ok =
        empty && PyArg_ParseTupleAndKeywords(empty, kwargs, "|$s:meshgrid", keywords, &indexing);
    Py_XDECREF(empty);
    if (!ok) return NULL;
    if (strcmp(indexing, "xy") != 0 && strcmp(indexing, "ij") != 0)
        return PyErr_Format(PyExc_ValueError, "meshgrid: indexing must be 'xy' or 'ij', not '%s'",
                            indexing);
    ct_tensor *ts[CT_MAX_DIMS];
    int n;
    if (tensor_list(args, ts, CT_MAX_DIMS, &n, "meshgrid") < 0) return NULL;
    bool xy = strcmp(indexing, "xy") == 0 && n >= 2;
    int64_t shape[CT_MAX_DIMS];
    for (int i = 0; i < n; i++) shape[i] = ct_numel(ts[i]);
    if (xy) shape[0] = ct_numel(ts[1]), shape[1] = ct_numel(ts[0]);
    PyObject *out = PyList_New(n);
    for (int i = 0; out && i < n; i++) {
        int64_t view[CT_MAX_DIMS];
        int at = xy && i < 2 ? 1 - i : i;
        for (int d = 0; d < n; d++) view[d] = d == at ? -1 : 1;
        ct_tensor *r = ct_reshape(ts[i], n, view);
        PyObject *o = ctpy_wrap(r ? ct_expand(r, n, shape) : NULL);
        ct_release(r);
        if (!o)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, o);
    }
    release_all(n, ts);
    return out;
}

static PyObject *py_take(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "indices", "axis", NULL};
    PyObject *x, *indices, *axis_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:take", keywords, &x, &indices, &axis_obj))
        return NULL;
    int axis = 0;
    if (axis_obj != Py_None && ctpy_axis_value(axis_obj, "take: axis", &axis) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, "take", ctpy_tensor_or_null(indices));
    if (!t) return NULL;
    if (axis_obj == Py_None && ct_ndim(t) != 1) {
        PyErr_Format(PyExc_ValueError, "take: axis is needed for a %d-D array", ct_ndim(t));
        ct_release(t);
        return NULL;
    }
    ct_tensor *index = ctpy_tensor_arg(indices, "take", t), *out = NULL;
    bool converted = index != NULL;
    if (converted) CTPY_NOGIL(out = ct_index_select(t, axis, index));
    ct_release(t);
    ct_release(index);
    return converted ? ctpy_wrap(out) : NULL;
}

static PyObject *py_matrix_transpose(PyObject *self, PyObject *x) {
    ct_tensor *t = ctpy_tensor_arg(x, "matrix_transpose", NULL);
    if (!t) return NULL;
    bool matrices = ct_ndim(t) >= 2;
    ct_tensor *out = matrices ? ct_transpose(t, -2, -1) : NULL;
    ct_release(t);
    if (!matrices)
        return ctpy_raise_status(CT_ERR_SHAPE, "matrix_transpose: needs at least 2 axes");
    return ctpy_wrap(out);
}

static PyObject *py_vecdot(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x1", "x2", "axis", NULL};
    PyObject *a, *b;
    int axis = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O&:vecdot", keywords, &a, &b, ctpy_axis_arg,
                                     &axis))
        return NULL;
    ct_tensor *x = ctpy_tensor_arg(a, "vecdot", ctpy_tensor_or_null(b)), *out = NULL;
    ct_tensor *y = x ? ctpy_tensor_arg(b, "vecdot", x) : NULL;
    bool converted = y != NULL;
    if (converted) { /* the contracted axis: the same size in both, not broadcast */
        int n = ct_ndim(x) > ct_ndim(y) ? ct_ndim(x) : ct_ndim(y);
        int at = axis < 0 ? axis + n : axis, ax = at - (n - ct_ndim(x)), ay = at - (n - ct_ndim(y));
        int64_t sx = ax >= 0 && ax < ct_ndim(x) ? ct_shape(x)[ax] : -1;
        int64_t sy = ay >= 0 && ay < ct_ndim(y) ? ct_shape(y)[ay] : -1;
        if (at < 0 || at >= n || sx != sy) {
            converted = false;
            if (at < 0 || at >= n)
                ctpy_raise_status(CT_ERR_SHAPE, "vecdot: axis %d is out of range for %d axes", axis,
                                  n);
            else
                ctpy_raise_status(CT_ERR_SHAPE,
                                  "vecdot: the contracted axis has size %lld in x1 and %lld in x2",
                                  (long long)sx, (long long)sy);
        }
    }
    if (converted) /* the standard's sum(conj(x1) * x2): conj of a real x1 is x1 itself */
        /* in the promoted dtype of x1 and x2, as the standard says: a sum of integers,
         * accumulated wider, wraps back into it */
        CTPY_NOGIL(ct_tensor *cx = ct_conj(x); ct_tensor *product = cx ? ct_mul(cx, y) : NULL;
                   ct_tensor *sum = product ? ct_sum(product, 1, &axis, false) : NULL;
                   out = sum && ct_dtype_of(sum) != ct_dtype_of(product)
                             ? ct_cast(sum, ct_dtype_of(product))
                             : (sum ? ct_retain(sum) : NULL);
                   ct_release(sum); ct_release(cx); ct_release(product));
    ct_release(x);
    ct_release(y);
    return converted ? ctpy_wrap(out) : NULL;
}

/* The operands of einsum(equation, *operands): PyTorch's one list or tuple of Tensors, or
 * the arrays themselves (NumPy's). */
static bool tensor_sequence(PyObject *o) {
    if (!PyList_Check(o) && !PyTuple_Check(o)) return false;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!ctpy_is_tensor(PySequence_Fast_GET_ITEM(o, i))) return false;
    return n > 0;
}

/* ct_einsum(equation) of the arrays of the sequence `arrays`. */
static PyObject *einsum_of(const char *equation, PyObject *arrays) {
    ct_tensor *ts[CTPY_MAX_ARRAYS], *out = NULL;
    int n;
    if (tensor_list(arrays, ts, CTPY_MAX_ARRAYS, &n, "einsum") < 0) return NULL;
    CTPY_NOGIL(out = ct_einsum(equation, n, (const ct_tensor *const *)ts));
    release_all(n, ts);
    return ctpy_wrap(out);
}

/* Append NumPy's sublist `o` (ints in [0, 52): 0-25 are 'A'-'Z', 26-51 'a'-'z'; Ellipsis is
 * "...") to the equation at *end (room for 3 characters per item). -1 with an exception. */
static int append_sublist(PyObject *o, char **end) {
    PyObject *seq = ctpy_snapshot(o, CT_MAX_DIMS + 1, "einsum: a sublist");
    if (!seq) return -1;
    int status = 0;
    for (Py_ssize_t i = 0; status == 0 && i < PyTuple_GET_SIZE(seq); i++) {
        PyObject *item = PyTuple_GET_ITEM(seq, i);
        long v = item == Py_Ellipsis || !PyLong_Check(item) ? -1 : PyLong_AsLong(item);
        if (item == Py_Ellipsis) {
            memcpy(*end, "...", 3), *end += 3;
        } else if (v >= 0 && v < 52) {
            *(*end)++ = (char)(v < 26 ? 'A' + v : 'a' + (v - 26));
        } else {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError,
                            "einsum: a sublist holds ints in [0, 52) and Ellipsis only");
            status = -1;
        }
    }
    Py_DECREF(seq);
    return status;
}

/* NumPy's sublist form: einsum(x0, sublist0, x1, sublist1, ..., [sublist_out]). */
static PyObject *einsum_sublists(PyObject *args) {
    Py_ssize_t nargs = PyTuple_GET_SIZE(args), n = nargs / 2;
    size_t room = (size_t)(n + 1) * (3 * (CT_MAX_DIMS + 1) + 2) + 1;
    char *equation = PyMem_Malloc(room), *end = equation;
    PyObject *arrays = equation ? PyTuple_New(n) : NULL, *out = NULL;
    int status = arrays ? 0 : -1;
    for (Py_ssize_t k = 0; status == 0 && k < n; k++) {
        PyTuple_SET_ITEM(arrays, k, Py_NewRef(PyTuple_GET_ITEM(args, 2 * k)));
        if (k) *end++ = ',';
        status = append_sublist(PyTuple_GET_ITEM(args, 2 * k + 1), &end);
    }
    if (status == 0 && nargs % 2) {
        memcpy(end, "->", 2), end += 2;
        status = append_sublist(PyTuple_GET_ITEM(args, nargs - 1), &end);
    }
    if (status == 0) {
        *end = '\0';
        out = einsum_of(equation, arrays);
    }
    Py_XDECREF(arrays);
    PyMem_Free(equation);
    if (!equation) PyErr_NoMemory();
    return out;
}

static PyObject *py_einsum(PyObject *self, PyObject *args) {
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs == 0) {
        PyErr_SetString(PyExc_TypeError, "einsum: needs an equation (a str) and the operands");
        return NULL;
    }
    if (!PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) return einsum_sublists(args);
    const char *equation = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 0));
    PyObject *rest = equation ? PyTuple_GetSlice(args, 1, nargs) : NULL;
    if (!rest) return NULL;
    PyObject *arrays =
        nargs == 2 && tensor_sequence(PyTuple_GET_ITEM(rest, 0)) ? PyTuple_GET_ITEM(rest, 0) : rest;
    PyObject *out = einsum_of(equation, arrays);
    Py_DECREF(rest);
    return out;
}

PyMethodDef ctpy_manip_functions[] = {
    {"reshape", KW py_reshape, KWARGS, "reshape(x, shape, *, copy=None)."},
    {"permute_dims", KW py_permute_dims, KWARGS,
     "permute_dims($module, x, /, axes)\n--\n\nA view with the axes in the given order."},
    {"expand_dims", KW py_expand_dims, KWARGS, "expand_dims(x, *, axis=0): a view."},
    {"squeeze", KW py_squeeze, KWARGS,
     "squeeze($module, x, axis)\n--\n\nx without the given size-1 axes (a view)."},
    {"broadcast_to", KW py_broadcast_to, KWARGS,
     "broadcast_to($module, x, /, shape)\n--\n\nA view of x broadcast to shape."},
    {"broadcast_arrays", py_broadcast_arrays, METH_VARARGS,
     "broadcast_arrays($module, *arrays)\n--\n\nThe arrays broadcast against each other (views)."},
    {"concat", KW py_concat, KWARGS,
     "concat($module, arrays, *, axis=0)\n--\n\nThe arrays joined along axis; axis=None flattens "
     "them first."},
    {"stack", KW py_stack, KWARGS, "stack(arrays, *, axis=0)."},
    {"flip", KW py_flip, KWARGS, "flip(x, *, axis=None): a view."},
    {"moveaxis", py_moveaxis, METH_VARARGS,
     "moveaxis($module, x, source, destination, /)\n--\n\nx with axes moved (a view)."},
    {"roll", KW py_roll, KWARGS,
     "roll($module, x, shift, *, axis=None)\n--\n\nx rolled along the axes, or flattened (none)."},
    {"unstack", KW py_unstack, KWARGS, "unstack(x, *, axis=0): a tuple of views."},
    {"meshgrid", KW py_meshgrid, KWARGS,
     "meshgrid($module, *arrays, indexing='xy')\n--\n\nCoordinate grids (views)."},
    {"take", KW py_take, KWARGS,
     "take($module, x, indices, *, axis=None)\n--\n\nThe elements of x at indices along axis."},
    {"matrix_transpose", py_matrix_transpose, METH_O,
     "matrix_transpose($module, x, /)\n--\n\nThe last two axes swapped (a view)."},
    {"vecdot", KW py_vecdot, KWARGS,
     "vecdot($module, x1, x2, *, axis=-1)\n--\n\nsum(conj(x1) * x2, axis)."},
    {"einsum", py_einsum, METH_VARARGS,
     "einsum($module, equation, /, *operands)\n--\n\nEinstein summation, as numpy.einsum and "
     "torch.einsum "
     "(operands also as one list of Tensors)."},
    {0}, /* sentinel */
};

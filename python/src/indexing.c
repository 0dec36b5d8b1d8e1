/* Tensor indexing and assignment: ints, slices, `...`, None and tuples of them give views
 * (ct_slice, ct_squeeze, ct_unsqueeze); one integer array in the key gathers along its axis
 * (ct_index_select, a copy). x[key] = value writes through the view (ct_fill for a scalar,
 * ct_copy otherwise). Boolean masks, and more than one integer array in a key, need ops
 * the core does not have (nonzero, multi-axis gather): they raise IndexError saying so.
 * An index out of range is an IndexError. */
#include "ctpy_impl.h"

/* One step of a key, applied to cur at axis *axis; returns the new view (a new reference) or
 * NULL with an exception set. */
static ct_tensor *apply_int(ct_tensor *cur, int axis, PyObject *item) {
    Py_ssize_t i = PyNumber_AsSsize_t(item, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) return NULL;
    int64_t size = ct_shape(cur)[axis];
    if (i < -size || i >= size) {
        PyErr_Format(PyExc_IndexError, "index %zd is out of range for axis %d of size %lld", i,
                     axis, (long long)size);
        return NULL;
    }
    if (i < 0) i += size;
    ct_tensor *row = ct_slice(cur, axis, i, i + 1, 1);
    ct_tensor *out = row ? ct_squeeze(row, axis) : NULL;
    ct_release(row);
    if (!out) ctpy_raise();
    return out;
}

static ct_tensor *apply_slice(ct_tensor *cur, int axis, PyObject *item) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(item, &start, &stop, &step) < 0) return NULL;
    ct_tensor *out = ct_slice(cur, axis, start == PY_SSIZE_T_MIN ? INT64_MIN : start,
                              stop == PY_SSIZE_T_MAX ? INT64_MAX : stop, step);
    if (!out) ctpy_raise();
    return out;
}

/* An integer array along axis: the rows it picks, with the index's shape in place of the
 * axis. */
static ct_tensor *apply_array(ct_tensor *cur, int axis, ct_tensor *index) {
    int64_t flat_size = ct_numel(index);
    ct_tensor *flat = ct_reshape(index, 1, &flat_size), *picked = NULL;
    if (flat) CTPY_NOGIL(picked = ct_index_select(cur, axis, flat));
    ct_release(flat);
    if (!picked) return ctpy_raise(), NULL;
    int64_t shape[CT_MAX_DIMS * 2];
    int ndim = 0;
    for (int d = 0; d < axis; d++) shape[ndim++] = ct_shape(cur)[d];
    for (int d = 0; d < ct_ndim(index); d++) shape[ndim++] = ct_shape(index)[d];
    for (int d = axis + 1; d < ct_ndim(cur); d++) shape[ndim++] = ct_shape(cur)[d];
    ct_tensor *out = ct_reshape(picked, ndim, shape);
    ct_release(picked);
    if (!out) ctpy_raise();
    return out;
}

/* The key's items as a new tuple. */
static PyObject *key_items(PyObject *key) {
    if (PyTuple_Check(key)) return Py_NewRef(key);
    return PyTuple_Pack(1, key);
}

/* Whether item counts as an index into an axis (everything but None and `...`). */
static bool uses_axis(PyObject *item) { return item != Py_None && item != Py_Ellipsis; }

static bool is_integer_array(PyObject *item) {
    return ctpy_is_tensor(item) && ct_dtype_is_integer(ct_dtype_of(ctpy_tensor_of(item)));
}

/* Count the key's items that use an axis, and check the key; -1 with an IndexError. */
static int check_key(PyObject *items, const ct_tensor *t, int *used, int *arrays) {
    int ellipses = 0;
    *used = *arrays = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items); k++) {
        PyObject *item = PyTuple_GET_ITEM(items, k);
        *used += uses_axis(item);
        ellipses += item == Py_Ellipsis;
        *arrays += is_integer_array(item);
        if (ctpy_is_tensor(item) && ct_dtype_of(ctpy_tensor_of(item)) == CT_BOOL) {
            PyErr_SetString(PyExc_IndexError,
                            "boolean mask indexing needs a nonzero op, which ctensor's core "
                            "does not have yet; use where() instead");
            return -1;
        }
    }
    if (ellipses <= 1 && *used <= ct_ndim(t) && *arrays <= 1) return 0;
    PyErr_Format(PyExc_IndexError,
                 ellipses > 1  ? "an index can have only one ellipsis ('...')"
                 : *arrays > 1 ? "only one integer array per index is supported (the core "
                                 "has no multi-axis gather)"
                               : "too many indices: %d for an array of %d dimensions",
                 *used, ct_ndim(t));
    return -1;
}

/* x[key] as a new reference; *gathered says whether an integer array made it a copy. */
static ct_tensor *index_tensor(ct_tensor *t, PyObject *key, bool *gathered) {
    PyObject *items = key_items(key);
    if (!items) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int used, arrays;
    if (check_key(items, t, &used, &arrays) < 0) {
        Py_DECREF(items);
        return NULL;
    }
    *gathered = arrays > 0;
    ct_tensor *cur = ct_retain(t);
    int axis = 0;
    for (Py_ssize_t k = 0; cur && k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(items, k);
        ct_tensor *next;
        if (item == Py_Ellipsis) {
            axis += ct_ndim(t) - used;
            continue;
        } else if (item == Py_None) {
            if (!(next = ct_unsqueeze(cur, axis))) ctpy_raise();
            axis++;
        } else if (PySlice_Check(item)) {
            next = apply_slice(cur, axis++, item);
        } else if (is_integer_array(item)) {
            next = apply_array(cur, axis, ctpy_tensor_of(item));
            axis += ct_ndim(ctpy_tensor_of(item));
        } else if (PyIndex_Check(item)) {
            next = apply_int(cur, axis, item);
        } else {
            PyErr_Format(PyExc_IndexError,
                         "only integers, slices, '...', None and integer arrays are valid "
                         "indices, not %R",
                         item);
            next = NULL;
        }
        ct_release(cur);
        cur = next;
    }
    Py_DECREF(items);
    return cur;
}

static PyObject *tensor_getitem(PyObject *self, PyObject *key) {
    bool gathered;
    ct_tensor *out = index_tensor(ctpy_tensor_of(self), key, &gathered);
    return out ? ctpy_wrap(out) : NULL;
}

static int tensor_setitem(PyObject *self, PyObject *key, PyObject *value) {
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "array elements cannot be deleted");
        return -1;
    }
    bool gathered;
    ct_tensor *view = index_tensor(ctpy_tensor_of(self), key, &gathered);
    if (!view) return -1;
    if (gathered) {
        ct_release(view);
        PyErr_SetString(PyExc_IndexError, "assignment through an integer array needs a scatter "
                                          "op, which ctensor's core does not have yet");
        return -1;
    }
    ct_status status;
    if (ctpy_is_scalar(value)) {
        double s = PyFloat_AsDouble(value);
        if (s == -1.0 && PyErr_Occurred()) return ct_release(view), -1;
        CTPY_NOGIL(status = ct_fill(view, s));
    } else {
        ct_tensor *src = ctpy_as_tensor(value, (ct_dtype)-1, ct_device_of(view));
        if (!src) return ct_release(view), -1;
        CTPY_NOGIL(status = ct_copy(view, src));
        ct_release(src);
    }
    ct_release(view);
    return ctpy_check(status);
}

static Py_ssize_t tensor_length(PyObject *self) {
    ct_tensor *t = ctpy_tensor_of(self);
    if (ct_ndim(t) == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d array");
        return -1;
    }
    return (Py_ssize_t)ct_shape(t)[0];
}

PyMappingMethods ctpy_tensor_mapping = {
    .mp_length = tensor_length,
    .mp_subscript = tensor_getitem,
    .mp_ass_subscript = tensor_setitem,
};

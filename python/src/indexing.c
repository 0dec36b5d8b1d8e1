/* Tensor indexing and assignment: ints, slices, `...`, None and tuples of them give views
 * (ct_slice, ct_squeeze, ct_unsqueeze); x[key] = value writes through the view (ct_fill for
 * a scalar, ct_copy otherwise). Integer arrays (Tensors or lists) and boolean masks
 * (through ct_nonzero; a Python bool is a 0-d one) make the key advanced, as in NumPy: the
 * ints among them count as index arrays too, and advanced_index.c gathers (a copy) or writes
 * the elements they pick. An index out of range is an IndexError. */
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

/* A Python bool in a key is a 0-d boolean mask, as in NumPy and PyTorch (not the integer 1
 * or 0 that bool subclasses): a new 0-d CT_BOOL tensor on device, or NULL with an exception. */
static PyObject *bool_mask(PyObject *item, ct_device device) {
    ct_tensor *t = ctpy_as_tensor(item, CT_BOOL, device);
    return t ? ctpy_wrap(t) : NULL;
}

/* The key's items as a new tuple, lists of indices made Tensors on device, Python bools 0-d
 * masks. */
static PyObject *key_items(PyObject *key, ct_device device) {
    Py_ssize_t n = PyTuple_Check(key) ? PyTuple_GET_SIZE(key) : 1;
    PyObject *items = PyTuple_New(n);
    for (Py_ssize_t k = 0; items && k < n; k++) {
        PyObject *item = PyTuple_Check(key) ? PyTuple_GET_ITEM(key, k) : key;
        if (PyBool_Check(item)) {
            PyObject *mask = bool_mask(item, device);
            if (!mask) return Py_DECREF(items), NULL;
            PyTuple_SET_ITEM(items, k, mask);
            continue;
        }
        if (!PyList_Check(item)) {
            PyTuple_SET_ITEM(items, k, Py_NewRef(item));
            continue;
        }
        ct_tensor *t = ctpy_as_tensor(item, (ct_dtype)-1, device);
        /* [] holds no numbers, so the float32 NumPy would give it is an empty index here */
        if (t && ct_numel(t) == 0 && !ct_dtype_is_integer(ct_dtype_of(t))) {
            ct_tensor *cast = ct_cast(t, CT_I64);
            ct_release(t);
            t = cast;
        }
        PyObject *wrapped = t ? ctpy_wrap(t) : NULL;
        if (!wrapped) return Py_DECREF(items), NULL;
        PyTuple_SET_ITEM(items, k, wrapped);
    }
    return items;
}

/* Whether item counts as an index into an axis (everything but None and `...`). */
static bool uses_axis(PyObject *item) { return item != Py_None && item != Py_Ellipsis; }

static bool is_integer_array(PyObject *item) {
    return ctpy_is_tensor(item) && ct_dtype_is_integer(ct_dtype_of(ctpy_tensor_of(item)));
}

static bool is_mask(PyObject *item) {
    return ctpy_is_tensor(item) && ct_dtype_of(ctpy_tensor_of(item)) == CT_BOOL;
}

/* Count the axes the key's items use, and check the key; -1 with an IndexError. */
static int check_key(PyObject *items, const ct_tensor *t, int *used, bool *advanced) {
    int ellipses = 0;
    *used = 0;
    *advanced = false;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items); k++) {
        PyObject *item = PyTuple_GET_ITEM(items, k);
        ellipses += item == Py_Ellipsis;
        *advanced |= is_integer_array(item) || is_mask(item);
        if (is_mask(item) && ct_ndim(ctpy_tensor_of(item)) == 0) {
            PyErr_SetString(PyExc_IndexError, "a 0-d boolean index is supported only as the sole "
                                              "index; use where() or expand_dims() instead");
            return -1;
        }
        if (ctpy_is_tensor(item) && !is_mask(item) && !is_integer_array(item)) {
            PyErr_Format(PyExc_IndexError,
                         "an index array must have an integer or boolean dtype, not %s",
                         ct_dtype_name(ct_dtype_of(ctpy_tensor_of(item))));
            return -1;
        }
        *used += is_mask(item) ? ct_ndim(ctpy_tensor_of(item)) : uses_axis(item);
    }
    if (ellipses <= 1 && *used <= ct_ndim(t)) return 0;
    PyErr_Format(PyExc_IndexError,
                 ellipses > 1 ? "an index can have only one ellipsis ('...')"
                              : "too many indices: %d for an array of %d dimensions",
                 *used, ct_ndim(t));
    return -1;
}

/* Record an index array (as CT_I64) for axis of cur, the view; -1 with an exception. A
 * uint64 array is checked against the axis first: the cast would wrap its values above
 * INT64_MAX into negative indices. */
static int add_array(ctpy_advanced *adv, const ct_tensor *cur, int axis, ct_tensor *index,
                     bool in_range) {
    if (adv->n == CT_MAX_DIMS) {
        ct_release(index);
        PyErr_Format(PyExc_IndexError, "at most %d index arrays", CT_MAX_DIMS);
        return -1;
    }
    if (index && !in_range && ct_dtype_of(index) == CT_U64) {
        if (ctpy_check_index_range(index, axis, ct_shape(cur)[axis]) < 0) {
            ct_release(index);
            return -1;
        }
        in_range = true;
    }
    ct_tensor *wide = index && ct_dtype_of(index) != CT_I64 ? ct_cast(index, CT_I64) : index;
    if (wide != index) ct_release(index);
    if (!wide) return ctpy_raise(), -1;
    adv->axis[adv->n] = axis;
    adv->in_range[adv->n] = in_range;
    adv->index[adv->n++] = wide;
    return 0;
}

/* An int among index arrays: a 0-d index array, checked here. */
static int add_int(ctpy_advanced *adv, const ct_tensor *cur, int axis, PyObject *item) {
    Py_ssize_t i = PyNumber_AsSsize_t(item, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) return -1;
    int64_t size = ct_shape(cur)[axis];
    if (i < -size || i >= size) {
        PyErr_Format(PyExc_IndexError, "index %zd is out of range for axis %d of size %lld", i,
                     axis, (long long)size);
        return -1;
    }
    return add_array(adv, cur, axis, ct_scalar((double)i, CT_I64, ct_device_of(cur)), true);
}

/* A boolean mask over axes axis.. of cur: the index arrays of its true elements. Each of
 * its sizes is the axis's or 0 (the standard's rule: a mask with no elements selects none). */
static int add_mask(ctpy_advanced *adv, const ct_tensor *cur, int axis, const ct_tensor *mask) {
    for (int d = 0; d < ct_ndim(mask); d++)
        if (ct_shape(mask)[d] != ct_shape(cur)[axis + d] && ct_shape(mask)[d] != 0) {
            PyErr_Format(PyExc_IndexError,
                         "boolean index did not match the indexed array along axis %d: size "
                         "of the axis is %lld but size of the boolean axis is %lld",
                         axis + d, (long long)ct_shape(cur)[axis + d],
                         (long long)ct_shape(mask)[d]);
            return -1;
        }
    ct_tensor *found[CT_MAX_DIMS] = {NULL};
    ct_status status;
    CTPY_NOGIL(status = ct_nonzero(mask, found));
    if (status != CT_OK) return ctpy_raise(), -1;
    int result = 0;
    for (int d = 0; d < ct_ndim(mask); d++)
        if (result == 0)
            result = add_array(adv, cur, axis + d, found[d], true);
        else
            ct_release(found[d]);
    return result;
}

/* x[key]'s basic items applied: a view of t (a new reference), with the advanced items
 * recorded in adv against its axes (adv->n is 0 for a basic key). */
static ct_tensor *index_tensor(ct_tensor *t, PyObject *key, ctpy_advanced *adv) {
    adv->n = 0;
    PyObject *items = key_items(key, ct_device_of(t));
    if (!items) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int used;
    bool advanced;
    if (check_key(items, t, &used, &advanced) < 0) {
        Py_DECREF(items);
        return NULL;
    }
    ct_tensor *cur = ct_retain(t);
    int axis = 0;
    /* the new axes go in last, at their places in the result, so that x[None, ..., 0]
     * never holds more axes than the result does */
    int new_axes[CT_MAX_DIMS], n_new = 0;
    for (Py_ssize_t k = 0; cur && k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(items, k);
        ct_tensor *next = cur;
        if (item == Py_Ellipsis) {
            axis += ct_ndim(t) - used;
            continue;
        } else if (item == Py_None) {
            if (n_new == CT_MAX_DIMS) {
                PyErr_Format(PyExc_IndexError, "at most %d new axes (None)", CT_MAX_DIMS);
                next = NULL;
            } else {
                new_axes[n_new] = axis + n_new;
                n_new++;
            }
        } else if (PySlice_Check(item)) {
            next = apply_slice(cur, axis++, item);
        } else if (is_mask(item)) {
            const ct_tensor *mask = ctpy_tensor_of(item);
            if (add_mask(adv, cur, axis, mask) < 0) next = NULL;
            axis += ct_ndim(mask);
        } else if (is_integer_array(item)) {
            if (add_array(adv, cur, axis++, ct_retain(ctpy_tensor_of(item)), false) < 0)
                next = NULL;
        } else if (PyIndex_Check(item) && advanced) {
            if (add_int(adv, cur, axis++, item) < 0) next = NULL;
        } else if (PyIndex_Check(item)) {
            next = apply_int(cur, axis, item);
        } else {
            PyErr_Format(PyExc_IndexError,
                         "only integers, slices, '...', None, integer arrays and boolean "
                         "masks are valid indices, not %R",
                         item);
            next = NULL;
        }
        if (next != cur) ct_release(cur);
        cur = next;
    }
    for (int j = 0; cur && j < n_new; j++) {
        ct_tensor *next = ct_unsqueeze(cur, new_axes[j]);
        if (!next) ctpy_raise();
        for (int a = 0; a < adv->n; a++) adv->axis[a] += adv->axis[a] >= new_axes[j];
        ct_release(cur);
        cur = next;
    }
    Py_DECREF(items);
    if (!cur) ctpy_advanced_clear(adv);
    return cur;
}

/* The standard's sole 0-d boolean key (x[key] is x[None][key[None]]): x with a new leading
 * axis of size 1 where the key is True, of size 0 where it is False. Sets *lifted to a new
 * reference to x's view with that axis and *mask1 to the key as a 1-element mask; returns 1
 * when key is such a key, 0 when it is not, -1 with an exception set. */
static int lift_0d_mask(PyObject *self, PyObject *key, PyObject **lifted, PyObject **mask1) {
    if (PyTuple_Check(key) && PyTuple_GET_SIZE(key) == 1) key = PyTuple_GET_ITEM(key, 0);
    PyObject *python_mask =
        PyBool_Check(key) ? bool_mask(key, ct_device_of(ctpy_tensor_of(self))) : NULL;
    if (PyBool_Check(key) && !python_mask) return -1;
    if (python_mask) key = python_mask;
    if (!is_mask(key) || ct_ndim(ctpy_tensor_of(key)) != 0) return 0;
    const int64_t one = 1;
    *lifted = ctpy_wrap(ct_unsqueeze(ctpy_tensor_of(self), 0));
    *mask1 = *lifted ? ctpy_wrap(ct_reshape(ctpy_tensor_of(key), 1, &one)) : NULL;
    Py_XDECREF(python_mask);
    if (*mask1) return 1;
    Py_XDECREF(*lifted);
    return -1;
}

static PyObject *tensor_getitem(PyObject *self, PyObject *key) {
    PyObject *lifted, *mask1;
    int sole_0d_mask = lift_0d_mask(self, key, &lifted, &mask1);
    if (sole_0d_mask) {
        PyObject *out = sole_0d_mask > 0 ? PyObject_GetItem(lifted, mask1) : NULL;
        if (sole_0d_mask > 0) Py_DECREF(lifted), Py_DECREF(mask1);
        return out;
    }
    ctpy_advanced adv;
    ct_tensor *view = index_tensor(ctpy_tensor_of(self), key, &adv);
    if (!view || adv.n == 0) return view ? ctpy_wrap(view) : NULL;
    ct_tensor *out = ctpy_advanced_get(view, &adv);
    ctpy_advanced_clear(&adv);
    ct_release(view);
    return out ? ctpy_wrap(out) : NULL;
}

static int tensor_setitem(PyObject *self, PyObject *key, PyObject *value) {
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "array elements cannot be deleted");
        return -1;
    }
    PyObject *lifted, *mask1;
    int sole_0d_mask = lift_0d_mask(self, key, &lifted, &mask1);
    if (sole_0d_mask) { /* writes through the view of self that lift_0d_mask made */
        int result = sole_0d_mask > 0 ? PyObject_SetItem(lifted, mask1, value) : -1;
        if (sole_0d_mask > 0) Py_DECREF(lifted), Py_DECREF(mask1);
        return result;
    }
    ctpy_advanced adv;
    ct_tensor *view = index_tensor(ctpy_tensor_of(self), key, &adv);
    if (!view) return -1;
    ct_status status;
    if (adv.n > 0) {
        ct_tensor *src = ctpy_as_tensor(value, ct_dtype_of(view), ct_device_of(view));
        int result = src ? ctpy_advanced_set(view, &adv, src) : -1;
        ct_release(src);
        ctpy_advanced_clear(&adv);
        ct_release(view);
        return result;
    }
    if (ctpy_is_scalar(value) && !ctpy_needs_exact_int(value, ct_dtype_of(view))) {
        if (ctpy_check_scalar(value, ct_dtype_of(view)) < 0) return ct_release(view), -1;
        double s = PyFloat_AsDouble(value);
        if (s == -1.0 && PyErr_Occurred()) return ct_release(view), -1;
        CTPY_NOGIL(status = ct_fill(view, s));
    } else {
        /* Python numbers, complex ones included (and lists of them), convert into the array's
         * dtype, so that one the dtype cannot hold is refused (ctpy_check_scalar's rules) and
         * none passes through a narrower default dtype */
        bool python = ctpy_is_scalar(value) || PyComplex_Check(value) || PyList_Check(value) ||
                      PyTuple_Check(value);
        ct_dtype dtype = python ? ct_dtype_of(view) : (ct_dtype)-1;
        ct_tensor *src = ctpy_as_tensor(value, dtype, ct_device_of(view));
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

/* iter(x): the subarrays x[0], x[1], ... along the first axis, as NumPy's arrays iterate (views,
 * all made when the iteration starts); a 0-d array is not iterable. */
PyObject *ctpy_tensor_iter(PyObject *self) {
    ct_tensor *t = ctpy_tensor_of(self);
    if (ct_ndim(t) == 0) return PyErr_Format(PyExc_TypeError, "iteration over a 0-d array");
    Py_ssize_t n = (Py_ssize_t)ct_shape(t)[0];
    PyObject *items = PyTuple_New(n);
    if (!items) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *index = PyLong_FromSsize_t(i);
        PyObject *item = index ? tensor_getitem(self, index) : NULL;
        Py_XDECREF(index);
        if (!item) return Py_DECREF(items), NULL;
        PyTuple_SET_ITEM(items, i, item);
    }
    PyObject *iterator = PyObject_GetIter(items);
    Py_DECREF(items);
    return iterator;
}

PyMappingMethods ctpy_tensor_mapping = {
    .mp_length = tensor_length,
    .mp_subscript = tensor_getitem,
    .mp_ass_subscript = tensor_setitem,
};

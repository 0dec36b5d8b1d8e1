/* Python values as tensors: Tensors, Python scalars (bool, int, float), nested sequences of
 * them, objects with the buffer protocol (NumPy arrays, memoryviews) and DLPack producers.
 * A CPU buffer of the wanted dtype is shared, not copied (ct_from_external holds the
 * Py_buffer), as NumPy's asarray shares; everything else is one ct_from_data copy. Default
 * dtypes: bool, int64 for integers, float32 for floats. */
#include "ctpy_impl.h"

bool ctpy_is_scalar(PyObject *o) { return PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o); }

/* ---- results: moved and converted as asked ---- */

static ct_tensor *finish(ct_tensor *t, ct_dtype dtype, ct_device device) {
    ct_tensor *next;
    if (t && device.type != CT_DEVICE_DEFAULT && !ct_device_equal(device, ct_device_of(t))) {
        CTPY_NOGIL(next = ct_to(t, device));
        ct_release(t);
        t = next;
    }
    if (t && (int)dtype >= 0 && dtype != ct_dtype_of(t)) {
        CTPY_NOGIL(next = ct_cast(t, dtype));
        ct_release(t);
        t = next;
    }
    if (!t && !PyErr_Occurred()) ctpy_raise();
    return t;
}

/* ---- nested sequences ---- */

typedef struct nest {
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    int kind;         /* 0 bool, 1 int, 2 float */
    bool above_int64; /* an int leaf above INT64_MAX: the ints are uint64 bits */
    int64_t count;
    void *data; /* int64_t or double elements */
} nest;

static int leaf_kind(PyObject *o) {
    if (PyBool_Check(o)) return 0;
    if (PyLong_Check(o) || PyIndex_Check(o)) return 1;
    if (PyFloat_Check(o) || PyNumber_Check(o)) return 2;
    return -1;
}

/* The shape of the nested sequence o (its first elements), and the kind of its leaves. */
static int walk_shape(PyObject *o, nest *n) {
    while (PyList_Check(o) || PyTuple_Check(o)) {
        if (n->ndim == CT_MAX_DIMS) {
            PyErr_Format(PyExc_ValueError, "a nested sequence deeper than %d", CT_MAX_DIMS);
            return -1;
        }
        Py_ssize_t size = PySequence_Fast_GET_SIZE(o);
        n->shape[n->ndim++] = size;
        if (size == 0) return 0;
        o = PySequence_Fast_GET_ITEM(o, 0);
    }
    return 0;
}

static int fill(PyObject *o, nest *n, int depth, int64_t *at) {
    if (depth < n->ndim) {
        if (!(PyList_Check(o) || PyTuple_Check(o)) ||
            PySequence_Fast_GET_SIZE(o) != n->shape[depth]) {
            PyErr_SetString(PyExc_ValueError,
                            "the nested sequence is not rectangular (rows of different lengths)");
            return -1;
        }
        for (Py_ssize_t i = 0; i < n->shape[depth]; i++)
            if (fill(PySequence_Fast_GET_ITEM(o, i), n, depth + 1, at) < 0) return -1;
        return 0;
    }
    int kind = leaf_kind(o);
    if (kind < 0) {
        PyErr_Format(PyExc_TypeError, "asarray: %R is not a number", o);
        return -1;
    }
    if (kind > n->kind) n->kind = kind;
    double value = PyFloat_AsDouble(o);
    if (value == -1.0 && PyErr_Occurred()) return -1;
    ((double *)n->data)[*at] = value;
    if (kind <= 1) {
        int overflow = 0;
        long long exact = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow > 0) { /* as NumPy: ints up to UINT64_MAX make a uint64 array */
            unsigned long long big = PyLong_AsUnsignedLongLong(o);
            if (big == (unsigned long long)-1 && PyErr_Occurred()) return -1;
            exact = (long long)big;
            n->above_int64 = true;
        } else if (overflow < 0) {
            PyErr_Format(PyExc_OverflowError, "asarray: %R is below the int64 range", o);
            return -1;
        }
        if (exact == -1 && PyErr_Occurred()) return -1;
        ((int64_t *)n->data + n->count)[*at] = exact;
    }
    (*at)++;
    return 0;
}

static ct_tensor *from_sequence(PyObject *o, ct_dtype dtype, ct_device device) {
    nest n = {0};
    if (walk_shape(o, &n) < 0) return NULL;
    int64_t count = 1;
    for (int d = 0; d < n.ndim; d++) count *= n.shape[d];
    n.count = count;
    /* Doubles first, then the exact int64 values. */
    n.data = PyMem_Malloc((size_t)(count ? count : 1) * 16);
    if (!n.data) return (ct_tensor *)PyErr_NoMemory();
    int64_t at = 0;
    ct_tensor *t = NULL;
    if (fill(o, &n, 0, &at) == 0) {
        ct_dtype natural = n.kind == 2   ? CTPY_DEFAULT_FLOAT
                           : n.kind == 1 ? CTPY_DEFAULT_INT
                                         : CT_BOOL;
        if (count == 0) natural = CTPY_DEFAULT_FLOAT;
        if (n.kind == 1 && n.above_int64) natural = CT_U64;
        if ((int)dtype < 0) dtype = natural;
        if (n.kind == 1) {
            ct_dtype exact = n.above_int64 ? CT_U64 : CT_I64;
            CTPY_NOGIL(t = ct_from_data((int64_t *)n.data + count, n.ndim, n.shape, exact, device));
        } else {
            CTPY_NOGIL(t = ct_from_data(n.data, n.ndim, n.shape, CT_F64, device));
        }
        t = finish(t, dtype, CT_DEFAULT);
    }
    PyMem_Free(n.data);
    return t;
}

/* ---- Python scalars ---- */

static ct_tensor *from_scalar(PyObject *o, ct_dtype dtype, ct_device device) {
    if ((int)dtype < 0)
        dtype = PyBool_Check(o) ? CT_BOOL : PyLong_Check(o) ? CTPY_DEFAULT_INT : CTPY_DEFAULT_FLOAT;
    ct_tensor *t;
    if (PyLong_Check(o) && !PyBool_Check(o) && dtype == CT_I64) {
        long long exact = PyLong_AsLongLong(o);
        if (exact == -1 && PyErr_Occurred()) return NULL;
        int64_t value = exact;
        CTPY_NOGIL(t = ct_from_data(&value, 0, NULL, CT_I64, device));
    } else if (PyLong_Check(o) && !PyBool_Check(o) && dtype == CT_U64) {
        unsigned long long exact = PyLong_AsUnsignedLongLong(o);
        if (exact == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
        uint64_t value = exact;
        CTPY_NOGIL(t = ct_from_data(&value, 0, NULL, CT_U64, device));
    } else {
        double value = PyFloat_AsDouble(o);
        if (value == -1.0 && PyErr_Occurred()) return NULL;
        CTPY_NOGIL(t = ct_full(0, NULL, value, dtype, device));
    }
    if (!t) ctpy_raise();
    return t;
}

/* ---- the buffer protocol ---- */

/* The dtype whose buffer column (the table's) is a buffer's format of itemsize bytes: the
 * native byte order or '<' ('@', '=', '<'); C's long and int take the size they have. */
static int dtype_of_format(const char *format, Py_ssize_t itemsize, ct_dtype *out) {
    if (!format) format = "B";
    if (*format == '@' || *format == '=' || *format == '<') format++;
    char c = format[0];
    if (c == 'l' || c == 'i') c = itemsize == 8 ? 'q' : 'i';
    if (c == 'L' || c == 'I') c = itemsize == 8 ? 'Q' : 'I';
    for (int d = 0; format[0] && !format[1] && d < CT_DTYPE_COUNT; d++) {
        const char *mine = ctpy_buffer_format((ct_dtype)d);
        if (mine && mine[0] == c && (Py_ssize_t)ct_dtype_size((ct_dtype)d) == itemsize)
            return *out = (ct_dtype)d, 0;
    }
    ctpy_raise_status(CT_ERR_DTYPE,
                      "a buffer of format '%s' has no ctensor dtype (float32, float64, "
                      "float16, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
                      "bool; little-endian)",
                      format);
    return -1;
}

/* Gives the Py_buffer back when the shared tensor dies (on any thread). */
static void release_buffer(void *context) {
    PyGILState_STATE state = PyGILState_Ensure();
    PyBuffer_Release(context);
    PyMem_RawFree(context);
    PyGILState_Release(state);
}

static ct_tensor *from_buffer(PyObject *o, ct_dtype dtype, ct_device device) {
    Py_buffer *view = PyMem_RawMalloc(sizeof *view);
    if (!view) return (ct_tensor *)PyErr_NoMemory();
    if (PyObject_GetBuffer(o, view, PyBUF_RECORDS_RO) < 0) return PyMem_RawFree(view), NULL;
    ct_dtype own;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    bool ok = view->ndim <= CT_MAX_DIMS;
    if (!ok)
        PyErr_Format(PyExc_ValueError, "a buffer of %d dimensions (ctensor has at most %d)",
                     view->ndim, CT_MAX_DIMS);
    ok = ok && dtype_of_format(view->format, view->itemsize, &own) == 0;
    for (int d = 0; ok && d < view->ndim; d++) {
        shape[d] = view->shape[d];
        strides[d] = view->strides[d] / view->itemsize;
        ok = view->strides[d] % view->itemsize == 0;
        if (!ok) PyErr_SetString(PyExc_ValueError, "a buffer with unaligned strides");
    }
    ct_tensor *t = ok ? ct_from_external(view->buf, view->ndim, shape, strides, own, CT_CPU,
                                         release_buffer, view)
                      : NULL;
    if (!t) {
        PyBuffer_Release(view);
        PyMem_RawFree(view);
        if (!PyErr_Occurred()) ctpy_raise();
        return NULL;
    }
    bool shared =
        !view->readonly && ((int)dtype < 0 || dtype == own) &&
        (device.type == CT_DEVICE_DEFAULT ? ct_default_device().type == CT_DEVICE_CPU
                                          : device.type == CT_DEVICE_CPU && device.index == 0);
    if (shared) return t;
    if (device.type == CT_DEVICE_DEFAULT) device = ct_default_device();
    ct_tensor *copy;
    CTPY_NOGIL(copy = ct_device_equal(device, CT_CPU) ? ct_clone(t) : ct_to(t, device));
    ct_release(t);
    return finish(copy, dtype, CT_DEFAULT);
}

bool ctpy_needs_exact_int(PyObject *o, ct_dtype dtype) {
    if ((dtype != CT_I64 && dtype != CT_U64) || !PyLong_Check(o) || PyBool_Check(o)) return false;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    return overflow || v > (INT64_C(1) << 53) || v < -(INT64_C(1) << 53);
}

/* ctpy_as_tensor, its TypeError for what is no array-like naming fn (NULL: none). */
static ct_tensor *convert(PyObject *obj, ct_dtype dtype, ct_device device, const char *fn) {
    if (ctpy_is_tensor(obj)) return finish(ct_retain(ctpy_tensor_of(obj)), dtype, device);
    if (ctpy_is_scalar(obj)) return from_scalar(obj, dtype, device);
    if (PyObject_CheckBuffer(obj)) return from_buffer(obj, dtype, device);
    if (PyObject_HasAttrString(obj, "__dlpack__")) {
        PyObject *args = PyTuple_Pack(1, obj);
        PyObject *imported = args ? ctpy_from_dlpack(NULL, args, NULL) : NULL;
        Py_XDECREF(args);
        if (!imported) return NULL;
        ct_tensor *t = ct_retain(ctpy_tensor_of(imported));
        Py_DECREF(imported);
        return finish(t, dtype, device);
    }
    if (PyList_Check(obj) || PyTuple_Check(obj)) return from_sequence(obj, dtype, device);
    PyErr_Format(PyExc_TypeError,
                 "%s%scannot make an array from %R: give a Tensor, a Python number, a nested "
                 "list, a buffer (NumPy array) or a DLPack producer",
                 fn ? fn : "", fn ? ": " : "", obj);
    return NULL;
}

ct_tensor *ctpy_as_tensor(PyObject *obj, ct_dtype dtype, ct_device device) {
    return convert(obj, dtype, device, NULL);
}

ct_tensor *ctpy_tensor_arg(PyObject *o, const char *fn, const ct_tensor *near) {
    if (ctpy_is_tensor(o)) return ct_retain(ctpy_tensor_of(o));
    return convert(o, (ct_dtype)-1, near ? ct_device_of(near) : CT_DEFAULT, fn);
}

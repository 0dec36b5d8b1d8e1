/* Python values as tensors: Tensors, Python scalars (bool, int, float), nested sequences of
 * them, objects with the buffer protocol (NumPy arrays, memoryviews) and DLPack producers.
 * A CPU buffer of the wanted dtype is shared, not copied (ct_from_external holds the
 * Py_buffer), as NumPy's asarray shares; everything else is one ct_from_data copy. Default
 * dtypes: bool, int64 for integers, float32 for floats. */
#include <math.h>

#include "ctpy_impl.h"

bool ctpy_is_scalar(PyObject *o) { return PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o); }

/* ---- results: moved and converted as asked ---- */

/* Whether t (floating) has an element that dtype (an integer dtype) cannot hold: NaN, an
 * infinity, or a value whose truncation lies outside the range. In *invalid (a read-back). */
static ct_status has_invalid(const ct_tensor *t, ct_dtype dtype, bool *invalid) {
    int bits = 8 * (int)ct_dtype_size(dtype);
    bool is_unsigned = ct_dtype_is_unsigned(dtype);
    double high = ldexp(1.0, is_unsigned ? bits : bits - 1), low = is_unsigned ? 0.0 : -high;
    /* below: truncates under low; low - 1 is exact in a double but for int64's */
    bool exact_below = is_unsigned || bits < 64;
    ct_tensor *nan = ct_isnan(t), *above = ct_ge_scalar(t, high);
    ct_tensor *below = exact_below ? ct_le_scalar(t, low - 1.0) : ct_lt_scalar(t, low);
    ct_tensor *out = nan && above ? ct_logical_or(nan, above) : NULL;
    ct_tensor *bad = out && below ? ct_logical_or(out, below) : NULL;
    ct_tensor *any = bad ? ct_any(bad, 0, NULL, false) : NULL;
    double found = 0;
    ct_status status = any ? ct_item(any, &found) : ct_last_status();
    *invalid = found != 0;
    ct_release(any);
    ct_release(bad);
    ct_release(out);
    ct_release(below);
    ct_release(above);
    ct_release(nan);
    return status;
}

ct_tensor *ctpy_cast(const ct_tensor *t, ct_dtype dtype) {
    bool check = ct_dtype_is_floating(ct_dtype_of(t)) && ct_dtype_is_integer(dtype);
    bool invalid = false;
    ct_status status = CT_OK;
    ct_tensor *out;
    CTPY_NOGIL(out = ct_cast(t, dtype); if (out && check) status = has_invalid(t, dtype, &invalid));
    if (!out || ctpy_check(status) < 0) {
        if (!out) ctpy_raise();
        ct_release(out);
        return NULL;
    }
    if (invalid && PyErr_WarnEx(PyExc_RuntimeWarning, "invalid value encountered in cast", 1) < 0) {
        ct_release(out);
        return NULL;
    }
    return out;
}

static ct_tensor *finish(ct_tensor *t, ct_dtype dtype, ct_device device) {
    ct_tensor *next;
    if (t && device.type != CT_DEVICE_DEFAULT && !ct_device_equal(device, ct_device_of(t))) {
        CTPY_NOGIL(next = ct_to(t, device));
        ct_release(t);
        t = next;
    }
    if (t && (int)dtype >= 0 && dtype != ct_dtype_of(t)) {
        next = ctpy_cast(t, dtype);
        ct_release(t);
        t = next;
    }
    if (!t && !PyErr_Occurred()) ctpy_raise();
    return t;
}

/* ---- Python numbers into a dtype: NumPy 2's rules ---- */

/* Whether an int (its value v, or its uint64 bits when above INT64_MAX) lies in dtype's
 * range (any int does for a float or bool dtype). */
static bool int_fits(int64_t v, bool above, ct_dtype dtype) {
    if (!ct_dtype_is_integer(dtype)) return true;
    int bits = 8 * (int)ct_dtype_size(dtype);
    if (ct_dtype_is_unsigned(dtype))
        return above ? bits == 64 : v >= 0 && (bits == 64 || (uint64_t)v < (UINT64_C(1) << bits));
    return !above &&
           (bits == 64 || (v >= -(INT64_C(1) << (bits - 1)) && v < (INT64_C(1) << (bits - 1))));
}

/* 0 when a Python float converts to dtype (truncated toward zero for an integer dtype), else
 * -1 with NumPy's exception: ValueError for NaN, OverflowError for an infinity or a value
 * outside the integer dtype's range. */
static int check_float(double v, ct_dtype dtype) {
    if (!ct_dtype_is_integer(dtype)) return 0;
    if (isnan(v)) {
        PyErr_Format(PyExc_ValueError, "cannot convert float NaN to integer (%s)",
                     ct_dtype_name(dtype));
        return -1;
    }
    int bits = 8 * (int)ct_dtype_size(dtype);
    bool is_unsigned = ct_dtype_is_unsigned(dtype);
    double t = trunc(v), high = ldexp(1.0, is_unsigned ? bits : bits - 1);
    double low = is_unsigned ? 0.0 : -high;
    if (!isinf(v) && t >= low && t < high) return 0;
    PyObject *text = PyFloat_FromDouble(v);
    if (text)
        PyErr_Format(PyExc_OverflowError,
                     isinf(v) ? "cannot convert float %R to integer (%s)"
                              : "Python float %R out of bounds for %s",
                     text, ct_dtype_name(dtype));
    Py_XDECREF(text);
    return -1;
}

static int int_out_of_bounds(PyObject *o, ct_dtype dtype) {
    PyErr_Format(PyExc_OverflowError, "Python integer %S out of bounds for %s", o,
                 ct_dtype_name(dtype));
    return -1;
}

/* An exact int: its value in *v, or its uint64 bits with *above set when it lies above
 * INT64_MAX; OverflowError beyond uint64 or below int64. */
static int exact_int(PyObject *i, ct_dtype dtype, int64_t *v, bool *above) {
    int overflow = 0;
    long long exact = PyLong_AsLongLongAndOverflow(i, &overflow);
    *above = false;
    if (overflow > 0) { /* as NumPy: ints up to UINT64_MAX make a uint64 array */
        unsigned long long big = PyLong_AsUnsignedLongLong(i);
        if (big == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return int_out_of_bounds(i, (int)dtype >= 0 ? dtype : CT_U64);
        }
        exact = (long long)big;
        *above = true;
    } else if (overflow < 0) {
        return int_out_of_bounds(i, (int)dtype >= 0 ? dtype : CT_I64);
    } else if (exact == -1 && PyErr_Occurred()) {
        return -1;
    }
    *v = exact;
    return 0;
}

int ctpy_check_scalar(PyObject *o, ct_dtype dtype) {
    if (PyBool_Check(o) || !ct_dtype_is_integer(dtype)) return 0;
    if (PyLong_Check(o)) {
        int64_t v;
        bool above;
        if (exact_int(o, dtype, &v, &above) < 0) return -1;
        return int_fits(v, above, dtype) ? 0 : int_out_of_bounds(o, dtype);
    }
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    return check_float(v, dtype);
}

/* ---- nested sequences ---- */

/* A nested sequence read from a snapshot: its leaves, each held by a reference taken while
 * no Python code could run, so that a leaf's __float__ or __index__ that changes a list
 * cannot move the reading under it. */
typedef struct nest {
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    int64_t count;
    PyObject **leaves; /* count references, C order */
    int kind;          /* 0 bool, 1 int, 2 float, 3 complex */
    bool above_int64;  /* an int leaf above INT64_MAX: the ints are uint64 bits */
    bool below_zero;   /* a negative int leaf */
    double *values;    /* every leaf as a double (a complex leaf's real part) */
    double *imag;      /* every leaf's imaginary part (0 for real leaves) */
    int64_t *exact;    /* every int leaf exactly (uint64 bits when above_int64) */
} nest;

static int leaf_kind(PyObject *o) {
    if (PyBool_Check(o)) return 0;
    if (PyComplex_Check(o)) return 3;
    if (PyLong_Check(o) || (PyIndex_Check(o) && !PyFloat_Check(o))) return 1;
    if (PyFloat_Check(o) || PyNumber_Check(o)) return 2;
    return -1;
}

/* The shape of the nested sequence o (its first elements). */
static int walk_shape(PyObject *o, nest *n) {
    while (PyList_Check(o) || PyTuple_Check(o)) {
        if (n->ndim == CT_MAX_DIMS) {
            ctpy_raise_status(CT_ERR_SHAPE,
                              "asarray: a nested sequence deeper than %d (ctensor has at most %d "
                              "axes)",
                              CT_MAX_DIMS, CT_MAX_DIMS);
            return -1;
        }
        Py_ssize_t size = PySequence_Fast_GET_SIZE(o);
        n->shape[n->ndim++] = size;
        if (size == 0) return 0;
        o = PySequence_Fast_GET_ITEM(o, 0);
    }
    return 0;
}

/* Take a reference to every leaf of o (rectangular, of n's shape) into n->leaves from *at.
 * Runs no Python code: only list and tuple reads. */
static int snapshot(PyObject *o, nest *n, int depth, int64_t *at) {
    if (depth == n->ndim) {
        n->leaves[(*at)++] = Py_NewRef(o);
        return 0;
    }
    if (!(PyList_Check(o) || PyTuple_Check(o)) || PySequence_Fast_GET_SIZE(o) != n->shape[depth]) {
        PyErr_SetString(PyExc_ValueError,
                        "asarray: the nested sequence is not rectangular (rows of different "
                        "lengths)");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n->shape[depth]; i++)
        if (snapshot(PySequence_Fast_GET_ITEM(o, i), n, depth + 1, at) < 0) return -1;
    return 0;
}

/* Whether the ints of a nested sequence are read exactly for dtype (-1: inferred). */
static bool wants_int(ct_dtype dtype) { return (int)dtype < 0 || ct_dtype_is_integer(dtype); }

/* Leaf i's number into n->values (and n->exact for an int), checked against dtype when one
 * was asked for (-1: none). */
static int read_leaf(nest *n, int64_t i, ct_dtype dtype) {
    PyObject *o = n->leaves[i];
    if (ctpy_is_tensor(o) && ct_ndim(ctpy_tensor_of(o)) == 0) {
        /* a 0-d array leaf reads as its Python scalar (bool, int, float or complex, after
         * its dtype), not through __index__ or __float__ */
        PyObject *scalar = PyObject_CallMethod(o, "item", NULL);
        if (!scalar) return -1;
        Py_SETREF(n->leaves[i], scalar);
        o = scalar;
    }
    int kind = leaf_kind(o);
    if (kind < 0) {
        PyErr_Format(PyExc_TypeError, "asarray: %.200R is not a number", o);
        return -1;
    }
    if (kind > n->kind) n->kind = kind;
    n->imag[i] = 0;
    if (kind == 3) {
        Py_complex z = PyComplex_AsCComplex(o);
        if (z.real == -1.0 && PyErr_Occurred()) return -1;
        n->values[i] = z.real;
        n->imag[i] = z.imag;
        if ((int)dtype >= 0 && !ct_dtype_is_complex(dtype))
            return ctpy_raise_status(CT_ERR_DTYPE,
                                     "asarray: %.200R is complex; a %s array cannot hold it", o,
                                     ct_dtype_name(dtype)),
                   -1;
        return 0;
    }
    if (kind == 2 || !wants_int(dtype)) {
        double v = PyFloat_AsDouble(o);
        if (v == -1.0 && PyErr_Occurred()) return -1;
        n->values[i] = v;
        return (int)dtype >= 0 ? check_float(v, dtype) : 0;
    }
    PyObject *index = PyNumber_Index(o); /* once: a second call could answer otherwise */
    if (!index) return -1;
    int64_t v = 0;
    bool above = false;
    int result = exact_int(index, dtype, &v, &above);
    if (result == 0 && (int)dtype >= 0 && !int_fits(v, above, dtype))
        result = int_out_of_bounds(index, dtype);
    Py_DECREF(index);
    n->values[i] = above ? (double)(uint64_t)v : (double)v;
    n->exact[i] = v;
    n->above_int64 |= above;
    n->below_zero |= v < 0 && !above;
    return result;
}

static ct_tensor *from_nest(nest *n, ct_dtype dtype, ct_device device) {
    for (int64_t i = 0; i < n->count; i++)
        if (read_leaf(n, i, dtype) < 0) return NULL;
    ct_dtype natural = n->kind == 3   ? CTPY_DEFAULT_COMPLEX
                       : n->kind == 2 ? CTPY_DEFAULT_FLOAT
                       : n->kind == 1 ? CTPY_DEFAULT_INT
                                      : CT_BOOL;
    if (n->count == 0) natural = CTPY_DEFAULT_FLOAT;
    if (n->kind == 1 && n->above_int64) natural = CT_U64;
    bool exact = n->kind == 1 && wants_int(dtype);
    if (exact && n->above_int64 && n->below_zero) {
        PyErr_SetString(PyExc_OverflowError,
                        "asarray: the ints span below 0 and above int64's range: no integer "
                        "dtype holds them all (give dtype=float64)");
        return NULL;
    }
    if ((int)dtype < 0) dtype = natural;
    ct_tensor *t;
    if (exact) {
        ct_dtype held = n->above_int64 ? CT_U64 : CT_I64;
        CTPY_NOGIL(t = ct_from_data(n->exact, n->ndim, n->shape, held, device));
    } else if (n->kind == 3 || ct_dtype_is_complex(dtype)) {
        ct_complex128 *z = PyMem_Malloc((size_t)(n->count ? n->count : 1) * sizeof *z);
        if (!z) return (ct_tensor *)PyErr_NoMemory();
        for (int64_t i = 0; i < n->count; i++) z[i] = (ct_complex128){n->values[i], n->imag[i]};
        CTPY_NOGIL(t = ct_from_data(z, n->ndim, n->shape, CT_C128, device));
        PyMem_Free(z);
    } else {
        CTPY_NOGIL(t = ct_from_data(n->values, n->ndim, n->shape, CT_F64, device));
    }
    return finish(t, dtype, CT_DEFAULT);
}

static ct_tensor *from_sequence(PyObject *o, ct_dtype dtype, ct_device device) {
    nest n = {0};
    if (walk_shape(o, &n) < 0) return NULL;
    int64_t count = 1;
    for (int d = 0; d < n.ndim; d++) {
        if (n.shape[d] && count > (int64_t)(PY_SSIZE_T_MAX / 32) / n.shape[d]) {
            PyErr_Format(PyExc_MemoryError,
                         "asarray: a nested sequence of more elements than memory holds (its "
                         "rows repeat one list)");
            return NULL;
        }
        count *= n.shape[d];
    }
    n.count = count;
    size_t slots = (size_t)(count ? count : 1);
    n.leaves = PyMem_Calloc(slots, sizeof(PyObject *));
    n.values = PyMem_Malloc(slots * sizeof(double));
    n.exact = PyMem_Malloc(slots * sizeof(int64_t));
    n.imag = PyMem_Malloc(slots * sizeof(double));
    int64_t taken = 0;
    ct_tensor *t = NULL;
    if (!n.leaves || !n.values || !n.exact || !n.imag)
        PyErr_NoMemory();
    else if (snapshot(o, &n, 0, &taken) == 0)
        t = from_nest(&n, dtype, device);
    for (int64_t i = 0; i < taken; i++) Py_DECREF(n.leaves[i]);
    PyMem_Free(n.leaves);
    PyMem_Free(n.values);
    PyMem_Free(n.exact);
    PyMem_Free(n.imag);
    return t;
}

/* ---- Python scalars ---- */

/* A Python complex as a 0-d complex tensor (complex64 by default; a real dtype refuses it). */
static ct_tensor *from_complex(PyObject *o, ct_dtype dtype, ct_device device) {
    if ((int)dtype < 0) dtype = CTPY_DEFAULT_COMPLEX;
    Py_complex z = PyComplex_AsCComplex(o);
    if (z.real == -1.0 && PyErr_Occurred()) return NULL;
    if (!ct_dtype_is_complex(dtype))
        return ctpy_raise_status(CT_ERR_DTYPE,
                                 "asarray: %.200R is complex; a %s array cannot hold it", o,
                                 ct_dtype_name(dtype)),
               NULL;
    ct_tensor *t;
    CTPY_NOGIL(t = ct_full_complex(0, NULL, (ct_complex128){z.real, z.imag}, dtype, device));
    if (!t) ctpy_raise();
    return t;
}

static ct_tensor *from_scalar(PyObject *o, ct_dtype dtype, ct_device device) {
    if ((int)dtype < 0)
        dtype = PyBool_Check(o) ? CT_BOOL : PyLong_Check(o) ? CTPY_DEFAULT_INT : CTPY_DEFAULT_FLOAT;
    if (ctpy_check_scalar(o, dtype) < 0) return NULL;
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
    for (int d = 0; format[0] && d < CT_DTYPE_COUNT; d++) {
        const char *mine = ctpy_buffer_format((ct_dtype)d);
        bool same = mine && (format[1] ? !strcmp(mine, format) : mine[0] == c && !mine[1]);
        if (same && (Py_ssize_t)ct_dtype_size((ct_dtype)d) == itemsize)
            return *out = (ct_dtype)d, 0;
    }
    ctpy_raise_status(CT_ERR_DTYPE,
                      "a buffer of format '%s' has no ctensor dtype (float32, float64, "
                      "float16, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
                      "bool, complex64, complex128; little-endian)",
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
        ctpy_raise_status(CT_ERR_SHAPE, "a buffer of %d dimensions (ctensor has at most %d)",
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
    if (PyComplex_Check(obj)) return from_complex(obj, dtype, device);
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

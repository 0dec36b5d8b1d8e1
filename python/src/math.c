/* The elementwise functions, generated from the op table's rows (CT_UNARY_OPS and
 * CT_BINARY_OPS in op_list.h, so a new row appears here by itself) under their ctensor
 * names and the array API's (subtract for sub, ...); where, clip; the reductions of
 * CT_REDUCE_OPS, var, std, argmax, argmin; and matmul. Python scalars are weakly typed, as
 * the standard says: x + 1 keeps x's dtype (the C *_scalar ops). */
#include <math.h>

#include "ctpy_impl.h"

/* The dtype of a 0-d tensor standing for the weak scalar s beside a tensor of dtype t (the
 * rule of the *_scalar ops, for where()'s branches). */
static ct_dtype weak_dtype(ct_dtype t, PyObject *scalar, double s) {
    if (ct_dtype_is_floating(t)) return t;
    if (PyFloat_Check(scalar) && (!isfinite(s) || s != floor(s))) return CT_F32;
    if (t == CT_BOOL && !PyBool_Check(scalar)) return CT_I64;
    return t;
}

/* t as dtype, a new reference (NULL with an exception). */
static ct_tensor *cast_to(const ct_tensor *t, ct_dtype dtype) {
    ct_tensor *out;
    CTPY_NOGIL(out = ct_cast(t, dtype));
    if (!out) ctpy_raise();
    return out;
}

/* Real floating or complex: the kinds whose dtype wins beside an integer or bool. */
static bool inexact(ct_dtype d) { return ct_dtype_is_floating(d) || ct_dtype_is_complex(d); }

ct_dtype ctpy_promote_types(ct_dtype a, ct_dtype b) {
    bool fa = inexact(a), fb = inexact(b);
    return fa == fb ? ct_promote_types(a, b) : fa ? a : b;
}

/* ctpy_promote_types's rule for an integer or bool operand beside a floating one: the
 * floating operand's dtype (int32 + float32 is float32; the C library's promotion, NumPy's,
 * gives float64). Either pointer is replaced by a new reference when converted (*cast holds
 * it). false with an exception. */
static bool mixed_kinds(const ct_tensor **a, const ct_tensor **b, ct_tensor **cast) {
    *cast = NULL;
    ct_dtype da = ct_dtype_of(*a), db = ct_dtype_of(*b);
    bool fa = inexact(da), fb = inexact(db);
    if (fa == fb) return true;
    const ct_tensor **converted = fa ? b : a;
    if (!(*cast = cast_to(*converted, fa ? da : db))) return false;
    *converted = *cast;
    return true;
}

static PyObject *tensor_tensor(const ct_tensor *a, const ct_tensor *b, ctpy_binary_fn fn) {
    ct_tensor *out, *cast;
    if (!mixed_kinds(&a, &b, &cast)) return NULL;
    CTPY_NOGIL(out = fn(a, b));
    ct_release(cast);
    return ctpy_wrap(out);
}

/* A Python int that a double does not hold, with a 64-bit integer array: the scalar path
 * would round it, so it joins as an exact 0-d array of the array's dtype (an OverflowError
 * beyond that dtype's range), which keeps the dtype. */
static PyObject *exact_int_binary(PyObject *a, PyObject *b, ctpy_binary_fn fn) {
    bool ta = ctpy_is_tensor(a);
    const ct_tensor *t = ctpy_tensor_of(ta ? a : b);
    ct_tensor *s = ctpy_as_tensor(ta ? b : a, ct_dtype_of(t), ct_device_of(t));
    if (!s) return NULL;
    PyObject *result = ta ? tensor_tensor(t, s, fn) : tensor_tensor(s, t, fn);
    ct_release(s);
    return result;
}

/* t op s, or s op t when the scalar came first (the reflected form, unless op commutes). */
static ct_tensor *scalar_op(const ctpy_binary_op *op, const ct_tensor *t, double s,
                            bool tensor_first) {
    ct_tensor *out;
    if (tensor_first || op->commutes)
        CTPY_NOGIL(out = op->scalar_fn(t, s));
    else
        CTPY_NOGIL(out = op->rscalar_fn(t, s));
    return out;
}

/* t op z (z op t when !first) with a Python complex z, weak as the other Python scalars: of
 * t's dtype when complex, else complex128 beside float64 and complex64 beside the rest
 * (PyTorch's rule). */
static PyObject *complex_scalar_binary(const ct_tensor *t, PyObject *scalar, bool first,
                                       ctpy_binary_fn fn) {
    Py_complex z = PyComplex_AsCComplex(scalar);
    if (z.real == -1.0 && PyErr_Occurred()) return NULL;
    ct_dtype d = ct_dtype_of(t);
    ct_dtype dtype = ct_dtype_is_complex(d) ? d : d == CT_F64 ? CT_C128 : CT_C64;
    ct_tensor *s;
    CTPY_NOGIL(s = ct_full_complex(0, NULL, (ct_complex128){z.real, z.imag}, dtype, CT_CPU));
    if (!s) return ctpy_raise();
    PyObject *out = first ? tensor_tensor(t, s, fn) : tensor_tensor(s, t, fn);
    ct_release(s);
    return out;
}

PyObject *ctpy_binary(PyObject *a, PyObject *b, const ctpy_binary_op *op) {
    ctpy_binary_fn fn = op->fn;
    bool ta = ctpy_is_tensor(a), tb = ctpy_is_tensor(b);
    if (ta && tb) return tensor_tensor(ctpy_tensor_of(a), ctpy_tensor_of(b), fn);
    PyObject *scalar = ta ? b : a;
    /* The common case first, x + 1.0 with a floating x: the checks below would let it through. */
    if ((ta || tb) && PyFloat_CheckExact(scalar) && op->scalar_fn &&
        ct_dtype_is_floating(ct_dtype_of(ctpy_tensor_of(ta ? a : b)))) {
        return ctpy_wrap(scalar_op(op, ctpy_tensor_of(ta ? a : b), PyFloat_AS_DOUBLE(scalar), ta));
    }
    if ((ta || tb) && ctpy_needs_exact_int(scalar, ct_dtype_of(ctpy_tensor_of(ta ? a : b))))
        return exact_int_binary(a, b, fn);
    if ((ta || tb) && PyComplex_Check(scalar))
        return complex_scalar_binary(ctpy_tensor_of(ta ? a : b), scalar, ta, fn);
    if ((ta || tb) && ctpy_is_scalar(scalar) && op->scalar_fn) {
        double s = PyFloat_AsDouble(scalar);
        if (s == -1.0 && PyErr_Occurred()) return NULL;
        const ct_tensor *t = ctpy_tensor_of(ta ? a : b);
        ct_tensor *out, *as_float = NULL;
        /* PyTorch's rule: a Python float with an integer or bool array computes in the
         * default float dtype, also where the value is integral (x * 2.0). */
        if (PyFloat_Check(scalar) && !inexact(ct_dtype_of(t))) {
            if (!(as_float = cast_to(t, CTPY_DEFAULT_FLOAT))) return NULL;
            t = as_float;
        }
        out = scalar_op(op, t, s, ta);
        ct_release(as_float);
        return ctpy_wrap(out);
    }
    ct_tensor *x = ctpy_tensor_arg(a, op->name, ctpy_tensor_or_null(b));
    ct_tensor *y = x ? ctpy_tensor_arg(b, op->name, x) : NULL;
    PyObject *result = y ? tensor_tensor(x, y, fn) : NULL;
    ct_release(x);
    ct_release(y);
    return result;
}

PyObject *ctpy_unary(PyObject *x, const char *name, ctpy_unary_fn fn) {
    ct_tensor *t = ctpy_tensor_arg(x, name, NULL), *out;
    if (!t) return NULL;
    CTPY_NOGIL(out = fn(t));
    ct_release(t);
    return ctpy_wrap(out);
}

/* ---- the rows of the op table ---- */

typedef struct binary_row {
    const char *name;
    ctpy_binary_fn fn;
    ctpy_scalar_fn scalar_fn, rscalar_fn;
} binary_row;

static const binary_row binary_rows[] = {
#define CTPY_BINARY_ROW_(name, NAME, ...)                                                          \
    {#name, ct_##name, ct_##name##_scalar, ct_##name##_rscalar},
    CT_BINARY_OPS(CTPY_BINARY_ROW_)
#undef CTPY_BINARY_ROW_
};

typedef struct unary_row {
    const char *name;
    ctpy_unary_fn fn;
} unary_row;

static const unary_row unary_rows[] = {
#define CTPY_UNARY_ROW_(name, NAME, ...) {#name, ct_##name},
    CT_UNARY_OPS(CTPY_UNARY_ROW_)
#undef CTPY_UNARY_ROW_
};

/* Which binary rows commute (x op y == y op x): the one list, for the functions and the
 * operators (ctpy_find_binary). */
static bool commutes(const char *name) {
    static const char *const names[] = {"add",         "mul",        "maximum",     "minimum",
                                        "eq",          "ne",         "logical_and", "logical_or",
                                        "bitwise_and", "bitwise_or", "bitwise_xor", "hypot"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i], name) == 0) return true;
    return false;
}

bool ctpy_find_binary(const char *name, ctpy_binary_op *op) {
    for (size_t i = 0; i < sizeof binary_rows / sizeof binary_rows[0]; i++)
        if (strcmp(binary_rows[i].name, name) == 0) {
            *op = (ctpy_binary_op){binary_rows[i].name, binary_rows[i].fn, binary_rows[i].scalar_fn,
                                   binary_rows[i].rscalar_fn, commutes(name)};
            return true;
        }
    return false;
}

ctpy_unary_fn ctpy_find_unary(const char *name) {
    for (size_t i = 0; i < sizeof unary_rows / sizeof unary_rows[0]; i++)
        if (strcmp(unary_rows[i].name, name) == 0) return unary_rows[i].fn;
    return NULL;
}

#define CTPY_BINARY_FN_(name, NAME, ...)                                                           \
    static PyObject *py_##name(PyObject *self, PyObject *const *args, Py_ssize_t n) {              \
        if (n != 2)                                                                                \
            return PyErr_Format(PyExc_TypeError, #name "() takes 2 arguments (%zd given)", n);     \
        ctpy_binary_op op = {#name, ct_##name, ct_##name##_scalar, ct_##name##_rscalar,            \
                             commutes(#name)};                                                     \
        return ctpy_binary(args[0], args[1], &op);                                                 \
    }
CT_BINARY_OPS(CTPY_BINARY_FN_)
#undef CTPY_BINARY_FN_

#define CTPY_UNARY_FN_(name, NAME, ...)                                                            \
    static PyObject *py_##name(PyObject *self, PyObject *x) {                                      \
        return ctpy_unary(x, #name, ct_##name);                                                    \
    }
CT_UNARY_OPS(CTPY_UNARY_FN_)
CTPY_UNARY_FN_(real, , )
CTPY_UNARY_FN_(imag, , )
CTPY_UNARY_FN_(conj, , )
#undef CTPY_UNARY_FN_

/* ---- where, clip ---- */

/* A where() branch: a Tensor, or a scalar as a 0-d tensor of the other branch's dtype. */
static ct_tensor *branch(PyObject *o, PyObject *other, const ct_tensor *cond) {
    if (ctpy_is_scalar(o) && ctpy_is_tensor(other)) {
        const ct_tensor *t = ctpy_tensor_of(other);
        double s = PyFloat_AsDouble(o);
        if (s == -1.0 && PyErr_Occurred()) return NULL;
        ct_tensor *out = ct_full(0, NULL, s, weak_dtype(ct_dtype_of(t), o, s), ct_device_of(t));
        if (!out) ctpy_raise();
        return out;
    }
    return ctpy_tensor_arg(o, "where", cond);
}

static PyObject *py_where(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) return PyErr_Format(PyExc_TypeError, "where() takes 3 arguments (%zd given)", n);
    PyObject *beside = ctpy_is_tensor(args[1]) ? args[1] : args[2];
    ct_tensor *cond = ctpy_tensor_arg(args[0], "where", ctpy_tensor_or_null(beside));
    ct_tensor *a = cond ? branch(args[1], args[2], cond) : NULL;
    ct_tensor *b = a ? branch(args[2], args[1], cond) : NULL, *out = NULL;
    if (b) CTPY_NOGIL(out = ct_where(cond, a, b));
    ct_release(cond);
    ct_release(a);
    ct_release(b);
    return b ? ctpy_wrap(out) : NULL;
}

static PyObject *py_clip(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"", "min", "max", NULL};
    PyObject *x, *lo = Py_None, *hi = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:clip", keywords, &x, &lo, &hi))
        return NULL;
    if ((lo == Py_None || ctpy_is_scalar(lo)) && (hi == Py_None || ctpy_is_scalar(hi))) {
        double l = lo == Py_None ? -INFINITY : PyFloat_AsDouble(lo);
        double h = hi == Py_None ? INFINITY : PyFloat_AsDouble(hi);
        if (PyErr_Occurred()) return NULL;
        ct_tensor *t = ctpy_tensor_arg(x, "clip", NULL), *out;
        if (!t) return NULL;
        CTPY_NOGIL(out = ct_clamp(t, l, h));
        ct_release(t);
        return ctpy_wrap(out);
    }
    /* Array bounds: the core's maximum and minimum. */
    ctpy_binary_op maximum = {"clip", ct_maximum, ct_maximum_scalar, ct_maximum_rscalar,
                              commutes("maximum")};
    ctpy_binary_op minimum = {"clip", ct_minimum, ct_minimum_scalar, ct_minimum_rscalar,
                              commutes("minimum")};
    PyObject *low = lo == Py_None ? Py_NewRef(x) : ctpy_binary(x, lo, &maximum);
    if (!low || hi == Py_None) return low;
    PyObject *out = ctpy_binary(low, hi, &minimum);
    Py_DECREF(low);
    return out;
}

/* ---- reductions ---- */

/* The function's name in its PyArg format ("O|Op:argmax"), for messages. */
static const char *name_in(const char *format) { return strchr(format, ':') + 1; }

typedef ct_tensor *(*reduce_fn)(const ct_tensor *, int, const int *, bool);

static PyObject *reduce(PyObject *args, PyObject *kwargs, const char *format, reduce_fn fn) {
    static char *keywords[] = {"x", "axis", "keepdims", "dtype", NULL};
    PyObject *x, *axis = Py_None;
    int keepdims = 0;
    ct_dtype dtype = (ct_dtype)-1;
    bool torch_style;
    PyObject *kw = ctpy_torch_kwargs(kwargs, &torch_style);
    if (!kw && PyErr_Occurred()) return NULL;
    int ok = PyArg_ParseTupleAndKeywords(args, kw, format, keywords, &x, &axis, &keepdims,
                                         ctpy_opt_dtype, &dtype);
    Py_XDECREF(kw);
    if (!ok) return NULL;
    int axes[CT_MAX_DIMS], naxes;
    char what[48];
    snprintf(what, sizeof what, "%s: axis", name_in(format));
    if (ctpy_parse_axes(axis, what, axes, &naxes) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, name_in(format), NULL), *out = NULL;
    if (!t) return NULL;
    if ((int)dtype >= 0 && dtype != ct_dtype_of(t)) {
        ct_tensor *cast;
        CTPY_NOGIL(cast = ct_cast(t, dtype));
        ct_release(t);
        if (!(t = cast)) return ctpy_raise();
    }
    CTPY_NOGIL(out = fn(t, naxes < 0 ? 0 : naxes, naxes < 0 ? NULL : axes, keepdims));
    ct_release(t);
    /* The standard: a given dtype is the result's too (sum and prod widen small integers
     * otherwise); the wide sum cast back wraps as a sum in that dtype would. */
    if (out && (int)dtype >= 0 && ct_dtype_of(out) != dtype) {
        ct_tensor *narrow;
        CTPY_NOGIL(narrow = ct_cast(out, dtype));
        ct_release(out);
        out = narrow;
    }
    return ctpy_wrap(out);
}

#define CTPY_REDUCE_FN_(name, NAME, ...)                                                           \
    static PyObject *py_##name(PyObject *self, PyObject *args, PyObject *kwargs) {                 \
        return reduce(args, kwargs, "O|OpO&:" #name, ct_##name);                                   \
    }
CT_REDUCE_OPS(CTPY_REDUCE_FN_)
#undef CTPY_REDUCE_FN_

typedef ct_tensor *(*moment_fn)(const ct_tensor *, int, const int *, double, bool);

static PyObject *moment(PyObject *args, PyObject *kwargs, const char *format, moment_fn fn) {
    static char *keywords[] = {"x", "axis", "correction", "keepdims", NULL};
    PyObject *x, *axis = Py_None;
    int keepdims = 0;
    bool torch_style;
    PyObject *kw = ctpy_torch_kwargs(kwargs, &torch_style);
    if (!kw && PyErr_Occurred()) return NULL;
    /* The standard's default correction is 0; a call in PyTorch's words (dim=, unbiased=,
     * keepdim=) gets PyTorch's, 1. */
    double correction = torch_style ? 1 : 0;
    int ok =
        PyArg_ParseTupleAndKeywords(args, kw, format, keywords, &x, &axis, &correction, &keepdims);
    Py_XDECREF(kw);
    if (!ok) return NULL;
    int axes[CT_MAX_DIMS], naxes;
    char what[48];
    snprintf(what, sizeof what, "%s: axis", name_in(format));
    if (ctpy_parse_axes(axis, what, axes, &naxes) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, name_in(format), NULL), *out;
    if (!t) return NULL;
    CTPY_NOGIL(out = fn(t, naxes < 0 ? 0 : naxes, naxes < 0 ? NULL : axes, correction, keepdims));
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_var(PyObject *self, PyObject *args, PyObject *kwargs) {
    return moment(args, kwargs, "O|Odp:var", ct_var);
}

static PyObject *py_std(PyObject *self, PyObject *args, PyObject *kwargs) {
    return moment(args, kwargs, "O|Odp:std", ct_std);
}

typedef ct_tensor *(*arg_fn)(const ct_tensor *, int, bool);

static PyObject *arg_reduce(PyObject *args, PyObject *kwargs, const char *format, arg_fn fn) {
    static char *keywords[] = {"x", "axis", "keepdims", NULL};
    PyObject *x, *axis = Py_None;
    int keepdims = 0;
    bool torch_style;
    PyObject *kw = ctpy_torch_kwargs(kwargs, &torch_style);
    if (!kw && PyErr_Occurred()) return NULL;
    int ok = PyArg_ParseTupleAndKeywords(args, kw, format, keywords, &x, &axis, &keepdims);
    Py_XDECREF(kw);
    if (!ok) return NULL;
    int a = CT_AXIS_NONE;
    char what[48];
    snprintf(what, sizeof what, "%s: axis", name_in(format));
    if (axis != Py_None && ctpy_axis_value(axis, what, &a) < 0) return NULL;
    ct_tensor *t = ctpy_tensor_arg(x, name_in(format), NULL), *out;
    if (!t) return NULL;
    CTPY_NOGIL(out = fn(t, a, keepdims));
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_argmax(PyObject *self, PyObject *args, PyObject *kwargs) {
    return arg_reduce(args, kwargs, "O|Op:argmax", ct_argmax);
}

static PyObject *py_argmin(PyObject *self, PyObject *args, PyObject *kwargs) {
    return arg_reduce(args, kwargs, "O|Op:argmin", ct_argmin);
}

static PyObject *py_matmul(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 2) return PyErr_Format(PyExc_TypeError, "matmul() takes 2 arguments (%zd given)", n);
    static const ctpy_binary_op matmul = {"matmul", ct_matmul, NULL, NULL, false};
    return ctpy_binary(args[0], args[1], &matmul);
}

PyMethodDef ctpy_math_functions[] = {
#define CTPY_BINARY_DEF_(name, NAME, ...)                                                          \
    {#name, KW py_##name, METH_FASTCALL, #name "(x1, x2): elementwise (ct_" #name ")."},
    CT_BINARY_OPS(CTPY_BINARY_DEF_)
#undef CTPY_BINARY_DEF_
#define CTPY_UNARY_DEF_(name, NAME, ...) {#name, py_##name, METH_O, #name "(x): elementwise."},
        CT_UNARY_OPS(CTPY_UNARY_DEF_)
#undef CTPY_UNARY_DEF_
    /* the parts of complex arrays (ct_real, ct_imag, ct_conj) */
    {"real", py_real, METH_O, "real(x): the real parts, a view of x's storage (x if real)."},
    {"imag", py_imag, METH_O,
     "imag(x): the imaginary parts, a view of x's storage (zeros if x is real)."},
    {"conj", py_conj, METH_O, "conj(x): the complex conjugate (x if real)."},
#define CTPY_REDUCE_DEF_(name, NAME, ...)                                                          \
    {#name, KW py_##name, KWARGS,                                                                  \
     #name "(x, /, axis=None, keepdims=False, dtype=None): a reduction (ct_" #name                 \
           "); also dim=, keepdim=."},
    CT_REDUCE_OPS(CTPY_REDUCE_DEF_)
#undef CTPY_REDUCE_DEF_
        {"where", KW py_where, METH_FASTCALL,
         "where($module, condition, x1, x2, /)\n--\n\nx1 where condition is true, else x2."},
    {"clip", KW py_clip, KWARGS,
     "clip($module, x, /, min=None, max=None)\n--\n\nx clamped to [min, max]."},
    {"var", KW py_var, KWARGS, "var(x, /, *, axis=None, correction=0, keepdims=False)."},
    {"std", KW py_std, KWARGS, "std(x, /, *, axis=None, correction=0, keepdims=False)."},
    {"argmax", KW py_argmax, KWARGS,
     "argmax(x, /, *, axis=None, keepdims=False): index of the first maximum (int64)."},
    {"argmin", KW py_argmin, KWARGS,
     "argmin(x, /, *, axis=None, keepdims=False): index of the first minimum (int64)."},
    {"matmul", KW py_matmul, METH_FASTCALL,
     "matmul($module, x1, x2, /)\n--\n\nThe matrix product, by numpy.matmul's rules."},
    {0}, /* sentinel */
};

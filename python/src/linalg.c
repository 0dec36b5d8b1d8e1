/* The C side of ct.linalg (python/ctensor/linalg.py builds the namespace, its named tuples
 * and its keyword arguments on these): one private function per ct_linalg_* call, each run
 * with the GIL released. Array-like arguments convert as the namespace's other functions'
 * (ctpy_tensor_arg). */
#include <math.h>

#include "ctpy_impl.h"

/* f(x) for a function of one array. */
#define ONE_ARRAY(name, call)                                                                      \
    static PyObject *py_##name(PyObject *self, PyObject *o) {                                      \
        ct_tensor *x = ctpy_tensor_arg(o, #name, NULL), *out = NULL;                               \
        if (!x) return NULL;                                                                       \
        CTPY_NOGIL(out = call);                                                                    \
        ct_release(x);                                                                             \
        return ctpy_wrap(out);                                                                     \
    }
ONE_ARRAY(det, ct_linalg_det(x))
ONE_ARRAY(eigvalsh, ct_linalg_eigvalsh(x))
ONE_ARRAY(inv, ct_linalg_inv(x))
ONE_ARRAY(svdvals, ct_linalg_svdvals(x))

/* f(x1, x2) for a function of two arrays; `axis` for cross. */
#define TWO_ARRAYS(name, call)                                                                     \
    static PyObject *py_##name(PyObject *self, PyObject *args) {                                   \
        PyObject *a, *b;                                                                           \
        int axis = -1;                                                                             \
        if (!PyArg_ParseTuple(args, "OO|i:" #name, &a, &b, &axis)) return NULL;                    \
        ct_tensor *x1 = ctpy_tensor_arg(a, #name, ctpy_tensor_or_null(b)), *out = NULL;            \
        ct_tensor *x2 = x1 ? ctpy_tensor_arg(b, #name, x1) : NULL;                                 \
        bool converted = x2 != NULL;                                                               \
        if (converted) CTPY_NOGIL(out = call);                                                     \
        ct_release(x1);                                                                            \
        ct_release(x2);                                                                            \
        (void)axis;                                                                                \
        return converted ? ctpy_wrap(out) : NULL;                                                  \
    }
TWO_ARRAYS(solve, ct_linalg_solve(x1, x2))
TWO_ARRAYS(outer, ct_linalg_outer(x1, x2))
TWO_ARRAYS(cross, ct_linalg_cross(x1, x2, axis))

/* A tuple of n new results (each reference taken), or the error of status. */
static PyObject *results(ct_status status, int n, ct_tensor **t) {
    if (status != CT_OK) return ctpy_raise();
    PyObject *tuple = PyTuple_New(n);
    for (int i = 0; i < n; i++) {
        PyObject *item = tuple ? ctpy_wrap(t[i]) : (ct_release(t[i]), NULL);
        if (tuple && !item) Py_CLEAR(tuple);
        if (tuple) PyTuple_SET_ITEM(tuple, i, item);
    }
    return tuple;
}

static PyObject *py_slogdet(PyObject *self, PyObject *o) {
    ct_tensor *x = ctpy_tensor_arg(o, "slogdet", NULL), *t[2] = {NULL, NULL};
    if (!x) return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_linalg_slogdet(x, &t[0], &t[1]));
    ct_release(x);
    return results(status, 2, t);
}

static PyObject *py_eigh(PyObject *self, PyObject *o) {
    ct_tensor *x = ctpy_tensor_arg(o, "eigh", NULL), *t[2] = {NULL, NULL};
    if (!x) return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_linalg_eigh(x, &t[0], &t[1]));
    ct_release(x);
    return results(status, 2, t);
}

static PyObject *py_svd(PyObject *self, PyObject *args) {
    PyObject *o;
    int full = 1;
    if (!PyArg_ParseTuple(args, "Op:svd", &o, &full)) return NULL;
    ct_tensor *x = ctpy_tensor_arg(o, "svd", NULL), *t[3] = {NULL, NULL, NULL};
    if (!x) return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_linalg_svd(x, full, &t[0], &t[1], &t[2]));
    ct_release(x);
    return results(status, 3, t);
}

static PyObject *py_qr(PyObject *self, PyObject *args) {
    PyObject *o;
    const char *mode;
    if (!PyArg_ParseTuple(args, "Os:qr", &o, &mode)) return NULL;
    ct_tensor *x = ctpy_tensor_arg(o, "qr", NULL), *t[2] = {NULL, NULL};
    if (!x) return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_linalg_qr(x, mode, &t[0], &t[1]));
    ct_release(x);
    return results(status, 2, t);
}

static PyObject *py_cholesky(PyObject *self, PyObject *args) {
    PyObject *o;
    int upper = 0;
    if (!PyArg_ParseTuple(args, "Op:cholesky", &o, &upper)) return NULL;
    ct_tensor *x = ctpy_tensor_arg(o, "cholesky", NULL), *out = NULL;
    if (!x) return NULL;
    CTPY_NOGIL(out = ct_linalg_cholesky(x, upper));
    ct_release(x);
    return ctpy_wrap(out);
}

/* pinv and matrix_rank: (x, rtol), rtol < 0 for the default. */
static PyObject *py_pinv(PyObject *self, PyObject *args) {
    PyObject *o;
    double rtol;
    if (!PyArg_ParseTuple(args, "Od:pinv", &o, &rtol)) return NULL;
    ct_tensor *x = ctpy_tensor_arg(o, "pinv", NULL), *out = NULL;
    if (!x) return NULL;
    CTPY_NOGIL(out = ct_linalg_pinv(x, rtol));
    ct_release(x);
    return ctpy_wrap(out);
}

static PyObject *py_matrix_rank(PyObject *self, PyObject *args) {
    PyObject *o;
    double rtol;
    if (!PyArg_ParseTuple(args, "Od:matrix_rank", &o, &rtol)) return NULL;
    ct_tensor *x = ctpy_tensor_arg(o, "matrix_rank", NULL), *out = NULL;
    if (!x) return NULL;
    CTPY_NOGIL(out = ct_linalg_matrix_rank(x, rtol));
    ct_release(x);
    return ctpy_wrap(out);
}

static PyObject *py_matrix_norm(PyObject *self, PyObject *args) {
    PyObject *o;
    const char *ord;
    int keepdims;
    if (!PyArg_ParseTuple(args, "Osp:matrix_norm", &o, &ord, &keepdims)) return NULL;
    ct_tensor *x = ctpy_tensor_arg(o, "matrix_norm", NULL), *out = NULL;
    if (!x) return NULL;
    CTPY_NOGIL(out = ct_linalg_matrix_norm(x, ord, keepdims));
    ct_release(x);
    return ctpy_wrap(out);
}

static PyObject *py_vector_norm(PyObject *self, PyObject *args) {
    PyObject *o, *axis;
    double ord;
    int keepdims, axes[CT_MAX_DIMS], naxes;
    if (!PyArg_ParseTuple(args, "OOdp:vector_norm", &o, &axis, &ord, &keepdims) ||
        ctpy_parse_axes(axis, "vector_norm: axis", axes, &naxes) < 0)
        return NULL;
    ct_tensor *x = ctpy_tensor_arg(o, "vector_norm", NULL), *out = NULL;
    if (!x) return NULL;
    CTPY_NOGIL(out = ct_linalg_vector_norm(x, naxes < 0 ? 0 : naxes, naxes < 0 ? NULL : axes, ord,
                                           keepdims));
    ct_release(x);
    return ctpy_wrap(out);
}

/* matrix_power, diagonal and trace: (x, an int). */
#define ARRAY_AND_INT(name, call)                                                                  \
    static PyObject *py_##name(PyObject *self, PyObject *args) {                                   \
        PyObject *o, *n_obj;                                                                       \
        int64_t n;                                                                                 \
        if (!PyArg_ParseTuple(args, "OO:" #name, &o, &n_obj) ||                                    \
            ctpy_int64_value(n_obj, #name, &n) < 0)                                                \
            return NULL;                                                                           \
        ct_tensor *x = ctpy_tensor_arg(o, #name, NULL), *out = NULL;                               \
        if (!x) return NULL;                                                                       \
        CTPY_NOGIL(out = call);                                                                    \
        ct_release(x);                                                                             \
        return ctpy_wrap(out);                                                                     \
    }
ARRAY_AND_INT(matrix_power, ct_linalg_matrix_power(x, n))
ARRAY_AND_INT(diagonal, ct_linalg_diagonal(x, n))
ARRAY_AND_INT(trace, ct_linalg_trace(x, n))

#define FN(name, flags)                                                                            \
    { "_linalg_" #name, (PyCFunction)py_##name, flags, "ct_linalg_" #name "." }
PyMethodDef ctpy_linalg_functions[] = {
    FN(det, METH_O),
    FN(eigvalsh, METH_O),
    FN(inv, METH_O),
    FN(svdvals, METH_O),
    FN(slogdet, METH_O),
    FN(eigh, METH_O),
    FN(solve, METH_VARARGS),
    FN(outer, METH_VARARGS),
    FN(cross, METH_VARARGS),
    FN(svd, METH_VARARGS),
    FN(qr, METH_VARARGS),
    FN(cholesky, METH_VARARGS),
    FN(pinv, METH_VARARGS),
    FN(matrix_rank, METH_VARARGS),
    FN(matrix_norm, METH_VARARGS),
    FN(vector_norm, METH_VARARGS),
    FN(matrix_power, METH_VARARGS),
    FN(diagonal, METH_VARARGS),
    FN(trace, METH_VARARGS),
    {0}, /* sentinel */
};

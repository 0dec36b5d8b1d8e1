/* The fft extension's entries over the C library's (ctensor/fft.h), as private functions of
 * the extension that python/ctensor/fft.py gives the standard's names and signatures:
 *   _fft_1d(x, kind, n, axis, norm)      fft, ifft, rfft, irfft, hfft, ihfft (kind 0..5)
 *   _fft_nd(x, kind, s, axes, norm)      fftn, ifftn, rfftn, irfftn (kind 0..3)
 *   _fft_freq(n, d, half, dtype, device) fftfreq (half False) and rfftfreq
 *   _fft_shift(x, axes, inverse)         fftshift and ifftshift
 * norm is "backward", "ortho" or "forward" (ValueError otherwise); n None is the default
 * length; s and axes follow the standard (s without axes: the last len(s) axes). */
#include <string.h>

#include "ctpy_impl.h"

typedef ct_tensor *(*fft_1d_fn)(const ct_tensor *, int64_t, int, ct_fft_norm);
typedef ct_tensor *(*fft_nd_fn)(const ct_tensor *, int, const int *, const int64_t *, ct_fft_norm);

static const fft_1d_fn one_axis[] = {ct_fft_fft,   ct_fft_ifft, ct_fft_rfft,
                                     ct_fft_irfft, ct_fft_hfft, ct_fft_ihfft};
static const char *const one_axis_names[] = {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"};
static const fft_nd_fn many_axes[] = {ct_fft_fftn, ct_fft_ifftn, ct_fft_rfftn, ct_fft_irfftn};
static const char *const many_axes_names[] = {"fftn", "ifftn", "rfftn", "irfftn"};

static int parse_norm(const char *text, const char *name, ct_fft_norm *out) {
    if (strcmp(text, "backward") == 0)
        *out = CT_FFT_BACKWARD;
    else if (strcmp(text, "ortho") == 0)
        *out = CT_FFT_ORTHO;
    else if (strcmp(text, "forward") == 0)
        *out = CT_FFT_FORWARD;
    else {
        PyErr_Format(PyExc_ValueError,
                     "%s: norm must be 'backward', 'ortho' or 'forward', not '%s'", name, text);
        return -1;
    }
    return 0;
}

static PyObject *py_fft_1d(PyObject *self, PyObject *args) {
    PyObject *x, *n_obj;
    int kind, axis;
    const char *norm_text;
    if (!PyArg_ParseTuple(args, "OiOO&s:_fft_1d", &x, &kind, &n_obj, ctpy_axis_arg, &axis,
                          &norm_text))
        return NULL;
    if (kind < 0 || kind >= (int)(sizeof one_axis / sizeof one_axis[0]))
        return PyErr_Format(PyExc_ValueError, "_fft_1d: kind %d", kind);
    const char *name = one_axis_names[kind];
    ct_fft_norm norm;
    int64_t n = -1;
    if (parse_norm(norm_text, name, &norm) < 0) return NULL;
    if (n_obj != Py_None) {
        if (ctpy_int64_value(n_obj, "n", &n) < 0) return NULL;
        if (n < 1)
            return PyErr_Format(PyExc_ValueError, "%s: n must be >= 1, not %lld", name,
                                (long long)n);
    }
    ct_tensor *t = ctpy_tensor_arg(x, name, NULL), *out;
    if (!t) return NULL;
    CTPY_NOGIL(out = one_axis[kind](t, n, axis, norm));
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_fft_nd(PyObject *self, PyObject *args) {
    PyObject *x, *s_obj, *axes_obj;
    int kind;
    const char *norm_text;
    if (!PyArg_ParseTuple(args, "OiOOs:_fft_nd", &x, &kind, &s_obj, &axes_obj, &norm_text))
        return NULL;
    if (kind < 0 || kind >= (int)(sizeof many_axes / sizeof many_axes[0]))
        return PyErr_Format(PyExc_ValueError, "_fft_nd: kind %d", kind);
    const char *name = many_axes_names[kind];
    ct_fft_norm norm;
    int axes[CT_MAX_DIMS], naxes = -1, ns = -1;
    int64_t s[CT_MAX_DIMS];
    if (parse_norm(norm_text, name, &norm) < 0) return NULL;
    if (axes_obj != Py_None) {
        PyObject *items = ctpy_snapshot(axes_obj, CT_MAX_DIMS, "axes");
        int parsed = items ? ctpy_parse_axes(items, "axes", axes, &naxes) : -1;
        Py_XDECREF(items);
        if (parsed < 0) return NULL;
    }
    if (s_obj != Py_None) {
        if (ctpy_parse_shape(s_obj, "s", s, &ns) < 0) return NULL;
        for (int i = 0; i < ns; i++)
            if (s[i] < 1) return PyErr_Format(PyExc_ValueError, "%s: s must hold sizes >= 1", name);
        if (naxes >= 0 && naxes != ns)
            return PyErr_Format(PyExc_ValueError, "%s: s has %d sizes for %d axes", name, ns,
                                naxes);
        if (naxes < 0) naxes = ns;
    }
    ct_tensor *t = ctpy_tensor_arg(x, name, NULL), *out;
    if (!t) return NULL;
    const int *axes_arg = axes_obj != Py_None ? axes : NULL;
    const int64_t *s_arg = s_obj != Py_None ? s : NULL;
    CTPY_NOGIL(out = many_axes[kind](t, naxes, axes_arg, s_arg, norm));
    ct_release(t);
    return ctpy_wrap(out);
}

static PyObject *py_fft_freq(PyObject *self, PyObject *args) {
    PyObject *n_obj;
    double d;
    int half, dtype = -1;
    ct_device device = CT_DEFAULT;
    if (!PyArg_ParseTuple(args, "OdpO&O&:_fft_freq", &n_obj, &d, &half, ctpy_opt_dtype, &dtype,
                          ctpy_opt_device, &device))
        return NULL;
    int64_t n;
    if (ctpy_int64_value(n_obj, "n", &n) < 0) return NULL;
    ct_tensor *out;
    CTPY_NOGIL(out = (half ? ct_fft_rfftfreq : ct_fft_fftfreq)(n, d, (ct_dtype)dtype, device));
    return ctpy_wrap(out);
}

static PyObject *py_fft_shift(PyObject *self, PyObject *args) {
    PyObject *x, *axes_obj;
    int inverse;
    if (!PyArg_ParseTuple(args, "OOp:_fft_shift", &x, &axes_obj, &inverse)) return NULL;
    const char *name = inverse ? "ifftshift" : "fftshift";
    int axes[CT_MAX_DIMS], naxes = -1;
    if (axes_obj != Py_None) {
        PyObject *items = PyIndex_Check(axes_obj) ? Py_NewRef(axes_obj)
                                                  : ctpy_snapshot(axes_obj, CT_MAX_DIMS, "axes");
        int parsed = items ? ctpy_parse_axes(items, "axes", axes, &naxes) : -1;
        Py_XDECREF(items);
        if (parsed < 0) return NULL;
    }
    ct_tensor *t = ctpy_tensor_arg(x, name, NULL), *out;
    if (!t) return NULL;
    const int *axes_arg = naxes >= 0 ? axes : NULL;
    CTPY_NOGIL(out = (inverse ? ct_fft_ifftshift : ct_fft_fftshift)(t, naxes, axes_arg));
    ct_release(t);
    return ctpy_wrap(out);
}

PyMethodDef ctpy_fft_functions[] = {
    {"_fft_1d", py_fft_1d, METH_VARARGS, "_fft_1d(x, kind, n, axis, norm): ctensor.fft's 1-D."},
    {"_fft_nd", py_fft_nd, METH_VARARGS, "_fft_nd(x, kind, s, axes, norm): ctensor.fft's n-D."},
    {"_fft_freq", py_fft_freq, METH_VARARGS,
     "_fft_freq(n, d, half, dtype, device): fftfreq and rfftfreq."},
    {"_fft_shift", py_fft_shift, METH_VARARGS,
     "_fft_shift(x, axes, inverse): fftshift and ifftshift."},
    {0}, /* sentinel */
};

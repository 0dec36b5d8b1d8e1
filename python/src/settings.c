/* The process-wide numerical settings from Python, with PyTorch's names and behaviour:
 * use_deterministic_algorithms(mode, *, warn_only=False) and
 * are_deterministic_algorithms_enabled() (ct_use_deterministic_algorithms). `mode` and
 * `warn_only` must be bool, as in PyTorch. warn_only is accepted for scripts written for
 * PyTorch and changes nothing: every ctensor op has a deterministic path, so none warns or
 * raises for want of one. */
#include "ctpy_impl.h"

static PyObject *py_use_deterministic_algorithms(PyObject *self, PyObject *args, PyObject *kw) {
    static char *keywords[] = {"mode", "warn_only", NULL};
    PyObject *mode, *warn_only = Py_False;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|$O!:use_deterministic_algorithms", keywords,
                                     &PyBool_Type, &mode, &PyBool_Type, &warn_only))
        return NULL;
    ct_use_deterministic_algorithms(mode == Py_True);
    Py_RETURN_NONE;
}

static PyObject *py_are_deterministic_algorithms_enabled(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(ct_are_deterministic_algorithms_enabled());
}

PyMethodDef ctpy_settings_functions[] = {
    {"use_deterministic_algorithms", (PyCFunction)(void (*)(void))py_use_deterministic_algorithms,
     METH_VARARGS | METH_KEYWORDS,
     "use_deterministic_algorithms(mode, *, warn_only=False): with mode True, every op gives "
     "the same bits from run to run on the same device and thread count (torch's name; off by "
     "default). warn_only changes nothing: every op has a deterministic path."},
    {"are_deterministic_algorithms_enabled", py_are_deterministic_algorithms_enabled, METH_NOARGS,
     "are_deterministic_algorithms_enabled(): whether deterministic algorithms are on."},
    {0}, /* sentinel */
};

/* PyTorch's spellings of the namespace functions' keywords (dim for axis, keepdim for
 * keepdims, unbiased for correction), so that ct.sum(x, dim=1) and ct.argmax(x, dim=1,
 * keepdim=True) run as PyTorch's do; and the hook that adds the Python-level Tensor methods
 * (python/ctensor/tensor_methods.py) to the Tensor type. */
#include "ctpy_impl.h"

enum { RENAMES = 5 };
static const char *const renames[RENAMES][2] = {
    {"dim", "axis"},     {"keepdim", "keepdims"}, {"unbiased", "correction"},
    {"dims", "axis"},    /* flip, roll */
    {"shifts", "shift"}, /* roll */
};
static PyObject *keys[RENAMES][2]; /* the names as interned strings, made once */

static int make_keys(void) {
    for (int i = 0; i < RENAMES; i++)
        for (int j = 0; j < 2; j++)
            if (!keys[i][j] && !(keys[i][j] = PyUnicode_InternFromString(renames[i][j]))) return -1;
    return 0;
}

PyObject *ctpy_torch_kwargs(PyObject *kwargs, bool *torch_style) {
    *torch_style = false;
    if (!kwargs) return NULL;
    if (!keys[RENAMES - 1][1] && make_keys() < 0) return NULL;
    bool any = false;
    for (int i = 0; i < RENAMES; i++) any = any || PyDict_GetItem(kwargs, keys[i][0]);
    if (!any) return Py_NewRef(kwargs);
    *torch_style = true;
    PyObject *out = PyDict_Copy(kwargs);
    for (int i = 0; out && i < RENAMES; i++) {
        PyObject *value = PyDict_GetItem(out, keys[i][0]);
        if (!value) continue;
        if (PyDict_GetItem(out, keys[i][1])) {
            PyErr_Format(PyExc_TypeError, "give %s= or %s=, not both", renames[i][0],
                         renames[i][1]);
            Py_CLEAR(out);
            break;
        }
        /* unbiased=True is correction=1, unbiased=False correction=0 */
        if (i == 3 && PyDict_GetItem(out, keys[0][0])) continue; /* dim= and dims= both */
        int truth = i == 2 ? PyObject_IsTrue(value) : 0;
        PyObject *renamed =
            i == 2 ? (truth < 0 ? NULL : PyFloat_FromDouble(truth ? 1.0 : 0.0)) : Py_NewRef(value);
        if (!renamed || PyDict_SetItem(out, keys[i][1], renamed) < 0 ||
            PyDict_DelItem(out, keys[i][0]) < 0)
            Py_CLEAR(out);
        Py_XDECREF(renamed);
    }
    return out;
}

/* _install_tensor_methods(methods): each (name, callable) of the dict as a Tensor method; a
 * Python function binds as any method does, another callable (a C function of the module) is
 * bound through an instancemethod, so that x.name(...) is callable(x, ...). */
static PyObject *py_install_tensor_methods(PyObject *self, PyObject *methods) {
    if (!PyDict_Check(methods)) return PyErr_Format(PyExc_TypeError, "a dict of methods");
    PyObject *name, *fn;
    Py_ssize_t pos = 0;
    while (PyDict_Next(methods, &pos, &name, &fn)) {
        bool plain = PyFunction_Check(fn) || PyObject_TypeCheck(fn, &PyProperty_Type);
        PyObject *method = plain ? Py_NewRef(fn) : PyInstanceMethod_New(fn);
        int rc = method ? PyDict_SetItem(ctpy_tensor_type.tp_dict, name, method) : -1;
        Py_XDECREF(method);
        if (rc < 0) return NULL;
    }
    PyType_Modified(&ctpy_tensor_type);
    Py_RETURN_NONE;
}

/* The namespace functions with an axis whose C parsing takes the standard's keywords only:
 * each is wrapped, under its own name and doc, by a function that renames PyTorch's keywords
 * first (the reductions, var and std in math.c rename them themselves, as std's default
 * correction depends on the spelling). */
static const char *const wrapped_names[] = {
    "expand_dims",     "squeeze",       "flip",   "roll",    "unstack",        "take",   "sort",
    "take_along_axis", "count_nonzero", "repeat", "argsort", "cumulative_sum", "concat", "stack",
    "cumulative_prod", "diff"};
enum { WRAPPED = sizeof wrapped_names / sizeof wrapped_names[0] };
static PyMethodDef wrapped_defs[WRAPPED];

static PyObject *torch_named(PyObject *original, PyObject *args, PyObject *kwargs) {
    bool torch_style;
    PyObject *kw = ctpy_torch_kwargs(kwargs, &torch_style);
    if (!kw && PyErr_Occurred()) return NULL;
    PyObject *out = PyObject_Call(original, args, kw);
    Py_XDECREF(kw);
    return out;
}

int ctpy_torch_style_init(PyObject *module) {
    PyObject *dict = PyModule_GetDict(module), *name = PyModule_GetNameObject(module);
    if (!name) return -1;
    for (int i = 0; i < WRAPPED; i++) {
        PyObject *original = PyDict_GetItemString(dict, wrapped_names[i]);
        if (!original || !PyCFunction_Check(original)) continue;
        wrapped_defs[i] = (PyMethodDef){wrapped_names[i], KW torch_named, KWARGS,
                                        ((PyCFunctionObject *)original)->m_ml->ml_doc};
        PyObject *fn = PyCFunction_NewEx(&wrapped_defs[i], original, name);
        int rc = fn ? PyDict_SetItemString(dict, wrapped_names[i], fn) : -1;
        Py_XDECREF(fn);
        if (rc < 0) return Py_DECREF(name), -1;
    }
    Py_DECREF(name);
    return 0;
}

PyMethodDef ctpy_torch_style_functions[] = {
    {"_install_tensor_methods", py_install_tensor_methods, METH_O,
     "_install_tensor_methods(dict): add Python-level methods to Tensor (ctensor's own use)."},
    {0}, /* sentinel */
};

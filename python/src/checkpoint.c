/* ct.save / ct.load's C side: a dict of tensors to a safetensors file (written atomically by
 * the C library) and back, through ct_state_dict; files load with the safetensors package
 * and PyTorch (safetensors.torch.load_file). */
#include "ctpy_impl.h"

/* o's UTF-8 when it is a str without a NUL character (a C string keeps what comes before
 * the first NUL only, so that such a name would not round-trip); NULL with the exception
 * set (TypeError or ValueError naming `what` and the key) otherwise. */
static const char *c_string(PyObject *o, const char *what, PyObject *key) {
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "ct.save: %s %R is not a str; nothing was written", what,
                     key);
        return NULL;
    }
    Py_ssize_t size;
    const char *text = PyUnicode_AsUTF8AndSize(o, &size);
    if (text && (Py_ssize_t)strlen(text) != size) {
        PyErr_Format(PyExc_ValueError,
                     "ct.save: %s %R holds a NUL character, which a safetensors name cannot "
                     "hold; nothing was written",
                     what, key);
        return NULL;
    }
    return text;
}

/* Copy a dict's str -> str entries into sd's metadata; false with the exception set. */
static bool set_metadata(ct_state_dict *sd, PyObject *metadata) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (metadata && PyDict_Next(metadata, &pos, &key, &value)) {
        const char *k = c_string(key, "metadata key", key);
        const char *v = k ? c_string(value, "metadata value of", key) : NULL;
        if (!k || !v) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "ct.save: metadata %R is not a str -> str entry",
                             key);
            return false;
        }
        if (ctpy_check(ct_state_dict_set_metadata(sd, k, v)) < 0) return false;
    }
    return true;
}

static PyObject *py_save(PyObject *self, PyObject *args) {
    PyObject *dict, *path, *metadata = NULL;
    if (!PyArg_ParseTuple(args, "O!O&|O!:save", &PyDict_Type, &dict, PyUnicode_FSConverter, &path,
                          &PyDict_Type, &metadata))
        return NULL;
    ct_state_dict *sd = ct_state_dict_new();
    bool ok = sd != NULL;
    if (!ok) ctpy_raise();
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (ok && PyDict_Next(dict, &pos, &key, &value)) {
        const char *name = c_string(key, "key", key);
        if (!name || !ctpy_is_tensor(value)) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "ct.save: %R is not a str -> Tensor entry", key);
            ok = false;
        } else {
            ok = ctpy_check(ct_state_dict_set(sd, name, ctpy_tensor_of(value))) == 0;
        }
    }
    ok = ok && set_metadata(sd, metadata);
    ct_status status = CT_OK;
    const char *text = PyBytes_AsString(path);
    if (ok) CTPY_NOGIL(status = ct_safetensors_save(text, sd));
    ct_state_dict_free(sd);
    Py_DECREF(path);
    if (!ok || ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

/* The file's metadata as a dict of str. */
static PyObject *metadata_of(const ct_state_dict *sd) {
    PyObject *out = PyDict_New();
    for (int i = 0; out && i < ct_state_dict_metadata_size(sd); i++) {
        const char *key = ct_state_dict_metadata_key_at(sd, i);
        PyObject *value = PyUnicode_FromString(ct_state_dict_get_metadata(sd, key));
        if (!value || PyDict_SetItemString(out, key, value) < 0) Py_CLEAR(out);
        Py_XDECREF(value);
    }
    return out;
}

static PyObject *py_load(PyObject *self, PyObject *args) {
    PyObject *path;
    ct_device device = CT_DEFAULT;
    if (!PyArg_ParseTuple(args, "O&|O&:load", PyUnicode_FSConverter, &path, ctpy_opt_device,
                          &device))
        return NULL;
    ct_state_dict *sd;
    const char *text = PyBytes_AsString(path);
    CTPY_NOGIL(sd = ct_safetensors_load(text, device));
    Py_DECREF(path);
    if (!sd) return ctpy_raise();
    PyObject *dict = PyDict_New();
    for (int i = 0; dict && i < ct_state_dict_size(sd); i++) {
        PyObject *t = ctpy_wrap(ct_retain(ct_state_dict_tensor_at(sd, i)));
        if (!t || PyDict_SetItemString(dict, ct_state_dict_name_at(sd, i), t) < 0) Py_CLEAR(dict);
        Py_XDECREF(t);
    }
    PyObject *metadata = dict ? metadata_of(sd) : NULL;
    ct_state_dict_free(sd);
    if (!metadata) {
        Py_XDECREF(dict);
        return NULL;
    }
    return Py_BuildValue("(NN)", dict, metadata);
}

static PyMethodDef checkpoint_functions[] = {
    {"_save", py_save, METH_VARARGS,
     "_save(dict, path, metadata=None): tensors (and str metadata) to a safetensors file."},
    {"_load", py_load, METH_VARARGS,
     "_load(path, device=None): a safetensors file as (tensors, metadata), two dicts."},
    {0}, /* sentinel */
};

int ctpy_checkpoint_init(PyObject *module) {
    return PyModule_AddFunctions(module, checkpoint_functions);
}

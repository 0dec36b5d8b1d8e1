/* ctensor's failures as Python exceptions. Each ct_status has a class, a subclass of
 * ctensor.Error and of the built-in exception a Python user expects (ValueError for shapes,
 * TypeError for dtypes, MemoryError for out of memory, ...); its text is the C message,
 * which says what was expected, what was given and what to do. */
#include <stdarg.h>

#include "ctpy_impl.h"

typedef struct error_class {
    ct_status status;
    const char *name; /* ctensor.<name> */
    PyObject **base;  /* the built-in base */
    PyObject *type;
} error_class;

static PyObject *error_base; /* ctensor.Error */

static error_class classes[] = {
    {CT_ERR_INVALID_ARG, "InvalidArgumentError", &PyExc_ValueError, NULL},
    {CT_ERR_SHAPE, "ShapeError", &PyExc_ValueError, NULL},
    {CT_ERR_DTYPE, "DTypeError", &PyExc_TypeError, NULL},
    {CT_ERR_DEVICE_MISMATCH, "DeviceMismatchError", &PyExc_ValueError, NULL},
    {CT_ERR_DEVICE_UNAVAILABLE, "DeviceUnavailableError", &PyExc_RuntimeError, NULL},
    {CT_ERR_OUT_OF_MEMORY, "OutOfMemoryError", &PyExc_MemoryError, NULL},
    {CT_ERR_TRANSFER_GUARD, "TransferGuardError", &PyExc_RuntimeError, NULL},
    {CT_ERR_IO, "FileError", &PyExc_OSError, NULL},
    {CT_ERR_FORMAT, "FormatError", &PyExc_ValueError, NULL},
    {CT_ERR_BACKEND, "BackendError", &PyExc_RuntimeError, NULL},
    {CT_ERR_UNSUPPORTED, "UnsupportedError", &PyExc_TypeError, NULL},
    {CT_ERR_STATE, "StateError", &PyExc_RuntimeError, NULL},
    {CT_ERR_COMM, "CommError", &PyExc_RuntimeError, NULL},
};
#define CLASS_COUNT ((int)(sizeof classes / sizeof classes[0]))

static PyObject *class_of(ct_status status) {
    for (int i = 0; i < CLASS_COUNT; i++)
        if (classes[i].status == status) return classes[i].type;
    return error_base;
}

PyObject *ctpy_raise(void) {
    ct_status status = ct_last_status();
    const char *message = ct_last_error();
    PyErr_SetString(class_of(status),
                    message[0] ? message : "ctensor failed without a message (a bug: report it)");
    ct_clear_error();
    return NULL;
}

PyObject *ctpy_raise_status(ct_status status, const char *format, ...) {
    va_list args;
    va_start(args, format);
    PyObject *text = PyUnicode_FromFormatV(format, args);
    va_end(args);
    if (text) {
        PyErr_SetObject(class_of(status), text);
        Py_DECREF(text);
    }
    return NULL;
}

int ctpy_check(ct_status status) {
    if (status == CT_OK) return 0;
    ctpy_raise();
    return -1;
}

int ctpy_errors_init(PyObject *module) {
    error_base = PyErr_NewExceptionWithDoc(
        "ctensor.Error", "A failure of the ctensor library; the text is its message.", NULL, NULL);
    if (!error_base || PyModule_AddObjectRef(module, "Error", error_base) < 0) return -1;
    for (int i = 0; i < CLASS_COUNT; i++) {
        char qualified[64];
        snprintf(qualified, sizeof qualified, "ctensor.%s", classes[i].name);
        PyObject *bases = PyTuple_Pack(2, error_base, *classes[i].base);
        if (!bases) return -1;
        classes[i].type = PyErr_NewException(qualified, bases, NULL);
        Py_DECREF(bases);
        if (!classes[i].type || PyModule_AddObjectRef(module, classes[i].name, classes[i].type) < 0)
            return -1;
    }
    return 0;
}

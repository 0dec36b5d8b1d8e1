/* ctensor's failures as Python exceptions. Each ct_status has a class, a subclass of
 * ctensor.Error and of the built-in exception a Python user expects (ValueError for shapes,
 * TypeError for dtypes, MemoryError for out of memory, ...); its text is the C message,
 * which says what was expected, what was given and what to do, in Python's words: the C
 * library's advice names C functions (ct_cast, ct_no_grad_push, ct_backward_with, ...) and
 * C constants (CT_F32), which python_words translates into the Python spelling of the same
 * fix (x.to(dtype), `with ct.no_grad():`, loss.backward(gradient), ct.float32). */
#include <stdarg.h>
#include <string.h>

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

/* C spelling -> Python spelling, the longer phrases first (each is replaced before the
 * shorter ones that it contains). */
static const char *const phrases[][2] = {
    {"inside ct_no_grad_push() ... ct_no_grad_pop(), as under torch.no_grad()",
     "inside `with ct.no_grad():`"},
    {"compute it under ct_no_grad_push(), or on ct_detach()ed inputs",
     "compute it inside `with ct.no_grad():`, or on x.detach()ed inputs"},
    {"pass retain_graph = true to ct_backward_with", "pass retain_graph=True to loss.backward()"},
    {"reduce it to a scalar loss (ct_sum, ct_mean) or pass its gradient to ct_backward_with",
     "reduce it to a scalar loss (loss.sum(), loss.mean()) or pass its gradient: "
     "loss.backward(gradient)"},
    {"ct_backward on a loss computed from it", "loss.backward() on a loss computed from it"},
    {"call ct_set_requires_grad before the forward pass",
     "call x.requires_grad_() before the forward pass"},
    {"use ct_detach for a leaf copy", "use x.detach() for a leaf copy"},
    {"move the data explicitly with ct_to() or ct_copy_to_host(), or relax the guard with "
     "ct_set_transfer_guard()",
     "move the data explicitly with x.to(device) or x.cpu(), or relax the guard with "
     "ct.set_transfer_guard('allow')"},
    {"relax the guard with ct_set_transfer_guard() around the call",
     "relax the guard with ct.set_transfer_guard('allow') around the call"},
    {"CT_BF16): convert it with ct_cast", "CT_BF16): convert it with x.float()"},
    {"CT_I64 (convert it with ct_cast)", "CT_I64 (convert it with x.long())"},
    {"they must match (convert with ct_cast)", "they must match (convert with x.to(dtype))"},
    {"(cast it with ct_cast)", "(convert it with x.float())"},
    {"(and ct_cast the result if needed)", "(and convert the result with x.to(dtype) if needed)"},
    {"ct_cast it to CT_F32 first", "convert it with x.float() first"},
    {"ct_cast(cond, CT_BOOL)", "cond.astype(ct.bool)"},
    {"ct_cast the operands to float32 first", "convert the operands to float32 first (x.float())"},
    {"ct_cast the operands to an integer dtype first",
     "convert the operands to an integer dtype first (x.long())"},
    {"ct_cast the tensor to an integer dtype first",
     "convert the tensor to an integer dtype first (x.long())"},
    {"ct_cast the tensor to a floating dtype first",
     "convert the tensor to a floating dtype first (x.float())"},
    {"use ct_logical_not", "use ct.logical_not"},
    {"ct_logical_and and ct_logical_not, or ct_cast to an integer dtype first",
     "ct.logical_and and ct.logical_not, or convert to an integer dtype first (x.long())"},
    {"ct_cast it to bool", "convert it with x.to(ct.bool)"},
    {"ct_cast it first", "convert it with x.float() first"},
    {"ct_cast the gradient first", "convert the gradient with g.to(dtype) first"},
    {"comparison (ct_gt, ...)", "comparison (x > y, ...)"},
    {"ct_cast", "x.to(dtype)"},
    {"a ct_detach of it", "x.detach()"},
    {"ct_detach()ed", "x.detach()ed"},
    {"ct_detach it first", "x.detach() it first"},
    {"ct_detach of it", "x.detach() of it"},
    {"ct_detach it", "x.detach() it"},
    {"ct_clone of it", "x.clone() of it"},
    {"ct_to or ct_contiguous it first", "move it with x.to(device) first"},
    {"call ct_contiguous first", "copy it with x.clone() first"},
    {"ct_contiguous of it", "x.clone() of it"},
    {"with ct_to()", "with x.to(device)"},
    {"with ct_to", "with x.to(device)"},
    {"ct_no_grad_push()", "`with ct.no_grad():`"},
    {"ct_no_grad_pop()", "the end of the `with ct.no_grad():` block"},
    {"ct_backward_with", "loss.backward(gradient)"},
    {"ct_safetensors_save", "ct.save"},
    {"ct_safetensors_load", "ct.load"},
    {"ct_state_dict_set_metadata", "ct.save"},
    {"ct_state_dict_set", "ct.save"},
    {"ct_state_dict_get", "ct.load"},
    {"ct_optimizer_load_state", "optimizer.load_state_dict"},
    {"ct_optimizer_step", "optimizer.step()"},
    {"ct_optimizer_zero_grad", "optimizer.zero_grad()"},
    {"ct_optimizer_set_lr", "optimizer's lr"},
    {"ct_ddp_new", "DistributedDataParallel"},
    {"ct_ddp_backward", "DistributedDataParallel's backward"},
    {"ct_comm_spawn", "DataParallel"},
    {"ct_comm_", "ct.distributed."},
    {"ct_set_requires_grad", "x.requires_grad_()"},
    {"ct_set_grad", "x.grad ="},
    {"ct_grad_scaler_step", "scaler.step(optimizer)"},
    {"ct_grad", "x.grad"},
    {"ct_backward", "loss.backward()"},
    {"ct_item", "x.item()"},
    {"ct_copy_to_host", "x.cpu()"},
    {"ct_configure_logical_devices", "ct.configure_logical_devices"},
    {"ct_device_types", "ct.devices()"},
    {"ct_autocast_push", "ct.autocast"},
    {"ct_autocast_pop", "the end of the `with ct.autocast(...):` block"},
    {"ct_nn_", "ct.nn."},
    {"ct_linalg_", "ct.linalg."},
    {"ct_fill", "x[...] = value"},
    {"ct_copy", "x[...] = y"},
    {"ct_move_to", "module.to(device)"},
    {"ct_sgd", "ct.optim.SGD"},
    {"ct_adamw", "ct.optim.AdamW"},
    {"ct_adam", "ct.optim.Adam"},
    {"ct_clip_grad_norm", "ct.nn.utils.clip_grad_norm_"},
    {"(CT_GUARD_DISALLOW_IMPLICIT)", "('disallow')"},
    {"CT_REDUCTION_MEAN", "'mean'"},
    {"CT_REDUCTION_SUM", "'sum'"},
    {"CT_REDUCTION_NONE", "'none'"},
    {"CT_F32", "float32"},
    {"CT_F64", "float64"},
    {"CT_F16", "float16"},
    {"CT_BF16", "bfloat16"},
    {"CT_I8", "int8"},
    {"CT_I16", "int16"},
    {"CT_I32", "int32"},
    {"CT_I64", "int64"},
    {"CT_U8", "uint8"},
    {"CT_U16", "uint16"},
    {"CT_U32", "uint32"},
    {"CT_U64", "uint64"},
    {"CT_BOOL", "bool"},
};
#define PHRASE_COUNT ((int)(sizeof phrases / sizeof phrases[0]))

/* Every phrase of the table replaced, then any other C name: ct__internal(...) names are
 * dropped to "ctensor", ct_name becomes ct.name (the module function of the same op). */
static PyObject *python_words(PyObject *text) {
    /* A text that UTF-8 cannot hold (a lone surrogate from a %R) goes out as it came. */
    if (!PyUnicode_AsUTF8(text)) return PyErr_Clear(), Py_NewRef(text);
    Py_INCREF(text);
    for (int i = 0; text && i < PHRASE_COUNT; i++) {
        if (!strstr(PyUnicode_AsUTF8(text), phrases[i][0])) continue;
        PyObject *from = PyUnicode_FromString(phrases[i][0]);
        PyObject *to = PyUnicode_FromString(phrases[i][1]);
        PyObject *next = from && to ? PyUnicode_Replace(text, from, to, -1) : NULL;
        Py_XDECREF(from);
        Py_XDECREF(to);
        Py_SETREF(text, next);
    }
    const char *utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
    if (!utf8 || !strstr(utf8, "ct_")) return text;
    size_t n = strlen(utf8);
    char *out = PyMem_Malloc(2 * n + 1); /* "ct__x" (5 bytes and up) becomes "ctensor" (7) */
    if (!out) return Py_DECREF(text), PyErr_NoMemory();
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        bool word_start = i == 0 || !(Py_ISALNUM(utf8[i - 1]) || utf8[i - 1] == '_');
        if (word_start && !strncmp(utf8 + i, "ct__", 4)) {
            memcpy(out + o, "ctensor", 7), o += 7;
            for (i += 4; i < n && (Py_ISALNUM(utf8[i]) || utf8[i] == '_');) i++;
            i--;
        } else if (word_start && !strncmp(utf8 + i, "ct_", 3)) {
            memcpy(out + o, "ct.", 3), o += 3;
            i += 2;
        } else {
            out[o++] = utf8[i];
        }
    }
    PyObject *translated = PyUnicode_FromStringAndSize(out, (Py_ssize_t)o);
    PyMem_Free(out);
    Py_DECREF(text);
    return translated;
}

static PyObject *class_of(ct_status status) {
    for (int i = 0; i < CLASS_COUNT; i++)
        if (classes[i].status == status) return classes[i].type;
    return error_base;
}

PyObject *ctpy_raise(void) {
    ct_status status = ct_last_status();
    const char *message = ct_last_error();
    PyObject *text = PyUnicode_FromString(
        message[0] ? message : "ctensor failed without a message (a bug: report it)");
    ct_clear_error();
    PyObject *words = text ? python_words(text) : NULL;
    Py_XDECREF(text);
    if (words) {
        PyErr_SetObject(class_of(status), words);
        Py_DECREF(words);
    }
    return NULL;
}

PyObject *ctpy_raise_status(ct_status status, const char *format, ...) {
    va_list args;
    va_start(args, format);
    PyObject *text = PyUnicode_FromFormatV(format, args);
    va_end(args);
    PyObject *words = text ? python_words(text) : NULL;
    Py_XDECREF(text);
    if (words) {
        PyErr_SetObject(class_of(status), words);
        Py_DECREF(words);
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

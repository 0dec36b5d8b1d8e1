/* Tensor's exchange with other libraries: the buffer protocol (CPU arrays, no copy),
 * numpy() and __array__ (CPU only: a GPU array raises TypeError saying to call .cpu()
 * first, as PyTorch and CuPy refuse implicit transfers), tolist(), and DLPack both ways
 * (__dlpack__ with versioned 1.x and legacy capsules, __dlpack_device__, from_dlpack),
 * without copies on the CPU and on CUDA. */
#include "ctpy_impl.h"
#include "dlpack_impl.h"

/* ---- the buffer protocol ---- */

const char *ctpy_buffer_format(ct_dtype dtype) {
    switch (dtype) {
#define FORMAT_CASE(name, NAME, value, size, kind, ctype, numpy, buffer, ...)                      \
    case CT_##NAME: return buffer;
        CT_DTYPES(FORMAT_CASE)
#undef FORMAT_CASE
    }
    return NULL;
}

/* Why t cannot be read in host memory without a copy, or NULL when it can. */
static const char *not_on_host(const ct_tensor *t) {
    return ct_device_of(t).type == CT_DEVICE_CPU ? NULL : "call .cpu() first";
}

static int tensor_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    ct_tensor *t = ctpy_tensor_of(self);
    char where[32];
    if (not_on_host(t)) {
        PyErr_Format(PyExc_BufferError,
                     "the array is on %s; its memory is not host memory: call .cpu() first",
                     ct_device_str(ct_device_of(t), where, sizeof where));
        return -1;
    }
    const char *format = ctpy_buffer_format(ct_dtype_of(t));
    if (!format) {
        PyErr_SetString(PyExc_BufferError, "bfloat16 has no buffer format: astype(float32) first");
        return -1;
    }
    if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !ct_is_contiguous(t)) {
        PyErr_SetString(PyExc_BufferError, "the array is not contiguous: ask for strides");
        return -1;
    }
    int ndim = ct_ndim(t);
    Py_ssize_t *sizes = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(2 * ndim + 1));
    if (!sizes) return PyErr_NoMemory(), -1;
    size_t itemsize = ct_dtype_size(ct_dtype_of(t));
    for (int d = 0; d < ndim; d++) {
        sizes[d] = (Py_ssize_t)ct_shape(t)[d];
        sizes[ndim + d] = (Py_ssize_t)(ct_strides(t)[d] * (int64_t)itemsize);
    }
    view->obj = Py_NewRef(self);
    view->buf = ct_data_ptr(t);
    view->len = (Py_ssize_t)(ct_numel(t) * (int64_t)itemsize);
    view->readonly = 0;
    view->itemsize = (Py_ssize_t)itemsize;
    view->format = (flags & PyBUF_FORMAT) ? (char *)format : NULL;
    view->ndim = ndim;
    view->shape = (flags & PyBUF_ND) ? sizes : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? sizes + ndim : NULL;
    view->suboffsets = NULL;
    view->internal = sizes;
    return 0;
}

static void tensor_releasebuffer(PyObject *self, Py_buffer *view) { PyMem_Free(view->internal); }

PyBufferProcs ctpy_tensor_buffer = {tensor_getbuffer, tensor_releasebuffer};

/* ---- NumPy ---- */

static PyObject *tensor_numpy(PyObject *self, PyObject *unused) {
    ct_tensor *t = ctpy_tensor_of(self);
    char where[32];
    if (not_on_host(t))
        return PyErr_Format(PyExc_TypeError,
                            "can't convert an array on %s to NumPy: call .cpu() first to copy "
                            "it to host memory",
                            ct_device_str(ct_device_of(t), where, sizeof where));
    if (ct_dtype_of(t) == CT_BF16)
        return PyErr_Format(PyExc_TypeError,
                            "NumPy has no bfloat16: call .astype(ctensor.float32) first");
    PyObject *numpy = PyImport_ImportModule("numpy");
    PyObject *memory = numpy ? PyMemoryView_FromObject(self) : NULL;
    PyObject *out = memory ? PyObject_CallMethod(numpy, "asarray", "O", memory) : NULL;
    Py_XDECREF(memory);
    Py_XDECREF(numpy);
    return out;
}

static PyObject *tensor_array(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", keywords, &dtype, &copy))
        return NULL;
    PyObject *out = tensor_numpy(self, NULL);
    if (!out || (dtype == Py_None && copy != Py_True)) return out;
    PyObject *converted = dtype == Py_None ? PyObject_CallMethod(out, "copy", NULL)
                                           : PyObject_CallMethod(out, "astype", "O", dtype);
    Py_DECREF(out);
    return converted;
}

/* ---- tolist ---- */

static PyObject *nested_list(const ct_tensor *t, int depth, const void *values, int64_t *at,
                             ct_dtype kind) {
    if (depth == ct_ndim(t)) {
        int64_t i = (*at)++;
        if (kind == CT_BOOL) return PyBool_FromLong(((const int64_t *)values)[i] != 0);
        if (kind == CT_I64) return PyLong_FromLongLong(((const int64_t *)values)[i]);
        if (kind == CT_U64) return PyLong_FromUnsignedLongLong(((const uint64_t *)values)[i]);
        if (kind == CT_C128) {
            const ct_complex128 *z = (const ct_complex128 *)values + i;
            return PyComplex_FromDoubles(z->re, z->im);
        }
        return PyFloat_FromDouble(((const double *)values)[i]);
    }
    PyObject *list = PyList_New(ct_shape(t)[depth]);
    for (int64_t i = 0; list && i < ct_shape(t)[depth]; i++) {
        PyObject *item = nested_list(t, depth + 1, values, at, kind);
        if (!item) return Py_DECREF(list), NULL;
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *tensor_tolist(PyObject *self, PyObject *unused) {
    ct_tensor *t = ctpy_tensor_of(self);
    ct_dtype dtype = ct_dtype_of(t);
    ct_dtype kind = ct_dtype_is_floating(dtype)  ? CT_F64
                    : ct_dtype_is_complex(dtype) ? CT_C128
                    : dtype == CT_BOOL           ? CT_BOOL
                    : dtype == CT_U64            ? CT_U64
                                                 : CT_I64;
    int64_t count = ct_numel(t);
    size_t size = kind == CT_C128 ? 16 : 8;
    void *values = PyMem_Malloc((size_t)(count ? count : 1) * size);
    if (!values) return PyErr_NoMemory();
    ct_tensor *wide;
    ct_status status = CT_ERR_INVALID_ARG;
    CTPY_NOGIL(wide = ct_cast(t, kind == CT_BOOL ? CT_I64 : kind);
               if (wide) status = ct_copy_to_host(wide, values, (size_t)count * size));
    ct_release(wide);
    int64_t at = 0;
    PyObject *out = ctpy_check(status) < 0 ? NULL : nested_list(t, 0, values, &at, kind);
    PyMem_Free(values);
    return out;
}

/* ---- DLPack export ---- */

/* The table's DLPack columns: one lane of dl_bits bits of type code dl_code. */
static ctpy_dl_dtype dl_dtype(ct_dtype dtype) {
    switch (dtype) {
#define DL_CASE(name, NAME, value, size, kind, ctype, numpy, buffer, dl_code, dl_bits, ...)        \
    case CT_##NAME: return (ctpy_dl_dtype){CTPY_DL_##dl_code, dl_bits, 1};
        CT_DTYPES(DL_CASE)
#undef DL_CASE
    }
    return (ctpy_dl_dtype){0, 0, 0};
}

static ctpy_dl_device dl_device(ct_device device) {
    if (device.type == CT_DEVICE_CPU) return (ctpy_dl_device){CTPY_DL_CPU, 0};
    ct_device_properties info;
    int physical = ct_device_info(device, &info) == CT_OK ? info.physical_index : device.index;
    ct_clear_error();
    return (ctpy_dl_device){CTPY_DL_CUDA, physical};
}

/* The exported tensor's memory: the managed struct, its shape and strides, one block. */
typedef struct export_block {
    union {
        ctpy_dl_managed legacy;
        ctpy_dl_managed_versioned versioned;
    } managed;
    int64_t sizes[2 * CT_MAX_DIMS];
} export_block;

static void free_export(export_block *block, void *ctx) {
    ct_release(ctx);
    PyMem_RawFree(block);
}

static void delete_legacy(ctpy_dl_managed *m) { free_export((export_block *)m, m->manager_ctx); }
static void delete_versioned(ctpy_dl_managed_versioned *m) {
    free_export((export_block *)m, m->manager_ctx);
}

static void capsule_legacy(PyObject *capsule) {
    if (!PyCapsule_IsValid(capsule, "dltensor")) return; /* consumed */
    ctpy_dl_managed *m = PyCapsule_GetPointer(capsule, "dltensor");
    m->deleter(m);
}

static void capsule_versioned(PyObject *capsule) {
    if (!PyCapsule_IsValid(capsule, "dltensor_versioned")) return;
    ctpy_dl_managed_versioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    m->deleter(m);
}

static PyObject *export_capsule(ct_tensor *t, bool versioned) {
    export_block *block = PyMem_RawCalloc(1, sizeof *block);
    if (!block) return PyErr_NoMemory();
    int ndim = ct_ndim(t);
    memcpy(block->sizes, ct_shape(t), sizeof(int64_t) * ndim);
    memcpy(block->sizes + ndim, ct_strides(t), sizeof(int64_t) * ndim);
    ctpy_dl_tensor dl = {ct_data_ptr(t), dl_device(ct_device_of(t)), ndim, dl_dtype(ct_dtype_of(t)),
                         block->sizes,   block->sizes + ndim,        0};
    ct_retain(t);
    PyObject *capsule;
    if (versioned) {
        block->managed.versioned = (ctpy_dl_managed_versioned){
            {CTPY_DLPACK_MAJOR, CTPY_DLPACK_MINOR}, t, delete_versioned, 0, dl};
        capsule = PyCapsule_New(&block->managed.versioned, "dltensor_versioned", capsule_versioned);
    } else {
        block->managed.legacy = (ctpy_dl_managed){dl, t, delete_legacy};
        capsule = PyCapsule_New(&block->managed.legacy, "dltensor", capsule_legacy);
    }
    if (!capsule) free_export(block, t);
    return capsule;
}

/* Whether max_version (None or a (major, minor) tuple) lets ctensor give a 1.x capsule. */
static int wants_versioned(PyObject *max_version) {
    if (max_version == Py_None) return 0;
    int major, minor;
    if (!PyTuple_Check(max_version) ||
        !PyArg_ParseTuple(max_version, "ii:__dlpack__ max_version", &major, &minor)) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "__dlpack__: max_version must be None or a (major, minor) tuple of "
                         "ints, not %.200R",
                         max_version);
        }
        return -1;
    }
    return major >= 1;
}

static PyObject *tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *target = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", keywords, &stream,
                                     &max_version, &target, &copy))
        return NULL;
    int versioned = wants_versioned(max_version);
    if (versioned < 0) return NULL;
    ct_tensor *t = ctpy_tensor_of(self);
    ctpy_dl_device here = dl_device(ct_device_of(t));
    bool to_host = false;
    if (target != Py_None) {
        int type, id;
        if (!PyTuple_Check(target) ||
            !PyArg_ParseTuple(target, "ii:__dlpack__ dl_device", &type, &id)) {
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError,
                             "__dlpack__: dl_device must be None or a (device_type, device_id) "
                             "tuple of ints, not %.200R",
                             target);
            }
            return NULL;
        }
        /* The standard lets a producer copy to the host (kDLCPU) when asked, unless copy is
         * False; any other device is the consumer's to reach. */
        to_host = type == CTPY_DL_CPU && here.device_type != CTPY_DL_CPU;
        if (to_host && copy == Py_False)
            return PyErr_Format(PyExc_BufferError,
                                "__dlpack__: the array is on DLPack device (%d, %d), and "
                                "dl_device=(%d, %d) with copy=False forbids the copy to the host",
                                here.device_type, here.device_id, type, id);
        if (!to_host && (type != here.device_type || id != here.device_id))
            return PyErr_Format(PyExc_BufferError,
                                "__dlpack__: the array is on DLPack device (%d, %d), not (%d, "
                                "%d); move it with to_device() first",
                                here.device_type, here.device_id, type, id);
    }
    if (here.device_type == CTPY_DL_CUDA && !to_host) {
        /* The consumer reads on its own stream: let ctensor's queued work finish first. */
        long s = stream == Py_None ? 0 : PyLong_AsLong(stream);
        if (s == -1 && PyErr_Occurred()) return NULL;
        ct_status status = CT_OK;
        if (s != -1) CTPY_NOGIL(status = ct_synchronize(ct_device_of(t)));
        if (ctpy_check(status) < 0) return NULL;
    } else if (stream != Py_None) {
        return PyErr_Format(PyExc_ValueError,
                            "__dlpack__: stream must be None for an export to the CPU");
    }
    if (copy != Py_True && !to_host) return export_capsule(t, versioned);
    ct_tensor *clone;
    /* ct_to synchronises: the host copy is complete when it returns. */
    CTPY_NOGIL(clone = to_host ? ct_to(t, (ct_device){CT_DEVICE_CPU, 0}) : ct_clone(t));
    if (!clone) return ctpy_raise();
    PyObject *capsule = export_capsule(clone, versioned);
    ct_release(clone);
    if (capsule && versioned)
        ((ctpy_dl_managed_versioned *)PyCapsule_GetPointer(capsule, "dltensor_versioned"))->flags |=
            CTPY_DL_FLAG_IS_COPIED;
    return capsule;
}

static PyObject *tensor_dlpack_device(PyObject *self, PyObject *unused) {
    ctpy_dl_device d = dl_device(ct_device_of(ctpy_tensor_of(self)));
    return Py_BuildValue("(ii)", d.device_type, d.device_id);
}

/* ---- DLPack import ---- */

typedef struct import_context {
    void *managed;
    bool versioned;
} import_context;

/* Gives an imported tensor back to its producer, on any thread (the producer's deleter may
 * need the GIL, as NumPy's does; it takes it itself). */
static void release_import(void *context) {
    import_context *c = context;
    if (c->versioned) {
        ctpy_dl_managed_versioned *m = c->managed;
        if (m->deleter) m->deleter(m);
    } else {
        ctpy_dl_managed *m = c->managed;
        if (m->deleter) m->deleter(m);
    }
    PyMem_RawFree(c);
}

static int ct_dtype_of_dl(ctpy_dl_dtype d, ct_dtype *out) {
    for (int i = 0; i < CT_DTYPE_COUNT; i++) {
        ctpy_dl_dtype mine = dl_dtype((ct_dtype)i);
        if (mine.code == d.code && mine.bits == d.bits && d.lanes == 1) return *out = i, 0;
    }
    ctpy_raise_status(CT_ERR_DTYPE,
                      "from_dlpack: DLPack dtype (code %d, %d bits, %d lanes) has no ctensor "
                      "dtype",
                      d.code, d.bits, d.lanes);
    return -1;
}

static int ct_device_of_dl(ctpy_dl_device d, ct_device *out) {
    if (d.device_type == CTPY_DL_CPU || d.device_type == CTPY_DL_CUDA_HOST) return *out = CT_CPU, 0;
    if (d.device_type == CTPY_DL_CUDA) return *out = (ct_device){CT_DEVICE_CUDA, d.device_id}, 0;
    ctpy_raise_status(CT_ERR_DEVICE_UNAVAILABLE,
                      "from_dlpack: DLPack device type %d is neither the CPU nor CUDA",
                      d.device_type);
    return -1;
}

/* A tensor over the capsule's memory; the capsule is marked used on success. */
static ct_tensor *import_capsule(PyObject *capsule) {
    bool versioned = PyCapsule_IsValid(capsule, "dltensor_versioned");
    if (!versioned && !PyCapsule_IsValid(capsule, "dltensor")) {
        PyErr_SetString(PyExc_TypeError, "from_dlpack: __dlpack__ gave no unused DLPack capsule");
        return NULL;
    }
    void *managed = PyCapsule_GetPointer(capsule, versioned ? "dltensor_versioned" : "dltensor");
    ctpy_dl_tensor *dl = versioned ? &((ctpy_dl_managed_versioned *)managed)->dl_tensor
                                   : &((ctpy_dl_managed *)managed)->dl_tensor;
    if (versioned && ((ctpy_dl_managed_versioned *)managed)->version.major > CTPY_DLPACK_MAJOR) {
        PyErr_SetString(PyExc_BufferError, "from_dlpack: a DLPack version newer than 1.x");
        return NULL;
    }
    bool read_only =
        versioned && (((ctpy_dl_managed_versioned *)managed)->flags & CTPY_DL_FLAG_READ_ONLY);
    ct_dtype dtype;
    ct_device device;
    if (ct_dtype_of_dl(dl->dtype, &dtype) < 0 || ct_device_of_dl(dl->device, &device) < 0)
        return NULL;
    import_context *context = PyMem_RawMalloc(sizeof *context);
    if (!context) return (ct_tensor *)PyErr_NoMemory();
    *context = (import_context){managed, versioned};
    ct_tensor *t = ct_from_external((char *)dl->data + dl->byte_offset, dl->ndim, dl->shape,
                                    dl->strides, dtype, device, release_import, context);
    if (!t) {
        PyMem_RawFree(context);
        return ctpy_raise(), NULL;
    }
    PyCapsule_SetName(capsule, versioned ? "used_dltensor_versioned" : "used_dltensor");
    if (!read_only) return t;
    /* ctensor's arrays are writable: a read-only producer's memory is copied. */
    ct_tensor *copy;
    CTPY_NOGIL(copy = ct_clone(t));
    ct_release(t);
    if (!copy) ctpy_raise();
    return copy;
}

/* obj.__dlpack__(max_version=(1, 0)), or the legacy call for a producer that predates it. */
static PyObject *call_dlpack(PyObject *obj) {
    PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
    if (!method) return NULL;
    PyObject *kwargs =
        Py_BuildValue("{s(ii)}", "max_version", CTPY_DLPACK_MAJOR, CTPY_DLPACK_MINOR);
    PyObject *empty = PyTuple_New(0);
    PyObject *capsule = kwargs && empty ? PyObject_Call(method, empty, kwargs) : NULL;
    if (!capsule && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        capsule = PyObject_CallNoArgs(method);
    }
    Py_XDECREF(empty);
    Py_XDECREF(kwargs);
    Py_DECREF(method);
    return capsule;
}

PyObject *ctpy_from_dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"x", "device", "copy", NULL};
    PyObject *x, *copy = Py_None;
    ct_device device = CT_DEFAULT;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O&O:from_dlpack", keywords, &x,
                                     ctpy_opt_device, &device, &copy))
        return NULL;
    ct_tensor *t;
    if (ctpy_is_tensor(x)) {
        t = ct_retain(ctpy_tensor_of(x));
    } else {
        PyObject *capsule = call_dlpack(x);
        if (!capsule) return NULL;
        t = import_capsule(capsule);
        Py_DECREF(capsule);
        if (!t) return NULL;
    }
    ct_tensor *next = t;
    if (device.type != CT_DEVICE_DEFAULT && !ct_device_equal(device, ct_device_of(t)))
        CTPY_NOGIL(next = ct_to(t, device));
    else if (copy == Py_True)
        CTPY_NOGIL(next = ct_clone(t));
    if (next != t) ct_release(t);
    return ctpy_wrap(next);
}

PyMethodDef ctpy_interop_methods[] = {
    {"numpy", tensor_numpy, METH_NOARGS,
     "The array as a NumPy array sharing its memory (CPU arrays only: .cpu() first)."},
    {"__array__", KW tensor_array, KWARGS, "NumPy's conversion (CPU arrays only)."},
    {"tolist", tensor_tolist, METH_NOARGS, "The values as nested Python lists."},
    {"__dlpack__", KW tensor_dlpack, KWARGS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack "
     "capsule (versioned when max_version >= (1, 0)) sharing the array's memory."},
    {"__dlpack_device__", tensor_dlpack_device, METH_NOARGS,
     "(device type, device id) in DLPack's numbering."},
    {0}, /* sentinel */
};

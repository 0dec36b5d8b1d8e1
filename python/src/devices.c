/* Devices from Python: ctensor.devices(), default_device(), synchronize(),
 * configure_logical_devices(), set_soft_placement(), and the ctensor.cuda namespace as
 * torch.cuda has it (is_available, device_count, current_device, get_device_properties,
 * get_device_name, memory_allocated, max_memory_allocated, memory_reserved,
 * reset_peak_memory_stats, empty_cache, synchronize, manual_seed, manual_seed_all) plus
 * unavailable_reason. A CUDA device argument is an index (cuda:N), a string or a
 * ct.device; None is the current device. */
#include "ctpy_impl.h"

static int device_type_of(PyObject *o, ct_device_type *out) {
    const char *text = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (text && (!strcmp(text, "cpu") || !strcmp(text, "CPU"))) return *out = CT_DEVICE_CPU, 0;
    if (text && (!strcmp(text, "cuda") || !strcmp(text, "gpu") || !strcmp(text, "GPU")))
        return *out = CT_DEVICE_CUDA, 0;
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "device type %R: expected 'cpu' or 'cuda'", o);
    return -1;
}

static PyObject *py_devices(PyObject *self, PyObject *unused) {
    ct_device_type types[8];
    int kinds = ct_device_types(types, 8);
    PyObject *list = PyList_New(0);
    /* The CPU's first: the reverse of the order "auto" tries. */
    for (int k = (kinds < 8 ? kinds : 8) - 1; list && k >= 0; k--)
        for (int i = 0, n = ct_device_count(types[k]); list && i < n; i++) {
            PyObject *o = ctpy_device_object((ct_device){types[k], i});
            if (!o || PyList_Append(list, o) < 0) Py_CLEAR(list);
            Py_XDECREF(o);
        }
    ct_clear_error();
    return list;
}

static PyObject *py_default_device(PyObject *self, PyObject *unused) {
    return ctpy_device_object(ct_default_device());
}

static PyObject *py_synchronize(PyObject *self, PyObject *args) {
    ct_device device = CT_DEFAULT;
    if (!PyArg_ParseTuple(args, "|O&:synchronize", ctpy_opt_device, &device)) return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_synchronize(device));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_configure_logical_devices(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"type", "n", "memory_limits", "physical_index", NULL};
    PyObject *type, *limits = Py_None;
    int n, physical = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi|Oi:configure_logical_devices", keywords,
                                     &type, &n, &limits, &physical))
        return NULL;
    ct_device_type t;
    if (device_type_of(type, &t) < 0) return NULL;
    size_t bytes[CT_MAX_LOGICAL_DEVICES];
    if (limits != Py_None) {
        PyObject *seq = PySequence_Fast(limits, "memory_limits must be a list of byte counts");
        if (!seq) return NULL;
        Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t i = 0; i < count && i < CT_MAX_LOGICAL_DEVICES; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
            bytes[i] = item == Py_None ? 0 : PyLong_AsSize_t(item);
        }
        Py_DECREF(seq);
        if (PyErr_Occurred()) return NULL;
        if (count != n)
            return PyErr_Format(PyExc_ValueError,
                                "memory_limits has %zd entries for %d logical devices", count, n);
    }
    if (ctpy_check(ct_configure_logical_devices(t, physical, n, limits == Py_None ? NULL : bytes)) <
        0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_set_soft_placement(PyObject *self, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    ct_set_soft_placement(on);
    Py_RETURN_NONE;
}

PyMethodDef ctpy_device_functions[] = {
    {"devices", py_devices, METH_NOARGS, "Every (logical) device present: cpu, then cuda."},
    {"default_device", py_default_device, METH_NOARGS, "This thread's default placement."},
    {"synchronize", py_synchronize, METH_VARARGS,
     "synchronize(device=None): wait until the device's queued work has finished."},
    {"configure_logical_devices", KW py_configure_logical_devices, KWARGS,
     "configure_logical_devices(type, n, memory_limits=None, physical_index=0): split a "
     "physical device into n logical devices before its first use."},
    {"set_soft_placement", py_set_soft_placement, METH_O,
     "set_soft_placement(on): an unavailable device falls back to the CPU with a warning."},
    {0}, /* sentinel */
};

/* ---- ctensor.cuda ---- */

static PyObject *cuda_is_available(PyObject *self, PyObject *unused) {
    bool available;
    CTPY_NOGIL(available = ct_cuda_is_available());
    return PyBool_FromLong(available);
}

static PyObject *cuda_device_count(PyObject *self, PyObject *unused) {
    int n;
    CTPY_NOGIL(n = ct_cuda_is_available() ? ct_device_count(CT_DEVICE_CUDA) : 0);
    ct_clear_error();
    return PyLong_FromLong(n);
}

static PyObject *cuda_unavailable_reason(PyObject *self, PyObject *unused) {
    return PyUnicode_FromString(ct_cuda_unavailable_reason());
}

/* The current CUDA device: the default placement when it is a CUDA device, else cuda:0;
 * DeviceUnavailableError with the reason when CUDA cannot be used. */
static int current_cuda(ct_device *out) {
    bool available;
    CTPY_NOGIL(available = ct_cuda_is_available());
    if (!available) {
        ctpy_raise_status(CT_ERR_DEVICE_UNAVAILABLE, "no CUDA device: %s",
                          ct_cuda_unavailable_reason());
        return -1;
    }
    ct_device d = ct_default_device();
    *out = d.type == CT_DEVICE_CUDA ? d : (ct_device){CT_DEVICE_CUDA, 0};
    return 0;
}

/* A converter: an index (cuda:N), a string, a ct.device, or None (the current device). */
static int cuda_device_arg(PyObject *o, void *out) {
    ct_device *device = out;
    if (o == Py_None) return current_cuda(device) == 0;
    if (PyLong_Check(o)) {
        int overflow;
        long index = PyLong_AsLongAndOverflow(o, &overflow);
        if (overflow || index < 0 || index > INT32_MAX) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "CUDA device index %R is out of range", o);
            return 0;
        }
        *device = (ct_device){CT_DEVICE_CUDA, (int)index};
        return 1;
    }
    return ctpy_opt_device(o, device);
}

static PyObject *cuda_current_device(PyObject *self, PyObject *unused) {
    ct_device d;
    return current_cuda(&d) < 0 ? NULL : PyLong_FromLong(d.index);
}

static PyObject *cuda_synchronize(PyObject *self, PyObject *args) {
    ct_device device;
    PyObject *arg = Py_None;
    if (!PyArg_ParseTuple(args, "|O:synchronize", &arg) || !cuda_device_arg(arg, &device))
        return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_synchronize(device));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

/* One field of a CUDA device's memory statistics. */
typedef enum memory_field { ALLOCATED, PEAK_ALLOCATED, RESERVED } memory_field;

static PyObject *memory_field_of(PyObject *args, const char *format, memory_field field) {
    ct_device device;
    PyObject *arg = Py_None;
    if (!PyArg_ParseTuple(args, format, &arg) || !cuda_device_arg(arg, &device)) return NULL;
    ct_memory_statistics s;
    if (ctpy_check(ct_memory_stats(device, &s)) < 0) return NULL;
    size_t value = field == ALLOCATED        ? s.allocated
                   : field == PEAK_ALLOCATED ? s.peak_allocated
                                             : s.reserved;
    return PyLong_FromSize_t(value);
}

static PyObject *cuda_memory_allocated(PyObject *self, PyObject *args) {
    return memory_field_of(args, "|O:memory_allocated", ALLOCATED);
}

static PyObject *cuda_max_memory_allocated(PyObject *self, PyObject *args) {
    return memory_field_of(args, "|O:max_memory_allocated", PEAK_ALLOCATED);
}

static PyObject *cuda_memory_reserved(PyObject *self, PyObject *args) {
    return memory_field_of(args, "|O:memory_reserved", RESERVED);
}

typedef ct_status (*device_call)(ct_device);

static PyObject *on_cuda(PyObject *args, const char *format, device_call fn) {
    ct_device device;
    PyObject *arg = Py_None;
    if (!PyArg_ParseTuple(args, format, &arg) || !cuda_device_arg(arg, &device)) return NULL;
    ct_status status;
    CTPY_NOGIL(status = fn(device));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *cuda_reset_peak(PyObject *self, PyObject *args) {
    return on_cuda(args, "|O:reset_peak_memory_stats", ct_reset_peak_memory);
}

static PyObject *cuda_empty_cache(PyObject *self, PyObject *args) {
    return on_cuda(args, "|O:empty_cache", ct_empty_cache);
}

/* One Philox stream serves every device: seeding it seeds the CPU's draws too. */
static PyObject *cuda_manual_seed(PyObject *self, PyObject *arg) {
    unsigned long long seed = PyLong_AsUnsignedLongLongMask(arg);
    if (PyErr_Occurred()) return NULL;
    ct_manual_seed(seed);
    Py_RETURN_NONE;
}

/* torch.cuda.get_device_properties's object: attributes name, total_memory, major, minor,
 * multi_processor_count (PyTorch's names), and ctensor's free_memory, memory_limit,
 * physical_index, is_logical. */
static PyObject *cuda_device_properties(PyObject *self, PyObject *args) {
    ct_device device;
    PyObject *arg = Py_None;
    if (!PyArg_ParseTuple(args, "|O:get_device_properties", &arg) || !cuda_device_arg(arg, &device))
        return NULL;
    ct_device_properties p;
    if (ctpy_check(ct_device_info(device, &p)) < 0) return NULL;
    PyObject *fields = Py_BuildValue(
        "{s:s,s:n,s:i,s:i,s:i,s:n,s:n,s:i,s:O}", "name", p.name, "total_memory",
        (Py_ssize_t)p.memory_total, "major", p.compute_capability_major, "minor",
        p.compute_capability_minor, "multi_processor_count", p.multiprocessors, "free_memory",
        (Py_ssize_t)p.memory_free, "memory_limit", (Py_ssize_t)p.memory_limit, "physical_index",
        p.physical_index, "is_logical", p.is_logical ? Py_True : Py_False);
    return ctpy_namespace_of(fields);
}

static PyObject *cuda_device_name(PyObject *self, PyObject *args) {
    ct_device device;
    PyObject *arg = Py_None;
    if (!PyArg_ParseTuple(args, "|O:get_device_name", &arg) || !cuda_device_arg(arg, &device))
        return NULL;
    ct_device_properties p;
    if (ctpy_check(ct_device_info(device, &p)) < 0) return NULL;
    return PyUnicode_FromString(p.name);
}

static PyObject *device_properties(PyObject *self, PyObject *args) {
    ct_device device;
    if (!PyArg_ParseTuple(args, "O&:get_device_properties", ctpy_opt_device, &device)) return NULL;
    ct_device_properties p;
    if (ctpy_check(ct_device_info(device, &p)) < 0) return NULL;
    return Py_BuildValue("{s:s,s:n,s:n,s:n,s:(ii),s:i,s:i,s:O}", "name", p.name, "total_memory",
                         (Py_ssize_t)p.memory_total, "free_memory", (Py_ssize_t)p.memory_free,
                         "memory_limit", (Py_ssize_t)p.memory_limit, "compute_capability",
                         p.compute_capability_major, p.compute_capability_minor, "multiprocessors",
                         p.multiprocessors, "physical_index", p.physical_index, "is_logical",
                         p.is_logical ? Py_True : Py_False);
}

static PyMethodDef cuda_functions[] = {
    {"is_available", cuda_is_available, METH_NOARGS, "Whether a usable CUDA device is present."},
    {"device_count", cuda_device_count, METH_NOARGS, "The number of (logical) CUDA devices."},
    {"unavailable_reason", cuda_unavailable_reason, METH_NOARGS,
     "Why CUDA cannot be used, in one line ('' when it can)."},
    {"current_device", cuda_current_device, METH_NOARGS,
     "The current CUDA device's index (the default placement's when it is CUDA, else 0)."},
    {"synchronize", cuda_synchronize, METH_VARARGS,
     "synchronize(device=None): wait for the device's queued work."},
    {"get_device_properties", cuda_device_properties, METH_VARARGS,
     "get_device_properties(device=None): name, total_memory, major, minor, "
     "multi_processor_count, ..."},
    {"get_device_name", cuda_device_name, METH_VARARGS, "get_device_name(device=None)."},
    {"memory_allocated", cuda_memory_allocated, METH_VARARGS,
     "memory_allocated(device=None): bytes in live blocks."},
    {"max_memory_allocated", cuda_max_memory_allocated, METH_VARARGS,
     "max_memory_allocated(device=None): the peak of memory_allocated since the start or "
     "reset_peak_memory_stats."},
    {"memory_reserved", cuda_memory_reserved, METH_VARARGS,
     "memory_reserved(device=None): bytes held by the pool, live or cached."},
    {"reset_peak_memory_stats", cuda_reset_peak, METH_VARARGS,
     "reset_peak_memory_stats(device=None)."},
    {"empty_cache", cuda_empty_cache, METH_VARARGS,
     "empty_cache(device=None): give cached blocks back."},
    {"manual_seed", cuda_manual_seed, METH_O,
     "manual_seed(seed): reseed the one Philox stream (every device's, the CPU's too)."},
    {"manual_seed_all", cuda_manual_seed, METH_O, "manual_seed_all(seed): as manual_seed."},
    {0}, /* sentinel */
};

static struct PyModuleDef cuda_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ctensor.cuda",
    .m_doc = "CUDA devices: availability and why not.",
    .m_size = -1,
    .m_methods = cuda_functions,
};

static PyMethodDef properties_def = {"get_device_properties", device_properties, METH_VARARGS,
                                     "get_device_properties(device): name, memory, capability."};

int ctpy_devices_init(PyObject *module) {
    if (PyType_Ready(&ctpy_device_type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "device", (PyObject *)&ctpy_device_type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "Device", (PyObject *)&ctpy_device_type) < 0) return -1;
    PyObject *cuda = PyModule_Create(&cuda_module);
    if (!cuda) return -1;
    PyObject *properties = PyCFunction_New(&properties_def, NULL);
    int failed =
        !properties || PyModule_AddObjectRef(module, "get_device_properties", properties) < 0;
    Py_XDECREF(properties);
    if (failed || PyModule_AddObjectRef(module, "cuda", cuda) < 0) return Py_DECREF(cuda), -1;
    PyObject *modules = PyImport_GetModuleDict();
    int status = PyDict_SetItemString(modules, "ctensor.cuda", cuda);
    Py_DECREF(cuda);
    return status;
}

/* The C library's accounting from Python: transfer statistics and the transfer guard
 * (set_transfer_guard works as a call and as a context manager that restores the previous
 * setting), memory statistics, summaries, limits, growth and cache control, and the random
 * stream (manual_seed, rand, randn). */
#include "ctpy_impl.h"

/* ---- transfers ---- */

static PyObject *counter(const ct_transfer_counter *c) {
    return Py_BuildValue("{s:K,s:K}", "count", (unsigned long long)c->count, "bytes",
                         (unsigned long long)c->bytes);
}

static PyObject *direction(const ct_transfer_counter pair[2]) {
    PyObject *e = counter(&pair[0]), *i = counter(&pair[1]);
    PyObject *out = e && i ? Py_BuildValue("{s:O,s:O}", "explicit", e, "implicit", i) : NULL;
    Py_XDECREF(e);
    Py_XDECREF(i);
    return out;
}

static PyObject *py_transfer_stats(PyObject *self, PyObject *unused) {
    ct_transfer_statistics s;
    ct_transfer_stats(&s);
    PyObject *h2d = direction(s.counters[CT_TRANSFER_H2D]);
    PyObject *d2h = direction(s.counters[CT_TRANSFER_D2H]);
    PyObject *d2d = direction(s.counters[CT_TRANSFER_D2D]);
    PyObject *out = h2d && d2h && d2d
                        ? Py_BuildValue("{s:O,s:O,s:O,s:K}", "h2d", h2d, "d2h", d2h, "d2d", d2d,
                                        "refused", (unsigned long long)s.refused)
                        : NULL;
    Py_XDECREF(h2d);
    Py_XDECREF(d2h);
    Py_XDECREF(d2d);
    return out;
}

static PyObject *py_transfer_stats_reset(PyObject *self, PyObject *unused) {
    ct_transfer_stats_reset();
    Py_RETURN_NONE;
}

static const char *const guard_names[] = {"allow", "log", "disallow"};

/* What set_transfer_guard returns: the previous setting, restored on leaving a `with`. */
typedef struct guard_object {
    PyObject_HEAD ct_transfer_guard previous;
    ct_transfer_guard set;
} guard_object;

static PyObject *guard_enter(PyObject *self, PyObject *unused) { return Py_NewRef(self); }

static PyObject *guard_exit(PyObject *self, PyObject *args) {
    ct_set_transfer_guard(((guard_object *)self)->previous);
    Py_RETURN_FALSE;
}

static PyObject *guard_repr(PyObject *self) {
    return PyUnicode_FromFormat("ctensor.set_transfer_guard('%s')",
                                guard_names[((guard_object *)self)->set]);
}

static PyMethodDef guard_methods[] = {
    {"__enter__", guard_enter, METH_NOARGS, NULL},
    {"__exit__", guard_exit, METH_VARARGS, "Restore the guard set before."},
    {0}, /* sentinel */
};

static PyTypeObject guard_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor.TransferGuard",
    .tp_basicsize = sizeof(guard_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The transfer guard just set; as a context manager it restores the previous one.",
    .tp_repr = guard_repr,
    .tp_methods = guard_methods,
};

static PyObject *py_set_transfer_guard(PyObject *self, PyObject *arg) {
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    for (int g = 0; name && g < 3; g++)
        if (strcmp(name, guard_names[g]) == 0) {
            guard_object *o = PyObject_New(guard_object, &guard_type);
            if (!o) return NULL;
            o->set = (ct_transfer_guard)g;
            o->previous = ct_set_transfer_guard((ct_transfer_guard)g);
            return (PyObject *)o;
        }
    return PyErr_Format(PyExc_ValueError,
                        "set_transfer_guard(%R): expected 'allow', 'log' or 'disallow'", arg);
}

static PyObject *py_get_transfer_guard(PyObject *self, PyObject *unused) {
    return PyUnicode_FromString(guard_names[ct_get_transfer_guard()]);
}

/* ---- memory ---- */

static PyObject *py_memory_stats(PyObject *self, PyObject *args) {
    ct_device device = CT_DEFAULT;
    if (!PyArg_ParseTuple(args, "|O&:memory_stats", ctpy_opt_device, &device)) return NULL;
    if (device.type == CT_DEVICE_DEFAULT) device = ct_default_device();
    ct_memory_statistics s;
    if (ctpy_check(ct_memory_stats(device, &s)) < 0) return NULL;
    return Py_BuildValue(
        "{s:n,s:n,s:n,s:n,s:K,s:K,s:K,s:K,s:K,s:n,s:n,s:n,s:O}", "allocated",
        (Py_ssize_t)s.allocated, "reserved", (Py_ssize_t)s.reserved, "peak_allocated",
        (Py_ssize_t)s.peak_allocated, "limit", (Py_ssize_t)s.limit, "segments",
        (unsigned long long)s.segments, "alloc_count", (unsigned long long)s.alloc_count,
        "free_count", (unsigned long long)s.free_count, "cache_hits",
        (unsigned long long)s.cache_hits, "oom_count", (unsigned long long)s.oom_count, "active",
        (Py_ssize_t)s.active, "inactive_split", (Py_ssize_t)s.inactive_split, "largest_free_block",
        (Py_ssize_t)s.largest_free_block, "growth", s.growth ? Py_True : Py_False);
}

static PyObject *py_memory_summary(PyObject *self, PyObject *args) {
    ct_device device = CT_DEFAULT;
    if (!PyArg_ParseTuple(args, "|O&:memory_summary", ctpy_opt_device, &device)) return NULL;
    if (device.type == CT_DEVICE_DEFAULT) device = ct_default_device();
    char *text = ct_memory_summary(device);
    if (!text) return ctpy_raise();
    PyObject *out = PyUnicode_FromString(text);
    ct_free(text);
    return out;
}

typedef ct_status (*device_call)(ct_device);

static PyObject *on_device(PyObject *args, const char *format, device_call fn) {
    ct_device device = CT_DEFAULT;
    if (!PyArg_ParseTuple(args, format, ctpy_opt_device, &device)) return NULL;
    if (device.type == CT_DEVICE_DEFAULT) device = ct_default_device();
    ct_status status;
    CTPY_NOGIL(status = fn(device));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_empty_cache(PyObject *self, PyObject *args) {
    return on_device(args, "|O&:empty_cache", ct_empty_cache);
}

static PyObject *py_reset_peak_memory(PyObject *self, PyObject *args) {
    return on_device(args, "|O&:reset_peak_memory", ct_reset_peak_memory);
}

static PyObject *py_set_memory_limit(PyObject *self, PyObject *args) {
    ct_device device;
    Py_ssize_t bytes;
    if (!PyArg_ParseTuple(args, "O&n:set_memory_limit", ctpy_opt_device, &device, &bytes))
        return NULL;
    if (bytes < 0) return PyErr_Format(PyExc_ValueError, "set_memory_limit: bytes < 0");
    if (device.type == CT_DEVICE_DEFAULT) device = ct_default_device();
    if (ctpy_check(ct_set_memory_limit(device, (size_t)bytes)) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_set_memory_growth(PyObject *self, PyObject *args) {
    ct_device device;
    int grow;
    if (!PyArg_ParseTuple(args, "O&p:set_memory_growth", ctpy_opt_device, &device, &grow))
        return NULL;
    if (device.type == CT_DEVICE_DEFAULT) device = ct_default_device();
    if (ctpy_check(ct_set_memory_growth(device, grow)) < 0) return NULL;
    Py_RETURN_NONE;
}

/* ---- random numbers ---- */

static PyObject *py_manual_seed(PyObject *self, PyObject *arg) {
    unsigned long long seed = PyLong_AsUnsignedLongLong(arg);
    if (seed == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    ct_manual_seed(seed);
    Py_RETURN_NONE;
}

static PyObject *py_initial_seed(PyObject *self, PyObject *unused) {
    return PyLong_FromUnsignedLongLong(ct_initial_seed());
}

typedef ct_tensor *(*random_fn)(int, const int64_t *, ct_dtype, ct_device);

static PyObject *draw(PyObject *args, PyObject *kwargs, random_fn fn) {
    static char *keywords[] = {"dtype", "device", "requires_grad", NULL};
    ct_dtype dtype = CTPY_DEFAULT_FLOAT;
    ct_device device = CT_DEFAULT;
    int requires_grad = 0;
    PyObject *empty = PyTuple_New(0);
    int ok = empty && PyArg_ParseTupleAndKeywords(empty, kwargs, "|O&O&p", keywords, ctpy_to_dtype,
                                                  &dtype, ctpy_opt_device, &device, &requires_grad);
    Py_XDECREF(empty);
    if (!ok) return NULL;
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    PyObject *spec = PyTuple_GET_SIZE(args) == 1 ? PyTuple_GET_ITEM(args, 0) : args;
    if (ctpy_parse_shape(spec, "shape", shape, &ndim) < 0) return NULL;
    ct_tensor *out;
    CTPY_NOGIL(out = fn(ndim, shape, dtype, device));
    return ctpy_wrap_leaf(out, requires_grad);
}

static PyObject *py_rand(PyObject *self, PyObject *args, PyObject *kwargs) {
    return draw(args, kwargs, ct_rand);
}

static PyObject *py_randn(PyObject *self, PyObject *args, PyObject *kwargs) {
    return draw(args, kwargs, ct_randn);
}

PyMethodDef ctpy_stats_functions[] = {
    {"transfer_stats", py_transfer_stats, METH_NOARGS,
     "Counts and bytes of host/device copies: {'h2d': {'explicit': {...}, 'implicit': {...}}, "
     "'d2h': ..., 'd2d': ..., 'refused': n}."},
    {"transfer_stats_reset", py_transfer_stats_reset, METH_NOARGS, "Zero the transfer counters."},
    {"set_transfer_guard", py_set_transfer_guard, METH_O,
     "set_transfer_guard('allow' | 'log' | 'disallow'): for implicit transfers, this thread; "
     "also a context manager that restores the previous guard."},
    {"get_transfer_guard", py_get_transfer_guard, METH_NOARGS, "This thread's transfer guard."},
    {"memory_stats", py_memory_stats, METH_VARARGS,
     "memory_stats(device=None): the pool's counts."},
    {"memory_summary", py_memory_summary, METH_VARARGS, "memory_summary(device=None): a table."},
    {"empty_cache", py_empty_cache, METH_VARARGS, "empty_cache(device=None): free cached blocks."},
    {"reset_peak_memory", py_reset_peak_memory, METH_VARARGS, "reset_peak_memory(device=None)."},
    {"set_memory_limit", py_set_memory_limit, METH_VARARGS,
     "set_memory_limit(device, bytes): limit the device's pool (0: none)."},
    {"set_memory_growth", py_set_memory_growth, METH_VARARGS,
     "set_memory_growth(device, grow): grow on demand, or reserve the limit now."},
    {"manual_seed", py_manual_seed, METH_O, "manual_seed(seed): reseed the Philox stream."},
    {"initial_seed", py_initial_seed, METH_NOARGS, "The seed of the random stream."},
    {"rand", KW py_rand, KWARGS,
     "rand(*shape, dtype=float32, device=None, requires_grad=False): uniform [0, 1)."},
    {"randn", KW py_randn, KWARGS,
     "randn(*shape, dtype=float32, device=None, requires_grad=False): standard normal."},
    {0}, /* sentinel */
};

int ctpy_stats_init(PyObject *module) { return PyType_Ready(&guard_type); }

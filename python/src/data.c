/* ct.data's C side: the readers (data.h) and a handle on the C data loader (loader.h), the
 * one implementation of DataLoader's order, batches and shards (python/ctensor/data.py). A
 * loader over tensors has worker threads in C that shuffle, convert, normalise and copy
 * batches to the device while the Python loop runs; a loader of sample numbers gives each
 * batch's indices, which Python reads from a Python dataset. */
#include <limits.h>

#include "ctpy_impl.h"

typedef struct ctpy_loader {
    PyObject_HEAD ct_loader *loader;
} ctpy_loader;

static void loader_dealloc(PyObject *self) {
    ct_loader *loader = ((ctpy_loader *)self)->loader;
    CTPY_NOGIL(ct_loader_free(loader)); /* joins the workers */
    Py_TYPE(self)->tp_free(self);
}

static ct_loader *loader_of(PyObject *self) { return ((ctpy_loader *)self)->loader; }

static PyObject *l_start(PyObject *self, PyObject *arg) {
    long long epoch = PyLong_AsLongLong(arg);
    if (epoch == -1 && PyErr_Occurred()) return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_loader_start_epoch(loader_of(self), epoch));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

/* (inputs, labels), or None after the epoch's last batch. */
static PyObject *l_next(PyObject *self, PyObject *unused) {
    ct_tensor *x = NULL, *y = NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_loader_next(loader_of(self), &x, &y));
    if (ctpy_check(status) < 0) return NULL;
    if (!x) Py_RETURN_NONE;
    return Py_BuildValue("(NN)", ctpy_wrap(x), ctpy_wrap(y));
}

/* Epoch `epoch` of a loader of sample numbers: a list of its batches' sample lists. The GIL
 * stays held, so that two Python threads cannot rewrite the order at once. */
static PyObject *l_epoch_samples(PyObject *self, PyObject *arg) {
    long long epoch = PyLong_AsLongLong(arg);
    if (epoch == -1 && PyErr_Occurred()) return NULL;
    ct_loader *loader = loader_of(self);
    if (ctpy_check(ct_loader_start_epoch(loader, epoch)) < 0) return NULL;
    int64_t batches = ct_loader_batches(loader);
    PyObject *plan = PyList_New((Py_ssize_t)batches);
    for (int64_t b = 0; plan && b < batches; b++) {
        ct_tensor *samples = ct_loader_batch_samples(loader, b);
        PyObject *list = samples ? PyList_New((Py_ssize_t)ct_size(samples, 0)) : ctpy_raise();
        const int64_t *at = samples ? ct_data_ptr(samples) : NULL;
        for (Py_ssize_t i = 0; list && i < PyList_GET_SIZE(list); i++) {
            PyObject *index = PyLong_FromLongLong(at[i]);
            if (!index)
                Py_CLEAR(list);
            else
                PyList_SET_ITEM(list, i, index);
        }
        ct_release(samples);
        if (!list)
            Py_CLEAR(plan);
        else
            PyList_SET_ITEM(plan, (Py_ssize_t)b, list);
    }
    return plan;
}

static Py_ssize_t l_len(PyObject *self) { return (Py_ssize_t)ct_loader_batches(loader_of(self)); }

static PyMethodDef loader_methods[] = {
    {"start_epoch", l_start, METH_O, "start_epoch(epoch): begin an epoch (its shuffle)."},
    {"next", l_next, METH_NOARGS, "The next (inputs, labels), or None at the epoch's end."},
    {"epoch_samples", l_epoch_samples, METH_O,
     "epoch_samples(epoch): begin an epoch; each batch's sample indices (this shard's)."},
    {0}, /* sentinel */
};

static PySequenceMethods loader_sequence = {.sq_length = l_len};

static PyTypeObject loader_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._ctensor._CLoader",
    .tp_basicsize = sizeof(ctpy_loader),
    .tp_dealloc = loader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A handle on the C data loader (ct.data.DataLoader's engine).",
    .tp_methods = loader_methods,
    .tp_as_sequence = &loader_sequence,
};

/* Up to CT_LOADER_MAX_CHANNELS floats of a sequence into out. */
static int channels(PyObject *seq, double *out) {
    PyObject *fast = PySequence_Fast(seq, "mean and std must be sequences of numbers");
    if (!fast) return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > CT_LOADER_MAX_CHANNELS) {
        Py_DECREF(fast);
        ctpy_raise_status(CT_ERR_INVALID_ARG, "at most %d channels", CT_LOADER_MAX_CHANNELS);
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) out[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
    Py_DECREF(fast);
    return !PyErr_Occurred();
}

/* A failure to make a loader, in the words of `who` (DataLoader): the C message after its
 * function's name. */
static PyObject *raise_for(const char *who) {
    const char *message = ct_last_error(), *rest = strstr(message, ": ");
    if (strncmp(message, "ct_loader_new", 13) != 0 || !rest) return ctpy_raise();
    ctpy_raise_status(ct_last_status(), "%s: %s", who, rest + 2);
    ct_clear_error();
    return NULL;
}

static PyObject *wrap_loader(ct_loader *loader, const char *who) {
    if (!loader) return raise_for(who);
    ctpy_loader *obj = PyObject_New(ctpy_loader, &loader_type);
    if (!obj) {
        ct_loader_free(loader);
        return NULL;
    }
    obj->loader = loader;
    return (PyObject *)obj;
}

/* A loader of sample numbers 0..count-1 (a Python dataset's indices); its errors name `who`. */
static PyObject *py_sample_loader(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"count",       "batch_size",  "shuffle", "drop_last", "seed",
                         "shard_index", "shard_count", "who",     NULL};
    const char *who = "DataLoader";
    long long count, batch;
    unsigned long long seed = 0;
    int shuffle = 0, drop_last = 0;
    ct_loader_options o = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "LL|ppKiis:_sample_loader", kw, &count, &batch,
                                     &shuffle, &drop_last, &seed, &o.shard_index, &o.shard_count,
                                     &who))
        return NULL;
    o.batch_size = batch;
    o.shuffle = shuffle;
    o.drop_last = drop_last;
    o.seed = seed;
    ct_loader *loader;
    CTPY_NOGIL(loader = ct_loader_new_samples(count, &o));
    return wrap_loader(loader, who);
}

static PyObject *py_loader(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {
        "inputs",  "labels",      "batch_size",  "shuffle",      "drop_last",       "seed",
        "workers", "prefetch",    "device",      "pin_memory",   "scale",           "mean",
        "std",     "shard_index", "shard_count", "crop_padding", "horizontal_flip", "timeout",
        NULL};
    PyObject *inputs, *labels, *mean = NULL, *std = NULL;
    ct_loader_options o = {0};
    long long batch;
    unsigned long long seed = 0;
    int shuffle = 0, drop_last = 0, pin = 1, flip = 0;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "O!O!L|ppKiiO&pdOOiiipd:_loader", kw, &ctpy_tensor_type, &inputs,
            &ctpy_tensor_type, &labels, &batch, &shuffle, &drop_last, &seed, &o.workers,
            &o.prefetch, ctpy_opt_device, &o.device, &pin, &o.scale, &mean, &std, &o.shard_index,
            &o.shard_count, &o.crop_padding, &flip, &o.timeout))
        return NULL;
    o.horizontal_flip = flip;
    if ((mean && !channels(mean, o.mean)) || (std && !channels(std, o.std))) return NULL;
    o.batch_size = batch;
    o.shuffle = shuffle;
    o.drop_last = drop_last;
    o.seed = seed;
    o.no_pin_memory = !pin;
    ct_loader *loader;
    CTPY_NOGIL(loader = ct_loader_new(ctpy_tensor_of(inputs), ctpy_tensor_of(labels), &o));
    return wrap_loader(loader, "DataLoader");
}

static PyObject *read_one(PyObject *args, ct_tensor *(*reader)(const char *)) {
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
    ct_tensor *t;
    const char *text = PyBytes_AsString(path);
    CTPY_NOGIL(t = reader(text));
    Py_DECREF(path);
    return ctpy_wrap(t);
}

static PyObject *py_read_idx(PyObject *self, PyObject *args) { return read_one(args, ct_read_idx); }
static PyObject *py_read_npy(PyObject *self, PyObject *args) { return read_one(args, ct_read_npy); }

static PyObject *py_read_csv(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"path", "delimiter", "has_header", "label_column", NULL};
    PyObject *path, *label = NULL;
    ct_csv_options o = ct_csv_options_default();
    const char *delimiter = ",";
    int header = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|spO:read_csv", kw, PyUnicode_FSConverter,
                                     &path, &delimiter, &header, &label))
        return NULL;
    o.delimiter = delimiter[0];
    o.has_header = header;
    if (label == Py_None)
        o.label_column = CT_CSV_NO_LABEL;
    else if (label) {
        int64_t column = 0;
        if (ctpy_int64_value(label, "read_csv: label_column", &column) == 0 &&
            (column > INT_MAX || column < INT_MIN))
            PyErr_Format(PyExc_ValueError, "read_csv: label_column %lld is no column of any file",
                         (long long)column);
        else
            o.label_column = (int)column;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(path);
        return NULL;
    }
    ct_tensor *features = NULL, *labels = NULL;
    ct_status status;
    const char *text = PyBytes_AsString(path);
    CTPY_NOGIL(status = ct_read_csv(text, &o, &features, &labels));
    Py_DECREF(path);
    if (ctpy_check(status) < 0) return NULL;
    if (!labels) return Py_BuildValue("(NO)", ctpy_wrap(features), Py_None);
    return Py_BuildValue("(NN)", ctpy_wrap(features), ctpy_wrap(labels));
}

static PyObject *py_read_cifar10(PyObject *self, PyObject *args) {
    PyObject *dir;
    int train = 1;
    if (!PyArg_ParseTuple(args, "O&|p:read_cifar10", PyUnicode_FSConverter, &dir, &train))
        return NULL;
    ct_tensor *images = NULL, *labels = NULL;
    ct_status status;
    const char *text = PyBytes_AsString(dir);
    CTPY_NOGIL(status = ct_read_cifar10(text, train, &images, &labels));
    Py_DECREF(dir);
    if (ctpy_check(status) < 0) return NULL;
    return Py_BuildValue("(NN)", ctpy_wrap(images), ctpy_wrap(labels));
}

static PyObject *py_fashion_mnist(PyObject *self, PyObject *unused) {
    ct_mnist m;
    ct_status status;
    CTPY_NOGIL(status = ct_load_fashion_mnist(&m));
    if (ctpy_check(status) < 0) return NULL;
    return Py_BuildValue("(NNNN)", ctpy_wrap(m.train_images), ctpy_wrap(m.train_labels),
                         ctpy_wrap(m.test_images), ctpy_wrap(m.test_labels));
}

static PyMethodDef data_functions[] = {
    {"_loader", KW py_loader, KWARGS,
     "_loader(inputs, labels, batch_size, ...): the C data loader."},
    {"_sample_loader", KW py_sample_loader, KWARGS,
     "_sample_loader(count, batch_size, ...): the C data loader of sample numbers."},
    {"_read_idx", py_read_idx, METH_VARARGS, "read_idx(path): an IDX file as a tensor."},
    {"_read_npy", py_read_npy, METH_VARARGS, "read_npy(path): a .npy file as a tensor."},
    {"_read_csv", KW py_read_csv, KWARGS,
     "read_csv(path, delimiter=',', has_header=False, label_column=-1): (features, labels)."},
    {"_read_cifar10", py_read_cifar10, METH_VARARGS,
     "read_cifar10(dir, train=True): (images, labels) of CIFAR-10's binary version."},
    {"_fashion_mnist", py_fashion_mnist, METH_NOARGS,
     "(train_images, train_labels, test_images, test_labels) of Fashion-MNIST."},
    {0}, /* sentinel */
};

int ctpy_data_init(PyObject *module) {
    if (PyType_Ready(&loader_type) < 0) return -1;
    return PyModule_AddFunctions(module, data_functions);
}

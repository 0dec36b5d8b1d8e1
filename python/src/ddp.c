/* ct.nn.parallel.DistributedDataParallel's C side: a handle on one ct_ddp (dist.h) over the
 * world communicator, for a Python module's parameters and buffers. Its forward arms the
 * handle; the next Tensor.backward then runs as ct_ddp_backward, which all-reduces the
 * gradients in buckets while backward goes on (as `ctensor train` does), so that every rank
 * ends backward with the gradients averaged over the ranks. The armed handle is process-wide
 * state guarded by the GIL: one data-parallel model trains at a time, as in PyTorch's loop. */
#include "ctpy_impl.h"

typedef struct ctpy_ddp {
    PyObject_HEAD ct_ddp *ddp;
    int n;
    ct_tensor **tensors; /* retained: the ct_ddp borrows them */
} ctpy_ddp;

static ctpy_ddp *armed; /* a strong reference, dropped by the backward it runs */

static void ddp_dealloc(PyObject *self) {
    ctpy_ddp *d = (ctpy_ddp *)self;
    ct_ddp_free(d->ddp);
    for (int i = 0; d->tensors && i < d->n; i++) ct_release(d->tensors[i]);
    PyMem_Free(d->tensors);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *ddp_arm(PyObject *self, PyObject *unused) {
    Py_XSETREF(armed, (ctpy_ddp *)Py_NewRef(self));
    Py_RETURN_NONE;
}

static PyObject *ddp_disarm(PyObject *self, PyObject *unused) {
    if (armed == (ctpy_ddp *)self) Py_CLEAR(armed);
    Py_RETURN_NONE;
}

static PyObject *ddp_stats(PyObject *self, PyObject *unused) {
    ct_ddp_statistics s;
    if (ctpy_check(ct_ddp_stats(((ctpy_ddp *)self)->ddp, &s)) < 0) return NULL;
    return Py_BuildValue("{sLsLsdsdsdsd}", "steps", (long long)s.steps, "buckets",
                         (long long)s.buckets, "comm_seconds", s.comm_seconds, "hidden_seconds",
                         s.hidden_seconds, "wait_seconds", s.wait_seconds, "step_seconds",
                         s.step_seconds);
}

static PyMethodDef ddp_methods[] = {
    {"arm", ddp_arm, METH_NOARGS, "Hand the next Tensor.backward to this ct_ddp."},
    {"disarm", ddp_disarm, METH_NOARGS, "Take the hand-off back (eval, no_grad forwards)."},
    {"stats", ddp_stats, METH_NOARGS, "The ct_ddp's statistics as a dict."},
    {0}, /* sentinel */
};

static PyTypeObject ddp_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._ctensor._CDDP",
    .tp_basicsize = sizeof(ctpy_ddp),
    .tp_dealloc = ddp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A handle on one ct_ddp: data parallelism for one Python module.",
    .tp_methods = ddp_methods,
};

int ctpy_ddp_backward(const ct_tensor *loss, bool has_gradient, bool retain, ct_status *status) {
    if (!armed) return 0;
    if (has_gradient || retain) {
        ctpy_raise_status(CT_ERR_UNSUPPORTED,
                          "backward of a DistributedDataParallel model's output: only a "
                          "scalar loss's backward() without gradient= or retain_graph= "
                          "(reduce the output to a loss first)");
        return -1;
    }
    ctpy_ddp *d = armed;
    armed = NULL; /* the reference moves to d */
    ct_comm *world = ctpy_world();
    if (!world) {
        Py_DECREF(d);
        return -1;
    }
    int64_t ranks = ct_comm_size(world);
    /* Each rank's loss is the mean over its own batch: weighting each by 1 / ranks makes the
     * sum over the ranks their mean, as PyTorch's DistributedDataParallel averages. */
    CTPY_NOGIL(*status = ct_ddp_backward(d->ddp, loss, 1, ranks));
    Py_DECREF(d);
    return 1;
}

/* _ddp(tensors, buffer_flags, bucket_bytes, first_bucket_bytes): a handle over the world. */
static PyObject *py_ddp(PyObject *self, PyObject *args) {
    PyObject *seq, *flags;
    Py_ssize_t bucket_bytes, first_bucket_bytes;
    if (!PyArg_ParseTuple(args, "OO!nn:_ddp", &seq, &PyList_Type, &flags, &bucket_bytes,
                          &first_bucket_bytes))
        return NULL;
    if (bucket_bytes < 0 || first_bucket_bytes < 0)
        return PyErr_Format(PyExc_ValueError, "DistributedDataParallel: bucket sizes >= 0");
    ct_ddp_options options = {(size_t)bucket_bytes, (size_t)first_bucket_bytes};
    ct_comm *world = ctpy_world();
    int n;
    ct_tensor **tensors = world ? ctpy_tensor_array(seq, &n) : NULL;
    if (!tensors) return NULL;
    /* the tensors held before a flag's __bool__ can run (and change seq) */
    for (int i = 0; i < n; i++) ct_retain(tensors[i]);
    bool *buffer = PyMem_Calloc((size_t)n + 1, sizeof *buffer);
    bool ok = buffer != NULL;
    if (!ok) PyErr_NoMemory();
    if (ok && PyList_GET_SIZE(flags) != n) {
        PyErr_Format(PyExc_ValueError, "_ddp: one buffer flag per tensor");
        ok = false;
    }
    for (int i = 0; ok && i < n; i++) {
        /* re-checked: a flag's __bool__ may change the list */
        PyObject *item = i < PyList_GET_SIZE(flags) ? Py_NewRef(PyList_GET_ITEM(flags, i)) : NULL;
        int flag = item ? PyObject_IsTrue(item) : 0;
        Py_XDECREF(item);
        ok = flag >= 0;
        buffer[i] = flag == 1;
    }
    ctpy_ddp *d = ok ? PyObject_New(ctpy_ddp, &ddp_type) : NULL;
    if (!d) {
        for (int i = 0; i < n; i++) ct_release(tensors[i]);
        PyMem_Free(tensors);
        PyMem_Free(buffer);
        return NULL;
    }
    d->n = n, d->tensors = tensors;
    CTPY_NOGIL(d->ddp = ct_ddp_new_tensors(world, n, tensors, buffer, &options));
    PyMem_Free(buffer);
    if (!d->ddp) {
        ctpy_raise();
        Py_DECREF(d);
        return NULL;
    }
    return (PyObject *)d;
}

static PyMethodDef ddp_functions[] = {
    {"_ddp", py_ddp, METH_VARARGS,
     "_ddp(tensors, buffer_flags, bucket_bytes, first_bucket_bytes): a ct_ddp over the world "
     "(0 bytes: the C defaults)."},
    {0}, /* sentinel */
};

int ctpy_ddp_init(PyObject *module) {
    if (PyType_Ready(&ddp_type) < 0) return -1;
    return PyModule_AddFunctions(module, ddp_functions);
}

/* ct.nn.DataParallel's C side: one rank of the threads engine (ct_comm_threads) per replica,
 * run by ct_comm_spawn as `ctensor train --devices` runs its replicas: each on its own
 * thread, with its device as the default placement and its share of the CPU's cores.
 *
 * _data_parallel(devices) gives a handle with three calls, each returning when every rank
 * is done: run(fn) calls fn(rank) on the replicas' threads (each takes the GIL to run Python;
 * the C library's ops release it, so the replicas' ops overlap) and returns the results in
 * rank order, or raises the first rank's exception; broadcast(lists) copies rank 0's tensors
 * into every rank's (lists[r]: rank r's tensors, in one order on every rank); all_reduce(lists)
 * sums each tensor over the ranks, in place. The collectives run without recording (they
 * overwrite parameters and gradients) and have the communicator's deadline.
 *
 * _set_after_backward(fn) arms fn (None disarms): the next Tensor.backward that succeeds
 * calls fn() once, after the gradients are in, and disarms it; DataParallel's forward arms
 * its all-reduce of the replicas' gradients so. As DistributedDataParallel's hand-off, this
 * is process-wide state guarded by the GIL: one data-parallel model trains at a time. */
#include "ctpy_impl.h"

#define DP_MAX_REPLICAS 64 /* ct_comm_threads' largest group */

/* An exception moved out of the thread state and back (PyErr_Fetch is deprecated from 3.12). */
#if PY_VERSION_HEX >= 0x030C0000
#define TAKE_EXCEPTION() PyErr_GetRaisedException()
#define PUT_EXCEPTION(e) PyErr_SetRaisedException(e)
#else
static PyObject *take_exception(void) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback && value) PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
}
#define TAKE_EXCEPTION() take_exception()
#define PUT_EXCEPTION(e) PyErr_SetObject((PyObject *)Py_TYPE(e), e), Py_DECREF(e)
#endif

typedef struct ctpy_dp {
    PyObject_HEAD int n;
    ct_comm *comms[DP_MAX_REPLICAS];
    ct_device devices[DP_MAX_REPLICAS];
} ctpy_dp;

static void dp_dealloc(PyObject *self) {
    ctpy_dp *d = (ctpy_dp *)self;
    for (int r = 0; r < d->n; r++) ct_comm_free(d->comms[r]);
    Py_TYPE(self)->tp_free(self);
}

/* What one spawn hands its ranks: the Python callable or the tensors, and per rank what came
 * back (a result, an exception, or a C status with its message). */
typedef struct spawn_job {
    PyObject *fn;        /* run */
    ct_tensor **tensors; /* broadcast, all_reduce: rank r's at r * count */
    int count;           /* tensors per rank */
    bool reduce;         /* all_reduce, else broadcast */
    PyObject *results[DP_MAX_REPLICAS];
    PyObject *errors[DP_MAX_REPLICAS]; /* the exception raised */
    ct_status status[DP_MAX_REPLICAS];
    char message[DP_MAX_REPLICAS][512];
} spawn_job;

static int call_python(int rank, ct_comm *comm, ct_device device, void *user) {
    spawn_job *job = user;
    PyGILState_STATE gil = PyGILState_Ensure();
    job->results[rank] = PyObject_CallFunction(job->fn, "i", rank);
    if (!job->results[rank]) job->errors[rank] = TAKE_EXCEPTION();
    PyGILState_Release(gil);
    return job->results[rank] ? 0 : 1;
}

static int collectives(int rank, ct_comm *comm, ct_device device, void *user) {
    spawn_job *job = user;
    ct_status status = ct_no_grad_push();
    for (int i = 0; status == CT_OK && i < job->count; i++) {
        ct_tensor *t = job->tensors[rank * job->count + i];
        status =
            job->reduce ? ct_comm_all_reduce(comm, t, CT_COMM_SUM) : ct_comm_broadcast(comm, t, 0);
    }
    if (status != CT_OK)
        snprintf(job->message[rank], sizeof job->message[rank], "%s", ct_last_error());
    ct_no_grad_pop();
    job->status[rank] = status;
    return status == CT_OK ? 0 : 1;
}

static PyObject *dp_run(PyObject *self, PyObject *fn) {
    ctpy_dp *d = (ctpy_dp *)self;
    spawn_job *job = PyMem_Calloc(1, sizeof *job);
    if (!job) return PyErr_NoMemory();
    job->fn = fn;
    int failed;
    CTPY_NOGIL(failed = ct_comm_spawn(d->n, d->comms, d->devices, call_python, job));
    PyObject *out = failed < 0 ? ctpy_raise() : PyList_New(d->n);
    for (int r = 0; r < d->n; r++) {
        if (out && job->errors[r]) {
            PUT_EXCEPTION(job->errors[r]); /* the first rank's, in rank order */
            job->errors[r] = NULL;
            Py_CLEAR(out);
        }
        Py_XDECREF(job->errors[r]);
        if (out)
            PyList_SET_ITEM(out, r, job->results[r]);
        else
            Py_XDECREF(job->results[r]);
    }
    PyMem_Free(job);
    return out;
}

/* lists: one sequence of tensors per rank, each as long as the others. */
static PyObject *spawn_collectives(ctpy_dp *d, PyObject *lists, bool reduce) {
    PyObject *seq = PySequence_Fast(lists, "DataParallel: one list of tensors per replica");
    if (!seq) return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != d->n) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "DataParallel: %d lists for %d replicas",
                            (int)PySequence_Fast_GET_SIZE(seq), d->n);
    }
    spawn_job *job = PyMem_Calloc(1, sizeof *job);
    ct_tensor **rank_tensors[DP_MAX_REPLICAS] = {0};
    bool ok = job != NULL;
    if (!ok) PyErr_NoMemory();
    for (int r = 0; ok && r < d->n; r++) {
        int count;
        rank_tensors[r] = ctpy_tensor_array(PySequence_Fast_GET_ITEM(seq, r), &count);
        ok = rank_tensors[r] != NULL;
        if (ok && r > 0 && count != job->count) {
            PyErr_Format(PyExc_ValueError, "DataParallel: replica %d has %d tensors, replica 0 %d",
                         r, count, job->count);
            ok = false;
        }
        job->count = count;
    }
    Py_DECREF(seq);
    if (ok) job->tensors = PyMem_Calloc((size_t)d->n * (size_t)job->count + 1, sizeof(ct_tensor *));
    if (ok && !job->tensors) ok = (PyErr_NoMemory(), false);
    for (int r = 0; ok && r < d->n; r++)
        memcpy(job->tensors + (size_t)r * (size_t)job->count, rank_tensors[r],
               (size_t)job->count * sizeof(ct_tensor *));
    int failed = 0;
    if (job) job->reduce = reduce;
    if (ok) CTPY_NOGIL(failed = ct_comm_spawn(d->n, d->comms, d->devices, collectives, job));
    if (ok && failed < 0) ok = (ctpy_raise(), false);
    for (int r = 0; ok && r < d->n; r++)
        if (job->status[r] != CT_OK) {
            ctpy_raise_status(job->status[r], "DataParallel (replica %d): %s", r, job->message[r]);
            ok = false;
        }
    for (int r = 0; r < d->n; r++) PyMem_Free(rank_tensors[r]);
    if (job) PyMem_Free(job->tensors);
    PyMem_Free(job);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyObject *dp_broadcast(PyObject *self, PyObject *lists) {
    return spawn_collectives((ctpy_dp *)self, lists, false);
}

static PyObject *dp_all_reduce(PyObject *self, PyObject *lists) {
    return spawn_collectives((ctpy_dp *)self, lists, true);
}

static PyMethodDef dp_methods[] = {
    {"run", dp_run, METH_O, "run(fn): fn(rank) on every replica's thread; the results in order."},
    {"broadcast", dp_broadcast, METH_O, "broadcast(lists): rank 0's tensors into every rank's."},
    {"all_reduce", dp_all_reduce, METH_O, "all_reduce(lists): each tensor summed over the ranks."},
    {0}, /* sentinel */
};

static PyTypeObject dp_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._ctensor._CDataParallel",
    .tp_basicsize = sizeof(ctpy_dp),
    .tp_dealloc = dp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The threads engine's ranks for ct.nn.DataParallel, one per replica.",
    .tp_methods = dp_methods,
};

/* _data_parallel(devices): a handle over len(devices) ranks of the threads engine. */
static PyObject *py_data_parallel(PyObject *self, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "DataParallel: devices must be a list");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > DP_MAX_REPLICAS) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "DataParallel: %zd devices; 1 to %d", n,
                            DP_MAX_REPLICAS);
    }
    ctpy_dp *d = PyObject_New(ctpy_dp, &dp_type);
    if (!d) {
        Py_DECREF(seq);
        return NULL;
    }
    d->n = 0;
    for (Py_ssize_t r = 0; r < n; r++)
        if (!ctpy_opt_device(PySequence_Fast_GET_ITEM(seq, r), &d->devices[r])) {
            Py_DECREF(seq);
            Py_DECREF(d);
            return NULL;
        }
    Py_DECREF(seq);
    if (ctpy_check(ct_comm_threads((int)n, d->comms)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    d->n = (int)n;
    return (PyObject *)d;
}

static PyObject *after_backward; /* armed callable, or NULL */

static PyObject *py_set_after_backward(PyObject *self, PyObject *fn) {
    if (fn != Py_None && !PyCallable_Check(fn))
        return PyErr_Format(PyExc_TypeError, "_set_after_backward: %R is not callable", fn);
    Py_XSETREF(after_backward, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

int ctpy_after_backward(void) {
    if (!after_backward) return 0;
    PyObject *fn = after_backward;
    after_backward = NULL; /* the reference moves to fn */
    PyObject *result = PyObject_CallNoArgs(fn);
    Py_DECREF(fn);
    Py_XDECREF(result);
    return result ? 0 : -1;
}

static PyMethodDef data_parallel_functions[] = {
    {"_set_after_backward", py_set_after_backward, METH_O,
     "_set_after_backward(fn): the next successful Tensor.backward calls fn() (None: none)."},
    {"_data_parallel", py_data_parallel, METH_O,
     "_data_parallel(devices): the threads engine's ranks for ct.nn.DataParallel."},
    {0}, /* sentinel */
};

int ctpy_data_parallel_init(PyObject *module) {
    if (PyType_Ready(&dp_type) < 0) return -1;
    return PyModule_AddFunctions(module, data_parallel_functions);
}

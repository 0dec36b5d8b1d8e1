/* ct.distributed's C side: the process's world communicator (dist.h: MPI when started by
 * mpirun, else a world of one) and its collectives, in place on tensors of any device.
 * python/ctensor/distributed.py gives them torch.distributed's names. */
#include "ctpy_impl.h"

static ct_comm *world; /* made by _dist_init, freed by _dist_finalize (at exit) */

ct_comm *ctpy_world(void) {
    if (!world)
        ctpy_raise_status(CT_ERR_STATE,
                          "ct.distributed: call ct.distributed.init() before a collective");
    return world;
}

static PyObject *py_init(PyObject *self, PyObject *args) {
    double timeout = 0;
    if (!PyArg_ParseTuple(args, "|d:init", &timeout)) return NULL;
    if (!world) {
        ct_comm *comm;
        CTPY_NOGIL(comm = ct_comm_world());
        if (!comm) return ctpy_raise();
        world = comm;
    }
    if (timeout > 0 && ctpy_check(ct_comm_set_timeout(world, timeout)) < 0) return NULL;
    Py_RETURN_NONE;
}

/* Free the world (finalises MPI); ct.distributed registers it with atexit. */
static PyObject *py_finalize(PyObject *self, PyObject *unused) {
    ct_comm *comm = world;
    world = NULL;
    CTPY_NOGIL(ct_comm_free(comm));
    Py_RETURN_NONE;
}

static PyObject *py_info(PyObject *self, PyObject *unused) {
    if (!world) Py_RETURN_NONE;
    return Py_BuildValue("(iiis)", ct_comm_rank(world), ct_comm_size(world),
                         ct_comm_local_rank(world), ct_comm_engine(world));
}

static int comm_op(const char *name, ct_comm_op *op) {
    if (!strcmp(name, "sum"))
        *op = CT_COMM_SUM;
    else if (!strcmp(name, "avg"))
        *op = CT_COMM_AVG;
    else {
        ctpy_raise_status(CT_ERR_INVALID_ARG, "all_reduce: op is 'sum' or 'avg', not '%s'", name);
        return -1;
    }
    return 0;
}

static PyObject *py_all_reduce(PyObject *self, PyObject *args) {
    PyObject *t;
    const char *op_name = "sum";
    ct_comm_op op;
    if (!PyArg_ParseTuple(args, "O!|s:all_reduce", &ctpy_tensor_type, &t, &op_name) ||
        comm_op(op_name, &op) < 0 || !ctpy_world())
        return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_comm_all_reduce(world, ctpy_tensor_of(t), op));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_broadcast(PyObject *self, PyObject *args) {
    PyObject *t;
    int root = 0;
    if (!PyArg_ParseTuple(args, "O!|i:broadcast", &ctpy_tensor_type, &t, &root) || !ctpy_world())
        return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_comm_broadcast(world, ctpy_tensor_of(t), root));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_all_gather(PyObject *self, PyObject *args) {
    PyObject *t;
    if (!PyArg_ParseTuple(args, "O!:all_gather", &ctpy_tensor_type, &t) || !ctpy_world())
        return NULL;
    ct_tensor *out;
    CTPY_NOGIL(out = ct_comm_all_gather(world, ctpy_tensor_of(t)));
    return ctpy_wrap(out);
}

static PyObject *py_barrier(PyObject *self, PyObject *unused) {
    if (!ctpy_world()) return NULL;
    ct_status status;
    CTPY_NOGIL(status = ct_comm_barrier(world));
    if (ctpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef dist_functions[] = {
    {"_dist_init", py_init, METH_VARARGS, "_dist_init(timeout=0): make the world communicator."},
    {"_dist_finalize", py_finalize, METH_NOARGS, "Free the world communicator."},
    {"_dist_info", py_info, METH_NOARGS, "(rank, size, local_rank, engine), or None."},
    {"_dist_all_reduce", py_all_reduce, METH_VARARGS, "_dist_all_reduce(t, op='sum')."},
    {"_dist_broadcast", py_broadcast, METH_VARARGS, "_dist_broadcast(t, root=0)."},
    {"_dist_all_gather", py_all_gather, METH_VARARGS, "_dist_all_gather(t): (size, ...)."},
    {"_dist_barrier", py_barrier, METH_NOARGS, "Wait for every rank."},
    {0}, /* sentinel */
};

int ctpy_dist_init(PyObject *module) { return PyModule_AddFunctions(module, dist_functions); }

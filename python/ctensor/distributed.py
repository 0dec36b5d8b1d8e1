"""ct.distributed: the process's world (torch.distributed's names) over the C communicator.

init() makes it: the MPI engine when the process was started by mpirun, else a world of
one. Collectives work in place on tensors of any device and have a deadline (the C
library's CT_COMM_TIMEOUT, or init(timeout=seconds)); a mismatch between ranks is an error
naming it, never a hang.
"""

import atexit

from ctensor import _ctensor


def init(timeout=None):
    """Join the world (idempotent); returns None."""
    _ctensor._dist_init(float(timeout or 0))


init_process_group = init
atexit.register(_ctensor._dist_finalize)


def _info():
    info = _ctensor._dist_info()
    return info if info is not None else (0, 1, 0, "none")


def is_initialized():
    return _ctensor._dist_info() is not None


def rank():
    return _info()[0]


def world_size():
    return _info()[1]


def local_rank():
    return _info()[2]


def backend():
    return _info()[3]


get_rank, get_world_size, get_backend = rank, world_size, backend


class ReduceOp:
    SUM = "sum"
    AVG = "avg"


def all_reduce(tensor, op=ReduceOp.SUM):
    """Replace tensor on every rank with the sum (or mean) over the ranks."""
    _ctensor._dist_all_reduce(tensor, op)


def broadcast(tensor, src=0):
    """Replace tensor on every rank with rank src's."""
    _ctensor._dist_broadcast(tensor, src)


def all_gather(tensor):
    """Every rank's tensor stacked along a new first axis (a new tensor)."""
    return _ctensor._dist_all_gather(tensor)


def barrier():
    """Return once every rank has called it (a world of one returns at once)."""
    if is_initialized():
        _ctensor._dist_barrier()

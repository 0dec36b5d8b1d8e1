/* ctensor — data parallelism: a communicator over several devices of one process (threads)
 * or several processes and machines (Open MPI), and data-parallel training over it.
 *
 * A ct_comm is one member (a rank) of a group of `size` ranks. Every rank calls the same
 * collectives in the same order with tensors of the same shape and dtype; each collective
 * carries a fingerprint (kind, dtype, element count, sequence number) that the ranks compare
 * before any data moves, so a mismatch is named (CT_ERR_COMM) instead of hanging or summing
 * garbage. Every collective has a deadline: CT_COMM_TIMEOUT seconds (default 300), or
 * ct_comm_set_timeout. On expiry each rank that still runs returns CT_ERR_COMM naming the
 * collective, its sequence number and, where the engine can tell, the ranks not heard from.
 * After a failure the communicator is broken: every later collective fails at once.
 *
 * Engines: "self" (a world of one: a process not started by mpirun), "threads" (one rank per
 * thread of one process, MirroredStrategy's case; ct_comm_threads, ct_comm_spawn) and "mpi"
 * (ct_comm_world in a process started by mpirun; the plugin libctensor_mpi.so, loaded only
 * then, so that the core runs where no MPI is installed). Tensors may be on any device; the
 * engines move data through host memory. "nccl" (ct_comm_nccl: CUDA tensors on one device
 * per rank, the plugin libctensor_nccl.so over NCCL, bootstrapped by another communicator)
 * works on the tensors' device memory instead. NCCL allows one rank per GPU: where two ranks
 * share one (mpirun -np 2 on a machine with one GPU), ct_comm_nccl finds it before NCCL
 * starts and gives a communicator on the bootstrap's engine ("mpi" or "threads") instead,
 * with one warning. A ct_comm is used by one thread at a time. */
#ifndef CTENSOR_DIST_H
#define CTENSOR_DIST_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/nn.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_comm ct_comm;

typedef enum ct_comm_op { CT_COMM_SUM = 0, CT_COMM_AVG = 1 } ct_comm_op;

/* The world of this process: under mpirun (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE set)
 * the MPI engine over every process of the job, else a world of one. NULL with
 * CT_ERR_DEVICE_UNAVAILABLE when under mpirun the MPI plugin cannot be loaded (the message
 * says why; CT_MPI_PLUGIN names another path), CT_ERR_COMM when MPI fails to start and
 * CT_ERR_STATE once MPI was finalised (MPI starts once per process). */
CT_API ct_comm *ct_comm_world(void);
/* `size` ranks of the threads engine in this process: comms[r] is rank r, to be used by one
 * thread each. Free each with ct_comm_free. CT_ERR_INVALID_ARG for size outside 1..64. */
CT_API ct_status ct_comm_threads(int size, ct_comm **comms);
/* The NCCL engine: this process's rank of bootstrap (the MPI world, whose rank 0 sends its
 * ncclUniqueId to the others, or a rank of ct_comm_threads; NULL: a world of one; another
 * NCCL communicator: CT_ERR_INVALID_ARG) on the CUDA device `device`, which
 * every tensor of its collectives must be on, contiguous (CT_ERR_DEVICE_MISMATCH
 * otherwise). Collectives run on the plugin's stream after the work already queued on the
 * device; the fingerprints travel over bootstrap, which must outlive the result. Each collective's
 * deadline is bootstrap's timeout; on expiry, or on an asynchronous NCCL error
 * (ncclCommGetAsyncError), the NCCL communicator is aborted (ncclCommAbort) and CT_ERR_COMM names
 * the collective. NULL with CT_ERR_DEVICE_MISMATCH for a device that is not CUDA,
 * CT_ERR_DEVICE_UNAVAILABLE when the plugin or libnccl.so.2 cannot be loaded (CT_NCCL_PLUGIN names
 * another plugin path), CT_ERR_COMM when NCCL fails to start or its start passes the deadline.
 * Before NCCL starts, the ranks all-gather their GPUs' UUIDs (ct_device_properties.uuid)
 * over bootstrap. NCCL refuses two ranks on one GPU, so when two ranks share one (or two
 * logical devices of one), every rank gets instead a communicator whose collectives run on
 * bootstrap's engine (ct_comm_engine says "mpi" or "threads"), the tensors travelling through
 * host memory, in bootstrap's order with bootstrap's other collectives (a failure breaks
 * both); rank 0 logs one warning through the log hook naming the ranks and the GPU. */
CT_API ct_comm *ct_comm_nccl(ct_comm *bootstrap, ct_device device);
/* Free a rank (NULL is ignored). Freeing the MPI world finalises MPI unless a collective
 * was left in flight by a timeout or an MPI error (MPI_Finalize would wait for the lost
 * ranks then). */
CT_API void ct_comm_free(ct_comm *comm);

CT_API int ct_comm_rank(const ct_comm *comm);
CT_API int ct_comm_size(const ct_comm *comm);
/* The rank among those on the same machine (MPI: OMPI_COMM_WORLD_LOCAL_RANK). */
CT_API int ct_comm_local_rank(const ct_comm *comm);
/* "self", "threads", "mpi" or "nccl". */
CT_API const char *ct_comm_engine(const ct_comm *comm);

/* The deadline of each collective, in seconds (> 0; CT_ERR_INVALID_ARG otherwise). */
CT_API ct_status ct_comm_set_timeout(ct_comm *comm, double seconds);
CT_API double ct_comm_timeout(const ct_comm *comm);

/* Collectives, in place on a tensor of any device (CT_F32, CT_F64, CT_I32, CT_I64):
 * all-reduce replaces t on every rank with the sum (or mean) of every rank's t; broadcast
 * replaces it with root's. Errors: CT_ERR_COMM (mismatch, timeout, broken communicator,
 * engine failure), CT_ERR_DTYPE, CT_ERR_INVALID_ARG (a root out of range). */
CT_API ct_status ct_comm_all_reduce(ct_comm *comm, ct_tensor *t, ct_comm_op op);
CT_API ct_status ct_comm_broadcast(ct_comm *comm, ct_tensor *t, int root);
/* Every rank's t stacked along a new first axis, (size, ...t's shape), on t's device: a new
 * tensor, NULL on failure. */
CT_API ct_tensor *ct_comm_all_gather(ct_comm *comm, const ct_tensor *t);
/* Returns once every rank has called it. */
CT_API ct_status ct_comm_barrier(ct_comm *comm);

/* What a rank's collectives cost so far. */
typedef struct ct_comm_statistics {
    int64_t collectives; /* completed */
    int64_t bytes;       /* of payload */
    double wait_seconds; /* spent waiting for collectives to end (ct_comm_* and ct_ddp) */
} ct_comm_statistics;
CT_API ct_status ct_comm_stats(const ct_comm *comm, ct_comm_statistics *out);

/* Run fn(rank, comms[rank], devices[rank], user) on `size` threads at once (rank 0 on the
 * calling thread) and wait for them: each thread has devices[rank] as its default placement
 * and, on the CPU, its share of the cores (1/size of OpenMP's threads, at least one). Returns
 * the first non-zero result of fn in rank order, or 0. CT_ERR_INVALID_ARG style failures to
 * start a thread return -1 with the error set. */
typedef int (*ct_replica_fn)(int rank, ct_comm *comm, ct_device device, void *user);
CT_API int ct_comm_spawn(int size, ct_comm **comms, const ct_device *devices, ct_replica_fn fn,
                         void *user);

/* ---- data-parallel training (PyTorch's DistributedDataParallel) ---- */

typedef struct ct_ddp ct_ddp;

/* Bucket sizes; 0 is the default. Where both are 0 on the threads engine, whose collectives
 * cannot overlap backward, every gradient travels in one bucket. */
typedef struct ct_ddp_options {
    size_t bucket_bytes;       /* 0: 25 MiB */
    size_t first_bucket_bytes; /* 0: 1 MiB (the first bucket fills soonest in backward) */
} ct_ddp_options;

/* Data parallelism for model over comm: broadcasts every parameter and buffer from rank 0
 * (so every rank starts from rank 0's model), then groups the parameters in reverse order
 * into buckets. The model must be on its device already and keep its parameters; comm and
 * model outlive the ct_ddp. options may be NULL. NULL with the error on failure. */
CT_API ct_ddp *ct_ddp_new(ct_comm *comm, ct_module *model, const ct_ddp_options *options);
/* The same for a model that is not one ct_module (a Python module of several): its n
 * parameters and buffers in the model's order, buffer[i] true for the buffers (which are
 * broadcast, not reduced; buffer NULL: none). The tensors are borrowed and must outlive the
 * ct_ddp. */
CT_API ct_ddp *ct_ddp_new_tensors(ct_comm *comm, int n, ct_tensor *const *tensors,
                                  const bool *buffer, const ct_ddp_options *options);
/* Backward from this rank's loss (the mean over its local_samples samples of a global batch
 * of global_samples, the sum of every rank's local_samples), all-reducing the gradients as
 * backward produces them: each bucket starts once its last gradient is ready, so the
 * communication overlaps the rest of backward. Every parameter's gradient is then the mean
 * over the global batch, the same on every rank. A rank with no sample in this batch passes
 * loss NULL and local_samples 0 and still takes part. Gradients are set, not accumulated:
 * call it once per step after zeroing them. A parameter used more than once in the graph (a
 * tied embedding) travels once, with the sum of its uses. */
CT_API ct_status ct_ddp_backward(ct_ddp *ddp, const ct_tensor *loss, int64_t local_samples,
                                 int64_t global_samples);

/* Stopping every rank after the same step (a signal that reached one rank, say): a rank's
 * reason, 1 to CT_DDP_STOP_REASONS (a signal number, for instance), travels in every later
 * ct_ddp_backward's gradient all-reduce (a few floats in its last bucket, no collective of
 * its own). Once a ct_ddp_backward has returned, ct_ddp_stop_reason is on every rank the
 * largest reason any rank had asked for before that step began (0: none), so that the ranks
 * that test it after each step stop together. A request stays; a larger reason replaces a
 * smaller one. CT_ERR_INVALID_ARG for a reason out of range. */
#define CT_DDP_STOP_REASONS 64
CT_API ct_status ct_ddp_request_stop(ct_ddp *ddp, int reason);
CT_API int ct_ddp_stop_reason(const ct_ddp *ddp); /* 0 for NULL */

typedef struct ct_ddp_statistics {
    int64_t steps, buckets; /* ct_ddp_backward calls; buckets per step */
    double comm_seconds;    /* from each bucket's start to its end, summed */
    double hidden_seconds;  /* of comm_seconds, the part while backward still ran */
    double wait_seconds;    /* time backward's caller waited for buckets after backward */
    double step_seconds;    /* ct_ddp_backward's own time, summed (backward included) */
} ct_ddp_statistics;
CT_API ct_status ct_ddp_stats(const ct_ddp *ddp, ct_ddp_statistics *out);
CT_API void ct_ddp_free(ct_ddp *ddp); /* NULL is ignored */

#ifdef __cplusplus
}
#endif
#endif

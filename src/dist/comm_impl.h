/* The communicator's internals, shared by its front door (comm.c, with the engine of a world
 * of one), its engines (comm_threads.c, comm_mpi.c, comm_nccl.c, comm_shared_gpu.c) and
 * data-parallel training (ddp.c).
 *
 * Every collective works on one contiguous host buffer described by a ct__coll. An engine
 * starts it and then advances it when polled; comm.c owns the deadline, the statistics and
 * the messages, so that every engine ends in the same way. */
#ifndef CT_COMM_IMPL_H
#define CT_COMM_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ctensor/dist.h"

#define CT__COMM_MAX_THREADS 64
#define CT__COMM_DEFAULT_TIMEOUT 300.0

typedef enum ct__coll_kind {
    CT__COLL_ALL_REDUCE = 1,
    CT__COLL_BROADCAST = 2,
    CT__COLL_ALL_GATHER = 3,
    CT__COLL_BARRIER = 4,
} ct__coll_kind;

/* The words every rank compares before a collective moves data. */
#define CT__FINGERPRINT_WORDS 5
typedef struct ct__fingerprint {
    int64_t words[CT__FINGERPRINT_WORDS]; /* kind, dtype, count, root or op, sequence */
} ct__fingerprint;

typedef struct ct__coll {
    ct__coll_kind kind;
    ct_dtype dtype;
    int64_t count; /* elements of buf (per rank for all-gather) */
    ct_comm_op op;
    int root;
    void *buf; /* in place: all-reduce, broadcast; all-gather's input */
    /* buf stays valid until the collective ends, even after it failed or timed out (its
     * owner leaks it then): an engine may work in it rather than on a copy of its own. */
    bool buf_outlives;
    void *out;        /* all-gather: size * count elements */
    const char *what; /* what it carries, for messages ("bucket 1", "a tensor (3, 4)") */
    uint64_t seq;     /* set by ct__comm_start */
    double started, deadline;
    bool done;     /* set by the engine once the collective ended */
    double ended;  /* when it ended: the engine's time where it saw it sooner than the caller */
    bool finished; /* and then by comm.c once counted and its engine state released */
    /* The engine's state of this collective; stage (0 before any, 1 while the fingerprints
     * travel, 2 with the data) also tells ct__comm_wait when the collective moved on. */
    int stage;
    void *request;
    ct__fingerprint *fingerprints; /* size of them, once gathered */
} ct__coll;

typedef struct ct__comm_engine {
    const char *name;
    /* Buffers are the tensors' own device memory, not host copies (NCCL). */
    bool device_buffers;
    /* A collective ends inside its start (every rank there), so nothing overlaps it. */
    bool synchronous;
    /* Begin coll (its fingerprint first, where the engine exchanges one); may end it. */
    ct_status (*start)(ct_comm *comm, ct__coll *coll);
    /* Advance coll; set coll->done once it has ended. */
    ct_status (*poll)(ct_comm *comm, ct__coll *coll);
    /* Write into buf which ranks coll still waits for ("" when the engine cannot tell). */
    void (*missing)(const ct_comm *comm, const ct__coll *coll, char *buf, size_t size);
    /* Drop coll's engine state (after it ended or failed). */
    void (*release)(ct_comm *comm, ct__coll *coll);
    /* Free the engine's state of the rank; `clean` when no collective was left in flight. */
    void (*destroy)(ct_comm *comm, bool clean);
} ct__comm_engine;

struct ct_comm {
    const ct__comm_engine *engine;
    int rank, size, local_rank;
    double timeout;
    uint64_t seq;
    bool broken;
    bool abandoned; /* a collective was left in flight (timeout, engine error) */
    char broken_why[768];
    void *state; /* the engine's */
    ct_comm_statistics stats;
};

/* A new rank of engine (timeout from CT_COMM_TIMEOUT); NULL with the error set. */
ct_comm *ct__comm_new(const ct__comm_engine *engine, int rank, int size, int local_rank,
                      void *state);

/* Start coll (number it, fix its deadline); CT_ERR_COMM when the communicator is broken. */
ct_status ct__comm_start(ct_comm *comm, ct__coll *coll);
/* Advance coll once without waiting: CT_ERR_COMM past its deadline. */
ct_status ct__comm_poll(ct_comm *comm, ct__coll *coll);
/* Wait for coll to end, polling against its deadline; the time counts as waiting. */
ct_status ct__comm_wait(ct_comm *comm, ct__coll *coll);
/* Run coll from start to end. */
ct_status ct__comm_run(ct_comm *comm, ct__coll *coll);

/* Mark comm broken with the message (also set as the thread's error); returns CT_ERR_COMM. */
ct_status ct__comm_fail(ct_comm *comm, const char *fmt, ...) CT_PRINTF_(2, 3);
/* coll's fingerprint. */
ct__fingerprint ct__coll_fingerprint(const ct__coll *coll);
/* Compare the gathered fingerprints (fps[r] from rank r) with this rank's; on a mismatch
 * fail comm with a message naming both collectives and ranks. */
ct_status ct__coll_check_fingerprints(ct_comm *comm, const ct__coll *coll,
                                      const ct__fingerprint *fps);
/* The collective's public name ("ct_comm_all_reduce"). */
const char *ct__coll_name(ct__coll_kind kind);
/* Seconds on a monotonic clock. */
double ct__comm_now(void);

/* The engines. */
extern const ct__comm_engine ct__comm_self_engine;
/* The MPI world (comm_mpi.c): NULL with the error when the plugin cannot start. */
ct_comm *ct__comm_mpi_world(void);
/* The NCCL engine's device (comm_nccl.c): tensors of its collectives must be on it. */
ct_device ct__comm_nccl_device(const ct_comm *comm);
/* Before NCCL starts (comm_shared_gpu.c): when two ranks of bootstrap are on one GPU (their
 * devices' UUIDs all-gathered over bootstrap, a collective every rank takes part in), *out is
 * a communicator that runs its collectives on bootstrap's engine through host memory, and
 * rank 0 has logged one warning naming the ranks and the GPU; else *out is NULL. */
ct_status ct__comm_shared_gpu(ct_comm *bootstrap, ct_device device, ct_comm **out);
/* Whether this process was started by an MPI launcher (the environment it sets). */
bool ct__comm_under_mpirun(void);

#endif

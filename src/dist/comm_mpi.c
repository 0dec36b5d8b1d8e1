/* The MPI engine: the core's side of libctensor_mpi.so, loaded with dlopen only in a process
 * an MPI launcher started, so that the core needs no MPI. A collective goes in two stages,
 * both non-blocking and polled against its deadline: an all-gather of every rank's
 * fingerprint, checked before any data moves, then the collective itself on a staging
 * buffer of the engine's. MPI needs every rank to post its collectives in one order, so the
 * collectives in flight form a queue advanced from its head: a later one posts nothing while
 * an earlier one still exchanges fingerprints (its data stage must come first on every
 * rank), whatever order the caller polls them in. After a timeout the staging buffer and the
 * request are leaked, not freed, because MPI may still complete the collective into them. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/plugin_load_impl.h"
#include "dist/comm_impl.h"
#include "dist/mpi_plugin_impl.h"

static const ct_mpi_api *mpi;
static char mpi_version[256];
static bool mpi_started, mpi_finalized;
static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;

bool ct__comm_under_mpirun(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i])) return true;
    return false;
}

/* Load the plugin (once): Open MPI's own components need its symbols global. */
static ct_status load_plugin(void) {
    if (mpi) return CT_OK;
    ct__plugin p = {.what = "the MPI plugin"};
    if (!ct__plugin_open(&p, "CT_MPI_PLUGIN", "libctensor_mpi.so", RTLD_GLOBAL, CT_MPI_PLUGIN_ENTRY,
                         "build ctensor with Open MPI installed (libopenmpi-dev, -DCT_MPI=ON) "
                         "or set CT_MPI_PLUGIN to its path"))
        return ct__error(CT_ERR_DEVICE_UNAVAILABLE,
                         "ct_comm_world: this process runs under mpirun, but %s", p.error);
    ct_mpi_plugin_entry_fn entry;
    *(void **)&entry = p.entry;
    const ct_mpi_api *api = entry();
    if (!ct__plugin_check_abi(&p, api ? api->abi_version : -1, CT_MPI_PLUGIN_ABI_VERSION))
        return ct__error(CT_ERR_DEVICE_UNAVAILABLE, "ct_comm_world: %s", p.error);
    mpi = api;
    return CT_OK;
}

typedef struct mpi_coll {
    char request[CT_MPI_REQUEST_BYTES];
    ct__coll *coll;
    struct mpi_coll *next; /* the queue, in start order */
    bool pending;          /* a request of it is posted and not yet ended */
    ct__fingerprint mine;
    void *staging; /* the data collective's buffer (all-gather: its output) */
    ct__fingerprint fps[];
} mpi_coll;

static ct_mpi_type mpi_type(ct_dtype dtype) {
    switch (dtype) {
    case CT_F32: return CT_MPI_F32;
    case CT_F64: return CT_MPI_F64;
    case CT_I32: return CT_MPI_I32;
    case CT_I64: return CT_MPI_I64;
    default: return CT_MPI_BYTE;
    }
}

static ct_status engine_error(ct_comm *comm, const ct__coll *coll, const char *err) {
    comm->abandoned = true;
    return ct__comm_fail(comm, "%s #%llu on %s failed at rank %d of %d: %s",
                         ct__coll_name(coll->kind), (unsigned long long)coll->seq, coll->what,
                         comm->rank, comm->size, err);
}

/* The rank's queue of collectives in flight. */
typedef struct mpi_queue {
    mpi_coll *head, *tail;
} mpi_queue;

static ct_status post_fingerprint(ct_comm *comm, ct__coll *coll, mpi_coll *m) {
    char err[512];
    if (mpi->iallgather(&m->mine, m->fps, CT__FINGERPRINT_WORDS, CT_MPI_I64, m->request, err,
                        sizeof err))
        return engine_error(comm, coll, err);
    m->pending = true;
    coll->stage = 1;
    return CT_OK;
}

static ct_status advance(ct_comm *comm);

static ct_status mpi_start(ct_comm *comm, ct__coll *coll) {
    mpi_coll *m = ct__calloc(1, sizeof *m + (size_t)comm->size * sizeof(ct__fingerprint));
    if (!m) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_comm: out of host memory");
    coll->request = m;
    m->coll = coll;
    m->mine = ct__coll_fingerprint(coll);
    mpi_queue *q = comm->state;
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    return advance(comm); /* stage 0 until every earlier collective has posted its data */
}

/* The fingerprints matched: post the data collective on a staging copy. */
static ct_status post_data(ct_comm *comm, ct__coll *coll, mpi_coll *m) {
    size_t bytes = (size_t)coll->count * ct__dtype_size(coll->dtype);
    size_t out_bytes = coll->kind == CT__COLL_ALL_GATHER ? bytes * (size_t)comm->size : bytes;
    char err[512];
    int rc = 0;
    if (coll->kind == CT__COLL_BARRIER) {
        coll->done = true; /* the fingerprints' all-gather was the barrier */
        return CT_OK;
    }
    m->staging = ct__malloc(out_bytes ? out_bytes : 1);
    if (!m->staging) return ct__comm_fail(comm, "ct_comm: out of host memory for %s", coll->what);
    if (coll->kind != CT__COLL_ALL_GATHER) memcpy(m->staging, coll->buf, bytes);
    ct_mpi_type type = mpi_type(coll->dtype);
    if (coll->kind == CT__COLL_ALL_REDUCE)
        rc = mpi->iallreduce_sum(m->staging, coll->count, type, m->request, err, sizeof err);
    else if (coll->kind == CT__COLL_BROADCAST)
        rc = mpi->ibcast(m->staging, coll->count, type, coll->root, m->request, err, sizeof err);
    else
        rc = mpi->iallgather(coll->buf, m->staging, coll->count, type, m->request, err, sizeof err);
    if (rc) return engine_error(comm, coll, err);
    m->pending = true;
    coll->stage = 2;
    return CT_OK;
}

/* The data collective ended: the result into the caller's buffer. */
static void deliver(const ct_comm *comm, ct__coll *coll, const mpi_coll *m) {
    size_t bytes = (size_t)coll->count * ct__dtype_size(coll->dtype);
    if (coll->kind == CT__COLL_ALL_GATHER) {
        memcpy(coll->out, m->staging, bytes * (size_t)comm->size);
        return;
    }
    memcpy(coll->buf, m->staging, bytes);
    if (coll->kind != CT__COLL_ALL_REDUCE || coll->op != CT_COMM_AVG) return;
    for (int64_t i = 0; i < coll->count; i++) switch (coll->dtype) {
        case CT_F32: ((float *)coll->buf)[i] /= (float)comm->size; break;
        case CT_F64: ((double *)coll->buf)[i] /= comm->size; break;
        case CT_I32: ((int32_t *)coll->buf)[i] /= comm->size; break;
        case CT_I64: ((int64_t *)coll->buf)[i] /= comm->size; break;
        default: break;
        }
}

/* Move one collective on where it can; *blocked once it still exchanges fingerprints (no
 * later collective may post before its data stage). */
static ct_status step(ct_comm *comm, mpi_coll *m, bool *blocked) {
    ct__coll *coll = m->coll;
    char err[512];
    int done = 0;
    if (coll->done) return CT_OK;
    if (coll->stage == 0) {
        if (*blocked) return CT_OK;
        ct_status status = post_fingerprint(comm, coll, m);
        if (status != CT_OK) return status;
    }
    if (mpi->test(m->request, &done, err, sizeof err)) return engine_error(comm, coll, err);
    if (done) m->pending = false;
    if (coll->stage == 1) {
        if (!done) {
            *blocked = true;
            return CT_OK;
        }
        ct_status status = ct__coll_check_fingerprints(comm, coll, m->fps);
        if (status == CT_OK) status = post_data(comm, coll, m);
        if (status != CT_OK || coll->done) return status;
        if (mpi->test(m->request, &done, err, sizeof err)) return engine_error(comm, coll, err);
        if (done) m->pending = false;
    }
    if (done) {
        deliver(comm, coll, m);
        coll->done = true;
    }
    return CT_OK;
}

/* Advance the queue from its head. */
static ct_status advance(ct_comm *comm) {
    mpi_queue *q = comm->state;
    bool blocked = false;
    for (mpi_coll *m = q->head; m; m = m->next) {
        ct_status status = step(comm, m, &blocked);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

static ct_status mpi_poll(ct_comm *comm, ct__coll *coll) { return advance(comm); }

static void mpi_missing(const ct_comm *comm, const ct__coll *coll, char *buf, size_t size) {
    snprintf(buf, size, "waiting in %s (MPI does not say which ranks are missing)",
             coll->stage == 1 ? "the exchange of fingerprints" : "the data transfer");
}

/* Free a collective's state unless MPI may still write into it (see the top): a collective
 * that ended, or failed between its requests (a mismatch), is freed. */
static void mpi_release(ct_comm *comm, ct__coll *coll) {
    mpi_coll *m = coll->request;
    coll->request = NULL;
    if (!m) return;
    mpi_queue *q = comm->state;
    mpi_coll **link = &q->head, *prev = NULL;
    while (*link && *link != m) prev = *link, link = &(*link)->next;
    if (*link) *link = m->next;
    if (q->tail == m) q->tail = prev;
    if (m->pending) return;
    ct__free_mem(m->staging);
    ct__free_mem(m);
}

static void mpi_destroy(ct_comm *comm, bool clean) {
    ct__free_mem(comm->state);
    pthread_mutex_lock(&mpi_lock);
    if (clean && !mpi_finalized) {
        mpi->finalize();
        mpi_finalized = true;
    }
    pthread_mutex_unlock(&mpi_lock);
}

static const ct__comm_engine mpi_engine = {.name = "mpi",
                                           .start = mpi_start,
                                           .poll = mpi_poll,
                                           .missing = mpi_missing,
                                           .release = mpi_release,
                                           .destroy = mpi_destroy};

ct_comm *ct__comm_mpi_world(void) {
    pthread_mutex_lock(&mpi_lock);
    ct_status status = mpi_finalized
                           ? ct__error(CT_ERR_STATE, "ct_comm_world: MPI was finalised when the "
                                                     "world was freed, and starts once per process")
                       : mpi_started ? ct__error(CT_ERR_STATE, "ct_comm_world: the MPI world is "
                                                               "made once per process; keep it")
                                     : load_plugin();
    int rank = 0, size = 1;
    char err[512] = "";
    if (status == CT_OK &&
        mpi->init(&rank, &size, mpi_version, sizeof mpi_version, err, sizeof err))
        status = ct__error(CT_ERR_COMM, "ct_comm_world: MPI did not start: %s", err);
    if (status == CT_OK) mpi_started = true;
    pthread_mutex_unlock(&mpi_lock);
    if (status != CT_OK) return NULL;
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    mpi_queue *q = ct__calloc(1, sizeof *q);
    ct_comm *comm = q ? ct__comm_new(&mpi_engine, rank, size, local ? atoi(local) : 0, q)
                      : ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_comm_world: out of host memory");
    if (!comm) ct__free_mem(q);
    return comm;
}

/* The MPI engine: the core's side of libctensor_mpi.so, loaded with dlopen only in a process
 * an MPI launcher started, so that the core needs no MPI. A collective goes in two stages,
 * both non-blocking and polled against its deadline: an all-gather of every rank's
 * fingerprint, checked before any data moves, then the collective itself on a staging
 * buffer of the engine's. MPI needs every rank to post its collectives in one order, so the
 * collectives in flight form a queue advanced from its head: a later one posts nothing while
 * an earlier one still exchanges fingerprints (its data stage must come first on every
 * rank), whatever order the caller polls them in. A thread of the engine advances the queue
 * between the caller's polls (see mpi_queue). After a timeout the staging buffer and the
 * request are leaked, not freed, because MPI may still complete the collective into them.
 * An all-reduce or broadcast whose buffer outlives it (buf_outlives: data parallelism's
 * buckets) works in that buffer, without the staging copy and its two copies. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    static const ct__plugin_kind kind = {
        .what = "the MPI plugin",
        .file = "libctensor_mpi.so",
        .env_var = "CT_MPI_PLUGIN",
        .flags = RTLD_GLOBAL,
        .entry = CT_MPI_PLUGIN_ENTRY,
        .abi_version = CT_MPI_PLUGIN_ABI_VERSION,
        .hint = "build ctensor with Open MPI installed (libopenmpi-dev, -DCT_MPI=ON) or set "
                "CT_MPI_PLUGIN to its path",
    };
    ct__plugin p;
    if (!ct__plugin_load(&kind, &p))
        return ct__error(CT_ERR_DEVICE_UNAVAILABLE,
                         "ct_comm_world: this process runs under mpirun, but %s", p.error);
    mpi = p.api;
    return CT_OK;
}

typedef struct mpi_coll {
    char request[CT_MPI_REQUEST_BYTES];
    ct__coll *coll;
    struct mpi_coll *next; /* the queue, in start order */
    int stage;             /* 0 nothing posted, 1 fingerprints, 2 data */
    bool pending;          /* a request of it is posted and not yet ended */
    bool complete;         /* its data (or, for a barrier, its fingerprints) arrived */
    bool mismatch;         /* the fingerprints differ: the caller's poll names them */
    double completed_at;   /* when `complete` was set */
    char failure[512];     /* MPI's error, for the caller's poll to report; "" if none */
    ct__fingerprint mine;
    void *staging; /* the data collective's buffer (all-gather: its output); NULL in place */
    ct__fingerprint fps[];
} mpi_coll;

/* Whether the data collective works in the caller's buffer rather than on a staging copy:
 * all-reduce and broadcast, when the buffer outlives the collective. */
static bool works_in_place(const ct__coll *coll) {
    return coll->buf_outlives &&
           (coll->kind == CT__COLL_ALL_REDUCE || coll->kind == CT__COLL_BROADCAST);
}

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

/* The rank's queue of collectives in flight, and the thread that progresses it. Open MPI
 * moves a non-blocking collective on only inside MPI calls, and backward polls only between
 * its nodes (a convolution's backward is milliseconds long), so without this thread a
 * bucket's all-reduce would sit half done until the next node ends. Every MPI call, the
 * thread's and the caller's, is made under `lock` (MPI_THREAD_SERIALIZED); the thread
 * touches only the engine's own state (mpi_coll), never the caller's ct__coll or its error. */
typedef struct mpi_queue {
    mpi_coll *head, *tail;
    pthread_mutex_t lock;
    pthread_cond_t work; /* a collective was queued, or the thread is to stop */
    pthread_t thread;
    bool thread_started, stop, exited; /* exited: the thread is past its last use of the queue */
    int size;                          /* the communicator's */
} mpi_queue;

/* Between the thread's rounds while a collective is in flight: short enough that a bucket's
 * exchange ends well before backward does, long enough that waking costs the core that runs
 * backward little. */
#define PROGRESS_INTERVAL_NS 100000

static void post_fingerprint(mpi_coll *m) {
    if (mpi->iallgather(&m->mine, m->fps, CT__FINGERPRINT_WORDS, CT_MPI_I64, m->request, m->failure,
                        sizeof m->failure))
        return;
    m->pending = true;
    m->stage = 1;
}

/* The fingerprints matched: post the data collective on the staging copy. */
static void post_data(mpi_coll *m) {
    const ct__coll *coll = m->coll;
    size_t bytes = (size_t)coll->count * ct__dtype_size(coll->dtype);
    int rc = 0;
    if (coll->kind == CT__COLL_BARRIER) {
        m->complete = true; /* the fingerprints' all-gather was the barrier */
        m->completed_at = ct__comm_now();
        return;
    }
    void *data = works_in_place(coll) ? coll->buf : m->staging;
    if (data == m->staging && coll->kind != CT__COLL_ALL_GATHER)
        memcpy(m->staging, coll->buf, bytes);
    ct_mpi_type type = mpi_type(coll->dtype);
    if (coll->kind == CT__COLL_ALL_REDUCE)
        rc =
            mpi->iallreduce_sum(data, coll->count, type, m->request, m->failure, sizeof m->failure);
    else if (coll->kind == CT__COLL_BROADCAST)
        rc = mpi->ibcast(data, coll->count, type, coll->root, m->request, m->failure,
                         sizeof m->failure);
    else
        rc = mpi->iallgather(coll->buf, m->staging, coll->count, type, m->request, m->failure,
                             sizeof m->failure);
    if (rc) return;
    m->pending = true;
    m->stage = 2;
}

static bool stuck(const mpi_coll *m) { return m->complete || m->mismatch || *m->failure; }

/* Move one collective on where it can; *blocked once it still exchanges fingerprints (no
 * later collective may post before its data stage on any rank). Under the lock. */
static void step(int size, mpi_coll *m, bool *blocked) {
    int done = 0;
    if (stuck(m)) {
        *blocked |= !m->complete;
        return;
    }
    if (m->stage == 0) {
        if (*blocked) return;
        post_fingerprint(m);
    }
    if (!*m->failure && mpi->test(m->request, &done, m->failure, sizeof m->failure)) done = 0;
    if (done) m->pending = false;
    if (m->stage == 1 && !*m->failure) {
        if (!done) {
            *blocked = true;
            return;
        }
        for (int r = 0; r < size; r++)
            m->mismatch |= memcmp(&m->fps[r], &m->mine, sizeof m->mine) != 0;
        if (m->mismatch) {
            *blocked = true;
            return;
        }
        post_data(m);
        if (m->complete || *m->failure) return;
        if (mpi->test(m->request, &done, m->failure, sizeof m->failure)) done = 0;
        if (done) m->pending = false;
    }
    if (done && !*m->failure) {
        m->complete = true;
        m->completed_at = ct__comm_now();
    }
    *blocked |= *m->failure != '\0';
}

/* Advance the queue from its head. Under the lock. */
static void advance(mpi_queue *q) {
    bool blocked = false;
    for (mpi_coll *m = q->head; m; m = m->next) step(q->size, m, &blocked);
}

static bool in_flight(const mpi_queue *q) {
    for (const mpi_coll *m = q->head; m; m = m->next)
        if (!stuck(m)) return true;
    return false;
}

/* Idle, the thread waits for work or the stop without a deadline: what it waits for is the
 * caller's next collective. It touches the queue alone, never the communicator, so that one
 * left running by mpi_destroy outlives the communicator safely. */
static void *progress_thread(void *arg) {
    mpi_queue *q = arg;
    pthread_mutex_lock(&q->lock);
    while (!q->stop) {
        if (!in_flight(q)) {
            pthread_cond_wait(&q->work, &q->lock);
            continue;
        }
        advance(q);
        pthread_mutex_unlock(&q->lock);
        nanosleep(&(struct timespec){0, PROGRESS_INTERVAL_NS}, NULL);
        pthread_mutex_lock(&q->lock);
    }
    q->exited = true;
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

/* The data collective ended: the result into the caller's buffer. */
static void deliver(const ct_comm *comm, ct__coll *coll, const mpi_coll *m) {
    size_t bytes = (size_t)coll->count * ct__dtype_size(coll->dtype);
    if (coll->kind == CT__COLL_BARRIER) return;
    if (coll->kind == CT__COLL_ALL_GATHER) {
        memcpy(coll->out, m->staging, bytes * (size_t)comm->size);
        return;
    }
    if (!works_in_place(coll)) memcpy(coll->buf, m->staging, bytes);
    if (coll->kind != CT__COLL_ALL_REDUCE || coll->op != CT_COMM_AVG) return;
    for (int64_t i = 0; i < coll->count; i++) switch (coll->dtype) {
        case CT_F32: ((float *)coll->buf)[i] /= (float)comm->size; break;
        case CT_F64: ((double *)coll->buf)[i] /= comm->size; break;
        case CT_I32: ((int32_t *)coll->buf)[i] /= comm->size; break;
        case CT_I64: ((int64_t *)coll->buf)[i] /= comm->size; break;
        default: break;
        }
}

/* Advance, then hand the caller what the engine finished (every collective of the queue,
 * since one may end while another is polled) and report the first failure. Under the lock,
 * on the caller's thread. */
static ct_status collect(ct_comm *comm, mpi_queue *q) {
    advance(q);
    for (mpi_coll *m = q->head; m; m = m->next) {
        ct__coll *coll = m->coll;
        if (*m->failure) return engine_error(comm, coll, m->failure);
        if (m->mismatch) return ct__coll_check_fingerprints(comm, coll, m->fps);
        coll->stage = m->stage; /* for the caller's wait: a new stage restarts its spin */
        if (m->complete && !coll->done) {
            deliver(comm, coll, m);
            coll->done = true;
            coll->ended = m->completed_at;
        }
    }
    return CT_OK;
}

static ct_status mpi_start(ct_comm *comm, ct__coll *coll) {
    size_t bytes = (size_t)coll->count * ct__dtype_size(coll->dtype);
    size_t out_bytes = coll->kind == CT__COLL_ALL_GATHER ? bytes * (size_t)comm->size : bytes;
    mpi_coll *m = ct__calloc(1, sizeof *m + (size_t)comm->size * sizeof(ct__fingerprint));
    bool staged = !works_in_place(coll);
    void *staging = m && staged ? ct__malloc(out_bytes ? out_bytes : 1) : NULL;
    if (!m || (staged && !staging)) {
        ct__free_mem(m);
        return ct__comm_fail(comm, "ct_comm: out of host memory for %s", coll->what);
    }
    m->staging = staging;
    coll->request = m;
    m->coll = coll;
    m->mine = ct__coll_fingerprint(coll);
    mpi_queue *q = comm->state;
    pthread_mutex_lock(&q->lock);
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    ct_status status = collect(comm, q);
    if (status == CT_OK && !coll->done && !q->thread_started) {
        q->thread_started = pthread_create(&q->thread, NULL, progress_thread, q) == 0;
        if (!q->thread_started)
            ct__log(CT_LOG_WARNING, "ct_comm: no progress thread for MPI; collectives move on "
                                    "only when polled");
    }
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->lock);
    return status;
}

/* A poll finds the engine's thread advancing the queue (inside MPI, perhaps copying a
 * bucket) and returns at once rather than wait for it: the caller (backward's hook between
 * two nodes, or a wait that polls again) has its own work, and the next poll collects. */
static ct_status mpi_poll(ct_comm *comm, ct__coll *coll) {
    (void)coll;
    mpi_queue *q = comm->state;
    if (pthread_mutex_trylock(&q->lock) != 0) return CT_OK;
    ct_status status = collect(comm, q);
    pthread_mutex_unlock(&q->lock);
    return status;
}

static void mpi_missing(const ct_comm *comm, const ct__coll *coll, char *buf, size_t size) {
    mpi_queue *q = comm->state;
    pthread_mutex_lock(&q->lock);
    const mpi_coll *m = coll->request;
    snprintf(buf, size, "waiting in %s (MPI does not say which ranks are missing)",
             m && m->stage == 2 ? "the data transfer" : "the exchange of fingerprints");
    pthread_mutex_unlock(&q->lock);
}

/* Free a collective's state unless MPI may still write into it (see the top): a collective
 * that ended, or failed between its requests (a mismatch), is freed. */
static void mpi_release(ct_comm *comm, ct__coll *coll) {
    mpi_coll *m = coll->request;
    coll->request = NULL;
    if (!m) return;
    mpi_queue *q = comm->state;
    pthread_mutex_lock(&q->lock);
    mpi_coll **link = &q->head, *prev = NULL;
    while (*link && *link != m) prev = *link, link = &(*link)->next;
    if (*link) *link = m->next;
    if (q->tail == m) q->tail = prev;
    pthread_mutex_unlock(&q->lock);
    if (m->pending) return;
    ct__free_mem(m->staging);
    ct__free_mem(m);
}

/* The CLOCK_REALTIME time `seconds` from now (pthread_mutex_timedlock's clock, and the
 * queue's condition variable's). */
static struct timespec realtime_in(double seconds) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    if (seconds > 1e9) seconds = 1e9;
    long long ns = (long long)t.tv_nsec + (long long)((seconds - (long long)seconds) * 1e9);
    t.tv_sec += (time_t)seconds + (time_t)(ns / 1000000000);
    t.tv_nsec = (long)(ns % 1000000000);
    return t;
}

/* Stops the progress thread and joins it, waiting at most `timeout` seconds: false when it
 * did not end by then (stuck in an MPI call, which holds the lock), the thread then detached
 * and left with the queue. */
static bool stop_progress(mpi_queue *q, double timeout) {
    if (!q->thread_started) return true;
    struct timespec until = realtime_in(timeout);
    bool ended = false;
    if (pthread_mutex_timedlock(&q->lock, &until) == 0) {
        q->stop = true;
        pthread_cond_broadcast(&q->work);
        while (!q->exited && pthread_cond_timedwait(&q->work, &q->lock, &until) == 0) {
        }
        ended = q->exited;
        pthread_mutex_unlock(&q->lock);
    }
    if (ended)
        pthread_join(q->thread, NULL); /* past its last use of the queue: ends at once */
    else
        pthread_detach(q->thread);
    return ended;
}

static void mpi_destroy(ct_comm *comm, bool clean) {
    mpi_queue *q = comm->state;
    if (!stop_progress(q, comm->timeout)) {
        /* MPI is not finalised either: the thread may still be inside it. */
        ct__log(CT_LOG_WARNING,
                "ct_comm_free: the MPI progress thread did not stop within %g s (stuck in an "
                "MPI call); it is left running, its queue leaked, and MPI not finalised",
                comm->timeout);
        return;
    }
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->work);
    ct__free_mem(q);
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
    if (q) {
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->work, NULL);
    }
    if (q) q->size = size;
    ct_comm *comm = q ? ct__comm_new(&mpi_engine, rank, size, local ? atoi(local) : 0, q)
                      : ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_comm_world: out of host memory");
    if (!comm && q) {
        pthread_mutex_destroy(&q->lock);
        pthread_cond_destroy(&q->work);
        ct__free_mem(q);
    }
    return comm;
}

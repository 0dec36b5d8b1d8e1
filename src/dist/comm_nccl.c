/* The NCCL engine: the core's side of libctensor_nccl.so, for CUDA tensors. Its ranks are
 * those of a bootstrap communicator (the MPI world, or none: a world of one); rank 0's
 * ncclUniqueId travels to the others over the bootstrap, as Horovod does. Ranks that share a
 * GPU, which NCCL refuses, are found first and get the bootstrap's engine instead
 * (comm_shared_gpu.c). Buffers are device
 * memory. A collective goes in two stages polled against its deadline: the fingerprints'
 * all-gather over the bootstrap (skipped in a world of one), then the NCCL collective queued
 * on the plugin's stream with an event after it. NCCL needs every rank to queue its
 * collectives in one order, so the collectives in flight form a queue advanced from its head,
 * as in the MPI engine. Each poll also reads ncclCommGetAsyncError: an asynchronous NCCL
 * error ends the collective with NCCL's message. A collective past its deadline aborts the
 * communicator (ncclCommAbort), so that no stream waits on a lost peer forever and no NCCL
 * kernel writes afterwards; a collective's host state is leaked only while the bootstrap may
 * still use it (a fingerprint exchange that did not end). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/plugin_load_impl.h"
#include "core/device_impl.h"
#include "dist/comm_impl.h"
#include "dist/nccl_plugin_impl.h"

static const ct_nccl_api *nccl;
static char nccl_version[64];
static pthread_mutex_t nccl_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct nccl_coll {
    ct__coll *coll;
    struct nccl_coll *next; /* the queue, in start order */
    ct__coll exchange;      /* the fingerprints' all-gather on the bootstrap */
    void *event;
    ct__fingerprint mine;
    ct__fingerprint fps[];
} nccl_coll;

typedef struct nccl_state {
    void *comm; /* the plugin's; NULL once aborted */
    ct_comm *bootstrap;
    int device;        /* physical */
    ct_device logical; /* the one tensors must be on */
    nccl_coll *head, *tail;
} nccl_state;

/* Load the plugin and NCCL (once). */
static ct_status load_plugin(void) {
    if (nccl) return CT_OK;
    static const ct__plugin_kind kind = {
        .what = "the NCCL plugin",
        .file = "libctensor_nccl.so",
        .env_var = "CT_NCCL_PLUGIN",
        .flags = RTLD_LOCAL,
        .entry = CT_NCCL_PLUGIN_ENTRY,
        .abi_version = CT_NCCL_PLUGIN_ABI_VERSION,
        .hint = "build ctensor with the CUDA toolkit and NCCL's header installed, or set "
                "CT_NCCL_PLUGIN to its path",
    };
    ct__plugin p;
    if (!ct__plugin_load(&kind, &p))
        return ct__error(CT_ERR_DEVICE_UNAVAILABLE, "ct_comm_nccl: %s", p.error);
    const ct_nccl_api *api = p.api;
    char err[512] = "";
    if (api->load(nccl_version, sizeof nccl_version, err, sizeof err)) {
        dlclose(p.handle);
        return ct__error(CT_ERR_DEVICE_UNAVAILABLE, "ct_comm_nccl: %s", err);
    }
    nccl = api;
    return CT_OK;
}

static ct_status engine_error(ct_comm *comm, const ct__coll *coll, const char *err) {
    nccl_state *s = comm->state;
    comm->abandoned = true;
    if (s->comm) nccl->abort(s->comm);
    s->comm = NULL;
    return ct__comm_fail(comm, "%s #%llu on %s failed at rank %d of %d (NCCL %s, cuda:%d): %s",
                         ct__coll_name(coll->kind), (unsigned long long)coll->seq, coll->what,
                         comm->rank, comm->size, nccl_version, s->device, err);
}

static ct_nccl_type nccl_type(ct_dtype dtype) {
    switch (dtype) {
    case CT_F64: return CT_NCCL_F64;
    case CT_I32: return CT_NCCL_I32;
    case CT_I64: return CT_NCCL_I64;
    default: return CT_NCCL_F32;
    }
}

/* The fingerprints matched (or there is one rank): queue the collective and its event. */
static ct_status post_data(ct_comm *comm, ct__coll *coll, nccl_coll *m) {
    nccl_state *s = comm->state;
    char err[512] = "";
    int rc = 0;
    if (coll->kind == CT__COLL_BARRIER) {
        coll->done = true; /* the fingerprints' all-gather was the barrier */
        return CT_OK;
    }
    ct_nccl_type type = nccl_type(coll->dtype);
    if (coll->kind == CT__COLL_ALL_REDUCE)
        rc = nccl->all_reduce(s->comm, coll->buf, coll->count, type,
                              coll->op == CT_COMM_AVG ? CT_NCCL_AVG : CT_NCCL_SUM, err, sizeof err);
    else if (coll->kind == CT__COLL_BROADCAST)
        rc = nccl->broadcast(s->comm, coll->buf, coll->count, type, coll->root, err, sizeof err);
    else
        rc = nccl->all_gather(s->comm, coll->buf, coll->out, coll->count, type, err, sizeof err);
    if (rc) return engine_error(comm, coll, err);
    coll->stage = 2; /* queueing, perhaps still in progress */
    return CT_OK;
}

/* Stage 1: the fingerprints' exchange over the bootstrap. */
static ct_status step_exchange(ct_comm *comm, ct__coll *coll, nccl_coll *m, bool *blocked) {
    nccl_state *s = comm->state;
    if (!m->exchange.finished) {
        ct_status status = ct__comm_poll(s->bootstrap, &m->exchange);
        if (status != CT_OK) {
            char why[640];
            snprintf(why, sizeof why, "%s", ct_last_error());
            return engine_error(comm, coll, why);
        }
        if (!m->exchange.finished) {
            *blocked = true;
            return CT_OK;
        }
    }
    ct_status status = ct__coll_check_fingerprints(comm, coll, m->fps);
    return status == CT_OK ? post_data(comm, coll, m) : status;
}

/* Stage 2: wait until NCCL has queued it (the async state), then for its event. */
static ct_status step_data(ct_comm *comm, ct__coll *coll, nccl_coll *m) {
    nccl_state *s = comm->state;
    char err[512] = "";
    int state = nccl->state(s->comm, err, sizeof err);
    if (state == CT_NCCL_FAILED) return engine_error(comm, coll, err);
    if (!m->event) {
        if (state == CT_NCCL_IN_PROGRESS) return CT_OK;
        if (nccl->record(s->comm, &m->event, err, sizeof err)) return engine_error(comm, coll, err);
    }
    int ended = nccl->query(m->event, err, sizeof err);
    if (ended < 0) return engine_error(comm, coll, err);
    if (ended) coll->done = true;
    return CT_OK;
}

static ct_status advance(ct_comm *comm) {
    nccl_state *s = comm->state;
    bool blocked = false;
    for (nccl_coll *m = s->head; m; m = m->next) {
        ct__coll *coll = m->coll;
        if (coll->done) continue;
        ct_status status = CT_OK;
        if (coll->stage == 1 && !blocked) status = step_exchange(comm, coll, m, &blocked);
        if (status == CT_OK && coll->stage == 2) status = step_data(comm, coll, m);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

static ct_status nccl_start(ct_comm *comm, ct__coll *coll) {
    nccl_state *s = comm->state;
    if (!s->comm) return ct__comm_fail(comm, "ct_comm: the NCCL communicator was aborted");
    nccl_coll *m = ct__calloc(1, sizeof *m + (size_t)comm->size * sizeof(ct__fingerprint));
    if (!m) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_comm: out of host memory");
    coll->request = m;
    m->coll = coll;
    m->mine = ct__coll_fingerprint(coll);
    if (s->tail)
        s->tail->next = m;
    else
        s->head = m;
    s->tail = m;
    coll->stage = 1;
    if (comm->size == 1) {
        m->fps[0] = m->mine;
        m->exchange.finished = true;
    } else {
        m->exchange = (ct__coll){.kind = CT__COLL_ALL_GATHER,
                                 .dtype = CT_I64,
                                 .count = CT__FINGERPRINT_WORDS,
                                 .buf = &m->mine,
                                 .out = m->fps,
                                 .what = "the NCCL engine's fingerprints"};
        ct_status status = ct__comm_start(s->bootstrap, &m->exchange);
        if (status != CT_OK) return engine_error(comm, coll, ct_last_error());
    }
    return advance(comm);
}

static ct_status nccl_poll(ct_comm *comm, ct__coll *coll) { return advance(comm); }

static void nccl_missing(const ct_comm *comm, const ct__coll *coll, char *buf, size_t size) {
    const nccl_state *s = comm->state;
    snprintf(buf, size, "waiting in %s on cuda:%d (NCCL does not say which ranks are missing)",
             coll->stage == 1 ? "the exchange of fingerprints" : "NCCL's collective", s->device);
}

/* Free a collective's state. One released before it ended failed or passed its deadline:
 * the communicator is aborted, after which no NCCL kernel writes any more. Its state is
 * leaked only while the bootstrap may still read or write it (an unfinished exchange). */
static void nccl_release(ct_comm *comm, ct__coll *coll) {
    nccl_coll *m = coll->request;
    coll->request = NULL;
    if (!m) return;
    nccl_state *s = comm->state;
    nccl_coll **link = &s->head, *prev = NULL;
    while (*link && *link != m) prev = *link, link = &(*link)->next;
    if (*link) *link = m->next;
    if (s->tail == m) s->tail = prev;
    if (!coll->done && s->comm) {
        nccl->abort(s->comm);
        s->comm = NULL;
    }
    if (m->event) nccl->event_free(m->event);
    if (!m->exchange.finished) return;
    ct__free_mem(m);
}

/* ncclCommFinalize, then the communicator's state polled until it is globally quiescent, at
 * most timeout seconds (a peer that stopped never quiesces): false, with a warning, when it
 * failed or did not end by then, and the caller aborts instead. */
static bool finalized(void *c, int rank, double timeout) {
    char err[512] = "";
    double deadline = ct__comm_now() + timeout;
    int state = nccl->finalize(c, err, sizeof err) ? CT_NCCL_FAILED : CT_NCCL_IN_PROGRESS;
    while (state == CT_NCCL_IN_PROGRESS && ct__comm_now() <= deadline) {
        state = nccl->state(c, err, sizeof err);
        if (state == CT_NCCL_IN_PROGRESS) nanosleep(&(struct timespec){0, 100000}, NULL);
    }
    if (state == CT_NCCL_READY) return true;
    if (state == CT_NCCL_FAILED)
        ct__log(CT_LOG_WARNING, "ct_comm_free: rank %d: %s; the NCCL communicator is aborted", rank,
                err);
    else
        ct__log(CT_LOG_WARNING,
                "ct_comm_free: rank %d: ncclCommFinalize did not finish within %g s (a rank "
                "stopped or is not freeing its communicator; CT_COMM_TIMEOUT); the NCCL "
                "communicator is aborted",
                rank, timeout);
    return false;
}

/* Clean, the communicator is finalised under the deadline and destroyed; otherwise, or when
 * the finalize does not end, aborted (ncclCommAbort), which does not wait for the peers. */
static void nccl_destroy(ct_comm *comm, bool clean) {
    nccl_state *s = comm->state;
    if (s->comm) {
        if (clean && finalized(s->comm, comm->rank, comm->timeout))
            nccl->destroy(s->comm);
        else
            nccl->abort(s->comm);
    }
    ct__free_mem(s);
}

static const ct__comm_engine nccl_engine = {.name = "nccl",
                                            .device_buffers = true,
                                            .start = nccl_start,
                                            .poll = nccl_poll,
                                            .missing = nccl_missing,
                                            .release = nccl_release,
                                            .destroy = nccl_destroy};

/* Rank 0's unique id to every rank of the bootstrap. */
static ct_status share_id(ct_comm *bootstrap, int rank, int64_t *id) {
    char err[512] = "";
    if (rank == 0 && nccl->unique_id(id, err, sizeof err))
        return ct__error(CT_ERR_COMM, "ct_comm_nccl: %s", err);
    if (!bootstrap || bootstrap->size == 1) return CT_OK;
    ct__coll coll = {.kind = CT__COLL_BROADCAST,
                     .dtype = CT_I64,
                     .count = CT_NCCL_ID_BYTES / 8,
                     .root = 0,
                     .buf = id,
                     .what = "NCCL's unique id"};
    return ct__comm_run(bootstrap, &coll);
}

/* Wait for a non-blocking communicator to be ready, under the bootstrap's deadline. */
static ct_status wait_ready(void *c, int rank, int size, double timeout) {
    double deadline = ct__comm_now() + timeout;
    char err[512] = "";
    for (;;) {
        int state = nccl->state(c, err, sizeof err);
        if (state == CT_NCCL_READY) return CT_OK;
        if (state == CT_NCCL_FAILED || ct__comm_now() > deadline) {
            nccl->abort(c);
            if (state == CT_NCCL_FAILED)
                return ct__error(CT_ERR_COMM, "ct_comm_nccl: rank %d of %d: %s", rank, size, err);
            return ct__error(CT_ERR_COMM,
                             "ct_comm_nccl: rank %d of %d: ncclCommInitRankConfig did not finish "
                             "within %g s (a rank stopped, died or is not calling ct_comm_nccl; "
                             "raise CT_COMM_TIMEOUT if it is only slow); aborted",
                             rank, size, timeout);
        }
        nanosleep(&(struct timespec){0, 100000}, NULL);
    }
}

ct_comm *ct_comm_nccl(ct_comm *bootstrap, ct_device device) {
    char name[32];
    if (ct_device_is_host(device))
        return ct__fail(CT_ERR_DEVICE_MISMATCH,
                        "ct_comm_nccl: NCCL runs on CUDA devices, got %s; use ct_comm_world or "
                        "ct_comm_threads for CPU tensors",
                        ct_device_str(device, name, sizeof name));
    if (bootstrap && bootstrap->broken)
        return ct__fail(CT_ERR_COMM, "ct_comm_nccl: the bootstrap communicator failed earlier: %s",
                        bootstrap->broken_why);
    if (bootstrap && bootstrap->engine->device_buffers)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_comm_nccl: the bootstrap must move host memory (the MPI world or a "
                        "rank of ct_comm_threads), got a %s communicator",
                        bootstrap->engine->name);
    if (ct_device_check(device) != CT_OK) return NULL;
    /* Ranks that share a GPU: NCCL would refuse them, so the bootstrap's engine instead. */
    ct_comm *shared;
    if (ct__comm_shared_gpu(bootstrap, device, &shared) != CT_OK || shared) return shared;
    pthread_mutex_lock(&nccl_lock);
    ct_status status = load_plugin();
    pthread_mutex_unlock(&nccl_lock);
    if (status != CT_OK) return NULL;
    int rank = bootstrap ? bootstrap->rank : 0, size = bootstrap ? bootstrap->size : 1;
    double timeout = bootstrap ? bootstrap->timeout : CT__COMM_DEFAULT_TIMEOUT;
    int64_t id[CT_NCCL_ID_BYTES / 8] = {0};
    if (share_id(bootstrap, rank, id) != CT_OK) return NULL;
    nccl_state *s = ct__calloc(1, sizeof *s);
    if (!s) return ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_comm_nccl: out of host memory");
    s->bootstrap = bootstrap, s->device = ct__physical_index(device), s->logical = device;
    char err[512] = "";
    if (nccl->comm_init(id, rank, size, s->device, &s->comm, err, sizeof err)) {
        ct__free_mem(s);
        return ct__fail(CT_ERR_COMM, "ct_comm_nccl: rank %d of %d: %s", rank, size, err);
    }
    if (wait_ready(s->comm, rank, size, timeout) != CT_OK) {
        ct__free_mem(s);
        return NULL;
    }
    ct_comm *comm =
        ct__comm_new(&nccl_engine, rank, size, bootstrap ? bootstrap->local_rank : 0, s);
    if (!comm) {
        nccl->abort(s->comm); /* nothing in flight: no need to finalise */
        ct__free_mem(s);
    } else if (bootstrap) {
        comm->timeout = bootstrap->timeout;
    }
    return comm;
}

ct_device ct__comm_nccl_device(const ct_comm *comm) {
    return ((const nccl_state *)comm->state)->logical;
}

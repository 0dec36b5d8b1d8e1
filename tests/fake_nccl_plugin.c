/* A fake NCCL plugin for the tests: the table of dist/nccl_plugin_impl.h over host memory,
 * so that the NCCL engine's host side (bootstrap, queue order, fingerprints, deadlines,
 * asynchronous errors, abort, the data-parallel buckets) runs on the fake GPU, whose device
 * memory is host memory. Ranks are threads of one process (bootstrapped by the threads
 * engine); unlike NCCL it accepts several ranks on one device. A collective runs once every
 * rank of its world has queued it, in queue order, as NCCL's kernels would; a communicator
 * is ready once every rank has joined. fake_nccl_set_mode injects faults: FAKE_NCCL_HANG
 * (collectives never end), FAKE_NCCL_FAIL (the asynchronous state reports an error once a
 * collective was queued); fake_nccl_aborts counts ncclCommAbort calls. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/nccl_plugin_impl.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_WORLDS 16
#define MAX_RANKS 8
#define RING 256

enum { FAKE_NCCL_NORMAL = 0, FAKE_NCCL_HANG = 1, FAKE_NCCL_FAIL = 2 };

typedef struct op {
    int kind; /* 1 all-reduce, 2 broadcast, 3 all-gather */
    void *buf, *recv;
    int64_t count;
    ct_nccl_type type;
    ct_nccl_reduce reduce;
    int root;
} op;

typedef struct world {
    unsigned char id[CT_NCCL_ID_BYTES];
    int size, joined;
    int64_t queued[MAX_RANKS]; /* ops each rank queued */
    int64_t completed;         /* ops run, in order */
    op ring[RING][MAX_RANKS];
} world;

typedef struct fake_comm {
    world *w;
    int rank;
    int64_t queued_at_record;
    bool posted; /* a collective was queued (FAKE_NCCL_FAIL reports after it) */
} fake_comm;

typedef struct fake_event {
    world *w;
    int64_t seq; /* the op count it waits for */
} fake_event;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static world worlds[MAX_WORLDS];
static int nworlds, mode, aborts;
static uint64_t next_id = 1;

EXPORT void fake_nccl_set_mode(int m) {
    pthread_mutex_lock(&lock);
    mode = m;
    pthread_mutex_unlock(&lock);
}

EXPORT int fake_nccl_aborts(void) {
    pthread_mutex_lock(&lock);
    int n = aborts;
    pthread_mutex_unlock(&lock);
    return n;
}

static int fake_load(char *version, size_t version_size, char *err, size_t err_size) {
    snprintf(version, version_size, "fake");
    return 0;
}

static int fake_unique_id(void *id, char *err, size_t err_size) {
    pthread_mutex_lock(&lock);
    memset(id, 0, CT_NCCL_ID_BYTES);
    memcpy(id, &next_id, sizeof next_id);
    next_id++;
    pthread_mutex_unlock(&lock);
    return 0;
}

static int fake_comm_init(const void *id, int rank, int size, int device, void **out, char *err,
                          size_t err_size) {
    if (size > MAX_RANKS || rank < 0 || rank >= size) {
        snprintf(err, err_size, "fake ncclCommInitRankConfig: rank %d of %d", rank, size);
        return 1;
    }
    pthread_mutex_lock(&lock);
    world *w = NULL;
    for (int i = 0; i < nworlds && !w; i++)
        if (!memcmp(worlds[i].id, id, CT_NCCL_ID_BYTES)) w = &worlds[i];
    if (!w && nworlds < MAX_WORLDS) {
        w = &worlds[nworlds++];
        memcpy(w->id, id, CT_NCCL_ID_BYTES);
        w->size = size;
    }
    fake_comm *c = w ? calloc(1, sizeof *c) : NULL;
    if (c) {
        c->w = w, c->rank = rank;
        w->joined++;
    }
    pthread_mutex_unlock(&lock);
    if (!c) snprintf(err, err_size, "fake ncclCommInitRankConfig: no room for another world");
    *out = c;
    return c ? 0 : 1;
}

static int fake_state(void *comm, char *err, size_t err_size) {
    fake_comm *c = comm;
    pthread_mutex_lock(&lock);
    int state = c->w->joined < c->w->size ? CT_NCCL_IN_PROGRESS : CT_NCCL_READY;
    if (mode == FAKE_NCCL_FAIL && c->posted) {
        snprintf(err, err_size,
                 "NCCL (ncclCommGetAsyncError) failed: remote process exited or "
                 "there was a network error (injected by the fake plugin)");
        state = CT_NCCL_FAILED;
    }
    pthread_mutex_unlock(&lock);
    return state;
}

static size_t type_size(ct_nccl_type type) {
    return type == CT_NCCL_F64 || type == CT_NCCL_I64 ? 8 : 4;
}

static double get(const void *p, ct_nccl_type type, int64_t i) {
    switch (type) {
    case CT_NCCL_F32: return ((const float *)p)[i];
    case CT_NCCL_F64: return ((const double *)p)[i];
    case CT_NCCL_I32: return ((const int32_t *)p)[i];
    case CT_NCCL_I64: return (double)((const int64_t *)p)[i];
    }
    return 0;
}

static void put(void *p, ct_nccl_type type, int64_t i, double v) {
    switch (type) {
    case CT_NCCL_F32: ((float *)p)[i] = (float)v; break;
    case CT_NCCL_F64: ((double *)p)[i] = v; break;
    case CT_NCCL_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case CT_NCCL_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    }
}

/* Run op `seq` of w, which every rank has queued. */
static void run(world *w, int64_t seq) {
    op *ops = w->ring[seq % RING];
    const op *o = &ops[0];
    size_t bytes = (size_t)o->count * type_size(o->type);
    if (o->kind == 1) {
        for (int64_t i = 0; i < o->count; i++) {
            double sum = 0;
            for (int r = 0; r < w->size; r++) sum += get(ops[r].buf, o->type, i);
            if (o->reduce == CT_NCCL_AVG) sum /= w->size;
            for (int r = 0; r < w->size; r++) put(ops[r].buf, o->type, i, sum);
        }
    } else if (o->kind == 2) {
        for (int r = 0; r < w->size; r++)
            if (r != o->root) memcpy(ops[r].buf, ops[o->root].buf, bytes);
    } else {
        for (int r = 0; r < w->size; r++)
            for (int q = 0; q < w->size; q++)
                memcpy((char *)ops[r].recv + (size_t)q * bytes, ops[q].buf, bytes);
    }
}

static int queue(void *comm, op o, char *err, size_t err_size) {
    fake_comm *c = comm;
    pthread_mutex_lock(&lock);
    world *w = c->w;
    int full = w->queued[c->rank] - w->completed >= RING;
    if (!full) {
        w->ring[w->queued[c->rank] % RING][c->rank] = o;
        w->queued[c->rank]++;
        c->posted = true;
    }
    for (;;) {
        bool all = mode != FAKE_NCCL_HANG;
        for (int r = 0; r < w->size && all; r++) all = w->queued[r] > w->completed;
        if (!all) break;
        run(w, w->completed);
        w->completed++;
    }
    pthread_mutex_unlock(&lock);
    if (full) snprintf(err, err_size, "fake NCCL: more than %d collectives in flight", RING);
    return full;
}

static int fake_all_reduce(void *comm, void *buf, int64_t count, ct_nccl_type type,
                           ct_nccl_reduce reduce, char *err, size_t err_size) {
    return queue(comm, (op){.kind = 1, .buf = buf, .count = count, .type = type, .reduce = reduce},
                 err, err_size);
}

static int fake_broadcast(void *comm, void *buf, int64_t count, ct_nccl_type type, int root,
                          char *err, size_t err_size) {
    return queue(comm, (op){.kind = 2, .buf = buf, .count = count, .type = type, .root = root}, err,
                 err_size);
}

static int fake_all_gather(void *comm, const void *send, void *recv, int64_t count,
                           ct_nccl_type type, char *err, size_t err_size) {
    return queue(comm,
                 (op){.kind = 3, .buf = (void *)send, .recv = recv, .count = count, .type = type},
                 err, err_size);
}

static int fake_record(void *comm, void **event, char *err, size_t err_size) {
    fake_comm *c = comm;
    fake_event *e = malloc(sizeof *e);
    if (!e) {
        snprintf(err, err_size, "out of host memory");
        return 1;
    }
    pthread_mutex_lock(&lock);
    e->w = c->w, e->seq = c->w->queued[c->rank];
    pthread_mutex_unlock(&lock);
    *event = e;
    return 0;
}

static int fake_query(void *event, char *err, size_t err_size) {
    fake_event *e = event;
    pthread_mutex_lock(&lock);
    int done = e->w->completed >= e->seq;
    pthread_mutex_unlock(&lock);
    return done;
}

static void fake_event_free(void *event) { free(event); }

static void fake_abort(void *comm) {
    pthread_mutex_lock(&lock);
    aborts++;
    pthread_mutex_unlock(&lock);
    free(comm);
}

static void fake_destroy(void *comm) { free(comm); }

static const ct_nccl_api api = {.abi_version = CT_NCCL_PLUGIN_ABI_VERSION,
                                .load = fake_load,
                                .unique_id = fake_unique_id,
                                .comm_init = fake_comm_init,
                                .state = fake_state,
                                .all_reduce = fake_all_reduce,
                                .broadcast = fake_broadcast,
                                .all_gather = fake_all_gather,
                                .record = fake_record,
                                .query = fake_query,
                                .event_free = fake_event_free,
                                .abort = fake_abort,
                                .destroy = fake_destroy};

EXPORT const ct_nccl_api *ct_nccl_plugin_entry(void) { return &api; }

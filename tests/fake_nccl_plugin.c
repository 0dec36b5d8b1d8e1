/* A fake NCCL plugin for the tests: the table of dist/nccl_plugin_impl.h over host memory,
 * so that the NCCL engine's host side (bootstrap, queue order, fingerprints, deadlines,
 * asynchronous errors, abort, the data-parallel buckets) runs on the fake GPU, whose device
 * memory is host memory. Ranks are threads of one process (bootstrapped by the threads
 * engine); unlike NCCL it accepts several ranks on one device. A collective runs once every
 * rank of its world has queued it, in queue order, as NCCL's kernels would; a communicator
 * is ready once every rank has joined. fake_nccl_set_mode injects faults: FAKE_NCCL_HANG
 * (collectives never end, nor does a finalize), FAKE_NCCL_FAIL (the asynchronous state reports an
 * error once a collective was queued); fake_nccl_aborts counts ncclCommAbort calls.
 *
 * With FAKE_NCCL_DIR set the ranks are processes instead (mpirun, the unique id broadcast
 * over MPI as with NCCL): a queued collective writes the rank's input to a file of the
 * world's folder under FAKE_NCCL_DIR, and a rank's collectives end, in queue order, once
 * every rank's file of each is there; the rank then computes the result from the files into
 * its own buffers (every rank alike, in rank order). The folder is left for the test to
 * remove. */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
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
    world *w; /* NULL for ranks in separate processes */
    int rank;
    bool posted;     /* a collective was queued (FAKE_NCCL_FAIL reports after it) */
    bool finalizing; /* fake_finalize was called */
    /* Ranks in separate processes: the world's folder, its size, this rank's collectives
     * (pending[seq % RING]) queued and ended. */
    char dir[4096];
    int size;
    op pending[RING];
    int64_t queued, completed;
} fake_comm;

typedef struct fake_event {
    world *w;
    fake_comm *c; /* ranks in processes (w NULL) */
    int64_t seq;  /* the op count it waits for */
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
    if (getenv("FAKE_NCCL_DIR")) /* the name of the world's folder, unique across processes */
        snprintf((char *)id, CT_NCCL_ID_BYTES, "world-%ld-%llu", (long)getpid(),
                 (unsigned long long)next_id);
    else
        memcpy(id, &next_id, sizeof next_id);
    next_id++;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* A rank of a world of processes: its folder made, ready at once. */
static int process_comm_init(const char *root, const void *id, int rank, int size, void **out,
                             char *err, size_t err_size) {
    fake_comm *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, err_size, "out of host memory");
        return 1;
    }
    c->rank = rank, c->size = size;
    snprintf(c->dir, sizeof c->dir, "%s/%.*s", root, CT_NCCL_ID_BYTES, (const char *)id);
    if (mkdir(c->dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, err_size, "fake ncclCommInitRankConfig: mkdir %s: %s", c->dir,
                 strerror(errno));
        free(c);
        return 1;
    }
    *out = c;
    return 0;
}

static int fake_comm_init(const void *id, int rank, int size, int device, void **out, char *err,
                          size_t err_size) {
    if (size > MAX_RANKS || rank < 0 || rank >= size) {
        snprintf(err, err_size, "fake ncclCommInitRankConfig: rank %d of %d", rank, size);
        return 1;
    }
    const char *root = getenv("FAKE_NCCL_DIR");
    if (root) return process_comm_init(root, id, rank, size, out, err, err_size);
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
    int state = c->w && c->w->joined < c->w->size ? CT_NCCL_IN_PROGRESS : CT_NCCL_READY;
    if (c->finalizing && mode == FAKE_NCCL_HANG) state = CT_NCCL_IN_PROGRESS;
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

/* Run the collective of which ops[r] is rank r's part (recv NULL: a part whose all-gather
 * output nobody reads). */
static void run(op *ops, int size) {
    const op *o = &ops[0];
    size_t bytes = (size_t)o->count * type_size(o->type);
    if (o->kind == 1) {
        for (int64_t i = 0; i < o->count; i++) {
            double sum = 0;
            for (int r = 0; r < size; r++) sum += get(ops[r].buf, o->type, i);
            if (o->reduce == CT_NCCL_AVG) sum /= size;
            for (int r = 0; r < size; r++) put(ops[r].buf, o->type, i, sum);
        }
    } else if (o->kind == 2) {
        for (int r = 0; r < size; r++)
            if (r != o->root) memcpy(ops[r].buf, ops[o->root].buf, bytes);
    } else {
        for (int r = 0; r < size; r++)
            for (int q = 0; ops[r].recv && q < size; q++)
                memcpy((char *)ops[r].recv + (size_t)q * bytes, ops[q].buf, bytes);
    }
}

static size_t op_bytes(const op *o) { return (size_t)o->count * type_size(o->type); }

static void part_path(const fake_comm *c, int64_t seq, int rank, char *path, size_t size) {
    snprintf(path, size, "%s/%lld.%d", c->dir, (long long)seq, rank);
}

/* Ranks in processes: this rank's input of its next collective into its file (written
 * under another name, then renamed, so that a file present is whole). */
static int process_queue(fake_comm *c, op o, char *err, size_t err_size) {
    if (c->queued - c->completed >= RING) {
        snprintf(err, err_size, "fake NCCL: more than %d collectives in flight", RING);
        return 1;
    }
    char path[4200], part[4300];
    part_path(c, c->queued, c->rank, path, sizeof path);
    snprintf(part, sizeof part, "%s.part", path);
    FILE *f = fopen(part, "wb");
    bool ok = f && fwrite(o.buf, 1, op_bytes(&o), f) == op_bytes(&o);
    if (f && fclose(f) != 0) ok = false;
    if (!ok || rename(part, path) != 0) {
        snprintf(err, err_size, "fake NCCL: could not write %s: %s", path, strerror(errno));
        return 1;
    }
    c->pending[c->queued % RING] = o;
    c->queued++;
    c->posted = true;
    return 0;
}

/* Every rank's input of collective seq into parts[r] (this rank's own buffer for its own),
 * or false when one is not there yet. */
static bool read_parts(const fake_comm *c, int64_t seq, op *parts, void **data) {
    const op *mine = &c->pending[seq % RING];
    size_t bytes = op_bytes(mine);
    bool ok = true;
    for (int r = 0; r < c->size && ok; r++) {
        parts[r] = *mine;
        parts[r].recv = r == c->rank ? mine->recv : NULL;
        if (r == c->rank) continue;
        char path[4200];
        part_path(c, seq, r, path, sizeof path);
        FILE *f = fopen(path, "rb");
        data[r] = malloc(bytes ? bytes : 1);
        ok = f && data[r] && fread(data[r], 1, bytes, f) == bytes;
        if (f) fclose(f);
        parts[r].buf = data[r];
    }
    return ok;
}

/* End this rank's collectives, in order, while every rank's input of the next is there. */
static void process_advance(fake_comm *c) {
    while (c->completed < c->queued) {
        op parts[MAX_RANKS];
        void *data[MAX_RANKS] = {0};
        bool ready = read_parts(c, c->completed, parts, data);
        if (ready) run(parts, c->size);
        for (int r = 0; r < c->size; r++) free(data[r]);
        if (!ready) return;
        c->completed++;
    }
}

static int queue(void *comm, op o, char *err, size_t err_size) {
    fake_comm *c = comm;
    if (!c->w) return process_queue(c, o, err, err_size);
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
        run(w->ring[w->completed % RING], w->size);
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
    e->w = c->w, e->c = c, e->seq = c->w ? c->w->queued[c->rank] : c->queued;
    pthread_mutex_unlock(&lock);
    *event = e;
    return 0;
}

static int fake_query(void *event, char *err, size_t err_size) {
    fake_event *e = event;
    pthread_mutex_lock(&lock);
    if (!e->w) process_advance(e->c);
    int done = (e->w ? e->w->completed : e->c->completed) >= e->seq;
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

/* Quiescent at once, unless collectives never end (FAKE_NCCL_HANG): then never (fake_state). */
static int fake_finalize(void *comm, char *err, size_t err_size) {
    fake_comm *c = comm;
    pthread_mutex_lock(&lock);
    c->finalizing = true;
    pthread_mutex_unlock(&lock);
    return 0;
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
                                .finalize = fake_finalize,
                                .destroy = fake_destroy};

EXPORT const void *ct_nccl_plugin_entry(void) { return &api; }

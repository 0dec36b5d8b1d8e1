/* The threads engine: the ranks are threads of one process sharing a group. A collective is
 * two timed rendezvous: at the first each rank posts its collective and, once all have, each
 * compares every rank's fingerprint and then does its share of the work (rank r reduces or
 * copies the r-th slice of the elements, across every rank's buffer, in rank order, so every
 * rank gets the same bits); the second keeps every buffer alive until all shares are done.
 * A rank that gives up at its deadline breaks the group, which wakes and fails the others.
 *
 * Also ct_comm_spawn, which runs one replica per thread with its device and cores. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "dist/comm_impl.h"

typedef struct group {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int size, refs;
    uint64_t generation; /* rendezvous completed */
    int arrived;
    uint64_t reached[CT__COMM_MAX_THREADS]; /* the rendezvous each rank reached last */
    ct__coll *posted[CT__COMM_MAX_THREADS];
    bool broken;
    char why[512];
} group;

typedef struct rank_state {
    group *g;
    uint64_t target; /* the rendezvous this rank waits for */
} rank_state;

static struct timespec as_realtime(double deadline) {
    double left = deadline - ct__comm_now();
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (left < 0) left = 0;
    long long ns = (long long)now.tv_nsec + (long long)((left - (long long)left) * 1e9);
    return (struct timespec){now.tv_sec + (time_t)left + (time_t)(ns / 1000000000),
                             (long)(ns % 1000000000)};
}

/* The ranks that have not reached rendezvous `target`, as "ranks 1, 3 not heard from". */
static void list_missing(const group *g, uint64_t target, char *buf, size_t size) {
    int n = snprintf(buf, size, "ranks not heard from:");
    for (int r = 0; r < g->size && n > 0 && (size_t)n < size; r++)
        if (g->reached[r] < target) n += snprintf(buf + n, size - (size_t)n, " %d", r);
}

/* Wait at the group's next rendezvous until every rank is there, the group breaks or the
 * deadline passes. Called with the lock held. */
static ct_status rendezvous(ct_comm *comm, ct__coll *coll) {
    rank_state *s = comm->state;
    group *g = s->g;
    s->target = g->generation + 1;
    g->reached[comm->rank] = s->target;
    if (!g->broken && ++g->arrived == g->size) {
        g->arrived = 0;
        g->generation++;
        pthread_cond_broadcast(&g->changed);
        return CT_OK;
    }
    struct timespec until = as_realtime(coll->deadline);
    while (!g->broken && g->generation < s->target) {
        int rc = pthread_cond_timedwait(&g->changed, &g->lock, &until);
        if (rc == ETIMEDOUT && g->generation < s->target) break;
    }
    if (g->generation >= s->target) return CT_OK;
    if (g->broken) return ct__comm_fail(comm, "%s", g->why);
    char missing[160];
    list_missing(g, s->target, missing, sizeof missing);
    char name[64];
    snprintf(name, sizeof name, "%s #%llu", ct__coll_name(coll->kind),
             (unsigned long long)coll->seq);
    snprintf(g->why, sizeof g->why,
             "%s on %s timed out after %g s at rank %d of %d (threads): %s; a rank stopped or "
             "called other collectives (raise the deadline with CT_COMM_TIMEOUT or "
             "ct_comm_set_timeout if it is only slow)",
             name, coll->what, coll->deadline - coll->started, comm->rank, comm->size, missing);
    g->broken = true;
    pthread_cond_broadcast(&g->changed);
    return ct__comm_fail(comm, "%s", g->why);
}

/* Elements [from, to) of every rank's buffer summed in rank order into each buffer. */
#define REDUCE_SLICE(T)                                                                            \
    for (int64_t i = from; i < to; i++) {                                                          \
        T sum = 0;                                                                                 \
        for (int r = 0; r < n; r++) sum += ((const T *)posted[r]->buf)[i];                         \
        if (avg) sum = (T)(sum / n);                                                               \
        for (int r = 0; r < n; r++) ((T *)posted[r]->buf)[i] = sum;                                \
    }

static void reduce_slice(ct__coll *const *posted, int n, int64_t from, int64_t to) {
    bool avg = posted[0]->op == CT_COMM_AVG;
    switch (posted[0]->dtype) {
    case CT_F32: REDUCE_SLICE(float); break;
    case CT_F64: REDUCE_SLICE(double); break;
    case CT_I32: REDUCE_SLICE(int32_t); break;
    case CT_I64: REDUCE_SLICE(int64_t); break;
    default: break; /* refused by comm.c */
    }
}

/* This rank's share of the collective, once every rank has posted a matching one. */
static void do_share(const ct_comm *comm, ct__coll *const *posted) {
    int n = comm->size, r = comm->rank;
    const ct__coll *mine = posted[r];
    size_t esize = ct__dtype_size(mine->dtype);
    int64_t count = mine->count, from = count * r / n, to = count * (r + 1) / n;
    switch (mine->kind) {
    case CT__COLL_ALL_REDUCE: reduce_slice(posted, n, from, to); break;
    case CT__COLL_BROADCAST:
        for (int q = 0; q < n; q++)
            if (q != mine->root)
                memcpy((char *)posted[q]->buf + from * esize,
                       (const char *)posted[mine->root]->buf + from * esize,
                       (size_t)(to - from) * esize);
        break;
    case CT__COLL_ALL_GATHER:
        for (int q = 0; q < n; q++)
            memcpy((char *)posted[q]->out + (size_t)r * count * esize, mine->buf,
                   (size_t)count * esize);
        break;
    case CT__COLL_BARRIER: break;
    }
}

static ct_status threads_start(ct_comm *comm, ct__coll *coll) {
    rank_state *s = comm->state;
    group *g = s->g;
    pthread_mutex_lock(&g->lock);
    g->posted[comm->rank] = coll;
    ct_status status = rendezvous(comm, coll);
    ct__coll *posted[CT__COMM_MAX_THREADS];
    memcpy(posted, g->posted, sizeof posted);
    pthread_mutex_unlock(&g->lock);
    if (status != CT_OK) return status;
    ct__fingerprint fps[CT__COMM_MAX_THREADS];
    for (int r = 0; r < comm->size; r++) fps[r] = ct__coll_fingerprint(posted[r]);
    ct_status match = ct__coll_check_fingerprints(comm, coll, fps);
    if (match == CT_OK) do_share(comm, posted);
    pthread_mutex_lock(&g->lock);
    status = rendezvous(comm, coll);
    pthread_mutex_unlock(&g->lock);
    if (match != CT_OK) return match;
    coll->done = status == CT_OK;
    return status;
}

static ct_status threads_poll(ct_comm *comm, ct__coll *coll) { return CT_OK; }

/* Fail every rank's waits and collectives with why. */
static void break_group(ct_comm *comm, const char *why) {
    group *g = ((rank_state *)comm->state)->g;
    pthread_mutex_lock(&g->lock);
    snprintf(g->why, sizeof g->why, "%s", why);
    g->broken = true;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
}

static void group_drop(group *g) {
    pthread_mutex_lock(&g->lock);
    bool last = --g->refs == 0;
    pthread_mutex_unlock(&g->lock);
    if (!last) return;
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->changed);
    ct__free_mem(g);
}

static void threads_destroy(ct_comm *comm, bool clean) {
    rank_state *s = comm->state;
    group_drop(s->g);
    ct__free_mem(s);
}

static const ct__comm_engine threads_engine = {.name = "threads",
                                               .synchronous = true,
                                               .start = threads_start,
                                               .poll = threads_poll,
                                               .destroy = threads_destroy};

ct_status ct_comm_threads(int size, ct_comm **comms) {
    if (!comms) return ct__error(CT_ERR_INVALID_ARG, "ct_comm_threads: comms is NULL");
    if (size < 1 || size > CT__COMM_MAX_THREADS)
        return ct__error(CT_ERR_INVALID_ARG, "ct_comm_threads: size must be in 1..%d, got %d",
                         CT__COMM_MAX_THREADS, size);
    group *g = ct__calloc(1, sizeof *g);
    if (!g) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_comm_threads: out of host memory");
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->changed, NULL);
    g->size = size;
    g->refs = 1; /* dropped below, once every rank holds its own */
    int made = 0;
    for (; made < size; made++) {
        rank_state *s = ct__calloc(1, sizeof *s);
        comms[made] = s ? ct__comm_new(&threads_engine, made, size, made, s) : NULL;
        if (!comms[made]) {
            ct__free_mem(s);
            break;
        }
        s->g = g;
        g->refs++;
    }
    if (made < size) {
        for (int r = 0; r < made; r++) ct_comm_free(comms[r]);
        group_drop(g);
        return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_comm_threads: out of host memory");
    }
    group_drop(g);
    return CT_OK;
}

/* ---- one replica per thread ---- */

typedef struct replica {
    int rank, result, omp_threads;
    ct_comm *comm;
    ct_device device;
    ct_replica_fn fn;
    void *user;
} replica;

static void *run_replica(void *arg) {
    replica *r = arg;
#ifdef _OPENMP
    omp_set_num_threads(r->omp_threads);
#endif
    if (ct_device_push(r->device) != CT_OK) {
        r->result = -1;
        return NULL;
    }
    r->result = r->fn(r->rank, r->comm, r->device, r->user);
    /* A replica that failed will call no more collectives: the others, waiting in one or on
     * their way to the next, fail at once with its reason rather than at their deadline. */
    if (r->result != 0) {
        char device[32], why[512];
        ct_device_str(r->device, device, sizeof device);
        snprintf(why, sizeof why, "rank %d of %d (%s) stopped with an error: %s", r->rank,
                 r->comm->size, device, ct_last_error());
        break_group(r->comm, why);
    }
    ct_device_pop();
    return NULL;
}

int ct_comm_spawn(int size, ct_comm **comms, const ct_device *devices, ct_replica_fn fn,
                  void *user) {
    if (size < 1 || size > CT__COMM_MAX_THREADS || !comms || !devices || !fn) {
        ct__error(CT_ERR_INVALID_ARG,
                  "ct_comm_spawn: size must be in 1..%d and comms, devices "
                  "and fn given",
                  CT__COMM_MAX_THREADS);
        return -1;
    }
    replica reps[CT__COMM_MAX_THREADS];
    pthread_t threads[CT__COMM_MAX_THREADS];
    int cores = 1;
#ifdef _OPENMP
    cores = omp_get_max_threads();
#endif
    int share = cores / size > 0 ? cores / size : 1;
    for (int r = 0; r < size; r++) reps[r] = (replica){r, 0, share, comms[r], devices[r], fn, user};
    for (int r = 0; r < size; r++)
        if (!comms[r] || comms[r]->engine != &threads_engine || comms[r]->size != size ||
            comms[r]->rank != r) {
            ct__error(CT_ERR_INVALID_ARG,
                      "ct_comm_spawn: comms must be the %d ranks of one "
                      "ct_comm_threads group, in rank order",
                      size);
            return -1;
        }
    int started = 1;
    for (; started < size; started++)
        if (pthread_create(&threads[started], NULL, run_replica, &reps[started])) break;
    if (started < size) /* the ranks that started fail their first collective at once */
        break_group(comms[0], "ct_comm_spawn could not start the thread of every rank");
#ifdef _OPENMP
    int before = omp_get_max_threads();
#endif
    run_replica(&reps[0]);
#ifdef _OPENMP
    omp_set_num_threads(before);
#endif
    for (int r = 1; r < started; r++) pthread_join(threads[r], NULL);
    if (started < size) {
        ct__error(CT_ERR_OUT_OF_MEMORY, "ct_comm_spawn: could not start thread %d of %d", started,
                  size);
        return -1;
    }
    for (int r = 0; r < size; r++)
        if (reps[r].result) return reps[r].result;
    return 0;
}

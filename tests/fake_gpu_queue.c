/* The fake GPU's streams: fake_gpu_queue.h has the contract. Each device's state is under its
 * own lock; the worker takes an item from the head, runs it without the lock, and removes it
 * once it ran (so that a process forked meanwhile finds it still queued). Tests read the
 * queue and inject a failure through the ct_fake_gpu_* hooks at the end, which only this
 * plugin exports. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/device_wait_impl.h"
#include "fake_gpu_queue.h"

#define EXPORT __attribute__((visibility("default")))
/* The queue's bound: past this many items or bytes of host memory held, a submission first
 * waits for the queue (a full launch queue blocks the host in CUDA too). */
#define MAX_ITEMS 1024
#define MAX_BYTES ((size_t)256 << 20)

typedef struct item {
    struct item *next;
    uint64_t seq;
    const char *name;
    fake_work_fn run;
    void *payload;
    size_t bytes;
    bool callers;    /* payload is the caller's, who waits for it (fake_queue_run) */
    bool abandoned;  /* a caller's item whose caller gave up at the deadline: not run, freed */
    int omp_threads; /* the submitting thread's OpenMP thread count, which the work gets */
    ct_status status;
    char message[1400];
} item;

typedef struct stream {
    pthread_mutex_t lock;
    pthread_cond_t work; /* to the worker: more demanded, or stop */
    pthread_cond_t done; /* to the waiters: completed grew */
    pthread_t worker;
    bool started, stopping;
    bool inline_running; /* a waiting thread runs an item (no worker runs) */
    bool stalled;        /* a test's stuck stream: no item starts (ct_fake_gpu_stall) */
    item *running;       /* the item being run, if any */
    item *head, *tail;
    uint64_t queued, completed, demand; /* items numbered 1, 2, ...; run up to demand */
    size_t bytes;
    bool fail_next; /* a test's injected failure of the next item */
    ct_status error;
    char error_message[1400];
} stream;

static const ct__plugin_host *host;
static stream streams[FAKE_GPU_DEVICES];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void prepare_fork(void) {
    for (int d = 0; d < FAKE_GPU_DEVICES; d++) pthread_mutex_lock(&streams[d].lock);
}

static void parent_after_fork(void) {
    for (int d = 0; d < FAKE_GPU_DEVICES; d++) pthread_mutex_unlock(&streams[d].lock);
}

/* A forked child has no worker: it starts its own when it first waits. */
static void child_after_fork(void) {
    for (int d = 0; d < FAKE_GPU_DEVICES; d++) {
        streams[d].started = streams[d].inline_running = false;
        pthread_mutex_unlock(&streams[d].lock);
    }
}

static void init_streams(void) {
    for (int d = 0; d < FAKE_GPU_DEVICES; d++) {
        pthread_mutex_init(&streams[d].lock, NULL);
        pthread_cond_init(&streams[d].work, NULL);
        pthread_condattr_t monotonic;
        pthread_condattr_init(&monotonic);
        pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
        pthread_cond_init(&streams[d].done, &monotonic);
        pthread_condattr_destroy(&monotonic);
    }
    pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
}

void fake_queue_init(const ct__plugin_host *the_host) {
    host = the_host;
    pthread_once(&init_once, init_streams);
}

const ct__plugin_host *fake_queue_host(void) { return host; }

static ct_status report(ct_status status, const char *message) {
    return host ? host->set_error(status, message) : status;
}

/* The sticky error, recorded on the calling thread (lock held). */
static ct_status sticky(stream *s) { return report(s->error, s->error_message); }

/* Runs the head item (lock held; released while the item runs) and takes it off the queue:
 * its work, the injected failure, or, after a sticky error, nothing (the item fails with it);
 * an abandoned item is not run, and freed. A failure of an item no caller waits for becomes
 * the sticky error. */
static void run_head(stream *s) {
    item *it = s->head;
    if (it->abandoned) {
        s->head = it->next;
        if (!s->head) s->tail = NULL;
        s->completed = it->seq;
        free(it);
        pthread_cond_broadcast(&s->done);
        return;
    }
    bool fail = s->fail_next, dropped = s->error != CT_OK;
    s->fail_next = false;
    s->running = it;
    ct_status status = dropped ? s->error : CT_OK;
    char message[1024] = "";
    pthread_mutex_unlock(&s->lock);
    if (fail) {
        status = CT_ERR_BACKEND;
        snprintf(message, sizeof message, "a failure the test injected (ct_fake_gpu_fail_next)");
    } else if (!dropped) {
#ifdef _OPENMP
        omp_set_num_threads(it->omp_threads);
#endif
        status = it->run(it->payload, message, sizeof message);
    }
    pthread_mutex_lock(&s->lock);
    s->running = NULL;
    s->head = it->next;
    if (!s->head) s->tail = NULL;
    s->completed = it->seq;
    s->bytes -= it->bytes;
    if (it->callers) {
        it->status = status;
        snprintf(it->message, sizeof it->message, "%s", dropped ? s->error_message : message);
    } else {
        if (status != CT_OK && s->error == CT_OK) {
            s->error = status;
            snprintf(
                s->error_message, sizeof s->error_message,
                "cuda:%d: the queued kernel %s failed: %.1024s (an asynchronous error, reported "
                "by every later call on the device, as CUDA does)",
                (int)(s - streams), it->name, message);
        }
        free(it->payload);
        free(it);
    }
    pthread_cond_broadcast(&s->done);
}

static void *worker_main(void *arg) {
    stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stopping && !(s->head && s->head->seq <= s->demand && !s->stalled))
            pthread_cond_wait(&s->work, &s->lock);
        if (s->stopping) break;
        run_head(s);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Demands the work up to seq of the worker (lock held), started if need be. */
static void demand(stream *s, uint64_t seq) {
    if (!s->started && !s->stopping)
        s->started = pthread_create(&s->worker, NULL, worker_main, s) == 0;
    if (seq > s->demand) {
        s->demand = seq;
        pthread_cond_signal(&s->work);
    }
}

typedef struct wait_for {
    stream *s;
    uint64_t seq;
} wait_for;

/* One look of the device wait (lock held, released while it naps) at the work up to seq.
 * Where no worker runs (none could start, or it stopped at exit) the waiting threads run the
 * work, one item at a time, in order. */
static ct__wait_state look(void *arg, double nap) {
    wait_for *w = arg;
    stream *s = w->s;
    demand(s, w->seq);
    if (s->completed < w->seq && !s->started && !s->inline_running && !s->stalled) {
        s->inline_running = true;
        run_head(s);
        s->inline_running = false;
    } else if (s->completed < w->seq && nap > 0) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        long ns = until.tv_nsec + (long)(nap * 1e9);
        until.tv_sec += ns / 1000000000L;
        until.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&s->done, &s->lock, &until);
    }
    return s->completed >= w->seq ? CT__WAIT_DONE : CT__WAIT_PENDING;
}

/* Waits for the work up to seq (lock held) through the device wait: true once it ran, false
 * when CT_DEVICE_TIMEOUT passed first (*timeout gets it). */
static bool wait_locked(stream *s, uint64_t seq, double *timeout) {
    return ct__device_wait(look, &(wait_for){s, seq}, host, timeout) == CT__WAIT_DONE;
}

/* The error of a wait for `what` on the device that passed its deadline. */
static ct_status timed_out(stream *s, const char *what, double timeout) {
    char device[32];
    snprintf(device, sizeof device, "cuda:%d", (int)(s - streams));
    return ct__device_timed_out(host, device, what, timeout);
}

/* Appends it and sets *seq to its number: CT_OK, or the sticky error (it not queued, *seq 0),
 * unless it is a caller's, which is queued and fails with that error; or, when the queue is
 * full and does not drain by the deadline, that error (it not queued, *seq 0). */
static ct_status enqueue(stream *s, item *it, uint64_t *seq) {
    pthread_mutex_lock(&s->lock);
    *seq = 0;
    double timeout;
    if ((s->queued - s->completed >= MAX_ITEMS || s->bytes + it->bytes > MAX_BYTES) &&
        !wait_locked(s, s->queued, &timeout)) {
        ct_status status = timed_out(s, "a full queue (a submission waits for room)", timeout);
        pthread_mutex_unlock(&s->lock);
        return status;
    }
    if (s->error != CT_OK && !it->callers) {
        ct_status status = sticky(s);
        pthread_mutex_unlock(&s->lock);
        return status;
    }
    *seq = it->seq = ++s->queued;
    s->bytes += it->bytes;
    if (s->tail)
        s->tail->next = it;
    else
        s->head = it;
    s->tail = it;
    pthread_mutex_unlock(&s->lock);
    return CT_OK;
}

static void fill_item(item *it, const char *name, fake_work_fn run, void *payload, size_t bytes,
                      bool callers) {
    *it = (item){.name = name, .run = run, .payload = payload, .bytes = bytes, .callers = callers};
#ifdef _OPENMP
    it->omp_threads = omp_get_max_threads();
#endif
}

ct_status fake_queue_submit(int device, const char *name, fake_work_fn run, void *payload,
                            size_t bytes, uint64_t *seq) {
    item *it = malloc(sizeof *it);
    if (!it) {
        free(payload);
        return report(CT_ERR_OUT_OF_MEMORY, "fake GPU: out of host memory for a queue item");
    }
    fill_item(it, name, run, payload, bytes, false);
    uint64_t number;
    ct_status status = enqueue(&streams[device], it, &number);
    if (status != CT_OK) {
        free(payload);
        free(it);
    }
    if (seq) *seq = number;
    return status;
}

/* The item is on the heap so that a caller who gives up at the deadline can leave it queued,
 * abandoned (the worker frees it without running it). One that already runs is a CPU kernel,
 * which ends: the caller waits for it, since it writes the caller's payload. */
ct_status fake_queue_run(int device, const char *name, fake_work_fn run, void *payload) {
    item *it = malloc(sizeof *it);
    if (!it) return report(CT_ERR_OUT_OF_MEMORY, "fake GPU: out of host memory for a queue item");
    fill_item(it, name, run, payload, 0, true);
    stream *s = &streams[device];
    uint64_t seq;
    ct_status status = enqueue(s, it, &seq);
    if (!seq) {
        free(it);
        return status;
    }
    pthread_mutex_lock(&s->lock);
    double timeout;
    if (!wait_locked(s, seq, &timeout)) {
        if (s->running != it) {
            it->abandoned = true;
            status = timed_out(s, name, timeout);
            pthread_mutex_unlock(&s->lock);
            return status;
        }
        while (s->completed < seq) pthread_cond_wait(&s->done, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    status = it->status == CT_OK ? CT_OK : report(it->status, it->message);
    free(it);
    return status;
}

ct_status fake_queue_wait(int device, uint64_t seq) {
    stream *s = &streams[device];
    pthread_mutex_lock(&s->lock);
    double timeout;
    ct_status status = !wait_locked(s, seq, &timeout)
                           ? timed_out(s, "the work queued on its stream", timeout)
                       : s->error == CT_OK ? CT_OK
                                           : sticky(s);
    pthread_mutex_unlock(&s->lock);
    return status;
}

ct_status fake_queue_drain(int device) {
    stream *s = &streams[device];
    pthread_mutex_lock(&s->lock);
    uint64_t all = s->queued;
    pthread_mutex_unlock(&s->lock);
    return fake_queue_wait(device, all);
}

bool fake_queue_done(int device, uint64_t seq, bool wait) {
    stream *s = &streams[device];
    pthread_mutex_lock(&s->lock);
    if (seq > s->queued) seq = s->queued;
    double timeout;
    if (wait)
        wait_locked(s, seq, &timeout);
    else
        demand(s, s->queued);
    bool done = s->completed >= seq || s->error != CT_OK;
    pthread_mutex_unlock(&s->lock);
    return done;
}

/* At exit or unload: the worker ends after the item it runs, and what is still queued is
 * dropped, as a GPU context's pending work is at process exit. */
__attribute__((destructor)) static void stop_workers(void) {
    if (!host) return; /* never initialised */
    for (int d = 0; d < FAKE_GPU_DEVICES; d++) {
        stream *s = &streams[d];
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        bool started = s->started;
        pthread_cond_signal(&s->work);
        pthread_mutex_unlock(&s->lock);
        if (started) pthread_join(s->worker, NULL);
        pthread_mutex_lock(&s->lock);
        s->started = false; /* work queued from now on runs on the thread that waits for it */
        while (s->head) {
            item *it = s->head;
            s->head = it->next;
            s->completed = it->seq;
            if (it->callers && !it->abandoned) {
                it->status = CT_ERR_BACKEND;
                snprintf(it->message, sizeof it->message, "fake GPU: dropped at exit");
            } else {
                if (!it->callers) free(it->payload);
                free(it);
            }
        }
        s->tail = NULL;
        s->bytes = 0;
        pthread_cond_broadcast(&s->done);
        pthread_mutex_unlock(&s->lock);
    }
}

/* ---- hooks for the tests (tests/test_fake_gpu_async.c, python/tests) ---- */

/* The work queued on the device and not run yet. */
EXPORT uint64_t ct_fake_gpu_pending(int device) {
    stream *s = &streams[device];
    pthread_mutex_lock(&s->lock);
    uint64_t pending = s->queued - s->completed;
    pthread_mutex_unlock(&s->lock);
    return pending;
}

/* The next item the worker runs fails, as a kernel may on a GPU. */
EXPORT void ct_fake_gpu_fail_next(int device) {
    stream *s = &streams[device];
    pthread_mutex_lock(&s->lock);
    s->fail_next = true;
    pthread_mutex_unlock(&s->lock);
}

/* After the queued work: the sticky error cleared, as cudaDeviceReset clears it. */
EXPORT void ct_fake_gpu_reset(int device) {
    stream *s = &streams[device];
    pthread_mutex_lock(&s->lock);
    double timeout;
    wait_locked(s, s->queued, &timeout);
    s->error = CT_OK;
    s->error_message[0] = '\0';
    pthread_mutex_unlock(&s->lock);
}

/* Stalled, the device's stream starts no item, as a GPU stuck in a kernel that does not end;
 * released, it runs on. */
EXPORT void ct_fake_gpu_stall(int device, bool stalled) {
    stream *s = &streams[device];
    pthread_mutex_lock(&s->lock);
    s->stalled = stalled;
    pthread_cond_signal(&s->work);
    pthread_cond_broadcast(&s->done);
    pthread_mutex_unlock(&s->lock);
}

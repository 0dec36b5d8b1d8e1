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

#ifdef _OPENMP
#include <omp.h>
#endif

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
    bool callers;    /* payload and item are the caller's, who waits for it (fake_queue_run) */
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
        pthread_cond_init(&streams[d].done, NULL);
    }
    pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
}

void fake_queue_init(const ct__plugin_host *the_host) {
    host = the_host;
    pthread_once(&init_once, init_streams);
}

static ct_status report(ct_status status, const char *message) {
    return host ? host->set_error(status, message) : status;
}

/* The sticky error, recorded on the calling thread (lock held). */
static ct_status sticky(stream *s) { return report(s->error, s->error_message); }

/* Runs the head item (lock held; released while the item runs) and takes it off the queue:
 * its work, the injected failure, or, after a sticky error, nothing (the item fails with it).
 * A failure of an item no caller waits for becomes the sticky error. */
static void run_head(stream *s) {
    item *it = s->head;
    bool fail = s->fail_next, dropped = s->error != CT_OK;
    s->fail_next = false;
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
        while (!s->stopping && !(s->head && s->head->seq <= s->demand))
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

/* Waits for the work up to seq (lock held). Where no worker runs (none could start, or it
 * stopped at exit) the waiting threads run the work, one item at a time, in order. */
static void wait_locked(stream *s, uint64_t seq) {
    demand(s, seq);
    while (s->completed < seq) {
        if (s->started || s->inline_running) {
            pthread_cond_wait(&s->done, &s->lock);
            continue;
        }
        s->inline_running = true;
        run_head(s);
        s->inline_running = false;
    }
}

/* Appends it and sets *seq to its number: CT_OK, or the sticky error (it not queued, *seq 0),
 * unless it is a caller's, which is queued and fails with that error. */
static ct_status enqueue(stream *s, item *it, uint64_t *seq) {
    pthread_mutex_lock(&s->lock);
    if (s->queued - s->completed >= MAX_ITEMS || s->bytes + it->bytes > MAX_BYTES)
        wait_locked(s, s->queued);
    *seq = 0;
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

ct_status fake_queue_run(int device, const char *name, fake_work_fn run, void *payload) {
    item it;
    fill_item(&it, name, run, payload, 0, true);
    stream *s = &streams[device];
    uint64_t seq;
    enqueue(s, &it, &seq);
    pthread_mutex_lock(&s->lock);
    wait_locked(s, seq);
    pthread_mutex_unlock(&s->lock);
    return it.status == CT_OK ? CT_OK : report(it.status, it.message);
}

ct_status fake_queue_wait(int device, uint64_t seq) {
    stream *s = &streams[device];
    pthread_mutex_lock(&s->lock);
    wait_locked(s, seq);
    ct_status status = s->error == CT_OK ? CT_OK : sticky(s);
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
    if (wait)
        wait_locked(s, seq);
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
            if (it->callers) {
                it->status = CT_ERR_BACKEND;
                snprintf(it->message, sizeof it->message, "fake GPU: dropped at exit");
            } else {
                free(it->payload);
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
    wait_locked(s, s->queued);
    s->error = CT_OK;
    s->error_message[0] = '\0';
    pthread_mutex_unlock(&s->lock);
}

/* The data loader's deadlines: a worker stuck in a batch makes ct_loader_next and
 * ct_loader_start_epoch fail at the options' timeout with CT_ERR_BACKEND naming the batch,
 * ct_loader_free return, and the loader still works, or is freed, once the worker ends. The
 * stuck worker is a stand-in for the batch preparation (the loader's prepare seam) that
 * blocks at a gate the test opens; the gate has its own deadline, so no run can hang. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "ct_test.h"
#include "data/loader_impl.h"

enum { N = 40, F = 3, BATCH = 8 };

/* Seconds the gate holds a worker at most, whatever the test does. */
#define GATE_LIMIT 30.0

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool open;
    int entered; /* batches that reached the gate */
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The realtime clock `seconds` from now (the gate's condition variable keeps the default
 * clock). */
static struct timespec realtime_in(double seconds) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    long long ns = t.tv_nsec + (long long)((seconds - (long long)seconds) * 1e9);
    t.tv_sec += (time_t)seconds + (time_t)(ns / 1000000000);
    t.tv_nsec = (long)(ns % 1000000000);
    return t;
}

static void gate_set(bool open) {
    pthread_mutex_lock(&gate.lock);
    gate.open = open;
    if (!open) gate.entered = 0;
    pthread_cond_broadcast(&gate.changed);
    pthread_mutex_unlock(&gate.lock);
}

/* Whether `count` batches reached the gate within GATE_LIMIT seconds. */
static bool gate_reached(int count) {
    struct timespec until = realtime_in(GATE_LIMIT);
    pthread_mutex_lock(&gate.lock);
    while (gate.entered < count &&
           pthread_cond_timedwait(&gate.changed, &gate.lock, &until) != ETIMEDOUT) {
    }
    bool reached = gate.entered >= count;
    pthread_mutex_unlock(&gate.lock);
    return reached;
}

/* The loader's prepare, once the gate opens (or its limit passes). */
static void gated_prepare(const ct_loader *l, const int64_t *order, int64_t epoch, int64_t b,
                          ct__loader_slot *out) {
    struct timespec until = realtime_in(GATE_LIMIT);
    pthread_mutex_lock(&gate.lock);
    gate.entered++;
    pthread_cond_broadcast(&gate.changed);
    while (!gate.open && pthread_cond_timedwait(&gate.changed, &gate.lock, &until) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&gate.lock);
    ct__loader_prepare(l, order, epoch, b, out);
}

static void make_dataset(ct_tensor **inputs, ct_tensor **labels) {
    static float values[N * F];
    static int64_t ids[N];
    for (int n = 0; n < N; n++) {
        ids[n] = n;
        for (int k = 0; k < F; k++) values[n * F + k] = (float)(n * F + k);
    }
    *inputs = ct_from_data(values, 2, (int64_t[]){N, F}, CT_F32, CT_CPU);
    *labels = ct_from_data(ids, 1, (int64_t[]){N}, CT_I64, CT_CPU);
}

/* A loader over the dataset with `workers` workers, batches prepared by gated_prepare. */
static ct_loader *gated_loader(const ct_tensor *inputs, const ct_tensor *labels, int workers,
                               double timeout) {
    ct_loader *l = ct_loader_new(
        inputs, labels,
        &(ct_loader_options){.batch_size = BATCH, .workers = workers, .timeout = timeout});
    if (l) l->prepare = gated_prepare; /* before any epoch: no worker has read it yet */
    return l;
}

TEST(test_loader_stuck_worker_is_an_error_not_a_hang) {
    ct_tensor *inputs, *labels;
    make_dataset(&inputs, &labels);
    gate_set(false);
    ct_loader *l = gated_loader(inputs, labels, 1, 0.5);
    CHECK_NOT_NULL(l);
    CHECK_OK(ct_loader_start_epoch(l, 0));
    ct_tensor *x = NULL, *y = NULL;
    double started = now();
    ct_status next = ct_loader_next(l, &x, &y);
    double waited = now() - started;
    char next_error[512];
    snprintf(next_error, sizeof next_error, "%s", ct_last_error());
    ct_clear_error();
    /* The worker still holds batch 0 of epoch 0: a new epoch cannot start either. */
    ct_status restart = ct_loader_start_epoch(l, 1);
    char restart_error[512];
    snprintf(restart_error, sizeof restart_error, "%s", ct_last_error());
    ct_clear_error();
    gate_set(true);
    CHECK(next == CT_ERR_BACKEND && x == NULL && y == NULL);
    CHECK(strstr(next_error, "ct_loader_next: batch 0 of epoch 0 (of 5) not ready after 0.5 s"));
    CHECK(strstr(next_error, "ct_loader_options.timeout"));
    CHECK(waited >= 0.4 && waited < 10);
    CHECK(restart == CT_ERR_BACKEND);
    CHECK(strstr(restart_error, "epoch 1 cannot start: 1 batch of the data loader's epoch 0 is "
                                "still being prepared after 0.5 s"));
    /* The worker ends its batch now that the gate is open: the next start waits for it. */
    ct_status status = CT_ERR_BACKEND;
    for (int i = 0; i < 20 && status == CT_ERR_BACKEND; i++) status = ct_loader_start_epoch(l, 1);
    CHECK_OK(status);
    int64_t samples = 0;
    for (;;) {
        CHECK_OK(ct_loader_next(l, &x, &y));
        if (!x) break;
        samples += ct_size(y, 0);
        ct_release(x);
        ct_release(y);
    }
    CHECK(samples == N);
    ct_loader_free(l);
    ct_release(inputs);
    ct_release(labels);
}

/* ct_loader_free with workers stuck returns at the deadline; the last worker to end frees the
 * loader, which drops its references to the dataset. */
TEST(test_loader_free_returns_while_a_worker_is_stuck) {
    ct_tensor *inputs, *labels;
    make_dataset(&inputs, &labels);
    gate_set(false);
    ct_loader *l = gated_loader(inputs, labels, 2, 0.2);
    CHECK_NOT_NULL(l);
    CHECK_OK(ct_loader_start_epoch(l, 0));
    bool reached = gate_reached(2);
    CHECK(atomic_load(&inputs->refcount) == 2); /* the test's and the loader's */
    double started = now();
    ct_loader_free(l);
    double waited = now() - started;
    gate_set(true);
    CHECK(reached);
    CHECK(waited >= 0.15 && waited < 10);
    double until = now() + GATE_LIMIT;
    while (atomic_load(&inputs->refcount) != 1 && now() < until)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    CHECK(atomic_load(&inputs->refcount) == 1);
    ct_release(inputs);
    ct_release(labels);
}

TEST(test_loader_timeout_option) {
    ct_tensor *inputs, *labels;
    make_dataset(&inputs, &labels);
    ct_loader *l = ct_loader_new(inputs, labels, &(ct_loader_options){.batch_size = BATCH});
    CHECK_NOT_NULL(l);
    CHECK(l->timeout == CT_LOADER_DEFAULT_TIMEOUT);
    ct_loader_free(l);
    /* A timeout past any real wait (its deadline is capped) still delivers the batches. */
    l = ct_loader_new(inputs, labels,
                      &(ct_loader_options){.batch_size = BATCH, .workers = 1, .timeout = 1e300});
    CHECK_NOT_NULL(l);
    CHECK_OK(ct_loader_start_epoch(l, 0));
    ct_tensor *x, *y;
    CHECK_OK(ct_loader_next(l, &x, &y));
    CHECK(x && ct_size(y, 0) == BATCH);
    ct_release(x);
    ct_release(y);
    ct_loader_free(l);
    CHECK(ct_loader_new(inputs, labels, &(ct_loader_options){.batch_size = 4, .timeout = -1}) ==
          NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "timeout must be a finite number of seconds");
    ct_release(inputs);
    ct_release(labels);
}

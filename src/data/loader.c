/* The data loader's queue: worker threads take batch numbers in order, prepare them
 * (loader_batch.c) without holding the lock, and publish them into a ring of slots that the
 * consumer drains in order. A worker runs at most `depth` batches ahead of the consumer.
 * Every wait of the caller for a worker ends at a deadline (the options' timeout), so a
 * worker stuck in a batch is an error naming it, never a hang. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/device_impl.h"
#include "data/loader_impl.h"
#include "ops/op_impl.h"

static void clear_slot(ct__loader_slot *slot) {
    ct_release(slot->inputs);
    ct_release(slot->labels);
    memset(slot, 0, sizeof *slot);
    slot->batch = -1;
}

/* The longest wait, in seconds (31 years): a longer timeout waits this long. */
#define CT_LOADER_LONGEST_WAIT 1e9

/* The CLOCK_MONOTONIC time `seconds` from now, for pthread_cond_timedwait on `changed`. */
static struct timespec deadline_in(double seconds) {
    if (seconds > CT_LOADER_LONGEST_WAIT) seconds = CT_LOADER_LONGEST_WAIT;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double whole = floor(seconds);
    long long ns = t.tv_nsec + (long long)((seconds - whole) * 1e9);
    t.tv_sec += (time_t)whole + (time_t)(ns / 1000000000);
    t.tv_nsec = (long)(ns % 1000000000);
    return t;
}

/* Wait on `changed` (lock held) until woken or the deadline; false once it has passed (or
 * the wait failed, which ends it as the deadline does). */
static bool wait_until(ct_loader *l, const struct timespec *deadline) {
    return pthread_cond_timedwait(&l->changed, &l->lock, deadline) == 0;
}

static void destroy(ct_loader *l);

static bool work_available(const ct_loader *l) {
    return l->started && l->next_to_prepare < l->batches &&
           l->next_to_prepare < l->consumed + l->depth;
}

/* A worker. Idle, it waits for work or the stop without a deadline: what it waits for is the
 * caller's next call, not another thread's progress. */
static void *worker_main(void *arg) {
    ct_loader *l = arg;
    pthread_mutex_lock(&l->lock);
    while (!l->stopping) {
        if (!work_available(l)) {
            pthread_cond_wait(&l->changed, &l->lock);
            continue;
        }
        int64_t b = l->next_to_prepare++;
        l->in_flight++;
        uint64_t generation = l->generation;
        int64_t epoch = l->epoch;
        const int64_t *order = l->order;
        pthread_mutex_unlock(&l->lock);
        ct__loader_slot prepared = {.batch = b};
        l->prepare(l, order, epoch, b, &prepared);
        pthread_mutex_lock(&l->lock);
        l->in_flight--;
        if (generation == l->generation) {
            l->slots[b % l->depth] = prepared;
            pthread_cond_broadcast(&l->changed);
        } else {
            clear_slot(&prepared); /* the epoch it belonged to was abandoned */
            pthread_cond_broadcast(&l->changed);
        }
    }
    l->running--;
    pthread_cond_broadcast(&l->changed); /* ct_loader_free waits for running to reach 0 */
    bool last = l->abandoned && l->running == 0;
    pthread_mutex_unlock(&l->lock);
    if (last) destroy(l);
    return NULL;
}

/* The options every loader checks, each argument named in its own message. */
static ct_status check_options(const char *op, const ct_loader_options *o) {
    if (o->batch_size <= 0)
        return ct__error(CT_ERR_INVALID_ARG, "%s: batch_size must be positive (got %lld)", op,
                         (long long)o->batch_size);
    if (!(o->timeout >= 0) || !isfinite(o->timeout))
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: timeout must be a finite number of seconds, 0 or more (got %g)", op,
                         o->timeout);
    if (o->workers < 0 || o->prefetch < 0 || o->crop_padding < 0)
        return ct__error(CT_ERR_INVALID_ARG, "%s: %s must not be negative (got %d)", op,
                         o->workers < 0    ? "workers"
                         : o->prefetch < 0 ? "prefetch"
                                           : "crop_padding",
                         o->workers < 0    ? o->workers
                         : o->prefetch < 0 ? o->prefetch
                                           : o->crop_padding);
    int shards = o->shard_count ? o->shard_count : 1;
    if (shards < 1 || o->shard_index < 0 || o->shard_index >= shards)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: shard_index must be in 0..shard_count-1 (got %d of %d)", op,
                         o->shard_index, o->shard_count);
    return CT_OK;
}

/* An epoch's order is count + 1 int64 in one block. */
#define CT_LOADER_MAX_SAMPLES ((int64_t)(PTRDIFF_MAX / (ptrdiff_t)sizeof(int64_t)) - 1)

static ct_status check_count(const char *op, int64_t count) {
    if (count < 0 || count > CT_LOADER_MAX_SAMPLES)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: the dataset's length must be in 0..%lld (the samples an epoch's "
                         "order can hold); got %lld",
                         op, (long long)CT_LOADER_MAX_SAMPLES, (long long)count);
    return CT_OK;
}

static ct_status check_dataset(const ct_tensor *inputs, const ct_tensor *labels,
                               const ct_loader_options *o) {
    const char *op = "ct_loader_new";
    if (!inputs || !labels || !o) {
        ct__null_arg(op, !inputs ? 1 : !labels ? 2 : 3);
        return ct_last_status();
    }
    if (inputs->ndim < 2 || inputs->ndim > 4 || labels->ndim != 1 ||
        labels->shape[0] != inputs->shape[0])
        return ct__error(CT_ERR_SHAPE,
                         "%s: expected inputs (N, F), (N, H, W) or (N, C, H, W) and labels (N) "
                         "with the same N; got ranks %d and %d",
                         op, inputs->ndim, labels->ndim);
    if (ct__is_float(labels->dtype) || labels->dtype == CT_BOOL)
        return ct__error(CT_ERR_DTYPE, "%s: labels must be integers, got %s", op,
                         ct_dtype_name(labels->dtype));
    if (inputs->storage->device.type != CT_DEVICE_CPU ||
        labels->storage->device.type != CT_DEVICE_CPU)
        return ct__error(CT_ERR_DEVICE_MISMATCH,
                         "%s: the dataset must be in host memory (cpu); the loader moves each "
                         "batch to options.device",
                         op);
    ct_status status = check_options(op, o);
    if (status == CT_OK) status = check_count(op, inputs->shape[0]);
    if (status != CT_OK) return status;
    bool images = inputs->ndim >= 3;
    if (!images && (o->crop_padding || o->horizontal_flip))
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: crops and flips need images (N, H, W) or (N, C, H, W); the inputs "
                         "have rank 2",
                         op);
    if (inputs->ndim == 4 && inputs->shape[1] > CT_LOADER_MAX_CHANNELS)
        return ct__error(CT_ERR_SHAPE, "%s: images have %lld channels; at most %d are supported",
                         op, (long long)inputs->shape[1], CT_LOADER_MAX_CHANNELS);
    return CT_OK;
}

static void set_geometry(ct_loader *l) {
    const ct_tensor *in = l->inputs;
    l->count = in->shape[0];
    l->features = l->count ? in->numel / l->count : 0;
    if (in->ndim == 2) {
        l->channels = 1, l->height = 0, l->width = 0;
        l->features = in->shape[1];
        return;
    }
    l->channels = in->ndim == 4 ? (int)in->shape[1] : 1;
    l->height = (int)in->shape[in->ndim - 2];
    l->width = (int)in->shape[in->ndim - 1];
    l->features = (int64_t)l->channels * l->height * l->width;
}

static ct_status start_threads(ct_loader *l) {
    if (l->options.workers == 0) return CT_OK;
    l->threads = ct__calloc((size_t)l->options.workers, sizeof *l->threads);
    if (!l->threads) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_loader_new: out of host memory");
    for (int i = 0; i < l->options.workers; i++) {
        pthread_mutex_lock(&l->lock); /* a worker that ends at once finds itself counted */
        l->running++;
        pthread_mutex_unlock(&l->lock);
        if (pthread_create(&l->threads[i], NULL, worker_main, l) != 0) {
            pthread_mutex_lock(&l->lock);
            l->running--;
            pthread_mutex_unlock(&l->lock);
            return ct__error(CT_ERR_BACKEND, "ct_loader_new: cannot start worker thread %d of %d",
                             i + 1, l->options.workers);
        }
        l->nthreads++;
    }
    return CT_OK;
}

/* The queue and the order of a loader over `count` samples (l->options set), and its workers. */
static ct_status allocate(ct_loader *l, int64_t count) {
    const ct_loader_options *o = &l->options;
    l->count = count;
    l->batches = count / o->batch_size; /* not (count + size - 1) / size: it overflows */
    if (!o->drop_last && count % o->batch_size) l->batches++;
    l->depth = o->prefetch ? o->prefetch : 2 * (o->workers ? o->workers : 1);
    if (l->depth < 2) l->depth = 2;
    l->order = ct__calloc((size_t)count + 1, sizeof *l->order);
    l->slots = ct__calloc((size_t)l->depth, sizeof *l->slots);
    if (!l->order || !l->slots)
        return ct__error(CT_ERR_OUT_OF_MEMORY,
                         "ct_loader_new: out of host memory for %lld samples' order",
                         (long long)count);
    for (int i = 0; i < l->depth; i++) l->slots[i].batch = -1;
    return start_threads(l);
}

static ct_loader *loader_alloc(const ct_loader_options *options) {
    ct_loader *l = ct__calloc(1, sizeof *l);
    if (!l) return ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_loader_new: out of host memory");
    l->options = *options;
    l->timeout = options->timeout > 0 ? options->timeout : CT_LOADER_DEFAULT_TIMEOUT;
    l->prepare = ct__loader_prepare;
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&l->changed, &attr);
    pthread_condattr_destroy(&attr);
    return l;
}

ct_loader *ct_loader_new(const ct_tensor *inputs, const ct_tensor *labels,
                         const ct_loader_options *options) {
    if (check_dataset(inputs, labels, options) != CT_OK) return NULL;
    ct_loader *l = loader_alloc(options);
    if (!l) return NULL;
    ct_status status = ct__resolve_device("ct_loader_new", options->device, &l->options.device);
    l->inputs = status == CT_OK ? ct_contiguous(inputs) : NULL;
    l->labels = l->inputs ? ct_contiguous(labels) : NULL;
    if (l->labels) {
        ct__scope_forget(l->inputs); /* the loader owns them, whatever scope is open */
        ct__scope_forget(l->labels);
        set_geometry(l);
        status = allocate(l, inputs->shape[0]);
    }
    if (!l->labels || status != CT_OK) {
        ct_loader_free(l); /* sets no error: the first one stays */
        return NULL;
    }
    return l;
}

ct_loader *ct_loader_new_samples(int64_t count, const ct_loader_options *options) {
    const char *op = "ct_loader_new_samples";
    if (!options) return ct__null_arg(op, 2);
    if (check_options(op, options) != CT_OK || check_count(op, count) != CT_OK) return NULL;
    if (options->workers || options->prefetch)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "%s: workers and prefetch must be 0 (got %d and %d): a loader of sample "
                        "numbers prepares no batches",
                        op, options->workers, options->prefetch);
    ct_loader *l = loader_alloc(options);
    if (l && allocate(l, count) != CT_OK) {
        ct_loader_free(l);
        return NULL;
    }
    return l;
}

ct_tensor *ct_loader_batch_samples(const ct_loader *l, int64_t batch) {
    const char *op = "ct_loader_batch_samples";
    if (!l) return ct__null_arg(op, 1);
    if (!l->started)
        return ct__fail(CT_ERR_STATE, "%s: no epoch has started; call ct_loader_start_epoch first",
                        op);
    if (batch < 0 || batch >= l->batches)
        return ct__fail(CT_ERR_INVALID_ARG, "%s: batch must be in 0..%lld (got %lld)", op,
                        (long long)l->batches - 1, (long long)batch);
    int64_t start, end;
    ct__loader_batch_range(l, batch, &start, &end);
    int64_t rows = end - start;
    ct_tensor *samples = ct_empty(1, &rows, CT_I64, CT_CPU);
    if (samples) memcpy(ct__data(samples), l->order + start, sizeof(int64_t) * (size_t)rows);
    return samples;
}

int64_t ct_loader_batches(const ct_loader *loader) { return loader ? loader->batches : 0; }

ct_status ct_loader_start_epoch(ct_loader *l, int64_t epoch) {
    if (!l) {
        ct__null_arg("ct_loader_start_epoch", 1);
        return ct_last_status();
    }
    pthread_mutex_lock(&l->lock);
    l->started = false;
    l->generation++;
    for (int i = 0; i < l->depth; i++) clear_slot(&l->slots[i]);
    /* Batches in flight read the order: let them finish before it is rewritten. Past the
     * deadline the loader stays without an epoch (their batches are dropped whenever they
     * end), and a later call may start one. */
    struct timespec deadline = deadline_in(l->timeout);
    while (l->in_flight && wait_until(l, &deadline)) {
    }
    if (l->in_flight) {
        int in_flight = l->in_flight;
        pthread_mutex_unlock(&l->lock);
        return ct__error(CT_ERR_BACKEND,
                         "ct_loader_start_epoch: epoch %lld cannot start: %d batch%s of the data "
                         "loader's epoch %lld %s still being prepared after %g s (a worker is "
                         "stuck; raise ct_loader_options.timeout if batches are only slow)",
                         (long long)epoch, in_flight, in_flight == 1 ? "" : "es",
                         (long long)l->epoch, in_flight == 1 ? "is" : "are", l->timeout);
    }
    pthread_mutex_unlock(&l->lock);
    ct__loader_order(l, epoch);
    pthread_mutex_lock(&l->lock);
    l->epoch = epoch;
    l->next_to_prepare = 0;
    l->consumed = 0;
    l->started = true;
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->lock);
    return CT_OK;
}

/* Batch b, prepared here (no workers) or taken from its slot once a worker published it;
 * a batch no worker published by the deadline is a failed batch, not taken. */
static void take_batch(ct_loader *l, int64_t b, ct__loader_slot *out) {
    if (l->nthreads == 0) {
        *out = (ct__loader_slot){.batch = b};
        l->prepare(l, l->order, l->epoch, b, out);
        l->consumed++;
        return;
    }
    pthread_mutex_lock(&l->lock);
    ct__loader_slot *slot = &l->slots[b % l->depth];
    struct timespec deadline = deadline_in(l->timeout);
    while (slot->batch != b && wait_until(l, &deadline)) {
    }
    if (slot->batch != b) {
        pthread_mutex_unlock(&l->lock);
        *out = (ct__loader_slot){.batch = b, .status = CT_ERR_BACKEND};
        snprintf(out->message, sizeof out->message,
                 "ct_loader_next: batch %lld of epoch %lld (of %lld) not ready after %g s: a "
                 "worker of the data loader (%d worker%s) is stuck or has ended (raise "
                 "ct_loader_options.timeout if batches are only slow)",
                 (long long)b, (long long)l->epoch, (long long)l->batches, l->timeout, l->nthreads,
                 l->nthreads == 1 ? "" : "s");
        return;
    }
    *out = *slot;
    memset(slot, 0, sizeof *slot);
    slot->batch = -1;
    l->consumed++;
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->lock);
    /* Made on a worker thread, outside any scope: the caller's scope owns them now. */
    if (out->inputs) ct__scope_adopt(out->inputs);
    if (out->labels) ct__scope_adopt(out->labels);
}

ct_status ct_loader_next(ct_loader *l, ct_tensor **inputs, ct_tensor **labels) {
    if (!l || !inputs || !labels) {
        ct__null_arg("ct_loader_next", !l ? 1 : !inputs ? 2 : 3);
        return ct_last_status();
    }
    *inputs = *labels = NULL;
    if (!l->inputs)
        return ct__error(CT_ERR_STATE,
                         "ct_loader_next: a loader of sample numbers has no batches of tensors; "
                         "read them with ct_loader_batch_samples");
    if (!l->started)
        return ct__error(CT_ERR_STATE,
                         "ct_loader_next: no epoch has started; call ct_loader_start_epoch first");
    if (l->consumed >= l->batches) return CT_OK;
    ct__loader_slot batch;
    take_batch(l, l->consumed, &batch);
    if (batch.status != CT_OK) {
        /* Recorded before clear_slot, which zeroes the status and the message too. */
        ct_status status = ct__error(batch.status, "%s", batch.message);
        clear_slot(&batch);
        return status;
    }
    *inputs = batch.inputs;
    *labels = batch.labels;
    return CT_OK;
}

/* The loader's memory, once no worker runs; the dataset's references go last. */
static void destroy(ct_loader *l) {
    for (int i = 0; l->slots && i < l->depth; i++) clear_slot(&l->slots[i]);
    ct_tensor *inputs = l->inputs, *labels = l->labels;
    ct__free_mem(l->threads);
    ct__free_mem(l->slots);
    ct__free_mem(l->order);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->changed);
    ct__free_mem(l);
    if (labels) ct__tensor_drop(labels);
    if (inputs) ct__tensor_drop(inputs);
}

void ct_loader_free(ct_loader *l) {
    if (!l) return;
    pthread_mutex_lock(&l->lock);
    l->stopping = true;
    pthread_cond_broadcast(&l->changed);
    struct timespec deadline = deadline_in(l->timeout);
    while (l->running && wait_until(l, &deadline)) {
    }
    if (l->running) {
        /* A worker stuck in a batch: the workers free the loader, the last to end. */
        int stuck = l->in_flight;
        double timeout = l->timeout;
        for (int i = 0; i < l->nthreads; i++) pthread_detach(l->threads[i]);
        l->abandoned = true;
        pthread_mutex_unlock(&l->lock); /* from here on, l may be freed at any time */
        ct__log(CT_LOG_WARNING,
                "ct_loader_free: %d batch%s of the data loader %s still being prepared after "
                "%g s (a worker is stuck); the loader is freed when its workers end",
                stuck, stuck == 1 ? "" : "es", stuck == 1 ? "is" : "are", timeout);
        return;
    }
    pthread_mutex_unlock(&l->lock);
    /* Every worker is past its last use of the loader: these joins end at once. */
    for (int i = 0; i < l->nthreads; i++) pthread_join(l->threads[i], NULL);
    destroy(l);
}

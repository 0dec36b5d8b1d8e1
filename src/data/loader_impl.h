/* The data loader's state, shared by its queue (loader.c) and its batch assembly
 * (loader_batch.c). */
#ifndef CT_LOADER_IMPL_H
#define CT_LOADER_IMPL_H

#include <pthread.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ctensor/loader.h"

/* One prepared batch in the queue. */
typedef struct ct__loader_slot {
    int64_t batch; /* -1: empty */
    ct_tensor *inputs, *labels;
    ct_status status;
    char message[512];
} ct__loader_slot;

/* How a batch is prepared: ct__loader_prepare, unless a test puts a stand-in here before the
 * first epoch starts (a worker that blocks, to check the deadlines). */
typedef void (*ct__loader_prepare_fn)(const ct_loader *loader, const int64_t *order, int64_t epoch,
                                      int64_t b, ct__loader_slot *out);

/* ct_loader_options.timeout when it is 0: seconds to wait for a worker. */
#define CT_LOADER_DEFAULT_TIMEOUT 300.0

struct ct_loader {
    ct_loader_options options;
    double timeout; /* seconds any wait for the workers lasts at most (the options', resolved) */
    ct__loader_prepare_fn prepare;
    ct_tensor *inputs, *labels;  /* the dataset (CPU, contiguous); NULL: sample numbers only */
    int64_t count;               /* samples */
    int channels, height, width; /* images; height == 0 for features */
    int64_t features;            /* values per sample */
    int64_t batches;             /* per epoch */
    int64_t *order;              /* this epoch's sample order */
    int64_t epoch;

    /* The queue: batch b goes to slot b % depth once b < consumed + depth. `changed` runs on
     * CLOCK_MONOTONIC: every wait for a worker has a deadline. */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    ct__loader_slot *slots;
    int depth;
    int64_t next_to_prepare, consumed;
    int in_flight;       /* batches taken by workers and not yet published */
    uint64_t generation; /* bumped by each epoch start: stale batches are dropped */
    bool started, stopping;
    pthread_t *threads;
    int nthreads; /* started */
    int running;  /* started and not yet ended */
    /* Set by ct_loader_free when a worker did not end by the deadline: the workers are
     * detached, and the last one to end frees the loader. */
    bool abandoned;
};

/* A batch of at least this many values, made in the training thread (no workers), is split
 * over the OpenMP team. */
#define CT_LOADER_PARALLEL_THRESHOLD 32768

/* Positions [*start, *end) of the epoch's order that batch b takes on this shard. */
void ct__loader_batch_range(const ct_loader *loader, int64_t b, int64_t *start, int64_t *end);
/* Fill loader->order for epoch (identity without shuffle). */
void ct__loader_order(ct_loader *loader, int64_t epoch);
/* Batch b of the current order as tensors on the loader's device; the status and message of
 * a failure go to the slot. Called by workers (or the consumer) without the lock. */
void ct__loader_prepare(const ct_loader *loader, const int64_t *order, int64_t epoch, int64_t b,
                        ct__loader_slot *out);

#endif

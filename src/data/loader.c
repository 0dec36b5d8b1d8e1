/* The data loader: per-epoch shuffles drawn from Philox(seed, epoch), batches gathered and
 * normalised by worker threads into a bounded ring of slots, handed out strictly in batch
 * order. Batch b's content depends only on (seed, epoch, b), so the number of workers
 * changes when a batch is made, never what it holds.
 *
 * The queue: workers claim batch numbers in order (next_claim) but only within `capacity` of
 * the consumer (next_take), so batch b always finds slot b % capacity empty; the consumer
 * waits on slot next_take % capacity. start_epoch stops claims, waits for batches in flight,
 * empties the slots and redraws the order before it lets the workers go again. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox_impl.h"
#include "ctensor/data.h"
#include "data/data_file_impl.h"
#include "ops/op_impl.h"

#define FN_NEW "ct_dataloader_new"
#define CT_LOADER_MAX_WORKERS 64

typedef struct {
    ct_tensor *inputs, *targets;
    ct_status status;
    char *message; /* the failure's message (ct__malloc), or NULL */
    bool filled;
} batch_slot;

struct ct_dataloader {
    ct_dataloader_params p;
    ct_tensor *inputs, *targets; /* contiguous CPU tensors, references no scope holds */
    int64_t n, batches;
    size_t in_row, target_row; /* bytes per sample */
    float u8_table[256];       /* u8 inputs to f32: each byte's normalised value */
    int64_t *order;            /* the epoch's sample order (n) */
    pthread_mutex_t lock;
    pthread_cond_t ready; /* a slot filled or a worker went idle: the consumer waits */
    pthread_cond_t room;  /* a slot emptied or the state changed: the workers wait */
    batch_slot *slots;
    int capacity, threads_started;
    pthread_t *threads;
    int64_t next_claim, next_take;
    int in_flight;
    bool started, active, stopping;
};

ct_dataloader_params ct_dataloader_params_default(void) {
    return (ct_dataloader_params){.batch_size = 64,
                                  .shuffle = true,
                                  .workers = 2,
                                  .prefetch = 4,
                                  .dtype = CT_F32,
                                  .scale = 1.0,
                                  .std = 1.0};
}

/* ---- the epoch's order ---- */

/* Fisher-Yates with the j-th draw from Philox block (epoch << 40) + j of stream seed, so the
 * order is a function of (seed, epoch) alone. The modulo's bias (n / 2^64) is negligible. */
static void draw_order(ct_dataloader *l, int64_t epoch) {
    for (int64_t i = 0; i < l->n; i++) l->order[i] = i;
    if (!l->p.shuffle) return;
    for (int64_t i = l->n - 1; i > 0; i--) {
        uint32_t w[4];
        ct_philox_stream_block(l->p.seed, ((uint64_t)epoch << 40) + (uint64_t)i, w);
        uint64_t r = (uint64_t)w[0] | (uint64_t)w[1] << 32;
        int64_t j = (int64_t)(r % (uint64_t)(i + 1));
        int64_t tmp = l->order[i];
        l->order[i] = l->order[j];
        l->order[j] = tmp;
    }
}

/* ---- assembling a batch ---- */

static bool identity_normalisation(const ct_dataloader_params *p) {
    return p->scale == 1.0 && p->mean == 0.0 && p->std == 1.0;
}

/* One sample's inputs, converted to the batch dtype and normalised. */
static void convert_row(const ct_dataloader *l, const char *src, char *dst) {
    ct_dtype from = ct_dtype_of(l->inputs), to = l->p.dtype;
    size_t count = l->in_row / ct_dtype_size(from);
    if (from == to && identity_normalisation(&l->p)) {
        memcpy(dst, src, l->in_row);
    } else if (from == CT_U8 && to == CT_F32) {
        float *out = (float *)dst;
        for (size_t i = 0; i < count; i++) out[i] = l->u8_table[(unsigned char)src[i]];
    } else {
        size_t in_size = ct_dtype_size(from), out_size = ct_dtype_size(to);
        for (size_t i = 0; i < count; i++) {
            double v = ct__load_f64(src + i * in_size, from);
            ct__store_f64(dst + i * out_size, to, (v * l->p.scale - l->p.mean) / l->p.std);
        }
    }
}

/* Batch b of the current order into fresh tensors (no scope holds them). */
static ct_status build_batch(const ct_dataloader *l, int64_t b, ct_tensor **x, ct_tensor **y) {
    int64_t start = b * l->p.batch_size;
    int64_t rows = l->n - start < l->p.batch_size ? l->n - start : l->p.batch_size;
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, ct_shape(l->inputs), sizeof(int64_t) * (size_t)ct_ndim(l->inputs));
    shape[0] = rows;
    *x = ct__tensor_new(CT_CPU, l->p.dtype, ct_ndim(l->inputs), shape);
    *y = NULL;
    if (*x && l->targets) {
        memcpy(shape, ct_shape(l->targets), sizeof(int64_t) * (size_t)ct_ndim(l->targets));
        shape[0] = rows;
        *y = ct__tensor_new(CT_CPU, ct_dtype_of(l->targets), ct_ndim(l->targets), shape);
    }
    if (!*x || (l->targets && !*y)) {
        ct_release(*x);
        *x = NULL;
        return ct_last_status();
    }
    size_t out_row = l->in_row / ct_dtype_size(ct_dtype_of(l->inputs)) * ct_dtype_size(l->p.dtype);
    const char *in = ct__data(l->inputs), *tg = l->targets ? ct__data(l->targets) : NULL;
    for (int64_t r = 0; r < rows; r++) {
        int64_t s = l->order[start + r];
        convert_row(l, in + (size_t)s * l->in_row, ct__data(*x) + (size_t)r * out_row);
        if (tg)
            memcpy(ct__data(*y) + (size_t)r * l->target_row, tg + (size_t)s * l->target_row,
                   l->target_row);
    }
    return CT_OK;
}

/* ---- the workers ---- */

static bool can_claim(const ct_dataloader *l) {
    return l->active && l->next_claim < l->batches && l->next_claim < l->next_take + l->capacity;
}

static void *worker_main(void *arg) {
    ct_dataloader *l = arg;
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (!l->stopping && !can_claim(l)) pthread_cond_wait(&l->room, &l->lock);
        if (l->stopping) break;
        int64_t b = l->next_claim++;
        l->in_flight++;
        pthread_mutex_unlock(&l->lock);
        batch_slot done = {0};
        done.status = build_batch(l, b, &done.inputs, &done.targets);
        if (done.status != CT_OK) {
            size_t len = strlen(ct_last_error()) + 1;
            done.message = ct__malloc(len);
            if (done.message) memcpy(done.message, ct_last_error(), len);
        }
        done.filled = true;
        pthread_mutex_lock(&l->lock);
        l->slots[b % l->capacity] = done;
        l->in_flight--;
        pthread_cond_broadcast(&l->ready);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

static void clear_slot(batch_slot *s) {
    ct_release(s->inputs);
    ct_release(s->targets);
    ct__free_mem(s->message);
    *s = (batch_slot){0};
}

/* ---- creation and teardown ---- */

static ct_status check_params(const ct_dataloader_params *p) {
    if (p->batch_size <= 0)
        return ct__error(CT_ERR_INVALID_ARG, FN_NEW ": batch_size is %lld; it must be > 0",
                         (long long)p->batch_size);
    if (p->workers < 0 || p->workers > CT_LOADER_MAX_WORKERS || p->prefetch < 1)
        return ct__error(CT_ERR_INVALID_ARG,
                         FN_NEW ": workers %d, prefetch %d; workers must lie in 0..%d and "
                                "prefetch be >= 1",
                         p->workers, p->prefetch, CT_LOADER_MAX_WORKERS);
    if (!ct_dtype_is_valid(p->dtype))
        return ct__error(CT_ERR_DTYPE, FN_NEW ": invalid dtype %d", p->dtype);
    if (!(p->std != 0.0) || !isfinite(p->std) || !isfinite(p->mean) || !isfinite(p->scale))
        return ct__error(CT_ERR_INVALID_ARG,
                         FN_NEW ": scale %g, mean %g, std %g; they must be finite and std != 0",
                         p->scale, p->mean, p->std);
    return CT_OK;
}

static ct_status check_data(const ct_tensor *inputs, const ct_tensor *targets) {
    if (!inputs) {
        ct__null_arg(FN_NEW, 1);
        return ct_last_status();
    }
    const ct_tensor *both[2] = {inputs, targets};
    for (int i = 0; i < 2; i++) {
        if (!both[i]) continue;
        if (ct_device_of(both[i]).type != CT_DEVICE_CPU)
            return ct__error(CT_ERR_DEVICE_MISMATCH,
                             FN_NEW ": argument %d is not on the CPU; the loader gathers "
                                    "batches from host memory (keep the dataset on the CPU)",
                             i + 1);
        if (ct_ndim(both[i]) < 1 || ct_size(both[i], 0) == 0)
            return ct__error(CT_ERR_SHAPE,
                             FN_NEW ": argument %d has no samples (it needs a first "
                                    "dimension N > 0)",
                             i + 1);
    }
    if (targets && ct_size(targets, 0) != ct_size(inputs, 0))
        return ct__error(CT_ERR_SHAPE, FN_NEW ": %lld inputs but %lld targets",
                         (long long)ct_size(inputs, 0), (long long)ct_size(targets, 0));
    return CT_OK;
}

/* A contiguous reference to t that no scope holds (the loader outlives scopes). */
static ct_tensor *own_contiguous(const ct_tensor *t) {
    if (!t) return NULL;
    ct_tensor *c = ct_contiguous(t);
    if (c) ct__scope_forget(c);
    return c;
}

static ct_status start_threads(ct_dataloader *l) {
    l->threads = ct__calloc((size_t)(l->p.workers ? l->p.workers : 1), sizeof(pthread_t));
    if (!l->threads) return ct__error(CT_ERR_OUT_OF_MEMORY, FN_NEW ": out of host memory");
    for (; l->threads_started < l->p.workers; l->threads_started++)
        if (pthread_create(&l->threads[l->threads_started], NULL, worker_main, l) != 0)
            return ct__error(CT_ERR_BACKEND, FN_NEW ": cannot start worker thread %d of %d",
                             l->threads_started + 1, l->p.workers);
    return CT_OK;
}

static void fill_u8_table(ct_dataloader *l) {
    for (int v = 0; v < 256; v++) l->u8_table[v] = (float)((v * l->p.scale - l->p.mean) / l->p.std);
}

ct_dataloader *ct_dataloader_new(const ct_tensor *inputs, const ct_tensor *targets,
                                 const ct_dataloader_params *params) {
    ct_dataloader_params p = params ? *params : ct_dataloader_params_default();
    if (check_data(inputs, targets) != CT_OK || check_params(&p) != CT_OK) return NULL;
    ct_dataloader *l = ct__calloc(1, sizeof *l);
    if (!l) return ct__fail(CT_ERR_OUT_OF_MEMORY, FN_NEW ": out of host memory");
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->ready, NULL);
    pthread_cond_init(&l->room, NULL);
    l->p = p;
    l->n = ct_size(inputs, 0);
    l->batches = p.drop_last ? l->n / p.batch_size : (l->n + p.batch_size - 1) / p.batch_size;
    l->capacity = p.prefetch;
    l->inputs = own_contiguous(inputs);
    l->targets = own_contiguous(targets);
    l->order = ct__malloc(sizeof(int64_t) * (size_t)l->n);
    l->slots = ct__calloc((size_t)l->capacity, sizeof(batch_slot));
    bool ok = l->inputs && (!targets || l->targets);
    if (ok && (!l->order || !l->slots))
        ok = ct__error(CT_ERR_OUT_OF_MEMORY, FN_NEW ": out of host memory") == CT_OK;
    if (ok) {
        l->in_row = (size_t)(ct_numel(l->inputs) / l->n) * ct_dtype_size(ct_dtype_of(inputs));
        l->target_row =
            targets ? (size_t)(ct_numel(l->targets) / l->n) * ct_dtype_size(ct_dtype_of(targets))
                    : 0;
        fill_u8_table(l);
        ok = start_threads(l) == CT_OK;
    }
    if (!ok) {
        ct_status st = ct_last_status();
        char message[1024];
        snprintf(message, sizeof message, "%s", ct_last_error());
        ct_dataloader_free(l);
        return ct__fail(st, "%s", message);
    }
    return l;
}

/* Stop claims and wait for the batches in flight (the lock held). */
static void quiesce(ct_dataloader *l) {
    l->active = false;
    while (l->in_flight > 0) pthread_cond_wait(&l->ready, &l->lock);
    for (int i = 0; i < l->capacity; i++) clear_slot(&l->slots[i]);
}

void ct_dataloader_free(ct_dataloader *l) {
    if (!l) return;
    pthread_mutex_lock(&l->lock);
    l->stopping = true;
    pthread_cond_broadcast(&l->room);
    pthread_mutex_unlock(&l->lock);
    for (int i = 0; i < l->threads_started; i++) pthread_join(l->threads[i], NULL);
    for (int i = 0; l->slots && i < l->capacity; i++) clear_slot(&l->slots[i]);
    if (l->inputs) ct__tensor_drop(l->inputs);
    if (l->targets) ct__tensor_drop(l->targets);
    ct__free_mem(l->slots);
    ct__free_mem(l->order);
    ct__free_mem(l->threads);
    pthread_cond_destroy(&l->room);
    pthread_cond_destroy(&l->ready);
    pthread_mutex_destroy(&l->lock);
    ct__free_mem(l);
}

/* ---- epochs and batches ---- */

int64_t ct_dataloader_num_batches(const ct_dataloader *l) { return l ? l->batches : 0; }

ct_status ct_dataloader_start_epoch(ct_dataloader *l, int64_t epoch) {
    if (!l) return ct__error(CT_ERR_INVALID_ARG, "ct_dataloader_start_epoch: loader is NULL");
    if (epoch < 0 || epoch >= ((int64_t)1 << 24))
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_dataloader_start_epoch: epoch %lld; it must lie in 0..2^24-1",
                         (long long)epoch);
    pthread_mutex_lock(&l->lock);
    quiesce(l);
    draw_order(l, epoch);
    l->next_claim = l->next_take = 0;
    l->started = l->active = true;
    pthread_cond_broadcast(&l->room);
    pthread_mutex_unlock(&l->lock);
    return CT_OK;
}

/* Wait for batch next_take from the workers and take it out of its slot. */
static batch_slot take_from_workers(ct_dataloader *l) {
    pthread_mutex_lock(&l->lock);
    batch_slot *slot = &l->slots[l->next_take % l->capacity];
    while (!slot->filled) pthread_cond_wait(&l->ready, &l->lock);
    batch_slot got = *slot;
    *slot = (batch_slot){0};
    l->next_take++;
    pthread_cond_broadcast(&l->room);
    pthread_mutex_unlock(&l->lock);
    return got;
}

/* Hand a worker's tensors to the caller's scope, like any new tensor. */
static ct_status adopt(batch_slot *got) {
    if (got->status != CT_OK) {
        ct__error(got->status, "%s", got->message ? got->message : "batch assembly failed");
        clear_slot(got);
        return ct_last_status();
    }
    if (ct__scope_adopt(got->inputs) != CT_OK ||
        (got->targets && ct__scope_adopt(got->targets) != CT_OK)) {
        clear_slot(got);
        return ct_last_status();
    }
    return CT_OK;
}

ct_status ct_dataloader_next(ct_dataloader *l, ct_tensor **inputs, ct_tensor **targets) {
    if (inputs) *inputs = NULL;
    if (targets) *targets = NULL;
    if (!l || !inputs)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dataloader_next: %s is NULL",
                         l ? "inputs" : "loader");
    if (!l->started)
        return ct__error(CT_ERR_STATE, "ct_dataloader_next: no epoch started; call "
                                       "ct_dataloader_start_epoch first");
    if (l->next_take >= l->batches) return CT_OK;
    batch_slot got = {0};
    if (l->p.workers == 0) {
        got.status = build_batch(l, l->next_take++, &got.inputs, &got.targets);
        if (got.status != CT_OK) return got.status;
    } else {
        got = take_from_workers(l);
        if (adopt(&got) != CT_OK) return ct_last_status();
    }
    *inputs = got.inputs;
    if (targets)
        *targets = got.targets;
    else
        ct_release(got.targets);
    return CT_OK;
}

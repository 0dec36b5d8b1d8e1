/* Batch assembly: the epoch's order, and each sample converted to float32, normalised and
 * augmented, then the batch moved to the device.
 *
 * Random draws come from Philox under keys mixed from (seed, use, epoch) by loader_key: the
 * shuffle takes counter i for step i of Fisher-Yates; the augmentation of the sample at
 * position p takes block p: word 0 the crop's row, 1 its column, 2 the flip. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/philox_impl.h"
#include "data/loader_impl.h"
#include "ops/op_impl.h"

/* What a Philox key of the loader is for. */
enum { SHUFFLE_KEY = 1, AUGMENT_KEY = 2 };

/* The key of one use in one epoch. The seed goes through a bijective mixer first, so that no
 * key of the loader is the seed itself: ct_manual_seed(seed) keys the global stream, whose
 * blocks from counter 0 on make the model's first weights, and a shuffle keyed by the seed
 * would draw those same words. */
static uint64_t loader_key(uint64_t seed, uint64_t use, int64_t epoch) {
    return ct__splitmix64(ct__splitmix64(seed ^ use) + (uint64_t)epoch);
}

void ct__loader_order(ct_loader *loader, int64_t epoch) {
    int64_t n = loader->count;
    for (int64_t i = 0; i < n; i++) loader->order[i] = i;
    if (!loader->options.shuffle) return;
    uint64_t key = loader_key(loader->options.seed, SHUFFLE_KEY, epoch);
    for (int64_t i = n - 1; i > 0; i--) {
        uint32_t w[4];
        ct__philox_stream_block(key, (uint64_t)i, w);
        uint64_t r = ((uint64_t)w[0] << 32 | w[1]) % (uint64_t)(i + 1);
        int64_t t = loader->order[i];
        loader->order[i] = loader->order[r];
        loader->order[r] = t;
    }
}

/* Sample `index` (its values as doubles) into out, normalised, shifted by (dy, dx) within
 * the zero padding and flipped when asked. */
static void fill_sample(const ct_loader *loader, int64_t index, int dy, int dx, bool flip,
                        float *out) {
    const ct_loader_options *o = &loader->options;
    const ct_tensor *in = loader->inputs;
    double scale = o->scale != 0 ? o->scale : 1.0;
    int64_t base = index * loader->features;
    const uint8_t *bytes = in->dtype == CT_U8 ? (const uint8_t *)ct__data(in) : NULL;
    const float *floats = in->dtype == CT_F32 ? (const float *)ct__data(in) : NULL;
    int channels = loader->height ? loader->channels : 1;
    int64_t per_channel = loader->features / channels;
    for (int c = 0; c < channels; c++) {
        double mean = o->mean[c], std = o->std[c] != 0 ? o->std[c] : 1.0;
        float *dst = out + c * per_channel;
        if (bytes && dy == 0 && dx == 0 && !flip) { /* the common case, in a loop that vectorises */
            const uint8_t *src = bytes + base + c * per_channel;
            float a = (float)(scale / std), b = (float)(-mean / std);
            for (int64_t k = 0; k < per_channel; k++) dst[k] = (float)src[k] * a + b;
            continue;
        }
        for (int64_t k = 0; k < per_channel; k++) {
            int64_t src = k;
            bool inside = true;
            if (loader->height) {
                int h = (int)(k / loader->width), w = (int)(k % loader->width);
                if (flip) w = loader->width - 1 - w;
                h += dy, w += dx;
                inside = h >= 0 && h < loader->height && w >= 0 && w < loader->width;
                src = (int64_t)h * loader->width + w;
            }
            int64_t at = base + c * per_channel + src;
            double v = !inside ? 0.0
                       : bytes ? bytes[at]
                       : floats
                           ? floats[at]
                           : ct__load_f64(ct__data(in) + at * (int64_t)ct__dtype_size(in->dtype),
                                          in->dtype);
            dst[k] = (float)((v * scale - mean) / std);
        }
    }
}

/* A batch tensor on the CPU: in pinned memory when it goes to a device whose backend pins
 * host memory (CUDA), unless the options say otherwise, so that ct_to is one DMA from it.
 * Without pinned memory (the driver refused it) the batch is assembled in ordinary memory,
 * said once. */
static ct_tensor *batch_tensor(const ct_loader_options *o, int ndim, const int64_t *shape,
                               ct_dtype dtype) {
    static atomic_bool warned;
    if (ct__device_type_pins(o->device.type) && !o->no_pin_memory) {
        ct_tensor *t = ct__pinned_tensor_new("ct_loader_next", CT_CPU, dtype, ndim, shape);
        if (t) return t;
        if (!atomic_exchange(&warned, true))
            ct__log(CT_LOG_WARNING, "%s; batches are assembled in pageable memory instead",
                    ct_last_error());
        ct_clear_error();
    }
    return ct_empty(ndim, shape, dtype, CT_CPU);
}

static void record_failure(ct__loader_slot *out) {
    out->status = ct_last_status();
    snprintf(out->message, sizeof out->message, "%s", ct_last_error());
}

/* Samples are read in shuffled order, each from a random place in the dataset: without a
 * hint every one starts with a cache (and TLB) miss, which took most of a batch's assembly
 * time. So the loop asks for the sample CT_LOADER_PREFETCH places ahead while it converts
 * this one. */
#define CT_LOADER_PREFETCH 4

static void prefetch_sample(const ct_loader *loader, int64_t index) {
    const ct_tensor *in = loader->inputs, *labels = loader->labels;
    int64_t row = loader->features * (int64_t)ct__dtype_size(in->dtype);
    const char *at = ct__data(in) + index * row;
    /* GCC counts a prefetch as no side effect and deletes a loop of nothing else (GCC 12
     * emitted none for this one: 100 us a batch instead of 29); the empty asm keeps it. */
    for (int64_t off = 0; off < row; off += 64) {
        __builtin_prefetch(at + off);
        __asm__ __volatile__("");
    }
    __builtin_prefetch(ct__data(labels) + index * (int64_t)ct__dtype_size(labels->dtype));
}

/* Rows [from, to) of a batch: row r gets sample first[r], the epoch's sample position + r. */
static void fill_rows(const ct_loader *loader, const int64_t *first, int64_t from, int64_t to,
                      uint64_t augment_key, int64_t position, float *xd, int64_t *yd) {
    const ct_loader_options *o = &loader->options;
    const ct_tensor *labels = loader->labels;
    int pad = o->crop_padding;
    for (int64_t r = from; r < to && r < from + CT_LOADER_PREFETCH; r++)
        prefetch_sample(loader, first[r]);
    for (int64_t r = from; r < to; r++) {
        if (r + CT_LOADER_PREFETCH < to) prefetch_sample(loader, first[r + CT_LOADER_PREFETCH]);
        uint32_t w[4] = {0, 0, 0, 0};
        if (pad || o->horizontal_flip)
            ct__philox_stream_block(augment_key, (uint64_t)(position + r), w);
        int dy = pad ? (int)(w[0] % (uint32_t)(2 * pad + 1)) - pad : 0;
        int dx = pad ? (int)(w[1] % (uint32_t)(2 * pad + 1)) - pad : 0;
        bool flip = o->horizontal_flip && (w[2] & 1u);
        fill_sample(loader, first[r], dy, dx, flip, xd + r * loader->features);
        yd[r] = ct__load_i64(ct__data(labels) + first[r] * (int64_t)ct__dtype_size(labels->dtype),
                             labels->dtype);
    }
}

/* A batch made in the training thread (no workers) is split over the OpenMP team, whose
 * threads would otherwise sleep while it is made: each sample starts with a cache miss, and
 * two threads wait out two at a time. A worker thread fills its batch alone, beside the
 * team's work. */
static void fill_batch(const ct_loader *loader, const int64_t *first, int64_t rows,
                       uint64_t augment_key, int64_t position, float *xd, int64_t *yd) {
#ifdef _OPENMP
    if (loader->nthreads == 0 && rows * loader->features >= CT_LOADER_PARALLEL_THRESHOLD) {
#pragma omp parallel
        {
            int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
            int64_t from = rows * t / threads, to = rows * (t + 1) / threads;
            fill_rows(loader, first, from, to, augment_key, position, xd, yd);
        }
        return;
    }
#endif
    fill_rows(loader, first, 0, rows, augment_key, position, xd, yd);
}

/* global * part / parts without overflow (part <= parts). */
static int64_t share(int64_t global, int64_t part, int64_t parts) {
    return global / parts * part + global % parts * part / parts;
}

void ct__loader_batch_range(const ct_loader *loader, int64_t b, int64_t *start, int64_t *end) {
    const ct_loader_options *o = &loader->options;
    int64_t first = b * o->batch_size, left = loader->count - first;
    int64_t global = left < o->batch_size ? left : o->batch_size;
    int64_t shards = o->shard_count > 1 ? o->shard_count : 1; /* this rank's slice */
    *start = first + share(global, o->shard_index, shards);
    *end = first + share(global, o->shard_index + 1, shards);
}

void ct__loader_prepare(const ct_loader *loader, const int64_t *order, int64_t epoch, int64_t b,
                        ct__loader_slot *out) {
    const ct_loader_options *o = &loader->options;
    int64_t start, end;
    ct__loader_batch_range(loader, b, &start, &end);
    int64_t rows = end - start;
    int64_t shape[4] = {rows, loader->channels, loader->height, loader->width};
    if (!loader->height) shape[1] = loader->features;
    int ndim = loader->height ? 4 : 2;
    ct_tensor *x = batch_tensor(o, ndim, shape, CT_F32);
    ct_tensor *y = x ? batch_tensor(o, 1, &rows, CT_I64) : NULL;
    if (!y) {
        record_failure(out);
        ct_release(x);
        return;
    }
    fill_batch(loader, order + start, rows, loader_key(o->seed, AUGMENT_KEY, epoch), start,
               (float *)ct__data(x), (int64_t *)ct__data(y));
    out->inputs = x, out->labels = y, out->status = CT_OK;
    if (ct_device_equal(o->device, CT_CPU)) return;
    /* Prefetch to the device from this thread, while the consumer computes. From pinned
     * memory ct_to only queues the DMA; releasing x and y right after is safe (their blocks
     * wait for it before reuse). */
    ct_tensor *dx_ = ct_to(x, o->device), *dy_ = dx_ ? ct_to(y, o->device) : NULL;
    ct_release(x);
    ct_release(y);
    out->inputs = dx_, out->labels = dy_;
    if (!dy_) {
        record_failure(out);
        ct_release(dx_);
        out->inputs = NULL;
    }
}

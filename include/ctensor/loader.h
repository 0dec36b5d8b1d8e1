/* ctensor — the data loader (torch.utils.data.DataLoader with pin_memory and prefetching,
 * tf.data's shuffle/batch/prefetch): batches of an in-memory dataset, shuffled per epoch,
 * normalised and augmented by worker threads into a bounded queue, and copied to the
 * target device by the workers while the training step runs.
 *
 * Determinism: the order of an epoch and every augmentation draw depend only on (seed,
 * epoch, position in the epoch), never on the number of workers or on timing, so the same
 * seed gives the same batches with 0, 1 or 8 workers. */
#ifndef CTENSOR_LOADER_H
#define CTENSOR_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "ctensor/export.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CT_LOADER_MAX_CHANNELS 4

typedef struct ct_loader ct_loader;

typedef struct ct_loader_options {
    int64_t batch_size; /* > 0 */
    bool shuffle;
    bool drop_last;   /* drop a last batch smaller than batch_size */
    uint64_t seed;    /* of the shuffle and the augmentation */
    int workers;      /* threads preparing batches; 0 prepares them in ct_loader_next */
    int prefetch;     /* batches prepared ahead; 0 means 2 per worker */
    ct_device device; /* where batches are delivered (CT_DEFAULT: the default device then) */
    /* On a CUDA device, each batch is assembled in pinned host memory (ct_pin_memory), so
     * that its copy to the device is one direct DMA queued by the worker, as DataLoader's
     * pin_memory=True: the default. true assembles batches in ordinary (pageable) memory,
     * copied through the plugin's staging buffers. The batches are the same either way; on
     * the CPU nothing changes. (A negative name, so that zeroed options mean the default.) */
    bool no_pin_memory;
    /* Inputs become float32 x * scale (0 means 1), then (x - mean[c]) / std[c] for channel
     * c (a std of 0 means 1): images (N, H, W) gain a channel axis, (N, C, H, W) keep theirs
     * (C <= CT_LOADER_MAX_CHANNELS); features (N, F) use mean[0] and std[0]. */
    double scale;
    double mean[CT_LOADER_MAX_CHANNELS];
    double std[CT_LOADER_MAX_CHANNELS];
    /* Augmentation, for images: a random crop of the image padded by crop_padding zeros on
     * each side back to its size (torchvision's RandomCrop(size, padding)), and a
     * horizontal flip with probability 1/2. */
    int crop_padding;
    bool horizontal_flip;
    /* The distributed sampler, for data parallelism: with shard_count n > 1, every rank
     * shuffles alike and rank shard_index r takes rows [b·r/n, b·(r+1)/n) of each batch of b
     * (batch_size is the global batch), so the same seed and global batch give the same
     * samples per step whatever the number of ranks; no sample is repeated to even out the
     * last batch, whose slices may differ by one (or be empty). 0 means 1. */
    int shard_index, shard_count;
    /* Seconds that a call waits at most for the workers: ct_loader_next for its batch,
     * ct_loader_start_epoch for the batches of the abandoned epoch still being prepared,
     * ct_loader_free for the workers to end. Past it, a stuck worker is CT_ERR_BACKEND naming
     * the loader and the batch (ct_loader_free returns, and the loader is freed by its last
     * worker whenever that one ends). 0 means 300; it must not be negative. */
    double timeout;
} ct_loader_options;

/* A loader over inputs (N, ...) of any dtype and integer labels (N), both on the CPU; it
 * keeps references to them. */
CT_API ct_loader *ct_loader_new(const ct_tensor *inputs, const ct_tensor *labels,
                                const ct_loader_options *options);
/* A loader of sample numbers alone, for a dataset that the caller reads itself (a Python
 * dataset's __getitem__): `count` samples, ordered, batched and sharded as ct_loader_new's
 * (the options' batch_size, shuffle, drop_last, seed, shard_index and shard_count; workers
 * and prefetch must be 0, the rest is unused). Its batches are read with
 * ct_loader_batch_samples; ct_loader_next refuses it. */
CT_API ct_loader *ct_loader_new_samples(int64_t count, const ct_loader_options *options);
/* The sample numbers of batch `batch` (0 <= batch < ct_loader_batches) of the epoch started
 * last, this shard's slice of it, in order: a new int64 tensor (rows) on the CPU. Any
 * loader: ct_loader_next's batch `batch` holds these samples. Not concurrently with
 * ct_loader_start_epoch, which rewrites the order. */
CT_API ct_tensor *ct_loader_batch_samples(const ct_loader *loader, int64_t batch);
/* Batches per epoch. */
CT_API int64_t ct_loader_batches(const ct_loader *loader);
/* Start epoch `epoch` (its shuffle); the workers begin preparing its first batches. An
 * epoch in progress is abandoned. */
CT_API ct_status ct_loader_start_epoch(ct_loader *loader, int64_t epoch);
/* The next batch of the epoch: *inputs (B, C, H, W) or (B, F) float32 and *labels (B)
 * int64, on the loader's device (new references). After the last batch: CT_OK with both
 * NULL. A worker's failure (out of memory on the device) is returned here, with its message. */
CT_API ct_status ct_loader_next(ct_loader *loader, ct_tensor **inputs, ct_tensor **labels);
/* Stops the workers and drops the queued batches, waiting for the workers at most
 * options.timeout seconds (a worker stuck past it is left to free the loader when it ends).
 * NULL is ignored. */
CT_API void ct_loader_free(ct_loader *loader);

#ifdef __cplusplus
}
#endif
#endif

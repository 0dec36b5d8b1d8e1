/* The batches of one split for `ctensor train`: the data loader's (workers that normalise,
 * augment and copy batches to the device while the step runs), or, for data made on the device
 * (--dataset synthetic), views of it, with the loader's cut into global batches and rank
 * slices. */
#include <stdlib.h>

#include "train_data_impl.h"

struct train_batches {
    ct_loader *loader; /* NULL: views of images and labels, already on the device */
    const ct_tensor *images, *labels;
    int64_t batch, count, next;
    int shard_index, shard_count;
};

train_batches *train_batches_new(const train_options *o, const train_data *data, bool training,
                                 int64_t batch) {
    const ct_tensor *images = training ? data->train_images : data->test_images;
    const ct_tensor *labels = training ? data->train_labels : data->test_labels;
    train_batches *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    *b = (train_batches){.images = images,
                         .labels = labels,
                         .batch = batch,
                         .count = ct_size(images, 0),
                         .shard_index = ct_comm_rank(o->comm),
                         .shard_count = ct_comm_size(o->comm)};
    if (data->on_device) return b;
    /* The augmentation runs in the loader's workers, beside the step, on the bytes they
     * convert anyway, and each sample's crop and flip are drawn from (seed, epoch, its place
     * in the epoch): the same whatever the number of workers or ranks. On the device it would
     * be kernels of the step's own stream, and a batch made of the whole padded images. */
    bool augment = training && data->augment;
    ct_loader_options options = {.batch_size = batch,
                                 .shuffle = training,
                                 .seed = o->seed,
                                 .workers = o->workers,
                                 .device = o->device,
                                 .scale = 1.0 / 255,
                                 .crop_padding = augment ? TRAIN_CROP_PADDING : 0,
                                 .horizontal_flip = augment,
                                 .shard_index = b->shard_index,
                                 .shard_count = b->shard_count};
    for (int c = 0; c < CT_LOADER_MAX_CHANNELS; c++)
        options.mean[c] = data->mean[c], options.std[c] = data->std[c];
    b->loader = ct_loader_new(images, labels, &options);
    if (b->loader) return b;
    free(b);
    return NULL;
}

int64_t train_batches_count(const train_batches *b) {
    return b->loader ? ct_loader_batches(b->loader) : (b->count + b->batch - 1) / b->batch;
}

ct_status train_batches_start(train_batches *b, int64_t epoch) {
    b->next = 0;
    return b->loader ? ct_loader_start_epoch(b->loader, epoch) : CT_OK;
}

/* global * part / parts without overflow (part <= parts), as the loader's sampler. */
static int64_t share(int64_t global, int64_t part, int64_t parts) {
    return global / parts * part + global % parts * part / parts;
}

ct_status train_batches_next(train_batches *b, ct_tensor **inputs, ct_tensor **labels) {
    if (b->loader) return ct_loader_next(b->loader, inputs, labels);
    *inputs = *labels = NULL;
    int64_t first = b->next * b->batch;
    if (first >= b->count) return CT_OK;
    b->next++;
    int64_t global = b->count - first < b->batch ? b->count - first : b->batch;
    int64_t shards = b->shard_count > 1 ? b->shard_count : 1;
    int64_t start = first + share(global, b->shard_index, shards);
    int64_t end = first + share(global, b->shard_index + 1, shards);
    *inputs = ct_slice(b->images, 0, start, end, 1);
    *labels = *inputs ? ct_slice(b->labels, 0, start, end, 1) : NULL;
    if (*labels) return CT_OK;
    ct_release(*inputs);
    *inputs = NULL;
    return ct_last_status();
}

void train_batches_free(train_batches *b) {
    if (!b) return;
    ct_loader_free(b->loader);
    free(b);
}

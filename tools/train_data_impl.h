/* `ctensor train`'s datasets (train_data.c), fitted to the model's input (train_data_fit.c),
 * the synthetic one (train_synthetic.c), and the batches of a split (train_batches.c). */
#ifndef CT_TRAIN_DATA_IMPL_H
#define CT_TRAIN_DATA_IMPL_H

#include "train_impl.h"

/* The synthetic dataset's sizes without --synthetic-size: CIFAR-10's. */
#define TRAIN_SYNTHETIC_TRAIN 50000
#define TRAIN_SYNTHETIC_TEST 10000
/* The padding of the random crops of --augment (torchvision's RandomCrop(32, padding=4)). */
#define TRAIN_CROP_PADDING 4

typedef struct train_data {
    /* Images (N, C, H, W) of the model's input shape and labels (N) in 0..9: on the CPU, as
     * the dataset has them (u8 pixels), or for the synthetic dataset on the training device,
     * already normalised f32. */
    ct_tensor *train_images, *train_labels, *test_images, *test_labels;
    int channels, height, width; /* the model's input */
    /* Pixels become float32 x / 255, then (x - mean[c]) / std[c]: the training set's mean and
     * standard deviation per channel (of its pixels before any padding). */
    double mean[CT_LOADER_MAX_CHANNELS], std[CT_LOADER_MAX_CHANNELS];
    bool augment;   /* random crops (TRAIN_CROP_PADDING) and flips of the training batches */
    bool on_device; /* the synthetic dataset: batches are views of the tensors, no loader */
} train_data;

/* Whether the model takes images of any channel count and size (the ResNets, which end in a
 * global average pooling; images smaller than 32x32 are zero-padded to it), rather than the
 * 1x28x28 of the MLP and the CNN. */
bool train_model_any_shape(const char *model);

/* Load and check o->dataset (the synthetic one: its shape alone, see train_make_synthetic),
 * every label among them (in range for the model's classes: the training step's loss does not
 * check its targets again); prints one line naming the file and the problem on failure. */
ct_status train_load_data(const train_options *o, train_data *out);
/* Keep the first `limit` training samples (0: all). */
void train_limit(train_data *data, int64_t limit);
void train_release_data(train_data *data);

/* train_data_fit.c: images (N, H, W), (N, C, H, W) or (N, 784) (which are 28x28) as the
 * model's input (N, C, H, W): the MLP and the CNN take 1x28x28; a ResNet any C up to
 * CT_LOADER_MAX_CHANNELS, and with pad, H and W below 32 zero-padded to 32 (centred).
 * Replaces *images; on failure prints the error line, `which` naming the images. */
ct_status train_fit_images(const char *model, const char *which, bool pad, ct_tensor **images);
/* The per-channel mean and standard deviation of images (N, C, H, W) scaled by 1/255. */
ct_status train_channel_stats(const ct_tensor *images, double *mean, double *std);

/* train_synthetic.c: the synthetic dataset on o->device, seeded by o->seed: standard normal
 * images (already normalised) of data's shape and uniform labels 0..9, o->synthetic_size
 * training samples (0: TRAIN_SYNTHETIC_TRAIN) and a fifth as many test samples (0:
 * TRAIN_SYNTHETIC_TEST). Reseeds the global random stream: the caller seeds it again for the
 * model. Nothing to do for another dataset. */
ct_status train_make_synthetic(const train_options *o, train_data *data);

/* train_batches.c: the batches of one split, from the data loader or, for data already on the
 * device, as views of it (this rank's slice of each global batch, in order). */
typedef struct train_batches train_batches;
/* Training batches are shuffled and, with data->augment, cropped and flipped. */
train_batches *train_batches_new(const train_options *o, const train_data *data, bool training,
                                 int64_t batch);
int64_t train_batches_count(const train_batches *b);
ct_status train_batches_start(train_batches *b, int64_t epoch);
/* The next batch (new references), or CT_OK with both NULL after the last. */
ct_status train_batches_next(train_batches *b, ct_tensor **inputs, ct_tensor **labels);
void train_batches_free(train_batches *b);

#endif

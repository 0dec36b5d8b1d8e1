/* `ctensor train`'s datasets (train_data.c). */
#ifndef CT_TRAIN_DATA_IMPL_H
#define CT_TRAIN_DATA_IMPL_H

#include "train_impl.h"

typedef struct train_data {
    ct_tensor *train_images, *train_labels, *test_images, *test_labels;
} train_data;

/* Load and check o->dataset, every label among them (in range for the model's classes: the
 * training step's loss does not check its targets again); prints one line naming the file and
 * the problem on failure. */
ct_status train_load_data(const train_options *o, train_data *out);
/* Keep the first `limit` training samples (0: all). */
void train_limit(train_data *data, int64_t limit);
void train_release_data(train_data *data);

#endif

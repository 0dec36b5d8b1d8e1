/* The training data of `ctensor train`: Fashion-MNIST, a folder of MNIST-named IDX files,
 * CIFAR-10's binary folder, a .npy of images with a .npy of labels (its last tenth held out
 * as the test set), or synthetic data; checked to have labels 0..9 and images the model takes
 * (fitted to its input shape: train_data_fit.c), with the training set's per-channel mean and
 * standard deviation for the normalisation. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_impl.h"
#include "train_data_impl.h"

static ct_status fail(const char *what, const char *detail) {
    ct_cli_fail("%s: %s", what, detail);
    return CT_ERR_FORMAT;
}

bool train_model_any_shape(const char *model) { return strncmp(model, "resnet", 6) == 0; }

/* Labels in 0..9: the model has ten outputs. */
static ct_status check_labels(const char *which, const ct_tensor *labels) {
    ct_tensor *lo = ct_min(labels, 0, NULL, false), *hi = ct_max(labels, 0, NULL, false);
    double min = 0, max = 0;
    bool read = lo && hi && ct_item(lo, &min) == CT_OK && ct_item(hi, &max) == CT_OK;
    ct_release(lo);
    ct_release(hi);
    if (!read) return fail(which, ct_last_error());
    if (min < 0 || max > 9) {
        char detail[160];
        snprintf(detail, sizeof detail,
                 "labels run from %.0f to %.0f, but the model has ten classes (0 to 9)", min, max);
        return fail(which, detail);
    }
    return CT_OK;
}

static ct_status check_labels_of(const char *which, const ct_tensor *images,
                                 const ct_tensor *labels) {
    if (ct_ndim(labels) != 1 || ct_size(labels, 0) != ct_size(images, 0))
        return fail(which, "there must be one label per image");
    return check_labels(which, labels);
}

/* A dataset of whole-file tensors split into train and test at `at`. */
static ct_status split(ct_tensor *images, ct_tensor *labels, train_data *out) {
    int64_t n = ct_size(images, 0), at = n - n / 10;
    out->train_images = ct_slice(images, 0, 0, at, 1);
    out->train_labels = ct_slice(labels, 0, 0, at, 1);
    out->test_images = ct_slice(images, 0, at, n, 1);
    out->test_labels = ct_slice(labels, 0, at, n, 1);
    ct_release(images);
    ct_release(labels);
    return out->test_labels ? CT_OK : ct_last_status();
}

static ct_status load_npy(const train_options *o, train_data *out) {
    if (!o->labels) return fail(o->dataset, "a .npy dataset needs --labels LABELS.npy");
    ct_tensor *images = ct_read_npy(o->dataset);
    if (!images) return fail(o->dataset, ct_last_error());
    ct_tensor *labels = ct_read_npy(o->labels);
    if (!labels) {
        ct_release(images);
        return fail(o->labels, ct_last_error());
    }
    ct_status status = check_labels_of(o->dataset, images, labels);
    if (status != CT_OK) {
        ct_release(images);
        ct_release(labels);
        return status;
    }
    return split(images, labels, out);
}

static ct_status load_cifar10(const train_options *o, train_data *out) {
    if (ct_read_cifar10(o->dataset_dir, true, &out->train_images, &out->train_labels) != CT_OK ||
        ct_read_cifar10(o->dataset_dir, false, &out->test_images, &out->test_labels) != CT_OK)
        return fail("cifar10", ct_last_error());
    return CT_OK;
}

static ct_status load_mnist_layout(const train_options *o, train_data *out) {
    ct_mnist mnist;
    ct_status status;
    if (strcmp(o->dataset, "fashion-mnist") == 0) {
        status = ct_load_fashion_mnist(&mnist);
    } else {
        struct stat st;
        bool found = stat(o->dataset, &st) == 0;
        /* "Permission denied" and the like are said as such, not as an unknown dataset. */
        if (!found && errno != ENOENT) return fail(o->dataset, strerror(errno));
        if (!found)
            return fail(o->dataset, "no such file or folder (--dataset takes fashion-mnist, "
                                    "cifar10 DIR, synthetic, a folder of MNIST IDX files, or a "
                                    ".npy file)");
        if (!S_ISDIR(st.st_mode))
            return fail(o->dataset,
                        "not fashion-mnist, a folder of MNIST IDX files, or a .npy file");
        status = ct_load_mnist_dir(o->dataset, &mnist);
        char cifar[4096];
        snprintf(cifar, sizeof cifar, "%s/data_batch_1.bin", o->dataset);
        if (status != CT_OK && stat(cifar, &st) == 0)
            return fail(o->dataset, "a CIFAR-10 folder (data_batch_1.bin): give it as --dataset "
                                    "cifar10 DIR");
    }
    if (status != CT_OK) return fail(o->dataset, ct_last_error());
    out->train_images = mnist.train_images, out->train_labels = mnist.train_labels;
    out->test_images = mnist.test_images, out->test_labels = mnist.test_labels;
    status = check_labels_of("training set", out->train_images, out->train_labels);
    return status == CT_OK ? check_labels_of("test set", out->test_images, out->test_labels)
                           : status;
}

/* The synthetic dataset's shape: 3x32x32 (CIFAR-10's) for a ResNet, else 1x28x28. */
static ct_status synthetic_shape(const train_options *o, train_data *out) {
    bool any = train_model_any_shape(o->model);
    out->channels = any ? 3 : 1;
    out->height = out->width = any ? 32 : 28;
    out->on_device = true;
    for (int c = 0; c < CT_LOADER_MAX_CHANNELS; c++) out->std[c] = 1;
    return CT_OK;
}

/* Both splits as the model's input, the normalisation from the training set's pixels as they
 * came (before padding), and the augmentation's default: on for a ResNet on CIFAR-10. */
static ct_status fit(const train_options *o, train_data *out) {
    ct_status status = train_fit_images(o->model, "training set", false, &out->train_images);
    if (status == CT_OK) status = train_fit_images(o->model, "test set", false, &out->test_images);
    if (status != CT_OK) return status;
    const int64_t *a = ct_shape(out->train_images), *b = ct_shape(out->test_images);
    if (a[1] != b[1] || a[2] != b[2] || a[3] != b[3]) {
        char detail[160];
        snprintf(detail, sizeof detail,
                 "images are %lldx%lldx%lld, the training set's %lldx%lldx%lld", (long long)b[1],
                 (long long)b[2], (long long)b[3], (long long)a[1], (long long)a[2],
                 (long long)a[3]);
        return fail("test set", detail);
    }
    if (train_channel_stats(out->train_images, out->mean, out->std) != CT_OK)
        return fail("training set", ct_last_error());
    status = train_fit_images(o->model, "training set", true, &out->train_images);
    if (status == CT_OK) status = train_fit_images(o->model, "test set", true, &out->test_images);
    if (status != CT_OK) return status;
    const int64_t *s = ct_shape(out->train_images);
    out->channels = (int)s[1], out->height = (int)s[2], out->width = (int)s[3];
    out->augment =
        o->augment < 0 ? train_model_any_shape(o->model) && o->dataset_dir != NULL : o->augment > 0;
    return CT_OK;
}

ct_status train_load_data(const train_options *o, train_data *out) {
    memset(out, 0, sizeof *out);
    size_t len = strlen(o->dataset);
    bool npy = len > 4 && strcmp(o->dataset + len - 4, ".npy") == 0;
    if (o->labels && !npy)
        return fail("--labels", "only a .npy dataset takes --labels: the other datasets hold "
                                "their own labels");
    if (strcmp(o->dataset, "synthetic") == 0) return synthetic_shape(o, out);
    ct_status status;
    if (npy)
        status = load_npy(o, out);
    else if (o->dataset_dir)
        status = load_cifar10(o, out);
    else
        status = load_mnist_layout(o, out);
    if (status == CT_OK) status = fit(o, out);
    if (status != CT_OK) train_release_data(out);
    return status;
}

void train_limit(train_data *data, int64_t limit) {
    if (!limit || limit >= ct_size(data->train_images, 0)) return;
    ct_tensor *images = ct_slice(data->train_images, 0, 0, limit, 1);
    ct_tensor *labels = ct_slice(data->train_labels, 0, 0, limit, 1);
    if (!images || !labels) return;
    ct_release(data->train_images);
    ct_release(data->train_labels);
    data->train_images = images, data->train_labels = labels;
}

void train_release_data(train_data *data) {
    ct_release(data->train_images);
    ct_release(data->train_labels);
    ct_release(data->test_images);
    ct_release(data->test_labels);
    memset(data, 0, sizeof *data);
}

/* The training data of `ctensor train`: Fashion-MNIST, a folder of MNIST-named IDX files,
 * or a .npy of images with a .npy of labels (its last tenth held out as the test set);
 * checked to be 28x28 images with labels 0..9. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_impl.h"
#include "train_data_impl.h"

static ct_status fail(const char *what, const char *detail) {
    ct_cli_fail("%s: %s", what, detail);
    return CT_ERR_FORMAT;
}

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

static ct_status check_images(const char *which, const ct_tensor *images, const ct_tensor *labels) {
    int nd = ct_ndim(images);
    const int64_t *s = ct_shape(images);
    bool shaped = (nd == 3 && s[1] == 28 && s[2] == 28) || (nd == 2 && s[1] == 784) ||
                  (nd == 4 && s[1] == 1 && s[2] == 28 && s[3] == 28);
    if (!shaped) return fail(which, "images must be 28x28 (N, 28, 28), (N, 1, 28, 28) or (N, 784)");
    if (ct_ndim(labels) != 1 || ct_size(labels, 0) != s[0])
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
    ct_status status = check_images(o->dataset, images, labels);
    if (status != CT_OK) {
        ct_release(images);
        ct_release(labels);
        return status;
    }
    return split(images, labels, out);
}

ct_status train_load_data(const train_options *o, train_data *out) {
    memset(out, 0, sizeof *out);
    size_t len = strlen(o->dataset);
    if (len > 4 && strcmp(o->dataset + len - 4, ".npy") == 0) return load_npy(o, out);
    if (o->labels)
        return fail("--labels", "only a .npy dataset takes --labels: a folder of IDX files and "
                                "fashion-mnist hold their own labels");
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
            return fail(o->dataset, "no such file or folder (--dataset takes fashion-mnist, a "
                                    "folder of MNIST IDX files, or a .npy file)");
        if (!S_ISDIR(st.st_mode))
            return fail(o->dataset,
                        "not fashion-mnist, a folder of MNIST IDX files, or a .npy file");
        status = ct_load_mnist_dir(o->dataset, &mnist);
    }
    if (status != CT_OK) return fail(o->dataset, ct_last_error());
    out->train_images = mnist.train_images, out->train_labels = mnist.train_labels;
    out->test_images = mnist.test_images, out->test_labels = mnist.test_labels;
    status = check_images("training set", out->train_images, out->train_labels);
    if (status == CT_OK) status = check_images("test set", out->test_images, out->test_labels);
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

/* MNIST-layout datasets: the four IDX files of a folder (plain or gzipped), checked against
 * each other (image and label counts, labels in 0..9), with the labels widened to i64 (the
 * class-index dtype of the losses); and Fashion-MNIST from Debian's dataset-fashion-mnist. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctensor/data.h"
#include "data/data_file_impl.h"

#define CT_MNIST_CLASSES 10
#define CT_MNIST_LABELS_START 8 /* the IDX header of a 1-d file */
#define CT_FASHION_PACKAGE_HINT "install the Debian package dataset-fashion-mnist (make deps)"

typedef struct {
    const char *fn;   /* the public function */
    const char *hint; /* what to do about a missing file, or "" */
} load_context;

/* Put fn in front of the error a reader set, keeping its status. */
static ct_status rewrap(const load_context *c) {
    char inner[1024];
    snprintf(inner, sizeof inner, "%s", ct_last_error());
    return ct__error(ct_last_status(), "%s: %s", c->fn, inner);
}

/* dir/name, or dir/name.gz when only that exists. */
static ct_status find_file(const load_context *c, const char *dir, const char *name, char *path,
                           size_t size) {
    struct stat st;
    int n = snprintf(path, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n + 3 >= size)
        return ct__error(CT_ERR_INVALID_ARG, "%s: the folder name %s is too long", c->fn, dir);
    if (stat(path, &st) == 0) return CT_OK;
    int err = errno;
    /* Only a file that is not there is "not found": a folder that cannot be searched (no x
     * permission) or a name too long is a different problem, said as such. */
    if (err == ENOENT) {
        strcat(path, ".gz");
        if (stat(path, &st) == 0) return CT_OK;
        err = errno;
        if (err == ENOENT)
            return ct__error(CT_ERR_IO, "%s: %s/%s not found (nor %s.gz)%s%s", c->fn, dir, name,
                             name, c->hint[0] ? ": " : "", c->hint);
    }
    char buf[256];
    return ct__error(CT_ERR_IO, "%s: cannot read %s: %s", c->fn, path,
                     strerror_r(err, buf, sizeof buf));
}

static ct_tensor *read_part(const load_context *c, const char *dir, const char *name, char *path,
                            size_t size) {
    if (find_file(c, dir, name, path, size) != CT_OK) return NULL;
    ct_tensor *t = ct_read_idx(path);
    if (!t) rewrap(c);
    return t;
}

/* Check the shapes, dtypes, counts and label range of one split; *labels becomes i64. */
static ct_status check_split(const load_context *c, const char *image_path, ct_tensor *images,
                             const char *label_path, ct_tensor **labels) {
    if (ct_ndim(images) != 3 || ct_dtype_of(images) != CT_U8)
        return ct__error(CT_ERR_FORMAT,
                         "%s: %s: expected u8 images (N, H, W), found %s with %d "
                         "dimension(s)",
                         c->fn, image_path, ct_dtype_name(ct_dtype_of(images)), ct_ndim(images));
    if (ct_ndim(*labels) != 1 || ct_dtype_of(*labels) != CT_U8)
        return ct__error(CT_ERR_FORMAT,
                         "%s: %s: expected u8 labels (N), found %s with %d "
                         "dimension(s)",
                         c->fn, label_path, ct_dtype_name(ct_dtype_of(*labels)), ct_ndim(*labels));
    if (ct_size(images, 0) != ct_size(*labels, 0))
        return ct__error(CT_ERR_FORMAT, "%s: %s holds %lld images but %s holds %lld labels", c->fn,
                         image_path, (long long)ct_size(images, 0), label_path,
                         (long long)ct_size(*labels, 0));
    const uint8_t *l = (const uint8_t *)ct__data(*labels);
    for (int64_t i = 0; i < ct_numel(*labels); i++)
        if (l[i] >= CT_MNIST_CLASSES)
            return ct__error(CT_ERR_FORMAT,
                             "%s: %s: byte %lld: label %d of image %lld is outside "
                             "0..%d",
                             c->fn, label_path, (long long)(CT_MNIST_LABELS_START + i), l[i],
                             (long long)i, CT_MNIST_CLASSES - 1);
    ct_tensor *wide = ct_cast(*labels, CT_I64);
    if (!wide) return ct_last_status();
    ct_release(*labels);
    *labels = wide;
    return CT_OK;
}

static ct_status load_split(const load_context *c, const char *dir, const char *prefix,
                            ct_tensor **images, ct_tensor **labels) {
    char image_path[PATH_MAX], label_path[PATH_MAX], name[64];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    *images = read_part(c, dir, name, image_path, sizeof image_path);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    *labels = *images ? read_part(c, dir, name, label_path, sizeof label_path) : NULL;
    if (*labels && check_split(c, image_path, *images, label_path, labels) == CT_OK) return CT_OK;
    ct_release(*images);
    ct_release(*labels);
    *images = *labels = NULL;
    return ct_last_status();
}

static ct_status load_dir(const load_context *c, const char *dir, ct_mnist *out) {
    if (!out) return ct__error(CT_ERR_INVALID_ARG, "%s: out is NULL", c->fn);
    *out = (ct_mnist){0};
    if (!dir) return ct__error(CT_ERR_INVALID_ARG, "%s: dir is NULL", c->fn);
    if (load_split(c, dir, "train", &out->train_images, &out->train_labels) != CT_OK ||
        load_split(c, dir, "t10k", &out->test_images, &out->test_labels) != CT_OK) {
        ct_status st = ct_last_status();
        ct_mnist_release(out);
        return st;
    }
    return CT_OK;
}

ct_status ct_load_mnist_dir(const char *dir, ct_mnist *out) {
    load_context c = {"ct_load_mnist_dir", ""};
    return load_dir(&c, dir, out);
}

ct_status ct_load_fashion_mnist(ct_mnist *out) {
    load_context c = {"ct_load_fashion_mnist", CT_FASHION_PACKAGE_HINT};
    const char *dir = getenv("CT_FASHION_MNIST_DIR");
    if (!dir || !dir[0]) dir = CT_FASHION_MNIST_DIR;
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (out) *out = (ct_mnist){0};
        return ct__error(CT_ERR_IO, "%s: Fashion-MNIST is not installed (%s is not a folder): %s",
                         c.fn, dir, CT_FASHION_PACKAGE_HINT);
    }
    return load_dir(&c, dir, out);
}

void ct_mnist_release(ct_mnist *data) {
    if (!data) return;
    ct_release(data->train_images);
    ct_release(data->train_labels);
    ct_release(data->test_images);
    ct_release(data->test_labels);
    *data = (ct_mnist){0};
}

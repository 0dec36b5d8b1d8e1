/* A dataset's images fitted to the model's input shape (zero-padded to 32x32 for a ResNet when
 * smaller), and the per-channel statistics of the normalisation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_impl.h"
#include "train_data_impl.h"

/* The side a ResNet's smaller images are padded to (Fashion-MNIST's 28 to CIFAR's 32). */
#define RESNET_SIDE 32
/* Samples per chunk of the statistics' pass (a chunk is widened to f64). */
#define STATS_CHUNK 1024

static ct_status fail(const char *which, const char *detail) {
    ct_cli_fail("%s: %s", which, detail);
    return CT_ERR_FORMAT;
}

/* images padded with zeros to (N, C, side_h, side_w), centred: a new contiguous tensor. */
static ct_tensor *pad_images(const ct_tensor *images, int64_t side_h, int64_t side_w) {
    ct_tensor *src = ct_contiguous(images);
    const int64_t *s = ct_shape(images);
    int64_t n = s[0], c = s[1], h = s[2], w = s[3];
    ct_tensor *out =
        src ? ct_zeros(4, (int64_t[]){n, c, side_h, side_w}, ct_dtype_of(images), CT_CPU) : NULL;
    if (!out) {
        ct_release(src);
        return NULL;
    }
    size_t size = ct_dtype_size(ct_dtype_of(images));
    const char *from = ct_data_ptr(src);
    char *to = ct_data_ptr(out);
    int64_t top = (side_h - h) / 2, left = (side_w - w) / 2;
    for (int64_t plane = 0; plane < n * c; plane++)
        for (int64_t row = 0; row < h; row++)
            memcpy(to + ((plane * side_h + top + row) * side_w + left) * (int64_t)size,
                   from + (plane * h + row) * w * (int64_t)size, (size_t)w * size);
    ct_release(src);
    return out;
}

ct_status train_fit_images(const char *model, const char *which, bool pad, ct_tensor **images) {
    int nd = ct_ndim(*images);
    const int64_t *s = ct_shape(*images);
    int64_t shape[4] = {s[0], 1, 28, 28};
    if (nd == 3)
        shape[2] = s[1], shape[3] = s[2];
    else if (nd == 4)
        shape[1] = s[1], shape[2] = s[2], shape[3] = s[3];
    else if (nd != 2 || s[1] != 784)
        return fail(which, "images must be (N, H, W), (N, C, H, W), or (N, 784) for 28x28");
    char detail[200];
    if (!train_model_any_shape(model) && (shape[1] != 1 || shape[2] != 28 || shape[3] != 28)) {
        snprintf(detail, sizeof detail,
                 "images are %lldx%lldx%lld, but --model %s takes 1x28x28 (the ResNets, "
                 "--model resnet20 or resnet18, take any size)",
                 (long long)shape[1], (long long)shape[2], (long long)shape[3], model);
        return fail(which, detail);
    }
    if (shape[1] < 1 || shape[1] > CT_LOADER_MAX_CHANNELS || shape[2] < 1 || shape[3] < 1) {
        snprintf(detail, sizeof detail, "images are %lldx%lldx%lld: expected 1 to %d channels",
                 (long long)shape[1], (long long)shape[2], (long long)shape[3],
                 CT_LOADER_MAX_CHANNELS);
        return fail(which, detail);
    }
    ct_tensor *fitted = ct_reshape(*images, 4, shape);
    int64_t h = shape[2] > RESNET_SIDE ? shape[2] : RESNET_SIDE;
    int64_t w = shape[3] > RESNET_SIDE ? shape[3] : RESNET_SIDE;
    if (fitted && pad && train_model_any_shape(model) && (h != shape[2] || w != shape[3])) {
        ct_tensor *padded = pad_images(fitted, h, w);
        ct_release(fitted);
        fitted = padded;
    }
    if (!fitted) return fail(which, ct_last_error());
    ct_release(*images);
    *images = fitted;
    return CT_OK;
}

ct_status train_channel_stats(const ct_tensor *images, double *mean, double *std) {
    const int64_t *s = ct_shape(images);
    int64_t n = s[0], c = s[1], plane = s[2] * s[3];
    double sum[CT_LOADER_MAX_CHANNELS] = {0}, squares[CT_LOADER_MAX_CHANNELS] = {0};
    for (int64_t first = 0; first < n; first += STATS_CHUNK) {
        int64_t last = first + STATS_CHUNK < n ? first + STATS_CHUNK : n;
        ct_tensor *chunk = ct_slice(images, 0, first, last, 1);
        ct_tensor *wide = chunk ? ct_cast(chunk, CT_F64) : NULL;
        ct_tensor *dense = wide ? ct_contiguous(wide) : NULL;
        ct_release(chunk);
        ct_release(wide);
        if (!dense) return ct_last_status();
        const double *v = ct_data_ptr(dense);
        for (int64_t i = 0; i < last - first; i++)
            for (int64_t k = 0; k < c; k++)
                for (int64_t p = 0; p < plane; p++) {
                    double x = v[(i * c + k) * plane + p] / 255.0;
                    sum[k] += x;
                    squares[k] += x * x;
                }
        ct_release(dense);
    }
    double count = (double)n * (double)plane;
    for (int64_t k = 0; k < c; k++) {
        mean[k] = count > 0 ? sum[k] / count : 0;
        double variance = count > 0 ? squares[k] / count - mean[k] * mean[k] : 0;
        /* A constant channel has no spread to divide by: the loader reads 0 as 1. */
        std[k] = variance > 0 ? sqrt(variance) : 0;
    }
    return CT_OK;
}

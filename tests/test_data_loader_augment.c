/* The loader's augmentation at CIFAR-10's shape and recipe (3x32x32, random crops of the image
 * zero-padded by 4, horizontal flips, per-channel normalisation): every delivered image is its
 * sample shifted by -4..4 on each axis and maybe mirrored, with its own label; the shifts cover
 * -4..4, flips happen about half the time, and the batches are the same bit for bit with 1
 * and 2 workers and with the batch split over 2 ranks. */
#include <stdlib.h>

#include "ct_test.h"

enum { N = 240, C = 3, S = 32, PAD = 4, BATCH = 64, PIXELS = C * S * S };

static const double MEAN[C] = {0.49, 0.48, 0.45}, STD[C] = {0.25, 0.24, 0.26};

/* Pixel (c, h, w) of sample n: never 0 (the padding's value), unlike its mirror image. */
static unsigned pixel(int n, int c, int h, int w) {
    return (unsigned)(n * 7 + c * 101 + h * 5 + w * 17) % 251 + 1;
}

static void make_dataset(ct_tensor **images, ct_tensor **labels) {
    static uint8_t bytes[N * PIXELS];
    static int64_t ids[N];
    for (int n = 0; n < N; n++) {
        ids[n] = n;
        for (int c = 0; c < C; c++)
            for (int h = 0; h < S; h++)
                for (int w = 0; w < S; w++)
                    bytes[((n * C + c) * S + h) * S + w] = (uint8_t)pixel(n, c, h, w);
    }
    *images = ct_from_data(bytes, 4, (int64_t[]){N, C, S, S}, CT_U8, CT_CPU);
    *labels = ct_from_data(ids, 1, (int64_t[]){N}, CT_I64, CT_CPU);
}

static ct_loader_options recipe(int workers, int shard_index, int shard_count) {
    ct_loader_options o = {.batch_size = BATCH,
                           .shuffle = true,
                           .seed = 11,
                           .workers = workers,
                           .scale = 1.0 / 255,
                           .crop_padding = PAD,
                           .horizontal_flip = true,
                           .shard_index = shard_index,
                           .shard_count = shard_count};
    for (int c = 0; c < C; c++) o.mean[c] = MEAN[c], o.std[c] = STD[c];
    return o;
}

/* Epoch `epoch` of each of `ranks` loaders (one per rank), their slices of each batch in rank
 * order: labels into ids, images into values. */
static bool run_epoch(int workers, int ranks, int64_t epoch, int64_t *ids, float *values) {
    ct_tensor *images, *labels;
    make_dataset(&images, &labels);
    ct_loader *loaders[2] = {NULL, NULL};
    bool ok = images && labels;
    for (int r = 0; r < ranks && ok; r++) {
        ct_loader_options o = recipe(workers, r, ranks);
        ok = (loaders[r] = ct_loader_new(images, labels, &o)) != NULL &&
             ct_loader_start_epoch(loaders[r], epoch) == CT_OK;
    }
    int64_t count = 0;
    for (int64_t b = 0; ok && b < (N + BATCH - 1) / BATCH; b++)
        for (int r = 0; r < ranks && ok; r++) {
            ct_tensor *x = NULL, *y = NULL;
            ok = ct_loader_next(loaders[r], &x, &y) == CT_OK && x && y;
            int64_t rows = ok ? ct_size(y, 0) : 0;
            ok = ok && count + rows <= N &&
                 ct_copy_to_host(y, ids + count, sizeof(int64_t) * (size_t)rows) == CT_OK &&
                 ct_copy_to_host(x, values + count * PIXELS,
                                 sizeof(float) * (size_t)(rows * PIXELS)) == CT_OK;
            count += rows;
            ct_release(x);
            ct_release(y);
        }
    for (int r = 0; r < ranks; r++) ct_loader_free(loaders[r]);
    ct_release(images);
    ct_release(labels);
    return ok && count == N;
}

/* Whether image (the loader's, normalised) is sample n shifted by (dy, dx), mirrored first
 * when flip: torchvision's RandomCrop(32, padding=4) then RandomHorizontalFlip. */
static bool matches(const float *image, int n, int dy, int dx, bool flip) {
    for (int c = 0; c < C; c++)
        for (int h = 0; h < S; h++)
            for (int w = 0; w < S; w++) {
                int sh = h + dy, sw = (flip ? S - 1 - w : w) + dx;
                bool inside = sh >= 0 && sh < S && sw >= 0 && sw < S;
                double v = inside ? pixel(n, c, sh, sw) : 0;
                float expected = (float)((v / 255 - MEAN[c]) / STD[c]);
                if (fabsf(image[(c * S + h) * S + w] - expected) > 1e-5f) return false;
            }
    return true;
}

TEST(test_loader_augment_cifar_recipe) {
    static int64_t ids[N];
    static float values[N * PIXELS];
    int shifts_y[2 * PAD + 1] = {0}, shifts_x[2 * PAD + 1] = {0}, flips = 0, total = 0;
    for (int64_t epoch = 0; epoch < 2; epoch++) {
        CHECK(run_epoch(1, 1, epoch, ids, values));
        bool seen[N] = {false};
        for (int i = 0; i < N; i++) {
            int64_t n = ids[i]; /* labels are the sample ids: each must come with its image */
            CHECK(n >= 0 && n < N && !seen[n]);
            seen[n] = true;
            bool found = false;
            for (int f = 0; f < 2 && !found; f++)
                for (int dy = -PAD; dy <= PAD && !found; dy++)
                    for (int dx = -PAD; dx <= PAD && !found; dx++)
                        if (matches(values + (int64_t)i * PIXELS, (int)n, dy, dx, f)) {
                            found = true;
                            shifts_y[dy + PAD]++, shifts_x[dx + PAD]++, flips += f, total++;
                        }
            if (!found)
                ct_test_fail(__FILE__, __LINE__, "row %d (sample %lld) is no crop or flip of it", i,
                             (long long)n);
        }
    }
    for (int k = 0; k <= 2 * PAD; k++) CHECK(shifts_y[k] > 0 && shifts_x[k] > 0);
    CHECK(total == 2 * N);
    CHECK(flips > total * 4 / 10 && flips < total * 6 / 10);
}

TEST(test_loader_augment_same_whatever_the_workers_and_ranks) {
    static int64_t ids[4][N];
    static float values[4][N * PIXELS];
    const int setups[4][2] = {{1, 1}, {2, 1}, {0, 2}, {2, 2}}; /* workers, ranks */
    for (int s = 0; s < 4; s++) CHECK(run_epoch(setups[s][0], setups[s][1], 3, ids[s], values[s]));
    for (int s = 1; s < 4; s++) {
        CHECK(memcmp(ids[0], ids[s], sizeof ids[0]) == 0);
        CHECK(memcmp(values[0], values[s], sizeof values[0]) == 0);
    }
    /* Another epoch draws other crops. */
    CHECK(run_epoch(2, 1, 4, ids[1], values[1]));
    CHECK(memcmp(values[0], values[1], sizeof values[0]) != 0);
}

/* The data loader: every sample once per epoch, the same batches whatever the number of
 * workers, per-epoch shuffles, drop_last, normalisation, crops and flips, delivery to the
 * device, and errors. */
#include <stdlib.h>

#include "ct_ref.h"
#include "data/loader_impl.h"

enum { N = 50, H = 4, W = 5 };

/* Images whose pixels encode (sample, row, column) and labels = sample index. */
static void make_dataset(ct_tensor **images, ct_tensor **labels) {
    static uint8_t pixels[N * H * W];
    static int32_t ids[N];
    for (int n = 0; n < N; n++) {
        ids[n] = n;
        for (int k = 0; k < H * W; k++) pixels[n * H * W + k] = (uint8_t)(n + 3 * k);
    }
    *images = ct_from_data(pixels, 3, (int64_t[]){N, H, W}, CT_U8, CT_CPU);
    *labels = ct_from_data(ids, 1, (int64_t[]){N}, CT_I32, CT_CPU);
}

/* All batches of one epoch: labels concatenated into order, inputs into values. */
static bool run_epoch(ct_loader *l, int64_t epoch, int64_t *order, float *values, int64_t *count) {
    if (ct_loader_start_epoch(l, epoch) != CT_OK) return false;
    *count = 0;
    for (;;) {
        ct_tensor *x = NULL, *y = NULL;
        if (ct_loader_next(l, &x, &y) != CT_OK) return false;
        if (!x) return true;
        int64_t rows = ct_size(y, 0);
        bool ok = ct_copy_to_host(y, order + *count, sizeof(int64_t) * (size_t)rows) == CT_OK &&
                  ct_copy_to_host(x, values + *count * H * W,
                                  sizeof(float) * (size_t)(rows * H * W)) == CT_OK;
        *count += rows;
        ct_release(x);
        ct_release(y);
        if (!ok) return false;
    }
}

DEVICE_TEST(test_loader_same_batches_whatever_the_workers) {
    ct_tensor *images, *labels;
    make_dataset(&images, &labels);
    CHECK(images && labels);
    static int64_t order[3][N];
    static float values[3][N * H * W];
    int workers[3] = {0, 1, 3};
    for (int w = 0; w < 3; w++) {
        ct_loader_options o = {.batch_size = 8,
                               .shuffle = true,
                               .seed = 42,
                               .workers = workers[w],
                               .device = device,
                               .scale = 1.0 / 255,
                               .crop_padding = 1,
                               .horizontal_flip = true};
        ct_loader *l = ct_loader_new(images, labels, &o);
        CHECK_NOT_NULL(l);
        CHECK(ct_loader_batches(l) == 7);
        int64_t count = 0;
        bool ok = run_epoch(l, 2, order[w], values[w], &count);
        ct_loader_free(l);
        CHECK(ok && count == N);
    }
    for (int w = 1; w < 3; w++) {
        CHECK(memcmp(order[0], order[w], sizeof order[0]) == 0);
        CHECK(memcmp(values[0], values[w], sizeof values[0]) == 0);
    }
    /* a permutation: every sample exactly once, and not the identity */
    bool seen[N] = {false}, identity = true;
    for (int i = 0; i < N; i++) {
        CHECK(order[0][i] >= 0 && order[0][i] < N && !seen[order[0][i]]);
        seen[order[0][i]] = true;
        identity = identity && order[0][i] == i;
    }
    CHECK(!identity);
    ct_release(images);
    ct_release(labels);
}

TEST(test_loader_epochs_shuffle_differently_and_drop_last) {
    ct_tensor *images, *labels;
    make_dataset(&images, &labels);
    ct_loader_options o = {
        .batch_size = 8, .shuffle = true, .drop_last = true, .seed = 1, .workers = 2};
    ct_loader *l = ct_loader_new(images, labels, &o);
    CHECK_NOT_NULL(l);
    CHECK(ct_loader_batches(l) == 6);
    static int64_t a[N], b[N];
    static float values[N * H * W];
    int64_t ca = 0, cb = 0;
    CHECK(run_epoch(l, 0, a, values, &ca) && run_epoch(l, 1, b, values, &cb));
    CHECK(ca == 48 && cb == 48);
    CHECK(memcmp(a, b, sizeof(int64_t) * 48) != 0);
    /* abandoning an epoch half way and restarting it gives the same batches */
    CHECK_OK(ct_loader_start_epoch(l, 0));
    ct_tensor *x, *y;
    CHECK_OK(ct_loader_next(l, &x, &y));
    ct_release(x);
    ct_release(y);
    int64_t again[N];
    CHECK(run_epoch(l, 0, again, values, &ca) && memcmp(a, again, sizeof(int64_t) * 48) == 0);
    ct_loader_free(l);
    ct_release(images);
    ct_release(labels);
}

/* The shuffle has streams of its own. The global stream that ct_manual_seed(seed) starts
 * makes a model's first weights; a shuffle keyed by the seed itself would draw those same
 * words (as it once did): Fisher-Yates on the global stream's blocks must not be the order. */
TEST(test_loader_shuffle_is_not_drawn_from_the_global_stream) {
    const uint64_t seed = 7;
    ct_manual_seed(seed);
    ct_tensor *u = ct_rand(1, (int64_t[]){4 * N}, CT_F64, CT_CPU); /* f64: the whole word */
    CHECK_NOT_NULL(u);
    double *v = ref_read(u);
    ct_release(u);
    CHECK(v != NULL);
    int64_t global_order[N];
    for (int64_t i = 0; i < N; i++) global_order[i] = i;
    for (int64_t i = N - 1; i > 0; i--) {
        uint64_t w0 = (uint64_t)(v[4 * i] * 4294967296.0),
                 w1 = (uint64_t)(v[4 * i + 1] * 4294967296.0);
        uint64_t r = (w0 << 32 | w1) % (uint64_t)(i + 1);
        int64_t t = global_order[i];
        global_order[i] = global_order[r];
        global_order[r] = t;
    }
    free(v);
    ct_tensor *images, *labels;
    make_dataset(&images, &labels);
    ct_loader *l = ct_loader_new(
        images, labels, &(ct_loader_options){.batch_size = N, .shuffle = true, .seed = seed});
    CHECK_NOT_NULL(l);
    static int64_t order[N];
    static float values[N * H * W];
    int64_t count = 0;
    CHECK(run_epoch(l, 0, order, values, &count) && count == N);
    CHECK(memcmp(order, global_order, sizeof order) != 0);
    ct_loader_free(l);
    ct_release(images);
    ct_release(labels);
}

/* Without shuffling or augmentation, batch values are (pixel * scale - mean) / std. */
TEST(test_loader_normalisation_in_order) {
    ct_tensor *images, *labels;
    make_dataset(&images, &labels);
    ct_loader_options o = {.batch_size = 16, .scale = 0.5, .mean = {2}, .std = {4}};
    ct_loader *l = ct_loader_new(images, labels, &o);
    CHECK_NOT_NULL(l);
    static int64_t order[N];
    static float values[N * H * W];
    int64_t count = 0;
    CHECK(run_epoch(l, 0, order, values, &count) && count == N);
    for (int n = 0; n < N; n++) {
        CHECK(order[n] == n);
        for (int k = 0; k < H * W; k++)
            CHECK_NEAR(values[n * H * W + k], ((n + 3 * k) % 256 * 0.5 - 2) / 4, 1e-6);
    }
    ct_loader_free(l);
    ct_release(images);
    ct_release(labels);
}

/* Each augmented image is its source shifted by at most the padding (zeros coming in) and
 * maybe mirrored; both flips and several shifts occur. */
TEST(test_loader_crop_and_flip) {
    ct_tensor *images, *labels;
    make_dataset(&images, &labels);
    ct_loader_options o = {.batch_size = N, .seed = 5, .crop_padding = 2, .horizontal_flip = true};
    ct_loader *l = ct_loader_new(images, labels, &o);
    CHECK_NOT_NULL(l);
    static int64_t order[N];
    static float values[N * H * W];
    int64_t count = 0;
    CHECK(run_epoch(l, 0, order, values, &count));
    int flips = 0, shifted = 0;
    for (int n = 0; n < N; n++) {
        bool matched = false;
        for (int f = 0; f < 2 && !matched; f++)
            for (int dy = -2; dy <= 2 && !matched; dy++)
                for (int dx = -2; dx <= 2 && !matched; dx++) {
                    bool same = true;
                    for (int h = 0; h < H && same; h++)
                        for (int w = 0; w < W && same; w++) {
                            int sh = h + dy, sw = (f ? W - 1 - w : w) + dx;
                            bool in = sh >= 0 && sh < H && sw >= 0 && sw < W;
                            double v = in ? (n + 3 * (sh * W + sw)) % 256 : 0;
                            same = values[n * H * W + h * W + w] == (float)v;
                        }
                    if (same) matched = true, flips += f, shifted += dy != 0 || dx != 0;
                }
        CHECK(matched);
    }
    CHECK(flips > 5 && flips < N - 5 && shifted > N / 2);
    ct_loader_free(l);
    ct_release(images);
    ct_release(labels);
}

/* Batches large enough to be split over the OpenMP team when made in the training thread:
 * the same values as a worker thread makes alone, crops and flips included. The last batch is
 * below the size of a split, so both ways of the training thread run. */
DEVICE_TEST(test_loader_split_batches_same_as_a_worker_makes) {
    enum { COUNT = 300, SIDE = 16, BATCH = 128, LAST = COUNT % BATCH };
    _Static_assert(BATCH * SIDE * SIDE >= CT_LOADER_PARALLEL_THRESHOLD, "batches are split");
    _Static_assert(LAST * SIDE * SIDE < CT_LOADER_PARALLEL_THRESHOLD, "the last one is not");
    static uint8_t pixels[COUNT * SIDE * SIDE];
    static int64_t ids[COUNT];
    for (int i = 0; i < COUNT * SIDE * SIDE; i++) pixels[i] = (uint8_t)(i * 7 + i / 13);
    for (int n = 0; n < COUNT; n++) ids[n] = n;
    ct_tensor *images = ct_from_data(pixels, 4, (int64_t[]){COUNT, 1, SIDE, SIDE}, CT_U8, CT_CPU);
    ct_tensor *labels = ct_from_data(ids, 1, (int64_t[]){COUNT}, CT_I64, CT_CPU);
    CHECK(images && labels);
    static float values[2][COUNT * SIDE * SIDE];
    static int64_t order[2][COUNT];
    for (int w = 0; w < 2; w++) {
        ct_loader_options o = {.batch_size = BATCH,
                               .shuffle = true,
                               .seed = 9,
                               .workers = 2 * w,
                               .device = device,
                               .scale = 1.0 / 255,
                               .mean = {0.25},
                               .std = {0.5},
                               .crop_padding = 3,
                               .horizontal_flip = true};
        ct_loader *l = ct_loader_new(images, labels, &o);
        CHECK_NOT_NULL(l);
        CHECK_OK(ct_loader_start_epoch(l, 1));
        int64_t count = 0;
        for (;;) {
            ct_tensor *x = NULL, *y = NULL;
            CHECK_OK(ct_loader_next(l, &x, &y));
            if (!x) break;
            int64_t rows = ct_size(y, 0);
            CHECK(count + rows <= COUNT);
            CHECK_OK(ct_copy_to_host(y, order[w] + count, sizeof(int64_t) * (size_t)rows));
            CHECK_OK(ct_copy_to_host(x, values[w] + count * SIDE * SIDE,
                                     sizeof(float) * (size_t)(rows * SIDE * SIDE)));
            count += rows;
            ct_release(x);
            ct_release(y);
        }
        ct_loader_free(l);
        CHECK(count == COUNT);
    }
    CHECK(memcmp(order[0], order[1], sizeof order[0]) == 0);
    CHECK(memcmp(values[0], values[1], sizeof values[0]) == 0);
    /* Not all padding: the pixels came through, normalised. */
    int64_t nonzero = 0;
    for (int i = 0; i < COUNT * SIDE * SIDE; i++) nonzero += values[0][i] != (float)(-0.25 / 0.5);
    CHECK(nonzero > COUNT * SIDE * SIDE / 2);
    ct_release(images);
    ct_release(labels);
}

/* A batch that cannot be made (here: no memory under the CPU's limit) is an error from
 * ct_loader_next, with its reason, whether the consumer or a worker made it: never the end of
 * the epoch, which would let training run an epoch of no steps. */
TEST(test_loader_batch_failure_is_an_error) {
    for (int workers = 0; workers <= 2; workers += 2) {
        /* Batches of 2.4 MiB of floats: each needs a large block of the pool. */
        ct_tensor *images = ct_zeros(3, (int64_t[]){64, 100, 100}, CT_U8, CT_CPU);
        ct_tensor *labels = ct_zeros(1, (int64_t[]){64}, CT_I64, CT_CPU);
        ct_loader *l = ct_loader_new(images, labels,
                                     &(ct_loader_options){.batch_size = 64, .workers = workers});
        CHECK_NOT_NULL(l);
        CHECK_OK(ct_empty_cache(CT_CPU));
        ct_memory_statistics stats;
        CHECK_OK(ct_memory_stats(CT_CPU, &stats));
        CHECK_OK(ct_set_memory_limit(CT_CPU, stats.reserved + ((size_t)1 << 20)));
        CHECK_OK(ct_loader_start_epoch(l, 0));
        ct_tensor *x = NULL, *y = NULL;
        ct_status status = ct_loader_next(l, &x, &y);
        char message[512];
        snprintf(message, sizeof message, "%s", ct_last_error());
        CHECK_OK(ct_set_memory_limit(CT_CPU, 0)); /* before any check can leave the test */
        CHECK(x == NULL && y == NULL);
        CHECK(status == CT_ERR_OUT_OF_MEMORY && strstr(message, "out of memory on cpu:0"));
        ct_clear_error();
        ct_loader_free(l);
        ct_release(images);
        ct_release(labels);
    }
}

TEST(test_loader_errors) {
    ct_tensor *images, *labels;
    make_dataset(&images, &labels);
    CHECK(ct_loader_new(images, labels, &(ct_loader_options){.batch_size = 0}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "batch_size");
    ct_tensor *flat = ct_reshape(images, 2, (int64_t[]){N, -1});
    CHECK(ct_loader_new(flat, labels, &(ct_loader_options){.batch_size = 4, .crop_padding = 2}) ==
          NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "crops and flips need images");
    ct_tensor *few = ct_slice(labels, 0, 0, 10, 1);
    CHECK(ct_loader_new(images, few, &(ct_loader_options){.batch_size = 4}) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "same N");
    ct_tensor *float_labels = ct_cast(labels, CT_F32);
    CHECK(ct_loader_new(images, float_labels, &(ct_loader_options){.batch_size = 4}) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "integers");
    ct_loader *l = ct_loader_new(images, labels, &(ct_loader_options){.batch_size = 4});
    ct_tensor *x, *y;
    CHECK(ct_loader_next(l, &x, &y) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "ct_loader_start_epoch");
    ct_loader_free(l);
    ct_release(float_labels);
    ct_release(few);
    ct_release(flat);
    ct_release(images);
    ct_release(labels);
}

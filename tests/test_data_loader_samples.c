/* The data loader of sample numbers (ct_loader_new_samples), which orders, batches and
 * shards a dataset that the caller reads itself: the same samples per batch as the loader
 * over tensors, shards that cover every batch once, and its argument checks. */
#include <stdint.h>
#include <string.h>

#include "ct_ref.h"

enum { N = 23, BATCH = 4, SHARDS = 3 };

/* The samples of batch b as int64 values into out; their count, or -1. */
static int64_t samples_of(const ct_loader *l, int64_t b, int64_t *out) {
    ct_tensor *s = ct_loader_batch_samples(l, b);
    if (!s) return -1;
    int64_t rows = ct_size(s, 0);
    memcpy(out, ct_data_ptr(s), sizeof(int64_t) * (size_t)rows);
    ct_release(s);
    return rows;
}

TEST(test_loader_samples_are_the_tensor_loaders_batches) {
    static int64_t ids[N];
    for (int i = 0; i < N; i++) ids[i] = i;
    ct_tensor *x = ct_arange(0, N * 2, 1, CT_F32, CT_CPU);
    ct_tensor *inputs = x ? ct_reshape(x, 2, (int64_t[]){N, 2}) : NULL;
    ct_tensor *labels = ct_from_data(ids, 1, (int64_t[]){N}, CT_I64, CT_CPU);
    CHECK(inputs && labels);
    for (int shard = 0; shard < SHARDS; shard++) {
        ct_loader_options o = {.batch_size = BATCH * SHARDS,
                               .shuffle = true,
                               .seed = 7,
                               .shard_index = shard,
                               .shard_count = SHARDS};
        ct_loader *tensors = ct_loader_new(inputs, labels, &o);
        ct_loader *samples = ct_loader_new_samples(N, &o);
        CHECK(tensors && samples);
        CHECK(ct_loader_batches(samples) == ct_loader_batches(tensors));
        CHECK(ct_loader_batches(samples) == 2);
        for (int64_t epoch = 0; epoch < 2; epoch++) {
            CHECK_OK(ct_loader_start_epoch(tensors, epoch));
            CHECK_OK(ct_loader_start_epoch(samples, epoch));
            for (int64_t b = 0; b < 2; b++) {
                ct_tensor *bx = NULL, *by = NULL;
                CHECK_OK(ct_loader_next(tensors, &bx, &by));
                int64_t want[N], got[N], same[N];
                int64_t rows = ct_size(by, 0);
                CHECK_OK(ct_copy_to_host(by, want, sizeof(int64_t) * (size_t)rows));
                ct_release(bx);
                ct_release(by);
                CHECK(samples_of(samples, b, got) == rows);
                CHECK(samples_of(tensors, b, same) == rows);
                CHECK(memcmp(got, want, sizeof(int64_t) * (size_t)rows) == 0);
                CHECK(memcmp(same, want, sizeof(int64_t) * (size_t)rows) == 0);
            }
        }
        ct_loader_free(tensors);
        ct_loader_free(samples);
    }
    ct_release(x);
    ct_release(inputs);
    ct_release(labels);
}

TEST(test_loader_samples_shards_cover_each_batch_once) {
    /* 10 samples in global batches of 4 over 3 ranks: the last batch (2 samples) leaves one
     * rank an empty slice. */
    int seen[10] = {0};
    int64_t rows_of_last[SHARDS];
    for (int shard = 0; shard < SHARDS; shard++) {
        ct_loader_options o = {.batch_size = 4, .shard_index = shard, .shard_count = SHARDS};
        ct_loader *l = ct_loader_new_samples(10, &o);
        CHECK_NOT_NULL(l);
        CHECK_OK(ct_loader_start_epoch(l, 0));
        for (int64_t b = 0; b < ct_loader_batches(l); b++) {
            int64_t got[4];
            int64_t rows = samples_of(l, b, got);
            CHECK(rows >= 0);
            for (int64_t r = 0; r < rows; r++) {
                CHECK(got[r] >= b * 4 && got[r] < b * 4 + 4); /* in its own global batch */
                seen[got[r]]++;
            }
            rows_of_last[shard] = rows;
        }
        ct_loader_free(l);
    }
    for (int i = 0; i < 10; i++) CHECK(seen[i] == 1);
    CHECK(rows_of_last[0] == 0 && rows_of_last[1] == 1 && rows_of_last[2] == 1);
}

TEST(test_loader_samples_batch_size_beyond_the_dataset) {
    ct_loader *l = ct_loader_new_samples(10, &(ct_loader_options){.batch_size = INT64_MAX});
    CHECK_NOT_NULL(l);
    CHECK(ct_loader_batches(l) == 1);
    CHECK_OK(ct_loader_start_epoch(l, 0));
    int64_t got[10];
    CHECK(samples_of(l, 0, got) == 10 && got[9] == 9);
    ct_loader_free(l);
    l = ct_loader_new_samples(0, &(ct_loader_options){.batch_size = 3});
    CHECK(l && ct_loader_batches(l) == 0);
    ct_loader_free(l);
}

TEST(test_loader_samples_errors) {
    CHECK(ct_loader_new_samples(10, &(ct_loader_options){.batch_size = 0}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "batch_size must be positive (got 0)");
    CHECK(ct_loader_new_samples(10, &(ct_loader_options){.batch_size = -1}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "batch_size must be positive (got -1)");
    CHECK(ct_loader_new_samples((int64_t)1 << 62, &(ct_loader_options){.batch_size = 1}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "the dataset's length must be in 0..");
    CHECK(ct_loader_new_samples(10, &(ct_loader_options){.batch_size = 1, .workers = 1}) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "workers and prefetch must be 0");
    CHECK(ct_loader_new_samples(
              10, &(ct_loader_options){.batch_size = 1, .shard_index = 2, .shard_count = 2}) ==
          NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "shard_index");
    CHECK(ct_loader_new_samples(10, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_loader_new_samples");
    ct_loader *l = ct_loader_new_samples(10, &(ct_loader_options){.batch_size = 4});
    CHECK_NOT_NULL(l);
    CHECK(ct_loader_batch_samples(l, 0) == NULL);
    CHECK_ERROR(CT_ERR_STATE, "ct_loader_start_epoch");
    CHECK_OK(ct_loader_start_epoch(l, 0));
    CHECK(ct_loader_batch_samples(l, 3) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "batch must be in 0..2 (got 3)");
    ct_tensor *x, *y;
    CHECK(ct_loader_next(l, &x, &y) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "ct_loader_batch_samples");
    ct_loader_free(l);
}

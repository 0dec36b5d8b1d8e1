/* Tests of the data loader: every sample once per epoch, targets travelling with their inputs,
 * the same batches for the same seed whatever the number of workers, new orders per epoch and
 * seed, drop_last, normalisation against values computed here, abandoned epochs, scopes, and
 * the errors (arguments, state, out of memory inside a worker). */
#include <stdint.h>
#include <stdlib.h>

#include "ct_test.h"

#define N_SAMPLES 103
#define ROW 3

/* inputs (N, 3) f64 with row i = (i, i + 0.25, i + 0.5), targets (N) i64 = 1000 + i. */
static void make_dataset(ct_tensor **x, ct_tensor **y) {
    double xs[N_SAMPLES * ROW];
    int64_t ys[N_SAMPLES];
    for (int i = 0; i < N_SAMPLES; i++) {
        for (int j = 0; j < ROW; j++) xs[i * ROW + j] = i + 0.25 * j;
        ys[i] = 1000 + i;
    }
    *x = ct_from_data(xs, 2, (int64_t[]){N_SAMPLES, ROW}, CT_F64, CT_CPU);
    *y = ct_from_data(ys, 1, (int64_t[]){N_SAMPLES}, CT_I64, CT_CPU);
}

/* One epoch: the sample index of each position, checking that every batch's inputs are the
 * rows of its targets. Returns the number of samples seen, or -1 on a mismatch. */
static int64_t run_epoch(ct_dataloader *l, int64_t epoch, int64_t *order, int64_t *sizes) {
    if (ct_dataloader_start_epoch(l, epoch) != CT_OK) return -1;
    int64_t seen = 0, b = 0;
    for (;;) {
        ct_tensor *x, *y;
        if (ct_dataloader_next(l, &x, &y) != CT_OK) return -1;
        if (!x) return y ? -1 : seen;
        int64_t rows = ct_shape(x)[0];
        bool ok = ct_dtype_of(x) == CT_F32 && ct_ndim(x) == 2 && ct_shape(x)[1] == ROW &&
                  ct_shape(y)[0] == rows && ct_dtype_of(y) == CT_I64 && rows <= 16;
        float xs[16 * ROW];
        int64_t ys[16];
        ok = ok && ct_copy_to_host(x, xs, sizeof xs) == CT_OK &&
             ct_copy_to_host(y, ys, sizeof ys) == CT_OK;
        for (int64_t r = 0; ok && r < rows; r++) {
            int64_t i = ys[r] - 1000;
            ok = i >= 0 && i < N_SAMPLES && seen + r < N_SAMPLES;
            for (int j = 0; ok && j < ROW; j++) ok = xs[r * ROW + j] == (float)(i + 0.25 * j);
            if (ok) order[seen + r] = i;
        }
        ct_release(x);
        ct_release(y);
        if (!ok) return -1;
        if (sizes) sizes[b] = rows;
        seen += rows;
        b++;
    }
}

static bool is_permutation(const int64_t *order, int64_t n) {
    char hit[N_SAMPLES] = {0};
    for (int64_t i = 0; i < n; i++) {
        if (order[i] < 0 || order[i] >= N_SAMPLES || hit[order[i]]) return false;
        hit[order[i]] = 1;
    }
    return true;
}

TEST(test_data_loader_epoch_covers_every_sample) {
    ct_tensor *x, *y;
    make_dataset(&x, &y);
    ct_dataloader_params p = ct_dataloader_params_default();
    p.batch_size = 16;
    p.seed = 7;
    ct_dataloader *l = ct_dataloader_new(x, y, &p);
    ct_release(x); /* the loader keeps its own references */
    ct_release(y);
    CHECK_NOT_NULL(l);
    CHECK(ct_dataloader_num_batches(l) == 7);
    int64_t order[N_SAMPLES], sizes[7];
    int64_t seen = run_epoch(l, 0, order, sizes);
    ct_dataloader_free(l);
    CHECK(seen == N_SAMPLES);
    CHECK(is_permutation(order, N_SAMPLES));
    for (int b = 0; b < 6; b++) CHECK(sizes[b] == 16);
    CHECK(sizes[6] == N_SAMPLES - 96);
    bool identity = true;
    for (int i = 0; i < N_SAMPLES; i++) identity = identity && order[i] == i;
    CHECK(!identity);
}

/* The order of each epoch for a seed, with a given number of workers and queue size. */
static bool epoch_orders(uint64_t seed, int workers, int prefetch, int64_t (*orders)[N_SAMPLES]) {
    ct_tensor *x, *y;
    make_dataset(&x, &y);
    ct_dataloader_params p = ct_dataloader_params_default();
    p.batch_size = 10;
    p.seed = seed;
    p.workers = workers;
    p.prefetch = prefetch;
    ct_dataloader *l = ct_dataloader_new(x, y, &p);
    ct_release(x);
    ct_release(y);
    bool ok = l != NULL;
    for (int e = 0; ok && e < 3; e++) ok = run_epoch(l, e, orders[e], NULL) == N_SAMPLES;
    ct_dataloader_free(l);
    return ok;
}

TEST(test_data_loader_same_seed_same_batches_whatever_the_workers) {
    static int64_t base[3][N_SAMPLES], other[3][N_SAMPLES];
    CHECK(epoch_orders(42, 0, 1, base));
    static const int configs[][2] = {{1, 1}, {2, 4}, {4, 2}, {3, 7}};
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        CHECK(epoch_orders(42, configs[c][0], configs[c][1], other));
        CHECK(memcmp(base, other, sizeof base) == 0);
    }
    for (int e = 0; e < 3; e++) CHECK(is_permutation(base[e], N_SAMPLES));
    CHECK(memcmp(base[0], base[1], sizeof base[0]) != 0); /* a new order each epoch */
    CHECK(epoch_orders(43, 2, 4, other));
    CHECK(memcmp(base[0], other[0], sizeof base[0]) != 0); /* and for another seed */
}

TEST(test_data_loader_no_shuffle_and_drop_last) {
    ct_tensor *x, *y;
    make_dataset(&x, &y);
    ct_dataloader_params p = ct_dataloader_params_default();
    p.batch_size = 16;
    p.shuffle = false;
    p.drop_last = true;
    ct_dataloader *l = ct_dataloader_new(x, y, &p);
    ct_release(x);
    ct_release(y);
    CHECK_NOT_NULL(l);
    CHECK(ct_dataloader_num_batches(l) == 6);
    int64_t order[N_SAMPLES], sizes[7];
    int64_t seen = run_epoch(l, 3, order, sizes);
    ct_dataloader_free(l);
    CHECK(seen == 96);
    for (int i = 0; i < 96; i++) CHECK(order[i] == i);
    for (int b = 0; b < 6; b++) CHECK(sizes[b] == 16);
}

/* (x * scale - mean) / std, for u8 (the lookup-table path), f64 (the generic path) and
 * f32 inputs; and inputs kept as they are when dtype and normalisation are the identity. */
TEST(test_data_loader_normalisation) {
    static const ct_dtype dtypes[] = {CT_U8, CT_F64, CT_F32};
    uint8_t raw[64];
    double values[64];
    for (int i = 0; i < 64; i++) raw[i] = (uint8_t)(i * 4 + 3), values[i] = raw[i];
    for (int d = 0; d < 3; d++) {
        ct_tensor *u8 = ct_from_data(raw, 3, (int64_t[]){4, 4, 4}, CT_U8, CT_CPU);
        ct_tensor *x = ct_cast(u8, dtypes[d]);
        ct_release(u8);
        ct_dataloader_params p = ct_dataloader_params_default();
        p.batch_size = 4;
        p.shuffle = false;
        p.scale = 1.0 / 255;
        p.mean = 0.2860;
        p.std = 0.3530;
        ct_dataloader *l = ct_dataloader_new(x, NULL, &p);
        ct_release(x);
        CHECK_NOT_NULL(l);
        ct_tensor *batch, *none = (ct_tensor *)l;
        CHECK_OK(ct_dataloader_start_epoch(l, 0));
        CHECK_OK(ct_dataloader_next(l, &batch, &none));
        CHECK(none == NULL);
        float got[64];
        ct_status st = ct_copy_to_host(batch, got, sizeof got);
        ct_release(batch);
        ct_dataloader_free(l);
        CHECK_OK(st);
        for (int i = 0; i < 64; i++) CHECK_NEAR(got[i], (values[i] / 255 - 0.2860) / 0.3530, 1e-6);
    }
    int64_t big[2] = {INT64_MAX - 1, -3};
    ct_tensor *ints = ct_from_data(big, 1, (int64_t[]){2}, CT_I64, CT_CPU);
    ct_dataloader_params p = ct_dataloader_params_default();
    p.dtype = CT_I64;
    p.shuffle = false;
    ct_dataloader *l = ct_dataloader_new(ints, NULL, &p);
    ct_release(ints);
    CHECK_NOT_NULL(l);
    ct_tensor *batch;
    CHECK_OK(ct_dataloader_start_epoch(l, 0));
    CHECK_OK(ct_dataloader_next(l, &batch, NULL));
    int64_t back[2];
    ct_status st = ct_copy_to_host(batch, back, sizeof back);
    ct_release(batch);
    ct_dataloader_free(l);
    CHECK_OK(st);
    CHECK(back[0] == INT64_MAX - 1 && back[1] == -3);
}

/* Leaving an epoch half-way, restarting it, and batches released by a scope. */
TEST(test_data_loader_abandoned_epoch_and_scopes) {
    ct_tensor *x, *y;
    make_dataset(&x, &y);
    ct_dataloader_params p = ct_dataloader_params_default();
    p.batch_size = 8;
    p.workers = 3;
    p.prefetch = 3;
    ct_dataloader *l = ct_dataloader_new(x, y, &p);
    ct_release(x);
    ct_release(y);
    CHECK_NOT_NULL(l);
    int64_t first[N_SAMPLES], again[N_SAMPLES];
    CHECK(run_epoch(l, 5, first, NULL) == N_SAMPLES);
    CHECK_OK(ct_dataloader_start_epoch(l, 5));
    CHECK_OK(ct_scope_begin());
    ct_tensor *bx, *by;
    CHECK_OK(ct_dataloader_next(l, &bx, &by));
    CHECK_OK(ct_dataloader_next(l, &bx, &by));
    CHECK_OK(ct_scope_end()); /* releases both batches */
    CHECK(run_epoch(l, 5, again, NULL) == N_SAMPLES);
    CHECK(memcmp(first, again, sizeof first) == 0);
    CHECK_OK(ct_dataloader_start_epoch(l, 6)); /* freed with batches queued */
    ct_dataloader_free(l);
    ct_dataloader_free(NULL);
    CHECK(ct_dataloader_num_batches(NULL) == 0);
}

TEST(test_data_loader_argument_errors) {
    ct_tensor *x, *y;
    make_dataset(&x, &y);
    ct_dataloader_params p = ct_dataloader_params_default();
    p.batch_size = 0;
    CHECK(ct_dataloader_new(x, y, &p) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_dataloader_new: batch_size is 0");
    p = ct_dataloader_params_default();
    p.workers = 65;
    CHECK(ct_dataloader_new(x, y, &p) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "workers must lie in 0..64");
    p = ct_dataloader_params_default();
    p.std = 0;
    CHECK(ct_dataloader_new(x, y, &p) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "std != 0");
    CHECK(ct_dataloader_new(NULL, y, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_dataloader_new");
    ct_tensor *short_y = ct_zeros(1, (int64_t[]){5}, CT_I64, CT_CPU);
    CHECK(ct_dataloader_new(x, short_y, NULL) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "103 inputs but 5 targets");
    ct_release(short_y);
    ct_dataloader *l = ct_dataloader_new(x, y, NULL);
    ct_release(x);
    ct_release(y);
    CHECK_NOT_NULL(l);
    ct_tensor *bx = x, *by = y;
    CHECK(ct_dataloader_next(l, &bx, &by) == CT_ERR_STATE);
    CHECK(bx == NULL && by == NULL);
    CHECK_ERROR(CT_ERR_STATE, "call ct_dataloader_start_epoch first");
    CHECK(ct_dataloader_start_epoch(l, -1) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "epoch -1");
    ct_dataloader_free(l);
}

/* A batch that does not fit under the memory limit: the worker's failure reaches the caller
 * with the out-of-memory message, and the loader still works once memory is back. */
TEST(test_data_loader_out_of_memory_in_a_worker) {
    ct_tensor *x = ct_zeros(2, (int64_t[]){4096, 64}, CT_F32, CT_CPU);
    CHECK_NOT_NULL(x);
    ct_dataloader_params p = ct_dataloader_params_default();
    p.batch_size = 4096;
    p.dtype = CT_F64; /* 2 MiB: more than the pool's free room under the limit */
    ct_dataloader *l = ct_dataloader_new(x, NULL, &p);
    ct_release(x);
    CHECK_NOT_NULL(l);
    ct_memory_statistics s;
    CHECK_OK(ct_empty_cache(CT_CPU));
    CHECK_OK(ct_memory_stats(CT_CPU, &s));
    CHECK_OK(ct_set_memory_limit(CT_CPU, s.allocated + 65536));
    CHECK_OK(ct_dataloader_start_epoch(l, 0));
    ct_tensor *batch;
    ct_status st = ct_dataloader_next(l, &batch, NULL);
    ct_status err = ct_last_status();
    char message[512];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_set_memory_limit(CT_CPU, 0);
    CHECK(st == CT_ERR_OUT_OF_MEMORY && err == st && batch == NULL);
    ct_clear_error();
    CHECK_OK(ct_dataloader_start_epoch(l, 0));
    CHECK_OK(ct_dataloader_next(l, &batch, NULL));
    CHECK(ct_shape(batch)[0] == 4096);
    ct_release(batch);
    ct_dataloader_free(l);
    if (!strstr(message, "out of memory") && !strstr(message, "limit"))
        ct_test_fail(__FILE__, __LINE__, "unexpected message: %s", message);
}

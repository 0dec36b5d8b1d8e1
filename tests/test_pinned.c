/* Pinned host memory: ct_pin_memory and ct_is_pinned, copies between pinned tensors and a GPU
 * (direct DMAs, counted as transfers), the deferred reuse of a pinned block whose copy may
 * still run, and the loader's pinned batches. Without a CUDA device only the errors and the
 * loader's CPU case run; the rest reports skipped by name. ctest runs this program twice:
 * as test_pinned (with the CUDA plugin when there is a GPU) and as test_pinned_fake_gpu, on
 * the fake GPU of fake_gpu_plugin.c, whose copies from pinned memory run late on purpose.
 * No test here runs a kernel on the GPU, which the fake one lacks. */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

#include "core/tensor_impl.h"
#include "ct_ref.h"

#define CUDA0 ((ct_device){CT_DEVICE_CUDA, 0})

static bool need_cuda(void) {
    if (ct_cuda_is_available()) return true;
    ct_test_skip("needs a CUDA device (pinned memory is allocated by the CUDA driver)");
    return false;
}

static ct_transfer_statistics stats_now(void) {
    ct_transfer_statistics s;
    ct_transfer_stats(&s);
    return s;
}

TEST(test_pinned_is_pinned_false_for_ordinary_tensors) {
    CHECK(!ct_is_pinned(NULL));
    int64_t shape[2] = {4, 3};
    ct_tensor *a = ct_zeros(2, shape, CT_F32, CT_CPU);
    CHECK_NOT_NULL(a);
    ct_tensor *t = ct_transpose(a, 0, 1);
    bool pinned = ct_is_pinned(a) || ct_is_pinned(t);
    ct_release(t);
    ct_release(a);
    CHECK(!pinned);
}

TEST(test_pinned_without_cuda_fails_naming_why) {
    if (ct_cuda_is_available()) {
        ct_test_skip("needs a machine without CUDA");
        return;
    }
    int64_t shape[1] = {5};
    ct_tensor *a = ct_ones(1, shape, CT_F32, CT_CPU);
    CHECK_NOT_NULL(a);
    ct_transfer_statistics before = stats_now();
    ct_tensor *p = ct_pin_memory(a);
    ct_transfer_statistics after = stats_now();
    ct_release(a);
    CHECK(p == NULL);
    const char *reason = ct_cuda_unavailable_reason();
    CHECK(reason[0] && strstr(ct_last_error(), reason));
    CHECK(memcmp(&before, &after, sizeof before) == 0);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE,
                "ct_pin_memory: pinned (page-locked) host memory needs a CUDA device");
}

TEST(test_pinned_null_argument) {
    ct_clear_error();
    CHECK(ct_pin_memory(NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_pin_memory: argument 1 is NULL");
    /* A NULL that an earlier failure produced keeps that failure's message. */
    int64_t shape[1] = {-1};
    ct_tensor *bad = ct_zeros(1, shape, CT_F32, CT_CPU);
    CHECK(bad == NULL && ct_last_status() == CT_ERR_SHAPE);
    CHECK(ct_pin_memory(bad) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "negative");
}

DEVICE_TEST(test_pinned_rejects_device_tensors) {
    if (device.type == CT_DEVICE_CPU) {
        ct_test_skip("the error needs a tensor on a GPU");
        return;
    }
    float data[3] = {1, 2, 3};
    int64_t shape[1] = {3};
    ct_tensor *g = ct_from_data(data, 1, shape, CT_F32, device);
    CHECK_NOT_NULL(g);
    ct_tensor *p = ct_pin_memory(g);
    char name[32], needle[96];
    snprintf(needle, sizeof needle, "ct_pin_memory: the tensor is on %s",
             ct_device_str(device, name, sizeof name));
    ct_release(g);
    CHECK(p == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, needle);
}

/* Pinned copies of a contiguous and a strided tensor hold their values, stay CPU tensors for
 * every op, and cost no transfer. */
TEST(test_pinned_values_and_ops) {
    if (!need_cuda()) return;
    int64_t shape[2] = {3, 5};
    double values[15], doubled[15];
    ref_random(values, 15, 7, -4, 4);
    for (int strided = 0; strided < 2; strided++) {
        /* f32 contiguous, f64 strided: the sum in the tensor's precision */
        for (int i = 0; i < 15; i++) doubled[i] = 2 * (strided ? values[i] : (float)values[i]);
        ct_tensor *a = strided ? ref_tensor_strided(values, 2, shape, CT_F64, CT_CPU)
                               : ref_tensor(values, 2, shape, CT_F32, CT_CPU);
        CHECK_NOT_NULL(a);
        ct_transfer_stats_reset();
        ct_tensor *p = ct_pin_memory(a);
        ct_transfer_statistics s = stats_now();
        ct_tensor *again = ct_pin_memory(p), *sum = ct_add(p, p);
        CHECK(s.counters[CT_TRANSFER_H2D][0].count == 0 &&
              s.counters[CT_TRANSFER_D2D][0].count == 0);
        CHECK(p && ct_is_pinned(p) && !ct_is_pinned(a) && ct_is_contiguous(p));
        CHECK(ct_device_equal(ct_device_of(p), CT_CPU) && ct_dtype_of(p) == ct_dtype_of(a));
        CHECK(again && ct_shares_storage(again, p));
        CHECK_TENSOR(p, values);
        CHECK_TENSOR(sum, doubled);
        ct_release(sum);
        ct_release(again);
        ct_release(p);
        ct_release(a);
    }
}

/* pinned -> cuda:0 -> back, counted as explicit transfers; ct_copy into a pinned tensor. */
TEST(test_pinned_round_trip_through_gpu) {
    if (!need_cuda()) return;
    int64_t shape[2] = {64, 33};
    double values[64 * 33];
    ref_random(values, 64 * 33, 11, -100, 100);
    ct_tensor *a = ref_tensor(values, 2, shape, CT_F32, CT_CPU);
    ct_tensor *p = a ? ct_pin_memory(a) : NULL;
    ct_tensor *back_pinned = a ? ct_pin_memory(a) : NULL;
    CHECK(p && back_pinned && ct_fill(back_pinned, 0) == CT_OK);
    ct_transfer_stats_reset();
    ct_tensor *g = ct_to(p, CUDA0);
    ct_transfer_statistics s = stats_now();
    ct_tensor *back = g ? ct_to(g, CT_CPU) : NULL;
    CHECK_OK(g ? ct_copy(back_pinned, g) : ct_last_status());
    CHECK(s.counters[CT_TRANSFER_H2D][0].count == 1 &&
          s.counters[CT_TRANSFER_H2D][0].bytes == 64 * 33 * sizeof(float));
    CHECK_TENSOR(back, values);
    CHECK_TENSOR(back_pinned, values);
    ct_release(back);
    ct_release(g);
    ct_release(back_pinned);
    ct_release(p);
    ct_release(a);
}

/* The device copy of a ramp of n f32 values holds the ramp. */
static bool holds_ramp(const ct_tensor *g, int64_t n) {
    float *back = malloc((size_t)n * sizeof *back);
    bool ok = back && ct_copy_to_host(g, back, (size_t)n * sizeof *back) == CT_OK;
    for (int64_t i = 0; ok && i < n; i++) ok = back[i] == (float)i;
    free(back);
    return ok;
}

/* The source is released as soon as ct_to returns, while its DMA may still run; the next
 * pinned tensor of its size is written at once (and, the third time, the cache is given
 * back in between). The device copy must hold the first values. */
TEST(test_pinned_source_released_right_after_copy) {
    if (!need_cuda()) return;
    int64_t n = (int64_t)16 << 20; /* 64 MiB of f32: a DMA of some milliseconds */
    for (int round = 0; round < 3; round++) {
        ct_tensor *ramp = ct_arange(0, (double)n, 1, CT_F32, CT_CPU);
        ct_tensor *p = ramp ? ct_pin_memory(ramp) : NULL;
        ct_release(ramp);
        CHECK_NOT_NULL(p);
        ct_tensor *g = ct_to(p, CUDA0);
        ct_release(p);
        if (round == 2) CHECK_OK(ct_empty_cache(CT_CPU));
        ct_tensor *other = ct_full(1, &n, -1.0, CT_F32, CT_CPU);
        ct_tensor *q = other ? ct_pin_memory(other) : NULL;
        ct_release(other);
        bool ok = g && q && holds_ramp(g, n);
        ct_release(q);
        ct_release(g);
        CHECK(ok);
    }
}

/* Once its copies ended, a released pinned block serves the next request of its size. */
TEST(test_pinned_cache_reuses_finished_blocks) {
    if (!need_cuda()) return;
    int64_t n = 12345; /* a size no other test pins */
    ct_tensor *a = ct_zeros(1, &n, CT_F32, CT_CPU);
    ct_tensor *p = a ? ct_pin_memory(a) : NULL;
    ct_tensor *g = p ? ct_to(p, CUDA0) : NULL;
    ct_tensor *q = g ? ct_pin_memory(a) : NULL;
    CHECK(q && ct_synchronize(CUDA0) == CT_OK);
    const void *first = ct__data(p), *second = ct__data(q);
    ct_release(p);
    ct_release(q);
    ct_tensor *r = ct_pin_memory(a);
    bool reused = r && (ct__data(r) == first || ct__data(r) == second);
    ct_release(r);
    ct_release(g);
    ct_release(a);
    CHECK(reused);
}

/* The fake GPU's hook that holds its stream (a copy that does not end), or NULL with the test
 * skipped by name. */
static void (*stall_hook(void))(int, bool) {
    const char *path = getenv("CT_CUDA_PLUGIN");
    void *plugin = ct_cuda_is_available() && path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void (*stall)(int, bool) =
        plugin ? (void (*)(int, bool))dlsym(plugin, "ct_fake_gpu_stall") : NULL;
    if (plugin) dlclose(plugin); /* the library holds it loaded */
    if (!stall)
        ct_test_skip("needs the fake GPU (test_pinned_fake_gpu), whose stream a test can hold: a "
                     "real GPU's copy cannot be made to hang");
    return stall;
}

/* A pinned block whose copy to the device does not end by CT_DEVICE_TIMEOUT is not given back
 * to the driver (the DMA may still read it) but leaked with a warning, and the wait for it
 * ends at the deadline; once the stream runs on, the copy still finds its values. */
TEST(test_pinned_stuck_copy_leaks_its_block) {
    void (*stall)(int, bool) = stall_hook();
    if (!stall) return;
    int64_t n = 4321; /* a size no other test pins */
    ct_tensor *ramp = ct_arange(0, (double)n, 1, CT_F32, CT_CPU);
    ct_tensor *p = ramp ? ct_pin_memory(ramp) : NULL;
    ct_release(ramp);
    CHECK(p && ct_synchronize(CUDA0) == CT_OK);
    stall(0, true);
    setenv("CT_DEVICE_TIMEOUT", "0.2", 1);
    ct_tensor *g = p ? ct_to(p, CUDA0) : NULL;
    ct_release(p);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_OK(ct_empty_cache(CT_CPU)); /* gives the pinned cache back: its block's copy is stuck */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    stall(0, false);
    unsetenv("CT_DEVICE_TIMEOUT");
    CHECK(waited >= 0.2 && waited < 5.0);
    CHECK(g && ct_synchronize(CUDA0) == CT_OK && holds_ramp(g, n));
    ct_release(g);
}

enum { N = 40, H = 3, W = 4 };

/* Every batch of epoch 1 into values and order. */
static bool loader_epoch(ct_device device, bool no_pin, int workers, float *values,
                         int64_t *order) {
    static uint8_t pixels[N * H * W];
    for (int k = 0; k < N * H * W; k++) pixels[k] = (uint8_t)(k * 7);
    int64_t labels_data[N];
    for (int i = 0; i < N; i++) labels_data[i] = i;
    ct_tensor *x = ct_from_data(pixels, 3, (int64_t[]){N, H, W}, CT_U8, CT_CPU);
    ct_tensor *y = ct_from_data(labels_data, 1, (int64_t[]){N}, CT_I64, CT_CPU);
    ct_loader_options o = {.batch_size = 6,
                           .shuffle = true,
                           .seed = 3,
                           .workers = workers,
                           .device = device,
                           .scale = 1.0 / 255,
                           .crop_padding = 1,
                           .horizontal_flip = true,
                           .no_pin_memory = no_pin};
    ct_loader *l = x && y ? ct_loader_new(x, y, &o) : NULL;
    ct_release(x);
    ct_release(y);
    bool ok = l && ct_loader_start_epoch(l, 1) == CT_OK;
    for (int64_t at = 0; ok;) {
        ct_tensor *bx = NULL, *by = NULL;
        ok = ct_loader_next(l, &bx, &by) == CT_OK;
        if (!bx) break;
        int64_t rows = ct_size(by, 0);
        ok = ok && at + rows <= N &&
             ct_copy_to_host(by, order + at, sizeof(int64_t) * (size_t)rows) == CT_OK &&
             ct_copy_to_host(bx, values + at * H * W, sizeof(float) * (size_t)(rows * H * W)) ==
                 CT_OK;
        at += rows;
        ct_release(bx);
        ct_release(by);
    }
    ct_loader_free(l);
    return ok;
}

/* The loader gives the same batches with and without pinned memory. */
DEVICE_TEST(test_pinned_loader_same_batches) {
    static float values[2][N * H * W];
    static int64_t order[2][N];
    for (int workers = 0; workers <= 2; workers += 2) {
        CHECK(loader_epoch(device, false, workers, values[0], order[0]));
        CHECK(loader_epoch(device, true, workers, values[1], order[1]));
        CHECK(memcmp(values[0], values[1], sizeof values[0]) == 0);
        CHECK(memcmp(order[0], order[1], sizeof order[0]) == 0);
    }
}

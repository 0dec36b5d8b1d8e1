/* The fake GPU (tests/fake_gpu_plugin.c with fake_gpu_kernels.c) runs its work as a GPU
 * does: a kernel call queues it on the device's stream and returns before it ran; a read-back
 * and ct_synchronize wait for it; a failure of queued work is reported by the next calls on
 * the device, naming the kernel. The tests read the fake GPU's queue through the hooks only
 * it exports (ct_fake_gpu_*), and its memory, which is host memory, directly: they run as
 * test_fake_gpu_async_on_fake_gpu and are skipped by name elsewhere. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "ct_ref.h"

#define CUDA0 ((ct_device){CT_DEVICE_CUDA, 0})

typedef struct fake_gpu {
    uint64_t (*pending)(int device);
    void (*fail_next)(int device);
    void (*reset)(int device);
    void (*stall)(int device, bool stalled);
} fake_gpu;

/* The fake GPU's hooks, or false with the test skipped by name (another device) or failed (a
 * fake GPU without them, whose kernels would run at once). */
static bool need_fake_gpu(fake_gpu *out) {
    ct_device_properties p;
    if (!ct_cuda_is_available() || ct_device_info(CUDA0, &p) != CT_OK ||
        strncmp(p.name, "fake GPU", 8) != 0) {
        ct_test_skip("needs the fake GPU (CT_CUDA_PLUGIN naming fake_gpu_kernels_plugin): a real "
                     "GPU's asynchrony is CUDA's own");
        return false;
    }
    void *plugin = dlopen(getenv("CT_CUDA_PLUGIN"), RTLD_NOW | RTLD_NOLOAD);
    if (plugin) {
        out->pending = (uint64_t(*)(int))dlsym(plugin, "ct_fake_gpu_pending");
        out->fail_next = (void (*)(int))dlsym(plugin, "ct_fake_gpu_fail_next");
        out->reset = (void (*)(int))dlsym(plugin, "ct_fake_gpu_reset");
        out->stall = (void (*)(int, bool))dlsym(plugin, "ct_fake_gpu_stall");
        dlclose(plugin); /* the library holds it loaded */
    }
    if (plugin && out->pending && out->fail_next && out->reset && out->stall) return true;
    ct_test_fail(__FILE__, __LINE__, "the fake GPU %s has no queue (ct_fake_gpu_pending)",
                 getenv("CT_CUDA_PLUGIN"));
    return false;
}

/* A 256 x 256 float64 matrix on device of deterministic values. */
static ct_tensor *matrix(uint64_t seed, ct_device device) {
    static double values[256 * 256];
    ref_random(values, 256 * 256, seed, -1, 1);
    return ct_from_data(values, 2, (int64_t[]){256, 256}, CT_F64, device);
}

/* A long op returns before its work ran; the read-back waits for it and gets the values the
 * CPU computes. */
TEST(test_fake_gpu_async_matmul_returns_before_its_work) {
    fake_gpu gpu;
    if (!need_fake_gpu(&gpu)) return;
    ct_scope_begin();
    ct_tensor *a = matrix(1, CUDA0), *b = matrix(2, CUDA0);
    CHECK(a && b && ct_synchronize(CUDA0) == CT_OK && gpu.pending(0) == 0);
    ct_tensor *c = ct_matmul(a, b);
    CHECK_NOT_NULL(c);
    CHECK(gpu.pending(0) == 1); /* the matmul, queued: not run */
    ct_tensor *y = ct_exp(ct_sin(c));
    CHECK(y && gpu.pending(0) == 3);
    ct_tensor *expected = ct_exp(ct_sin(ct_matmul(matrix(1, CT_CPU), matrix(2, CT_CPU))));
    ct_tensor *back = ct_to(y, CT_CPU);
    CHECK(expected && back && gpu.pending(0) == 0);
    double *got = ref_read(back), *want = ref_read(expected);
    bool same = got && want;
    for (int64_t i = 0; same && i < 256 * 256; i++) same = fabs(got[i] - want[i]) <= 1e-12;
    free(got);
    free(want);
    CHECK(same);
    ct_scope_end();
}

/* The fake GPU's memory is host memory: an in-place copy queued on it has not written its
 * destination when it returns; ct_synchronize waits for it. */
TEST(test_fake_gpu_async_memory_written_after_the_call) {
    fake_gpu gpu;
    if (!need_fake_gpu(&gpu)) return;
    ct_scope_begin();
    int64_t n = 1 << 20;
    ct_tensor *dst = ct_zeros(1, &n, CT_F32, CUDA0), *src = ct_ones(1, &n, CT_F32, CUDA0);
    CHECK(dst && src && ct_synchronize(CUDA0) == CT_OK);
    const float *raw = ct_data_ptr(dst);
    CHECK_OK(ct_copy(dst, src));
    CHECK(raw[0] == 0.0f && raw[n - 1] == 0.0f && gpu.pending(0) == 1);
    CHECK_OK(ct_synchronize(CUDA0));
    CHECK(raw[0] == 1.0f && raw[n - 1] == 1.0f && gpu.pending(0) == 0);
    ct_scope_end();
}

/* A copy from pageable host memory takes its source at once (cudaMemcpy returns once the host
 * buffer has been read): the buffer may change right after. */
TEST(test_fake_gpu_async_upload_takes_its_source_at_once) {
    fake_gpu gpu;
    if (!need_fake_gpu(&gpu)) return;
    ct_scope_begin();
    float values[4] = {1, 2, 3, 4};
    ct_tensor *t = ct_from_data(values, 1, (int64_t[]){4}, CT_F32, CUDA0);
    CHECK(t && gpu.pending(0) >= 1);
    values[0] = values[1] = values[2] = values[3] = -1;
    CHECK_TENSOR(t, ((double[]){1, 2, 3, 4}));
    ct_scope_end();
}

/* Kernels that read a result back (here gather's index check) wait for their work and report
 * their own error at once, as the real plugin's do. */
TEST(test_fake_gpu_async_readback_kernels_wait) {
    fake_gpu gpu;
    if (!need_fake_gpu(&gpu)) return;
    ct_scope_begin();
    ct_tensor *x = matrix(3, CUDA0);
    int64_t bad[2] = {0, 300};
    ct_tensor *index = ct_from_data(bad, 1, (int64_t[]){2}, CT_I64, CUDA0);
    CHECK(x && index);
    ct_tensor *picked = ct_index_select(ct_exp(x), 0, index);
    CHECK(picked == NULL && gpu.pending(0) == 0);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "index 300 is out of range");
    CHECK_OK(ct_synchronize(CUDA0)); /* that error was the call's own, not the device's */
    ct_scope_end();
}

/* A queued kernel that fails: the call returned CT_OK, so the error is the device's, sticky,
 * reported by the next synchronising call and every later one with the kernel's name, until
 * the device is reset. */
TEST(test_fake_gpu_async_failure_reported_at_the_next_synchronisation) {
    fake_gpu gpu;
    if (!need_fake_gpu(&gpu)) return;
    ct_scope_begin();
    ct_tensor *x = matrix(4, CUDA0);
    CHECK(x && ct_synchronize(CUDA0) == CT_OK);
    gpu.fail_next(0);
    ct_tensor *y = ct_exp(x);
    CHECK_NOT_NULL(y); /* queued: its failure is not known yet */
    CHECK(ct_synchronize(CUDA0) == CT_ERR_BACKEND);
    CHECK_ERROR(CT_ERR_BACKEND, "the queued kernel unary failed");
    CHECK(ct_to(y, CT_CPU) == NULL && strstr(ct_last_error(), "unary") != NULL);
    CHECK(ct_exp(x) == NULL && strstr(ct_last_error(), "asynchronous error") != NULL);
    gpu.reset(0);
    CHECK_OK(ct_synchronize(CUDA0));
    CHECK_NOT_NULL(ct_to(ct_exp(x), CT_CPU));
    ct_scope_end();
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A stream stuck in a kernel that does not end: every wait for it (ct_synchronize, a read-back,
 * a kernel that reads a result back) fails at CT_DEVICE_TIMEOUT with CT_ERR_BACKEND naming
 * what it waited for, instead of hanging; once the stream runs on, the device works again and
 * the queued work's results are right. */
TEST(test_fake_gpu_async_stuck_stream_times_out) {
    fake_gpu gpu;
    if (!need_fake_gpu(&gpu)) return;
    ct_scope_begin();
    ct_tensor *x = matrix(5, CUDA0);
    int64_t bad[1] = {300};
    ct_tensor *index = ct_from_data(bad, 1, (int64_t[]){1}, CT_I64, CUDA0);
    CHECK(x && index && ct_synchronize(CUDA0) == CT_OK);
    setenv("CT_DEVICE_TIMEOUT", "0.2", 1);
    gpu.stall(0, true);
    ct_tensor *y = ct_exp(x);
    CHECK(y && gpu.pending(0) == 1);
    double start = seconds_now();
    CHECK(ct_synchronize(CUDA0) == CT_ERR_BACKEND);
    CHECK_ERROR(CT_ERR_BACKEND, "cuda:0: the work queued on its stream did not finish within "
                                "0.2 s (CT_DEVICE_TIMEOUT)");
    CHECK(ct_to(y, CT_CPU) == NULL && strstr(ct_last_error(), "CT_DEVICE_TIMEOUT") != NULL);
    CHECK(ct_index_select(x, 0, index) == NULL);
    CHECK_ERROR(CT_ERR_BACKEND, "gather did not finish within 0.2 s");
    double waited = seconds_now() - start;
    CHECK(waited >= 0.6 && waited < 5.0);
    gpu.stall(0, false);
    unsetenv("CT_DEVICE_TIMEOUT");
    CHECK_OK(ct_synchronize(CUDA0));
    CHECK(gpu.pending(0) == 0);
    ct_tensor *expected = ct_exp(matrix(5, CT_CPU));
    ct_tensor *back = ct_to(y, CT_CPU);
    CHECK(expected && back);
    double *got = ref_read(back), *want = ref_read(expected);
    bool same = got && want;
    for (int64_t i = 0; same && i < 256 * 256; i++) same = got[i] == want[i];
    free(got);
    free(want);
    CHECK(same);
    ct_scope_end();
}

/* A CT_DEVICE_TIMEOUT that is not a positive number of seconds is the default's (300 s). */
TEST(test_fake_gpu_async_device_timeout_not_a_number) {
    fake_gpu gpu;
    if (!need_fake_gpu(&gpu)) return;
    ct_scope_begin();
    setenv("CT_DEVICE_TIMEOUT", "soon", 1);
    ct_tensor *y = ct_exp(matrix(6, CUDA0));
    CHECK(y && ct_synchronize(CUDA0) == CT_OK && gpu.pending(0) == 0);
    unsetenv("CT_DEVICE_TIMEOUT");
    ct_scope_end();
}

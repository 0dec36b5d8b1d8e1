/* The real CUDA plugin, loaded from the build folder (libctensor_cuda.so beside libctensor):
 * without a GPU it must say why in one line (here: no driver); with one, discovery, device
 * properties, ct_synchronize and host<->device copies of every size class of the staging
 * buffers (small slots, one large chunk, several) must work. The plugin is looked for once
 * per process, so CT_CUDA_PLUGIN is set in a constructor, before the runner asks. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "ct_test.h"

static char plugin_path[4096];
static bool plugin_built;

__attribute__((constructor)) static void point_at_built_plugin(void) {
    char exe[4000];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = '\0'; /* build/tests */
    snprintf(plugin_path, sizeof plugin_path, "%s/../libctensor_cuda.so", exe);
    plugin_built = access(plugin_path, F_OK) == 0;
    if (plugin_built) setenv("CT_CUDA_PLUGIN", plugin_path, 1);
}

/* True when the test can run on a GPU; otherwise marks it skipped. */
static bool need_gpu(void) {
    if (!plugin_built)
        ct_test_skip("built without the CUDA plugin");
    else if (!ct_cuda_is_available())
        ct_test_skip(ct_cuda_unavailable_reason());
    return plugin_built && ct_cuda_is_available();
}

TEST(test_cuda_plugin_reason_without_gpu) {
    if (!plugin_built || ct_cuda_is_available()) {
        ct_test_skip(plugin_built ? "a CUDA device is present" : "built without the CUDA plugin");
        return;
    }
    const char *reason = ct_cuda_unavailable_reason();
    CHECK(reason[0] != '\0');
    CHECK(strstr(reason, "not built") == NULL); /* the plugin itself loaded */
    CHECK(strchr(reason, '\n') == NULL);        /* one line */
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver) {
        dlclose(driver); /* a driver without a GPU: another reason, checked above */
        return;
    }
    CHECK(strstr(reason, "no NVIDIA driver") == reason);
    CHECK(strstr(reason, "libcuda.so.1") != NULL);
    CHECK(ct_synchronize((ct_device){CT_DEVICE_CUDA, 0}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "libcuda.so.1");
}

/* The build facts come from the plugin's second export, which needs no driver. */
TEST(test_cuda_plugin_build_info) {
    if (!plugin_built) {
        ct_test_skip("built without the CUDA plugin");
        return;
    }
    ct_cuda_build_info info;
    CHECK_OK(ct_cuda_get_build_info(&info));
    CHECK(info.plugin_loaded);
    CHECK(strcmp(info.plugin_path, plugin_path) == 0);
    CHECK(info.runtime_version >= 11000 && info.runtime_version % 10 == 0);
    CHECK(!ct_cuda_is_available() || info.driver_version > 0);
}

TEST(test_cuda_plugin_device_info) {
    if (!need_gpu()) return;
    CHECK(strcmp(ct_cuda_unavailable_reason(), "") == 0);
    CHECK(ct_device_count(CT_DEVICE_CUDA) >= 1);
    ct_device_properties p;
    CHECK_OK(ct_device_info((ct_device){CT_DEVICE_CUDA, 0}, &p));
    CHECK(p.name[0] != '\0');
    CHECK(p.memory_total > 0);
    CHECK(p.memory_free > 0 && p.memory_free <= p.memory_total);
    CHECK(p.compute_capability_major >= 8); /* the oldest architecture of the build */
    CHECK(p.multiprocessors > 0);
    CHECK(ct_device_equal(p.device, (ct_device){CT_DEVICE_CUDA, 0}));
}

TEST(test_cuda_plugin_synchronize) {
    if (!need_gpu()) return;
    CHECK_OK(ct_synchronize((ct_device){CT_DEVICE_CUDA, 0}));
    int count = ct_device_count(CT_DEVICE_CUDA);
    CHECK(ct_synchronize((ct_device){CT_DEVICE_CUDA, count}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "does not exist");
}

/* Uploads `size` bytes, overwrites the source at once (the copy must have read it before
 * returning), and reads the tensor back. */
static bool round_trip(ct_device device, size_t size) {
    uint8_t *src = calloc(size, 1), *back = calloc(size, 1);
    bool ok = src && back;
    for (size_t i = 0; ok && i < size; i++) src[i] = (uint8_t)(i * 2654435761u >> 13);
    ct_tensor *t = ok ? ct_from_data(src, 1, (int64_t[]){(int64_t)size}, CT_U8, device) : NULL;
    for (size_t i = 0; t && i < size; i++) src[i] ^= 0xff;
    ok = t && ct_copy_to_host(t, back, size) == CT_OK;
    for (size_t i = 0; ok && i < size; i++) ok = back[i] + src[i] == 0xff; /* a ^ 0xff */
    if (!ok) printf("    round trip of %zu bytes on a CUDA device differs\n", size);
    ct_release(t);
    free(src);
    free(back);
    return ok;
}

TEST(test_cuda_plugin_copy_round_trip) {
    if (!need_gpu()) return;
    const size_t sizes[] = {1,         1000,           (64 << 10) - 1, 64 << 10, (3 << 20) + 5,
                            (8 << 20), (20 << 20) + 12};
    ct_device cuda0 = {CT_DEVICE_CUDA, 0};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) CHECK(round_trip(cuda0, sizes[i]));
    /* many small copies in flight reuse every small slot */
    for (int i = 0; i < 40; i++) CHECK(round_trip(cuda0, 4096 + (size_t)i));
    CHECK_OK(ct_synchronize(cuda0));
}

/* A copy between two devices: two physical ones when present, else two logical devices on
 * cuda:0 (the same-device path). Last in this file: it splits cuda:0 when there is one. */
TEST(test_cuda_plugin_copy_between_devices) {
    if (!need_gpu()) return;
    if (ct_device_count(CT_DEVICE_CUDA) < 2)
        CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CUDA, 0, 2, NULL));
    enum { N = (5 << 20) + 3 };
    uint8_t *src = malloc(N), *back = malloc(N);
    CHECK(src && back);
    for (size_t i = 0; i < N; i++) src[i] = (uint8_t)(i * 7 + 1);
    ct_tensor *a = ct_from_data(src, 1, (int64_t[]){N}, CT_U8, (ct_device){CT_DEVICE_CUDA, 0});
    ct_tensor *b = ct_to(a, (ct_device){CT_DEVICE_CUDA, 1});
    ct_status status = b ? ct_copy_to_host(b, back, N) : ct_last_status();
    bool same = status == CT_OK && memcmp(src, back, N) == 0;
    ct_release(a);
    ct_release(b);
    free(src);
    free(back);
    CHECK_OK(status);
    CHECK(same);
}

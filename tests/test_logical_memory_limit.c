/* The memory limit of logical devices, CPU and GPU alike: from CT_MEMORY_LIMIT (set by a
 * constructor before the first use of any pool) when ct_configure_logical_devices is given
 * no limits, and from its limits when it is. Each logical device refuses an allocation beyond
 * its own limit with CT_ERR_OUT_OF_MEMORY and serves one within it. The GPU cases run on a
 * GPU (the fake one in the *_on_fake_gpu run) and are skipped by name without one. Its own
 * program: configuring is refused while tensors live, and the environment is read once. */
#include <stdlib.h>

#include "ct_test.h"

#define MIB ((size_t)1 << 20)

__attribute__((constructor)) static void set_environment(void) {
    setenv("CT_MEMORY_LIMIT", "cpu=2MiB,cuda=2MiB", 1);
}

/* An allocation of bytes on device: true when it is refused for the device's limit. */
static bool refused(ct_device device, size_t bytes, char *message, size_t size) {
    ct_tensor *t = ct_empty(1, (int64_t[]){(int64_t)bytes}, CT_U8, device);
    bool no = t == NULL && ct_last_status() == CT_ERR_OUT_OF_MEMORY;
    snprintf(message, size, "%s", ct_last_error());
    ct_release(t);
    ct_clear_error();
    return no;
}

/* Two logical devices of type, each refusing more than its limit and serving less, at the
 * same time (each its own pool); then back to one device. */
static void check_two_devices(ct_device_type type, const size_t *limits) {
    CHECK_OK(ct_configure_logical_devices(type, 0, 2, limits));
    for (int i = 0; i < 2; i++) {
        ct_device device = {type, i};
        size_t limit = limits ? limits[i] : 2 * MIB;
        ct_memory_statistics s;
        CHECK_OK(ct_memory_stats(device, &s));
        CHECK(s.limit == limit);
        char message[1024], name[32], expected[64];
        ct_device_str(device, name, sizeof name);
        if (!refused(device, limit + MIB, message, sizeof message))
            ct_test_fail(__FILE__, __LINE__, "%s served %zu bytes beyond its limit of %zu: %s",
                         name, limit + MIB, limit, message);
        snprintf(expected, sizeof expected, "out of memory on %s", name);
        CHECK(strstr(message, expected) != NULL);
    }
    int64_t within[1] = {(int64_t)(MIB * 3 / 4)};
    ct_tensor *a = ct_empty(1, within, CT_U8, (ct_device){type, 0});
    ct_tensor *b = ct_empty(1, within, CT_U8, (ct_device){type, 1});
    bool served = a && b;
    ct_release(a);
    ct_release(b);
    CHECK(served);
    CHECK_OK(ct_empty_cache((ct_device){type, 0}));
    CHECK_OK(ct_empty_cache((ct_device){type, 1}));
    CHECK_OK(ct_configure_logical_devices(type, 0, 1, NULL));
}

static bool need_gpu(void) {
    if (ct_device_count(CT_DEVICE_CUDA) > 0) return true;
    ct_test_skip(ct_cuda_unavailable_reason());
    return false;
}

static const size_t api_limits[2] = {MIB, 3 * MIB};

TEST(test_logical_memory_limit_cpu_from_environment) { check_two_devices(CT_DEVICE_CPU, NULL); }

TEST(test_logical_memory_limit_cpu_from_api) { check_two_devices(CT_DEVICE_CPU, api_limits); }

TEST(test_logical_memory_limit_gpu_from_environment) {
    if (need_gpu()) check_two_devices(CT_DEVICE_CUDA, NULL);
}

TEST(test_logical_memory_limit_gpu_from_api) {
    if (need_gpu()) check_two_devices(CT_DEVICE_CUDA, api_limits);
}

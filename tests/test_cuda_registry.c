/* The backend registry's plugin loading when CT_CUDA_PLUGIN names a file that does not
 * exist, and ct_synchronize. The plugin is looked for once per process, so this program
 * sets CT_CUDA_PLUGIN before the runner first asks about CUDA (in a constructor); the real
 * plugin is tested by test_cuda_plugin. */
#include <stdlib.h>

#include "ct_test.h"

#define MISSING_PLUGIN "/nonexistent/ctensor-test/libctensor_cuda.so"

__attribute__((constructor)) static void point_at_missing_plugin(void) {
    setenv("CT_CUDA_PLUGIN", MISSING_PLUGIN, 1);
}

TEST(test_cuda_registry_missing_plugin_reason) {
    CHECK(!ct_cuda_is_available());
    const char *reason = ct_cuda_unavailable_reason();
    CHECK(strstr(reason, MISSING_PLUGIN) != NULL);
    /* dlerror()'s own text, after the path */
    CHECK(strstr(reason, "cannot open shared object file") != NULL);
    CHECK(strstr(reason, "CT_CUDA_PLUGIN=\"" MISSING_PLUGIN "\"") == reason);
    CHECK(ct_device_count(CT_DEVICE_CUDA) == 0);
}

TEST(test_cuda_registry_missing_plugin_build_info) {
    ct_cuda_build_info info;
    CHECK_OK(ct_cuda_get_build_info(&info));
    CHECK(!info.plugin_loaded);
    CHECK(strcmp(info.plugin_path, MISSING_PLUGIN) == 0);
    CHECK(info.runtime_version == 0 && info.driver_version == 0);
    CHECK(info.real_archs[0] == '\0' && info.ptx_archs[0] == '\0');
}

TEST(test_cuda_registry_build_info_null) {
    CHECK(ct_cuda_get_build_info(NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_cuda_get_build_info: out is NULL");
}

TEST(test_cuda_registry_missing_plugin_device_check) {
    CHECK(ct_device_check((ct_device){CT_DEVICE_CUDA, 0}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, MISSING_PLUGIN);
}

TEST(test_cuda_registry_synchronize_cpu) {
    CHECK_OK(ct_synchronize(CT_CPU));
    CHECK(ct_last_status() == CT_OK);
    /* CT_DEFAULT is the default device, the CPU here */
    CHECK_OK(ct_synchronize(CT_DEFAULT));
}

TEST(test_cuda_registry_synchronize_after_cpu_work) {
    ct_tensor *t = ct_ones(1, (int64_t[]){8}, CT_F32, CT_CPU);
    CHECK_NOT_NULL(t);
    ct_status status = ct_synchronize(CT_CPU);
    float out[8];
    ct_status copied = ct_copy_to_host(t, out, sizeof out);
    ct_release(t);
    CHECK_OK(status);
    CHECK_OK(copied);
    CHECK(out[7] == 1.0f);
}

TEST(test_cuda_registry_synchronize_unavailable_cuda) {
    CHECK(ct_synchronize((ct_device){CT_DEVICE_CUDA, 0}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(ct_last_error(), "ct_synchronize: ") == ct_last_error());
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, MISSING_PLUGIN);
}

TEST(test_cuda_registry_synchronize_missing_cpu) {
    CHECK(ct_synchronize((ct_device){CT_DEVICE_CPU, 3}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_synchronize: device cpu:3 does not exist");
}

TEST(test_cuda_registry_synchronize_invalid_type) {
    CHECK(ct_synchronize((ct_device){(ct_device_type)7, 0}) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_synchronize: invalid device type 7");
}

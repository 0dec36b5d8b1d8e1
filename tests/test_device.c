/* Devices: parsing and printing, the placement stack, CT_DEVICE, unavailable CUDA with and
 * without soft placement, discovery and properties. The tests that expect CUDA to be
 * missing skip on a machine where it is usable. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "ct_test.h"

static bool parses_to(const char *text, ct_device_type type, int index) {
    ct_device d = {CT_DEVICE_DEFAULT, -7};
    return ct_device_parse(text, &d) == CT_OK && d.type == type && d.index == index;
}

TEST(test_device_parse_every_spelling) {
    CHECK(parses_to("cpu", CT_DEVICE_CPU, 0));
    CHECK(parses_to("CPU", CT_DEVICE_CPU, 0));
    CHECK(parses_to("cpu:0", CT_DEVICE_CPU, 0));
    CHECK(parses_to("cpu:3", CT_DEVICE_CPU, 3));
    CHECK(parses_to("/cpu:0", CT_DEVICE_CPU, 0));
    CHECK(parses_to("/device:CPU:0", CT_DEVICE_CPU, 0));
    CHECK(parses_to("cuda", CT_DEVICE_CUDA, 0));
    CHECK(parses_to("CUDA:0", CT_DEVICE_CUDA, 0));
    CHECK(parses_to("cuda:1", CT_DEVICE_CUDA, 1));
    CHECK(parses_to("gpu", CT_DEVICE_CUDA, 0));
    CHECK(parses_to("GPU:0", CT_DEVICE_CUDA, 0));
    CHECK(parses_to("/gpu:0", CT_DEVICE_CUDA, 0));
    CHECK(parses_to("/GPU:2", CT_DEVICE_CUDA, 2));
    CHECK(parses_to("/device:GPU:1", CT_DEVICE_CUDA, 1));
    CHECK(parses_to("/device:gpu:0", CT_DEVICE_CUDA, 0));
    CHECK(ct_last_status() == CT_OK);
}

TEST(test_device_parse_auto_is_best_present) {
    if (ct_cuda_is_available()) {
        CHECK(parses_to("auto", CT_DEVICE_CUDA, 0));
        CHECK(parses_to("AUTO", CT_DEVICE_CUDA, 0));
    } else {
        CHECK(parses_to("auto", CT_DEVICE_CPU, 0));
        CHECK(parses_to("AUTO", CT_DEVICE_CPU, 0));
    }
}

TEST(test_device_parse_rejects_bad_spellings) {
    const char *bad[] = {"tpu",  "cuda:",   "cuda:-1",  "cpu:x", "",     "cpu:0:1",     "cpux",
                         " cpu", "cuda:16", "/device:", "autox", "gpu0", "device:GPU:0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ct_device d = {CT_DEVICE_CPU, 5};
        CHECK(ct_device_parse(bad[i], &d) == CT_ERR_INVALID_ARG);
        CHECK(strstr(ct_last_error(), "ct_device_parse") != NULL);
        CHECK(strstr(ct_last_error(), "\"cuda:N\"") != NULL);
        CHECK(strstr(ct_last_error(), "\"/device:GPU:N\"") != NULL);
        CHECK(strstr(ct_last_error(), "\"auto\"") != NULL);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"%s\"", bad[i]);
        CHECK_ERROR(CT_ERR_INVALID_ARG, quoted); /* the message shows what was given */
    }
    ct_device d;
    CHECK(ct_device_parse(NULL, &d) == CT_ERR_INVALID_ARG);
    CHECK(strstr(ct_last_error(), "NULL") != NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "expected one of \"cpu\"");
    CHECK(ct_device_parse("cpu", NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_device_parse: out");
}

TEST(test_device_str) {
    char buf[32];
    CHECK(strcmp(ct_device_str(CT_CPU, buf, sizeof buf), "cpu:0") == 0);
    CHECK(strcmp(ct_device_str((ct_device){CT_DEVICE_CUDA, 1}, buf, sizeof buf), "cuda:1") == 0);
    CHECK(strcmp(ct_device_str((ct_device){CT_DEVICE_CPU, 12}, buf, sizeof buf), "cpu:12") == 0);
    char small[4] = {'x', 'x', 'x', 'x'};
    CHECK(ct_device_str((ct_device){CT_DEVICE_CUDA, 1}, small, sizeof small) == small);
    CHECK(strcmp(small, "cud") == 0); /* truncated, NUL-terminated */
    char untouched = 'x';
    CHECK(ct_device_str(CT_CPU, &untouched, 0) == &untouched);
    CHECK(untouched == 'x');
    CHECK(ct_device_equal(CT_CPU, (ct_device){CT_DEVICE_CPU, 0}));
    CHECK(!ct_device_equal(CT_CPU, (ct_device){CT_DEVICE_CUDA, 0}));
    CHECK(!ct_device_equal(CT_CPU, (ct_device){CT_DEVICE_CPU, 1}));
}

/* A tensor made with CT_DEFAULT lands on `expected`. */
static bool default_lands_on(ct_device expected) {
    int64_t shape[1] = {2};
    ct_tensor *t = ct_zeros(1, shape, CT_F32, CT_DEFAULT);
    bool ok = t && ct_device_equal(ct_device_of(t), expected);
    ct_release(t);
    return ok && ct_device_equal(ct_default_device(), expected);
}

TEST(test_device_placement_stack_nesting) {
    CHECK(default_lands_on(ct_cuda_is_available() ? (ct_device){CT_DEVICE_CUDA, 0} : CT_CPU));
    CHECK_OK(ct_device_push(CT_CPU));
    CHECK(default_lands_on(CT_CPU));
    CHECK_OK(ct_device_push_str("/cpu:0"));
    CHECK_OK(ct_device_push(CT_DEFAULT)); /* pushes the current default: cpu:0 */
    CHECK(default_lands_on(CT_CPU));
    CHECK_OK(ct_device_pop());
    CHECK_OK(ct_device_pop());
    CHECK(default_lands_on(CT_CPU));
    CHECK_OK(ct_device_pop());
    CHECK(ct_device_pop() == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "ct_device_pop: the placement stack is empty");
}

TEST(test_device_placement_stack_full) {
    int pushed = 0;
    while (pushed < 1000 && ct_device_push(CT_CPU) == CT_OK) pushed++;
    ct_status full = ct_last_status();
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_clear_error();
    for (int i = 0; i < pushed; i++) ct_device_pop();
    CHECK(pushed >= 16 && pushed < 1000); /* a deep stack, but a bounded one */
    CHECK(full == CT_ERR_STATE);
    CHECK(strstr(message, "ct_device_push: placement stack full") == message);
    CHECK(ct_device_pop() == CT_ERR_STATE); /* every push was popped */
    ct_clear_error();
}

TEST(test_device_push_bad_string) {
    CHECK(ct_device_push_str("tpu:0") == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "\"tpu:0\"");
    CHECK(ct_device_push((ct_device){CT_DEVICE_CPU, 3}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "cpu:3 does not exist");
    CHECK(ct_device_pop() == CT_ERR_STATE); /* nothing was pushed */
    ct_clear_error();
}

TEST(test_device_environment_variable) {
    const char *saved = getenv("CT_DEVICE");
    char saved_copy[128] = "";
    if (saved) snprintf(saved_copy, sizeof saved_copy, "%s", saved);
    setenv("CT_DEVICE", "cpu", 1);
    bool cpu_ok = default_lands_on(CT_CPU);
    setenv("CT_DEVICE", "tpu", 1);
    int64_t shape[1] = {2};
    ct_tensor *bad = ct_zeros(1, shape, CT_F32, CT_DEFAULT);
    ct_status bad_status = ct_last_status();
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_clear_error();
    ct_device fallback = ct_default_device();
    ct_clear_error();
    /* The placement stack comes before the environment. */
    ct_status pushed = ct_device_push(CT_CPU);
    bool stack_first = pushed == CT_OK && default_lands_on(CT_CPU);
    if (pushed == CT_OK) ct_device_pop();
    if (saved)
        setenv("CT_DEVICE", saved_copy, 1);
    else
        unsetenv("CT_DEVICE");
    CHECK(cpu_ok);
    CHECK(bad == NULL);
    CHECK(bad_status == CT_ERR_INVALID_ARG);
    CHECK(strstr(message, "ct_zeros") == message);
    CHECK(strstr(message, "CT_DEVICE=\"tpu\"") != NULL);
    CHECK(ct_device_equal(fallback, CT_CPU));
    CHECK(stack_first);
}

TEST(test_device_types_best_first) {
    ct_device_type types[4] = {(ct_device_type)-7, (ct_device_type)-7, (ct_device_type)-7,
                               (ct_device_type)-7};
    CHECK(ct_device_types(NULL, 0) == 2);
    CHECK(ct_device_types(types, 1) == 2);
    CHECK(types[0] == CT_DEVICE_CUDA && types[1] == (ct_device_type)-7); /* capacity kept */
    CHECK(ct_device_types(types, 4) == 2);
    CHECK(types[0] == CT_DEVICE_CUDA && types[1] == CT_DEVICE_CPU);
}

TEST(test_device_type_names) {
    CHECK(strcmp(ct_device_type_name(CT_DEVICE_CPU), "cpu") == 0);
    CHECK(strcmp(ct_device_type_name(CT_DEVICE_CUDA), "cuda") == 0);
    CHECK(ct_device_type_name(CT_DEVICE_DEFAULT) == NULL);
    CHECK(ct_device_type_name((ct_device_type)7) == NULL);
    /* every type's name parses back to it */
    ct_device_type types[4];
    int n = ct_device_types(types, 4);
    for (int i = 0; i < n; i++) {
        ct_device d;
        char text[32];
        snprintf(text, sizeof text, "%s:1", ct_device_type_name(types[i]));
        CHECK_OK(ct_device_parse(text, &d));
        CHECK(d.type == types[i] && d.index == 1);
    }
}

TEST(test_device_is_host) {
    CHECK(ct_device_is_host(CT_CPU));
    CHECK(ct_device_is_host((ct_device){CT_DEVICE_CPU, 3}));
    CHECK(!ct_device_is_host((ct_device){CT_DEVICE_CUDA, 0}));
    CHECK(!ct_device_is_host(CT_DEFAULT));
    CHECK(!ct_device_is_host((ct_device){(ct_device_type)7, 0}));
}

/* The driver probe answers the same as the loader, and the same each time. */
TEST(test_device_cuda_driver_info) {
    CHECK(ct_cuda_get_driver_info(NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_cuda_get_driver_info: out is NULL");
    ct_cuda_driver_info a, b;
    CHECK_OK(ct_cuda_get_driver_info(&a));
    CHECK_OK(ct_cuda_get_driver_info(&b));
    CHECK(a.loaded == b.loaded && a.version == b.version && strcmp(a.error, b.error) == 0);
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    CHECK(a.loaded == (driver != NULL));
    if (a.loaded) {
        CHECK(a.error[0] == '\0');
    } else {
        CHECK(a.version == 0 && strstr(a.error, "libcuda.so.1") != NULL);
    }
    if (driver) dlclose(driver);
}

TEST(test_device_cuda_unavailable_reason) {
    if (ct_cuda_is_available()) {
        CHECK(strcmp(ct_cuda_unavailable_reason(), "") == 0);
        CHECK(ct_device_count(CT_DEVICE_CUDA) >= 1);
        ct_test_skip("CUDA is available here");
        return;
    }
    const char *reason = ct_cuda_unavailable_reason();
    CHECK(reason != NULL && reason[0] != '\0');
    /* Here either the plugin is missing or the driver is. */
    CHECK(strstr(reason, "libctensor_cuda.so") != NULL || strstr(reason, "libcuda.so.1") != NULL);
    CHECK(ct_device_count(CT_DEVICE_CUDA) == 0);
    CHECK(ct_device_check((ct_device){CT_DEVICE_CUDA, 0}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, reason);
}

TEST(test_device_configure_unavailable_cuda) {
    if (ct_cuda_is_available()) {
        ct_test_skip("CUDA is available here");
        return;
    }
    CHECK(ct_configure_logical_devices(CT_DEVICE_CUDA, 0, 2, NULL) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(ct_last_error(), "ct_configure_logical_devices: ") == ct_last_error());
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, ct_cuda_unavailable_reason());
    CHECK(ct_device_count(CT_DEVICE_CUDA) == 0);
}

TEST(test_device_push_unavailable_cuda) {
    if (ct_cuda_is_available()) {
        ct_test_skip("CUDA is available here");
        return;
    }
    CHECK(!ct_soft_placement());
    CHECK(ct_device_push((ct_device){CT_DEVICE_CUDA, 0}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(ct_last_error(), "ct_device_push") == ct_last_error());
    CHECK(strstr(ct_last_error(), ct_cuda_unavailable_reason()) != NULL); /* the reason */
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "soft placement");
    CHECK(ct_device_push_str("/device:GPU:0") == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "cuda:0");
    CHECK(ct_device_pop() == CT_ERR_STATE); /* nothing was pushed */
    ct_clear_error();
}

static void count_warnings(ct_log_level level, const char *message, void *user_data) {
    if (level == CT_LOG_WARNING && strstr(message, "soft placement")) (*(int *)user_data)++;
}

TEST(test_device_soft_placement_falls_back_to_cpu) {
    if (ct_cuda_is_available()) {
        ct_test_skip("CUDA is available here");
        return;
    }
    int warnings = 0;
    ct_set_log_hook(count_warnings, &warnings);
    ct_set_soft_placement(true);
    CHECK(ct_soft_placement());
    ct_status pushed = ct_device_push((ct_device){CT_DEVICE_CUDA, 0});
    int after_push = warnings;
    bool lands = pushed == CT_OK && default_lands_on(CT_CPU);
    if (pushed == CT_OK) ct_device_pop();
    int64_t shape[1] = {3};
    ct_tensor *t = ct_ones(1, shape, CT_F32, (ct_device){CT_DEVICE_CUDA, 0});
    ct_set_soft_placement(false);
    ct_set_log_hook(NULL, NULL);
    bool t_on_cpu = t && ct_device_equal(ct_device_of(t), CT_CPU);
    ct_release(t);
    CHECK_OK(pushed);
    CHECK(after_push == 1); /* one warning for the push, none for using the stack */
    CHECK(lands);
    CHECK(t_on_cpu);
    CHECK(warnings == 2);
    CHECK(ct_last_status() == CT_OK);
}

TEST(test_device_create_on_unavailable_cuda) {
    if (ct_cuda_is_available()) {
        ct_test_skip("CUDA is available here");
        return;
    }
    int64_t shape[2] = {2, 2};
    CHECK(ct_zeros(2, shape, CT_F32, (ct_device){CT_DEVICE_CUDA, 0}) == NULL);
    CHECK(strstr(ct_last_error(), "ct_zeros") == ct_last_error());
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, ct_cuda_unavailable_reason());
    float data[4] = {1, 2, 3, 4};
    CHECK(ct_from_data(data, 2, shape, CT_F32, (ct_device){CT_DEVICE_CUDA, 1}) == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_from_data");
    ct_tensor *t = ct_from_data(data, 2, shape, CT_F32, CT_CPU);
    CHECK_NOT_NULL(t);
    ct_tensor *moved = ct_to(t, (ct_device){CT_DEVICE_CUDA, 0});
    ct_release(t);
    CHECK(moved == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_to");
}

TEST(test_device_count_and_check) {
    CHECK(ct_device_count(CT_DEVICE_CPU) >= 1);
    CHECK(ct_device_count((ct_device_type)7) == 0);
    CHECK_OK(ct_device_check(CT_CPU));
    int n = ct_device_count(CT_DEVICE_CPU);
    CHECK(ct_device_check((ct_device){CT_DEVICE_CPU, n}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "does not exist");
    CHECK(ct_device_check((ct_device){CT_DEVICE_CPU, -1}) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "cpu:-1");
    CHECK(ct_device_check(CT_DEFAULT) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "device type");
}

TEST(test_device_info_cpu) {
    ct_device_properties p;
    memset(&p, 0xff, sizeof p);
    CHECK_OK(ct_device_info(CT_CPU, &p));
    CHECK(ct_device_equal(p.device, CT_CPU));
    CHECK(p.name[0] != '\0' && memchr(p.name, '\0', sizeof p.name) != NULL);
    CHECK(p.memory_total > 0);
    CHECK(p.memory_free <= p.memory_total);
    CHECK(p.multiprocessors >= 1);
    CHECK(p.compute_capability_major == 0 && p.compute_capability_minor == 0);
    CHECK(p.physical_index == 0);
    CHECK(!p.is_logical);
    CHECK(p.memory_limit == 0);
}

TEST(test_device_info_errors) {
    ct_device_properties p;
    CHECK(ct_device_info(CT_CPU, NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_device_info");
    CHECK(ct_device_info((ct_device){CT_DEVICE_CPU, 9}, &p) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, "ct_device_info: device cpu:9 does not exist");
    if (ct_cuda_is_available()) return;
    CHECK(ct_device_info((ct_device){CT_DEVICE_CUDA, 0}, &p) == CT_ERR_DEVICE_UNAVAILABLE);
    CHECK(strstr(ct_last_error(), "ct_device_info") == ct_last_error());
    CHECK_ERROR(CT_ERR_DEVICE_UNAVAILABLE, ct_cuda_unavailable_reason());
}

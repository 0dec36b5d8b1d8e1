/* Status codes and names, the thread-local last error, NULL propagation and the log hook. */
#include <pthread.h>
#include <stdlib.h>

#include "ct_test.h"

/* The names and descriptions the public header promises, written out independently. */
static const struct {
    ct_status status;
    const char *name;
    const char *description;
} expected_codes[] = {
    {CT_OK, "CT_OK", "no error"},
    {CT_ERR_INVALID_ARG, "CT_ERR_INVALID_ARG", "invalid argument"},
    {CT_ERR_SHAPE, "CT_ERR_SHAPE", "shape mismatch"},
    {CT_ERR_DTYPE, "CT_ERR_DTYPE", "unsupported or mismatched dtype"},
    {CT_ERR_DEVICE_MISMATCH, "CT_ERR_DEVICE_MISMATCH", "tensors on different devices"},
    {CT_ERR_DEVICE_UNAVAILABLE, "CT_ERR_DEVICE_UNAVAILABLE", "device unavailable"},
    {CT_ERR_OUT_OF_MEMORY, "CT_ERR_OUT_OF_MEMORY", "out of memory"},
    {CT_ERR_TRANSFER_GUARD, "CT_ERR_TRANSFER_GUARD", "transfer refused by the transfer guard"},
    {CT_ERR_IO, "CT_ERR_IO", "input/output error"},
    {CT_ERR_FORMAT, "CT_ERR_FORMAT", "malformed data"},
    {CT_ERR_BACKEND, "CT_ERR_BACKEND", "backend failure"},
    {CT_ERR_UNSUPPORTED, "CT_ERR_UNSUPPORTED", "unsupported operation"},
    {CT_ERR_STATE, "CT_ERR_STATE", "call not allowed in the current state"},
    {CT_ERR_COMM, "CT_ERR_COMM", "communication failure"},
};
#define CODE_COUNT ((int)(sizeof expected_codes / sizeof expected_codes[0]))

TEST(test_status_name_every_code) {
    for (int i = 0; i < CODE_COUNT; i++) {
        CHECK((int)expected_codes[i].status == i); /* values are 0..13 in order */
        CHECK(strcmp(ct_status_name(expected_codes[i].status), expected_codes[i].name) == 0);
    }
}

TEST(test_status_name_invalid_value) {
    CHECK(strcmp(ct_status_name((ct_status)CODE_COUNT), "CT_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(ct_status_name((ct_status)-1), "CT_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(ct_status_name((ct_status)1000), "CT_UNKNOWN_STATUS") == 0);
    const char *description = ct_status_description((ct_status)1000);
    CHECK(description != NULL && description[0] != '\0');
}

TEST(test_status_description_every_code) {
    for (int i = 0; i < CODE_COUNT; i++)
        CHECK(strcmp(ct_status_description(expected_codes[i].status),
                     expected_codes[i].description) == 0);
}

TEST(test_status_last_error_empty_after_clear) {
    CHECK(ct_last_status() == CT_OK);
    CHECK(strcmp(ct_last_error(), "") == 0);
    CHECK(ct_scope_end() == CT_ERR_STATE);
    CHECK(ct_last_status() == CT_ERR_STATE);
    CHECK(strstr(ct_last_error(), "ct_scope_end") != NULL);
    ct_clear_error();
    CHECK(ct_last_status() == CT_OK);
    CHECK(ct_last_error() != NULL && strcmp(ct_last_error(), "") == 0);
}

TEST(test_status_success_keeps_earlier_error) {
    /* A call that succeeds does not clear the thread's last failure. */
    CHECK(ct_device_pop() == CT_ERR_STATE);
    int64_t shape[1] = {3};
    ct_tensor *t = ct_zeros(1, shape, CT_F32, CT_CPU);
    CHECK_NOT_NULL(t);
    ct_release(t);
    CHECK_ERROR(CT_ERR_STATE, "ct_device_pop");
}

/* Thread body: fails on its own thread and records what it sees before and after. */
typedef struct {
    ct_status seen_before, seen_after;
    char message_after[256];
} thread_result;

static void *failing_thread(void *arg) {
    thread_result *r = arg;
    r->seen_before = ct_last_status();
    ct_device_pop(); /* CT_ERR_STATE on this thread only */
    r->seen_after = ct_last_status();
    snprintf(r->message_after, sizeof r->message_after, "%s", ct_last_error());
    return NULL;
}

TEST(test_status_thread_local) {
    CHECK(ct_scope_end() == CT_ERR_STATE); /* this thread's error */
    thread_result r;
    memset(&r, 0, sizeof r);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, failing_thread, &r) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    /* The other thread did not see this thread's error, and this one not the other's. */
    CHECK(r.seen_before == CT_OK);
    CHECK(r.seen_after == CT_ERR_STATE);
    CHECK(strstr(r.message_after, "ct_device_pop") != NULL);
    CHECK_ERROR(CT_ERR_STATE, "ct_scope_end");
}

TEST(test_status_null_propagation_keeps_first_error) {
    int64_t bad_shape[1] = {-2};
    ct_tensor *t = ct_zeros(1, bad_shape, CT_F32, CT_CPU);
    CHECK(t == NULL);
    CHECK(ct_last_status() == CT_ERR_SHAPE);
    char first[1024];
    snprintf(first, sizeof first, "%s", ct_last_error());
    CHECK(strstr(first, "ct_zeros: size -2 of axis 0 is negative") == first);
    ct_tensor *copy = ct_clone(t);
    CHECK(copy == NULL);
    ct_tensor *cast = ct_cast(copy, CT_F64);
    CHECK(cast == NULL);
    CHECK(ct_last_status() == CT_ERR_SHAPE);
    CHECK(strcmp(ct_last_error(), first) == 0);
    ct_clear_error();
}

TEST(test_status_null_argument_without_earlier_error) {
    CHECK(ct_clone(NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_clone: argument 1 is NULL");
    CHECK(ct_copy(NULL, NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "argument 1 is NULL");
    int64_t shape[1] = {2};
    ct_tensor *t = ct_zeros(1, shape, CT_F32, CT_CPU);
    CHECK_NOT_NULL(t);
    ct_status s = ct_copy(t, NULL);
    ct_release(t);
    CHECK(s == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_copy: argument 2 is NULL");
}

/* A log hook that records the warnings it receives. */
typedef struct {
    int count;
    ct_log_level level;
    char last[1024];
} log_record;

static void recording_hook(ct_log_level level, const char *message, void *user_data) {
    log_record *r = user_data;
    r->count++;
    r->level = level;
    snprintf(r->last, sizeof r->last, "%s", message);
}

TEST(test_status_log_hook_receives_soft_placement_warning) {
    log_record record = {0, CT_LOG_DEBUG, ""};
    ct_set_log_hook(recording_hook, &record);
    bool was_soft = ct_soft_placement();
    ct_set_soft_placement(true);
    ct_status s = ct_device_push((ct_device){CT_DEVICE_CUDA, 0});
    ct_set_soft_placement(was_soft);
    ct_set_log_hook(NULL, NULL);
    if (ct_cuda_is_available()) {
        if (s == CT_OK) ct_device_pop();
        ct_test_skip("CUDA is available: soft placement does not fall back here");
        return;
    }
    CHECK_OK(s);
    CHECK(ct_device_equal(ct_default_device(), CT_CPU));
    CHECK_OK(ct_device_pop());
    CHECK(record.count == 1);
    CHECK(record.level == CT_LOG_WARNING);
    CHECK(strstr(record.last, "soft placement") != NULL);
    CHECK(strstr(record.last, "cuda:0") != NULL);
}

TEST(test_status_log_hook_null_restores_default) {
    log_record record = {0, CT_LOG_DEBUG, ""};
    ct_set_log_hook(recording_hook, &record);
    ct_set_log_hook(NULL, NULL);
    bool was_soft = ct_soft_placement();
    ct_set_soft_placement(true);
    /* The default hook writes to stderr; the recording hook must not be called. */
    ct_status s = ct_device_push((ct_device){CT_DEVICE_CUDA, 0});
    ct_set_soft_placement(was_soft);
    CHECK_OK(s);
    CHECK_OK(ct_device_pop());
    CHECK(record.count == 0);
}

TEST(test_status_soft_placement_keeps_earlier_error) {
    if (ct_cuda_is_available()) {
        ct_test_skip("CUDA is available: soft placement does not fall back here");
        return;
    }
    log_record record = {0, CT_LOG_DEBUG, ""};
    ct_set_log_hook(recording_hook, &record);
    ct_set_soft_placement(true);
    CHECK(ct_clone(NULL) == NULL); /* the first failure of a chain */
    int64_t shape[1] = {2};
    ct_tensor *t = ct_zeros(1, shape, CT_F32, (ct_device){CT_DEVICE_CUDA, 0});
    ct_set_soft_placement(false);
    ct_set_log_hook(NULL, NULL);
    CHECK_NOT_NULL(t);
    CHECK(ct_device_equal(ct_device_of(t), CT_CPU));
    ct_release(t);
    CHECK(record.count == 1);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_clone: argument 1 is NULL");
}

/* ct_version, the header's version macros and the build's project version (the shared
 * library's file name, the pkg-config and CMake package files) all say the same. */
TEST(test_status_version_agrees_with_header_and_build) {
    char from_macros[32];
    snprintf(from_macros, sizeof from_macros, "%d.%d.%d", CT_VERSION_MAJOR, CT_VERSION_MINOR,
             CT_VERSION_PATCH);
    CHECK(strcmp(ct_version(), from_macros) == 0);
    CHECK(strcmp(ct_version(), CT_PROJECT_VERSION) == 0);
}

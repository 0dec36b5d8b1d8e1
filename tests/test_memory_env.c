/* The environment of the memory manager: CT_MEMORY_LIMIT and CT_MEMORY_GROWTH, set before
 * the first use of any pool (by a constructor, before the runner starts), and the parser of
 * CT_MEMORY_LIMIT on its own: units, device names, spaces, malformed parts, and the limits
 * of logical CPU devices made later without limits of their own. */
#include <stdlib.h>

#include "core/device_impl.h"
#include "ct_test.h"
#include "mem/pool_impl.h"

#define MIB ((size_t)1 << 20)

__attribute__((constructor)) static void set_environment(void) {
    setenv("CT_MEMORY_LIMIT", "cpu=3MiB, bogus=12 ,cuda:1=1.5GiB,cpu:2=2MiB", 1);
    setenv("CT_MEMORY_GROWTH", "false", 1);
}

static char logged[1024];

static void capture(ct_log_level level, const char *message, void *user_data) {
    (void)user_data;
    if (level == CT_LOG_WARNING) snprintf(logged, sizeof logged, "%s", message);
}

/* Must run first: it is the first use of a pool in this program. */
TEST(test_memory_env_applies_on_first_use) {
    ct_set_log_hook(capture, NULL);
    ct_clear_error();
    int64_t shape[1] = {100};
    ct_tensor *t = ct_empty(1, shape, CT_U8, CT_CPU); /* succeeds despite the bad part */
    ct_status status = ct_last_status();
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_set_log_hook(NULL, NULL);
    ct_memory_statistics s;
    CHECK_OK(ct_memory_stats(CT_CPU, &s));
    ct_release(t);
    CHECK(t != NULL);
    CHECK(status == CT_ERR_INVALID_ARG);
    CHECK(strstr(message, "CT_MEMORY_LIMIT: cannot read \"bogus=12\"") == message);
    CHECK(strcmp(logged, message) == 0); /* and the log hook heard it */
    CHECK(s.limit == 3 * MIB);
    CHECK(s.growth == 0 && s.reserved == 3 * MIB && s.segments == 1); /* reserved up front */
    ct_clear_error();
}

TEST(test_memory_env_limit_is_enforced_and_overridable) {
    int64_t shape[1] = {4 << 20};
    ct_tensor *t = ct_empty(1, shape, CT_U8, CT_CPU);
    CHECK(t == NULL);
    CHECK_ERROR(CT_ERR_OUT_OF_MEMORY, "limit 3.00 MiB");
    CHECK_OK(ct_set_memory_growth(CT_CPU, true));
    CHECK_OK(ct_set_memory_limit(CT_CPU, 0));
    t = ct_empty(1, shape, CT_U8, CT_CPU);
    CHECK_NOT_NULL(t);
    ct_release(t);
    CHECK_OK(ct_empty_cache(CT_CPU));
}

/* Parse text; the limit of one slot, or (size_t)-1 when parsing failed. */
static size_t parsed(const char *text, ct_device device) {
    size_t limits[CT_DEVICE_SLOTS] = {0};
    if (ct__parse_memory_limits(text, limits, CT_DEVICE_SLOTS) != CT_OK) return (size_t)-1;
    return limits[ct__device_slot(device)];
}

TEST(test_memory_env_units) {
    ct_device cuda0 = {CT_DEVICE_CUDA, 0};
    CHECK(parsed("cpu=4096", CT_CPU) == 4096);
    CHECK(parsed("cpu=4096B", CT_CPU) == 4096);
    CHECK(parsed("cpu=2KB", CT_CPU) == 2000);
    CHECK(parsed("cpu=2KiB", CT_CPU) == 2048);
    CHECK(parsed("cpu=3MB", CT_CPU) == 3000000);
    CHECK(parsed("cpu=3mib", CT_CPU) == 3 * MIB);
    CHECK(parsed("cpu=1GB", CT_CPU) == 1000000000);
    CHECK(parsed("cuda:0=8GiB", cuda0) == (size_t)8 << 30);
    CHECK(parsed("cuda:0=1.5GiB", cuda0) == (size_t)3 << 29);
    CHECK(parsed(" cuda:0 = 2 MiB , cpu=1KiB ", cuda0) == 2 * MIB);
    CHECK(parsed("gpu:0=1MiB", cuda0) == MIB);
    CHECK(parsed("/device:GPU:0=1MiB", cuda0) == MIB);
    CHECK(parsed("cpu:1=5MiB", (ct_device){CT_DEVICE_CPU, 1}) == 5 * MIB);
    CHECK(parsed("", CT_CPU) == 0);
    CHECK(parsed(",,", CT_CPU) == 0);
}

TEST(test_memory_env_malformed_parts) {
    const char *bad[] = {"cpu=2XB",         "cpu",
                         "=5MiB",           "cpu=",
                         "auto=1GiB",       "cpu=-1MiB",
                         "cpu=99999999TiB", "tpu:0=1GiB",
                         "cpu=1GiB junk",   "cuda:99=1GiB",
                         "cpu=0",           "cpu=0MiB" /* 0 read as "no limit" once: refused */};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[64];
        snprintf(text, sizeof text, "cuda:0=1MiB,%s", bad[i]);
        size_t limits[CT_DEVICE_SLOTS] = {0};
        ct_status s = ct__parse_memory_limits(text, limits, CT_DEVICE_SLOTS);
        char needle[64];
        snprintf(needle, sizeof needle, "cannot read \"%s\"", bad[i]);
        if (s != CT_ERR_INVALID_ARG || !strstr(ct_last_error(), needle) ||
            !strstr(ct_last_error(), "CT_MEMORY_LIMIT") ||
            limits[ct__device_slot((ct_device){CT_DEVICE_CUDA, 0})] != MIB) {
            ct_test_fail(__FILE__, __LINE__, "\"%s\": %s: %s", text, ct_status_name(s),
                         ct_last_error());
            return;
        }
        ct_clear_error();
    }
}

TEST(test_memory_env_growth_values) {
    bool grow = true;
    CHECK_OK(ct__parse_memory_growth("FALSE", &grow));
    CHECK(!grow);
    CHECK_OK(ct__parse_memory_growth("1", &grow));
    CHECK(grow);
    CHECK_OK(ct__parse_memory_growth("0", &grow));
    CHECK(!grow);
    CHECK_OK(ct__parse_memory_growth("true", &grow));
    CHECK(grow);
    CHECK(ct__parse_memory_growth("maybe", &grow) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "CT_MEMORY_GROWTH: cannot read \"maybe\"");
}

/* Logical devices configured without limits take CT_MEMORY_LIMIT's: their own entry (cpu:2),
 * else the whole limit of the physical CPU (cpu:1), which they once lost (cpu:0 too). */
TEST(test_memory_env_limits_logical_devices) {
    ct_device cpu1 = {CT_DEVICE_CPU, 1}, cpu2 = {CT_DEVICE_CPU, 2};
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 3, NULL));
    ct_memory_statistics s0, s1, s2;
    CHECK_OK(ct_memory_stats(CT_CPU, &s0));
    CHECK_OK(ct_memory_stats(cpu1, &s1));
    CHECK_OK(ct_memory_stats(cpu2, &s2));
    CHECK(s0.limit == 3 * MIB && s1.limit == 3 * MIB && s2.limit == 2 * MIB);
    int64_t shape[1] = {(int64_t)(5 * MIB / 2)};
    ct_tensor *t = ct_empty(1, shape, CT_U8, cpu1); /* fits cpu:1's 3 MiB */
    CHECK_NOT_NULL(t);
    ct_release(t);
    CHECK(ct_empty(1, shape, CT_U8, cpu2) == NULL); /* not cpu:2's 2 MiB */
    CHECK_ERROR(CT_ERR_OUT_OF_MEMORY, "limit 2.00 MiB");
    CHECK_OK(ct_empty_cache(cpu1));
    CHECK_OK(ct_empty_cache(cpu2));
    CHECK_OK(ct_configure_logical_devices(CT_DEVICE_CPU, 0, 1, NULL));
}

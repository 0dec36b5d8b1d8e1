/* The environment variables the core reads, set to garbage before their first use (by a
 * constructor, before the runner starts): each is a one-line warning through the log hook
 * naming the variable, the value and the accepted forms, and then the default, never a
 * silent guess. (CT_MEMORY_LIMIT and CT_MEMORY_GROWTH: test_memory_env.c.) */
#include <stdlib.h>

#include "ct_test.h"

static ct_test_warnings warnings;
static char all[4096];

static void record(ct_log_level level, const char *message, void *user_data) {
    ct_test_record_warning(level, message, user_data);
    size_t len = strlen(all);
    snprintf(all + len, sizeof all - len, "%s\n", message);
}

__attribute__((constructor)) static void set_environment(void) {
    setenv("CT_TRANSFER_GUARD", "garbage", 1);
    setenv("CT_SOFT_PLACEMENT", "sometimes", 1);
    ct_set_log_hook(record, &warnings);
}

TEST(test_env_vars_transfer_guard_garbage_warns_and_allows) {
    CHECK(ct_get_transfer_guard() == CT_GUARD_ALLOW);
    CHECK(strstr(all, "CT_TRANSFER_GUARD=\"garbage\" is not a transfer guard; expected allow, "
                      "log or disallow: using allow") != NULL);
}

TEST(test_env_vars_soft_placement_garbage_warns_and_stays_off) {
    CHECK(!ct_soft_placement());
    CHECK(strstr(all, "CT_SOFT_PLACEMENT=\"sometimes\" is not a setting; expected 1 or true, 0 "
                      "or false: soft placement stays off") != NULL);
}

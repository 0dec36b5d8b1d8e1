/* The one plugin loader (backend/plugin_load.c, for the CUDA backend and the MPI and NCCL
 * engines): where a plugin is looked for, and each failure's message naming the plugin, the
 * path tried, the loader's text, a missing entry symbol, and the ABI version found against the
 * expected one. fake_abi_plugin.c (CT_TEST_ABI_PLUGIN) is a plugin of ABI version 7; libc
 * stands in for a library that loads but is no plugin. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/plugin_load_impl.h"
#include "ct_test.h"

#define MISSING "/nonexistent/ctensor-test/libctensor_x.so"

static ct__plugin_kind test_kind(const char *entry, int abi_version) {
    return (ct__plugin_kind){.what = "the test plugin",
                             .file = "libctensor_x.so",
                             .env_var = "CT_TEST_PLUGIN",
                             .flags = RTLD_LOCAL,
                             .entry = entry,
                             .abi_version = abi_version,
                             .hint = "set CT_TEST_PLUGIN to its path"};
}

/* Points CT_TEST_PLUGIN at the test plugin; false (skipped) without it. */
static bool use_abi_plugin(void) {
    const char *path = getenv("CT_TEST_ABI_PLUGIN");
    if (!path) {
        ct_test_skip("needs CT_TEST_ABI_PLUGIN (tests/CMakeLists.txt sets it)");
        return false;
    }
    setenv("CT_TEST_PLUGIN", path, 1);
    return true;
}

TEST(test_plugin_load_path_beside_library) {
    char path[1024];
    CHECK(ct__plugin_path_beside_library("libctensor_x.so", path, sizeof path));
    size_t n = strlen(path);
    CHECK(n > 16 && path[0] == '/' && strcmp(path + n - 16, "/libctensor_x.so") == 0);
}

TEST(test_plugin_load_locate) {
    ct__plugin_kind kind = test_kind("entry", 1);
    char path[1024];
    setenv("CT_TEST_PLUGIN", MISSING, 1);
    CHECK(ct__plugin_locate(&kind, path, sizeof path) == CT_PLUGIN_NAMED);
    CHECK(strcmp(path, MISSING) == 0);
    unsetenv("CT_TEST_PLUGIN");
    CHECK(ct__plugin_locate(&kind, path, sizeof path) == CT_PLUGIN_SEARCH);
    CHECK(strcmp(path, "libctensor_x.so") == 0);
}

TEST(test_plugin_load_named_missing) {
    setenv("CT_TEST_PLUGIN", MISSING, 1);
    ct__plugin_kind kind = test_kind("entry", 1);
    ct__plugin p;
    CHECK(!ct__plugin_load(&kind, &p));
    CHECK(p.handle == NULL && p.api == NULL);
    CHECK(strcmp(p.path, MISSING) == 0);
    CHECK(strstr(p.error, "CT_TEST_PLUGIN=\"" MISSING "\" names the test plugin, which cannot "
                          "be loaded (") == p.error);
    CHECK(strstr(p.error, "No such file")); /* dlerror's text */
    CHECK(strstr(p.error, "); point it at the libctensor_x.so of this build, or unset it"));
    unsetenv("CT_TEST_PLUGIN");
}

TEST(test_plugin_load_not_found) {
    unsetenv("CT_TEST_PLUGIN");
    ct__plugin_kind kind = test_kind("entry", 1);
    ct__plugin p;
    char beside[1024];
    CHECK(ct__plugin_path_beside_library("libctensor_x.so", beside, sizeof beside));
    CHECK(!ct__plugin_load(&kind, &p));
    CHECK(p.handle == NULL);
    CHECK(strcmp(p.path, beside) == 0);
    CHECK(strstr(p.error, "the test plugin libctensor_x.so was not built or not found (tried ") ==
          p.error);
    CHECK(strstr(p.error, beside));
    CHECK(strstr(p.error, " and the loader's search path: "));
    CHECK(strstr(p.error, "); set CT_TEST_PLUGIN to its path"));
}

TEST(test_plugin_load_without_entry_symbol) {
    setenv("CT_TEST_PLUGIN", "libc.so.6", 1);
    ct__plugin_kind kind = test_kind("ct_no_such_plugin_entry", 1);
    ct__plugin p;
    CHECK(!ct__plugin_load(&kind, &p));
    CHECK(p.handle == NULL);
    CHECK(strcmp(p.error, "the test plugin libc.so.6 is not a plugin of this ctensor (no "
                          "ct_no_such_plugin_entry symbol); rebuild it with this library") == 0);
    unsetenv("CT_TEST_PLUGIN");
}

TEST(test_plugin_load_entry_and_abi_version) {
    if (!use_abi_plugin()) return;
    ct__plugin_kind kind = test_kind("ct_test_plugin_api", 7);
    ct__plugin p;
    CHECK(ct__plugin_load(&kind, &p));
    CHECK(p.handle != NULL && p.api != NULL && *(const int *)p.api == 7);
    CHECK(strcmp(p.path, getenv("CT_TEST_ABI_PLUGIN")) == 0);
    CHECK(p.error[0] == '\0');
    unsetenv("CT_TEST_PLUGIN");
}

TEST(test_plugin_load_abi_mismatch) {
    if (!use_abi_plugin()) return;
    ct__plugin_kind kind = test_kind("ct_test_plugin_api", 3);
    ct__plugin p;
    char want[2048];
    CHECK(!ct__plugin_load(&kind, &p));
    CHECK(p.handle == NULL && p.api == NULL); /* closed */
    snprintf(want, sizeof want,
             "the test plugin %s has ABI version 7, this ctensor expects 3; rebuild it with "
             "this library",
             getenv("CT_TEST_ABI_PLUGIN"));
    CHECK(strcmp(p.error, want) == 0);
    unsetenv("CT_TEST_PLUGIN");
}

TEST(test_plugin_load_no_api_table) {
    if (!use_abi_plugin()) return;
    ct__plugin_kind kind = test_kind("ct_test_plugin_no_api", 3);
    ct__plugin p;
    CHECK(!ct__plugin_load(&kind, &p));
    CHECK(p.handle == NULL);
    CHECK(strstr(p.error, "gave no API table (this ctensor expects ABI version 3); rebuild it "
                          "with this library"));
    unsetenv("CT_TEST_PLUGIN");
}

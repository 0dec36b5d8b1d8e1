/* Loading a plugin (backend/plugin_load.c, shared by the CUDA, MPI and NCCL loaders): the
 * path beside the library, and each failure's message naming the plugin, the path tried, the
 * loader's text, a missing entry symbol, and the ABI version found against the expected one.
 * libc stands in for a plugin that loads: its `malloc` for an entry symbol. */
#include <dlfcn.h>
#include <stdlib.h>

#include "backend/plugin_load_impl.h"
#include "ct_test.h"

#define MISSING "/nonexistent/ctensor-test/libctensor_x.so"

TEST(test_plugin_load_path_beside_library) {
    char path[1024];
    CHECK(ct__plugin_path_beside_library("libctensor_x.so", path, sizeof path));
    size_t n = strlen(path);
    CHECK(n > 16 && path[0] == '/' && strcmp(path + n - 16, "/libctensor_x.so") == 0);
}

TEST(test_plugin_load_missing_library) {
    setenv("CT_TEST_PLUGIN", MISSING, 1);
    ct__plugin p = {.what = "the test plugin"};
    CHECK(!ct__plugin_open(&p, "CT_TEST_PLUGIN", "libctensor_x.so", RTLD_LOCAL, "entry",
                           "set CT_TEST_PLUGIN to its path"));
    CHECK(p.handle == NULL);
    CHECK(strstr(p.error, "the test plugin " MISSING " could not be loaded (") == p.error);
    CHECK(strstr(p.error, "No such file")); /* dlerror's text */
    CHECK(strstr(p.error, "); set CT_TEST_PLUGIN to its path"));
    unsetenv("CT_TEST_PLUGIN");
}

TEST(test_plugin_load_without_entry_symbol) {
    setenv("CT_TEST_PLUGIN", "libc.so.6", 1);
    ct__plugin p = {.what = "the test plugin"};
    CHECK(!ct__plugin_open(&p, "CT_TEST_PLUGIN", "libctensor_x.so", RTLD_LOCAL,
                           "ct_no_such_plugin_entry", "unused"));
    CHECK(p.handle == NULL);
    CHECK(strcmp(p.error, "the test plugin libc.so.6 is not a plugin of this ctensor (no "
                          "ct_no_such_plugin_entry symbol); rebuild it with this library") == 0);
    unsetenv("CT_TEST_PLUGIN");
}

TEST(test_plugin_load_entry_and_abi_versions) {
    setenv("CT_TEST_PLUGIN", "libc.so.6", 1);
    ct__plugin p = {.what = "the test plugin"};
    CHECK(ct__plugin_open(&p, "CT_TEST_PLUGIN", "libctensor_x.so", RTLD_LOCAL, "malloc", "x"));
    CHECK(p.handle != NULL && p.entry == dlsym(p.handle, "malloc"));
    CHECK(ct__plugin_check_abi(&p, 3, 3));
    CHECK(p.handle != NULL);
    CHECK(!ct__plugin_check_abi(&p, 2, 3));
    CHECK(p.handle == NULL); /* closed */
    CHECK(strcmp(p.error, "the test plugin libc.so.6 has ABI version 2, this ctensor expects 3; "
                          "rebuild it with this library") == 0);
    CHECK(ct__plugin_open(&p, "CT_TEST_PLUGIN", "libctensor_x.so", RTLD_LOCAL, "malloc", "x"));
    CHECK(!ct__plugin_check_abi(&p, -1, 3));
    CHECK(strstr(p.error, "libc.so.6 gave no API table (this ctensor expects ABI version 3)"));
    unsetenv("CT_TEST_PLUGIN");
}

/* A test-only plugin for the plugin loader (test_plugin_load): an entry that gives an API
 * table of ABI version 7, and one that gives none. */
#define EXPORT __attribute__((visibility("default")))

static const struct { int abi_version; } api = {7};

EXPORT const void *ct_test_plugin_api(void) { return &api; }

EXPORT const void *ct_test_plugin_no_api(void) { return 0; }

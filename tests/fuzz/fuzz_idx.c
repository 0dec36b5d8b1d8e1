/* libFuzzer harness: ct_read_idx on any bytes (plain, or gzip when they start with 1f 8b). */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    if (path) ct_release(ct_read_idx(path));
    ct_clear_error();
    return 0;
}

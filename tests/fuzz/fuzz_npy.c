/* libFuzzer harness: ct_read_npy on any bytes. */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    if (path) ct_release(ct_read_npy(path));
    ct_clear_error();
    return 0;
}

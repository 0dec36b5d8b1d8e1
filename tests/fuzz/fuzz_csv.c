/* libFuzzer harness: ct_read_csv on any bytes, with a header line and the label last. */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    ct_csv_options options = ct_csv_options_default();
    options.has_header = size > 0 && data[0] & 1;
    ct_tensor *features = NULL, *labels = NULL;
    if (path) ct_read_csv(path, &options, &features, &labels);
    ct_release(features);
    ct_release(labels);
    ct_clear_error();
    return 0;
}

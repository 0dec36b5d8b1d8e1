/* libFuzzer harness: ct_safetensors_load on any bytes. */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    if (path) ct_state_dict_free(ct_safetensors_load(path, CT_CPU));
    ct_clear_error();
    return 0;
}

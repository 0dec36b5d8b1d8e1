/* libFuzzer harness: `ctensor train`'s command-line parser (tools/train_options.c) on any
 * argument list: the input split at NUL bytes into at most 32 arguments. Its messages are
 * silenced by tools/run-fuzz.sh (-close_fd_mask=3). */
#include <stdlib.h>
#include <string.h>

#include "../../tools/train_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *copy = malloc(size + 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    char *argv[33] = {"train"};
    int argc = 1;
    for (size_t at = 0; at <= size && argc < 32;) {
        argv[argc++] = copy + at;
        at += strlen(copy + at) + 1;
    }
    train_options options;
    train_parse(argc, argv, &options);
    free(copy);
    ct_clear_error();
    return 0;
}

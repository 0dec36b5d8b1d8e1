/* The libFuzzer harnesses' input as a file: the readers take a path, so each input is written
 * to one memory file (memfd, a regular file no disk holds) and read through
 * /proc/self/fd/N. The library's errors are the expected outcome for most inputs; what the
 * fuzzer looks for is a crash, a leak, a hang or a sanitizer report. */
#ifndef CT_FUZZ_INPUT_H
#define CT_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctensor/ctensor.h"

/* The path of a file holding data, or NULL when it cannot be written. */
static inline const char *fuzz_file(const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("ctensor-fuzz", MFD_CLOEXEC);
        if (fd < 0) return NULL;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) return NULL;
    return path;
}

#endif

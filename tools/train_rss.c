/* The process's resident set size and its peak, from Linux's /proc/self: what a training
 * step adds to it is measured the same way for ctensor and for PyTorch (bench/run_train.sh),
 * whose CPU allocator keeps no statistics. */
#include <stdio.h>
#include <string.h>

#include "train_gpt_impl.h"

/* The value of a "Key:   N kB" line of /proc/self/status in bytes; 0 where it is absent. */
static size_t status_bytes(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    size_t kib = 0, len = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, len) == 0 && line[len] == ':') {
            if (sscanf(line + len + 1, "%zu", &kib) != 1) kib = 0;
            break;
        }
    fclose(f);
    return kib * 1024;
}

size_t train_rss_begin(void) {
    /* "5" resets the peak (VmHWM) to the current size (Linux 4.0 and later). */
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
    bool reset = fputs("5", f) >= 0;
    if (fclose(f) != 0 || !reset) return 0;
    return status_bytes("VmRSS");
}

size_t train_rss_growth(size_t begun) {
    size_t peak = begun ? status_bytes("VmHWM") : 0;
    return peak > begun ? peak - begun : 0;
}

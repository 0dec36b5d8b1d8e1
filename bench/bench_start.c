/* The cost of starting: a program whose first call is ct_device_parse("auto"), then one op
 * and a read of its result, as a new user's first program does. Run it under
 * `/usr/bin/time -v` (elapsed time, maximum resident set size) beside CT_DEVICE=cpu to see
 * what looking for a GPU costs (docs/PERFORMANCE.md, "Start").
 *
 * Usage: bench_start [DEVICE]    (default "auto")
 * Prints one line: `device SUM`. */
#include <stdio.h>

#include <ctensor/ctensor.h>

int main(int argc, char **argv) {
    ct_device device;
    if (ct_device_parse(argc > 1 ? argv[1] : "auto", &device) != CT_OK) {
        fprintf(stderr, "bench_start: %s\n", ct_last_error());
        return 1;
    }
    ct_tensor *x = ct_ones(1, (int64_t[]){1000}, CT_F32, device);
    ct_tensor *y = ct_sum(ct_add(x, x), 0, NULL, false);
    double sum = 0;
    if (!y || ct_item(y, &sum) != CT_OK) {
        fprintf(stderr, "bench_start: %s\n", ct_last_error());
        return 1;
    }
    char name[32];
    ct_device_str(device, name, sizeof name);
    printf("%s %g\n", name, sum);
    return 0;
}

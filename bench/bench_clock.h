/* What every benchmark program times with: a monotonic clock in seconds, and the comparison
 * that qsort needs to take the median of the timed runs. */
#ifndef CT_BENCH_CLOCK_H
#define CT_BENCH_CLOCK_H

#include <time.h>

static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif

/* The CPU backend's parallel policy: how many threads an op uses, from the work's size and
 * the cost of a parallel region measured on this machine.
 *
 * Opening an OpenMP region costs from about 1 us (the team's threads spin between regions:
 * libgomp's default) to 3-10 us (passive waiting: a futex wake per region, slower in a
 * virtual machine), and 20-150 us on a machine whose cores other processes hold. An op that
 * takes T ns alone takes about T / n + C on n threads, so splitting pays only when T is a
 * few times C: a small training step (an MLP at batch 128: 14 regions of 5-500 us) ran
 * slower on two threads than on one with a fixed threshold. The first decision measures C
 * (the median of a few empty regions on the full team, after one that starts the threads);
 * each op then uses two or more threads only where T >= CT_CPU_SPLIT_FACTOR * C per thread.
 *
 * T is estimated from the work: elementwise-like work (an element read, computed and
 * written) at CT_CPU_NS_PER_ELEMENT, GEMM at CT_CPU_GEMM_FLOP_PER_NS on one core; both are
 * round figures for current x86 cores, meant to err towards fewer threads. */
#include <pthread.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/cpu_impl.h"

#define CT_CPU_SPLIT_FACTOR 4.0
#define CT_CPU_NS_PER_ELEMENT 0.25
#define CT_CPU_GEMM_FLOP_PER_NS 50.0
/* The work per thread is never less than CT_CPU_MIN_SPLIT elements (cpu_impl.h: a measured
 * C of near 0) nor more than this (a busy machine measured at its worst): a split of less is
 * not worth a region anywhere, one of more always is. */
#define CT_CPU_MAX_SPLIT (1 << 22)
#define CT_CPU_REGION_SAMPLES 9

static pthread_once_t measure_once = PTHREAD_ONCE_INIT;
static double region_ns = -1.0; /* < 0: not measured (or set by ct__cpu_set_region_ns) */

double ct__cpu_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

#ifdef _OPENMP
static void sort_doubles(double *v, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}
#endif

static void measure_region(void) {
    if (region_ns >= 0.0) return;
#ifdef _OPENMP
    ct__cpu_blas_single_threaded(); /* OpenBLAS's spinning pool would be measured too */
    int threads = omp_get_max_threads();
    volatile int sink = 0;
    double samples[CT_CPU_REGION_SAMPLES];
#pragma omp parallel num_threads(threads)
    sink += omp_get_thread_num() == 0;
    for (int i = 0; i < CT_CPU_REGION_SAMPLES; i++) {
        double start = ct__cpu_now_ns();
#pragma omp parallel num_threads(threads)
        sink += omp_get_thread_num() == 0;
        samples[i] = ct__cpu_now_ns() - start;
    }
    sort_doubles(samples, CT_CPU_REGION_SAMPLES);
    region_ns = samples[CT_CPU_REGION_SAMPLES / 2];
#else
    region_ns = 0.0;
#endif
}

double ct__cpu_region_ns(void) {
#ifdef _OPENMP
    /* Inside a region (an op called from a parallel loop) nothing is split further, and a
     * nested measurement would time a team of one. */
    if (omp_in_parallel() || omp_get_max_threads() < 2) return region_ns < 0 ? 0.0 : region_ns;
#endif
    pthread_once(&measure_once, measure_region);
    return region_ns;
}

void ct__cpu_set_region_ns(double ns) { region_ns = ns; }

/* The serial time per thread below which a split does not pay, in ns. */
static double split_ns(void) {
    double ns = CT_CPU_SPLIT_FACTOR * ct__cpu_region_ns();
    double floor_ns = CT_CPU_MIN_SPLIT * CT_CPU_NS_PER_ELEMENT;
    double ceiling_ns = CT_CPU_MAX_SPLIT * CT_CPU_NS_PER_ELEMENT;
    return ns < floor_ns ? floor_ns : ns > ceiling_ns ? ceiling_ns : ns;
}

int ct__cpu_threads_for(double serial_ns) {
    int threads = ct__cpu_threads();
    if (threads < 2) return 1;
    double n = serial_ns / split_ns();
    return n >= threads ? threads : n < 2.0 ? 1 : (int)n;
}

int ct__cpu_threads_for_elements(int64_t elements) {
    return ct__cpu_threads_for((double)elements * CT_CPU_NS_PER_ELEMENT);
}

int ct__cpu_threads_for_gemm(int64_t m, int64_t n, int64_t k) {
    return ct__cpu_threads_for(2.0 * (double)m * (double)n * (double)k / CT_CPU_GEMM_FLOP_PER_NS);
}

/* The fewest elements ct__cpu_threads_for_elements gives two threads. */
int64_t ct__cpu_parallel_threshold(void) {
    if (ct__cpu_threads() < 2) return INT64_MAX;
    return (int64_t)(2.0 * split_ns() / CT_CPU_NS_PER_ELEMENT);
}

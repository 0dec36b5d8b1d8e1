/* `ctensor bench`: the pieces shared by its files. cmd_bench.c parses the options and runs
 * the plan, bench_measure.c times the ops and the copies, bench_report.c prints the table,
 * the crossover sizes, the CSV and the JSON, bench_plot.c draws the chart with gnuplot. */
#ifndef CT_BENCH_IMPL_H
#define CT_BENCH_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctensor/ctensor.h"

/* What is measured. The size of a measurement is the number of f32 elements of each
 * operand (add, sum), the n of n x n by n x n (matmul), the elements of the input image
 * (conv2d: 1 x 16 x H x W, H = W, a 3 x 3 kernel to 16 channels, padding 1, no bias), or
 * bytes (the copies). */
typedef enum bench_op {
    BENCH_MATMUL = 0,
    BENCH_ADD,
    BENCH_SUM,
    BENCH_CONV2D,
    BENCH_COPY_H2D,        /* from pageable host memory */
    BENCH_COPY_D2H,        /* into pageable host memory */
    BENCH_COPY_H2D_PINNED, /* from pinned host memory (ct_pin_memory) */
    BENCH_COPY_D2H_PINNED, /* into pinned host memory */
    BENCH_OP_COUNT
} bench_op;

/* The ops compared between devices (the copies are measured on CUDA devices only). */
#define BENCH_COMPUTE_OPS 4

/* Whether op is one of the host<->device copies (sized in bytes). */
static inline bool bench_is_copy(bench_op op) {
    return op >= BENCH_COPY_H2D && op <= BENCH_COPY_D2H_PINNED;
}

typedef struct bench_measurement {
    ct_device device;
    bench_op op;
    int64_t size;
    double seconds;   /* per call: the median over timed batches */
    bool with_copies; /* inputs copied in and the result out inside the timed call */
} bench_measurement;

typedef struct bench_results {
    bench_measurement *items;
    int count, capacity;
    ct_device devices[1 + 2 * CT_MAX_LOGICAL_DEVICES]; /* in the order measured */
    int device_count;
    bool has_cuda;           /* whether any CUDA device was measured */
    char gpu_absent[512];    /* why no CUDA device was measured ("" when one was) */
    char pinned_absent[512]; /* why a CUDA device's pinned copies were not measured, or "" */
    double wall_seconds;
} bench_results;

/* Timing budget: the seconds one measurement may take (about; the slowest calls run once
 * after a warm-up call whatever the budget). */
typedef struct bench_plan {
    double budget;
    bool quick;
    bool progress; /* a progress line on stderr (only when stderr is a terminal) */
} bench_plan;

/* Whether device is compared with cpu:0: a GPU, or a logical CPU device other than cpu:0
 * (whose data, like a GPU's, is copied in and out: a way to see the copies' cost, and to
 * exercise the comparison, on a machine without a GPU). */
bool bench_is_compared(ct_device device);

/* The op's name as in the CSV and the table: "matmul", "add", "sum", "conv2d", "copy_h2d",
 * "copy_d2h", "copy_h2d_pinned", "copy_d2h_pinned". */
const char *bench_op_name(bench_op op);
/* How its size is counted: "n (n x n matrices)", "elements (f32)", "bytes", or for conv2d
 * the input's elements and how they make the image. */
const char *bench_size_unit(bench_op op);

/* conv2d's channels (in and out): its size is BENCH_CONV_CHANNELS * H * W. */
#define BENCH_CONV_CHANNELS 16

/* Append a measurement; false when memory runs out. */
bool bench_add(bench_results *r, bench_measurement m);

/* Measure every compute op on device (and, with_copies, again with the copies in and out)
 * at the plan's sizes; then, on a CUDA device, the copies. false with a message on stderr
 * when a measurement failed (those measured are kept). */
bool bench_device(bench_results *r, const bench_plan *plan, ct_device device, bool with_copies);

/* The smallest measured size from which `device` (with or without the copies) is faster
 * than cpu:0 at every larger measured size; 0 when there is none. */
int64_t bench_crossover(const bench_results *r, bench_op op, ct_device device, bool with_copies);

void bench_print_table(const bench_results *r, FILE *out);
void bench_print_json(const bench_results *r, FILE *out);
/* The CSV: a header, then one row per measurement. false when writing failed. */
bool bench_write_csv(const bench_results *r, FILE *file);
/* Draw the chart into path (.svg or .png) with gnuplot. false with a message on stderr. */
bool bench_plot(const bench_results *r, const char *path);
/* Whether gnuplot is on PATH. */
bool bench_have_gnuplot(void);

#endif

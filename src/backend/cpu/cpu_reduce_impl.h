/* The CPU reduction kernels' internals: accumulators (cpu_reduce_acc.c) that the driver
 * (cpu_reduce.c) feeds with rows of the reduced space.
 *
 * A reduction is one "kind" of accumulation chosen from the op and the input dtype: float
 * sums (pairwise, in double), integer sums and products (wrapping modulo 2^64, as int64),
 * float products (in double), extrema in the double or int64 domain, all/any, arg-extrema,
 * and the sum of squared deviations from a given mean (the second pass of var/std).
 * Partial results of consecutive pieces of the reduced space merge in order, so a big
 * reduction can be split into fixed chunks and still give the same result every run. */
#ifndef CT_CPU_REDUCE_IMPL_H
#define CT_CPU_REDUCE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/cpu/cpu_impl.h"

typedef enum ct__reduce_kind {
    CT_RK_FSUM,  /* float-domain sum (sum of floats, mean, var pass 1) */
    CT_RK_ISUM,  /* integer sum, wrapping */
    CT_RK_FPROD, /* float product in double */
    CT_RK_IPROD, /* integer product, wrapping */
    CT_RK_FMAX,  /* float extrema: NaN propagates */
    CT_RK_FMIN,
    CT_RK_IMAX, /* integer and bool extrema */
    CT_RK_IMIN,
    CT_RK_ALL,
    CT_RK_ANY,
    CT_RK_FARGMAX, /* first index of the extremum; a NaN is the extremum */
    CT_RK_FARGMIN,
    CT_RK_IARGMAX,
    CT_RK_IARGMIN,
    CT_RK_SQDEV /* sum of (x - mean)^2, pairwise */
} ct__reduce_kind;

/* Pairwise summation that accepts values one at a time: level[l] holds the sum of 2^l
 * pushed values, and equal levels merge as a binary counter carries. Its error grows with
 * log2 of the count, as recursive pairwise summation's does. */
typedef struct ct__pairwise {
    double level[64];
    uint64_t count;
} ct__pairwise;

/* Column sums: CT_REDUCE_TILE adjacent outputs whose inputs lie next to each other in
 * memory (a sum over axis 0 of a matrix) are summed together, a group of up to
 * CT_REDUCE_TILE contiguous elements per step of the reduced space, so memory is read in
 * order. Each output gets a pairwise sum of blocks, as in the row path. */
#define CT_REDUCE_TILE 64

typedef struct ct__reduce_tile {
    int w;              /* outputs in this tile */
    int in_block;       /* steps summed into block[] so far */
    const double *mean; /* NULL: plain sums; else sums of (x - mean[k])^2 */
    double block[CT_REDUCE_TILE];
    ct__pairwise sum[CT_REDUCE_TILE];
} ct__reduce_tile;

void ct__reduce_tile_init(ct__reduce_tile *tile, int w, const double *mean);
/* n steps, stride bytes apart, each a group of w contiguous f32 or f64 elements at p. */
void ct__reduce_tile_feed(ct__reduce_tile *tile, ct_dtype dtype, const char *p, int64_t stride,
                          int64_t n);
/* The w sums. */
void ct__reduce_tile_totals(ct__reduce_tile *tile, double *totals);

/* The result of a piece of the reduced space, small enough to keep one per chunk. */
typedef struct ct__reduce_part {
    double f;      /* float sum or product, float extremum */
    uint64_t u;    /* integer sum or product (modulo 2^64) */
    int64_t i;     /* integer extremum */
    int64_t index; /* arg kinds: linear index of the best so far, -1 before the first */
    bool flag;     /* all/any; float extrema: a NaN was seen */
} ct__reduce_part;

typedef struct ct__reduce_acc {
    ct__pairwise sum; /* CT_RK_FSUM and CT_RK_SQDEV */
    ct__reduce_part part;
} ct__reduce_acc;

void ct__reduce_acc_init(ct__reduce_kind kind, ct__reduce_acc *acc);
/* Feed n elements of dtype at p, byte stride apart, whose linear indices in the reduced
 * space start at first. mean is used by CT_RK_SQDEV only. */
void ct__reduce_acc_row(ct__reduce_kind kind, ct_dtype dtype, const char *p, int64_t stride,
                        int64_t n, int64_t first, double mean, ct__reduce_acc *acc);
/* The accumulator's result (a float sum is collapsed into part.f). */
ct__reduce_part ct__reduce_acc_result(ct__reduce_kind kind, const ct__reduce_acc *acc);
/* Merge the result of the next piece (in order) into acc. */
void ct__reduce_acc_merge(ct__reduce_kind kind, ct__reduce_acc *acc, const ct__reduce_part *next);

#endif

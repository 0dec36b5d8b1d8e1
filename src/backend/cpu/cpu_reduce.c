/* CPU reduction kernel: walks the outer (kept) × inner (reduced) spaces of ct__reduce_args
 * and feeds rows of the inner space to the accumulators of cpu_reduce_acc.c.
 *
 * Parallelism: with many outputs, OpenMP threads split the outputs (each output is computed
 * by one thread, in one order). With few outputs and a big reduced space (a full sum of a
 * big tensor), the reduced space is cut into fixed chunks whose size depends only on its
 * length, the chunks are reduced in parallel and their results merged in order, so the
 * result does not depend on the number of threads. var/std take two passes (mean, then the
 * sum of squared deviations), which is accurate even when the mean is large. */
#include <math.h>

#include "backend/cpu/cpu_reduce_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"

/* Chunked path: at most MAX_CHUNKS chunks of at least MIN_CHUNK elements, used when there
 * are fewer than CHUNKED_MAX_OUTER outputs. */
#define MIN_CHUNK 32768
#define MAX_CHUNKS 256
#define CHUNKED_MAX_OUTER 8

/* The reduced space as rows: `row_len` elements `row_stride` bytes apart, repeated over the
 * other inner axes. */
typedef struct inner_space {
    int naxes; /* inner axes above the row axis */
    int64_t shape[CT_MAX_DIMS];
    int64_t stride[CT_MAX_DIMS]; /* bytes */
    int64_t row_len, row_stride;
    int64_t numel;
} inner_space;

typedef struct reduce_plan {
    const ct__reduce_args *args;
    ct__reduce_op op;
    ct__reduce_kind kind; /* for var/std: the second pass (the first is CT_RK_FSUM) */
    inner_space inner;
} reduce_plan;

static ct__reduce_kind kind_of(ct__reduce_op op, ct_dtype dtype) {
    bool fl = ct__is_float(dtype);
    switch (op) {
    case CT_ROP_SUM: return fl ? CT_RK_FSUM : CT_RK_ISUM;
    case CT_ROP_MEAN: return CT_RK_FSUM;
    case CT_ROP_PROD: return fl ? CT_RK_FPROD : CT_RK_IPROD;
    case CT_ROP_MAX: return fl ? CT_RK_FMAX : CT_RK_IMAX;
    case CT_ROP_MIN: return fl ? CT_RK_FMIN : CT_RK_IMIN;
    case CT_ROP_ALL: return CT_RK_ALL;
    case CT_ROP_ANY: return CT_RK_ANY;
    case CT_ROP_ARGMAX: return fl ? CT_RK_FARGMAX : CT_RK_IARGMAX;
    case CT_ROP_ARGMIN: return fl ? CT_RK_FARGMIN : CT_RK_IARGMIN;
    default: return CT_RK_SQDEV;
    }
}

static void inner_init(const ct__reduce_args *a, inner_space *s) {
    int64_t size = (int64_t)ct__dtype_size(a->in_dtype);
    s->numel = 1;
    for (int d = 0; d < a->inner_ndim; d++) s->numel *= a->inner_shape[d];
    if (a->inner_ndim == 0) {
        s->naxes = 0;
        s->row_len = 1;
        s->row_stride = size;
        return;
    }
    s->naxes = a->inner_ndim - 1;
    for (int d = 0; d < s->naxes; d++) {
        s->shape[d] = a->inner_shape[d];
        s->stride[d] = a->in_inner_strides[d] * size;
    }
    s->row_len = a->inner_shape[s->naxes];
    s->row_stride = a->in_inner_strides[s->naxes] * size;
}

/* Feed inner elements [begin, end) (C-order linear indices) at base to acc. */
static void walk_inner(const reduce_plan *p, ct__reduce_kind kind, const char *base, int64_t begin,
                       int64_t end, double mean, ct__reduce_acc *acc) {
    const inner_space *s = &p->inner;
    if (begin >= end) return;
    int64_t index[CT_MAX_DIMS];
    int64_t col = begin % s->row_len, row = begin / s->row_len;
    for (int d = s->naxes - 1; d >= 0; d--) {
        index[d] = row % s->shape[d];
        row /= s->shape[d];
    }
    for (int64_t position = begin; position < end;) {
        int64_t offset = col * s->row_stride;
        for (int d = 0; d < s->naxes; d++) offset += index[d] * s->stride[d];
        int64_t n = s->row_len - col < end - position ? s->row_len - col : end - position;
        ct__reduce_acc_row(kind, p->args->in_dtype, base + offset, s->row_stride, n, position, mean,
                           acc);
        position += n;
        col = 0;
        for (int d = s->naxes - 1; d >= 0; d--) {
            if (++index[d] < s->shape[d]) break;
            index[d] = 0;
        }
    }
}

/* One pass over the whole inner space at base, sequentially. */
static ct__reduce_part pass_serial(const reduce_plan *p, ct__reduce_kind kind, const char *base,
                                   double mean) {
    ct__reduce_acc acc;
    ct__reduce_acc_init(kind, &acc);
    walk_inner(p, kind, base, 0, p->inner.numel, mean, &acc);
    return ct__reduce_acc_result(kind, &acc);
}

/* One pass over the inner space in fixed chunks, reduced in parallel, merged in order. */
static ct__reduce_part pass_chunked(const reduce_plan *p, ct__reduce_kind kind, const char *base,
                                    double mean) {
    int64_t n = p->inner.numel;
    int64_t chunk = (n + MAX_CHUNKS - 1) / MAX_CHUNKS;
    chunk = chunk < MIN_CHUNK ? MIN_CHUNK : (chunk + 127) / 128 * 128;
    int64_t nchunks = (n + chunk - 1) / chunk;
    ct__reduce_part parts[MAX_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < nchunks; c++) {
        ct__reduce_acc acc;
        ct__reduce_acc_init(kind, &acc);
        int64_t end = (c + 1) * chunk < n ? (c + 1) * chunk : n;
        walk_inner(p, kind, base, c * chunk, end, mean, &acc);
        parts[c] = ct__reduce_acc_result(kind, &acc);
    }
    ct__reduce_acc total;
    ct__reduce_acc_init(kind, &total);
    for (int64_t c = 0; c < nchunks; c++) ct__reduce_acc_merge(kind, &total, &parts[c]);
    return ct__reduce_acc_result(kind, &total);
}

/* numpy's var with ddof: the divisor is max(n - correction, 0), so a divisor of 0 gives
 * inf (or NaN when every deviation is 0); an empty reduction gives NaN. */
static double variance(double sqdev, int64_t n, double correction) {
    if (n == 0) return NAN;
    double divisor = (double)n - correction;
    if (!(divisor > 0.0)) return sqdev > 0.0 ? INFINITY : NAN;
    return sqdev / divisor;
}

static void store_result(const reduce_plan *p, const ct__reduce_part *r, char *out) {
    ct_dtype dt = p->args->out_dtype;
    bool integer = p->kind == CT_RK_ISUM || p->kind == CT_RK_IPROD;
    int64_t inner = p->inner.numel;
    double n = (double)inner;
    switch (p->op) {
    case CT_ROP_SUM:
    case CT_ROP_PROD:
        if (integer)
            ct__store_i64(out, dt, (int64_t)r->u);
        else
            ct__store_f64(out, dt, r->f);
        break;
    case CT_ROP_MEAN: ct__store_f64(out, dt, n > 0 ? r->f / n : NAN); break;
    case CT_ROP_MAX:
    case CT_ROP_MIN:
        if (p->kind == CT_RK_FMAX || p->kind == CT_RK_FMIN)
            ct__store_f64(out, dt, r->flag ? NAN : r->f);
        else
            ct__store_i64(out, dt, r->i ^ ct__order_bias(dt));
        break;
    case CT_ROP_ALL:
    case CT_ROP_ANY: *(uint8_t *)out = r->flag; break;
    case CT_ROP_ARGMAX:
    case CT_ROP_ARGMIN: ct__store_i64(out, dt, r->index); break;
    case CT_ROP_VAR: ct__store_f64(out, dt, variance(r->f, inner, p->args->correction)); break;
    case CT_ROP_STD:
        ct__store_f64(out, dt, sqrt(variance(r->f, inner, p->args->correction)));
        break;
    default: break;
    }
}

/* Reduce the inner space at base into out, with passes run serially or chunked. */
static void reduce_one(const reduce_plan *p, const char *base, char *out, bool chunked) {
    ct__reduce_part (*pass)(const reduce_plan *, ct__reduce_kind, const char *, double) =
        chunked ? pass_chunked : pass_serial;
    double mean = 0.0;
    if (p->op == CT_ROP_VAR || p->op == CT_ROP_STD) {
        if (p->inner.numel > 0) mean = pass(p, CT_RK_FSUM, base, 0.0).f / (double)p->inner.numel;
    }
    ct__reduce_part r = pass(p, p->kind, base, mean);
    store_result(p, &r, out);
}

/* Input and output byte offsets of outer element o (C-order linear index). */
static void outer_offsets(const ct__reduce_args *a, int64_t o, int64_t *in, int64_t *out) {
    int64_t in_off = 0, out_off = 0;
    for (int d = a->outer_ndim - 1; d >= 0; d--) {
        int64_t i = o % a->outer_shape[d];
        o /= a->outer_shape[d];
        in_off += i * a->in_outer_strides[d];
        out_off += i * a->out_strides[d];
    }
    *in = in_off * (int64_t)ct__dtype_size(a->in_dtype);
    *out = out_off * (int64_t)ct__dtype_size(a->out_dtype);
}

/* Column sums (see ct__reduce_tile): sum, mean, var and std of f32/f64 when the last outer
 * axis is contiguous in the input and the reduced space is not. */
static bool tile_applicable(const reduce_plan *p) {
    const ct__reduce_args *a = p->args;
    if (p->kind != CT_RK_FSUM && p->kind != CT_RK_SQDEV) return false;
    if (a->in_dtype != CT_F32 && a->in_dtype != CT_F64) return false;
    if (a->outer_ndim == 0 || a->in_outer_strides[a->outer_ndim - 1] != 1) return false;
    return p->inner.numel > 1 && p->inner.row_stride != (int64_t)ct__dtype_size(a->in_dtype);
}

/* Feed every step of the inner space at base to tile. */
static void walk_tile(const reduce_plan *p, const char *base, ct__reduce_tile *tile) {
    const inner_space *s = &p->inner;
    int64_t index[CT_MAX_DIMS] = {0};
    for (int64_t rows = s->numel / s->row_len; rows > 0; rows--) {
        int64_t offset = 0;
        for (int d = 0; d < s->naxes; d++) offset += index[d] * s->stride[d];
        ct__reduce_tile_feed(tile, p->args->in_dtype, base + offset, s->row_stride, s->row_len);
        for (int d = s->naxes - 1; d >= 0; d--) {
            if (++index[d] < s->shape[d]) break;
            index[d] = 0;
        }
    }
}

/* Tile t: up to CT_REDUCE_TILE outputs along the last outer axis. */
static void reduce_tile(const reduce_plan *p, int64_t t) {
    const ct__reduce_args *a = p->args;
    int64_t len = a->outer_shape[a->outer_ndim - 1];
    int64_t per_row = (len + CT_REDUCE_TILE - 1) / CT_REDUCE_TILE;
    int64_t col = t % per_row * CT_REDUCE_TILE;
    int w = (int)(len - col < CT_REDUCE_TILE ? len - col : CT_REDUCE_TILE);
    int64_t in_off, out_off;
    outer_offsets(a, t / per_row * len + col, &in_off, &out_off);
    ct__reduce_tile tile;
    double mean[CT_REDUCE_TILE], totals[CT_REDUCE_TILE];
    bool two_pass = p->kind == CT_RK_SQDEV;
    if (two_pass) {
        ct__reduce_tile_init(&tile, w, NULL);
        walk_tile(p, a->in + in_off, &tile);
        ct__reduce_tile_totals(&tile, mean);
        for (int k = 0; k < w; k++) mean[k] /= (double)p->inner.numel;
    }
    ct__reduce_tile_init(&tile, w, two_pass ? mean : NULL);
    walk_tile(p, a->in + in_off, &tile);
    ct__reduce_tile_totals(&tile, totals);
    int64_t out_step = a->out_strides[a->outer_ndim - 1] * (int64_t)ct__dtype_size(a->out_dtype);
    for (int k = 0; k < w; k++) {
        ct__reduce_part r = {totals[k], 0, 0, -1, false};
        store_result(p, &r, a->out + out_off + k * out_step);
    }
}

ct_status ct__cpu_reduce(int device, ct__reduce_op op, const ct__reduce_args *args) {
    (void)device;
    reduce_plan plan = {args, op, kind_of(op, args->in_dtype), {0}};
    inner_init(args, &plan.inner);
    int64_t outer = 1;
    for (int d = 0; d < args->outer_ndim; d++) outer *= args->outer_shape[d];
    int64_t inner = plan.inner.numel;
    if (outer < CHUNKED_MAX_OUTER && inner >= 2 * MIN_CHUNK) {
        for (int64_t o = 0; o < outer; o++) {
            int64_t in_off, out_off;
            outer_offsets(args, o, &in_off, &out_off);
            reduce_one(&plan, args->in + in_off, args->out + out_off, true);
        }
        return CT_OK;
    }
    int64_t work = outer * (inner > 0 ? inner : 1);
    (void)work; /* read by OpenMP's if clauses only */
    if (tile_applicable(&plan)) {
        int64_t len = args->outer_shape[args->outer_ndim - 1];
        int64_t tiles = outer / len * ((len + CT_REDUCE_TILE - 1) / CT_REDUCE_TILE);
#pragma omp parallel for schedule(static) if (work >= CT_CPU_PARALLEL_THRESHOLD && tiles > 1)
        for (int64_t t = 0; t < tiles; t++) reduce_tile(&plan, t);
        return CT_OK;
    }
#pragma omp parallel for schedule(static) if (work >= CT_CPU_PARALLEL_THRESHOLD && outer > 1)
    for (int64_t o = 0; o < outer; o++) {
        int64_t in_off, out_off;
        outer_offsets(args, o, &in_off, &out_off);
        reduce_one(&plan, args->in + in_off, args->out + out_off, false);
    }
    return CT_OK;
}

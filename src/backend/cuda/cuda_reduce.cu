// CUDA reduction kernels (ct__reduce_args in backend_impl.h), with the semantics of the CPU's
// cpu_reduce.c: float sums, means, products and var/std accumulate in double, integer sums
// and products wrap modulo 2^64, max/min propagate NaN, arg-extrema return the first index
// of the extremum with a NaN counting as the extremum, empty reductions give the identity
// (sum 0, prod 1, all true, any false) or NaN (mean, var, std).
//
// Determinism: every output is reduced by a fixed tree that depends only on the sizes, never
// on scheduling, and no float is accumulated with atomics. The reduced ("inner") space of
// each output is cut into `nchunks` consecutive chunks (a function of the sizes only); a
// chunk is reduced either by one block of ROW_THREADS threads (thread t takes elements t,
// t + ROW_THREADS, ... of the chunk, then a shared-memory tree combines the threads in a
// fixed order), or, when adjacent outputs are adjacent in memory and the inner space is not
// ("column" sums), by one thread walking the chunk in order, so a warp reads coalesced rows.
// With one chunk the result is stored directly; with several, the chunk results go to a
// scratch array and a second kernel merges them in chunk order. var/std take two passes:
// the mean (stored per output in scratch), then the sum of squared deviations from it.
//
// Speed: f32 and f64 sums and means over a contiguous inner space (a whole tensor, or the last
// axes of a contiguous one) take their own kernel, which reads four elements at a time (one
// 16-byte load where the address allows, four plain loads otherwise: the same order of adds
// either way, so the result does not depend on the alignment) into one double per thread,
// with chunks of at least FAST_MIN_CHUNK elements so that a large tensor gives several
// blocks per multiprocessor, and an inner space of up to FAST_ONE_CHUNK elements in a single
// block, so that the launch-bound sizes take one launch and no scratch.
#include <stdint.h>

#include <math_constants.h>

#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/cuda_load_impl.cuh"
#include "backend/cuda/cuda_param_impl.cuh"

namespace {

#define ROW_THREADS 256
#define COL_THREADS 256
#define MAX_BLOCKS 65536
// Row chunks: split an output's inner space only when it is long and outputs are few; aim
// for about ROW_TARGET_BLOCKS blocks in all.
#define ROW_MIN_CHUNK 8192
#define ROW_TARGET_BLOCKS 1024
// Column chunks: aim for about COL_TARGET_THREADS threads, each with COL_MIN_CHUNK elements
// at least.
#define COL_MIN_CHUNK 256
#define COL_TARGET_THREADS 65536
// The contiguous-sum kernel: a thread reads FAST_GROUP elements at a time; chunks are whole
// numbers of a block's groups.
#define FAST_GROUP 4
#define FAST_MIN_CHUNK 4096
#define FAST_ONE_CHUNK 65536
#define FAST_TARGET_BLOCKS 2048

enum reduce_kind {
    RK_FSUM,  // float-domain sum (float sums, mean, var pass 1)
    RK_ISUM,  // integer sum, wrapping
    RK_FPROD, // float product in double
    RK_IPROD, // integer product, wrapping
    RK_FMAX,  // float extrema: NaN propagates through `flag`
    RK_FMIN,
    RK_IMAX, // integer and bool extrema
    RK_IMIN,
    RK_ALL,
    RK_ANY,
    RK_FARGMAX, // first index of the extremum; a NaN is the extremum
    RK_FARGMIN,
    RK_IARGMAX,
    RK_IARGMIN,
    RK_SQDEV // sum of (x - mean)^2
};

// The partial result of a piece of an inner space.
struct reduce_part {
    double f;      // float sum, product or extremum
    uint64_t u;    // integer sum or product (modulo 2^64)
    int64_t i;     // integer extremum
    int64_t index; // arg kinds: position of the best so far, -1 before the first
    int flag;      // all/any; float extrema: a NaN was seen
};

// Everything a kernel needs, passed by value. Strides are in bytes.
struct reduce_geom {
    int outer_ndim, inner_ndim;
    int64_t outer_shape[CT_MAX_DIMS], inner_shape[CT_MAX_DIMS];
    int64_t in_outer[CT_MAX_DIMS], in_inner[CT_MAX_DIMS], out_strides[CT_MAX_DIMS];
    int64_t outer, inner;   // element counts
    int64_t chunk, nchunks; // inner elements per chunk, chunks per output
    const char *in;
    char *out;
    ct_dtype in_dtype, out_dtype;
    ct__reduce_op op;
    int kind;
    bool fused; // var/std with one chunk per output: both passes in one kernel
    double correction;
};
CT_CUDA_BY_VALUE_FITS(reduce_geom);

// ---- accumulators ----

static __device__ reduce_part part_init(int kind) {
    reduce_part r;
    r.f = 0.0;
    r.u = 0;
    r.i = 0;
    r.index = -1;
    r.flag = 0;
    switch (kind) {
    case RK_FPROD: r.f = 1.0; break;
    case RK_IPROD: r.u = 1; break;
    case RK_FMAX: r.f = -CUDART_INF; break;
    case RK_FMIN: r.f = CUDART_INF; break;
    case RK_IMAX: r.i = INT64_MIN; break;
    case RK_IMIN: r.i = INT64_MAX; break;
    case RK_ALL: r.flag = 1; break;
    default: break;
    }
    return r;
}

// Whether v beats best strictly: a NaN beats every number, nothing beats a NaN.
static __device__ bool float_better(bool is_max, double v, double best) {
    if (best != best) return false;
    if (v != v) return true;
    return is_max ? v > best : v < best;
}

static __device__ bool float_same(double v, double best) {
    return v == best || (v != v && best != best);
}

// Feed the element at p, at position pos of the inner space. Within one accumulator the
// positions increase, so "strictly better" keeps the first index of ties.
static __device__ void part_feed(int kind, reduce_part &r, const char *p, ct_dtype dt, int64_t pos,
                                 double mean) {
    switch (kind) {
    case RK_FSUM: r.f += ct__load_f64(p, dt); break;
    case RK_SQDEV: {
        double d = ct__load_f64(p, dt) - mean;
        r.f += d * d;
        break;
    }
    case RK_ISUM: r.u += (uint64_t)ct__load_i64(p, dt); break;
    case RK_FPROD: r.f *= ct__load_f64(p, dt); break;
    case RK_IPROD: r.u *= (uint64_t)ct__load_i64(p, dt); break;
    case RK_FMAX:
    case RK_FMIN: {
        double v = ct__load_f64(p, dt);
        r.flag |= v != v;
        if (kind == RK_FMAX ? v > r.f : v < r.f) r.f = v;
        break;
    }
    case RK_IMAX:
    case RK_IMIN: {
        int64_t v = ct__load_i64(p, dt) ^ ct__order_bias(dt);
        if (kind == RK_IMAX ? v > r.i : v < r.i) r.i = v;
        break;
    }
    case RK_ALL:
        if (ct__load_f64(p, dt) == 0.0) r.flag = 0;
        break;
    case RK_ANY:
        if (ct__load_f64(p, dt) != 0.0) r.flag = 1;
        break;
    case RK_FARGMAX:
    case RK_FARGMIN: {
        double v = ct__load_f64(p, dt);
        if (r.index < 0 || float_better(kind == RK_FARGMAX, v, r.f)) r.f = v, r.index = pos;
        break;
    }
    default: { // RK_IARGMAX, RK_IARGMIN
        int64_t v = ct__load_i64(p, dt) ^ ct__order_bias(dt);
        if (r.index < 0 || (kind == RK_IARGMAX ? v > r.i : v < r.i)) r.i = v, r.index = pos;
        break;
    }
    }
}

// Whether the arg-extremum part b should replace a: b is better, or as good at an earlier
// position (parts of a block's threads interleave, so positions decide ties).
static __device__ bool arg_takes(int kind, const reduce_part &a, const reduce_part &b) {
    if (b.index < 0) return false;
    if (a.index < 0) return true;
    if (kind == RK_FARGMAX || kind == RK_FARGMIN) {
        if (float_better(kind == RK_FARGMAX, b.f, a.f)) return true;
        return float_same(b.f, a.f) && b.index < a.index;
    }
    if (kind == RK_IARGMAX ? b.i > a.i : b.i < a.i) return true;
    return b.i == a.i && b.index < a.index;
}

// a = a combined with b; sums and products combine in this order (a first).
static __device__ void part_merge(int kind, reduce_part &a, const reduce_part &b) {
    switch (kind) {
    case RK_FSUM:
    case RK_SQDEV: a.f = a.f + b.f; break;
    case RK_ISUM: a.u += b.u; break;
    case RK_FPROD: a.f = a.f * b.f; break;
    case RK_IPROD: a.u *= b.u; break;
    case RK_FMAX:
        a.flag |= b.flag;
        if (b.f > a.f) a.f = b.f;
        break;
    case RK_FMIN:
        a.flag |= b.flag;
        if (b.f < a.f) a.f = b.f;
        break;
    case RK_IMAX:
        if (b.i > a.i) a.i = b.i;
        break;
    case RK_IMIN:
        if (b.i < a.i) a.i = b.i;
        break;
    case RK_ALL: a.flag = a.flag && b.flag; break;
    case RK_ANY: a.flag = a.flag || b.flag; break;
    default:
        if (arg_takes(kind, a, b)) a = b;
        break;
    }
}

// ---- geometry ----

static __device__ int64_t inner_offset(const reduce_geom &g, int64_t j) {
    if (g.inner_ndim == 1) return j * g.in_inner[0];
    int64_t off = 0;
    for (int d = g.inner_ndim - 1; d >= 0; d--) {
        off += j % g.inner_shape[d] * g.in_inner[d];
        j /= g.inner_shape[d];
    }
    return off;
}

// Byte offsets of output o in the input and in the output.
static __device__ void outer_offsets(const reduce_geom &g, int64_t o, int64_t *in, int64_t *out) {
    int64_t in_off = 0, out_off = 0;
    for (int d = g.outer_ndim - 1; d >= 0; d--) {
        int64_t i = o % g.outer_shape[d];
        o /= g.outer_shape[d];
        in_off += i * g.in_outer[d];
        out_off += i * g.out_strides[d];
    }
    *in = in_off;
    *out = out_off;
}

// numpy's var with ddof (as the CPU): divisor max(n - correction, 0); 0 gives inf, or NaN
// when every deviation is 0; an empty reduction gives NaN.
static __device__ double variance(double sqdev, int64_t n, double correction) {
    if (n == 0) return CUDART_NAN;
    double divisor = (double)n - correction;
    if (!(divisor > 0.0)) return sqdev > 0.0 ? CUDART_INF : CUDART_NAN;
    return sqdev / divisor;
}

// The mean of a whole inner space from its sum (the first pass of var/std).
static __device__ double mean_of(const reduce_geom &g, const reduce_part &sum) {
    return g.inner > 0 ? sum.f / (double)g.inner : 0.0;
}

// Store output o's result r: into means_out (the first pass of var/std) or the output.
static __device__ void finish(const reduce_geom &g, const reduce_part &r, int64_t o,
                              double *means_out) {
    double n = (double)g.inner;
    if (means_out) {
        means_out[o] = mean_of(g, r);
        return;
    }
    int64_t in_off, out_off;
    outer_offsets(g, o, &in_off, &out_off);
    char *out = g.out + out_off;
    ct_dtype dt = g.out_dtype;
    switch (g.op) {
    case CT_ROP_SUM:
    case CT_ROP_PROD:
        if (g.kind == RK_ISUM || g.kind == RK_IPROD)
            ct__store_i64(out, dt, (int64_t)r.u);
        else
            ct__store_f64(out, dt, r.f);
        break;
    case CT_ROP_MEAN: ct__store_f64(out, dt, g.inner > 0 ? r.f / n : CUDART_NAN); break;
    case CT_ROP_MAX:
    case CT_ROP_MIN:
        if (g.kind == RK_FMAX || g.kind == RK_FMIN)
            ct__store_f64(out, dt, r.flag ? CUDART_NAN : r.f);
        else
            ct__store_i64(out, dt, r.i ^ ct__order_bias(dt));
        break;
    case CT_ROP_ALL:
    case CT_ROP_ANY: *(uint8_t *)out = r.flag != 0; break;
    case CT_ROP_ARGMAX:
    case CT_ROP_ARGMIN: ct__store_i64(out, dt, r.index); break;
    case CT_ROP_VAR: ct__store_f64(out, dt, variance(r.f, g.inner, g.correction)); break;
    case CT_ROP_STD: ct__store_f64(out, dt, sqrt(variance(r.f, g.inner, g.correction))); break;
    default: break;
    }
}

// ---- kernels ----

// Store (nchunks == 1) or keep in parts (work item w = o * nchunks + c) a chunk's result.
static __device__ void emit(const reduce_geom &g, const reduce_part &r, int64_t w,
                            reduce_part *parts, double *means_out) {
    if (g.nchunks == 1)
        finish(g, r, w, means_out);
    else
        parts[w] = r;
}

// Chunk c of the inner space at base, reduced by the whole block: thread t takes elements
// t, t + ROW_THREADS, ... and a fixed shared-memory tree combines the threads. Every thread
// gets the result.
static __device__ reduce_part block_chunk(const reduce_geom &g, int kind, const char *base,
                                          int64_t c, double mean, reduce_part *shared) {
    int t = threadIdx.x;
    int64_t end = (c + 1) * g.chunk < g.inner ? (c + 1) * g.chunk : g.inner;
    reduce_part r = part_init(kind);
    for (int64_t j = c * g.chunk + t; j < end; j += ROW_THREADS)
        part_feed(kind, r, base + inner_offset(g, j), g.in_dtype, j, mean);
    shared[t] = r;
    __syncthreads();
    for (int s = ROW_THREADS / 2; s > 0; s >>= 1) {
        if (t < s) part_merge(kind, shared[t], shared[t + s]);
        __syncthreads();
    }
    r = shared[0];
    __syncthreads(); // every thread has read shared[0] before anyone overwrites it
    return r;
}

// Chunk c of the inner space at base, reduced in order by one thread.
static __device__ reduce_part thread_chunk(const reduce_geom &g, int kind, const char *base,
                                           int64_t c, double mean) {
    int64_t end = (c + 1) * g.chunk < g.inner ? (c + 1) * g.chunk : g.inner;
    reduce_part r = part_init(kind);
    for (int64_t j = c * g.chunk; j < end; j++)
        part_feed(kind, r, base + inner_offset(g, j), g.in_dtype, j, mean);
    return r;
}

// One block per work item (output o, chunk c), w = o * nchunks + c. With g.fused (var/std,
// one chunk per output) the block takes both passes itself.
__global__ void __launch_bounds__(ROW_THREADS)
    reduce_rows_kernel(reduce_geom g, const double *means_in, reduce_part *parts,
                       double *means_out) {
    __shared__ reduce_part shared[ROW_THREADS];
    for (int64_t w = blockIdx.x; w < g.outer * g.nchunks; w += gridDim.x) {
        int64_t o = w / g.nchunks, c = w % g.nchunks;
        int64_t in_off, out_off;
        outer_offsets(g, o, &in_off, &out_off);
        const char *base = g.in + in_off;
        double mean = means_in ? means_in[o] : 0.0;
        if (g.fused) mean = mean_of(g, block_chunk(g, RK_FSUM, base, c, 0.0, shared));
        reduce_part r = block_chunk(g, g.kind, base, c, mean, shared);
        if (threadIdx.x == 0) emit(g, r, w, parts, means_out);
    }
}

// One thread per work item, w = c * outer + o, so a warp's threads take adjacent outputs.
// With g.fused the thread takes both passes of var/std itself.
__global__ void __launch_bounds__(COL_THREADS)
    reduce_cols_kernel(reduce_geom g, const double *means_in, reduce_part *parts,
                       double *means_out) {
    int64_t total = g.outer * g.nchunks;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t w = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; w < total; w += step) {
        int64_t o = w % g.outer, c = w / g.outer;
        int64_t in_off, out_off;
        outer_offsets(g, o, &in_off, &out_off);
        const char *base = g.in + in_off;
        double mean = means_in ? means_in[o] : 0.0;
        if (g.fused) mean = mean_of(g, thread_chunk(g, RK_FSUM, base, c, 0.0));
        emit(g, thread_chunk(g, g.kind, base, c, mean), o * g.nchunks + c, parts, means_out);
    }
}

// Merge each output's chunk results in chunk order and store the result.
__global__ void reduce_merge_kernel(reduce_geom g, const reduce_part *parts, double *means_out) {
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < g.outer; o += step) {
        reduce_part r = parts[o * g.nchunks];
        for (int64_t c = 1; c < g.nchunks; c++) part_merge(g.kind, r, parts[o * g.nchunks + c]);
        finish(g, r, o, means_out);
    }
}

// Four consecutive elements at p, by one 16-byte load where p allows it (float; double takes
// two), else one by one: the values, hence the sum, do not depend on which.
static __device__ void load_group(const float *p, bool vector, double v[FAST_GROUP]) {
    if (vector) {
        float4 q = *(const float4 *)p;
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
        for (int i = 0; i < FAST_GROUP; i++) v[i] = p[i];
    }
}

static __device__ void load_group(const double *p, bool vector, double v[FAST_GROUP]) {
    if (vector) {
        double2 a = *(const double2 *)p, b = *(const double2 *)(p + 2);
        v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
    } else {
        for (int i = 0; i < FAST_GROUP; i++) v[i] = p[i];
    }
}

// Sum (or mean: finish divides) of contiguous inner spaces of T (float or double), one block
// per work item (output o, chunk c) as reduce_rows_kernel. Thread t adds groups t,
// t + ROW_THREADS, ... of the chunk in order, then the chunk's last elements (fewer than a
// group's worth per thread: thread t takes one), and a fixed shared-memory tree combines the
// threads: the order depends on the sizes alone.
template <typename T>
__global__ void __launch_bounds__(ROW_THREADS)
    sum_contiguous_kernel(reduce_geom g, reduce_part *parts) {
    __shared__ double shared[ROW_THREADS];
    int t = threadIdx.x;
    for (int64_t w = blockIdx.x; w < g.outer * g.nchunks; w += gridDim.x) {
        int64_t o = w / g.nchunks, c = w % g.nchunks;
        int64_t in_off, out_off;
        outer_offsets(g, o, &in_off, &out_off);
        const T *base = (const T *)(g.in + in_off);
        int64_t start = c * g.chunk, end = start + g.chunk < g.inner ? start + g.chunk : g.inner;
        int64_t groups = (end - start) / FAST_GROUP;
        // Chunks start at multiples of FAST_GROUP elements: one test for the whole chunk.
        bool vector = ((uintptr_t)(base + start) & 15) == 0;
        double acc = 0.0, v[FAST_GROUP];
        for (int64_t q = t; q < groups; q += ROW_THREADS) {
            load_group(base + start + q * FAST_GROUP, vector, v);
            for (int i = 0; i < FAST_GROUP; i++) acc += v[i];
        }
        int64_t rest = start + groups * FAST_GROUP + t;
        if (rest < end) acc += (double)base[rest];
        shared[t] = acc;
        __syncthreads();
        for (int s = ROW_THREADS / 2; s > 0; s >>= 1) {
            if (t < s) shared[t] += shared[t + s];
            __syncthreads();
        }
        if (t == 0) {
            reduce_part r = part_init(RK_FSUM);
            r.f = shared[0];
            emit(g, r, w, parts, NULL);
        }
        __syncthreads(); // shared[0] is read before the next work item overwrites it
    }
}

// ---- launchers ----

static int kind_of(ct__reduce_op op, ct_dtype dtype) {
    bool fl = ct__is_float(dtype);
    switch (op) {
    case CT_ROP_SUM: return fl ? RK_FSUM : RK_ISUM;
    case CT_ROP_MEAN: return RK_FSUM;
    case CT_ROP_PROD: return fl ? RK_FPROD : RK_IPROD;
    case CT_ROP_MAX: return fl ? RK_FMAX : RK_IMAX;
    case CT_ROP_MIN: return fl ? RK_FMIN : RK_IMIN;
    case CT_ROP_ALL: return RK_ALL;
    case CT_ROP_ANY: return RK_ANY;
    case CT_ROP_ARGMAX: return fl ? RK_FARGMAX : RK_IARGMAX;
    case CT_ROP_ARGMIN: return fl ? RK_FARGMIN : RK_IARGMIN;
    default: return RK_SQDEV;
    }
}

static void geom_init(reduce_geom *g, ct__reduce_op op, const ct__reduce_args *a) {
    int64_t in_size = ct_cuda_dtype_size(a->in_dtype), out_size = ct_cuda_dtype_size(a->out_dtype);
    *g = reduce_geom{};
    g->outer_ndim = a->outer_ndim;
    g->inner_ndim = a->inner_ndim;
    g->outer = g->inner = 1;
    for (int d = 0; d < a->outer_ndim; d++) {
        g->outer_shape[d] = a->outer_shape[d];
        g->in_outer[d] = a->in_outer_strides[d] * in_size;
        g->out_strides[d] = a->out_strides[d] * out_size;
        g->outer *= a->outer_shape[d];
    }
    for (int d = 0; d < a->inner_ndim; d++) {
        g->inner_shape[d] = a->inner_shape[d];
        g->in_inner[d] = a->in_inner_strides[d] * in_size;
        g->inner *= a->inner_shape[d];
    }
    g->in = a->in;
    g->out = a->out;
    g->in_dtype = a->in_dtype;
    g->out_dtype = a->out_dtype;
    g->op = op;
    g->kind = kind_of(op, a->in_dtype);
    g->correction = a->correction;
}

// Column mode when adjacent outputs sit next to each other in the input while the inner
// elements do not, or when inner spaces are too short to keep a block busy.
static bool use_columns(const ct__reduce_args *a, int64_t outer, int64_t inner) {
    if (a->outer_ndim == 0 || outer < 32) return false;
    bool adjacent_outputs = a->in_outer_strides[a->outer_ndim - 1] == 1;
    bool inner_contiguous = a->inner_ndim > 0 && a->in_inner_strides[a->inner_ndim - 1] == 1;
    return (adjacent_outputs && !inner_contiguous) || inner < 64;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Chunks per output, from the sizes alone (so every run uses the same tree).
static void plan_chunks(reduce_geom *g, bool columns) {
    int64_t n = g->inner, want;
    if (columns)
        want = n <= COL_MIN_CHUNK ? 1 : ceil_div(COL_TARGET_THREADS, g->outer);
    else
        want = n <= ROW_MIN_CHUNK ? 1 : ceil_div(ROW_TARGET_BLOCKS, g->outer);
    int64_t limit = ceil_div(n, columns ? COL_MIN_CHUNK : ROW_MIN_CHUNK);
    if (want > limit) want = limit;
    if (want < 1) want = 1;
    g->chunk = n > 0 ? ceil_div(n, want) : 1;
    if (!columns) g->chunk = ceil_div(g->chunk, ROW_THREADS) * ROW_THREADS;
    g->nchunks = n > 0 ? ceil_div(n, g->chunk) : 1;
}

// Whether the contiguous-sum kernel takes the reduction: an f32 or f64 sum or mean whose
// inner space is one contiguous run (what the op layer's coalescing makes of a contiguous
// tensor's reduced last axes) in row mode.
static bool fast_sum(const reduce_geom &g, bool columns) {
    return !columns && g.kind == RK_FSUM && (g.op == CT_ROP_SUM || g.op == CT_ROP_MEAN) &&
           (g.in_dtype == CT_F32 || g.in_dtype == CT_F64) && g.inner_ndim == 1 &&
           g.in_inner[0] == ct_cuda_dtype_size(g.in_dtype);
}

// The fast kernel's chunks: one up to FAST_ONE_CHUNK elements, else about FAST_TARGET_BLOCKS
// blocks in all of FAST_MIN_CHUNK elements at least, each a whole number of a block's groups.
static void plan_fast_chunks(reduce_geom *g) {
    int64_t n = g->inner, unit = (int64_t)ROW_THREADS * FAST_GROUP;
    int64_t want = n <= FAST_ONE_CHUNK ? 1 : ceil_div(FAST_TARGET_BLOCKS, g->outer);
    int64_t limit = ceil_div(n, FAST_MIN_CHUNK);
    if (want > limit) want = limit;
    if (want < 1) want = 1;
    g->chunk = n > 0 ? ceil_div(ceil_div(n, want), unit) * unit : unit;
    g->nchunks = n > 0 ? ceil_div(n, g->chunk) : 1;
}

// One pass (kind g->kind) over every output: chunks, then their merge when there are several.
static ct_status run_pass(int device, cudaStream_t stream, const reduce_geom &g, bool columns,
                          const double *means_in, reduce_part *parts, double *means_out) {
    int64_t work = g.outer * g.nchunks;
    if (fast_sum(g, columns)) {
        unsigned grid = (unsigned)(work < MAX_BLOCKS ? work : MAX_BLOCKS);
        if (g.in_dtype == CT_F32)
            sum_contiguous_kernel<float><<<grid, ROW_THREADS, 0, stream>>>(g, parts);
        else
            sum_contiguous_kernel<double><<<grid, ROW_THREADS, 0, stream>>>(g, parts);
    } else if (columns) {
        int64_t blocks = ceil_div(work, COL_THREADS);
        unsigned grid = (unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS);
        reduce_cols_kernel<<<grid, COL_THREADS, 0, stream>>>(g, means_in, parts, means_out);
    } else {
        unsigned grid = (unsigned)(work < MAX_BLOCKS ? work : MAX_BLOCKS);
        reduce_rows_kernel<<<grid, ROW_THREADS, 0, stream>>>(g, means_in, parts, means_out);
    }
    CT_CUDA_CHECK(device, cudaGetLastError());
    if (g.nchunks == 1) return CT_OK;
    int64_t blocks = ceil_div(g.outer, 256);
    unsigned grid = (unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS);
    reduce_merge_kernel<<<grid, 256, 0, stream>>>(g, parts, means_out);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

// The passes of var/std (several chunks per output: the means into `means`, then the
// squared deviations from them; one chunk: fused in one kernel), or the one pass.
static ct_status run_passes(int device, cudaStream_t stream, reduce_geom g, bool columns,
                            reduce_part *parts, double *means) {
    if (!means) return run_pass(device, stream, g, columns, NULL, parts, NULL);
    g.kind = RK_FSUM;
    ct_status status = run_pass(device, stream, g, columns, NULL, parts, means);
    if (status != CT_OK) return status;
    g.kind = RK_SQDEV;
    return run_pass(device, stream, g, columns, means, parts, NULL);
}

} // namespace

extern "C" ct_status ct_cuda_reduce(int device, ct__reduce_op op, const ct__reduce_args *args) {
    reduce_geom g;
    geom_init(&g, op, args);
    if (g.outer == 0) return CT_OK;
    cudaStream_t stream = ct_cuda_stream(device);
    if (!stream) return CT_ERR_BACKEND; // ct_cuda_stream recorded why
    bool columns = use_columns(args, g.outer, g.inner);
    if (fast_sum(g, columns))
        plan_fast_chunks(&g);
    else
        plan_chunks(&g, columns);
    bool two_pass = op == CT_ROP_VAR || op == CT_ROP_STD;
    g.fused = two_pass && g.nchunks == 1;
    size_t parts_bytes = g.nchunks > 1 ? (size_t)(g.outer * g.nchunks) * sizeof(reduce_part) : 0;
    size_t means_bytes = two_pass && !g.fused ? (size_t)g.outer * sizeof(double) : 0;
    char *scratch = NULL;
    if (parts_bytes + means_bytes)
        CT_CUDA_CHECK(device,
                      cudaMallocAsync((void **)&scratch, parts_bytes + means_bytes, stream));
    // The parts come first: sizeof(reduce_part) is a multiple of 8, so the means are aligned.
    reduce_part *parts = parts_bytes ? (reduce_part *)scratch : NULL;
    double *means = means_bytes ? (double *)(scratch + parts_bytes) : NULL;
    ct_status status = run_passes(device, stream, g, columns, parts, means);
    if (scratch) {
        cudaError_t freed = cudaFreeAsync(scratch, stream);
        if (status == CT_OK) CT_CUDA_CHECK(device, freed);
    }
    return status;
}

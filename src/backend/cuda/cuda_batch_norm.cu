// CUDA batch normalisation, forward and backward, with the ReLU that follows it fused when
// args.relu (contracts in backend/norm_args_impl.h).
//
// Each channel is split over several blocks so that a few wide channels fill the GPU: the
// grid is (channel groups) x (splits), a split being a fixed range of the channel's n * inner
// elements, and the number of splits is chosen from the SM count, the blocks an SM holds
// and the channel's size (bn_split_for). A launch computes per-split partial results into a
// workspace; a second kernel merges them, in an order fixed by the split count, in every block that
// needs them (the block's threads take the splits in turn, then merge as in a block reduction).
// There are no floating-point atomics and every sum runs in an order fixed by the shapes and the
// device's SM count, so two runs on one device give the same bits.
//
// Forward (training): bn_stats writes each split's count, mean and sum of squared
// deviations (M2); a thread sums its elements' deviations from the channel's first element
// (and their squares), turns them into its count, mean and M2, and threads, warps and splits
// are merged by Chan, Golub and LeVeque's pairwise update, so no sum of squares cancels
// against a squared sum. bn_apply merges the splits in double, writes mean and invstd (and
// the running statistics) from the first split's blocks, and normalises its range in double,
// as the CPU does. Backward: bn_grad_sums writes each split's sum(g) and sum(g * (x - mean)),
// bn_grad_apply merges them, writes grad_weight and grad_bias from the first split's blocks
// and grad_x over its range. Accumulation is in float for f16 and bf16 data and in double for
// f32 and f64 data.
//
// Layout: element (i, ch, j) of x, y, grad_out and grad_x lies at i * stride_n +
// ch * stride_c + j * stride_inner. Where the channels are innermost (stride_c == 1: NHWC, or
// (n, c) with inner == 1) a warp's 32 lanes take 32 neighbouring channels and the block's
// warps different positions (BN_WIDE), so reads coalesce across channels; otherwise all the
// block's threads take consecutive positions of one channel (BN_NARROW).
//
// The reductions follow the CUDA C++ Programming Guide: warp shuffles (__shfl_down_sync with
// the full mask, every lane of the warp taking part: "Warp Shuffle Functions"), then shared
// memory between the warps with __syncthreads() between the writes and the reads
// ("Shared Memory", "Synchronization Functions").
#include "backend/cuda/cuda_nn_impl.cuh"

namespace {

// Lanes of a warp on different channels: one (positions only) or 32 (channels innermost).
#define BN_NARROW 1
#define BN_WIDE 32
// Elements a thread takes at least before a channel is split once more.
#define BN_MIN_PER_THREAD 8
// At most this many splits per channel (the merge reads each split's partials).
#define BN_MAX_SPLITS 256

// The accumulation type of a storage dtype.
template <ct_dtype DT> struct bn_acc { typedef double type; };
template <> struct bn_acc<CT_F16> { typedef float type; };
template <> struct bn_acc<CT_BF16> { typedef float type; };

// A channel's range per split: count = n * inner elements, split s holds elements
// [s * chunk, min((s + 1) * chunk, count)).
struct bn_split {
    int64_t count, chunk;
    int splits;
};

NN_DEV double param_or(const char *p, int64_t i, ct_dtype dtype, double absent) {
    return p ? nn_load(p, i, dtype) : absent;
}

// Calls f(offset) for the elements e = e0 + first, e0 + first + step, ... below e1 of
// channel ch, the offset being the element's position in the strided (n, c, inner) layout,
// kept by additions: a step moves dq planes and dr positions, and one more plane when the
// position passes the plane's end.
template <typename F>
NN_DEV void bn_visit(const ct__batch_norm_args &a, int64_t ch, int64_t e0, int64_t e1, int first,
                     int step, F f) {
    int64_t e = e0 + first;
    if (e >= e1) return;
    int64_t i = e / a.inner, j = e - i * a.inner;
    const int64_t dq = step / a.inner, dr = step - dq * a.inner;
    const int64_t advance = dq * a.stride_n + dr * a.stride_inner;
    const int64_t wrap = a.stride_n - a.inner * a.stride_inner;
    int64_t at = i * a.stride_n + ch * a.stride_c + j * a.stride_inner;
    for (; e < e1; e += step) {
        f(at);
        at += advance;
        j += dr;
        if (j >= a.inner) {
            j -= a.inner;
            at += wrap;
        }
    }
}

// The count, mean and sum of squared deviations of some elements.
template <typename A> struct bn_moments { A count, mean, m2; };

// Merge b into acc (Chan, Golub, LeVeque); an empty side leaves the other as it is.
template <typename A> NN_DEV void bn_merge(bn_moments<A> &acc, const bn_moments<A> &b) {
    if (b.count == A(0)) return;
    if (acc.count == A(0)) {
        acc = b;
        return;
    }
    A total = acc.count + b.count, delta = b.mean - acc.mean, f = b.count / total;
    acc.mean += delta * f;
    acc.m2 += b.m2 + delta * delta * (acc.count * f);
    acc.count = total;
}

// The merge of the moments of the block's threads that share a channel (threadIdx.x % CL),
// valid in threads threadIdx.x < CL: lanes first (shuffles down to CL apart), then the warps
// in order through shared memory (NN_THREADS / 32 * CL entries). Every thread calls it.
template <typename A, int CL>
NN_DEV bn_moments<A> bn_block_moments(bn_moments<A> m, bn_moments<A> *shared) {
    for (int o = 16; o >= CL; o >>= 1) {
        bn_moments<A> other = {__shfl_down_sync(0xffffffffu, m.count, o),
                               __shfl_down_sync(0xffffffffu, m.mean, o),
                               __shfl_down_sync(0xffffffffu, m.m2, o)};
        bn_merge(m, other);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (lane < CL) shared[warp * CL + lane] = m;
    __syncthreads();
    if (threadIdx.x < CL) {
        m = shared[threadIdx.x];
        for (int w = 1; w < warps; w++) bn_merge(m, shared[w * CL + threadIdx.x]);
    }
    return m;
}

// The same for a pair of sums.
template <typename A> struct bn_pair { A a, b; };

template <typename A, int CL> NN_DEV bn_pair<A> bn_block_pair(bn_pair<A> p, bn_pair<A> *shared) {
    for (int o = 16; o >= CL; o >>= 1) {
        p.a += __shfl_down_sync(0xffffffffu, p.a, o);
        p.b += __shfl_down_sync(0xffffffffu, p.b, o);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (lane < CL) shared[warp * CL + lane] = p;
    __syncthreads();
    if (threadIdx.x < CL) {
        p = shared[threadIdx.x];
        for (int w = 1; w < warps; w++) {
            p.a += shared[w * CL + threadIdx.x].a;
            p.b += shared[w * CL + threadIdx.x].b;
        }
    }
    return p;
}

// This block's channel and range: lanes of the same channel are threadIdx.x % CL apart.
struct bn_place {
    int64_t ch, e0, e1;
    int first, step;
};

template <int CL> NN_DEV bn_place bn_place_of(const bn_split &sp) {
    bn_place p;
    p.ch = (int64_t)blockIdx.x * CL + threadIdx.x % CL;
    p.e0 = (int64_t)blockIdx.y * sp.chunk;
    p.e1 = p.e0 + sp.chunk < sp.count ? p.e0 + sp.chunk : sp.count;
    p.first = (int)(threadIdx.x / CL);
    p.step = (int)(blockDim.x / CL);
    return p;
}

// Forward, training: split blockIdx.y's count, mean and M2 of each of the block's channels
// into ws[3 * (split * c + ch) + {0, 1, 2}].
template <ct_dtype DT, int CL>
__global__ void __launch_bounds__(NN_THREADS)
    bn_stats(ct__batch_norm_args a, bn_split sp, double *ws) {
    typedef typename bn_acc<DT>::type A;
    __shared__ bn_moments<A> shared[NN_THREADS / 32 * CL];
    const bn_place p = bn_place_of<CL>(sp);
    bn_moments<A> m = {A(0), A(0), A(0)};
    if (p.ch < a.c) {
        const A shift = (A)nn_load(a.x, p.ch * a.stride_c, DT); // the channel's first element
        A s1 = A(0), s2 = A(0);
        int64_t n = 0;
        bn_visit(a, p.ch, p.e0, p.e1, p.first, p.step, [&](int64_t at) {
            A d = (A)nn_load(a.x, at, DT) - shift;
            s1 += d;
            s2 += d * d;
            n++;
        });
        if (n > 0) {
            A m2 = s2 - s1 * s1 / (A)n;
            m = {(A)n, shift + s1 / (A)n, m2 > A(0) ? m2 : A(0)};
        }
    }
    m = bn_block_moments<A, CL>(m, shared);
    if (threadIdx.x < CL && p.ch < a.c) {
        double *w = ws + 3 * ((int64_t)blockIdx.y * a.c + p.ch);
        w[0] = (double)m.count;
        w[1] = (double)m.mean;
        w[2] = (double)m.m2;
    }
}

// The moments of the channel over every split, valid in threads threadIdx.x < CL: the
// thread at position p merges splits p, p + step, ... in order, then the block merges its
// threads (bn_block_moments). Every block that asks gets the same bits. Every thread calls it.
template <int CL>
NN_DEV bn_moments<double> bn_split_moments(const ct__batch_norm_args &a, const bn_split &sp,
                                           const double *ws, const bn_place &p,
                                           bn_moments<double> *shared) {
    bn_moments<double> m = {0.0, 0.0, 0.0};
    for (int s = p.first; p.ch < a.c && s < sp.splits; s += p.step) {
        const double *w = ws + 3 * ((int64_t)s * a.c + p.ch);
        bn_merge(m, bn_moments<double>{w[0], w[1], w[2]});
    }
    return bn_block_moments<double, CL>(m, shared);
}

// The channel's mean and invstd: from its moments m (training) or the running statistics;
// the first split's block writes them, and the running statistics.
NN_DEV void bn_channel_stats(const ct__batch_norm_args &a, const bn_split &sp,
                             const bn_moments<double> &m, int64_t ch, double *mean,
                             double *invstd) {
    bool first = blockIdx.y == 0;
    if (a.training) {
        double count = (double)sp.count;
        *mean = m.mean;
        *invstd = 1.0 / sqrt(m.m2 / count + a.eps);
        if (first && a.running_mean) {
            int64_t i = ch * a.running_mean_stride;
            double old = nn_load(a.running_mean, i, a.running_mean_dtype);
            nn_store(a.running_mean, i, a.running_mean_dtype,
                     (1.0 - a.momentum) * old + a.momentum * m.mean);
        }
        if (first && a.running_var) {
            int64_t i = ch * a.running_var_stride;
            double old = nn_load(a.running_var, i, a.running_var_dtype);
            nn_store(a.running_var, i, a.running_var_dtype,
                     (1.0 - a.momentum) * old + a.momentum * m.m2 / (count - 1.0));
        }
    } else {
        *mean = nn_load(a.running_mean, ch * a.running_mean_stride, a.running_mean_dtype);
        double var = nn_load(a.running_var, ch * a.running_var_stride, a.running_var_dtype);
        *invstd = 1.0 / sqrt(var + a.eps);
    }
    if (first) {
        ((double *)a.mean)[ch] = *mean;
        ((double *)a.invstd)[ch] = *invstd;
    }
}

// Forward: y = x * scale + shift over split blockIdx.y of the block's channels, clamped at 0
// as the CPU clamps (f32 after rounding, the other dtypes before) when relu.
template <ct_dtype DT, int CL>
__global__ void __launch_bounds__(NN_THREADS)
    bn_apply(ct__batch_norm_args a, bn_split sp, const double *ws) {
    __shared__ bn_moments<double> merged[NN_THREADS / 32 * CL];
    __shared__ double scale[CL], shift[CL];
    const bn_place p = bn_place_of<CL>(sp);
    bn_moments<double> m = {0.0, 0.0, 0.0};
    if (a.training) m = bn_split_moments<CL>(a, sp, ws, p, merged);
    if (threadIdx.x < CL && p.ch < a.c) {
        double mean, invstd;
        bn_channel_stats(a, sp, m, p.ch, &mean, &invstd);
        double k = invstd * param_or(a.weight, p.ch, DT, 1.0);
        scale[threadIdx.x] = k;
        shift[threadIdx.x] = param_or(a.bias, p.ch, DT, 0.0) - mean * k;
    }
    __syncthreads();
    if (p.ch >= a.c) return;
    const double k = scale[threadIdx.x % CL], b = shift[threadIdx.x % CL];
    bn_visit(a, p.ch, p.e0, p.e1, p.first, p.step, [&](int64_t at) {
        double v = nn_load(a.x, at, DT) * k + b;
        if (a.relu && DT == CT_F32) {
            float f = (float)v;
            ((float *)a.y)[at] = f < 0.0f ? 0.0f : f;
        } else {
            nn_store(a.y, at, DT, a.relu && v < 0.0 ? 0.0 : v);
        }
    });
}

// The incoming gradient at `at`: grad_out, or 0 where the fused ReLU's output is not positive.
template <ct_dtype DT> NN_DEV double bn_grad(const ct__batch_norm_args &a, int64_t at) {
    double g = nn_load(a.grad_out, at, DT);
    return a.relu && !(nn_load(a.y, at, DT) > 0.0) ? 0.0 : g;
}

// Backward: split blockIdx.y's sum(g) and sum(g * (x - mean)) of each of the block's
// channels into ws[2 * (split * c + ch) + {0, 1}].
template <ct_dtype DT, int CL>
__global__ void __launch_bounds__(NN_THREADS)
    bn_grad_sums(ct__batch_norm_args a, bn_split sp, double *ws) {
    typedef typename bn_acc<DT>::type A;
    __shared__ bn_pair<A> shared[NN_THREADS / 32 * CL];
    const bn_place p = bn_place_of<CL>(sp);
    bn_pair<A> s = {A(0), A(0)};
    if (p.ch < a.c) {
        const A mean = (A)((const double *)a.mean)[p.ch];
        bn_visit(a, p.ch, p.e0, p.e1, p.first, p.step, [&](int64_t at) {
            A g = (A)bn_grad<DT>(a, at);
            s.a += g;
            s.b += g * ((A)nn_load(a.x, at, DT) - mean);
        });
    }
    s = bn_block_pair<A, CL>(s, shared);
    if (threadIdx.x < CL && p.ch < a.c) {
        double *w = ws + 2 * ((int64_t)blockIdx.y * a.c + p.ch);
        w[0] = (double)s.a;
        w[1] = (double)s.b;
    }
}

// Training: dx = w * invstd * (g - mean(g) - (x - mean) * invstd^2 * mean(g * (x - mean)));
// evaluation: dx = g * w * invstd. dw = sum(g * xhat), db = sum(g), written by the first
// split's blocks; ws is NULL where neither the sums nor dw and db are needed.
template <ct_dtype DT, int CL>
__global__ void __launch_bounds__(NN_THREADS)
    bn_grad_apply(ct__batch_norm_args a, bn_split sp, const double *ws) {
    __shared__ bn_pair<double> merged[NN_THREADS / 32 * CL];
    __shared__ double coef[4][CL];
    const bn_place p = bn_place_of<CL>(sp);
    // The splits' sums: the thread at position p adds splits p, p + step, ... in order, then
    // the block adds its threads (bn_block_pair), the same bits in every block.
    bn_pair<double> sums = {0.0, 0.0};
    if (ws) {
        for (int s = p.first; p.ch < a.c && s < sp.splits; s += p.step) {
            sums.a += ws[2 * ((int64_t)s * a.c + p.ch)];
            sums.b += ws[2 * ((int64_t)s * a.c + p.ch) + 1];
        }
        sums = bn_block_pair<double, CL>(sums, merged);
    }
    if (threadIdx.x < CL && p.ch < a.c) {
        const double mean = ((const double *)a.mean)[p.ch];
        const double invstd = ((const double *)a.invstd)[p.ch];
        const double sum_g = sums.a, sum_gd = sums.b, count = (double)sp.count;
        if (blockIdx.y == 0 && a.grad_weight) nn_store(a.grad_weight, p.ch, DT, sum_gd * invstd);
        if (blockIdx.y == 0 && a.grad_bias) nn_store(a.grad_bias, p.ch, DT, sum_g);
        coef[0][threadIdx.x] = mean;
        coef[1][threadIdx.x] = param_or(a.weight, p.ch, DT, 1.0) * invstd;
        coef[2][threadIdx.x] = a.training ? sum_g / count : 0.0;
        coef[3][threadIdx.x] = a.training ? sum_gd * invstd * invstd / count : 0.0;
    }
    __syncthreads();
    if (!a.grad_x || p.ch >= a.c) return;
    const int l = threadIdx.x % CL;
    const double mean = coef[0][l], k = coef[1][l], mean_g = coef[2][l], slope = coef[3][l];
    bn_visit(a, p.ch, p.e0, p.e1, p.first, p.step, [&](int64_t at) {
        double d = nn_load(a.x, at, DT) - mean;
        nn_store(a.grad_x, at, DT, k * (bn_grad<DT>(a, at) - mean_g - d * slope));
    });
}

// The lanes per channel of a layout (BN_WIDE where the channels are innermost).
int bn_lanes(const ct__batch_norm_args *a) {
    return a->stride_c == 1 && a->c > 1 ? BN_WIDE : BN_NARROW;
}

// Splits per channel: enough blocks that every SM holds as many as it can of the launch's
// kernels k1 and k2 at once (the fewer of the two), but no split under BN_MIN_PER_THREAD
// elements a thread, and at most BN_MAX_SPLITS. The device must be current.
template <typename K1, typename K2>
ct_status bn_split_for(int device, const ct__batch_norm_args *a, int lanes, K1 k1, K2 k2,
                       bn_split *sp) {
    int sms = 0, fit1 = 0, fit2 = 0;
    CT_CUDA_CHECK(device, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CT_CUDA_CHECK(device, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit1, k1, NN_THREADS, 0));
    CT_CUDA_CHECK(device, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit2, k2, NN_THREADS, 0));
    int per_sm = fit1 < fit2 ? fit1 : fit2;
    int64_t groups = (a->c + lanes - 1) / lanes, per_block = NN_THREADS / lanes;
    int64_t target = (int64_t)sms * (per_sm > 0 ? per_sm : 1);
    int64_t splits = (target + groups - 1) / groups;
    int64_t count = a->n * a->inner, most = count / (per_block * BN_MIN_PER_THREAD);
    if (splits > most) splits = most;
    if (splits > BN_MAX_SPLITS) splits = BN_MAX_SPLITS;
    if (splits < 1) splits = 1;
    sp->count = count;
    sp->splits = (int)splits;
    sp->chunk = (count + splits - 1) / splits;
    return CT_OK;
}

// The grid of a launch over the channel groups and `splits` splits.
dim3 bn_grid(const ct__batch_norm_args *a, int lanes, int splits) {
    return dim3((unsigned)((a->c + lanes - 1) / lanes), (unsigned)splits);
}

// A workspace of `per_split` doubles a channel and split on the stream (NULL for none).
ct_status bn_workspace(int device, cudaStream_t stream, const ct__batch_norm_args &a,
                       const bn_split &sp, int per_split, double **ws) {
    *ws = NULL;
    size_t n = (size_t)per_split * (size_t)sp.splits * (size_t)a.c;
    if (n > 0) CT_CUDA_CHECK(device, cudaMallocAsync((void **)ws, sizeof(double) * n, stream));
    return CT_OK;
}

// Frees ws (NULL: nothing) on the stream, after the launches queued before; status, else
// the free's failure.
ct_status bn_workspace_free(int device, cudaStream_t stream, double *ws, ct_status status) {
    if (!ws) return status;
    cudaError_t freed = cudaFreeAsync(ws, stream);
    if (status == CT_OK) CT_CUDA_CHECK(device, freed);
    return status;
}

template <ct_dtype DT, int CL>
ct_status bn_forward_kernels(int device, cudaStream_t stream, const ct__batch_norm_args &a,
                             const bn_split &sp, double *ws) {
    if (a.training) {
        bn_stats<DT, CL><<<bn_grid(&a, CL, sp.splits), NN_THREADS, 0, stream>>>(a, sp, ws);
        CT_CUDA_CHECK(device, cudaGetLastError());
    }
    bn_apply<DT, CL><<<bn_grid(&a, CL, sp.splits), NN_THREADS, 0, stream>>>(a, sp, ws);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

// Without grad_x only the first split's blocks of bn_grad_apply have work (dw and db).
template <ct_dtype DT, int CL>
ct_status bn_backward_kernels(int device, cudaStream_t stream, const ct__batch_norm_args &a,
                              const bn_split &sp, double *ws) {
    if (ws) {
        bn_grad_sums<DT, CL><<<bn_grid(&a, CL, sp.splits), NN_THREADS, 0, stream>>>(a, sp, ws);
        CT_CUDA_CHECK(device, cudaGetLastError());
    }
    dim3 grid = bn_grid(&a, CL, a.grad_x ? sp.splits : 1);
    bn_grad_apply<DT, CL><<<grid, NN_THREADS, 0, stream>>>(a, sp, ws);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

// Sizes the splits for the kernels, takes the workspace (training: 3 doubles a channel and
// split), launches, and frees it on the stream.
template <ct_dtype DT, int CL>
ct_status bn_forward_launch(int device, cudaStream_t stream, const ct__batch_norm_args &a) {
    bn_split sp;
    double *ws = NULL;
    ct_status status = bn_split_for(device, &a, CL, bn_stats<DT, CL>, bn_apply<DT, CL>, &sp);
    if (status == CT_OK) status = bn_workspace(device, stream, a, sp, a.training ? 3 : 0, &ws);
    if (status == CT_OK) status = bn_forward_kernels<DT, CL>(device, stream, a, sp, ws);
    return bn_workspace_free(device, stream, ws, status);
}

// Likewise for the backward: 2 doubles a channel and split where the sums are needed (in
// training, and for dw and db).
template <ct_dtype DT, int CL>
ct_status bn_backward_launch(int device, cudaStream_t stream, const ct__batch_norm_args &a) {
    bn_split sp;
    double *ws = NULL;
    bool sums = a.training || a.grad_weight || a.grad_bias;
    ct_status status =
        bn_split_for(device, &a, CL, bn_grad_sums<DT, CL>, bn_grad_apply<DT, CL>, &sp);
    if (status == CT_OK) status = bn_workspace(device, stream, a, sp, sums ? 2 : 0, &ws);
    if (status == CT_OK) status = bn_backward_kernels<DT, CL>(device, stream, a, sp, ws);
    return bn_workspace_free(device, stream, ws, status);
}

typedef ct_status (*bn_launch_fn)(int, cudaStream_t, const ct__batch_norm_args &);

// NAME_pick: NAME's instance for a dtype and lane count (NULL for a dtype batch norm does
// not take).
#define BN_PICK(name)                                                                              \
    bn_launch_fn name##_pick(ct_dtype dtype, int lanes) {                                          \
        bool wide = lanes == BN_WIDE;                                                              \
        switch (dtype) {                                                                           \
        case CT_F32: return wide ? name<CT_F32, BN_WIDE> : name<CT_F32, BN_NARROW>;                \
        case CT_F64: return wide ? name<CT_F64, BN_WIDE> : name<CT_F64, BN_NARROW>;                \
        case CT_F16: return wide ? name<CT_F16, BN_WIDE> : name<CT_F16, BN_NARROW>;                \
        case CT_BF16: return wide ? name<CT_BF16, BN_WIDE> : name<CT_BF16, BN_NARROW>;             \
        default: return NULL;                                                                      \
        }                                                                                          \
    }
BN_PICK(bn_forward_launch)
BN_PICK(bn_backward_launch)
#undef BN_PICK

// Runs launch over args on the device's stream (which makes the device current).
ct_status bn_run(int device, const ct__batch_norm_args *args, bn_launch_fn launch) {
    if (!launch)
        return ct_cuda_fail(CT_ERR_DTYPE,
                            "ct_batch_norm: the kernels on cuda:%d take f16, bf16, f32 and f64, "
                            "not dtype %d",
                            device, (int)args->dtype);
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    return status == CT_OK ? launch(device, stream, *args) : status;
}

} // namespace

// The kernels index x, y, grad_out and grad_x through the strides, so channels-last arguments
// (strides (inner * c, 1, c), BN_WIDE) run as they are, for every dtype the kernels take.
extern "C" bool ct_cuda_batch_norm_channels_last(int device, const ct__batch_norm_args *args) {
    (void)device, (void)args;
    return true;
}

extern "C" ct_status ct_cuda_batch_norm(int device, const ct__batch_norm_args *args) {
    if (args->c == 0) return CT_OK;
    return bn_run(device, args, bn_forward_launch_pick(args->dtype, bn_lanes(args)));
}

extern "C" ct_status ct_cuda_batch_norm_backward(int device, const ct__batch_norm_args *args) {
    if (args->c == 0) return CT_OK;
    return bn_run(device, args, bn_backward_launch_pick(args->dtype, bn_lanes(args)));
}

/* CUDA unary kernels: out = op(in) for the ops of op_list.h and clamp, with the semantics of
 * the CPU kernels (cpu_unary.c).
 *
 * The compute domain is picked as on the CPU: FLOAT ops compute in float (double for f64);
 * SAME ops in the compute dtype's domain (int32 for i32, u8 and bool; int64 for i64);
 * logical_not tests its input in double and writes bool. Contiguous float32 in and out takes
 * a kernel per op with float4 loads and stores (when aligned); everything else runs the
 * generic strided kernel of its domain, which converts on load and store.
 *
 * Semantics: sign, relu and clamp keep NaN (comparisons, no fmin/fmax); round is half to
 * even; gelu is the erf form, computed as x/2 erfc(-x/sqrt 2) as on the CPU; integer
 * negation wraps (through the unsigned type). Transcendental functions are CUDA's libm,
 * within a few ulp of the CPU's but not always bit-identical. */
#include "backend/cpu/cpu_math_impl.h"
#include "backend/cuda/cuda_ew_impl.cuh"

enum { KIND_FLOAT, KIND_SAME, KIND_BOOL };

static const unsigned char op_kind[CT_UOP_COUNT] = {
#define CT_UNARY_KIND_(name, NAME, kind) KIND_##kind,
    CT_UNARY_OPS(CT_UNARY_KIND_)
#undef CT_UNARY_KIND_
        KIND_SAME, /* clamp */
};

/* float32 exp and sigmoid are the CPU's own algorithm (cpu_math_impl.h: within 1.1 ulp,
 * IEEE results at the edges), so they agree with the CPU bit for bit: exp with fused
 * multiply-adds, as the CPU computes it on FMA processors; sigmoid with separately rounded
 * ones (__fmul_rn and __fadd_rn, which nvcc does not fuse), as the CPU always computes it. */
#define CT_EW_MADD_RN(a, b, c) __fadd_rn(__fmul_rn(a, b), c)
CT_EW_DEV float exp_f32(float x){CT_EXPF_BODY(x, fmaf)} CT_EW_DEV
    float exp_f32_rn(float x){CT_EXPF_BODY(x, CT_EW_MADD_RN)} CT_EW_DEV float sigmoid_f32(float x) {
    return 1.0f / (1.0f + exp_f32_rn(-x));
}
CT_EW_DEV double sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }

/* op(x) in float or double; lo and hi are clamp's bounds. Integer results of floor, ceil
 * and round never reach here (integers keep their value in their own domain). */
#define DEFINE_FLOAT_UNARY(T, SUF, EXP, SIGMOID)                                                   \
    CT_EW_DEV T unary_value(int op, T x, T lo, T hi) {                                             \
        const T zero = 0, one = 1;                                                                 \
        switch (op) {                                                                              \
        case CT_UOP_NEG: return -x;                                                                \
        case CT_UOP_ABS: return fabs##SUF(x);                                                      \
        case CT_UOP_SIGN: return x > zero ? one : (x < zero ? -one : x);                           \
        case CT_UOP_SQRT: return sqrt##SUF(x);                                                     \
        case CT_UOP_RSQRT: return one / sqrt##SUF(x);                                              \
        case CT_UOP_EXP: return EXP(x);                                                            \
        case CT_UOP_EXPM1: return expm1##SUF(x);                                                   \
        case CT_UOP_LOG: return log##SUF(x);                                                       \
        case CT_UOP_LOG1P: return log1p##SUF(x);                                                   \
        case CT_UOP_SIN: return sin##SUF(x);                                                       \
        case CT_UOP_COS: return cos##SUF(x);                                                       \
        case CT_UOP_TANH: return tanh##SUF(x);                                                     \
        case CT_UOP_SIGMOID: return SIGMOID(x);                                                    \
        case CT_UOP_RELU: return x < zero ? zero : x;                                              \
        case CT_UOP_GELU: return (T)0.5 * x * erfc##SUF(-x * (T)0.70710678118654752440);           \
        case CT_UOP_ERF: return erf##SUF(x);                                                       \
        case CT_UOP_FLOOR: return floor##SUF(x);                                                   \
        case CT_UOP_CEIL: return ceil##SUF(x);                                                     \
        case CT_UOP_ROUND: return nearbyint##SUF(x); /* half to even */                            \
        case CT_UOP_CLAMP: {                                                                       \
            T t = x < lo ? lo : x;                                                                 \
            return t > hi ? hi : t;                                                                \
        }                                                                                          \
        default: return x; /* logical_not has its own kernel */                                    \
        }                                                                                          \
    }
DEFINE_FLOAT_UNARY(float, f, exp_f32, sigmoid_f32)
DEFINE_FLOAT_UNARY(double, , exp, sigmoid_f64)

/* Integers wrap: negation goes through the unsigned type UT. floor, ceil and round of an
 * integer are the integer. */
template <typename T, typename UT> CT_EW_DEV T int_unary(int op, T x, T lo, T hi) {
    switch (op) {
    case CT_UOP_NEG: return (T)((UT)0 - (UT)x);
    case CT_UOP_ABS: return x < 0 ? (T)((UT)0 - (UT)x) : x;
    case CT_UOP_SIGN: return (T)((x > 0) - (x < 0));
    case CT_UOP_RELU: return x < 0 ? (T)0 : x;
    case CT_UOP_CLAMP: {
        T t = x < lo ? lo : x;
        return t > hi ? hi : t;
    }
    default: return x;
    }
}

CT_EW_DEV int32_t unary_value(int op, int32_t x, int32_t lo, int32_t hi) {
    return int_unary<int32_t, uint32_t>(op, x, lo, hi);
}

CT_EW_DEV int64_t unary_value(int op, int64_t x, int64_t lo, int64_t hi) {
    return int_unary<int64_t, uint64_t>(op, x, lo, hi);
}

/* Contiguous float32: o[i] = OP(x[i]) for i < n, four at a time when vec (o and x 16-byte
 * aligned), the tail of up to three elements by the first threads. */
template <int OP>
CT_EW_DEV void unary_f32_run(float *__restrict__ o, const float *__restrict__ x, int64_t n,
                             float lo, float hi, bool vec) {
    int64_t tail = 0;
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        float4 *o4 = reinterpret_cast<float4 *>(o);
        CT_EW_LOOP(i, n / 4) {
            float4 v = x4[i];
            o4[i] = make_float4(unary_value(OP, v.x, lo, hi), unary_value(OP, v.y, lo, hi),
                                unary_value(OP, v.z, lo, hi), unary_value(OP, v.w, lo, hi));
        }
        tail = n / 4 * 4;
    }
    CT_EW_LOOP(j, n - tail) {
        int64_t i = tail + j;
        o[i] = unary_value(OP, x[i], lo, hi);
    }
}

/* One kernel for every float-valued op (logical_not has its own): the switch sits outside
 * the loops, so each op's loop is compiled for that op alone. */
#define CT_F32_CASE_(NAME)                                                                         \
    case CT_UOP_##NAME:                                                                            \
        unary_f32_run<CT_UOP_##NAME>(o, x, n, lo, hi, vec);                                        \
        break;
#define CT_F32_CASE_FLOAT(NAME) CT_F32_CASE_(NAME)
#define CT_F32_CASE_SAME(NAME) CT_F32_CASE_(NAME)
#define CT_F32_CASE_BOOL(NAME)
#define CT_F32_CASE_KIND_(name, NAME, kind) CT_F32_CASE_##kind(NAME)
static __global__ void unary_f32_contiguous(float *__restrict__ o, const float *__restrict__ x,
                                            int64_t n, int op, float lo, float hi, bool vec) {
    switch (op) {
        CT_UNARY_OPS(CT_F32_CASE_KIND_)
        CT_F32_CASE_(CLAMP)
    default: break;
    }
}
#undef CT_F32_CASE_KIND_
#undef CT_F32_CASE_BOOL
#undef CT_F32_CASE_SAME
#undef CT_F32_CASE_FLOAT
#undef CT_F32_CASE_

/* Any layout and dtypes, computing in domain T. */
template <typename T, typename I>
static __global__ void unary_strided(const __grid_constant__ ct_ew_args a, int op, T lo, T hi) {
    CT_EW_LOOP(i, a.numel) {
        int64_t off[2];
        ct_ew_offsets<2>(a, (I)i, off);
        T x = ct_ew_domain<T>::load(a.data[1] + off[1], a.dtype[1]);
        ct_ew_domain<T>::store(a.data[0] + off[0], a.dtype[0], unary_value(op, x, lo, hi));
    }
}

/* logical_not: the input is zero-tested in double (exact for every dtype); out is bool. */
template <typename I>
static __global__ void logical_not_strided(const __grid_constant__ ct_ew_args a) {
    CT_EW_LOOP(i, a.numel) {
        int64_t off[2];
        ct_ew_offsets<2>(a, (I)i, off);
        *(uint8_t *)(a.data[0] + off[0]) = ct_cuda_load_f64(a.data[1] + off[1], a.dtype[1]) == 0.0;
    }
}

/* ---- launchers ---- */

template <typename T>
static ct_status launch_strided(int device, cudaStream_t stream, const ct_ew_args &a, int op, T lo,
                                T hi) {
    unsigned blocks = ct_ew_blocks(a.numel);
    if (ct_ew_small(&a))
        unary_strided<T, uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, op, lo, hi);
    else
        unary_strided<T, uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, op, lo, hi);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

static ct_status launch_logical_not(int device, cudaStream_t stream, const ct_ew_args &a) {
    unsigned blocks = ct_ew_blocks(a.numel);
    if (ct_ew_small(&a))
        logical_not_strided<uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a);
    else
        logical_not_strided<uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

/* Whether a (byte strides) is float32 in and out, both contiguous. */
static bool contiguous_f32(const ct_ew_args &a) {
    return a.ndim == 1 && a.dtype[0] == CT_F32 && a.dtype[1] == CT_F32 && a.strides[0][0] == 4 &&
           a.strides[1][0] == 4;
}

static ct_status launch_f32(int device, cudaStream_t stream, const ct_ew_args &a, int op, double p0,
                            double p1) {
    if (contiguous_f32(a)) {
        bool vec = ((uintptr_t)a.data[0] % 16 == 0) && ((uintptr_t)a.data[1] % 16 == 0);
        unsigned blocks = ct_ew_blocks(vec ? (a.numel + 3) / 4 : a.numel);
        unary_f32_contiguous<<<blocks, CT_EW_THREADS, 0, stream>>>(
            (float *)a.data[0], (const float *)a.data[1], a.numel, op, (float)p0, (float)p1, vec);
        CT_CUDA_CHECK(device, cudaGetLastError());
        return CT_OK;
    }
    return launch_strided<float>(device, stream, a, op, (float)p0, (float)p1);
}

/* Clamp's bounds in an integer domain: the integers inside [p0, p1] (the op layer has
 * saturated the bounds to the dtype's range), converted as the CPU does. */
template <typename T>
static ct_status launch_int(int device, cudaStream_t stream, const ct_ew_args &a, int op, double p0,
                            double p1) {
    T lo = (T)ct__f64_to_i64(ceil(p0)), hi = (T)ct__f64_to_i64(floor(p1));
    return launch_strided<T>(device, stream, a, op, lo, hi);
}

extern "C" ct_status ct_cuda_unary(int device, ct_unary_op op, const ct_ew_args *args, double p0,
                                   double p1) {
    if ((unsigned)op >= CT_UOP_COUNT)
        return ct_cuda_fail(CT_ERR_INVALID_ARG, "cuda unary kernel: unknown op %d", (int)op);
    if (args->numel <= 0) return CT_OK;
    cudaStream_t stream;
    ct_ew_args a;
    ct_status status = ct_ew_begin(device, args, &stream, &a);
    if (status != CT_OK) return status;
    ct_dtype compute = args->compute_dtype;
    if (op_kind[op] == KIND_BOOL) return launch_logical_not(device, stream, a);
    if (compute == CT_F64) return launch_strided<double>(device, stream, a, op, p0, p1);
    if (op_kind[op] == KIND_FLOAT || ct__is_float(compute))
        return launch_f32(device, stream, a, op, p0, p1);
    if (compute == CT_I64) return launch_int<int64_t>(device, stream, a, op, p0, p1);
    return launch_int<int32_t>(device, stream, a, op, p0, p1);
}

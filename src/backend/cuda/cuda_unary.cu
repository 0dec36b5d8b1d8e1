/* CUDA unary kernels: out = op(in) for the ops of op_list.h and clamp, with the semantics of
 * the CPU kernels (cpu_unary.c).
 *
 * The compute domain is picked as on the CPU: FLOAT ops compute in float (double for f64);
 * SAME and INT ops in the compute dtype's domain (int32 for i32, u8 and bool; int64 for
 * i64); the predicates test their input in double and write bool. The per-element formulas
 * are ew_formula_impl.h's, shared with the CPU; the switches are generated from op_list.h.
 * Contiguous float32 in and out takes a kernel per op with float4 loads and stores (when aligned);
 * everything else runs the generic strided kernel of its domain, which converts on load and store.
 *
 * Semantics: sign, relu and clamp keep NaN (comparisons, no fmin/fmax); round is half to
 * even; gelu is the erf form, computed as x/2 erfc(-x/sqrt 2) as on the CPU; integer
 * negation wraps (through the unsigned type). Transcendental functions are CUDA's libm,
 * within a few ulp of the CPU's but not always bit-identical; float32 exp and sigmoid are
 * ew_formula_impl.h's own algorithm, the CPU's bits (exp as on FMA processors). */
#include "backend/cuda/cuda_ew_impl.cuh"
#include "backend/ew_cases_impl.h"

enum { KIND_FLOAT, KIND_SAME, KIND_BOOL, KIND_INT };

static const unsigned char op_kind[] = {
#define CT_UNARY_KIND_(name, NAME, kind, grad, autocast) KIND_##kind,
    CT_UNARY_OPS(CT_UNARY_KIND_)
#undef CT_UNARY_KIND_
        KIND_SAME, /* clamp */
};
static_assert(sizeof op_kind == CT_UOP_COUNT, "one kind per unary op");

/* What the case lists of ew_cases_impl.h expand to here. The case of a row in domain S: its formula
 * (ew_formula_impl.h) where the kind computes in S, else nothing (the launcher never runs the op
 * there). */
/* clang-format off */
#define CASE_FORMULA_(name, NAME, S)                                                               \
    case CT_UOP_##NAME: return (ct__ew_##name##_##S)(x);
#define CASE_NONE_(name, NAME, S)                                                                  \
    case CT_UOP_##NAME: break;

/* op(x) in domain S over type T; lo and hi are clamp's bounds. */
#define DEFINE_UNARY_VALUE(T, S, CASES)                                                            \
    CT_EW_DEV T unary_value(int op, T x, T lo, T hi) {                                             \
        switch ((ct__unary_op)op) {                                                                 \
            CT_UNARY_OPS(CASES)                                                                    \
        case CT_UOP_CLAMP: return ct__ew_clamp_##S(x, lo, hi);                                      \
        case CT_UOP_COUNT: break;                                                                  \
        }                                                                                          \
        return x;                                                                                  \
    }
DEFINE_UNARY_VALUE(float, f32, CT_EW_U_CASE_F32)
DEFINE_UNARY_VALUE(double, f64, CT_EW_U_CASE_F64)
DEFINE_UNARY_VALUE(int32_t, i32, CT_EW_U_CASE_I32)
DEFINE_UNARY_VALUE(int64_t, i64, CT_EW_U_CASE_I64)
DEFINE_UNARY_VALUE(uint64_t, u64, CT_EW_U_CASE_U64)
/* clang-format on */

/* The predicates, on the input as double. */
CT_EW_DEV uint8_t test_value(int op, double x) {
    switch ((ct__unary_op)op) {
        CT_UNARY_OPS(CT_EW_U_CASE_TEST)
    case CT_UOP_CLAMP:
    case CT_UOP_COUNT: break;
    }
    return 0;
}

template <int OP> CT_EW_DEV float4 unary_f32x4(float4 v, float lo, float hi) {
    return make_float4(unary_value(OP, v.x, lo, hi), unary_value(OP, v.y, lo, hi),
                       unary_value(OP, v.z, lo, hi), unary_value(OP, v.w, lo, hi));
}

/* Contiguous float32: o[i] = OP(x[i]) for i < n, four at a time when vec (o and x 16-byte
 * aligned), the tail of up to three elements by the first threads. A thread takes two
 * groups of four a grid-stride apart and loads both before computing either, so that twice
 * the bytes are in flight while it computes (the launcher sizes the grid for it). */
template <int OP>
CT_EW_DEV void unary_f32_run(float *__restrict__ o, const float *__restrict__ x, int64_t n,
                             float lo, float hi, bool vec) {
    int64_t tail = 0;
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        float4 *o4 = reinterpret_cast<float4 *>(o);
        int64_t n4 = n / 4, stride = (int64_t)gridDim.x * blockDim.x;
        for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += 2 * stride) {
            bool second = i + stride < n4;
            float4 a = x4[i], b = second ? x4[i + stride] : a;
            o4[i] = unary_f32x4<OP>(a, lo, hi);
            if (second) o4[i + stride] = unary_f32x4<OP>(b, lo, hi);
        }
        tail = n4 * 4;
    }
    CT_EW_LOOP(j, n - tail) {
        int64_t i = tail + j;
        o[i] = unary_value(OP, x[i], lo, hi);
    }
}

/* One kernel for every float-valued op (the predicates have their own): the switch sits
 * outside the loops, so each op's loop is compiled for that op alone. */
/* clang-format off */
#define CT_F32_RUN_(NAME)                                                                          \
    case CT_UOP_##NAME: unary_f32_run<CT_UOP_##NAME>(o, x, n, lo, hi, vec); break;
#define CT_F32_RUN_FLOAT(NAME) CT_F32_RUN_(NAME)
#define CT_F32_RUN_SAME(NAME) CT_F32_RUN_(NAME)
#define CT_F32_RUN_BOOL(NAME) case CT_UOP_##NAME: break;
#define CT_F32_RUN_INT(NAME) case CT_UOP_##NAME: break;
#define CT_F32_RUN_KIND_(name, NAME, kind, grad, autocast) CT_F32_RUN_##kind(NAME)
/* clang-format on */
static __global__ void unary_f32_contiguous(float *__restrict__ o, const float *__restrict__ x,
                                            int64_t n, int op, float lo, float hi, bool vec) {
    switch ((ct__unary_op)op) {
        CT_UNARY_OPS(CT_F32_RUN_KIND_)
        CT_F32_RUN_(CLAMP)
    case CT_UOP_COUNT: break;
    }
}

/* Any layout and dtypes, computing in domain T. */
template <typename T, typename I>
static __global__ void unary_strided(const __grid_constant__ ct__ew_args a, int op, T lo, T hi) {
    CT_EW_LOOP(i, a.numel) {
        int64_t off[2];
        ct_ew_offsets<2>(a, (I)i, off);
        T x = ct_ew_domain<T>::load(a.data[1] + off[1], a.dtype[1]);
        ct_ew_domain<T>::store(a.data[0] + off[0], a.dtype[0], unary_value(op, x, lo, hi));
    }
}

/* The predicates: the input is tested in double (exact for what they test); out is bool. */
template <typename I>
static __global__ void test_strided(const __grid_constant__ ct__ew_args a, int op) {
    CT_EW_LOOP(i, a.numel) {
        int64_t off[2];
        ct_ew_offsets<2>(a, (I)i, off);
        *(uint8_t *)(a.data[0] + off[0]) =
            test_value(op, ct__load_f64(a.data[1] + off[1], a.dtype[1]));
    }
}

/* ---- launchers ---- */

template <typename T>
static ct_status launch_strided(int device, cudaStream_t stream, const ct__ew_args &a, int op, T lo,
                                T hi) {
    unsigned blocks = ct_ew_blocks(a.numel);
    if (ct_ew_small(&a))
        unary_strided<T, uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, op, lo, hi);
    else
        unary_strided<T, uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, op, lo, hi);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

static ct_status launch_test(int device, cudaStream_t stream, const ct__ew_args &a, int op) {
    unsigned blocks = ct_ew_blocks(a.numel);
    if (ct_ew_small(&a))
        test_strided<uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, op);
    else
        test_strided<uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, op);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

/* Whether a (byte strides) is float32 in and out, both contiguous. */
static bool contiguous_f32(const ct__ew_args &a) {
    return a.ndim == 1 && a.dtype[0] == CT_F32 && a.dtype[1] == CT_F32 && a.strides[0][0] == 4 &&
           a.strides[1][0] == 4;
}

static ct_status launch_f32(int device, cudaStream_t stream, const ct__ew_args &a, int op,
                            double p0, double p1) {
    if (contiguous_f32(a)) {
        bool vec = ((uintptr_t)a.data[0] % 16 == 0) && ((uintptr_t)a.data[1] % 16 == 0);
        unsigned blocks = ct_ew_blocks(vec ? (a.numel / 4 + 1) / 2 : a.numel);
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
static ct_status launch_int(int device, cudaStream_t stream, const ct__ew_args &a, int op,
                            double p0, double p1) {
    T lo = (T)ct__f64_to_i64(ceil(p0)), hi = (T)ct__f64_to_i64(floor(p1));
    return launch_strided<T>(device, stream, a, op, lo, hi);
}

extern "C" ct_status ct_cuda_unary(int device, ct__unary_op op, const ct__ew_args *args, double p0,
                                   double p1) {
    if ((unsigned)op >= CT_UOP_COUNT)
        return ct_cuda_fail(CT_ERR_INVALID_ARG, "cuda unary kernel: unknown op %d", (int)op);
    if (args->numel <= 0) return CT_OK;
    cudaStream_t stream;
    ct__ew_args a;
    ct_status status = ct_ew_begin(device, args, &stream, &a);
    if (status != CT_OK) return status;
    ct_dtype compute = args->compute_dtype;
    if (ct__is_complex(args->dtype[1])) return ct_cuda_complex_unary(device, stream, &a, op);
    if (op_kind[op] == KIND_BOOL) return launch_test(device, stream, a, op);
    if (compute == CT_F64) return launch_strided<double>(device, stream, a, op, p0, p1);
    if (op_kind[op] == KIND_FLOAT || ct__is_float(compute))
        return launch_f32(device, stream, a, op, p0, p1);
    if (compute == CT_U64) {
        uint64_t lo = ct__f64_to_u64(ceil(p0)), hi = ct__f64_to_u64(floor(p1));
        return launch_strided<uint64_t>(device, stream, a, op, lo, hi);
    }
    if (compute == CT_I64 || compute == CT_U32)
        return launch_int<int64_t>(device, stream, a, op, p0, p1);
    return launch_int<int32_t>(device, stream, a, op, p0, p1);
}

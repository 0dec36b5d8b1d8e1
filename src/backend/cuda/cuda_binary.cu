/* CUDA binary kernels: out = a op b for the ops of op_list.h, with broadcast (stride 0)
 * operands of any dtypes, with the semantics of the CPU kernels (cpu_binary.c).
 *
 * Domains as on the CPU: arithmetic in the domain of args->compute_dtype (float for f32,
 * f16 and bf16; double for f64; int32 when the compute dtype and both inputs have at most
 * 32 bits, else int64; integer results wrap when stored), true division of integers in
 * float; comparisons in the same domains, writing bool; logical ops test each operand for
 * zero in double. Contiguous float32 arithmetic (each input contiguous or a broadcast
 * scalar) takes a kernel per op with float4 loads and stores when aligned; everything else
 * runs the generic strided kernel of its domain.
 *
 * A scalar operand (ct__ew_scalar) is converted into the compute domain on the host, by the
 * domain's own load, and passed to the kernel by value as a kernel argument (CUDA C++
 * Programming Guide, "Function Parameters": __global__ parameters are passed to the device
 * through constant memory), where it stands for every element of its operand, as a 0-d
 * operand would: no device memory is allocated or filled for it.
 *
 * NumPy semantics: maximum and minimum propagate NaN; remainder has the divisor's sign
 * (Python's %); comparisons with NaN are false except ne. Integer remainder by zero and
 * integer pow with a negative exponent are CT_ERR_INVALID_ARG, as on the CPU: the kernel
 * raises a flag in device memory, which the launcher reads back after synchronising (the
 * only ops here that wait for the device). */
#include "backend/cuda/cuda_ew_impl.cuh"
#include "backend/ew_cases_impl.h"

/* What the case lists of ew_cases_impl.h expand to here. The case of a row in domain S: its formula
 * (ew_formula_impl.h; integer formulas report through err) where the kind computes in S, else
 * nothing (never run there). */
/* clang-format off */
#define CASE_FLOAT_(name, NAME, S)                                                                 \
    case CT_BOP_##NAME: return (ct__ew_##name##_##S)(a, b);
#define CASE_INT_(name, NAME, S)                                                                   \
    case CT_BOP_##NAME: return (ct__ew_##name##_##S)(a, b, err);
#define CASE_NONE_(name, NAME, S)                                                                  \
    case CT_BOP_##NAME: break;

/* a op b in arithmetic domain S over T, for the table's rows and the internal ones. An integer
 * formula's error goes to *flag (device memory) when flag is not NULL; the result is then 0
 * (the op fails as a whole). */
#define DEFINE_ARITH_VALUE(T, S, CASES)                                                            \
    CT_EW_DEV T arith_cases(int op, T a, T b, int *err) {                                          \
        (void)err;                                                                                 \
        switch ((ct__binary_op)op) {                                                                \
            CT_BINARY_OPS(CASES)                                                                   \
            CT_INTERNAL_BINARY_OPS(CASES)                                                          \
        case CT_BOP_COUNT: break;                                                                  \
        }                                                                                          \
        return 0;                                                                                  \
    }                                                                                              \
    CT_EW_DEV T arith_value(int op, T a, T b, int *flag) {                                         \
        int err = CT_EW_OK;                                                                        \
        T r = arith_cases(op, a, b, &err);                                                         \
        if (err != CT_EW_OK && flag) *flag = err;                                                  \
        return err != CT_EW_OK ? (T)0 : r;                                                         \
    }
DEFINE_ARITH_VALUE(float, f32, CT_EW_B_CASE_F32)
DEFINE_ARITH_VALUE(double, f64, CT_EW_B_CASE_F64)
DEFINE_ARITH_VALUE(int32_t, i32, CT_EW_B_CASE_I32)
DEFINE_ARITH_VALUE(int64_t, i64, CT_EW_B_CASE_I64)
DEFINE_ARITH_VALUE(uint64_t, u64, CT_EW_B_CASE_U64)

/* Comparisons and logical ops give 0/1. */
#define DEFINE_COMPARE_VALUE(T, CASES)                                                             \
    CT_EW_DEV uint8_t compare_value(int op, T a, T b) {                                            \
        switch ((ct__binary_op)op) {                                                                \
            CT_BINARY_OPS(CASES)                                                                   \
            CT_INTERNAL_BINARY_OPS(CASES)                                                          \
        case CT_BOP_COUNT: break;                                                                  \
        }                                                                                          \
        return 0;                                                                                  \
    }
DEFINE_COMPARE_VALUE(float, CT_EW_B_CMP_F32)
DEFINE_COMPARE_VALUE(double, CT_EW_B_CMP_F64)
DEFINE_COMPARE_VALUE(int32_t, CT_EW_B_CMP_I32)
DEFINE_COMPARE_VALUE(int64_t, CT_EW_B_CMP_I64)
DEFINE_COMPARE_VALUE(uint64_t, CT_EW_B_CMP_U64)
/* clang-format on */

/* The scalar operand in domain T, converted on the host: operand 1 (a) or 2 (b) of the
 * kernel's ct__ew_args is `value`; 0: there is none. */
template <typename T> struct scalar_in {
    T value;
    int operand;
};

template <typename T> static scalar_in<T> scalar_for(const ct__ew_scalar &s, const ct__ew_args &a) {
    scalar_in<T> in = {T(0), s.operand};
    if (s.operand) in.value = ct_ew_domain<T>::load((const char *)&s.value, a.dtype[s.operand]);
    return in;
}

/* Operand K (1 or 2) at byte offset off[K] in domain T: the scalar when it is operand K. */
template <typename T, int K>
CT_EW_DEV T operand_value(const ct__ew_args &args, const int64_t *off, const scalar_in<T> &s) {
    return s.operand == K ? s.value : ct_ew_domain<T>::load(args.data[K] + off[K], args.dtype[K]);
}

/* Contiguous float32: o[i] = a[i * sa] OP b[i * sb] for i < n, sa and sb 1 or 0 (a broadcast
 * operand, whose one value is a0 or b0); four at a time when vec (o and every stride-1 input
 * 16-byte aligned), the tail of up to three elements by the first threads. */
template <int OP>
CT_EW_DEV void arith_f32_run(float *__restrict__ o, const float *__restrict__ a,
                             const float *__restrict__ b, int64_t n, int64_t sa, int64_t sb,
                             float a0, float b0, bool vec) {
    int64_t tail = 0;
    if (vec) {
        const float4 *a4 = reinterpret_cast<const float4 *>(a);
        const float4 *b4 = reinterpret_cast<const float4 *>(b);
        float4 *o4 = reinterpret_cast<float4 *>(o);
        CT_EW_LOOP(i, n / 4) {
            float4 x = sa ? a4[i] : make_float4(a0, a0, a0, a0);
            float4 y = sb ? b4[i] : make_float4(b0, b0, b0, b0);
            o4[i] = make_float4(arith_value(OP, x.x, y.x, NULL), arith_value(OP, x.y, y.y, NULL),
                                arith_value(OP, x.z, y.z, NULL), arith_value(OP, x.w, y.w, NULL));
        }
        tail = n / 4 * 4;
    }
    CT_EW_LOOP(j, n - tail) {
        int64_t i = tail + j;
        o[i] = arith_value(OP, sa ? a[i] : a0, sb ? b[i] : b0, NULL);
    }
}

/* One kernel for every arithmetic op: the switch sits outside the loops, so each op's loop
 * is compiled for that op alone. */
/* clang-format off */
#define CT_ARITH_RUN_(NAME)                                                                        \
    case CT_BOP_##NAME: arith_f32_run<CT_BOP_##NAME>(o, a, b, n, sa, sb, a0, b0, vec); break;
#define CT_ARITH_RUN_ARITH(NAME) CT_ARITH_RUN_(NAME)
#define CT_ARITH_RUN_FLOAT(NAME) CT_ARITH_RUN_(NAME)
#define CT_ARITH_RUN_COMPARE(NAME) case CT_BOP_##NAME: break;
#define CT_ARITH_RUN_LOGICAL(NAME) case CT_BOP_##NAME: break;
#define CT_ARITH_RUN_INT(NAME) case CT_BOP_##NAME: break;
#define CT_ARITH_RUN_SHIFT(NAME) case CT_BOP_##NAME: break;
#define CT_ARITH_RUN_KIND_(name, NAME, kind, grad, autocast) CT_ARITH_RUN_##kind(NAME)
/* clang-format on */
static __global__ void arith_f32_contiguous(float *__restrict__ o, const float *__restrict__ a,
                                            const float *__restrict__ b, int64_t n, int64_t sa,
                                            int64_t sb, int op, bool vec, scalar_in<float> s) {
    /* A broadcast operand's one value: the scalar, or its element 0. */
    float a0 = sa ? 0.0f : s.operand == 1 ? s.value : a[0];
    float b0 = sb ? 0.0f : s.operand == 2 ? s.value : b[0];
    switch ((ct__binary_op)op) {
        CT_BINARY_OPS(CT_ARITH_RUN_KIND_)
        CT_INTERNAL_BINARY_OPS(CT_ARITH_RUN_KIND_)
    case CT_BOP_COUNT: break;
    }
}

/* Any layout and dtypes, computing in domain T; flag is NULL unless the op can fail. */
template <typename T, typename I>
static __global__ void arith_strided(const __grid_constant__ ct__ew_args args, int op, int *flag,
                                     scalar_in<T> s) {
    CT_EW_LOOP(i, args.numel) {
        int64_t off[3];
        ct_ew_offsets<3>(args, (I)i, off);
        T a = operand_value<T, 1>(args, off, s);
        T b = operand_value<T, 2>(args, off, s);
        ct_ew_domain<T>::store(args.data[0] + off[0], args.dtype[0], arith_value(op, a, b, flag));
    }
}

template <typename T, typename I>
static __global__ void compare_strided(const __grid_constant__ ct__ew_args args, int op,
                                       scalar_in<T> s) {
    CT_EW_LOOP(i, args.numel) {
        int64_t off[3];
        ct_ew_offsets<3>(args, (I)i, off);
        T a = operand_value<T, 1>(args, off, s);
        T b = operand_value<T, 2>(args, off, s);
        *(uint8_t *)(args.data[0] + off[0]) = compare_value(op, a, b);
    }
}

/* ---- launchers ---- */

enum { KIND_ARITH, KIND_FLOAT, KIND_COMPARE, KIND_LOGICAL, KIND_INT, KIND_SHIFT };

static const unsigned char op_kind[] = {
#define CT_BINARY_KIND_(name, NAME, kind, grad, autocast) KIND_##kind,
    CT_BINARY_OPS(CT_BINARY_KIND_) CT_INTERNAL_BINARY_OPS(CT_BINARY_KIND_)
#undef CT_BINARY_KIND_
};
static_assert(sizeof op_kind == CT_BOP_COUNT, "one kind per binary op");

template <typename T>
static ct_status launch_compare(int device, cudaStream_t stream, const ct__ew_args &a, int op,
                                const ct__ew_scalar &scalar) {
    unsigned blocks = ct_ew_blocks(a.numel);
    scalar_in<T> s = scalar_for<T>(scalar, a);
    if (ct_ew_small(&a))
        compare_strided<T, uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, op, s);
    else
        compare_strided<T, uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, op, s);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

template <typename T>
static ct_status launch_arith(int device, cudaStream_t stream, const ct__ew_args &a, int op,
                              const ct__ew_scalar &scalar, int *flag) {
    unsigned blocks = ct_ew_blocks(a.numel);
    scalar_in<T> s = scalar_for<T>(scalar, a);
    if (ct_ew_small(&a))
        arith_strided<T, uint32_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, op, flag, s);
    else
        arith_strided<T, uint64_t><<<blocks, CT_EW_THREADS, 0, stream>>>(a, op, flag, s);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

/* Whether a (byte strides) is float32 throughout with a contiguous output and each input
 * contiguous or a broadcast element. */
static bool contiguous_f32(const ct__ew_args &a) {
    if (a.ndim != 1 || a.strides[0][0] != 4) return false;
    for (int k = 0; k < 3; k++)
        if (a.dtype[k] != CT_F32) return false;
    for (int k = 1; k < 3; k++)
        if (a.strides[k][0] != 4 && a.strides[k][0] != 0) return false;
    return true;
}

static ct_status launch_f32(int device, cudaStream_t stream, const ct__ew_args &a, int op,
                            const ct__ew_scalar &scalar) {
    if (!contiguous_f32(a)) return launch_arith<float>(device, stream, a, op, scalar, NULL);
    bool vec = (uintptr_t)a.data[0] % 16 == 0;
    for (int k = 1; k < 3; k++)
        if (a.strides[k][0] != 0 && (uintptr_t)a.data[k] % 16 != 0) vec = false;
    unsigned blocks = ct_ew_blocks(vec ? (a.numel + 3) / 4 : a.numel);
    arith_f32_contiguous<<<blocks, CT_EW_THREADS, 0, stream>>>(
        (float *)a.data[0], (const float *)a.data[1], (const float *)a.data[2], a.numel,
        a.strides[1][0] / 4, a.strides[2][0] / 4, op, vec, scalar_for<float>(scalar, a));
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

static_assert(sizeof(int) == CT_READBACK_RAISED_FLAG, "the op layer counts this read");

/* Run the integer op with the device flag *flag and read it back into *raised. */
template <typename T>
static ct_status run_flagged(int device, cudaStream_t stream, const ct__ew_args &a, int op,
                             const ct__ew_scalar &scalar, int *flag, int *raised) {
    CT_CUDA_CHECK(device, cudaMemsetAsync(flag, 0, sizeof *flag, stream));
    ct_status status = launch_arith<T>(device, stream, a, op, scalar, flag);
    if (status != CT_OK) return status;
    return ct_cuda_read_back(device, stream, raised, flag, sizeof *raised,
                             "an integer op's check of its operands");
}

/* Integer pow and remainder, which fail on some operands: the flag is a stream-ordered
 * allocation, freed whatever happens. */
template <typename T>
static ct_status launch_checked(int device, cudaStream_t stream, const ct__ew_args &a, int op,
                                const ct__ew_scalar &scalar) {
    int *flag = NULL, raised = 0;
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)&flag, sizeof *flag, stream));
    ct_status status = run_flagged<T>(device, stream, a, op, scalar, flag, &raised);
    cudaError_t freed = cudaFreeAsync(flag, stream);
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, freed);
    if (!raised) return CT_OK;
    return ct_cuda_fail(CT_ERR_INVALID_ARG, "%s: %s", ct__ew_binary_name((ct__binary_op)op),
                        ct__ew_error_text((ct__ew_error)raised));
}

template <typename T>
static ct_status launch_int(int device, cudaStream_t stream, const ct__ew_args &a, int op,
                            const ct__ew_scalar &scalar) {
    if (ct__ew_int_op_can_fail((ct__binary_op)op))
        return launch_checked<T>(device, stream, a, op, scalar);
    return launch_arith<T>(device, stream, a, op, scalar, NULL);
}

extern "C" ct_status ct_cuda_binary(int device, ct__binary_op op, const ct__ew_args *args,
                                    ct__ew_scalar scalar) {
    if ((unsigned)op >= CT_BOP_COUNT)
        return ct_cuda_fail(CT_ERR_INVALID_ARG, "cuda binary kernel: unknown op %d", (int)op);
    if ((unsigned)scalar.operand > 2)
        return ct_cuda_fail(CT_ERR_INVALID_ARG, "cuda binary kernel: no operand %d",
                            scalar.operand);
    if (args->numel <= 0) return CT_OK;
    cudaStream_t stream;
    ct__ew_args a;
    ct_status status = ct_ew_begin(device, args, &stream, &a);
    if (status != CT_OK) return status;
    if (ct__is_complex(args->compute_dtype))
        return ct_cuda_complex_binary(device, stream, &a, op, scalar);
    int domain = ct__binary_domain(args);
    if (op_kind[op] == KIND_LOGICAL) return launch_compare<double>(device, stream, a, op, scalar);
    if (op_kind[op] == KIND_COMPARE) {
        switch (domain) {
        case CT_DOMAIN_F32: return launch_compare<float>(device, stream, a, op, scalar);
        case CT_DOMAIN_F64: return launch_compare<double>(device, stream, a, op, scalar);
        case CT_DOMAIN_I64: return launch_compare<int64_t>(device, stream, a, op, scalar);
        case CT_DOMAIN_U64: return launch_compare<uint64_t>(device, stream, a, op, scalar);
        default: return launch_compare<int32_t>(device, stream, a, op, scalar);
        }
    }
    if (op_kind[op] == KIND_FLOAT && domain >= CT_DOMAIN_I64) domain = CT_DOMAIN_F32;
    switch (domain) {
    case CT_DOMAIN_F32: return launch_f32(device, stream, a, op, scalar);
    case CT_DOMAIN_F64: return launch_arith<double>(device, stream, a, op, scalar, NULL);
    case CT_DOMAIN_I64: return launch_int<int64_t>(device, stream, a, op, scalar);
    case CT_DOMAIN_U64: return launch_int<uint64_t>(device, stream, a, op, scalar);
    default: return launch_int<int32_t>(device, stream, a, op, scalar);
    }
}

/* Block loads and stores with dtype conversion, and streaming copies, for the CPU
 * elementwise kernels (see cpu_ew_impl.h). Each function switches on the dtype once and then
 * runs a plain loop, so the per-element cost is the conversion alone. */
#include <string.h>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "backend/cpu/cpu_ew_impl.h"
#include "core/dtype_impl.h"

/* One loop of a load: v is one source element of type S, expr converts it. Contiguous sources
 * get a loop of their own, which the compiler vectorizes. */
#define LOAD_LOOP(S, expr)                                                                         \
    if (stride == (int64_t)sizeof(S)) {                                                            \
        const S *s = (const S *)src;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                          \
            S v = s[i];                                                                            \
            dst[i] = (expr);                                                                       \
        }                                                                                          \
    } else {                                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                          \
            S v = *(const S *)(src + i * stride);                                                  \
            dst[i] = (expr);                                                                       \
        }                                                                                          \
    }                                                                                              \
    break

/* The load of the remaining dtypes: p is the element, expr converts it. */
#define GENERIC_LOAD(expr)                                                                         \
    for (int64_t i = 0; i < n; i++) {                                                              \
        const char *p = src + i * stride;                                                          \
        dst[i] = (expr);                                                                           \
    }                                                                                              \
    break

/* Contiguous float16 conversions with the F16C instructions (8 at a time; round to nearest
 * even, NaN kept quiet, as ct__f32_to_f16), picked per processor: the portable conversions
 * are branchy and cost ten times more. Return false where the processor lacks F16C. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target("avx,f16c"))) static void f16_to_f32_f16c(float *dst, const uint16_t *src,
                                                                int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++) dst[i] = ct__f16_to_f32(src[i]);
}

__attribute__((target("avx,f16c"))) static void f32_to_f16_f16c(uint16_t *dst, const float *src,
                                                                int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) dst[i] = ct__f32_to_f16(src[i]);
}

static bool f16_load_fast(float *dst, const char *src, int64_t stride, int64_t n) {
    if (stride != 2 || !__builtin_cpu_supports("f16c")) return false;
    f16_to_f32_f16c(dst, (const uint16_t *)src, n);
    return true;
}

static bool f16_store_fast(char *dst, int64_t stride, const float *src, int64_t n) {
    if (stride != 2 || !__builtin_cpu_supports("f16c")) return false;
    f32_to_f16_f16c((uint16_t *)dst, src, n);
    return true;
}
#else
static bool f16_load_fast(float *dst, const char *src, int64_t stride, int64_t n) {
    (void)dst, (void)src, (void)stride, (void)n;
    return false;
}

static bool f16_store_fast(char *dst, int64_t stride, const float *src, int64_t n) {
    (void)dst, (void)src, (void)stride, (void)n;
    return false;
}
#endif

void ct__cpu_load_f32(void *vdst, const char *src, int64_t stride, ct_dtype dtype, int64_t n) {
    float *dst = vdst;
    if (dtype == CT_F16 && f16_load_fast(dst, src, stride, n)) return;
    if (dtype == CT_BF16 && stride == 2) { /* this file is built for the baseline ISA */
        ct__cpu_bf16_to_f32_row(dst, (const uint16_t *)src, n);
        return;
    }
    switch (dtype) {
    case CT_F32: LOAD_LOOP(float, v);
    case CT_F16: LOAD_LOOP(uint16_t, ct__f16_to_f32(v));
    case CT_BF16: LOAD_LOOP(uint16_t, ct__bits_f32((uint32_t)v << 16));
    case CT_I32: LOAD_LOOP(int32_t, (float)v);
    case CT_U8: LOAD_LOOP(uint8_t, (float)v);
    case CT_BOOL: LOAD_LOOP(uint8_t, (float)(v != 0));
    default: GENERIC_LOAD(ct__load_f32(p, dtype));
    }
}

void ct__cpu_load_f64(void *vdst, const char *src, int64_t stride, ct_dtype dtype, int64_t n) {
    double *dst = vdst;
    switch (dtype) {
    case CT_F64: LOAD_LOOP(double, v);
    case CT_F32: LOAD_LOOP(float, v);
    case CT_I32: LOAD_LOOP(int32_t, v);
    case CT_I64: LOAD_LOOP(int64_t, (double)v);
    case CT_U8: LOAD_LOOP(uint8_t, v);
    default: GENERIC_LOAD(ct__load_f64(p, dtype));
    }
}

void ct__cpu_load_i64(void *vdst, const char *src, int64_t stride, ct_dtype dtype, int64_t n) {
    int64_t *dst = vdst;
    switch (dtype) {
    case CT_I64: LOAD_LOOP(int64_t, v);
    case CT_I32: LOAD_LOOP(int32_t, v);
    case CT_U8: LOAD_LOOP(uint8_t, v);
    case CT_BOOL: LOAD_LOOP(uint8_t, v != 0);
    case CT_U32: LOAD_LOOP(uint32_t, v);
    default: GENERIC_LOAD(ct__load_i64(p, dtype));
    }
}

void ct__cpu_load_u64(void *vdst, const char *src, int64_t stride, ct_dtype dtype, int64_t n) {
    uint64_t *dst = vdst;
    switch (dtype) {
    case CT_U64: LOAD_LOOP(uint64_t, v);
    case CT_U32: LOAD_LOOP(uint32_t, v);
    case CT_U8: LOAD_LOOP(uint8_t, v);
    default: GENERIC_LOAD(ct__load_u64(p, dtype));
    }
}

void ct__cpu_load_i32(void *vdst, const char *src, int64_t stride, ct_dtype dtype, int64_t n) {
    int32_t *dst = vdst;
    switch (dtype) {
    case CT_I32: LOAD_LOOP(int32_t, v);
    case CT_U8: LOAD_LOOP(uint8_t, v);
    case CT_BOOL: LOAD_LOOP(uint8_t, v != 0);
    case CT_I8: LOAD_LOOP(int8_t, v);
    case CT_I16: LOAD_LOOP(int16_t, v);
    case CT_U16: LOAD_LOOP(uint16_t, v);
    default: GENERIC_LOAD((int32_t)(uint32_t)(uint64_t)ct__load_i64(p, dtype));
    }
}

/* One loop of a store: expr converts src[i] to the destination type D. Contiguous
 * destinations get a loop of their own, which the compiler vectorizes. */
#define STORE_LOOP(D, expr)                                                                        \
    if (stride == (int64_t)sizeof(D)) {                                                            \
        D *d = (D *)dst;                                                                           \
        for (int64_t i = 0; i < n; i++) d[i] = (expr);                                             \
    } else {                                                                                       \
        for (int64_t i = 0; i < n; i++) *(D *)(dst + i * stride) = (expr);                         \
    }                                                                                              \
    break

/* The store of the remaining dtypes: p is the element, stmt writes src[i] there. */
#define GENERIC_STORE(stmt)                                                                        \
    for (int64_t i = 0; i < n; i++) {                                                              \
        char *p = dst + i * stride;                                                                \
        stmt;                                                                                      \
    }                                                                                              \
    break

void ct__cpu_store_f32(char *dst, int64_t stride, ct_dtype dtype, const void *vsrc, int64_t n) {
    const float *src = vsrc;
    if (dtype == CT_F16 && f16_store_fast(dst, stride, src, n)) return;
    if (dtype == CT_BF16 && stride == 2) {
        ct__cpu_f32_to_bf16_row((uint16_t *)dst, src, n);
        return;
    }
    switch (dtype) {
    case CT_F32: STORE_LOOP(float, src[i]);
    case CT_F16: STORE_LOOP(uint16_t, ct__f32_to_f16(src[i]));
    case CT_BF16: STORE_LOOP(uint16_t, ct__f32_to_bf16(src[i]));
    default: GENERIC_STORE(ct__store_f32(p, dtype, src[i]));
    }
}

void ct__cpu_store_f64(char *dst, int64_t stride, ct_dtype dtype, const void *vsrc, int64_t n) {
    const double *src = vsrc;
    switch (dtype) {
    case CT_F64: STORE_LOOP(double, src[i]);
    default: GENERIC_STORE(ct__store_f64(p, dtype, src[i]));
    }
}

void ct__cpu_store_i64(char *dst, int64_t stride, ct_dtype dtype, const void *vsrc, int64_t n) {
    const int64_t *src = vsrc;
    switch (dtype) {
    case CT_I64: STORE_LOOP(int64_t, src[i]);
    case CT_I32: STORE_LOOP(int32_t, (int32_t)(uint32_t)(uint64_t)src[i]);
    case CT_U8: STORE_LOOP(uint8_t, (uint8_t)(uint64_t)src[i]);
    case CT_BOOL: STORE_LOOP(uint8_t, src[i] != 0);
    case CT_U32: STORE_LOOP(uint32_t, (uint32_t)(uint64_t)src[i]);
    default: GENERIC_STORE(ct__store_i64(p, dtype, src[i]));
    }
}

void ct__cpu_store_u64(char *dst, int64_t stride, ct_dtype dtype, const void *vsrc, int64_t n) {
    const uint64_t *src = vsrc;
    switch (dtype) {
    case CT_U64: STORE_LOOP(uint64_t, src[i]);
    default: GENERIC_STORE(ct__store_u64(p, dtype, src[i]));
    }
}

void ct__cpu_store_i32(char *dst, int64_t stride, ct_dtype dtype, const void *vsrc, int64_t n) {
    const int32_t *src = vsrc;
    switch (dtype) {
    case CT_I32: STORE_LOOP(int32_t, src[i]);
    case CT_U8: STORE_LOOP(uint8_t, (uint8_t)(uint32_t)src[i]);
    case CT_BOOL: STORE_LOOP(uint8_t, src[i] != 0);
    case CT_I8: STORE_LOOP(int8_t, (int8_t)(uint8_t)(uint32_t)src[i]);
    case CT_I16: STORE_LOOP(int16_t, (int16_t)(uint16_t)(uint32_t)src[i]);
    case CT_U16: STORE_LOOP(uint16_t, (uint16_t)(uint32_t)src[i]);
    default: GENERIC_STORE(ct__store_i64(p, dtype, src[i]));
    }
}

void ct__cpu_store_bool(char *dst, int64_t stride, ct_dtype dtype, const void *vsrc, int64_t n) {
    (void)dtype;
    const uint8_t *src = vsrc;
    if (stride == 1) {
        memcpy(dst, src, (size_t)n);
        return;
    }
    for (int64_t i = 0; i < n; i++) dst[i * stride] = (char)src[i];
}

/* A whole cache line a round (four 16-byte streams), then single vectors: the speed of a
 * loop of one 16-byte store depended on where its code fell (docs/PERFORMANCE.md). */
void ct__cpu_stream_copy(void *dst, const void *src, size_t bytes) {
#if defined(__SSE2__)
    if (((uintptr_t)dst & 15u) == 0 && ((uintptr_t)src & 15u) == 0) {
        size_t vectors = bytes / 16, i = 0;
        __m128i *d = dst;
        const __m128i *s = src;
        for (; i + 4 <= vectors; i += 4) {
            __m128i a = _mm_load_si128(s + i), b = _mm_load_si128(s + i + 1);
            __m128i c = _mm_load_si128(s + i + 2), e = _mm_load_si128(s + i + 3);
            _mm_stream_si128(d + i, a);
            _mm_stream_si128(d + i + 1, b);
            _mm_stream_si128(d + i + 2, c);
            _mm_stream_si128(d + i + 3, e);
        }
        for (; i < vectors; i++) _mm_stream_si128(d + i, _mm_load_si128(s + i));
        memcpy((char *)dst + vectors * 16, (const char *)src + vectors * 16, bytes % 16);
        return;
    }
#endif
    memcpy(dst, src, bytes);
}

void ct__cpu_stream_fence(void) {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

bool ct__cpu_should_stream(const ct__ew_args *args) {
    return args->ndim == 1 && args->strides[0][0] == 1 &&
           args->numel * (int64_t)ct__dtype_size(args->dtype[0]) >= CT_CPU_STREAM_BYTES;
}

/* CPU copy (with dtype conversion; complex through complex128), fill and iota kernels. */
#include <string.h>

#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"

typedef struct {
    ct_dtype out_dtype, in_dtype;
} copy_ctx;

/* The casts around mixed precision's products, contiguous rows: loops the compiler
 * vectorises (the same rounding as ct__store_f64's, since an f32 value is exact in f64). */
CT_CPU_CLONES_AVX512 static void f32_to_bf16_row(uint16_t *out, const float *in, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = ct__f32_to_bf16(in[i]);
}

CT_CPU_CLONES_AVX512 static void bf16_to_f32_row(float *out, const uint16_t *in, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = ct__bf16_to_f32(in[i]);
}

/* The same for the elementwise kernels and bf16 pooling: plain functions, since a clone's
 * resolver would be exported from the library. */
void ct__cpu_f32_to_bf16_row(uint16_t *out, const float *in, int64_t n) {
    f32_to_bf16_row(out, in, n);
}

void ct__cpu_bf16_to_f32_row(float *out, const uint16_t *in, int64_t n) {
    bf16_to_f32_row(out, in, n);
}

/* A contiguous f32 <-> bf16 row through the loops above; false for any other row. */
static bool bf16_row(const copy_ctx *c, char *out, const char *in, const int64_t *strides,
                     int64_t n) {
    if (c->out_dtype == CT_BF16 && c->in_dtype == CT_F32 && strides[0] == 2 && strides[1] == 4)
        f32_to_bf16_row((uint16_t *)out, (const float *)in, n);
    else if (c->out_dtype == CT_F32 && c->in_dtype == CT_BF16 && strides[0] == 4 && strides[1] == 2)
        bf16_to_f32_row((float *)out, (const uint16_t *)in, n);
    else
        return false;
    return true;
}

static void copy_row(char *const *ptrs, const int64_t *strides, int64_t n, void *vctx) {
    const copy_ctx *c = vctx;
    char *out = ptrs[0];
    const char *in = ptrs[1];
    size_t size = ct__dtype_size(c->out_dtype);
    if (bf16_row(c, out, in, strides, n)) return;
    if (c->out_dtype == c->in_dtype) {
        if (strides[0] == (int64_t)size && strides[1] == (int64_t)size) {
            memcpy(out, in, (size_t)n * size);
            return;
        }
        for (int64_t i = 0; i < n; i++) memcpy(out + i * strides[0], in + i * strides[1], size);
        return;
    }
    if (ct__is_complex(c->in_dtype)) {
        /* complex64 <-> complex128, part by part (the op layer refuses complex to real) */
        for (int64_t i = 0; i < n; i++)
            ct__store_c128(out + i * strides[0], c->out_dtype,
                           ct__load_c128(in + i * strides[1], c->in_dtype));
        return;
    }
    bool integer_domain = !ct__is_float(c->out_dtype) && !ct__is_float(c->in_dtype);
    if (c->in_dtype == CT_U64) {
        /* uint64 keeps its value above INT64_MAX and rounds once to a float. */
        for (int64_t i = 0; i < n; i++)
            ct__store_u64(out + i * strides[0], c->out_dtype,
                          ct__load_u64(in + i * strides[1], c->in_dtype));
        return;
    }
    if (c->out_dtype == CT_F32 && c->in_dtype != CT_F64 && c->in_dtype != CT_I64) {
        /* Every dtype but f64, i64 and u64 converts to f32 exactly through double (i64
         * would round twice that way: it takes ct__store_i64 below). */
        for (int64_t i = 0; i < n; i++)
            *(float *)(out + i * strides[0]) =
                (float)ct__load_f64(in + i * strides[1], c->in_dtype);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const char *src = in + i * strides[1];
        char *dst = out + i * strides[0];
        if (integer_domain || c->in_dtype == CT_I64)
            ct__store_i64(dst, c->out_dtype, ct__load_i64(src, c->in_dtype));
        else
            ct__store_f64(dst, c->out_dtype, ct__load_f64(src, c->in_dtype));
    }
}

ct_status ct__cpu_copy(int device, const ct__ew_args *args) {
    (void)device;
    copy_ctx ctx = {args->dtype[0], args->dtype[1]};
    ct__cpu_parallel_rows(args, copy_row, &ctx);
    return CT_OK;
}

typedef struct {
    ct_dtype dtype;
    double value;
    _Alignas(16) unsigned char pattern[16];
} fill_ctx;

static void fill_row(char *const *ptrs, const int64_t *strides, int64_t n, void *vctx) {
    const fill_ctx *c = vctx;
    size_t size = ct__dtype_size(c->dtype);
    char *out = ptrs[0];
    if (c->dtype == CT_F32 && strides[0] == 4) {
        float v = (float)c->value;
        float *o = (float *)out;
        for (int64_t i = 0; i < n; i++) o[i] = v;
        return;
    }
    for (int64_t i = 0; i < n; i++) memcpy(out + i * strides[0], c->pattern, size);
}

ct_status ct__cpu_fill(int device, const ct__ew_args *args, double value) {
    (void)device;
    fill_ctx ctx = {args->dtype[0], value, {0}};
    ct__store_f64((char *)ctx.pattern, ctx.dtype, value);
    ct__cpu_parallel_rows(args, fill_row, &ctx);
    return CT_OK;
}

ct_status ct__cpu_iota(int device, const ct__ew_args *args, double start, double step) {
    (void)device;
    /* Small and rare: a sequential walk keeps the linear index simple. */
    int64_t index[CT_MAX_DIMS] = {0};
    size_t size = ct__dtype_size(args->dtype[0]);
    for (int64_t i = 0; i < args->numel; i++) {
        int64_t offset = 0;
        for (int d = 0; d < args->ndim; d++) offset += index[d] * args->strides[0][d];
        ct__store_f64(args->data[0] + offset * (int64_t)size, args->dtype[0],
                      start + (double)i * step);
        for (int d = args->ndim - 1; d >= 0; d--) {
            if (++index[d] < args->shape[d]) break;
            index[d] = 0;
        }
    }
    return CT_OK;
}

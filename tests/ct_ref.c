/* Test reference helpers (see ct_ref.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor_impl.h"
#include "ct_ref.h"

int64_t ref_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

void ref_unravel(int64_t i, int ndim, const int64_t *shape, int64_t *index) {
    for (int d = ndim - 1; d >= 0; d--) {
        index[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
}

int64_t ref_ravel(int ndim, const int64_t *shape, const int64_t *index) {
    int64_t i = 0;
    for (int d = 0; d < ndim; d++) i = i * shape[d] + index[d];
    return i;
}

static void *host_buffer(const double *values, int64_t n, ct_dtype dtype) {
    size_t size = ct_dtype_size(dtype);
    char *buf = calloc((size_t)(n ? n : 1), size);
    for (int64_t i = 0; buf && i < n; i++) ct__store_f64(buf + i * (int64_t)size, dtype, values[i]);
    return buf;
}

ct_tensor *ref_tensor(const double *values, int ndim, const int64_t *shape, ct_dtype dtype,
                      ct_device device) {
    void *buf = host_buffer(values, ref_numel(ndim, shape), dtype);
    ct_tensor *t = buf ? ct_from_data(buf, ndim, shape, dtype, device) : NULL;
    free(buf);
    return t;
}

ct_tensor *ref_tensor_strided(const double *values, int ndim, const int64_t *shape, ct_dtype dtype,
                              ct_device device) {
    if (ndim == 0) return ref_tensor(values, ndim, shape, dtype, device);
    int64_t n = ref_numel(ndim, shape);
    int64_t stored_shape[CT_MAX_DIMS], strides[CT_MAX_DIMS], stored_strides[CT_MAX_DIMS];
    memcpy(stored_shape, shape, sizeof(int64_t) * (size_t)ndim);
    double *stored = calloc((size_t)(2 * n + 1), sizeof(double));
    if (!stored) return NULL;
    if (ndim == 1) {
        stored_shape[0] = 2 * shape[0];
        for (int64_t i = 0; i < n; i++) stored[2 * i] = values[i];
        strides[0] = 2;
    } else {
        stored_shape[0] = shape[1];
        stored_shape[1] = shape[0];
        ct__contiguous_strides(ndim, stored_shape, stored_strides);
        memcpy(strides, stored_strides, sizeof(int64_t) * (size_t)ndim);
        strides[0] = stored_strides[1];
        strides[1] = stored_strides[0];
        int64_t index[CT_MAX_DIMS] = {0};
        for (int64_t i = 0; i < n; i++) {
            int64_t offset = 0;
            for (int d = 0; d < ndim; d++) offset += index[d] * strides[d];
            stored[offset] = values[i];
            for (int d = ndim - 1; d >= 0; d--) {
                if (++index[d] < shape[d]) break;
                index[d] = 0;
            }
        }
    }
    ct_tensor *base = ref_tensor(stored, ndim, stored_shape, dtype, device);
    free(stored);
    if (!base) return NULL;
    ct_tensor *view = ct__tensor_view(base, dtype, ndim, shape, strides, 0);
    ct_release(base);
    return view;
}

/* A complex tensor's values as real numbers: the real parts where the imaginary part is 0,
 * else NaN (so that a check against real references fails). */
static double *read_complex(const ct_tensor *t, int64_t n) {
    ct_tensor *wide = ct_cast(t, CT_C128);
    ct_complex128 *z = wide ? calloc((size_t)(n ? n : 1), sizeof *z) : NULL;
    double *out = z ? calloc((size_t)(n ? n : 1), sizeof(double)) : NULL;
    if (out && ct_copy_to_host(wide, z, (size_t)n * sizeof *z) == CT_OK) {
        for (int64_t i = 0; i < n; i++) out[i] = z[i].im == 0 ? z[i].re : NAN;
    } else {
        free(out);
        out = NULL;
    }
    free(z);
    ct_release(wide);
    return out;
}

double *ref_read(const ct_tensor *t) {
    int64_t n = ct_numel(t);
    if (ct_dtype_is_complex(ct_dtype_of(t))) return read_complex(t, n);
    ct_tensor *as_f64 = ct_cast(t, CT_F64);
    if (!as_f64) return NULL;
    double *out = calloc((size_t)(n ? n : 1), sizeof(double));
    if (out && ct_copy_to_host(as_f64, out, (size_t)n * sizeof(double)) != CT_OK) {
        free(out);
        out = NULL;
    }
    ct_release(as_f64);
    return out;
}

void ref_random(double *out, int64_t n, uint64_t seed, double lo, double hi) {
    uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        out[i] = lo + (hi - lo) * ((double)(z >> 11) * 0x1p-53);
    }
}

double ref_round(double v, ct_dtype dtype) {
    _Alignas(16) char buf[16]; /* the widest element (complex128) */
    ct__store_f64(buf, dtype, v);
    return ct__load_f64(buf, dtype);
}

double ref_tolerance(ct_dtype dtype) {
    switch (dtype) {
    case CT_F64: return 1e-12;
    case CT_F32: return 2e-6;
    case CT_F16: return 2e-3;
    case CT_BF16: return 1.6e-2;
    default: return 0.0;
    }
}

bool ref_close(double actual, double expected, ct_dtype dtype) {
    if (isnan(expected)) return isnan(actual);
    if (isinf(expected)) return actual == expected;
    double tol = ref_tolerance(dtype);
    return fabs(actual - expected) <= tol * (1.0 + fabs(expected));
}

double ref_max_diff(const ct_tensor *a, const ct_tensor *b, double *scale) {
    if (scale) *scale = 0.0;
    if (!a || !b || ct_numel(a) != ct_numel(b)) return INFINITY;
    double *x = ref_read(a), *y = ref_read(b), worst = x && y ? 0.0 : INFINITY;
    for (int64_t i = 0; x && y && i < ct_numel(a); i++) {
        double d = fabs(x[i] - y[i]);
        if (!(d <= worst)) worst = d; /* NaN too */
        if (scale) *scale = fmax(*scale, fabs(y[i]));
    }
    free(x);
    free(y);
    return worst;
}

void ref_pool_window(bool adaptive, int64_t k, int64_t s, int64_t p, int64_t n, int64_t o,
                     int64_t i, int64_t *start, int64_t *end, int64_t *div) {
    if (adaptive) {
        *start = (int64_t)floor((double)(i * n) / (double)o);
        *end = (int64_t)ceil((double)((i + 1) * n) / (double)o);
        *div = *end - *start;
        return;
    }
    if (s == 0) s = k;
    *start = i * s - p;
    *end = *start + k;
    *div = k;
    if (*start < 0) *start = 0;
    if (*end > n) *end = n;
}

void ref_scan(const double *x, int ndim, const int64_t *shape, int axis, bool initial, bool product,
              ct_dtype out, double *expected) {
    int64_t at[CT_MAX_DIMS], oshape[CT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) oshape[d] = shape[d] + (d == axis && initial);
    for (int64_t i = 0; i < ref_numel(ndim, oshape); i++) {
        ref_unravel(i, ndim, oshape, at);
        int64_t upto = at[axis] + (initial ? 0 : 1);
        double acc = product ? 1.0 : 0.0;
        for (int64_t k = 0; k < upto; k++) {
            at[axis] = k;
            double v = x[ref_ravel(ndim, shape, at)];
            acc = product ? acc * v : acc + v;
        }
        expected[i] = ref_round(acc, out);
    }
}

void ref_check_scan(ref_scan_op op, bool product, const double *values, ct_dtype dtype, int case_,
                    ct_device device) {
    static const int64_t shape[3] = {3, 4, 5};
    double expected[4 * 4 * 5];
    ct_dtype want = ct_dtype_is_floating(dtype)   ? dtype
                    : ct_dtype_is_unsigned(dtype) ? CT_U64
                                                  : CT_I64;
    for (int axis = 0; axis < 3; axis++) {
        for (int initial = 0; initial < 2; initial++) {
            bool odd = (axis + initial + case_) % 2;
            ct_tensor *x = (odd ? ref_tensor_strided : ref_tensor)(values, 3, shape, dtype, device);
            ref_scan(values, 3, shape, axis, initial, product, want, expected);
            ct_tensor *y = op(x, axis - (odd ? 3 : 0), CT_CUMSUM_DEFAULT_DTYPE, initial);
            CHECK_TENSOR(y, expected);
            CHECK(ct_dtype_of(y) == want && ct_size(y, axis) == shape[axis] + initial);
            ct_release(y);
            ref_scan(values, 3, shape, axis, initial, product, CT_F64, expected);
            y = op(x, axis, CT_F64, initial);
            CHECK_TENSOR(y, expected);
            CHECK(ct_dtype_of(y) == CT_F64);
            ct_release(y);
            ct_release(x);
            if (ct_test_failed()) return;
        }
    }
}

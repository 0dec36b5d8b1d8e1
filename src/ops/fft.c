/* The discrete Fourier transforms (ctensor/fft.h) over the backends' fft kernel (ct__fft_args,
 * backend_impl.h): each transform runs one axis at a time on rows (the axis moved last, the
 * input made contiguous), the input cropped or zero-padded to its length first (ct_slice and
 * ct_concat). The n-dimensional transforms are
 * one-axis transforms in turn; hfft and ihfft are irfft and rfft of the signal with its
 * indices reversed modulo n (the conjugate, for a real result or a real input).
 *
 * Gradients: the crops, pads, casts and reversals are recorded ops (slice, concat, cast), and
 * each one-axis transform records the adjoint of its linear map (transform_backward), so every
 * transform and its norm, n and axes are differentiable in PyTorch's convention. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctensor/fft.h"
#include "ops/grad_impl.h"
#include "core/dtype_impl.h"
#include "ops/op_impl.h"

/* The precision a dtype's transform runs in: float64 for float64 and complex128, else
 * float32. */
static bool in_f64(ct_dtype d) { return d == CT_F64 || d == CT_C128; }
static ct_dtype complex_for(ct_dtype d) { return in_f64(d) ? CT_C128 : CT_C64; }
static ct_dtype real_for(ct_dtype d) { return in_f64(d) ? CT_F64 : CT_F32; }

static bool norm_ok(const char *op, ct_fft_norm norm) {
    if (norm == CT_FFT_BACKWARD || norm == CT_FFT_ORTHO || norm == CT_FFT_FORWARD) return true;
    ct__error(CT_ERR_INVALID_ARG,
              "%s: norm %d is not CT_FFT_BACKWARD, CT_FFT_ORTHO or CT_FFT_FORWARD", op, (int)norm);
    return false;
}

/* The factor of a transform of n points in the direction `inverse` under norm. */
static double norm_scale(ct_fft_norm norm, bool inverse, int64_t n) {
    if (norm == CT_FFT_ORTHO) return 1.0 / sqrt((double)n);
    bool scaled = inverse ? norm == CT_FFT_BACKWARD : norm == CT_FFT_FORWARD;
    return scaled ? 1.0 / (double)n : 1.0;
}

/* "backward" <-> "forward", for hfft and ihfft (numpy's swap of direction). */
static ct_fft_norm swapped(ct_fft_norm norm) {
    return norm == CT_FFT_BACKWARD  ? CT_FFT_FORWARD
           : norm == CT_FFT_FORWARD ? CT_FFT_BACKWARD
                                    : norm;
}

/* x as dtype: x itself (a new reference) or a cast. */
static ct_tensor *as_dtype(const ct_tensor *x, ct_dtype dtype) {
    return x->dtype == dtype ? ct_retain((ct_tensor *)x) : ct_cast(x, dtype);
}

/* x cropped or padded with zeros to len along axis (x itself when it has that length). */
static ct_tensor *fit(const ct_tensor *x, int axis, int64_t len) {
    int64_t m = x->shape[axis];
    if (m == len) return ct_retain((ct_tensor *)x);
    if (m > len) return ct_slice(x, axis, 0, len, 1);
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] = len - m;
    ct_tensor *zeros = ct__full_on(ct_device_of(x), x->ndim, shape, 0.0, x->dtype);
    const ct_tensor *parts[2] = {x, zeros};
    ct_tensor *out = zeros ? ct_concat(2, parts, axis) : NULL;
    ct_release(zeros);
    return out;
}

/* x with its indices along axis reversed modulo its length: y[j] = x[-j mod m]. */
static ct_tensor *reversed_mod(const ct_tensor *x, int axis) {
    if (x->shape[axis] < 2) return ct_retain((ct_tensor *)x);
    ct_tensor *first = ct_slice(x, axis, 0, 1, 1);
    ct_tensor *rest = ct_slice(x, axis, INT64_MAX, 0, -1);
    const ct_tensor *parts[2] = {first, rest};
    ct_tensor *out = first && rest ? ct_concat(2, parts, axis) : NULL;
    ct_release(first);
    ct_release(rest);
    return out;
}

static ct_tensor *record_transform(ct_tensor *out, const ct_tensor *x, int axis, ct__fft_type type,
                                   int sign, int64_t n, double scale);

/* One transform along axis of x, whose length there is the transform's input's (n, or
 * n/2 + 1 for C2R), of dtype complex (C2C, C2R) or real (R2C) in the transform's precision.
 * The result: complex (C2C, R2C) or real (C2R), a new tensor with x's axes, recorded when x
 * requires grad. */
static ct_tensor *transform(const ct_tensor *x, int axis, ct__fft_type type, int sign, int64_t n,
                            double scale) {
    ct_device device = ct_device_of(x);
    int nd = x->ndim, perm[CT_MAX_DIMS], inverse[CT_MAX_DIMS], k = 0, physical;
    for (int d = 0; d < nd; d++)
        if (d != axis) perm[k++] = d;
    perm[k] = axis;
    for (int d = 0; d < nd; d++) inverse[perm[d]] = d;
    const ct__kernel_table *kernels = ct__kernels(device, &physical);
    if (!kernels) return NULL;
    ct_tensor *plain = ct_detach(x);
    ct_tensor *moved = plain ? ct_permute(plain, nd, perm) : NULL;
    ct_tensor *rows = moved ? ct_contiguous(moved) : NULL;
    ct_release(plain);
    ct_release(moved);
    if (!rows) return NULL;
    int64_t shape[CT_MAX_DIMS], in_count = rows->shape[nd - 1];
    int64_t out_count = type == CT_FFT_TYPE_R2C ? n / 2 + 1 : n;
    memcpy(shape, rows->shape, sizeof shape);
    shape[nd - 1] = out_count;
    ct_dtype out_dtype = type == CT_FFT_TYPE_C2R ? real_for(x->dtype) : complex_for(x->dtype);
    ct_tensor *out = ct__tensor_new(device, out_dtype, nd, shape);
    if (out && rows->numel > 0) {
        ct__fft_args args = {.type = type,
                             .sign = sign,
                             .dtype = real_for(x->dtype),
                             .n = n,
                             .batch = rows->numel / in_count,
                             .in = ct__data(rows),
                             .in_stride = 1,
                             .in_dist = in_count,
                             .out = ct__data(out),
                             .out_stride = 1,
                             .out_dist = out_count,
                             .scale = scale};
        if (kernels->fft(physical, &args) != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(rows);
    ct_tensor *placed = out ? ct_permute(out, nd, inverse) : NULL;
    ct_release(out);
    return ct__grad_needed(1, &x) ? record_transform(placed, x, axis, type, sign, n, scale)
                                  : placed;
}

/* The gradient of a transform's input from g, its result's (PyTorch's convention: the adjoint
 * A^H g of the linear map A, its real part for a real input):
 * - C2C of sign s and scale c: A^H is C2C of sign -s and scale c.
 * - R2C (the first n/2 + 1 rows of a forward C2C of a real x): g padded with zeros to n, C2C
 *   of sign +1, real part.
 * - C2R (from the m = n/2 + 1 bins h, the others being their mirrors conj(h[n - k])): x =
 *   c Re(sum_k w_k h_k e^(2 pi i jk/n)), w_k = 2 for the bins 1 .. n - m that have a mirror
 *   and 1 for the others, so the gradient of h_k is c w_k R2C(g)_k. */
static ct_tensor *transform_gradient(const ct__node *node, const ct_tensor *g) {
    int axis = (int)node->ints[0], sign = (int)node->ints[2];
    ct__fft_type type = (ct__fft_type)node->ints[1];
    int64_t n = node->ints[3], m = n / 2 + 1, doubled = n - m;
    double scale = node->scalars[0];
    if (type == CT_FFT_TYPE_C2C) return transform(g, axis, CT_FFT_TYPE_C2C, -sign, n, scale);
    if (type == CT_FFT_TYPE_R2C) {
        ct_tensor *full = fit(g, axis, n);
        ct_tensor *back = full ? transform(full, axis, CT_FFT_TYPE_C2C, 1, n, scale) : NULL;
        ct_tensor *out = back ? ct_real(back) : NULL;
        ct_release(full);
        ct_release(back);
        return out;
    }
    ct_tensor *bins = transform(g, axis, CT_FFT_TYPE_R2C, -1, n, scale);
    if (!bins || doubled < 1) return bins;
    ct_tensor *first = ct_slice(bins, axis, 0, 1, 1);
    ct_tensor *mirrored = ct_slice(bins, axis, 1, 1 + doubled, 1);
    ct_tensor *twice = mirrored ? ct_mul_scalar(mirrored, 2.0) : NULL;
    ct_tensor *rest = ct_slice(bins, axis, 1 + doubled, m, 1);
    const ct_tensor *parts[3] = {first, twice, rest};
    ct_tensor *out =
        first && twice && rest ? ct_concat(1 + doubled < m ? 3 : 2, parts, axis) : NULL;
    ct_release(bins);
    ct_release(first);
    ct_release(mirrored);
    ct_release(twice);
    ct_release(rest);
    return out;
}

static ct_status transform_backward(ct__node *node, const ct_tensor *g, ct_tensor **grad_in) {
    grad_in[0] = transform_gradient(node, g);
    return grad_in[0] ? CT_OK : ct_last_status();
}

static ct_tensor *record_transform(ct_tensor *out, const ct_tensor *x, int axis, ct__fft_type type,
                                   int sign, int64_t n, double scale) {
    ct__node *node = out ? ct__node_new("ct_fft", transform_backward, 1, &x) : NULL;
    if (node) {
        node->ints[0] = axis;
        node->ints[1] = type;
        node->ints[2] = sign;
        node->ints[3] = n;
        node->scalars[0] = scale;
    }
    return ct__record(out, node);
}

/* The checks every transform makes: x and norm. */
static bool check(const char *op, const ct_tensor *x, ct_fft_norm norm) {
    ct_device device;
    if (!ct__check_args_complex(op, 1, &x, &device) || !norm_ok(op, norm)) return false;
    if (x->ndim == 0) {
        ct__error(CT_ERR_SHAPE, "%s: x is 0-d; a transform needs an axis", op);
        return false;
    }
    return true;
}

static bool length_ok(const char *op, int64_t len, int axis) {
    if (len >= 1) return true;
    ct__error(CT_ERR_INVALID_ARG, "%s: invalid number of data points (%lld) along axis %d", op,
              (long long)len, axis);
    return false;
}

/* x (complex, or taken as complex) fitted to len along axis, transformed C2C. */
static ct_tensor *c2c_step(const char *op, const ct_tensor *x, int axis, int64_t len, int sign,
                           ct_fft_norm norm) {
    ct_tensor *xc = as_dtype(x, complex_for(x->dtype));
    ct_tensor *fitted = xc ? fit(xc, axis, len) : NULL;
    ct_tensor *out = fitted ? transform(fitted, axis, CT_FFT_TYPE_C2C, sign, len,
                                        norm_scale(norm, sign > 0, len))
                            : NULL;
    ct_release(xc);
    ct_release(fitted);
    return out;
}

/* Real x fitted to len along axis, transformed R2C (reversed modulo len first: ihfft). */
static ct_tensor *r2c_step(const char *op, const ct_tensor *x, int axis, int64_t len,
                           ct_fft_norm norm, bool reverse) {
    if (ct__is_complex(x->dtype))
        return ct__fail(CT_ERR_DTYPE, "%s: x is %s; the transform takes real input", op,
                        ct_dtype_name(x->dtype));
    ct_tensor *xr = as_dtype(x, real_for(x->dtype));
    ct_tensor *fitted = xr ? fit(xr, axis, len) : NULL;
    ct_tensor *turned = fitted && reverse ? reversed_mod(fitted, axis) : ct_retain(fitted);
    ct_tensor *out =
        turned ? transform(turned, axis, CT_FFT_TYPE_R2C, -1, len, norm_scale(norm, false, len))
               : NULL;
    ct_release(xr);
    ct_release(fitted);
    ct_release(turned);
    return out;
}

/* Complex x fitted to len/2 + 1 along axis, transformed C2R to len reals (reversed modulo len
 * after: hfft). */
static ct_tensor *c2r_step(const char *op, const ct_tensor *x, int axis, int64_t len,
                           ct_fft_norm norm, bool reverse) {
    ct_tensor *xc = as_dtype(x, complex_for(x->dtype));
    ct_tensor *fitted = xc ? fit(xc, axis, len / 2 + 1) : NULL;
    ct_tensor *out =
        fitted ? transform(fitted, axis, CT_FFT_TYPE_C2R, 1, len, norm_scale(norm, true, len))
               : NULL;
    ct_release(xc);
    ct_release(fitted);
    if (!out || !reverse) return out;
    ct_tensor *turned = reversed_mod(out, axis);
    ct_release(out);
    return turned;
}

/* One axis: the axis normalised and the length (n < 0: the default). */
static bool one_axis(const char *op, const ct_tensor *x, int axis, int64_t n, bool halved, int *a,
                     int64_t *len) {
    if (ct__normalize_axis(op, axis, x->ndim, a) != CT_OK) return false;
    int64_t m = x->shape[*a];
    *len = n >= 0 ? n : halved ? 2 * (m - 1) : m;
    return length_ok(op, *len, *a);
}

ct_tensor *ct_fft_fft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm) {
    const char *op = "ct_fft_fft";
    int a;
    int64_t len;
    if (!check(op, x, norm) || !one_axis(op, x, axis, n, false, &a, &len)) return NULL;
    return c2c_step(op, x, a, len, -1, norm);
}

ct_tensor *ct_fft_ifft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm) {
    const char *op = "ct_fft_ifft";
    int a;
    int64_t len;
    if (!check(op, x, norm) || !one_axis(op, x, axis, n, false, &a, &len)) return NULL;
    return c2c_step(op, x, a, len, 1, norm);
}

ct_tensor *ct_fft_rfft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm) {
    const char *op = "ct_fft_rfft";
    int a;
    int64_t len;
    if (!check(op, x, norm) || !one_axis(op, x, axis, n, false, &a, &len)) return NULL;
    return r2c_step(op, x, a, len, norm, false);
}

ct_tensor *ct_fft_irfft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm) {
    const char *op = "ct_fft_irfft";
    int a;
    int64_t len;
    if (!check(op, x, norm) || !one_axis(op, x, axis, n, true, &a, &len)) return NULL;
    return c2r_step(op, x, a, len, norm, false);
}

/* hfft(x) = irfft(conj(x)) with the direction of norm swapped; the result being real, that
 * is irfft(x) with its indices reversed modulo n. */
ct_tensor *ct_fft_hfft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm) {
    const char *op = "ct_fft_hfft";
    int a;
    int64_t len;
    if (!check(op, x, norm) || !one_axis(op, x, axis, n, true, &a, &len)) return NULL;
    return c2r_step(op, x, a, len, swapped(norm), true);
}

/* ihfft(x) = conj(rfft(x)) with the direction of norm swapped: rfft of x reversed modulo n. */
ct_tensor *ct_fft_ihfft(const ct_tensor *x, int64_t n, int axis, ct_fft_norm norm) {
    const char *op = "ct_fft_ihfft";
    int a;
    int64_t len;
    if (!check(op, x, norm) || !one_axis(op, x, axis, n, false, &a, &len)) return NULL;
    return r2c_step(op, x, a, len, swapped(norm), true);
}

/* The axes and lengths of an n-dimensional transform (count written to *count); s_given
 * says whether s was. */
static bool many_axes(const char *op, const ct_tensor *x, int naxes, const int *axes,
                      const int64_t *s, int *count, int *out_axes, bool *s_given) {
    int nd = x->ndim;
    *s_given = s != NULL;
    if (naxes < 0) {
        if (axes || s) {
            ct__error(CT_ERR_INVALID_ARG, "%s: naxes < 0 (every axis) takes no axes nor s", op);
            return false;
        }
        naxes = nd;
    }
    if (naxes > nd) {
        ct__error(CT_ERR_INVALID_ARG, "%s: %d axes asked of a tensor of %d", op, naxes, nd);
        return false;
    }
    for (int i = 0; i < naxes; i++) {
        int axis = axes ? axes[i] : nd - naxes + i;
        if (ct__normalize_axis(op, axis, nd, &out_axes[i]) != CT_OK) return false;
        for (int j = 0; j < i; j++)
            if (out_axes[j] == out_axes[i]) {
                ct__error(CT_ERR_INVALID_ARG, "%s: axis %d given twice", op, out_axes[i]);
                return false;
            }
    }
    *count = naxes;
    return true;
}

/* fftn and ifftn: C2C along each axis, the last first (as numpy.fft). */
static ct_tensor *c2c_many(const char *op, const ct_tensor *x, int naxes, const int *axes,
                           const int64_t *s, ct_fft_norm norm, int sign) {
    int count, ax[CT_MAX_DIMS];
    bool s_given;
    if (!check(op, x, norm) || !many_axes(op, x, naxes, axes, s, &count, ax, &s_given)) return NULL;
    for (int i = 0; i < count; i++)
        if (!length_ok(op, s_given ? s[i] : x->shape[ax[i]], ax[i])) return NULL;
    ct_tensor *t = as_dtype(x, complex_for(x->dtype));
    if (count == 0 && t == x) { /* no axis: a copy of the input */
        ct_release(t);
        return ct_clone(x);
    }
    for (int i = count - 1; i >= 0 && t; i--) {
        ct_tensor *next = c2c_step(op, t, ax[i], s_given ? s[i] : t->shape[ax[i]], sign, norm);
        ct_release(t);
        t = next;
    }
    return t;
}

ct_tensor *ct_fft_fftn(const ct_tensor *x, int naxes, const int *axes, const int64_t *s,
                       ct_fft_norm norm) {
    return c2c_many("ct_fft_fftn", x, naxes, axes, s, norm, -1);
}

ct_tensor *ct_fft_ifftn(const ct_tensor *x, int naxes, const int *axes, const int64_t *s,
                        ct_fft_norm norm) {
    return c2c_many("ct_fft_ifftn", x, naxes, axes, s, norm, 1);
}

/* rfftn: R2C along the last axis given, then C2C forward along the others, last first. */
ct_tensor *ct_fft_rfftn(const ct_tensor *x, int naxes, const int *axes, const int64_t *s,
                        ct_fft_norm norm) {
    const char *op = "ct_fft_rfftn";
    int count, ax[CT_MAX_DIMS];
    bool s_given;
    if (!check(op, x, norm) || !many_axes(op, x, naxes, axes, s, &count, ax, &s_given)) return NULL;
    if (count == 0)
        return ct__fail(CT_ERR_INVALID_ARG, "%s: no axis to transform (give at least one)", op);
    for (int i = 0; i < count; i++)
        if (!length_ok(op, s_given ? s[i] : x->shape[ax[i]], ax[i])) return NULL;
    int last = count - 1;
    ct_tensor *t = r2c_step(op, x, ax[last], s_given ? s[last] : x->shape[ax[last]], norm, false);
    for (int i = last - 1; i >= 0 && t; i--) {
        ct_tensor *next = c2c_step(op, t, ax[i], s_given ? s[i] : t->shape[ax[i]], -1, norm);
        ct_release(t);
        t = next;
    }
    return t;
}

/* irfftn: C2C backward along every axis but the last given (last first), then C2R along it
 * (length s's last, or 2 (m - 1)). */
ct_tensor *ct_fft_irfftn(const ct_tensor *x, int naxes, const int *axes, const int64_t *s,
                         ct_fft_norm norm) {
    const char *op = "ct_fft_irfftn";
    int count, ax[CT_MAX_DIMS];
    bool s_given;
    if (!check(op, x, norm) || !many_axes(op, x, naxes, axes, s, &count, ax, &s_given)) return NULL;
    if (count == 0)
        return ct__fail(CT_ERR_INVALID_ARG, "%s: no axis to transform (give at least one)", op);
    int last = count - 1;
    int64_t last_len = s_given ? s[last] : 2 * (x->shape[ax[last]] - 1);
    for (int i = 0; i < last; i++)
        if (!length_ok(op, s_given ? s[i] : x->shape[ax[i]], ax[i])) return NULL;
    if (!length_ok(op, last_len, ax[last])) return NULL;
    ct_tensor *t = ct_retain((ct_tensor *)x);
    for (int i = last - 1; i >= 0 && t; i--) {
        ct_tensor *next = c2c_step(op, t, ax[i], s_given ? s[i] : t->shape[ax[i]], 1, norm);
        ct_release(t);
        t = next;
    }
    ct_tensor *out = t ? c2r_step(op, t, ax[last], last_len, norm, false) : NULL;
    ct_release(t);
    return out;
}

/* fftfreq and rfftfreq: i * (1 / (n d)) for the integers i of the frequencies, in float64,
 * then cast to dtype. */
static ct_tensor *frequencies(const char *op, int64_t n, double d, ct_dtype dtype, ct_device device,
                              bool half) {
    if (n < 1)
        return ct__fail(CT_ERR_INVALID_ARG, "%s: n is %lld; it must be >= 1", op, (long long)n);
    if (dtype == CT_FFT_DEFAULT_DTYPE) dtype = CT_F32;
    if ((int)dtype < 0 || (int)dtype >= CT_DTYPE_COUNT || !ct__is_float(dtype))
        return ct__fail(CT_ERR_DTYPE, "%s: dtype must be a real floating dtype", op);
    int64_t count = half ? n / 2 + 1 : n;
    double *values = malloc((size_t)count * sizeof *values), step = 1.0 / ((double)n * d);
    if (!values)
        return ct__fail(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld values", op,
                        (long long)count);
    for (int64_t i = 0; i < count; i++)
        values[i] = (double)(half || i < (n + 1) / 2 ? i : i - n) * step;
    ct_tensor *f64 = ct_from_data(values, 1, &count, CT_F64, device);
    free(values);
    if (!f64 || dtype == CT_F64) return f64;
    ct_tensor *out = ct_cast(f64, dtype);
    ct_release(f64);
    return out;
}

ct_tensor *ct_fft_fftfreq(int64_t n, double d, ct_dtype dtype, ct_device device) {
    return frequencies("ct_fft_fftfreq", n, d, dtype, device, false);
}

ct_tensor *ct_fft_rfftfreq(int64_t n, double d, ct_dtype dtype, ct_device device) {
    return frequencies("ct_fft_rfftfreq", n, d, dtype, device, true);
}

/* x rolled along each axis by floor(size / 2) (inverse: by size - floor(size / 2)). */
static ct_tensor *shift(const char *op, const ct_tensor *x, int naxes, const int *axes,
                        bool inverse) {
    ct_device device;
    if (!ct__check_args_complex(op, 1, &x, &device)) return NULL;
    int count, ax[CT_MAX_DIMS];
    bool s_given;
    if (!many_axes(op, x, naxes, axes, NULL, &count, ax, &s_given)) return NULL;
    ct_tensor *t = ct_retain((ct_tensor *)x);
    for (int i = 0; i < count && t; i++) {
        int64_t size = t->shape[ax[i]], by = inverse ? size - size / 2 : size / 2;
        if (by == 0 || by == size) continue;
        ct_tensor *tail = ct_slice(t, ax[i], size - by, size, 1);
        ct_tensor *head = ct_slice(t, ax[i], 0, size - by, 1);
        const ct_tensor *parts[2] = {tail, head};
        ct_tensor *next = tail && head ? ct_concat(2, parts, ax[i]) : NULL;
        ct_release(tail);
        ct_release(head);
        ct_release(t);
        t = next;
    }
    if (t != x) return t;
    ct_release(t); /* nothing rolled: a copy */
    return ct_clone(x);
}

ct_tensor *ct_fft_fftshift(const ct_tensor *x, int naxes, const int *axes) {
    return shift("ct_fft_fftshift", x, naxes, axes, false);
}

ct_tensor *ct_fft_ifftshift(const ct_tensor *x, int naxes, const int *axes) {
    return shift("ct_fft_ifftshift", x, naxes, axes, true);
}

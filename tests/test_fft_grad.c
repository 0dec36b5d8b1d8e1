/* Finite-difference gradient checks of the transforms (ctensor/fft.h), in PyTorch's convention
 * for complex tensors (ct_gradcheck_complex): each one-axis transform with its length cropping
 * and padding, every norm and both axes of a 2-D input, real inputs to the complex ones, the
 * half-spectrum ones at even and odd lengths (their mirrored bins count twice), the
 * n-dimensional ones with s, and the shifts. */
#include <stdio.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

typedef ct_tensor *(*one_axis_fn)(const ct_tensor *, int64_t, int, ct_fft_norm);

typedef struct one_axis_case {
    const char *name;
    one_axis_fn fn;
    bool real_input;
    int64_t m;     /* the input's length along the axis */
    int64_t ns[4]; /* the n to check (-1: the default) */
} one_axis_case;

typedef struct call {
    one_axis_fn fn;
    int64_t n;
    int axis;
    ct_fft_norm norm;
} call;

static ct_tensor *apply_one_axis(ct_tensor *const *in, void *context) {
    const call *c = context;
    return c->fn(in[0], c->n, c->axis, c->norm);
}

static ct_tensor *input(ct_device device, bool real, int axis, int64_t m, uint64_t seed) {
    int64_t shape[2] = {3, 3};
    shape[axis] = m;
    if (real) return ct_gradcheck_leaf(device, 2, shape, seed, -1, 1, true);
    return ct_gradcheck_complex_leaf(device, 2, shape, seed, (double[]){-1, 1}, (double[]){-1, 1},
                                     true);
}

DEVICE_TEST(test_fft_grad_one_axis) {
    static const one_axis_case cases[] = {
        {"fft", ct_fft_fft, false, 8, {-1, 6, 11, 7}},
        {"fft (real x)", ct_fft_fft, true, 7, {-1, 5, 9, 8}},
        {"ifft", ct_fft_ifft, false, 7, {-1, 4, 10, 8}},
        {"rfft", ct_fft_rfft, true, 8, {-1, 7, 11, 6}},
        {"irfft", ct_fft_irfft, false, 5, {-1, 9, 7, 12}},
        {"irfft (real x)", ct_fft_irfft, true, 4, {-1, 7, 5, 10}},
        {"hfft", ct_fft_hfft, false, 5, {-1, 9, 6, 11}},
        {"ihfft", ct_fft_ihfft, true, 7, {-1, 8, 5, 10}},
    };
    const ct_fft_norm norms[3] = {CT_FFT_BACKWARD, CT_FFT_ORTHO, CT_FFT_FORWARD};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int k = 0; k < 4; k++)
            for (int axis = 0; axis < 2; axis++) {
                call f = {cases[c].fn, cases[c].ns[k], axis, norms[(k + axis) % 3]};
                ct_tensor *x = input(device, cases[c].real_input, axis, cases[c].m, 10 * c + k);
                CHECK_NOT_NULL(x);
                bool ok = ct_gradcheck_complex(apply_one_axis, 1, &x, &f, EPS, ATOL, RTOL);
                ct_release(x);
                if (!ok)
                    ct_test_fail(__FILE__, __LINE__, "%s, n %lld, axis %d, norm %d", cases[c].name,
                                 (long long)f.n, axis, (int)f.norm);
                if (!ok) return;
            }
}

typedef ct_tensor *(*many_axes_fn)(const ct_tensor *, int, const int *, const int64_t *,
                                   ct_fft_norm);

typedef struct many_call {
    many_axes_fn fn;
    int naxes;
    const int *axes;
    const int64_t *s;
    ct_fft_norm norm;
} many_call;

static ct_tensor *apply_many(ct_tensor *const *in, void *context) {
    const many_call *c = context;
    return c->fn(in[0], c->naxes, c->axes, c->s, c->norm);
}

DEVICE_TEST(test_fft_grad_many_axes) {
    static const int axes[2] = {0, 2}, reversed[2] = {2, 0};
    static const int64_t s[2] = {5, 6}, s_odd[2] = {3, 7};
    static const struct {
        const char *name;
        many_axes_fn fn;
        bool real_input;
        many_call call;
    } cases[] = {
        {"fftn", ct_fft_fftn, false, {NULL, -1, NULL, NULL, CT_FFT_BACKWARD}},
        {"fftn s", ct_fft_fftn, false, {NULL, 2, axes, s, CT_FFT_ORTHO}},
        {"ifftn", ct_fft_ifftn, false, {NULL, 2, reversed, s_odd, CT_FFT_FORWARD}},
        {"ifftn real x", ct_fft_ifftn, true, {NULL, 2, axes, NULL, CT_FFT_BACKWARD}},
        {"rfftn", ct_fft_rfftn, true, {NULL, 2, axes, NULL, CT_FFT_BACKWARD}},
        {"rfftn s", ct_fft_rfftn, true, {NULL, 2, reversed, s_odd, CT_FFT_ORTHO}},
        {"irfftn", ct_fft_irfftn, false, {NULL, 2, axes, NULL, CT_FFT_FORWARD}},
        {"irfftn s", ct_fft_irfftn, false, {NULL, 2, axes, s_odd, CT_FFT_BACKWARD}},
        {"irfftn s even", ct_fft_irfftn, false, {NULL, 2, reversed, s, CT_FFT_ORTHO}},
    };
    int64_t shape[3] = {3, 2, 4};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        many_call f = cases[c].call;
        f.fn = cases[c].fn;
        ct_tensor *x = cases[c].real_input
                           ? ct_gradcheck_leaf(device, 3, shape, 70 + c, -1, 1, true)
                           : ct_gradcheck_complex_leaf(device, 3, shape, 70 + c, (double[]){-1, 1},
                                                       (double[]){-1, 1}, true);
        CHECK_NOT_NULL(x);
        bool ok = ct_gradcheck_complex(apply_many, 1, &x, &f, EPS, ATOL, RTOL);
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "%s", cases[c].name);
        if (!ok) return;
    }
}

static ct_tensor *shifts(ct_tensor *const *in, void *context) {
    (void)context;
    ct_tensor *a = ct_fft_fftshift(in[0], -1, NULL);
    ct_tensor *b = a ? ct_fft_ifftshift(a, 1, (int[]){0}) : NULL;
    ct_tensor *out = b ? ct_mul(b, in[1]) : NULL; /* weights, so the order shows */
    ct_release(a);
    ct_release(b);
    return out;
}

DEVICE_TEST(test_fft_grad_shifts) {
    int64_t shape[2] = {5, 4};
    ct_tensor *in[2] = {
        ct_gradcheck_complex_leaf(device, 2, shape, 80, (double[]){-1, 1}, (double[]){-1, 1}, true),
        ct_gradcheck_leaf(device, 2, shape, 81, 0.5, 2, false)};
    CHECK(ct_gradcheck_complex(shifts, 2, in, NULL, EPS, ATOL, RTOL));
    ct_release(in[0]);
    ct_release(in[1]);
}

/* A complex64 input's gradient stays complex64; under no_grad nothing is recorded. */
DEVICE_TEST(test_fft_grad_dtype_and_no_grad) {
    ct_tensor *x = ct_ones(1, (int64_t[]){6}, CT_C64, device);
    CHECK_OK(ct_set_requires_grad(x, true));
    ct_tensor *y = ct_fft_fft(x, -1, 0, CT_FFT_ORTHO);
    ct_tensor *m = y ? ct_abs(y) : NULL, *loss = m ? ct_sum(m, 0, NULL, false) : NULL;
    CHECK_OK(ct_backward(loss));
    ct_tensor *g = ct_grad(x);
    CHECK(g && ct_dtype_of(g) == CT_C64);
    CHECK_OK(ct_no_grad_push());
    ct_tensor *plain = ct_fft_fft(x, -1, 0, CT_FFT_ORTHO);
    CHECK_OK(ct_no_grad_pop());
    CHECK(plain && !ct_requires_grad(plain));
    ct_tensor *all[] = {plain, g, loss, m, y, x};
    for (int i = 0; i < 6; i++) ct_release(all[i]);
}

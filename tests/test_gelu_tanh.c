/* GELU in GPT-2's tanh form (ct_gelu_tanh) and its fused backward (one kernel each way):
 * forward and gradient against float64 references of the tanh formula, over the usual range
 * and the tails (where the derivative is 1 or 0 and x^3 overflows), in every floating dtype
 * on every device; NaN and infinities as the formula gives them; the finite-difference
 * gradient check. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

#define K 0.79788456080286535588 /* sqrt(2/pi) */
#define C 0.044715

static double gelu_ref(double x) { return 0.5 * x * (1.0 + tanh(K * (x + C * x * x * x))); }

/* d/dx x/2 (1 + tanh u) = (1 + t)/2 + x/2 (1 - t^2) u'; 1 - t^2 as 4 e / (1 + e)^2 with
 * e = e^-2|u| (exact where t^2 rounds to 1). */
static double gelu_grad_ref(double x) {
    double u = K * (x + C * x * x * x), t = tanh(u), e = exp(-2.0 * fabs(u));
    double sech2 = 4.0 * e / ((1.0 + e) * (1.0 + e));
    double du = K * (1.0 + 3.0 * C * x * x);
    return 0.5 * (1.0 + t) + (sech2 == 0.0 ? 0.0 : 0.5 * x * sech2 * du);
}

enum { N = 64 };

/* Inputs: a sweep of [-6, 6] and the tails, both signs. */
static void inputs(double *x) {
    static const double tails[] = {8, 12, 30, 100, 1e4, 1e15, 1e25, 3e38};
    int t = (int)(sizeof tails / sizeof tails[0]);
    for (int i = 0; i < N - 2 * t; i++) x[i] = -6.0 + 12.0 * i / (N - 2 * t - 1);
    for (int i = 0; i < t; i++) x[N - 2 * t + i] = tails[i], x[N - t + i] = -tails[i];
}

/* The inputs as dtype sees them: finite after rounding (f16 and bf16 saturate to inf). */
static void rounded_inputs(double *x, ct_dtype dtype) {
    inputs(x);
    for (int i = 0; i < N; i++) {
        double r = ref_round(x[i], dtype);
        x[i] = isinf(r) ? copysign(dtype == CT_F16 ? 60000.0 : 1e30, x[i]) : r;
        x[i] = ref_round(x[i], dtype);
    }
}

static const ct_dtype float_dtypes[] = {CT_F64, CT_F32, CT_F16, CT_BF16};

DEVICE_TEST(test_gelu_tanh_forward_matches_float64) {
    for (int d = 0; d < 4; d++) {
        ct_dtype dtype = float_dtypes[d];
        double x[N], expected[N];
        rounded_inputs(x, dtype);
        for (int i = 0; i < N; i++) expected[i] = gelu_ref(x[i]);
        int64_t shape[1] = {N};
        ct_tensor *t = ref_tensor(x, 1, shape, dtype, device);
        CHECK_NOT_NULL(t);
        ct_tensor *y = ct_gelu_tanh(t);
        CHECK_TENSOR(y, expected);
        ct_release(y);
        ct_release(t);
    }
}

/* The backward through autograd: x.grad = dy * gelu'(x) for a given dy. */
DEVICE_TEST(test_gelu_tanh_backward_matches_float64) {
    for (int d = 0; d < 4; d++) {
        ct_dtype dtype = float_dtypes[d];
        double x[N], dy[N], expected[N];
        rounded_inputs(x, dtype);
        ref_random(dy, N, 7, -2, 2);
        for (int i = 0; i < N; i++) {
            dy[i] = ref_round(dy[i], dtype);
            expected[i] = dy[i] * gelu_grad_ref(x[i]);
        }
        int64_t shape[1] = {N};
        ct_tensor *t = ref_tensor(x, 1, shape, dtype, device);
        ct_tensor *g = ref_tensor(dy, 1, shape, dtype, device);
        CHECK_NOT_NULL(t);
        CHECK_NOT_NULL(g);
        CHECK_OK(ct_set_requires_grad(t, true));
        ct_tensor *y = ct_gelu_tanh(t);
        CHECK_NOT_NULL(y);
        CHECK_OK(ct_backward_with(y, g, false));
        ct_tensor *dx = ct_grad(t);
        CHECK_TENSOR(dx, expected);
        ct_release(dx);
        ct_release(y);
        ct_release(g);
        ct_release(t);
    }
}

/* NaN stays NaN both ways; +inf gives inf, -inf NaN (x/2 (1 + tanh u) is -inf * 0 there, as
 * PyTorch's formula). */
DEVICE_TEST(test_gelu_tanh_special_values) {
    double x[3] = {NAN, INFINITY, -INFINITY}, forward[3] = {NAN, INFINITY, NAN};
    double grad[3] = {NAN, 1.0, 0.0};
    int64_t shape[1] = {3};
    ct_tensor *t = ref_tensor(x, 1, shape, CT_F32, device);
    CHECK_NOT_NULL(t);
    CHECK_OK(ct_set_requires_grad(t, true));
    ct_tensor *y = ct_gelu_tanh(t);
    CHECK_TENSOR(y, forward);
    ct_tensor *ones = ct_ones(1, shape, CT_F32, device);
    CHECK_NOT_NULL(ones);
    CHECK_OK(ct_backward_with(y, ones, false));
    ct_tensor *dx = ct_grad(t);
    CHECK_TENSOR(dx, grad);
    ct_release(dx);
    ct_release(ones);
    ct_release(y);
    ct_release(t);
}

static ct_tensor *apply(ct_tensor *const *in, void *context) {
    (void)context;
    return ct_gelu_tanh(in[0]);
}

DEVICE_TEST(test_gelu_tanh_gradcheck) {
    int64_t shape[2] = {5, 7};
    ct_tensor *x = ct_gradcheck_leaf(device, 2, shape, 11, -4, 4, true);
    CHECK_NOT_NULL(x);
    CHECK(ct_gradcheck(apply, 1, &x, NULL, 1e-6, 1e-7, 1e-5));
    ct_release(x);
}

/* ct_softmax and ct_log_softmax against float64 references computed here: every axis of
 * several shapes (negative axes too), f32, f64, f16 and bf16, non-contiguous inputs, large
 * logits (1e4, where a naive exp overflows), 0-d and empty inputs, and the errors. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

typedef ct_tensor *(*softmax_fn)(const ct_tensor *x, int axis);

/* Softmax (or log-softmax) of x (C order, shape) along axis, in double. */
static void softmax_reference(const double *x, int ndim, const int64_t *shape, int axis,
                              bool take_log, double *out) {
    int64_t outer = 1, inner = 1, n = ndim ? shape[axis] : 1;
    for (int d = 0; d < axis; d++) outer *= shape[d];
    for (int d = axis + 1; d < ndim; d++) inner *= shape[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            double m = -INFINITY, sum = 0.0;
            for (int64_t k = 0; k < n; k++) m = fmax(m, x[(o * n + k) * inner + j]);
            for (int64_t k = 0; k < n; k++) sum += exp(x[(o * n + k) * inner + j] - m);
            for (int64_t k = 0; k < n; k++) {
                int64_t i = (o * n + k) * inner + j;
                out[i] = take_log ? x[i] - m - log(sum) : exp(x[i] - m) / sum;
            }
        }
}

/* Both functions along every axis (given as positive and as negative) of one shape. */
static void check_shape(ct_device device, int ndim, const int64_t *shape, ct_dtype dtype,
                        double scale, uint64_t seed) {
    int64_t n = ref_numel(ndim, shape);
    double *x = malloc(sizeof(double) * (size_t)(n + 1));
    double *expected = malloc(sizeof(double) * (size_t)(n + 1));
    CHECK(x && expected);
    ref_random(x, n, seed, -scale, scale);
    for (int64_t i = 0; i < n; i++) x[i] = ref_round(x[i], dtype);
    for (int axis = 0; axis < (ndim ? ndim : 1); axis++)
        for (int variant = 0; variant < 4; variant++) {
            bool take_log = variant & 1, strided = variant & 2;
            ct_tensor *t =
                (strided ? ref_tensor_strided : ref_tensor)(x, ndim, shape, dtype, device);
            softmax_fn fn = take_log ? ct_log_softmax : ct_softmax;
            ct_tensor *y = fn(t, strided ? axis - (ndim ? ndim : 1) : axis);
            softmax_reference(x, ndim, shape, axis, take_log, expected);
            CHECK_TENSOR(y, expected);
            CHECK(ct_dtype_of(y) == dtype && ct_ndim(y) == ndim);
            ct_release(y);
            ct_release(t);
        }
    free(expected);
    free(x);
}

DEVICE_TEST(test_nn_softmax_shapes_and_axes) {
    static const struct {
        int ndim;
        int64_t shape[4];
    } cases[] = {{1, {7}}, {2, {3, 5}}, {3, {2, 3, 4}}, {4, {2, 1, 3, 5}}, {2, {1, 1}}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int dt = CT_F32; dt <= CT_F64; dt++) {
            check_shape(device, cases[c].ndim, cases[c].shape, (ct_dtype)dt, 5.0, 40 + c);
            if (ct_test_failed()) return;
        }
}

DEVICE_TEST(test_nn_softmax_half_dtypes) {
    int64_t shape[2] = {4, 6};
    check_shape(device, 2, shape, CT_F16, 3.0, 7);
    if (ct_test_failed()) return;
    check_shape(device, 2, shape, CT_BF16, 3.0, 8);
}

/* Rows long enough for the kernels' OpenMP split. */
DEVICE_TEST(test_nn_softmax_parallel_rows) {
    int64_t shape[2] = {300, 129};
    check_shape(device, 2, shape, CT_F32, 10.0, 9);
}

/* Logits near 1e4 overflow exp in any dtype: the maximum must be subtracted first. */
DEVICE_TEST(test_nn_softmax_large_logits_stable) {
    double x[6] = {1e4, 1e4 - 1.0, 1e4 - 3.0, -1e4, 0.0, -1e4 + 2.0};
    int64_t shape[2] = {2, 3};
    for (int dt = CT_F32; dt <= CT_F64; dt++) {
        ct_tensor *t = ref_tensor(x, 2, shape, (ct_dtype)dt, device);
        double expected[6];
        for (int take_log = 0; take_log < 2; take_log++) {
            ct_tensor *y = (take_log ? ct_log_softmax : ct_softmax)(t, 1);
            softmax_reference(x, 2, shape, 1, take_log, expected);
            for (int i = 0; i < 6; i++) CHECK(isfinite(expected[i]));
            CHECK_TENSOR(y, expected);
            ct_release(y);
        }
        ct_release(t);
    }
}

DEVICE_TEST(test_nn_softmax_scalar_and_empty) {
    ct_tensor *s = ct_full(0, NULL, 3.5, CT_F64, device);
    ct_tensor *y = ct_softmax(s, 0), *ly = ct_log_softmax(s, -1);
    CHECK_TENSOR(y, (double[]){1.0});
    CHECK_TENSOR(ly, (double[]){0.0});
    CHECK(ct_ndim(y) == 0);
    ct_release(ly);
    ct_release(y);
    ct_release(s);
    ct_tensor *e = ct_zeros(2, (int64_t[]){0, 4}, CT_F32, device);
    ct_tensor *ey = ct_softmax(e, 1);
    CHECK_NOT_NULL(ey);
    CHECK(ct_numel(ey) == 0 && ct_shape(ey)[1] == 4);
    ct_release(ey);
    ct_release(e);
}

DEVICE_TEST(test_nn_softmax_errors) {
    ct_tensor *i = ct_zeros(1, (int64_t[]){3}, CT_I32, device);
    ct_tensor *x = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    CHECK(ct_softmax(i, 0) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_softmax: argument 1 has dtype int32");
    CHECK(ct_log_softmax(x, 2) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_log_softmax: axis 2 is out of range");
    CHECK(ct_softmax(x, -3) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "axis -3 is out of range");
    CHECK(ct_softmax(NULL, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_softmax: argument 1 is NULL");
    ct_release(x);
    ct_release(i);
}

/* ---- gradient checks (float64, central differences) ---- */

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

typedef struct {
    bool take_log, transposed;
    int axis;
} softmax_case;

static ct_tensor *apply_softmax(ct_tensor *const *in, void *context) {
    const softmax_case *c = context;
    ct_tensor *x = c->transposed ? ct_transpose(in[0], 0, 1) : ct_retain(in[0]);
    ct_tensor *y = (c->take_log ? ct_log_softmax : ct_softmax)(x, c->axis);
    ct_release(x);
    return y;
}

DEVICE_TEST(test_nn_softmax_gradcheck) {
    int64_t shape[3] = {3, 4, 2};
    for (int variant = 0; variant < 12; variant++) {
        softmax_case c = {variant & 1, (variant & 2) != 0, variant / 4 - 1};
        ct_tensor *x = ct_gradcheck_leaf(device, 3, shape, 5 + (uint64_t)variant, -2.0, 2.0, true);
        CHECK_NOT_NULL(x);
        bool ok = ct_gradcheck(apply_softmax, 1, &x, &c, EPS, ATOL, RTOL);
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "softmax case %d", variant);
        if (!ok) return;
    }
}

/* Nothing requires grad: no node, and the result is a plain tensor. */
DEVICE_TEST(test_nn_softmax_records_only_when_needed) {
    ct_tensor *x = ct_gradcheck_leaf(device, 2, (int64_t[]){2, 3}, 1, -1.0, 1.0, false);
    ct_tensor *y = ct_softmax(x, 1);
    CHECK(y && !ct_requires_grad(y));
    ct_release(y);
    CHECK_OK(ct_set_requires_grad(x, true));
    CHECK_OK(ct_no_grad_push());
    y = ct_log_softmax(x, 1);
    CHECK_OK(ct_no_grad_pop());
    CHECK(y && !ct_requires_grad(y));
    ct_release(y);
    y = ct_softmax(x, 1);
    CHECK(y && ct_requires_grad(y) && !ct_is_leaf(y));
    ct_release(y);
    ct_release(x);
}

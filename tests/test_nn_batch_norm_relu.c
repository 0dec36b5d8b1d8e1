/* ct_batch_norm_relu, the fused relu(ct_batch_norm(...)): its output and running statistics
 * against a float64 reference (training and evaluation, blocks of whole planes and pieces of
 * planes in the batch-norm kernels' statistics, a large offset that a one-pass sum of squares
 * would cancel), the same bits as ct_relu(ct_batch_norm(...)) forward and backward and from
 * run to run, finite-difference gradients, f16 and bf16 as they are and under autocast, and
 * its errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

typedef struct {
    int64_t n, c, inner;
    bool affine, training;
    double momentum, eps;
} bn_case;

/* y = relu(batch_norm(x)) over x (n, c, inner); rm and rv updated in training. In long
 * double, so that the reference's own rounding stays below float64's tolerance however far
 * the data lie from 0. */
static void reference(const bn_case *k, const double *x, const double *w, const double *b,
                      double *rm, double *rv, double *y) {
    int64_t count = k->n * k->inner;
    for (int64_t ch = 0; ch < k->c; ch++) {
        long double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < k->n; i++)
            for (int64_t j = 0; j < k->inner; j++) mean += x[(i * k->c + ch) * k->inner + j];
        mean /= (double)count;
        for (int64_t i = 0; i < k->n; i++)
            for (int64_t j = 0; j < k->inner; j++) {
                long double d = x[(i * k->c + ch) * k->inner + j] - mean;
                var += d * d;
            }
        if (k->training) {
            rm[ch] = (double)((1 - k->momentum) * rm[ch] + k->momentum * mean);
            rv[ch] = (double)((1 - k->momentum) * rv[ch] + k->momentum * var / (count - 1));
            var /= count;
        } else {
            mean = rm[ch];
            var = rv[ch];
        }
        for (int64_t i = 0; i < k->n; i++)
            for (int64_t j = 0; j < k->inner; j++) {
                int64_t at = (i * k->c + ch) * k->inner + j;
                long double v = (x[at] - mean) / sqrtl(var + k->eps);
                v = k->affine ? v * w[ch] + b[ch] : v;
                y[at] = v < 0.0 ? 0.0 : (double)v;
            }
    }
}

/* Checks ct_batch_norm_relu on x (the case's shape as ndim axes) with values in
 * [offset - 2, offset + 3). */
static void check_forward(ct_device device, const bn_case *k, int ndim, const int64_t *shape,
                          ct_dtype dtype, bool strided, double offset, uint64_t seed) {
    int64_t numel = ref_numel(ndim, shape), c = k->c;
    double *x = malloc(sizeof(double) * (size_t)numel), *y = malloc(sizeof(double) * (size_t)numel);
    double w[16], b[16], rm[16], rv[16];
    CHECK(x && y && c <= 16);
    ref_random(x, numel, seed, offset - 2.0, offset + 3.0);
    ref_random(w, c, seed + 1, 0.5, 1.5);
    ref_random(b, c, seed + 2, -1.0, 1.0);
    ref_random(rm, c, seed + 3, offset - 0.5, offset + 0.5);
    ref_random(rv, c, seed + 4, 0.5, 2.0);
    for (int64_t i = 0; i < numel; i++) x[i] = ref_round(x[i], dtype);
    for (int64_t i = 0; i < c; i++) {
        w[i] = ref_round(w[i], dtype), b[i] = ref_round(b[i], dtype);
        rm[i] = ref_round(rm[i], dtype), rv[i] = ref_round(rv[i], dtype);
    }
    ct_tensor *tx = (strided ? ref_tensor_strided : ref_tensor)(x, ndim, shape, dtype, device);
    ct_tensor *tw = k->affine ? ref_tensor(w, 1, &c, dtype, device) : NULL;
    ct_tensor *tb = k->affine ? ref_tensor(b, 1, &c, dtype, device) : NULL;
    ct_tensor *trm = ref_tensor(rm, 1, &c, dtype, device);
    ct_tensor *trv = (strided ? ref_tensor_strided : ref_tensor)(rv, 1, &c, dtype, device);
    ct_tensor *out = ct_batch_norm_relu(tx, trm, trv, tw, tb, k->training, k->momentum, k->eps);
    reference(k, x, w, b, rm, rv, y);
    CHECK_TENSOR(out, y);
    CHECK_TENSOR(trm, rm);
    CHECK_TENSOR(trv, rv);
    CHECK(ct_dtype_of(out) == dtype);
    ct_release(out);
    ct_release(trv);
    ct_release(trm);
    ct_release(tb);
    ct_release(tw);
    ct_release(tx);
    free(y);
    free(x);
}

DEVICE_TEST(test_nn_batch_norm_relu_train_and_eval) {
    /* Planes of 15, 2400 (more than one statistics block) and 1 element; ranks 2 to 4. */
    static const struct {
        int ndim;
        int64_t shape[4];
    } cases[] = {{4, {3, 4, 3, 5}}, {3, {3, 2, 2400}}, {2, {40, 3}}, {4, {200, 2, 3, 7}}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int mode = 0; mode < 8; mode++) {
            const int64_t *s = cases[i].shape;
            int nd = cases[i].ndim;
            bn_case k = {s[0], s[1], ref_numel(nd - 2, s + 2), mode & 1, (mode & 2) != 0,
                         0.1,  1e-5};
            ct_dtype dtype = mode & 4 ? CT_F64 : CT_F32;
            check_forward(device, &k, nd, s, dtype, (mode + (int)i) % 2, 0.0,
                          100 * i + (size_t)mode);
            if (ct_test_failed()) return;
        }
}

/* Values near 1e3 with spread 5: the statistics must not cancel (a sum of squares minus the
 * squared sum would lose about 1e6 / 2 of float64's 2^-53 in the variance, past the
 * tolerance). */
DEVICE_TEST(test_nn_batch_norm_relu_large_offset) {
    int64_t shape[4] = {64, 2, 8, 9};
    bn_case k = {64, 2, 72, true, true, 0.1, 1e-5};
    check_forward(device, &k, 4, shape, CT_F64, false, 1e3, 7);
    if (ct_test_failed()) return;
    check_forward(device, &k, 4, shape, CT_F32, false, 1e3, 8);
}

/* f16 and bf16 tensors as they are: computed in double, rounded once. */
DEVICE_TEST(test_nn_batch_norm_relu_half_dtypes) {
    int64_t shape[3] = {4, 3, 5};
    bn_case k = {4, 3, 5, true, true, 0.1, 1e-5};
    check_forward(device, &k, 3, shape, CT_F16, true, 0.0, 1);
    if (ct_test_failed()) return;
    k.training = false;
    check_forward(device, &k, 3, shape, CT_BF16, false, 0.0, 2);
}

/* y, dx, dweight and dbias of one pass of the fused op (fused) or of ct_relu after
 * ct_batch_norm, as malloc'd doubles in out[0..3]; running statistics start at 0 and 1. */
static bool one_pass(ct_device device, bool fused, bool training, ct_dtype dtype,
                     const int64_t *shape, double **out) {
    int64_t c = shape[1];
    ct_scope_begin();
    ct_tensor *x = ct_cast(ct_gradcheck_leaf(device, 4, shape, 3, -2.0, 2.0, false), dtype);
    ct_tensor *u = ct_cast(ct_gradcheck_leaf(device, 4, shape, 4, -1.0, 1.0, false), dtype);
    ct_tensor *w = ct_cast(ct_gradcheck_leaf(device, 1, &c, 5, 0.5, 1.5, false), dtype);
    ct_tensor *b = ct_cast(ct_gradcheck_leaf(device, 1, &c, 6, -0.5, 0.5, false), dtype);
    ct_tensor *rm = ct_zeros(1, &c, CT_F32, device), *rv = ct_ones(1, &c, CT_F32, device);
    bool ok = x && u && w && b && rm && rv && ct_set_requires_grad(x, true) == CT_OK &&
              ct_set_requires_grad(w, true) == CT_OK && ct_set_requires_grad(b, true) == CT_OK;
    ct_tensor *y = !ok     ? NULL
                   : fused ? ct_batch_norm_relu(x, rm, rv, w, b, training, 0.1, 1e-5)
                           : ct_relu(ct_batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5));
    ok = y && ct_backward_with(y, u, false) == CT_OK;
    const ct_tensor *results[4] = {y, ok ? ct_grad(x) : NULL, ok ? ct_grad(w) : NULL,
                                   ok ? ct_grad(b) : NULL};
    for (int i = 0; i < 4; i++) out[i] = results[i] ? ref_read(results[i]) : NULL;
    ct_scope_end();
    return out[0] && out[1] && out[2] && out[3];
}

/* The fused op gives ct_relu(ct_batch_norm(...))'s bits, forward and backward, and the
 * same bits twice; with planes long and short, on the OpenMP split and off it. */
DEVICE_TEST(test_nn_batch_norm_relu_matches_unfused_bits) {
    static const int64_t shapes[3][4] = {{16, 6, 32, 32}, {32, 5, 8, 8}, {2, 3, 3, 3}};
    for (int s = 0; s < 3; s++)
        for (int mode = 0; mode < 4; mode++) {
            const int64_t *shape = shapes[s];
            int64_t numel = ref_numel(4, shape), sizes[4] = {numel, numel, shape[1], shape[1]};
            bool training = mode & 1;
            ct_dtype dtype = mode & 2 ? CT_F64 : CT_F32;
            double *fused[4] = {0}, *again[4] = {0}, *plain[4] = {0};
            bool ok = one_pass(device, true, training, dtype, shape, fused) &&
                      one_pass(device, true, training, dtype, shape, again) &&
                      one_pass(device, false, training, dtype, shape, plain);
            int bad = -1;
            for (int i = 0; ok && i < 4 && bad < 0; i++)
                if (memcmp(fused[i], again[i], sizeof(double) * (size_t)sizes[i]) != 0 ||
                    memcmp(fused[i], plain[i], sizeof(double) * (size_t)sizes[i]) != 0)
                    bad = i;
            for (int i = 0; i < 4; i++) free(fused[i]), free(again[i]), free(plain[i]);
            if (!ok || bad >= 0) {
                ct_test_fail(__FILE__, __LINE__,
                             "shape %d mode %d: %s differs (y, dx, dw, db from 0); %s", s, mode,
                             ok ? "result" : "a pass failed", ok ? "" : ct_last_error());
                return;
            }
        }
}

/* ---- gradient checks (float64, central differences) ---- */

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

typedef struct {
    bool training, affine;
    ct_tensor *running_mean, *running_var;
} grad_case;

static ct_tensor *apply(ct_tensor *const *in, void *context) {
    const grad_case *c = context;
    return ct_batch_norm_relu(in[0], c->running_mean, c->running_var, c->affine ? in[1] : NULL,
                              c->affine ? in[2] : NULL, c->training, 0.1, 1e-5);
}

DEVICE_TEST(test_nn_batch_norm_relu_gradcheck) {
    int64_t shape[4] = {3, 2, 2, 3}, c = 2;
    for (int variant = 0; variant < 4; variant++) {
        grad_case k = {variant & 1, (variant & 2) != 0, NULL, NULL};
        k.running_mean = ct_gradcheck_leaf(device, 1, &c, 3, -0.5, 0.5, false);
        k.running_var = ct_gradcheck_leaf(device, 1, &c, 4, 0.5, 2.0, false);
        ct_tensor *in[3] = {
            ct_gradcheck_leaf(device, 4, shape, 30 + (uint64_t)variant, -2.0, 2.0, true),
            ct_gradcheck_leaf(device, 1, &c, 31, 0.5, 1.5, true),
            ct_gradcheck_leaf(device, 1, &c, 32, -1.0, 1.0, true)};
        bool ok = in[0] && in[1] && in[2] && k.running_mean && k.running_var &&
                  ct_gradcheck(apply, k.affine ? 3 : 1, in, &k, EPS, ATOL, RTOL);
        for (int i = 0; i < 3; i++) ct_release(in[i]);
        ct_release(k.running_var);
        ct_release(k.running_mean);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "batch norm relu case %d", variant);
        if (!ok) return;
    }
}

/* Under autocast the fused op follows ct_batch_norm's policy (f32), with the same values as
 * the unfused pair there, and gives f32 gradients. */
DEVICE_TEST(test_nn_batch_norm_relu_autocast) {
    const ct_dtype dtypes[2] = {CT_BF16, CT_F16};
    int64_t shape[4] = {4, 3, 5, 5}, c = 3;
    for (int d = 0; d < 2; d++) {
        ct_scope_begin();
        ct_tensor *x = ct_cast(ct_gradcheck_leaf(device, 4, shape, 9, -2.0, 2.0, false), dtypes[d]);
        ct_tensor *w = ct_ones(1, &c, CT_F32, device), *b = ct_zeros(1, &c, CT_F32, device);
        CHECK(x && w && b);
        CHECK_OK(ct_set_requires_grad(w, true));
        CHECK_OK(ct_autocast_push(device.type, dtypes[d]));
        ct_tensor *fused = ct_batch_norm_relu(x, NULL, NULL, w, b, true, 0.1, 1e-5);
        ct_tensor *plain = ct_relu(ct_batch_norm(x, NULL, NULL, w, b, true, 0.1, 1e-5));
        CHECK_OK(ct_autocast_pop());
        CHECK_NOT_NULL(fused);
        CHECK_NOT_NULL(plain);
        CHECK(ct_dtype_of(fused) == ct_dtype_of(plain) && ct_dtype_of(fused) == CT_F32);
        double *expected = ref_read(plain);
        CHECK_NOT_NULL(expected);
        CHECK_TENSOR(fused, expected);
        free(expected);
        CHECK_OK(ct_backward(ct_sum(fused, 0, NULL, false)));
        ct_tensor *g = ct_grad(w);
        CHECK(g && ct_dtype_of(g) == CT_F32);
        ct_scope_end();
        if (ct_test_failed()) return;
    }
}

/* Errors name the fused op; evaluation with a NaN keeps it (relu(NaN) is NaN). */
DEVICE_TEST(test_nn_batch_norm_relu_errors_and_nan) {
    ct_tensor *flat = ct_zeros(1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *c3 = ct_ones(1, (int64_t[]){3}, CT_F32, device);
    CHECK(ct_batch_norm_relu(flat, NULL, NULL, NULL, NULL, true, 0.1, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_batch_norm_relu: x has rank 1");
    CHECK(ct_batch_norm_relu(NULL, c3, c3, NULL, NULL, true, 0.1, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_batch_norm_relu: argument 1 is NULL");
    double values[3] = {NAN, -2.0, 3.0};
    ct_tensor *x = ref_tensor(values, 2, (int64_t[]){1, 3}, CT_F32, device);
    ct_tensor *y = ct_batch_norm_relu(x, c3, c3, NULL, NULL, false, 0.1, 0.0);
    CHECK_TENSOR(y, ((double[]){NAN, 0.0, 2.0}));
    ct_release(y);
    ct_release(x);
    ct_release(c3);
    ct_release(flat);
}

/* ct_batch_norm and ct_layer_norm against float64 references computed here: training (batch
 * statistics, running statistics updated in place with momentum and the unbiased variance)
 * and evaluation (running statistics), with and without weight and bias, ranks 2 to 4, f32
 * and f64, non-contiguous inputs and running statistics, and every error. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

typedef struct {
    int64_t n, c, inner;
    bool affine, training;
    double momentum, eps;
} bn_case;

/* y of batch norm over x (n, c, inner); rm and rv updated in training. */
static void batch_norm_reference(const bn_case *k, const double *x, const double *w,
                                 const double *b, double *rm, double *rv, double *y) {
    int64_t count = k->n * k->inner;
    for (int64_t ch = 0; ch < k->c; ch++) {
        double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < k->n; i++)
            for (int64_t j = 0; j < k->inner; j++) mean += x[(i * k->c + ch) * k->inner + j];
        mean /= (double)count;
        for (int64_t i = 0; i < k->n; i++)
            for (int64_t j = 0; j < k->inner; j++) {
                double d = x[(i * k->c + ch) * k->inner + j] - mean;
                var += d * d;
            }
        if (k->training) {
            rm[ch] = (1 - k->momentum) * rm[ch] + k->momentum * mean;
            rv[ch] = (1 - k->momentum) * rv[ch] + k->momentum * var / (double)(count - 1);
            var /= (double)count;
        } else {
            mean = rm[ch];
            var = rv[ch];
        }
        for (int64_t i = 0; i < k->n; i++)
            for (int64_t j = 0; j < k->inner; j++) {
                int64_t at = (i * k->c + ch) * k->inner + j;
                double v = (x[at] - mean) / sqrt(var + k->eps);
                y[at] = k->affine ? v * w[ch] + b[ch] : v;
            }
    }
}

static void check_batch_norm(ct_device device, const bn_case *k, int ndim, const int64_t *shape,
                             ct_dtype dtype, bool strided, uint64_t seed) {
    int64_t numel = ref_numel(ndim, shape), c = k->c;
    double *x = malloc(sizeof(double) * (size_t)numel), *y = malloc(sizeof(double) * (size_t)numel);
    double w[16], b[16], rm[16], rv[16];
    CHECK(x && y && c <= 16);
    ref_random(x, numel, seed, -2.0, 3.0);
    ref_random(w, c, seed + 1, 0.5, 1.5);
    ref_random(b, c, seed + 2, -1.0, 1.0);
    ref_random(rm, c, seed + 3, -0.5, 0.5);
    ref_random(rv, c, seed + 4, 0.5, 2.0);
    for (int64_t i = 0; i < numel; i++) x[i] = ref_round(x[i], dtype);
    for (int64_t i = 0; i < c; i++) {
        w[i] = ref_round(w[i], dtype), b[i] = ref_round(b[i], dtype);
        rm[i] = ref_round(rm[i], dtype), rv[i] = ref_round(rv[i], dtype);
    }
    ct_tensor *tx = (strided ? ref_tensor_strided : ref_tensor)(x, ndim, shape, dtype, device);
    ct_tensor *tw = k->affine ? ref_tensor(w, 1, &c, dtype, device) : NULL;
    ct_tensor *tb = k->affine ? ref_tensor_strided(b, 1, &c, dtype, device) : NULL;
    ct_tensor *trm = (strided ? ref_tensor_strided : ref_tensor)(rm, 1, &c, dtype, device);
    ct_tensor *trv = ref_tensor(rv, 1, &c, dtype, device);
    ct_tensor *out = ct_batch_norm(tx, trm, trv, tw, tb, k->training, k->momentum, k->eps);
    batch_norm_reference(k, x, w, b, rm, rv, y);
    CHECK_TENSOR(out, y);
    CHECK_TENSOR(trm, rm);
    CHECK_TENSOR(trv, rv);
    ct_release(out);
    ct_release(trv);
    ct_release(trm);
    ct_release(tb);
    ct_release(tw);
    ct_release(tx);
    free(y);
    free(x);
}

DEVICE_TEST(test_nn_norm_batch_norm_train_and_eval) {
    static const struct {
        int ndim;
        int64_t shape[4];
    } cases[] = {{2, {6, 3}}, {3, {4, 2, 5}}, {4, {3, 4, 2, 3}}, {4, {1, 2, 3, 3}}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int mode = 0; mode < 8; mode++) {
            const int64_t *s = cases[i].shape;
            int nd = cases[i].ndim;
            bn_case k = {s[0],
                         s[1],
                         ref_numel(nd - 2, s + 2),
                         mode & 1,
                         (mode & 2) != 0,
                         0.1 + 0.2 * (double)i,
                         1e-5};
            ct_dtype dtype = mode & 4 ? CT_F64 : CT_F32;
            check_batch_norm(device, &k, nd, s, dtype, (mode + (int)i) % 2, 10 * i + (size_t)mode);
            if (ct_test_failed()) return;
        }
}

/* Training without running statistics updates nothing; a large batch takes the OpenMP
 * split. */
DEVICE_TEST(test_nn_norm_batch_norm_no_running_stats) {
    int64_t shape[4] = {16, 3, 32, 32}, numel = 16 * 3 * 32 * 32;
    double *x = malloc(sizeof(double) * (size_t)numel), *y = malloc(sizeof(double) * (size_t)numel);
    double rm[3] = {0}, rv[3] = {1, 1, 1};
    CHECK(x && y);
    ref_random(x, numel, 5, -1.0, 4.0);
    for (int64_t i = 0; i < numel; i++) x[i] = ref_round(x[i], CT_F32);
    ct_tensor *tx = ref_tensor(x, 4, shape, CT_F32, device);
    ct_tensor *out = ct_batch_norm(tx, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    bn_case k = {16, 3, 1024, false, true, 0.1, 1e-5};
    batch_norm_reference(&k, x, NULL, NULL, rm, rv, y);
    CHECK_TENSOR(out, y);
    ct_release(out);
    ct_release(tx);
    free(y);
    free(x);
}

DEVICE_TEST(test_nn_norm_batch_norm_errors) {
    ct_tensor *x = ct_zeros(3, (int64_t[]){2, 3, 4}, CT_F32, device);
    ct_tensor *c3 = ct_ones(1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *c4 = ct_ones(1, (int64_t[]){4}, CT_F32, device);
    ct_tensor *flat = ct_zeros(1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *ints = ct_zeros(3, (int64_t[]){2, 3, 4}, CT_I32, device);
    ct_tensor *one = ct_zeros(2, (int64_t[]){1, 3}, CT_F32, device);
    CHECK(ct_batch_norm(flat, NULL, NULL, NULL, NULL, true, 0.1, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_batch_norm: x has rank 1; batch norm takes (N, C, ...)");
    CHECK(ct_batch_norm(x, c3, c3, c4, NULL, true, 0.1, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_batch_norm: weight (argument 4) has rank 1 and 4 elements");
    CHECK(ct_batch_norm(x, c4, c3, NULL, NULL, true, 0.1, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "running_mean (argument 2)");
    CHECK(ct_batch_norm(x, c3, NULL, NULL, NULL, false, 0.1, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "but running_var is NULL");
    CHECK(ct_batch_norm(ints, NULL, NULL, NULL, NULL, true, 0.1, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_batch_norm: argument 1 has dtype int32");
    CHECK(ct_batch_norm(one, NULL, NULL, NULL, NULL, true, 0.1, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "training needs more than 1 value per channel");
    CHECK(ct_batch_norm(NULL, c3, c3, NULL, NULL, true, 0.1, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_batch_norm: argument 1 is NULL");
    /* One value per channel is fine in evaluation. */
    ct_tensor *y = ct_batch_norm(one, c3, c3, NULL, NULL, false, 0.1, 0.0);
    CHECK_TENSOR(y, ((double[]){-1.0, -1.0, -1.0}));
    ct_release(y);
    ct_release(one);
    ct_release(ints);
    ct_release(flat);
    ct_release(c4);
    ct_release(c3);
    ct_release(x);
}

/* ---- layer norm ---- */

static void layer_norm_reference(const double *x, int64_t rows, int64_t n, const double *w,
                                 const double *b, double eps, double *y) {
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0.0, var = 0.0;
        for (int64_t j = 0; j < n; j++) mean += x[r * n + j] / (double)n;
        for (int64_t j = 0; j < n; j++) var += (x[r * n + j] - mean) * (x[r * n + j] - mean);
        var /= (double)n;
        for (int64_t j = 0; j < n; j++) {
            double v = (x[r * n + j] - mean) / sqrt(var + eps);
            y[r * n + j] = v * (w ? w[j] : 1.0) + (b ? b[j] : 0.0);
        }
    }
}

static void check_layer_norm(ct_device device, int ndim, const int64_t *shape, int k,
                             ct_dtype dtype, int params, bool strided, uint64_t seed) {
    int64_t numel = ref_numel(ndim, shape), n = ref_numel(k, shape + ndim - k);
    int64_t rows = n ? numel / n : 0;
    double *x = malloc(sizeof(double) * (size_t)(numel + 1));
    double *y = malloc(sizeof(double) * (size_t)(numel + 1)), w[64], b[64];
    CHECK(x && y && n <= 64);
    ref_random(x, numel, seed, -3.0, 2.0);
    ref_random(w, n, seed + 1, 0.5, 1.5);
    ref_random(b, n, seed + 2, -1.0, 1.0);
    for (int64_t i = 0; i < numel; i++) x[i] = ref_round(x[i], dtype);
    for (int64_t i = 0; i < n; i++) w[i] = ref_round(w[i], dtype), b[i] = ref_round(b[i], dtype);
    ct_tensor *tx = (strided ? ref_tensor_strided : ref_tensor)(x, ndim, shape, dtype, device);
    ct_tensor *tw = params & 1 ? ref_tensor(w, k, shape + ndim - k, dtype, device) : NULL;
    ct_tensor *tb = params & 2 ? ref_tensor_strided(b, k, shape + ndim - k, dtype, device) : NULL;
    ct_tensor *out = ct_layer_norm(tx, k, tw, tb, 1e-5);
    layer_norm_reference(x, rows, n, params & 1 ? w : NULL, params & 2 ? b : NULL, 1e-5, y);
    CHECK_TENSOR(out, y);
    CHECK(ct_ndim(out) == ndim && ct_numel(out) == numel);
    ct_release(out);
    ct_release(tb);
    ct_release(tw);
    ct_release(tx);
    free(y);
    free(x);
}

DEVICE_TEST(test_nn_norm_layer_norm_shapes) {
    static const struct {
        int ndim, k;
        int64_t shape[4];
    } cases[] = {{2, 1, {4, 6}}, {3, 2, {2, 3, 5}},    {3, 1, {2, 3, 5}},
                 {1, 1, {7}},    {4, 3, {2, 2, 3, 4}}, {2, 1, {0, 5}}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int mode = 0; mode < 8; mode++) {
            ct_dtype dtype = mode & 4 ? CT_F64 : CT_F32;
            check_layer_norm(device, cases[i].ndim, cases[i].shape, cases[i].k, dtype, mode & 3,
                             (mode + (int)i) % 2, 5 * i + (size_t)mode);
            if (ct_test_failed()) return;
        }
}

DEVICE_TEST(test_nn_norm_layer_norm_errors) {
    ct_tensor *x = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *w4 = ct_ones(1, (int64_t[]){4}, CT_F32, device);
    ct_tensor *ints = ct_zeros(2, (int64_t[]){2, 3}, CT_I64, device);
    CHECK(ct_layer_norm(x, 3, NULL, NULL, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_layer_norm: normalized_ndim is 3 for x of rank 2");
    CHECK(ct_layer_norm(x, 0, NULL, NULL, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "normalized_ndim is 0");
    CHECK(ct_layer_norm(x, 1, w4, NULL, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_layer_norm: weight (argument 3) has rank 1 and 4 elements");
    CHECK(ct_layer_norm(x, 1, NULL, w4, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "bias (argument 4)");
    CHECK(ct_layer_norm(ints, 1, NULL, NULL, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_layer_norm: argument 1 has dtype int64");
    CHECK(ct_layer_norm(NULL, 1, NULL, NULL, 1e-5) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_layer_norm: argument 1 is NULL");
    ct_release(ints);
    ct_release(w4);
    ct_release(x);
}

/* ---- gradient checks (float64, central differences) ---- */

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

typedef struct {
    bool training, affine;
    ct_tensor *running_mean, *running_var;
} bn_grad_case;

static ct_tensor *apply_batch_norm(ct_tensor *const *in, void *context) {
    const bn_grad_case *c = context;
    return ct_batch_norm(in[0], c->running_mean, c->running_var, c->affine ? in[1] : NULL,
                         c->affine ? in[2] : NULL, c->training, 0.1, 1e-5);
}

DEVICE_TEST(test_nn_norm_batch_norm_gradcheck) {
    int64_t shape[4] = {3, 2, 2, 3}, c = 2;
    for (int variant = 0; variant < 4; variant++) {
        bn_grad_case k = {variant & 1, (variant & 2) != 0, NULL, NULL};
        k.running_mean = ct_gradcheck_leaf(device, 1, &c, 3, -0.5, 0.5, false);
        k.running_var = ct_gradcheck_leaf(device, 1, &c, 4, 0.5, 2.0, false);
        ct_tensor *in[3] = {
            ct_gradcheck_leaf(device, 4, shape, 10 + (uint64_t)variant, -2.0, 2.0, true),
            ct_gradcheck_leaf(device, 1, &c, 11, 0.5, 1.5, true),
            ct_gradcheck_leaf(device, 1, &c, 12, -1.0, 1.0, true)};
        bool ok = in[0] && in[1] && in[2] && k.running_mean && k.running_var &&
                  ct_gradcheck(apply_batch_norm, k.affine ? 3 : 1, in, &k, EPS, ATOL, RTOL);
        for (int i = 0; i < 3; i++) ct_release(in[i]);
        ct_release(k.running_var);
        ct_release(k.running_mean);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "batch norm case %d", variant);
        if (!ok) return;
    }
}

typedef struct {
    int k;
    bool weight, bias;
} ln_grad_case;

static ct_tensor *apply_layer_norm(ct_tensor *const *in, void *context) {
    const ln_grad_case *c = context;
    return ct_layer_norm(in[0], c->k, c->weight ? in[1] : NULL, c->bias ? in[2] : NULL, 1e-5);
}

DEVICE_TEST(test_nn_norm_layer_norm_gradcheck) {
    int64_t shape[3] = {2, 3, 4};
    for (int variant = 0; variant < 8; variant++) {
        ln_grad_case k = {1 + variant / 4, (variant & 1) != 0, (variant & 2) != 0};
        const int64_t *ps = shape + 3 - k.k;
        ct_tensor *in[3] = {
            ct_gradcheck_leaf(device, 3, shape, 20 + (uint64_t)variant, -2.0, 2.0, true),
            ct_gradcheck_leaf(device, k.k, ps, 21, 0.5, 1.5, k.weight),
            ct_gradcheck_leaf(device, k.k, ps, 22, -1.0, 1.0, k.bias)};
        bool ok =
            in[0] && in[1] && in[2] && ct_gradcheck(apply_layer_norm, 3, in, &k, EPS, ATOL, RTOL);
        for (int i = 0; i < 3; i++) ct_release(in[i]);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "layer norm case %d", variant);
        if (!ok) return;
    }
}

/* Running statistics are updated without history, even when x requires grad. */
DEVICE_TEST(test_nn_norm_batch_norm_running_stats_untracked) {
    int64_t shape[2] = {4, 2}, c = 2;
    ct_tensor *x = ct_gradcheck_leaf(device, 2, shape, 1, -1.0, 1.0, true);
    ct_tensor *rm = ct_zeros(1, &c, CT_F64, device), *rv = ct_ones(1, &c, CT_F64, device);
    ct_tensor *y = ct_batch_norm(x, rm, rv, NULL, NULL, true, 0.5, 1e-5);
    CHECK(y && ct_requires_grad(y));
    CHECK(!ct_requires_grad(rm) && !ct_requires_grad(rv) && ct_is_leaf(rm));
    ct_release(y), ct_release(rv), ct_release(rm), ct_release(x);
}

/* f16 and bf16 compute in double and round once on the way out. */
DEVICE_TEST(test_nn_norm_half_dtypes) {
    int64_t shape[3] = {4, 3, 5};
    bn_case k = {4, 3, 5, true, true, 0.1, 1e-5};
    check_batch_norm(device, &k, 3, shape, CT_F16, true, 1);
    if (ct_test_failed()) return;
    k.training = false;
    check_batch_norm(device, &k, 3, shape, CT_BF16, false, 2);
    if (ct_test_failed()) return;
    check_layer_norm(device, 3, shape, 2, CT_F16, 3, false, 3);
    if (ct_test_failed()) return;
    check_layer_norm(device, 3, shape, 1, CT_BF16, 1, true, 4);
}

/* Enough rows for the OpenMP split of the layer-norm kernels. */
DEVICE_TEST(test_nn_norm_layer_norm_parallel) {
    int64_t shape[2] = {600, 64};
    check_layer_norm(device, 2, shape, 1, CT_F32, 3, false, 9);
}

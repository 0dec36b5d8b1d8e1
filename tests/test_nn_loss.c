/* ct_cross_entropy and ct_mse_loss against float64 references computed here: every
 * reduction, label smoothing, ignore_index (some rows, every row), int32 and int64 targets,
 * f32 and f64, non-contiguous logits, N = 1, large logits (1e4), broadcasting for MSE, and
 * every error with its message. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

/* PyTorch's cross-entropy: per-row (1 - ls) * nll + ls * mean_c(-logp_c), ignored rows 0;
 * mean divides by the rows not ignored. out gets n values (none) or one. */
static void cross_entropy_reference(const double *x, const double *target, int64_t n, int64_t c,
                                    const ct_cross_entropy_options *o, double *out) {
    double total = 0.0;
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {
        double loss = 0.0;
        if ((int64_t)target[i] != o->ignore_index) {
            double m = -INFINITY, sum = 0.0, mean_neg_logp = 0.0;
            for (int64_t k = 0; k < c; k++) m = fmax(m, x[i * c + k]);
            for (int64_t k = 0; k < c; k++) sum += exp(x[i * c + k] - m);
            double lse = m + log(sum);
            for (int64_t k = 0; k < c; k++) mean_neg_logp += (lse - x[i * c + k]) / (double)c;
            double nll = lse - x[i * c + (int64_t)target[i]];
            loss = (1.0 - o->label_smoothing) * nll + o->label_smoothing * mean_neg_logp;
            count++;
        }
        if (o->reduction == CT_REDUCTION_NONE) out[i] = loss;
        total += loss;
    }
    if (o->reduction == CT_REDUCTION_SUM) out[0] = total;
    if (o->reduction == CT_REDUCTION_MEAN) out[0] = count ? total / (double)count : NAN;
}

/* Targets in [0, c), with row i ignored (set to ignore) when ignore_every divides i + 1. */
static void make_targets(double *t, int64_t n, int64_t c, uint64_t seed, int64_t ignore,
                         int ignore_every) {
    ref_random(t, n, seed, 0.0, (double)c);
    for (int64_t i = 0; i < n; i++) {
        t[i] = floor(t[i]);
        if (ignore_every && (i + 1) % ignore_every == 0) t[i] = (double)ignore;
    }
}

static void check_cross_entropy(ct_device device, int64_t n, int64_t c, ct_dtype dtype,
                                const ct_cross_entropy_options *o, int ignore_every, bool strided,
                                double scale, uint64_t seed) {
    double *x = malloc(sizeof(double) * (size_t)(n * c + 1)), t[64], expected[64];
    CHECK(x && n <= 64);
    ref_random(x, n * c, seed, -scale, scale);
    for (int64_t i = 0; i < n * c; i++) x[i] = ref_round(x[i], dtype);
    make_targets(t, n, c, seed + 1, o->ignore_index, ignore_every);
    int64_t shape[2] = {n, c};
    ct_tensor *logits = (strided ? ref_tensor_strided : ref_tensor)(x, 2, shape, dtype, device);
    ct_tensor *target =
        (strided ? ref_tensor_strided : ref_tensor)(t, 1, &n, seed % 2 ? CT_I32 : CT_I64, device);
    ct_tensor *loss = ct_cross_entropy(logits, target, o);
    cross_entropy_reference(x, t, n, c, o, expected);
    CHECK_TENSOR(loss, expected);
    CHECK(ct_dtype_of(loss) == dtype);
    CHECK(ct_ndim(loss) == (o->reduction == CT_REDUCTION_NONE ? 1 : 0));
    ct_release(loss);
    ct_release(target);
    ct_release(logits);
    free(x);
}

DEVICE_TEST(test_nn_loss_cross_entropy_reductions) {
    for (int r = 0; r < 3; r++)
        for (int smoothing = 0; smoothing < 2; smoothing++)
            for (int dt = CT_F32; dt <= CT_F64; dt++) {
                ct_cross_entropy_options o = {(ct_reduction)r, smoothing ? 0.1 : 0.0, -100, false};
                uint64_t seed = (uint64_t)(r * 4 + smoothing * 2 + dt);
                check_cross_entropy(device, 9, 5, (ct_dtype)dt, &o, 0, seed % 2, 4.0, seed);
                if (ct_test_failed()) return;
                check_cross_entropy(device, 1, 3, (ct_dtype)dt, &o, 0, false, 4.0, seed + 50);
                if (ct_test_failed()) return;
            }
}

DEVICE_TEST(test_nn_loss_cross_entropy_defaults) {
    double x[6] = {1, 2, 3, -1, 0.5, 2}, t[2] = {2, -100};
    ct_tensor *logits = ref_tensor(x, 2, (int64_t[]){2, 3}, CT_F64, device);
    ct_tensor *target = ref_tensor(t, 1, (int64_t[]){2}, CT_I64, device);
    ct_tensor *loss = ct_cross_entropy(logits, target, NULL);
    double expected[1];
    ct_cross_entropy_options o = {CT_REDUCTION_MEAN, 0.0, -100, false};
    cross_entropy_reference(x, t, 2, 3, &o, expected);
    CHECK_TENSOR(loss, expected);
    ct_release(loss);
    ct_release(target);
    ct_release(logits);
}

/* unchecked_targets: the same loss and gradient as the checked call for good targets, with
 * nothing read back from the device (the checked call reads its check back on a device). */
DEVICE_TEST(test_nn_loss_cross_entropy_unchecked_targets) {
    double x[6] = {1, 2, 3, -1, 0.5, 2}, t[2] = {2, 0};
    double values[2][7]; /* [checked, unchecked][the loss, then the gradient's six elements] */
    uint64_t readbacks[2];
    for (int unchecked = 0; unchecked < 2; unchecked++) {
        ct_tensor *logits = ref_tensor(x, 2, (int64_t[]){2, 3}, CT_F64, device);
        ct_tensor *target = ref_tensor(t, 1, (int64_t[]){2}, CT_I64, device);
        CHECK_OK(ct_set_requires_grad(logits, true));
        ct_cross_entropy_options o = {CT_REDUCTION_MEAN, 0.1, -100, unchecked == 1};
        ct_transfer_stats_reset();
        ct_tensor *loss = ct_cross_entropy(logits, target, &o);
        ct_transfer_statistics stats;
        ct_transfer_stats(&stats);
        readbacks[unchecked] = stats.counters[CT_TRANSFER_D2H][1].count;
        CHECK_OK(ct_backward(loss));
        CHECK_OK(ct_item(loss, &values[unchecked][0]));
        ct_tensor *g = ct_grad(logits);
        double *grad = ref_read(g);
        ct_release(g);
        CHECK_NOT_NULL(grad);
        for (int i = 0; grad && i < 6; i++) values[unchecked][1 + i] = grad[i];
        free(grad);
        ct_release(loss);
        ct_release(target);
        ct_release(logits);
    }
    for (int i = 0; i < 7; i++) CHECK(values[0][i] == values[1][i]);
    CHECK(readbacks[1] == 0);
    CHECK(readbacks[0] == (device.type == CT_DEVICE_CPU ? 0u : 1u));
}

DEVICE_TEST(test_nn_loss_cross_entropy_ignore_index) {
    for (int r = 0; r < 3; r++)
        for (int smoothing = 0; smoothing < 2; smoothing++) {
            ct_cross_entropy_options o = {(ct_reduction)r, smoothing ? 0.2 : 0.0, 3, false};
            /* Some rows ignored (ignore_index 3 is also a valid class here). */
            check_cross_entropy(device, 12, 6, CT_F64, &o, 3, r == 1, 3.0, 60 + (uint64_t)r);
            if (ct_test_failed()) return;
            /* Every row ignored: mean is 0 / 0 (NaN, as PyTorch), sum 0, none zeros. */
            o.ignore_index = -7;
            check_cross_entropy(device, 4, 3, CT_F32, &o, 1, false, 3.0, 70 + (uint64_t)r);
            if (ct_test_failed()) return;
        }
}

DEVICE_TEST(test_nn_loss_cross_entropy_large_logits) {
    ct_cross_entropy_options o = {CT_REDUCTION_NONE, 0.1, -100, false};
    for (int dt = CT_F32; dt <= CT_F64; dt++) {
        check_cross_entropy(device, 6, 4, (ct_dtype)dt, &o, 0, false, 1e4, 80);
        if (ct_test_failed()) return;
    }
}

/* Enough rows for the kernel's OpenMP split. */
DEVICE_TEST(test_nn_loss_cross_entropy_parallel) {
    int64_t n = 64, c = 600;
    ct_cross_entropy_options o = {CT_REDUCTION_MEAN, 0.05, 1, false};
    check_cross_entropy(device, n, c, CT_F32, &o, 5, false, 6.0, 90);
}

/* A language model's loss over (B*T) x V logits: what the forward keeps for the backward is
 * the logits themselves (a reference, not a copy) and one log-sum-exp per row, never a second
 * N x V array of probabilities. */
DEVICE_TEST(test_nn_loss_cross_entropy_keeps_no_probabilities) {
    int64_t n = 64, v = 4096;
    ct_tensor *logits = ct_randn(2, (int64_t[]){n, v}, CT_F32, device);
    ct_tensor *target = ct_zeros(1, &n, CT_I64, device);
    CHECK(logits && target);
    CHECK(ct_set_requires_grad(logits, true) == CT_OK);
    ct_memory_statistics before, after;
    CHECK(ct_memory_stats(device, &before) == CT_OK);
    ct_tensor *loss = ct_cross_entropy(logits, target, NULL);
    CHECK(loss);
    CHECK(ct_memory_stats(device, &after) == CT_OK);
    size_t logits_bytes = (size_t)(n * v) * sizeof(float);
    CHECK(after.allocated - before.allocated < logits_bytes / 8);
    CHECK(ct_backward(loss) == CT_OK);
    ct_tensor *grad = ct_grad(logits);
    CHECK(grad != NULL);
    ct_release(grad);
    ct_release(loss);
    ct_release(target);
    ct_release(logits);
}

DEVICE_TEST(test_nn_loss_cross_entropy_errors) {
    ct_tensor *logits = ct_zeros(2, (int64_t[]){3, 4}, CT_F32, device);
    ct_tensor *bad = ref_tensor((double[]){1, 7, 2}, 1, (int64_t[]){3}, CT_I64, device);
    ct_tensor *negative = ref_tensor((double[]){-2, 0, 1}, 1, (int64_t[]){3}, CT_I32, device);
    ct_tensor *as_float = ct_zeros(1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *short_target = ct_zeros(1, (int64_t[]){2}, CT_I64, device);
    ct_tensor *flat = ct_zeros(1, (int64_t[]){4}, CT_F32, device);
    ct_tensor *ints = ct_zeros(2, (int64_t[]){3, 4}, CT_I32, device);
    CHECK(ct_cross_entropy(logits, bad, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_cross_entropy: target 7 is out of range for 4 classes");
    CHECK(ct_cross_entropy(logits, negative, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "target -2 is out of range");
    CHECK(ct_cross_entropy(logits, as_float, NULL) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_cross_entropy: the target has dtype float32");
    CHECK(ct_cross_entropy(ints, bad, NULL) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "argument 1 has dtype int32");
    CHECK(ct_cross_entropy(logits, short_target, NULL) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "target must be (N,) = (3,)");
    CHECK(ct_cross_entropy(flat, bad, NULL) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "logits have rank 1; they must be (N, C)");
    ct_cross_entropy_options o = {CT_REDUCTION_MEAN, 1.0, -100, false};
    CHECK(ct_cross_entropy(logits, negative, &o) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "label_smoothing is 1; it must be in [0, 1)");
    o.label_smoothing = NAN;
    CHECK(ct_cross_entropy(logits, negative, &o) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "label_smoothing is nan");
    o = (ct_cross_entropy_options){(ct_reduction)9, 0.0, -100, false};
    CHECK(ct_cross_entropy(logits, negative, &o) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "reduction 9 is not a ct_reduction");
    CHECK(ct_cross_entropy(NULL, bad, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_cross_entropy: argument 1 is NULL");
    ct_release(ints);
    ct_release(flat);
    ct_release(short_target);
    ct_release(as_float);
    ct_release(negative);
    ct_release(bad);
    ct_release(logits);
}

/* ---- MSE ---- */

static void check_mse(ct_device device, int na, const int64_t *sa, int nb, const int64_t *sb,
                      ct_dtype dtype, ct_reduction reduction, uint64_t seed) {
    int no = na >= nb ? na : nb;
    int64_t so[8];
    for (int d = 0; d < no; d++) {
        int64_t da = d - (no - na) >= 0 ? sa[d - (no - na)] : 1;
        int64_t db = d - (no - nb) >= 0 ? sb[d - (no - nb)] : 1;
        so[d] = da > db ? da : db;
    }
    int64_t n = ref_numel(no, so), a_n = ref_numel(na, sa), b_n = ref_numel(nb, sb);
    double a[64], b[64], expected[64], total = 0.0;
    ref_random(a, a_n, seed, -3.0, 3.0);
    ref_random(b, b_n, seed + 1, -3.0, 3.0);
    for (int64_t i = 0; i < a_n; i++) a[i] = ref_round(a[i], dtype);
    for (int64_t i = 0; i < b_n; i++) b[i] = ref_round(b[i], dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t at[8], ia[8], ib[8];
        ref_unravel(i, no, so, at);
        for (int d = 0; d < na; d++) ia[d] = sa[d] == 1 ? 0 : at[d + no - na];
        for (int d = 0; d < nb; d++) ib[d] = sb[d] == 1 ? 0 : at[d + no - nb];
        double diff = a[ref_ravel(na, sa, ia)] - b[ref_ravel(nb, sb, ib)];
        expected[i] = diff * diff;
        total += diff * diff;
    }
    if (reduction == CT_REDUCTION_SUM) expected[0] = total;
    if (reduction == CT_REDUCTION_MEAN) expected[0] = total / (double)n;
    ct_tensor *ta = ref_tensor_strided(a, na, sa, dtype, device);
    ct_tensor *tb = ref_tensor(b, nb, sb, dtype, device);
    ct_tensor *loss = ct_mse_loss(ta, tb, reduction);
    CHECK_TENSOR(loss, expected);
    CHECK(ct_ndim(loss) == (reduction == CT_REDUCTION_NONE ? no : 0));
    ct_release(loss);
    ct_release(tb);
    ct_release(ta);
}

DEVICE_TEST(test_nn_loss_mse_reductions_and_broadcast) {
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s41[2] = {4, 1};
    for (int r = 0; r < 3; r++)
        for (int dt = CT_F32; dt <= CT_F64; dt++) {
            check_mse(device, 2, s23, 2, s23, (ct_dtype)dt, (ct_reduction)r, 3 + (uint64_t)r);
            if (ct_test_failed()) return;
            check_mse(device, 2, s23, 1, s3, (ct_dtype)dt, (ct_reduction)r, 5 + (uint64_t)r);
            if (ct_test_failed()) return;
            check_mse(device, 2, s41, 1, s3, (ct_dtype)dt, (ct_reduction)r, 7 + (uint64_t)r);
            if (ct_test_failed()) return;
        }
}

DEVICE_TEST(test_nn_loss_mse_errors) {
    ct_tensor *a = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *b = ct_zeros(1, (int64_t[]){4}, CT_F32, device);
    ct_tensor *i = ct_zeros(2, (int64_t[]){2, 3}, CT_I64, device);
    CHECK(ct_mse_loss(a, b, CT_REDUCTION_MEAN) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_mse_loss: shapes");
    CHECK(ct_mse_loss(a, i, CT_REDUCTION_MEAN) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_mse_loss: argument 2 has dtype int64");
    CHECK(ct_mse_loss(a, a, (ct_reduction)-1) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_mse_loss: reduction -1");
    CHECK(ct_mse_loss(a, NULL, CT_REDUCTION_SUM) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_mse_loss: argument 2 is NULL");
    ct_release(i);
    ct_release(b);
    ct_release(a);
}

/* ---- gradient checks (float64, central differences) ---- */

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

typedef struct {
    ct_cross_entropy_options options;
    const ct_tensor *target;
} ce_case;

static ct_tensor *apply_cross_entropy(ct_tensor *const *in, void *context) {
    const ce_case *c = context;
    return ct_cross_entropy(in[0], c->target, &c->options);
}

DEVICE_TEST(test_nn_loss_cross_entropy_gradcheck) {
    int64_t n = 6, c = 5, shape[2] = {6, 5};
    double t[6];
    for (int variant = 0; variant < 12; variant++) {
        int r = variant % 3, smoothing = (variant / 3) % 2, ignoring = variant / 6;
        make_targets(t, n, c, 30 + (uint64_t)variant, 2, ignoring ? 3 : 0);
        ce_case k = {{(ct_reduction)r, smoothing ? 0.15 : 0.0, ignoring ? 2 : -100, false}, NULL};
        ct_tensor *target = ref_tensor(t, 1, &n, variant % 2 ? CT_I32 : CT_I64, device);
        ct_tensor *x = ct_gradcheck_leaf(device, 2, shape, 40 + (uint64_t)variant, -3.0, 3.0, true);
        k.target = target;
        bool ok = x && target && ct_gradcheck(apply_cross_entropy, 1, &x, &k, EPS, ATOL, RTOL);
        ct_release(x);
        ct_release(target);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "cross-entropy case %d", variant);
        if (!ok) return;
    }
}

/* The gradient of a mean loss over large logits is finite: softmax minus one-hot, / N. */
DEVICE_TEST(test_nn_loss_cross_entropy_backward_large_logits) {
    double x[4] = {1e4, 0.0, -1e4, 1e4}, t[2] = {1, 0};
    ct_tensor *logits = ref_tensor(x, 2, (int64_t[]){2, 2}, CT_F64, device);
    ct_tensor *target = ref_tensor(t, 1, (int64_t[]){2}, CT_I64, device);
    CHECK_OK(ct_set_requires_grad(logits, true));
    ct_tensor *loss = ct_cross_entropy(logits, target, NULL);
    CHECK_OK(ct_backward(loss));
    ct_tensor *g = ct_grad(logits);
    /* row 0: softmax (1, 0), target 1: (1, -1) / 2; row 1: softmax (0, 1), target 0. */
    CHECK_TENSOR(g, ((double[]){0.5, -0.5, -0.5, 0.5}));
    ct_release(g);
    ct_release(loss);
    ct_release(target);
    ct_release(logits);
}

typedef struct {
    ct_reduction reduction;
} mse_case;

static ct_tensor *apply_mse(ct_tensor *const *in, void *context) {
    return ct_mse_loss(in[0], in[1], ((const mse_case *)context)->reduction);
}

DEVICE_TEST(test_nn_loss_mse_gradcheck) {
    int64_t s23[2] = {2, 3}, s3[1] = {3};
    for (int r = 0; r < 3; r++)
        for (int broadcast = 0; broadcast < 2; broadcast++) {
            mse_case k = {(ct_reduction)r};
            ct_tensor *in[2] = {ct_gradcheck_leaf(device, 2, s23, 7 + (uint64_t)r, -2.0, 2.0, true),
                                broadcast ? ct_gradcheck_leaf(device, 1, s3, 9, -2.0, 2.0, true)
                                          : ct_gradcheck_leaf(device, 2, s23, 9, -2.0, 2.0, true)};
            bool ok = in[0] && in[1] && ct_gradcheck(apply_mse, 2, in, &k, EPS, ATOL, RTOL);
            ct_release(in[1]);
            ct_release(in[0]);
            if (!ok) ct_test_fail(__FILE__, __LINE__, "mse case %d/%d", r, broadcast);
            if (!ok) return;
        }
}

DEVICE_TEST(test_nn_loss_cross_entropy_half_dtypes) {
    ct_cross_entropy_options o = {CT_REDUCTION_NONE, 0.1, 2, false};
    check_cross_entropy(device, 8, 5, CT_F16, &o, 3, false, 3.0, 11);
    if (ct_test_failed()) return;
    o.reduction = CT_REDUCTION_SUM;
    check_cross_entropy(device, 8, 5, CT_BF16, &o, 0, true, 3.0, 12);
}

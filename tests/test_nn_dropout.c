/* ct_dropout: the mask follows the global Philox stream bit for bit (a reference built
 * here from ct_philox4x32_10 and random.h's layout), the same seed gives the same mask,
 * the kept fraction is close to 1 - p over 1e5 elements, the identity cases (evaluation,
 * p = 0) return x itself, p = 1 gives zeros, and bad arguments fail. */
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

/* Whether element i of a draw at block offset 0 of stream seed is kept. */
static bool reference_keep(uint64_t seed, int64_t i, double p) {
    uint32_t counter[4] = {(uint32_t)(i / 4), (uint32_t)((uint64_t)(i / 4) >> 32), 0, 0};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, w[4];
    ct_philox4x32_10(counter, key, w);
    return (double)w[i % 4] / 4294967296.0 >= p;
}

DEVICE_TEST(test_nn_dropout_matches_philox_stream) {
    int64_t shape[2] = {7, 9}, n = 63;
    double x[63], expected[63];
    ref_random(x, n, 3, -2.0, 2.0);
    for (int dt = CT_F32; dt <= CT_F64; dt++) {
        for (int64_t i = 0; i < n; i++) x[i] = ref_round(x[i], (ct_dtype)dt);
        double p = 0.3, scale = 1.0 / (1.0 - p);
        for (int64_t i = 0; i < n; i++)
            expected[i] = reference_keep(1234, i, p) ? x[i] * scale : 0.0;
        ct_manual_seed(1234);
        ct_tensor *t = ref_tensor_strided(x, 2, shape, (ct_dtype)dt, device);
        ct_tensor *y = ct_dropout(t, p, true);
        CHECK_TENSOR(y, expected);
        ct_release(y);
        ct_release(t);
    }
}

DEVICE_TEST(test_nn_dropout_same_seed_same_mask) {
    int64_t shape[1] = {1001};
    ct_tensor *x = ct_ones(1, shape, CT_F32, device);
    ct_manual_seed(77);
    ct_tensor *a = ct_dropout(x, 0.5, true);
    ct_tensor *b = ct_dropout(x, 0.5, true); /* the stream has moved on: another mask */
    ct_manual_seed(77);
    ct_tensor *c = ct_dropout(x, 0.5, true);
    double *va = ref_read(a), *vb = ref_read(b), *vc = ref_read(c);
    CHECK(va && vb && vc);
    int differ = 0;
    for (int i = 0; i < 1001; i++) {
        CHECK(va[i] == vc[i]);
        CHECK(va[i] == 0.0 || va[i] == 2.0);
        differ += va[i] != vb[i];
    }
    CHECK(differ > 100);
    free(vc), free(vb), free(va);
    ct_release(c), ct_release(b), ct_release(a), ct_release(x);
}

/* Over 1e5 elements the kept fraction has standard deviation sqrt(p(1-p)/1e5) < 0.0016;
 * 0.01 is more than six of them. */
DEVICE_TEST(test_nn_dropout_keep_fraction) {
    int64_t shape[2] = {100, 1000};
    ct_tensor *x = ct_ones(2, shape, CT_F32, device);
    const double ps[3] = {0.1, 0.5, 0.9};
    for (int k = 0; k < 3; k++) {
        ct_tensor *y = ct_dropout(x, ps[k], true);
        double *v = ref_read(y);
        CHECK(v);
        int64_t kept = 0;
        for (int64_t i = 0; i < 100000; i++) kept += v[i] != 0.0;
        free(v);
        ct_release(y);
        CHECK_NEAR((double)kept / 1e5, 1.0 - ps[k], 0.01);
    }
    ct_release(x);
}

DEVICE_TEST(test_nn_dropout_identity_and_all) {
    ct_tensor *x = ct_full(2, (int64_t[]){3, 4}, 1.5, CT_F64, device);
    ct_tensor *same = ct_dropout(x, 0.5, false), *zero_p = ct_dropout(x, 0.0, true);
    CHECK(same == x && zero_p == x);
    ct_release(zero_p);
    ct_release(same);
    ct_tensor *all = ct_dropout(x, 1.0, true);
    double zeros[12] = {0};
    CHECK_TENSOR(all, zeros);
    ct_release(all);
    ct_tensor *empty = ct_zeros(1, (int64_t[]){0}, CT_F32, device);
    ct_tensor *e = ct_dropout(empty, 0.5, true);
    CHECK(e && ct_numel(e) == 0);
    ct_release(e);
    ct_release(empty);
    ct_release(x);
}

DEVICE_TEST(test_nn_dropout_errors) {
    ct_tensor *x = ct_ones(1, (int64_t[]){4}, CT_F32, device);
    ct_tensor *i = ct_ones(1, (int64_t[]){4}, CT_I32, device);
    CHECK(ct_dropout(x, -0.1, true) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_dropout: p is -0.1; the probability");
    CHECK(ct_dropout(x, 1.5, false) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "p is 1.5");
    CHECK(ct_dropout(x, NAN, true) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "p is nan");
    CHECK(ct_dropout(i, 0.5, true) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_dropout: argument 1 has dtype int32");
    CHECK(ct_dropout(NULL, 0.5, true) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_dropout: argument 1 is NULL");
    ct_release(i);
    ct_release(x);
}

/* ---- gradient checks (float64, central differences) ---- */

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

static ct_tensor *apply_dropout(ct_tensor *const *in, void *context) {
    return ct_dropout(in[0], *(const double *)context, true);
}

/* ct_gradcheck reseeds the stream before every evaluation, so each sees one mask. */
DEVICE_TEST(test_nn_dropout_gradcheck) {
    const double ps[2] = {0.3, 1.0};
    for (int k = 0; k < 2; k++) {
        ct_tensor *x = ct_gradcheck_leaf(device, 2, (int64_t[]){4, 5}, 3, -1.0, 1.0, true);
        bool ok = x && ct_gradcheck(apply_dropout, 1, &x, (void *)&ps[k], EPS, ATOL, RTOL);
        ct_release(x);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "dropout p = %g", ps[k]);
        if (!ok) return;
    }
}

/* ct__qkv_attention (ops/attention_qkv.c: causal self-attention read straight from a fused
 * q, k, v projection, the output in merged heads): against a float64 reference written here,
 * with odd head widths, one token, and more tokens than a key block; its values and
 * gradients against the public composite (split, heads transposed, the attention op, heads
 * merged), dropout included; the finite-difference gradient check; bfloat16; refused
 * arguments. On the CPU it is the kernel's strided path; on the fake GPU the composite. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"
#include "ops/nn_impl.h"

/* A case: batch, tokens, heads, head width. */
typedef struct qkv_case {
    int64_t b, t, h, d;
} qkv_case;

static const qkv_case cases[] = {
    {2, 5, 2, 3},  /* odd head width */
    {1, 1, 3, 4},  /* one token */
    {2, 70, 2, 8}, /* more than one block of keys and of queries */
    {1, 130, 1, 5},
};

/* out (b, t, h * d) from qkv (b, t, 3 h d) in float64, the causal softmax row by row. */
static void reference(const qkv_case *c, const double *qkv, double scale, double *out) {
    int64_t w = c->h * c->d, row = 3 * w;
    double *p = malloc(sizeof(double) * (size_t)c->t);
    for (int64_t b = 0; p && b < c->b; b++)
        for (int64_t h = 0; h < c->h; h++)
            for (int64_t i = 0; i < c->t; i++) {
                const double *q = qkv + (b * c->t + i) * row + h * c->d;
                double most = -INFINITY, sum = 0;
                for (int64_t j = 0; j <= i; j++) {
                    const double *k = qkv + (b * c->t + j) * row + w + h * c->d;
                    double s = 0;
                    for (int64_t e = 0; e < c->d; e++) s += q[e] * k[e];
                    p[j] = s * scale;
                    most = p[j] > most ? p[j] : most;
                }
                for (int64_t j = 0; j <= i; j++) sum += p[j] = exp(p[j] - most);
                double *o = out + (b * c->t + i) * w + h * c->d;
                for (int64_t e = 0; e < c->d; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j <= i; j++)
                        acc += p[j] * qkv[(b * c->t + j) * row + 2 * w + h * c->d + e];
                    o[e] = acc / sum;
                }
            }
    free(p);
}

static ct_tensor *random_qkv(const qkv_case *c, uint64_t seed, ct_dtype dtype, ct_device device,
                             double **values) {
    int64_t shape[3] = {c->b, c->t, 3 * c->h * c->d}, n = ref_numel(3, shape);
    double *v = malloc(sizeof(double) * (size_t)n);
    if (!v) return NULL;
    ref_random(v, n, seed, -1.5, 1.5);
    for (int64_t i = 0; i < n; i++) v[i] = ref_round(v[i], dtype);
    ct_tensor *t = ref_tensor(v, 3, shape, dtype, device);
    if (values)
        *values = v;
    else
        free(v);
    return t;
}

DEVICE_TEST(test_attention_qkv_matches_float64_reference) {
    const ct_dtype dtypes[2] = {CT_F32, CT_F64};
    for (int n = 0; n < (int)(sizeof cases / sizeof cases[0]); n++)
        for (int k = 0; k < 2; k++) {
            const qkv_case *c = &cases[n];
            double *values = NULL, scale = 1.0 / sqrt((double)c->d);
            ct_tensor *qkv = random_qkv(c, 10 + (uint64_t)n, dtypes[k], device, &values);
            CHECK_NOT_NULL(qkv);
            int64_t numel = c->b * c->t * c->h * c->d;
            double *expected = malloc(sizeof(double) * (size_t)numel);
            CHECK_NOT_NULL(expected);
            reference(c, values, scale, expected);
            ct_tensor *y = ct__qkv_attention(qkv, c->h, 0.0, scale);
            CHECK_NOT_NULL(y);
            CHECK(ct_ndim(y) == 3 && ct_shape(y)[2] == c->h * c->d);
            double *got = ref_read(y), worst = 0;
            for (int64_t i = 0; got && i < numel; i++) {
                double d = fabs(got[i] - expected[i]);
                worst = d > worst || isnan(d) ? d : worst;
            }
            CHECK(got != NULL);
            if (worst > (dtypes[k] == CT_F32 ? 2e-6 : 1e-13))
                ct_test_fail(__FILE__, __LINE__, "case %d %s: max error %g", n,
                             ct_dtype_name(dtypes[k]), worst);
            free(got), free(expected), free(values);
            ct_release(y), ct_release(qkv);
        }
}

/* (B, T, width) -> (B, heads, T, width / heads). */
static ct_tensor *split_heads(const ct_tensor *x, int64_t heads) {
    const int64_t *s = ct_shape(x);
    return ct_transpose(ct_reshape(x, 4, (int64_t[]){s[0], s[1], heads, s[2] / heads}), 1, 2);
}

/* The attention through the public ops, as the GPT wrote it before the fused op. */
static ct_tensor *composite(const ct_tensor *qkv, int64_t heads, double p, double scale) {
    const int64_t *s = ct_shape(qkv);
    int64_t b = s[0], t = s[1], width = s[2] / 3;
    ct_tensor *parts[3] = {NULL, NULL, NULL};
    int count = 0;
    if (ct_split(qkv, width, 2, parts, 3, &count) != CT_OK) return NULL;
    ct_tensor *y =
        ct_scaled_dot_product_attention(split_heads(parts[0], heads), split_heads(parts[1], heads),
                                        split_heads(parts[2], heads), NULL, true, p, scale);
    return ct_reshape(ct_transpose(y, 1, 2), 3, (int64_t[]){b, t, width});
}

/* y and the gradient of qkv for sum(u * y), fused or composite, from seed's dropout draws. */
static bool run(bool fused, ct_tensor *qkv, int64_t heads, double p, const ct_tensor *u,
                ct_tensor **y, ct_tensor **grad) {
    ct_manual_seed(77);
    if (ct_scope_begin() != CT_OK) return false;
    double scale = 0.4;
    *y = fused ? ct__qkv_attention(qkv, heads, p, scale) : composite(qkv, heads, p, scale);
    bool ok = *y && ct_backward_with(*y, u, false) == CT_OK;
    if (ok) ct_keep(*y);
    ct_scope_end();
    *grad = ok ? ct_grad(qkv) : NULL;
    ct_set_grad(qkv, NULL);
    return ok && *grad;
}

static void same_as_composite(ct_device device, ct_dtype dtype, double tolerance) {
    for (int n = 0; n < (int)(sizeof cases / sizeof cases[0]); n++)
        for (int drop = 0; drop < 2; drop++) {
            const qkv_case *c = &cases[n];
            ct_tensor *qkv = random_qkv(c, 40 + (uint64_t)n, dtype, device, NULL);
            int64_t ushape[3] = {c->b, c->t, c->h * c->d};
            double *uv = malloc(sizeof(double) * (size_t)ref_numel(3, ushape));
            CHECK_NOT_NULL(uv);
            ref_random(uv, ref_numel(3, ushape), 50 + (uint64_t)n, -1, 1);
            ct_tensor *u = ref_tensor(uv, 3, ushape, dtype, device);
            free(uv);
            CHECK(qkv && u);
            CHECK_OK(ct_set_requires_grad(qkv, true));
            ct_tensor *y[2], *g[2];
            double p = drop ? 0.3 : 0.0;
            for (int k = 0; k < 2; k++) CHECK(run(k == 1, qkv, c->h, p, u, &y[k], &g[k]));
            double dy = ref_max_diff(y[0], y[1], NULL), dg = ref_max_diff(g[0], g[1], NULL);
            if (dy > tolerance || dg > tolerance)
                ct_test_fail(__FILE__, __LINE__, "case %d %s dropout %g: output %g, gradient %g", n,
                             ct_dtype_name(dtype), p, dy, dg);
            for (int k = 0; k < 2; k++) ct_release(y[k]), ct_release(g[k]);
            ct_release(u), ct_release(qkv);
        }
}

/* The kernel reads and writes the same rows the composite's copies hold, in the same order
 * of sums: the same bits. */
DEVICE_TEST(test_attention_qkv_same_as_composite) {
    same_as_composite(device, CT_F32, 0.0);
    same_as_composite(device, CT_F64, 0.0);
}

/* bfloat16 operands are converted row by row in the kernel: the composite's values. */
DEVICE_TEST(test_attention_qkv_bfloat16) { same_as_composite(device, CT_BF16, 0.0); }

typedef struct grad_context {
    int64_t heads;
    double p;
} grad_context;

static ct_tensor *apply(ct_tensor *const *in, void *context) {
    const grad_context *g = context;
    return ct__qkv_attention(in[0], g->heads, g->p, 0.7);
}

DEVICE_TEST(test_attention_qkv_gradcheck) {
    const qkv_case small[] = {{2, 5, 2, 3}, {1, 1, 2, 2}, {1, 67, 1, 2}};
    for (int n = 0; n < 3; n++)
        for (int drop = 0; drop < 2; drop++) {
            const qkv_case *c = &small[n];
            ct_tensor *in[1] = {ct_gradcheck_leaf(
                device, 3, (int64_t[]){c->b, c->t, 3 * c->h * c->d}, 60 + n, -1, 1, true)};
            CHECK_NOT_NULL(in[0]);
            grad_context g = {c->h, drop ? 0.3 : 0.0};
            bool ok = ct_gradcheck(apply, 1, in, &g, 1e-6, 1e-7, 1e-5);
            ct_release(in[0]);
            if (!ok) {
                ct_test_fail(__FILE__, __LINE__, "gradient case %d, dropout %d", n, drop);
                return;
            }
        }
}

DEVICE_TEST(test_attention_qkv_refuses_bad_arguments) {
    ct_tensor *qkv = ct_zeros(3, (int64_t[]){1, 4, 12}, CT_F32, device);
    ct_tensor *flat = ct_zeros(2, (int64_t[]){4, 12}, CT_F32, device);
    ct_tensor *ints = ct_zeros(3, (int64_t[]){1, 4, 12}, CT_I32, device);
    CHECK(qkv && flat && ints);
    CHECK(ct__qkv_attention(qkv, 3, 0.0, 1.0) == NULL); /* 12 is not 3 * a multiple of 3 */
    CHECK_ERROR(CT_ERR_SHAPE, "3 * width");
    CHECK(ct__qkv_attention(flat, 2, 0.0, 1.0) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "rank 2");
    CHECK(ct__qkv_attention(qkv, 2, 1.5, 1.0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "dropout_p");
    CHECK(ct__qkv_attention(ints, 2, 0.0, 1.0) == NULL);
    CHECK(ct_last_status() == CT_ERR_DTYPE);
    ct_release(qkv), ct_release(flat), ct_release(ints);
}

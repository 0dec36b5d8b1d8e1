/* ct_scaled_dot_product_attention against a float64 reference computed naively here (the
 * full score matrix, softmax, product): causal, bool and float masks (broadcast ones too),
 * odd sequence lengths and head sizes, one query, more or fewer queries than keys, value
 * heads of another size, rows that see no key, no batch axes; f16 and bf16 within their
 * tolerance; gradient checks in float64 (with dropout too); a backward whose two runs give
 * the same bits; the memory at T = 4096 (linear, no T x T matrix); and the errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

/* The mask a case uses: none, causal, or one of these kinds of bool or float masks. */
typedef enum { MASK_NONE, MASK_CAUSAL, MASK_BOOL_FULL, MASK_BOOL_ROW, MASK_FLOAT_HEADS } mask_kind;

typedef struct {
    int64_t b, h, tq, tk, d, dv;
    mask_kind mask;
    double scale; /* 0: the default */
} attn_case;

/* The mask's shape for the case: (b, h, tq, tk), (tk) or (b, 1, tq, tk). */
static int mask_shape(const attn_case *c, int64_t *shape) {
    switch (c->mask) {
    case MASK_BOOL_FULL:
        memcpy(shape, (int64_t[]){c->b, c->h, c->tq, c->tk}, 4 * sizeof *shape);
        return 4;
    case MASK_BOOL_ROW: shape[0] = c->tk; return 1;
    case MASK_FLOAT_HEADS:
        memcpy(shape, (int64_t[]){c->b, 1, c->tq, c->tk}, 4 * sizeof *shape);
        return 4;
    default: return 0;
    }
}

/* The mask's values: bool masks hide about a third of the keys (and all of row 0 of the full
 * one: a row that sees nothing); float masks add values in [-2, 2) and -inf to some. */
static void mask_values(const attn_case *c, double *m, int64_t n, uint64_t seed) {
    ref_random(m, n, seed, -2.0, 2.0);
    for (int64_t e = 0; e < n; e++) {
        if (c->mask == MASK_FLOAT_HEADS) {
            if (m[e] < -1.6) m[e] = -INFINITY;
        } else {
            m[e] = m[e] > -0.7 ? 1.0 : 0.0;
        }
    }
    if (c->mask == MASK_BOOL_FULL)
        for (int64_t j = 0; j < c->tk; j++) m[j] = 0.0;
}

/* The additive term of key j for row i of problem (b, h): 0, -inf, or the float value. */
static double mask_term(const attn_case *c, const double *m, int64_t b, int64_t h, int64_t i,
                        int64_t j) {
    switch (c->mask) {
    case MASK_CAUSAL: return j > i ? -INFINITY : 0.0;
    case MASK_BOOL_FULL: return m[((b * c->h + h) * c->tq + i) * c->tk + j] != 0 ? 0.0 : -INFINITY;
    case MASK_BOOL_ROW: return m[j] != 0 ? 0.0 : -INFINITY;
    case MASK_FLOAT_HEADS: return m[(b * c->tq + i) * c->tk + j];
    default: return 0.0;
    }
}

/* out (b, h, tq, dv) = softmax(q k^T * scale + mask) v in double; a row that sees no key is 0. */
static void attention_reference(const attn_case *c, const double *q, const double *k,
                                const double *v, const double *m, double *out) {
    double scale = c->scale != 0 ? c->scale : 1.0 / sqrt((double)c->d);
    double *s = malloc(sizeof(double) * (size_t)(c->tk + 1));
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->h; h++) {
            int64_t p = b * c->h + h;
            for (int64_t i = 0; i < c->tq; i++) {
                double mx = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j < c->tk; j++) {
                    double dot = 0.0;
                    for (int64_t e = 0; e < c->d; e++)
                        dot += q[(p * c->tq + i) * c->d + e] * k[(p * c->tk + j) * c->d + e];
                    s[j] = dot * scale + mask_term(c, m, b, h, i, j);
                    mx = fmax(mx, s[j]);
                }
                for (int64_t j = 0; j < c->tk; j++) sum += s[j] == -INFINITY ? 0.0 : exp(s[j] - mx);
                for (int64_t e = 0; e < c->dv; e++) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < c->tk; j++)
                        if (s[j] != -INFINITY)
                            acc += exp(s[j] - mx) / sum * v[(p * c->tk + j) * c->dv + e];
                    out[(p * c->tq + i) * c->dv + e] = acc;
                }
            }
        }
    free(s);
}

/* The case's tensors (values rounded to dtype) and, when asked, the reference output. */
typedef struct {
    double *q, *k, *v, *m, *expected;
    ct_tensor *tq, *tk, *tv, *tm;
} attn_data;

static void data_free(attn_data *a) {
    free(a->q), free(a->k), free(a->v), free(a->m), free(a->expected);
    ct_release(a->tq), ct_release(a->tk), ct_release(a->tv), ct_release(a->tm);
}

static bool data_make(const attn_case *c, ct_dtype dtype, ct_device device, uint64_t seed,
                      attn_data *a) {
    memset(a, 0, sizeof *a);
    int64_t nq = c->b * c->h * c->tq * c->d, nk = c->b * c->h * c->tk * c->d;
    int64_t nv = c->b * c->h * c->tk * c->dv, no = c->b * c->h * c->tq * c->dv;
    int64_t mshape[4];
    int mnd = mask_shape(c, mshape);
    int64_t nm = ref_numel(mnd, mshape);
    a->q = malloc(sizeof(double) * (size_t)(nq + 1));
    a->k = malloc(sizeof(double) * (size_t)(nk + 1));
    a->v = malloc(sizeof(double) * (size_t)(nv + 1));
    a->m = malloc(sizeof(double) * (size_t)(nm + 1));
    a->expected = malloc(sizeof(double) * (size_t)(no + 1));
    if (!a->q || !a->k || !a->v || !a->m || !a->expected) return false;
    ref_random(a->q, nq, seed, -1.5, 1.5);
    ref_random(a->k, nk, seed + 1, -1.5, 1.5);
    ref_random(a->v, nv, seed + 2, -1.0, 1.0);
    for (int64_t e = 0; e < nq; e++) a->q[e] = ref_round(a->q[e], dtype);
    for (int64_t e = 0; e < nk; e++) a->k[e] = ref_round(a->k[e], dtype);
    for (int64_t e = 0; e < nv; e++) a->v[e] = ref_round(a->v[e], dtype);
    if (mnd) mask_values(c, a->m, nm, seed + 3);
    ct_dtype mdtype = c->mask == MASK_FLOAT_HEADS ? dtype : CT_BOOL;
    if (mdtype != CT_BOOL)
        for (int64_t e = 0; e < nm; e++) a->m[e] = ref_round(a->m[e], dtype);
    attention_reference(c, a->q, a->k, a->v, a->m, a->expected);
    a->tq = ref_tensor(a->q, 4, (int64_t[]){c->b, c->h, c->tq, c->d}, dtype, device);
    a->tk = ref_tensor(a->k, 4, (int64_t[]){c->b, c->h, c->tk, c->d}, dtype, device);
    a->tv = ref_tensor(a->v, 4, (int64_t[]){c->b, c->h, c->tk, c->dv}, dtype, device);
    a->tm = mnd ? ref_tensor(a->m, mnd, mshape, mdtype, device) : NULL;
    return a->tq && a->tk && a->tv && (!mnd || a->tm);
}

static ct_tensor *run_case(const attn_case *c, const attn_data *a) {
    return ct_scaled_dot_product_attention(a->tq, a->tk, a->tv, a->tm, c->mask == MASK_CAUSAL, 0.0,
                                           c->scale);
}

/* Every element within atol + rtol * |expected| (tolerances for the half dtypes, whose
 * inputs, probabilities and output are rounded). */
static bool close_all(const ct_tensor *t, const double *expected, double atol, double rtol) {
    double *got = ref_read(t);
    if (!got) return false;
    bool ok = true;
    for (int64_t e = 0; ok && e < ct_numel(t); e++)
        if (!(fabs(got[e] - expected[e]) <= atol + rtol * fabs(expected[e]))) {
            printf("    element %lld: %.9g, expected %.9g\n", (long long)e, got[e], expected[e]);
            ok = false;
        }
    free(got);
    return ok;
}

static const attn_case cases[] = {
    {2, 3, 5, 5, 4, 4, MASK_NONE, 0},
    {1, 2, 7, 7, 5, 3, MASK_CAUSAL, 0},       /* odd T, D != Dv */
    {2, 1, 1, 1, 3, 3, MASK_NONE, 0},         /* T = 1 */
    {1, 1, 1, 9, 8, 8, MASK_CAUSAL, 0},       /* one query, causal: sees key 0 only */
    {1, 2, 3, 11, 6, 2, MASK_NONE, 0.3},      /* Tq < Tk, explicit scale */
    {1, 1, 11, 3, 6, 5, MASK_CAUSAL, 0},      /* Tq > Tk: rows past Tk see every key */
    {2, 2, 6, 9, 7, 7, MASK_BOOL_FULL, 0},    /* row 0 sees no key */
    {2, 3, 5, 8, 4, 6, MASK_BOOL_ROW, 0},     /* a key-padding mask broadcast */
    {2, 2, 7, 6, 3, 3, MASK_FLOAT_HEADS, 0},  /* an additive mask, -inf in places */
    {1, 2, 131, 150, 33, 17, MASK_CAUSAL, 0}, /* several blocks of rows and keys */
    {1, 1, 97, 200, 16, 16, MASK_FLOAT_HEADS, 0},
    {3, 1, 70, 70, 8, 8, MASK_BOOL_ROW, 0},
};
#define CASES ((int)(sizeof cases / sizeof cases[0]))

DEVICE_TEST(test_nn_attention_matches_reference) {
    for (int n = 0; n < CASES; n++)
        for (ct_dtype dtype = CT_F32; dtype <= CT_F64; dtype++) {
            if (dtype != CT_F32 && dtype != CT_F64) continue;
            attn_data a;
            bool made = data_make(&cases[n], dtype, device, 100 + (uint64_t)n, &a);
            ct_tensor *out = made ? run_case(&cases[n], &a) : NULL;
            bool ok = out && ct_dtype_of(out) == dtype &&
                      close_all(out, a.expected, dtype == CT_F64 ? 1e-12 : 1e-5,
                                dtype == CT_F64 ? 1e-12 : 1e-5);
            if (!ok)
                ct_test_fail(__FILE__, __LINE__, "case %d, %s: %s", n, ct_dtype_name(dtype),
                             ct_last_error());
            ct_release(out);
            data_free(&a);
            if (!ok) return;
        }
}

DEVICE_TEST(test_nn_attention_half_dtypes) {
    const ct_dtype dtypes[2] = {CT_F16, CT_BF16};
    for (int n = 0; n < CASES; n++)
        for (int t = 0; t < 2; t++) {
            attn_data a;
            bool made = data_make(&cases[n], dtypes[t], device, 200 + (uint64_t)n, &a);
            ct_tensor *out = made ? run_case(&cases[n], &a) : NULL;
            /* The output rounded to the dtype, from f32 arithmetic on rounded inputs. */
            double tol = dtypes[t] == CT_F16 ? 2e-3 : 1.6e-2;
            bool ok = out && ct_dtype_of(out) == dtypes[t] && close_all(out, a.expected, tol, tol);
            if (!ok)
                ct_test_fail(__FILE__, __LINE__, "case %d, %s: %s", n, ct_dtype_name(dtypes[t]),
                             ct_last_error());
            ct_release(out);
            data_free(&a);
            if (!ok) return;
        }
}

/* Query (L, E), key (S, E), value (S, Ev): no batch axes, as PyTorch allows. */
DEVICE_TEST(test_nn_attention_no_batch_axes) {
    attn_case c = {1, 1, 6, 4, 3, 2, MASK_NONE, 0};
    attn_data a;
    CHECK(data_make(&c, CT_F64, device, 7, &a));
    ct_tensor *q = ct_reshape(a.tq, 2, (int64_t[]){6, 3});
    ct_tensor *k = ct_reshape(a.tk, 2, (int64_t[]){4, 3});
    ct_tensor *v = ct_reshape(a.tv, 2, (int64_t[]){4, 2});
    ct_tensor *out = ct_scaled_dot_product_attention(q, k, v, NULL, false, 0.0, 0.0);
    CHECK_NOT_NULL(out);
    CHECK(ct_ndim(out) == 2 && ct_shape(out)[0] == 6 && ct_shape(out)[1] == 2);
    CHECK(close_all(out, a.expected, 1e-12, 1e-12));
    ct_release(out), ct_release(q), ct_release(k), ct_release(v);
    data_free(&a);
}

/* ---- gradients ---- */

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-5

typedef struct {
    const attn_case *c;
    const ct_tensor *mask;
    double dropout_p;
} grad_case;

static ct_tensor *apply_attention(ct_tensor *const *in, void *context) {
    const grad_case *g = context;
    return ct_scaled_dot_product_attention(in[0], in[1], in[2], g->mask, g->c->mask == MASK_CAUSAL,
                                           g->dropout_p, g->c->scale);
}

DEVICE_TEST(test_nn_attention_gradcheck) {
    static const attn_case grads[] = {
        {1, 2, 5, 5, 3, 3, MASK_NONE, 0},     {1, 1, 7, 7, 3, 2, MASK_CAUSAL, 0},
        {1, 1, 3, 6, 2, 3, MASK_CAUSAL, 0.7}, {2, 1, 4, 5, 3, 2, MASK_BOOL_FULL, 0},
        {1, 2, 4, 5, 2, 2, MASK_BOOL_ROW, 0}, {2, 2, 3, 4, 2, 3, MASK_FLOAT_HEADS, 0},
        {1, 1, 70, 67, 2, 2, MASK_CAUSAL, 0}, /* more than one key block */
    };
    for (int n = 0; n < (int)(sizeof grads / sizeof grads[0]); n++)
        for (int drop = 0; drop < 2; drop++) {
            const attn_case *c = &grads[n];
            attn_data a;
            CHECK(data_make(c, CT_F64, device, 300 + (uint64_t)n, &a));
            ct_tensor *in[3] = {
                ct_gradcheck_leaf(device, 4, (int64_t[]){c->b, c->h, c->tq, c->d}, 10 + n, -1, 1,
                                  true),
                ct_gradcheck_leaf(device, 4, (int64_t[]){c->b, c->h, c->tk, c->d}, 20 + n, -1, 1,
                                  true),
                ct_gradcheck_leaf(device, 4, (int64_t[]){c->b, c->h, c->tk, c->dv}, 30 + n, -1, 1,
                                  true),
            };
            grad_case g = {c, a.tm, drop ? 0.3 : 0.0};
            bool ok = in[0] && in[1] && in[2] &&
                      ct_gradcheck(apply_attention, 3, in, &g, EPS, ATOL, RTOL);
            for (int i = 0; i < 3; i++) ct_release(in[i]);
            data_free(&a);
            if (!ok) {
                ct_test_fail(__FILE__, __LINE__, "gradient case %d, dropout %d", n, drop);
                return;
            }
        }
}

/* The gradients of q, k and v for one backward of sum(u * attention(q, k, v)). */
static bool gradients(ct_tensor *q, ct_tensor *k, ct_tensor *v, const ct_tensor *u, bool causal,
                      double **out) {
    ct_tensor *y = ct_scaled_dot_product_attention(q, k, v, NULL, causal, 0.0, 0.0);
    bool ok = y && ct_backward_with(y, u, false) == CT_OK;
    ct_release(y);
    ct_tensor *leaves[3] = {q, k, v};
    for (int i = 0; ok && i < 3; i++) {
        ct_tensor *g = ct_grad(leaves[i]);
        out[i] = g ? ref_read(g) : NULL;
        ok = out[i] != NULL;
        ct_release(g);
        ct_set_grad(leaves[i], NULL);
    }
    return ok;
}

/* Two backward passes give the same bits (no atomics, a fixed order of sums), with one
 * problem of many key blocks (the CPU splits its keys over tasks) and with many problems. */
DEVICE_TEST(test_nn_attention_backward_deterministic) {
    const int64_t shapes[2][4] = {{1, 1, 300, 260}, {4, 5, 40, 70}};
    for (int s = 0; s < 2; s++) {
        int64_t b = shapes[s][0], h = shapes[s][1], tq = shapes[s][2], tk = shapes[s][3], d = 16;
        ct_tensor *q = ct_gradcheck_leaf(device, 4, (int64_t[]){b, h, tq, d}, 1, -1, 1, false);
        ct_tensor *k = ct_gradcheck_leaf(device, 4, (int64_t[]){b, h, tk, d}, 2, -1, 1, false);
        ct_tensor *v = ct_gradcheck_leaf(device, 4, (int64_t[]){b, h, tk, d}, 3, -1, 1, false);
        ct_tensor *u = ct_gradcheck_leaf(device, 4, (int64_t[]){b, h, tq, d}, 4, -1, 1, false);
        ct_tensor *q32 = ct_cast(q, CT_F32), *k32 = ct_cast(k, CT_F32), *v32 = ct_cast(v, CT_F32);
        ct_tensor *u32 = ct_cast(u, CT_F32);
        CHECK(q32 && k32 && v32 && u32);
        CHECK_OK(ct_set_requires_grad(q32, true));
        CHECK_OK(ct_set_requires_grad(k32, true));
        CHECK_OK(ct_set_requires_grad(v32, true));
        double *first[3] = {0}, *second[3] = {0};
        bool ok = gradients(q32, k32, v32, u32, s == 0, first) &&
                  gradients(q32, k32, v32, u32, s == 0, second);
        int64_t counts[3] = {b * h * tq * d, b * h * tk * d, b * h * tk * d};
        for (int i = 0; ok && i < 3; i++)
            ok = memcmp(first[i], second[i], sizeof(double) * (size_t)counts[i]) == 0;
        for (int i = 0; i < 3; i++) free(first[i]), free(second[i]);
        ct_release(q), ct_release(k), ct_release(v), ct_release(u);
        ct_release(q32), ct_release(k32), ct_release(v32), ct_release(u32);
        if (!ok) {
            ct_test_fail(__FILE__, __LINE__, "shape %d: two backward passes differ: %s", s,
                         ct_last_error());
            return;
        }
    }
}

/* At T = 4096 a T x T f32 matrix per head is 64 MiB; the forward and backward of one head
 * must stay far below (the operands, output and gradients are 4096 x 16 f32: 256 KiB each). */
DEVICE_TEST(test_nn_attention_memory_linear_in_t) {
    const int64_t t = 4096, d = 16;
    ct_tensor *q = ct_gradcheck_leaf(device, 4, (int64_t[]){1, 1, t, d}, 1, -1, 1, false);
    ct_tensor *q32 = q ? ct_cast(q, CT_F32) : NULL;
    CHECK_NOT_NULL(q32);
    CHECK_OK(ct_set_requires_grad(q32, true));
    ct_memory_statistics before, after;
    CHECK_OK(ct_synchronize(device));
    CHECK_OK(ct_memory_stats(device, &before));
    CHECK_OK(ct_reset_peak_memory(device));
    ct_tensor *y = ct_scaled_dot_product_attention(q32, q32, q32, NULL, true, 0.0, 0.0);
    CHECK_NOT_NULL(y);
    ct_tensor *loss = ct_sum(y, 0, NULL, false);
    CHECK_OK(ct_backward(loss));
    ct_tensor *g = ct_grad(q32);
    CHECK_NOT_NULL(g);
    CHECK_OK(ct_synchronize(device));
    CHECK_OK(ct_memory_stats(device, &after));
    size_t used = after.peak_allocated - before.allocated, square = (size_t)(t * t * 4);
    printf("    peak above the start: %zu bytes (a T x T f32 matrix: %zu)\n", used, square);
    CHECK(used < square / 16);
    ct_release(g), ct_release(loss), ct_release(y), ct_release(q32), ct_release(q);
}

/* ---- dropout ---- */

/* The same seed gives the same output; p = 1 zeroes it. */
DEVICE_TEST(test_nn_attention_dropout) {
    attn_case c = {2, 2, 9, 9, 4, 4, MASK_NONE, 0};
    attn_data a;
    CHECK(data_make(&c, CT_F32, device, 11, &a));
    ct_manual_seed(5);
    ct_tensor *y1 = ct_scaled_dot_product_attention(a.tq, a.tk, a.tv, NULL, false, 0.4, 0.0);
    ct_manual_seed(5);
    ct_tensor *y2 = ct_scaled_dot_product_attention(a.tq, a.tk, a.tv, NULL, false, 0.4, 0.0);
    ct_tensor *y3 = ct_scaled_dot_product_attention(a.tq, a.tk, a.tv, NULL, false, 0.4, 0.0);
    ct_tensor *zero = ct_scaled_dot_product_attention(a.tq, a.tk, a.tv, NULL, false, 1.0, 0.0);
    CHECK(y1 && y2 && y3 && zero);
    double *v1 = ref_read(y1), *v2 = ref_read(y2), *v3 = ref_read(y3), *vz = ref_read(zero);
    CHECK(v1 && v2 && v3 && vz);
    int64_t n = ct_numel(y1);
    bool same = memcmp(v1, v2, sizeof(double) * (size_t)n) == 0;
    bool differs = memcmp(v1, v3, sizeof(double) * (size_t)n) != 0, zeros = true, dropped = false;
    for (int64_t e = 0; e < n; e++) zeros = zeros && vz[e] == 0.0;
    for (int64_t e = 0; e < n; e++) dropped = dropped || fabs(v1[e] - a.expected[e]) > 1e-4;
    free(v1), free(v2), free(v3), free(vz);
    ct_release(y1), ct_release(y2), ct_release(y3), ct_release(zero);
    data_free(&a);
    CHECK(same && differs && zeros && dropped);
}

/* ---- errors ---- */

DEVICE_TEST(test_nn_attention_errors) {
    ct_tensor *q = ct_gradcheck_leaf(device, 4, (int64_t[]){2, 2, 3, 4}, 1, -1, 1, false);
    ct_tensor *k = ct_gradcheck_leaf(device, 4, (int64_t[]){2, 2, 5, 4}, 2, -1, 1, false);
    ct_tensor *v = ct_gradcheck_leaf(device, 4, (int64_t[]){2, 2, 5, 6}, 3, -1, 1, false);
    ct_tensor *k_bad = ct_gradcheck_leaf(device, 4, (int64_t[]){2, 2, 5, 3}, 2, -1, 1, false);
    ct_tensor *v_bad = ct_gradcheck_leaf(device, 4, (int64_t[]){2, 2, 4, 6}, 3, -1, 1, false);
    ct_tensor *k_batch = ct_gradcheck_leaf(device, 4, (int64_t[]){2, 3, 5, 4}, 2, -1, 1, false);
    ct_tensor *k3 = ct_gradcheck_leaf(device, 3, (int64_t[]){2, 5, 4}, 2, -1, 1, false);
    ct_tensor *k32 = k ? ct_cast(k, CT_F32) : NULL;
    ct_tensor *ki = k ? ct_cast(k, CT_I32) : NULL;
    ct_tensor *mask_bad = ct_gradcheck_leaf(device, 2, (int64_t[]){3, 4}, 4, -1, 1, false);
    ct_tensor *mask_i = mask_bad ? ct_cast(mask_bad, CT_I64) : NULL;
    CHECK(q && k && v && k_bad && v_bad && k_batch && k3 && k32 && ki && mask_bad && mask_i);
    CHECK(!ct_scaled_dot_product_attention(q, k_bad, v, NULL, false, 0, 0));
    CHECK_ERROR(CT_ERR_SHAPE, "key's last axis must equal query's");
    CHECK(!ct_scaled_dot_product_attention(q, k, v_bad, NULL, false, 0, 0));
    CHECK_ERROR(CT_ERR_SHAPE, "value's sequence axis");
    CHECK(!ct_scaled_dot_product_attention(q, k_batch, v, NULL, false, 0, 0));
    CHECK_ERROR(CT_ERR_SHAPE, "batch axes must be equal");
    CHECK(!ct_scaled_dot_product_attention(q, k3, v, NULL, false, 0, 0));
    CHECK_ERROR(CT_ERR_SHAPE, "the same number");
    CHECK(!ct_scaled_dot_product_attention(q, k32, v, NULL, false, 0, 0));
    CHECK_ERROR(CT_ERR_DTYPE, "must be the same");
    CHECK(!ct_scaled_dot_product_attention(q, ki, v, NULL, false, 0, 0));
    CHECK_ERROR(CT_ERR_DTYPE, "floating");
    CHECK(!ct_scaled_dot_product_attention(q, k, v, mask_bad, false, 0, 0));
    CHECK_ERROR(CT_ERR_SHAPE, "does not broadcast");
    CHECK(!ct_scaled_dot_product_attention(q, k, v, mask_i, false, 0, 0));
    CHECK_ERROR(CT_ERR_DTYPE, "CT_BOOL");
    ct_tensor *mask = ct_gradcheck_leaf(device, 2, (int64_t[]){3, 5}, 4, -1, 1, false);
    CHECK_NOT_NULL(mask);
    CHECK(!ct_scaled_dot_product_attention(q, k, v, mask, true, 0, 0));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "both given");
    CHECK(!ct_scaled_dot_product_attention(q, k, v, NULL, false, 1.5, 0));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "dropout_p");
    CHECK(!ct_scaled_dot_product_attention(q, k, v, NULL, false, 0, NAN));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "scale");
    CHECK_OK(ct_set_requires_grad(mask, true));
    CHECK(!ct_scaled_dot_product_attention(q, k, v, mask, false, 0, 0));
    CHECK_ERROR(CT_ERR_UNSUPPORTED, "mask requires grad");
    CHECK(!ct_scaled_dot_product_attention(q, NULL, v, NULL, false, 0, 0));
    ct_clear_error();
    if (device.type != CT_DEVICE_CPU) {
        ct_tensor *k_cpu = ct_to(k, CT_CPU);
        CHECK_NOT_NULL(k_cpu);
        CHECK(!ct_scaled_dot_product_attention(q, k_cpu, v, NULL, false, 0, 0));
        CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "");
        ct_release(k_cpu);
    }
    ct_release(mask), ct_release(mask_i), ct_release(mask_bad), ct_release(ki), ct_release(k32);
    ct_release(k3), ct_release(k_batch), ct_release(v_bad), ct_release(k_bad);
    ct_release(v), ct_release(k), ct_release(q);
}

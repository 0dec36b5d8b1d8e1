/* Pooling of channels-last inputs on the layout itself (the backend's pool2d_channels_last;
 * the CPU's NHWC kernels, which the fake GPU runs too): ct_max_pool2d, ct_avg_pool2d and
 * ct_adaptive_avg_pool2d forward and backward against a float64 reference and, to the bit,
 * against the same ops on NCHW inputs (outputs and input gradients, in f64, f32, bf16 and
 * f16), over odd sizes, padding, strides, overlapping windows and channel counts that are not
 * a multiple of a vector (3, 17, 64 and 65); ties, signed zeros and NaNs routed as the NCHW
 * kernels route them; the same bits on one thread and on two; finite-difference checks; and
 * the profile of a channels-last pooling step, which holds no copy. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/cpu_impl.h"
#include "ct_gradcheck.h"
#include "ct_ref.h"

typedef enum { MAX, AVG, ADAPTIVE } kind;

typedef struct {
    kind k;
    int64_t shape[4]; /* (N, C, H, W) */
    ct_pool2d_options opt;
    int64_t out[2]; /* adaptive output size */
} pool_case;

static ct_tensor *cl(const ct_tensor *t) {
    return ct_contiguous_format(t, CT_FORMAT_CHANNELS_LAST);
}

static ct_tensor *run(const pool_case *c, const ct_tensor *x) {
    if (c->k == MAX) return ct_max_pool2d(x, &c->opt);
    if (c->k == AVG) return ct_avg_pool2d(x, &c->opt);
    return ct_adaptive_avg_pool2d(x, c->out[0], c->out[1]);
}

/* Window [start, end) of output i along an axis of size n (o outputs), and its divisor. */
static void window(const pool_case *c, int axis, int64_t n, int64_t o, int64_t i, int64_t *start,
                   int64_t *end, int64_t *div) {
    ref_pool_window(c->k == ADAPTIVE, c->opt.kernel[axis], c->opt.stride[axis],
                    c->opt.padding[axis], n, o, i, start, end, div);
}

static int64_t out_size(const pool_case *c, int axis) {
    if (c->k == ADAPTIVE) return c->out[axis];
    int64_t k = c->opt.kernel[axis], s = c->opt.stride[axis] ? c->opt.stride[axis] : k;
    return (c->shape[2 + axis] + 2 * c->opt.padding[axis] - k) / s + 1;
}

/* y = pool(x) (NCHW, out_h x out_w planes) and gx = d sum(y * gy) / dx, in float64. */
static void reference(const pool_case *c, const double *x, const double *gy, int64_t oh_n,
                      int64_t ow_n, double *y, double *gx) {
    int64_t h = c->shape[2], w = c->shape[3], planes = c->shape[0] * c->shape[1];
    for (int64_t i = 0; i < planes * h * w; i++) gx[i] = 0;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t oh = 0; oh < oh_n; oh++)
            for (int64_t ow = 0; ow < ow_n; ow++) {
                int64_t h0, h1, hd, w0, w1, wd, o = (p * oh_n + oh) * ow_n + ow, at = -1;
                window(c, 0, h, oh_n, oh, &h0, &h1, &hd);
                window(c, 1, w, ow_n, ow, &w0, &w1, &wd);
                double acc = c->k == MAX ? -INFINITY : 0;
                for (int64_t i = h0; i < h1; i++)
                    for (int64_t j = w0; j < w1; j++) {
                        int64_t cell = (p * h + i) * w + j;
                        if (c->k != MAX)
                            acc += x[cell];
                        else if (x[cell] > acc)
                            acc = x[cell], at = cell;
                    }
                y[o] = c->k == MAX ? acc : acc / (double)(hd * wd);
                for (int64_t i = h0; i < h1 && c->k != MAX; i++)
                    for (int64_t j = w0; j < w1; j++)
                        gx[(p * h + i) * w + j] += gy[o] / (double)(hd * wd);
                if (c->k == MAX) gx[at] += gy[o];
            }
}

/* Whether a and b (same shape and dtype) hold the same bits in C order. */
static bool same_bits(const ct_tensor *a, const ct_tensor *b) {
    if (!a || !b || ct_numel(a) != ct_numel(b) || ct_dtype_of(a) != ct_dtype_of(b)) return false;
    size_t bytes = (size_t)ct_numel(a) * ct_dtype_size(ct_dtype_of(a));
    char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
    bool same = x && y && ct_copy_to_host(a, x, bytes) == CT_OK &&
                ct_copy_to_host(b, y, bytes) == CT_OK && memcmp(x, y, bytes) == 0;
    free(x), free(y);
    return same;
}

/* The outputs and input gradients of c on NCHW and on channels-last x (values v, dtype),
 * the output's gradient gy (NCHW values) in the layout of each. */
typedef struct {
    ct_tensor *y[2], *gx[2];
} both_layouts;

static both_layouts run_both(ct_device device, const pool_case *c, ct_dtype dtype, const double *v,
                             const double *gy, const int64_t *out_shape) {
    both_layouts r = {{NULL, NULL}, {NULL, NULL}};
    for (int layout = 0; layout < 2; layout++) {
        ct_tensor *x = ref_tensor(v, 4, c->shape, dtype, device);
        ct_tensor *g = ref_tensor(gy, 4, out_shape, dtype, device);
        if (layout) {
            ct_tensor *xc = x ? cl(x) : NULL, *gc = g ? cl(g) : NULL;
            ct_release(x), ct_release(g);
            x = xc, g = gc;
        }
        if (x) ct_set_requires_grad(x, true);
        r.y[layout] = x ? run(c, x) : NULL;
        if (r.y[layout] && g && ct_backward_with(r.y[layout], g, false) == CT_OK)
            r.gx[layout] = ct_grad(x);
        ct_release(x), ct_release(g);
    }
    return r;
}

static void release_both(both_layouts *r) {
    for (int i = 0; i < 2; i++) ct_release(r->y[i]), ct_release(r->gx[i]);
}

/* Check case c in dtype: channels-last output, the NCHW path's bits, the reference's values. */
static void check_case(ct_device device, const pool_case *c, ct_dtype dtype, const char *what) {
    int64_t oh_n = out_size(c, 0), ow_n = out_size(c, 1);
    int64_t out_shape[4] = {c->shape[0], c->shape[1], oh_n, ow_n};
    int64_t n_in = ref_numel(4, c->shape), n_out = ref_numel(4, out_shape);
    double *v = malloc(sizeof(double) * (size_t)n_in), *gy = malloc(sizeof(double) * (size_t)n_out);
    double *y = malloc(sizeof(double) * (size_t)n_out), *gx = malloc(sizeof(double) * (size_t)n_in);
    ref_random(v, n_in, 7, -3.0, 3.0);
    ref_random(gy, n_out, 8, -1.0, 1.0);
    for (int64_t i = 0; i < n_in; i++) v[i] = ref_round(v[i], dtype);
    for (int64_t i = 0; i < n_out; i++) gy[i] = ref_round(gy[i], dtype);
    both_layouts r = run_both(device, c, dtype, v, gy, out_shape);
    reference(c, v, gy, oh_n, ow_n, y, gx);
    ct_tensor *y_ref = ref_tensor(y, 4, out_shape, CT_F64, device);
    ct_tensor *gx_ref = ref_tensor(gx, 4, c->shape, CT_F64, device);
    if (!r.y[1] || !r.gx[1] || !ct_is_contiguous_format(r.y[1], CT_FORMAT_CHANNELS_LAST))
        ct_test_fail(__FILE__, __LINE__, "%s (%s): no channels-last output or no gradient: %s",
                     what, ct_dtype_name(dtype), ct_last_error());
    else if (!same_bits(r.y[0], r.y[1]) || !same_bits(r.gx[0], r.gx[1]))
        ct_test_fail(__FILE__, __LINE__, "%s (%s): channels-last bits differ from NCHW's", what,
                     ct_dtype_name(dtype));
    double tol = 4 * ref_tolerance(dtype);
    double dy = ref_max_diff(r.y[1], y_ref, NULL), dgx = ref_max_diff(r.gx[1], gx_ref, NULL);
    if (!(dy <= tol) || !(dgx <= tol))
        ct_test_fail(__FILE__, __LINE__, "%s (%s): off the reference by %g (output), %g (gradient)",
                     what, ct_dtype_name(dtype), dy, dgx);
    release_both(&r);
    ct_release(y_ref), ct_release(gx_ref);
    free(v), free(gy), free(y), free(gx);
}

static const pool_case cases[] = {
    /* ResNet's stem: 3x3 windows at stride 2, padding 1 (overlapping). */
    {MAX, {2, 3, 9, 11}, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, {0, 0}},
    {MAX, {2, 17, 8, 7}, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, {0, 0}},
    {MAX, {1, 64, 7, 9}, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, {0, 0}},
    {MAX, {2, 65, 5, 6}, {.kernel = {2, 2}}, {0, 0}},
    {MAX, {3, 17, 7, 9}, {.kernel = {2, 2}}, {0, 0}},
    {MAX, {2, 3, 6, 7}, {.kernel = {3, 2}, .stride = {1, 2}, .padding = {1, 1}}, {0, 0}},
    {MAX, {2, 17, 5, 8}, {.kernel = {1, 3}, .stride = {3, 1}}, {0, 0}},
    {AVG, {2, 3, 9, 11}, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, {0, 0}},
    {AVG, {2, 17, 7, 9}, {.kernel = {2, 2}}, {0, 0}},
    {AVG, {1, 64, 6, 7}, {.kernel = {3, 2}, .stride = {1, 2}, .padding = {1, 1}}, {0, 0}},
    {AVG, {2, 65, 5, 5}, {.kernel = {4, 4}, .stride = {3, 3}, .padding = {2, 2}}, {0, 0}},
    {ADAPTIVE, {2, 17, 7, 9}, {.kernel = {0, 0}}, {1, 1}},
    {ADAPTIVE, {2, 64, 7, 9}, {.kernel = {0, 0}}, {3, 4}},
    {ADAPTIVE, {3, 3, 5, 4}, {.kernel = {0, 0}}, {7, 6}}, /* more outputs than inputs */
};

DEVICE_TEST(test_pool_channels_last_matches_nchw_and_reference) {
    ct_dtype dtypes[4] = {CT_F64, CT_F32, CT_BF16, CT_F16};
    for (int d = 0; d < 4; d++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char what[64];
            snprintf(what, sizeof what, "case %zu", i);
            check_case(device, &cases[i], dtypes[d], what);
            if (ct_test_failed()) return;
        }
}

/* Ties (few distinct values), -0 beside +0, and NaNs: the channels-last kernel takes the same
 * cell as the NCHW one (the first maximum, or the first NaN), which the gradient shows. */
DEVICE_TEST(test_pool_channels_last_max_ties_zeros_and_nans) {
    pool_case c = {
        MAX, {2, 19, 9, 8}, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, {0, 0}};
    ct_dtype dtypes[3] = {CT_F32, CT_F64, CT_BF16};
    int64_t n_in = ref_numel(4, c.shape), out_shape[4] = {2, 19, 5, 4};
    int64_t n_out = ref_numel(4, out_shape);
    double *v = malloc(sizeof(double) * (size_t)n_in), *gy = malloc(sizeof(double) * (size_t)n_out);
    ref_random(v, n_in, 3, 0.0, 3.0);
    ref_random(gy, n_out, 4, -1.0, 1.0);
    for (int64_t i = 0; i < n_in; i++) {
        v[i] = floor(v[i]) - 1.0; /* -1, 0, 1 */
        if (v[i] == 0.0 && i % 2) v[i] = -0.0;
        if (i % 37 == 5) v[i] = NAN;
    }
    for (int d = 0; d < 3; d++) {
        both_layouts r = run_both(device, &c, dtypes[d], v, gy, out_shape);
        CHECK(r.y[0] && r.y[1] && r.gx[0] && r.gx[1]);
        if (!same_bits(r.y[0], r.y[1]) || !same_bits(r.gx[0], r.gx[1]))
            ct_test_fail(__FILE__, __LINE__, "%s: channels-last bits differ from NCHW's",
                         ct_dtype_name(dtypes[d]));
        release_both(&r);
    }
    free(v), free(gy);
}

/* Both directions on one thread and on two, every kind and dtype: the same bits. */
TEST(test_pool_channels_last_thread_count_gives_same_bits) {
#ifdef _OPENMP
    const pool_case kinds[3] = {
        {MAX, {4, 17, 31, 29}, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, {0, 0}},
        {AVG, {4, 17, 31, 29}, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, {0, 0}},
        {ADAPTIVE, {4, 17, 31, 29}, {.kernel = {0, 0}}, {5, 3}},
    };
    ct_dtype dtypes[3] = {CT_F32, CT_F64, CT_BF16};
    int threads = omp_get_max_threads();
    double region = ct__cpu_region_ns();
    for (int k = 0; k < 3; k++)
        for (int d = 0; d < 3; d++) {
            both_layouts r[2];
            int64_t out_shape[4] = {4, 17, out_size(&kinds[k], 0), out_size(&kinds[k], 1)};
            int64_t n_in = ref_numel(4, kinds[k].shape), n_out = ref_numel(4, out_shape);
            double *v = malloc(sizeof(double) * (size_t)n_in);
            double *gy = malloc(sizeof(double) * (size_t)n_out);
            ref_random(v, n_in, 5, -2.0, 2.0);
            ref_random(gy, n_out, 6, -1.0, 1.0);
            for (int t = 0; t < 2; t++) {
                omp_set_num_threads(t + 1);
                ct__cpu_set_region_ns(0.0); /* split whatever the size */
                r[t] = run_both(CT_CPU, &kinds[k], dtypes[d], v, gy, out_shape);
                ct__cpu_set_region_ns(region);
            }
            omp_set_num_threads(threads);
            CHECK(same_bits(r[0].y[1], r[1].y[1]) && same_bits(r[0].gx[1], r[1].gx[1]));
            for (int t = 0; t < 2; t++) release_both(&r[t]);
            free(v), free(gy);
            if (ct_test_failed()) return;
        }
#else
    ct_test_skip("built without OpenMP: one thread only");
#endif
}

static ct_tensor *pool_of_channels_last(ct_tensor *const *in, void *context) {
    ct_tensor *x = cl(in[0]);
    ct_tensor *y = x ? run(context, x) : NULL;
    ct_release(x);
    return y;
}

DEVICE_TEST(test_pool_channels_last_gradcheck) {
    /* Distinct values at least 1e-3 apart, so that no difference step moves a maximum. */
    pool_case kinds[3] = {
        {MAX, {2, 3, 5, 6}, {.kernel = {3, 3}, .stride = {2, 1}, .padding = {1, 1}}, {0, 0}},
        {AVG, {2, 3, 5, 6}, {.kernel = {3, 2}, .stride = {2, 2}, .padding = {1, 1}}, {0, 0}},
        {ADAPTIVE, {2, 3, 5, 6}, {.kernel = {0, 0}}, {2, 4}},
    };
    for (int k = 0; k < 3; k++) {
        ct_tensor *x = ct_gradcheck_leaf(device, 4, kinds[k].shape, 11, -1, 1, false);
        ct_tensor *steps = ct_arange(0, 180, 1, CT_F64, device);
        ct_tensor *spread = steps ? ct_reshape(steps, 4, kinds[k].shape) : NULL;
        ct_tensor *scaled = spread ? ct_mul_scalar(spread, 1e-3) : NULL;
        ct_tensor *in = scaled && x ? ct_add(x, scaled) : NULL;
        CHECK_NOT_NULL(in);
        if (in) ct_set_requires_grad(in, true);
        CHECK(in && ct_gradcheck(pool_of_channels_last, 1, &in, &kinds[k], 1e-6, 1e-6, 1e-4));
        ct_release(x), ct_release(steps), ct_release(spread), ct_release(scaled), ct_release(in);
    }
}

/* A channels-last max pool, average pool and global average pool, forward and backward (the
 * gradient arriving channels-last): two pooling kernels each, and no copy or cast kernel. The
 * input's .grad is set beforehand, so the backward adds to it: a first gradient would be
 * cloned to the leaf's own contiguous tensor, a copy that is not the pooling's. */
static ct_tensor *stem_pool(const ct_tensor *x, int k) {
    ct_pool2d_options opt = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
    return k == 0   ? ct_max_pool2d(x, &opt)
           : k == 1 ? ct_avg_pool2d(x, &opt)
                    : ct_adaptive_avg_pool2d(x, 1, 1);
}

DEVICE_TEST(test_pool_channels_last_runs_without_copies) {
    static const char *names[3] = {"max pool", "avg pool", "global avg pool"};
    int64_t shape[4] = {2, 16, 12, 10};
    ct_tensor *x0 = ct_randn(4, shape, CT_F32, device);
    ct_tensor *x = x0 ? cl(x0) : NULL;
    CHECK_NOT_NULL(x);
    if (!x) return;
    ct_set_requires_grad(x, true);
    for (int k = 0; k < 3; k++) {
        ct_tensor *y = stem_pool(x, k);
        ct_tensor *u0 = y ? ct_ones(4, ct_shape(y), CT_F32, device) : NULL;
        ct_tensor *u = u0 ? cl(u0) : NULL;
        CHECK(u != NULL);
        ct_tensor *z = ct_zeros(4, shape, CT_F32, device);
        CHECK(z && ct_set_grad(x, z) == CT_OK);
        ct_release(y), ct_release(z);
        CHECK_OK(ct_profile_begin());
        y = stem_pool(x, k);
        ct_status status = y ? ct_backward_with(y, u, false) : ct_last_status();
        CHECK_OK(ct_profile_end());
        CHECK_OK(status);
        CHECK(y && ct_is_contiguous_format(y, CT_FORMAT_CHANNELS_LAST));
        ct_profile_stats stats;
        ct_profile_report(&stats);
        int64_t pool = 0, copy = 0;
        for (int p = 0; p < CT_PROFILE_PHASES; p++) {
            pool += stats.entries[p][CT_PROFILE_POOL].calls;
            copy += stats.entries[p][CT_PROFILE_COPY].calls;
        }
        if (pool != 2 || copy != 0)
            ct_test_fail(__FILE__, __LINE__, "%s: %lld pooling and %lld copy kernels (2 and 0)",
                         names[k], (long long)pool, (long long)copy);
        ct_release(y), ct_release(u0), ct_release(u);
    }
    ct_release(x0), ct_release(x);
}

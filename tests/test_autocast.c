/* Autocast regions: the dtype each listed op gives (PyTorch's lists), values against float64
 * references within the low precision's tolerance, gradients through a region against
 * finite differences, the cast cache (one cast per weight per region, counted), nesting and
 * CT_F32 inside, and bad calls. */
#include <stdlib.h>

#include "ct_ref.h"
#include "ct_test.h"

/* Relative tolerance of a result computed from inputs rounded to dtype, with f32 sums. */
static double low_tolerance(ct_dtype dtype) { return dtype == CT_BF16 ? 2e-2 : 4e-3; }

static ct_tensor *random_tensor(ct_device device, int ndim, const int64_t *shape, uint64_t seed,
                                ct_dtype dtype) {
    int64_t n = ref_numel(ndim, shape);
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    ref_random(v, n, seed, -1.0, 1.0);
    ct_tensor *t = ref_tensor(v, ndim, shape, dtype, device);
    free(v);
    return t;
}

/* Every element of got within tol * max|ref| of ref (both read back as doubles). */
static bool close_to(const ct_tensor *got, const ct_tensor *ref, double tol) {
    double *g = ref_read(got), *r = ref_read(ref);
    bool ok = g && r && ct_numel(got) == ct_numel(ref);
    double scale = 0.0;
    for (int64_t i = 0; ok && i < ct_numel(ref); i++) scale = fmax(scale, fabs(r[i]));
    for (int64_t i = 0; ok && i < ct_numel(ref); i++) {
        if (fabs(g[i] - r[i]) > tol * (scale > 0 ? scale : 1.0)) {
            printf("    element %lld: %.9g against %.9g\n", (long long)i, g[i], r[i]);
            ok = false;
        }
    }
    free(g), free(r);
    return ok;
}

static void check_products(ct_device device, ct_dtype low) {
    ct_tensor *a = random_tensor(device, 2, (int64_t[]){5, 7}, 1, CT_F32);
    ct_tensor *b = random_tensor(device, 2, (int64_t[]){7, 3}, 2, CT_F32);
    ct_tensor *w = random_tensor(device, 2, (int64_t[]){3, 7}, 3, CT_F32);
    ct_tensor *bias = random_tensor(device, 1, (int64_t[]){3}, 4, CT_F32);
    ct_tensor *x = random_tensor(device, 4, (int64_t[]){2, 2, 6, 6}, 5, CT_F32);
    ct_tensor *k = random_tensor(device, 4, (int64_t[]){3, 2, 3, 3}, 6, CT_F32);
    CHECK_NOT_NULL(x);
    CHECK_NOT_NULL(k);
    /* The f64 references, outside the region. */
    ct_tensor *mm64 = ct_matmul(ct_cast(a, CT_F64), ct_cast(b, CT_F64));
    ct_tensor *lin64 = ct_linear(ct_cast(a, CT_F64), ct_cast(w, CT_F64), ct_cast(bias, CT_F64));
    ct_tensor *conv64 = ct_conv2d(ct_cast(x, CT_F64), ct_cast(k, CT_F64), NULL, NULL);
    CHECK_NOT_NULL(conv64);
    CHECK_OK(ct_autocast_push(device.type, low));
    ct_tensor *mm = ct_matmul(a, b), *lin = ct_linear(a, w, bias);
    ct_tensor *conv = ct_conv2d(x, k, NULL, NULL);
    ct_tensor *mm_f64 = ct_matmul(ct_cast(a, CT_F64), ct_cast(b, CT_F64));
    CHECK_OK(ct_autocast_pop());
    CHECK_NOT_NULL(mm_f64);
    CHECK(ct_dtype_of(mm) == low && ct_dtype_of(lin) == low && ct_dtype_of(conv) == low);
    CHECK(ct_dtype_of(mm_f64) == CT_F64); /* f64 is never cast */
    CHECK(close_to(mm, mm64, low_tolerance(low)));
    CHECK(close_to(lin, lin64, low_tolerance(low)));
    CHECK(close_to(conv, conv64, low_tolerance(low)));
}

DEVICE_TEST(test_autocast_products_run_low_precision) {
    ct_scope_begin();
    check_products(device, CT_BF16);
    if (!ct_test_failed()) check_products(device, CT_F16);
    ct_scope_end();
}

DEVICE_TEST(test_autocast_f32_list_and_promotion) {
    ct_scope_begin();
    ct_tensor *h = random_tensor(device, 2, (int64_t[]){4, 5}, 7, CT_BF16);
    ct_tensor *f = random_tensor(device, 2, (int64_t[]){4, 5}, 8, CT_F32);
    ct_tensor *labels = ct_from_data((int64_t[]){0, 4, 2, 1}, 1, (int64_t[]){4}, CT_I64, device);
    CHECK_NOT_NULL(labels);
    CHECK_OK(ct_autocast_push(device.type, CT_BF16));
    ct_tensor *sm = ct_softmax(h, 1), *lsm = ct_log_softmax(h, 1);
    ct_tensor *ce = ct_cross_entropy(h, labels, NULL);
    ct_tensor *mse = ct_mse_loss(h, f, CT_REDUCTION_MEAN);
    ct_tensor *sum = ct_sum(h, 0, NULL, false), *mean = ct_mean(h, 0, NULL, false);
    ct_tensor *ln = ct_layer_norm(h, 1, NULL, NULL, 1e-5);
    ct_tensor *mixed = ct_add(h, f);            /* not listed: promotes */
    ct_tensor *relu = ct_relu(h);               /* pointwise: its input's dtype */
    ct_tensor *max = ct_max(h, 0, NULL, false); /* exact in any dtype: not listed */
    CHECK_OK(ct_autocast_pop());
    CHECK_NOT_NULL(ln);
    CHECK_NOT_NULL(max);
    CHECK(ct_dtype_of(sm) == CT_F32 && ct_dtype_of(lsm) == CT_F32 && ct_dtype_of(ce) == CT_F32);
    CHECK(ct_dtype_of(mse) == CT_F32 && ct_dtype_of(sum) == CT_F32 && ct_dtype_of(mean) == CT_F32);
    CHECK(ct_dtype_of(ln) == CT_F32 && ct_dtype_of(mixed) == CT_F32);
    CHECK(ct_dtype_of(relu) == CT_BF16 && ct_dtype_of(max) == CT_BF16);
    /* The f32-list results equal the ops on the input cast to f32 (its values are exact in
     * f32), so the f64 reference of the bf16 values checks them to f32 accuracy. */
    ct_tensor *h64 = ct_cast(h, CT_F64);
    CHECK(close_to(sm, ct_softmax(h64, 1), 1e-6));
    CHECK(close_to(ce, ct_cross_entropy(h64, labels, NULL), 1e-6));
    CHECK(close_to(sum, ct_sum(h64, 0, NULL, false), 1e-6));
    ct_scope_end();
}

DEVICE_TEST(test_autocast_nesting_and_f32_inside) {
    ct_scope_begin();
    ct_tensor *a = random_tensor(device, 2, (int64_t[]){3, 3}, 9, CT_F32);
    CHECK(ct_autocast_dtype(device.type) == CT_F32);
    CHECK_OK(ct_autocast_push(device.type, CT_BF16));
    CHECK(ct_dtype_of(ct_matmul(a, a)) == CT_BF16);
    CHECK_OK(ct_autocast_push(device.type, CT_F32)); /* autocast off inside */
    CHECK(ct_dtype_of(ct_matmul(a, a)) == CT_F32);
    CHECK_OK(ct_autocast_push(device.type, CT_F16));
    CHECK(ct_dtype_of(ct_matmul(a, a)) == CT_F16);
    CHECK_OK(ct_autocast_pop());
    CHECK_OK(ct_autocast_pop());
    CHECK(ct_autocast_dtype(device.type) == CT_BF16);
    /* A region for the other device type leaves this one's ops alone. */
    ct_device_type other = device.type == CT_DEVICE_CPU ? CT_DEVICE_CUDA : CT_DEVICE_CPU;
    CHECK_OK(ct_autocast_push(other, CT_F32));
    CHECK(ct_dtype_of(ct_matmul(a, a)) == CT_BF16);
    CHECK_OK(ct_autocast_pop());
    CHECK_OK(ct_autocast_pop());
    CHECK(ct_dtype_of(ct_matmul(a, a)) == CT_F32);
    ct_scope_end();
}

TEST(test_autocast_bad_calls) {
    CHECK(ct_autocast_pop() == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "no autocast region is open");
    CHECK(ct_autocast_push(CT_DEVICE_CPU, CT_I32) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "use CT_BF16 or CT_F16");
    CHECK(ct_autocast_push(CT_DEVICE_DEFAULT, CT_BF16) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "invalid device type");
    int pushed = 0;
    while (ct_autocast_push(CT_DEVICE_CPU, CT_F32) == CT_OK) pushed++;
    CHECK_ERROR(CT_ERR_OUT_OF_MEMORY, "regions are open already");
    CHECK(pushed == 64);
    while (pushed-- > 0) CHECK_OK(ct_autocast_pop());
    CHECK(ct_autocast_dtype(CT_DEVICE_CPU) == CT_F32);
}

/* The measured bf16 rate: 0 exactly without native bf16, else a positive finite ratio measured
 * once (the same value on every call); fast bf16 needs native bf16, and a rate above 1 is
 * fast. */
TEST(test_autocast_cpu_bf16_speedup_is_measured_once) {
    double speedup = ct_cpu_bf16_speedup();
    printf("    CPU bf16: native %s, bf16 products at %.2fx the f32 rate, fast %s\n",
           ct_cpu_has_native_bf16() ? "yes" : "no", speedup, ct_cpu_has_fast_bf16() ? "yes" : "no");
    if (!ct_cpu_has_native_bf16()) {
        CHECK(speedup == 0.0);
        CHECK(!ct_cpu_has_fast_bf16());
        return;
    }
    CHECK(speedup >= 0.0 && speedup < 64.0);
    CHECK(ct_cpu_bf16_speedup() == speedup);
    if (speedup > 1.0) CHECK(ct_cpu_has_fast_bf16());
}

DEVICE_TEST(test_autocast_cast_cache_casts_each_weight_once) {
    ct_scope_begin();
    ct_tensor *w = random_tensor(device, 2, (int64_t[]){4, 6}, 10, CT_F32);
    ct_tensor *x = random_tensor(device, 2, (int64_t[]){3, 6}, 11, CT_F32);
    CHECK_OK(ct_set_requires_grad(w, true));
    ct_autocast_stats s0 = ct_autocast_get_stats();
    CHECK_OK(ct_autocast_push(device.type, CT_BF16));
    ct_tensor *y = NULL;
    for (int i = 0; i < 3; i++) y = ct_linear(x, w, NULL); /* x: a fresh cast each time */
    ct_autocast_stats s1 = ct_autocast_get_stats();
    CHECK(s1.casts - s0.casts == 1 + 3);
    CHECK(s1.cache_hits - s0.cache_hits == 2);
    /* The cached cast is on the tape: the gradient reaches w, in f32. */
    CHECK_OK(ct_backward(ct_sum(y, 0, NULL, false)));
    ct_tensor *g = ct_grad(w);
    CHECK_NOT_NULL(g);
    CHECK(ct_dtype_of(g) == CT_F32);
    /* A weight written in place inside the region is cast again. */
    ct_no_grad_push();
    CHECK_OK(ct_fill(w, 0.5));
    ct_no_grad_pop();
    ct_tensor *y2 = ct_linear(x, w, NULL);
    CHECK_NOT_NULL(y2);
    ct_autocast_stats s2 = ct_autocast_get_stats();
    CHECK(s2.casts - s1.casts == 2 && s2.cache_hits == s1.cache_hits);
    CHECK_OK(ct_autocast_pop());
    /* A new region starts with an empty cache. */
    CHECK_OK(ct_autocast_push(device.type, CT_BF16));
    CHECK_NOT_NULL(ct_linear(x, w, NULL));
    CHECK_OK(ct_autocast_pop());
    ct_autocast_stats s3 = ct_autocast_get_stats();
    CHECK(s3.casts - s2.casts == 2 && s3.cache_hits == s2.cache_hits);
    ct_scope_end();
}

/* loss = sum(u * relu(conv(x, k)) flattened @ w^T + b), the CNN's shape in small. */
typedef struct small_net {
    ct_tensor *x, *k, *w, *b, *u;
} small_net;

static ct_tensor *net_loss(const small_net *n, const ct_tensor *k, const ct_tensor *w,
                           const ct_tensor *b) {
    ct_tensor *h =
        ct_relu(ct_conv2d(n->x, k, NULL, &(ct_conv2d_options){{1, 1}, {1, 1}, {1, 1}, 1}));
    ct_tensor *flat = ct_reshape(h, 2, (int64_t[]){2, -1});
    ct_tensor *y = ct_linear(flat, w, b);
    return ct_sum(ct_mul(y, n->u), 0, NULL, false);
}

/* The central difference of the f64 loss along parameter `which`, element i. */
static double numeric(const small_net *n, int which, int64_t i, double eps) {
    ct_tensor *p[3] = {ct_cast(n->k, CT_F64), ct_cast(n->w, CT_F64), ct_cast(n->b, CT_F64)};
    double *v = ref_read(p[which]), out[2];
    ct_tensor *x64 = ct_cast(n->x, CT_F64), *u64 = ct_cast(n->u, CT_F64);
    small_net m = {x64, NULL, NULL, NULL, u64};
    for (int side = 0; side < 2; side++) {
        double saved = v[i];
        v[i] += side ? -eps : eps;
        ct_tensor *moved =
            ct_from_data(v, ct_ndim(p[which]), ct_shape(p[which]), CT_F64, ct_device_of(p[which]));
        v[i] = saved;
        ct_tensor *q[3] = {p[0], p[1], p[2]};
        q[which] = moved;
        ct_tensor *loss = net_loss(&m, q[0], q[1], q[2]);
        if (!loss || ct_item(loss, &out[side]) != CT_OK) out[side] = NAN;
    }
    free(v);
    return (out[0] - out[1]) / (2 * eps);
}

DEVICE_TEST(test_autocast_gradients_match_finite_differences) {
    ct_scope_begin();
    small_net n = {random_tensor(device, 4, (int64_t[]){2, 1, 4, 4}, 12, CT_F32),
                   random_tensor(device, 4, (int64_t[]){3, 1, 3, 3}, 13, CT_F32),
                   random_tensor(device, 2, (int64_t[]){5, 48}, 14, CT_F32),
                   random_tensor(device, 1, (int64_t[]){5}, 15, CT_F32),
                   random_tensor(device, 2, (int64_t[]){2, 5}, 16, CT_F32)};
    CHECK_NOT_NULL(n.u);
    ct_tensor *params[3] = {n.k, n.w, n.b};
    for (int i = 0; i < 3; i++) CHECK_OK(ct_set_requires_grad(params[i], true));
    CHECK_OK(ct_autocast_push(device.type, CT_BF16));
    ct_tensor *loss = net_loss(&n, n.k, n.w, n.b);
    CHECK_OK(ct_autocast_pop());
    CHECK_NOT_NULL(loss);
    CHECK_OK(ct_backward(loss));
    for (int which = 0; which < 3; which++) {
        ct_tensor *g = ct_grad(params[which]);
        CHECK_NOT_NULL(g);
        CHECK(ct_dtype_of(g) == CT_F32); /* the parameters' dtype */
        double *gv = ref_read(g);
        CHECK_NOT_NULL(gv);
        int64_t count = ct_numel(g), step = count > 12 ? count / 12 : 1;
        double worst = 0.0, scale = 0.0;
        for (int64_t i = 0; i < count; i += step) {
            double d = numeric(&n, which, i, 1e-3);
            scale = fmax(scale, fabs(d));
            worst = fmax(worst, fabs(d - gv[i]));
        }
        free(gv);
        if (worst > 3e-2 * fmax(scale, 1e-3))
            printf("    parameter %d: worst difference %g of %g\n", which, worst, scale);
        CHECK(worst <= 3e-2 * fmax(scale, 1e-3)); /* bf16's tolerance */
    }
    ct_scope_end();
}

/* A convolution large enough to run on several threads at once, forward and backward: each
 * thread's products on the bf16 units must not share scratch. */
DEVICE_TEST(test_autocast_conv_on_threads_matches_f64) {
    ct_scope_begin();
    /* The CNN's second convolution, on 8 images. */
    ct_tensor *x = random_tensor(device, 4, (int64_t[]){8, 32, 14, 14}, 17, CT_F32);
    ct_tensor *k = random_tensor(device, 4, (int64_t[]){64, 32, 3, 3}, 18, CT_F32);
    ct_tensor *u = random_tensor(device, 4, (int64_t[]){8, 64, 12, 12}, 19, CT_F32);
    CHECK_NOT_NULL(u);
    CHECK_OK(ct_set_requires_grad(k, true));
    CHECK_OK(ct_autocast_push(device.type, CT_BF16));
    ct_tensor *y = ct_conv2d(x, k, NULL, NULL);
    CHECK_OK(ct_autocast_pop());
    CHECK_NOT_NULL(y);
    CHECK_OK(ct_backward(ct_sum(ct_mul(y, u), 0, NULL, false)));
    /* The reference: the same bf16-rounded operands in f64. */
    ct_tensor *x64 = ct_cast(ct_cast(x, CT_BF16), CT_F64);
    ct_tensor *k64 = ct_detach(ct_cast(ct_cast(k, CT_BF16), CT_F64));
    ct_tensor *u64 = ct_cast(ct_cast(u, CT_BF16), CT_F64);
    CHECK_OK(ct_set_requires_grad(k64, true));
    ct_tensor *y64 = ct_conv2d(x64, k64, NULL, NULL);
    CHECK_OK(ct_backward(ct_sum(ct_mul(y64, u64), 0, NULL, false)));
    CHECK(close_to(y, y64, 1e-2));
    CHECK(close_to(ct_grad(k), ct_grad(k64), 2e-2));
    ct_scope_end();
}

/* Optimisers on complex parameters, which PyTorch updates as their real and imaginary parts
 * (torch.view_as_real): three steps of every SGD and Adam variant on a complex64 or
 * complex128 parameter (one small, one large enough for the kernels' parallel split) beside
 * a real one, against the same steps on the equivalent real pairs (shape (..., 2)) beside
 * the same real one: parameters and state equal element for element. Gradient clipping and
 * the gradient scaler measure and scale a complex gradient's parts; a complex gradient of a
 * real parameter is refused. */
#include <stdlib.h>

#include "autograd/tape_impl.h"
#include "core/tensor_impl.h"
#include "ct_ref.h"

enum { KIND_SGD, KIND_ADAM, KIND_ADAMW };

typedef struct opt_case {
    int kind;
    ct_sgd_options sgd;
    ct_adam_options adam;
} opt_case;

#define NCOMPLEX 2
static const int64_t complex_shapes[NCOMPLEX][2] = {{3, 5}, {20001, 1}};

/* A tensor of dtype (complex, or its parts' dtype for the pairs) holding pairs (re, im) of n
 * complex numbers: shape (shape) when complex, (shape, 2) when real. */
static ct_tensor *from_pairs(const double *pairs, const int64_t *shape, ct_dtype dtype,
                             ct_device device) {
    if (dtype == CT_C64 || dtype == CT_C128) {
        ct_tensor *wide = ct_from_data(pairs, 2, shape, CT_C128, device);
        ct_tensor *t = wide ? ct_cast(wide, dtype) : NULL;
        ct_release(wide);
        return t;
    }
    return ref_tensor(pairs, 3, (int64_t[]){shape[0], shape[1], 2}, dtype, device);
}

/* t's elements as doubles, a complex t's as (re, im) pairs (malloc'd). */
static double *read_parts(const ct_tensor *t) {
    if (ct_dtype_of(t) != CT_C64 && ct_dtype_of(t) != CT_C128) return ref_read(t);
    int64_t n = ct_numel(t);
    double *pairs = malloc(sizeof(double) * (size_t)(2 * n + 2));
    ct_tensor *wide = ct_cast(t, CT_C128);
    ct_tensor *dense = wide ? ct_contiguous(wide) : NULL;
    bool ok =
        pairs && dense && ct_copy_to_host(dense, pairs, (size_t)(2 * n) * sizeof(double)) == CT_OK;
    ct_release(wide), ct_release(dense);
    if (ok) return pairs;
    free(pairs);
    return NULL;
}

/* Give t a gradient (replacing any), as the autograd engine leaves it. */
static bool set_grad(ct_tensor *t, ct_tensor *g) {
    if (!g) return false;
    ct__scope_forget(g); /* the parameter holds it, beyond any scope */
    if (t->grad) ct__tensor_drop(t->grad);
    t->grad = g;
    return true;
}

static ct_optimizer *make_opt(const opt_case *c, int n, ct_tensor *const *params) {
    if (c->kind == KIND_SGD) return ct_sgd(n, params, &c->sgd);
    return c->kind == KIND_ADAM ? ct_adam(n, params, &c->adam) : ct_adamw(n, params, &c->adam);
}

/* The state entry called name (a new reference), or NULL. */
static ct_tensor *find_state(const ct_optimizer *opt, const char *name) {
    for (int i = 0; i < ct_optimizer_state_count(opt); i++) {
        const char *entry;
        ct_tensor *t;
        if (ct_optimizer_state_at(opt, i, &entry, &t) != CT_OK) return NULL;
        if (strcmp(entry, name) == 0) return t;
        ct_release(t);
    }
    return NULL;
}

/* a and b hold the same n doubles, bit for bit (the same kernel ran the same formulas on the
 * same numbers). */
static bool same_values(const ct_tensor *a, const ct_tensor *b, int64_t n) {
    double *x = a ? read_parts(a) : NULL, *y = b ? read_parts(b) : NULL;
    bool same = x && y;
    for (int64_t i = 0; same && i < n; i++) same = x[i] == y[i];
    free(x), free(y);
    return same;
}

/* Three steps of case c: optimiser one over {z, w} (z complex of dtype), optimiser two over
 * {r, w2} (r: z's pairs, w2: w's copy), with the same gradients. */
static void run_case(ct_device device, const opt_case *c, ct_dtype dtype, int k) {
    const int64_t *shape = complex_shapes[k];
    int64_t n = shape[0] * shape[1];
    ct_dtype part = dtype == CT_C64 ? CT_F32 : CT_F64;
    double *pairs = malloc(sizeof(double) * (size_t)(2 * n));
    double real_values[6];
    ref_random(pairs, 2 * n, 300 + (uint64_t)k, -1, 1);
    ref_random(real_values, 6, 301, -1, 1);
    ct_tensor *z = from_pairs(pairs, shape, dtype, device);
    ct_tensor *r = from_pairs(pairs, shape, part, device);
    ct_tensor *w = ref_tensor(real_values, 1, (int64_t[]){6}, part, device);
    ct_tensor *w2 = ref_tensor(real_values, 1, (int64_t[]){6}, part, device);
    ct_optimizer *one = z && w ? make_opt(c, 2, (ct_tensor *[]){z, w}) : NULL;
    ct_optimizer *two = r && w2 ? make_opt(c, 2, (ct_tensor *[]){r, w2}) : NULL;
    bool stepped = one && two;
    for (int step = 0; stepped && step < 3; step++) {
        /* Gradients shrink tenfold per step, so amsgrad's maximum matters. */
        ref_random(pairs, 2 * n, 310 + (uint64_t)step, -1, 1);
        ref_random(real_values, 6, 320 + (uint64_t)step, -1, 1);
        for (int64_t i = 0; i < 2 * n; i++) pairs[i] *= pow(0.1, step);
        stepped = set_grad(z, from_pairs(pairs, shape, dtype, device)) &&
                  set_grad(r, from_pairs(pairs, shape, part, device)) &&
                  set_grad(w, ref_tensor(real_values, 1, (int64_t[]){6}, part, device)) &&
                  set_grad(w2, ref_tensor(real_values, 1, (int64_t[]){6}, part, device)) &&
                  ct_optimizer_step(one) == CT_OK && ct_optimizer_step(two) == CT_OK;
    }
    bool params_same = stepped && same_values(z, r, 2 * n) && same_values(w, w2, 6);
    bool state_same = stepped && ct_optimizer_state_count(one) == ct_optimizer_state_count(two);
    for (int i = 0; state_same && i < ct_optimizer_state_count(one); i++) {
        const char *entry;
        char name[64] = "";
        ct_tensor *a = NULL, *b;
        state_same = ct_optimizer_state_at(one, i, &entry, &a) == CT_OK;
        if (state_same) snprintf(name, sizeof name, "%s", entry); /* find_state reuses entry */
        b = state_same ? find_state(two, name) : NULL;
        bool of_z = strncmp(name, "state.0.", 8) == 0 && strcmp(name, "state.0.step") != 0;
        state_same = b && (!of_z || ct_dtype_of(a) == dtype) &&
                     same_values(a, b, of_z ? 2 * n : ct_numel(b));
        ct_release(a), ct_release(b);
    }
    ct_optimizer_free(one), ct_optimizer_free(two);
    ct_release(z), ct_release(r), ct_release(w), ct_release(w2);
    free(pairs);
    CHECK(stepped);
    CHECK(params_same);
    CHECK(state_same);
}

static void run_cases(ct_device device, const opt_case *cases, int ncases) {
    for (int i = 0; i < ncases && !ct_test_failed(); i++)
        for (int k = 0; k < NCOMPLEX && !ct_test_failed(); k++) {
            run_case(device, &cases[i], CT_C64, k);
            run_case(device, &cases[i], CT_C128, k);
        }
}

DEVICE_TEST(test_optim_complex_sgd) {
    const opt_case cases[] = {
        {KIND_SGD, .sgd = {.lr = 0.1}},
        {KIND_SGD, .sgd = {.lr = 0.1, .momentum = 0.9}},
        {KIND_SGD, .sgd = {.lr = 0.05, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.01}},
        {KIND_SGD, .sgd = {.lr = 0.1, .momentum = 0.8, .nesterov = true, .weight_decay = 0.1}},
    };
    run_cases(device, cases, (int)(sizeof cases / sizeof cases[0]));
}

DEVICE_TEST(test_optim_complex_adam) {
    ct_adam_options adam = ct_adam_defaults(), decay = adam, ams = adam,
                    adamw = ct_adamw_defaults();
    decay.weight_decay = 0.1, decay.lr = 0.01;
    ams.amsgrad = true;
    adamw.amsgrad = true;
    const opt_case cases[] = {
        {KIND_ADAM, .adam = adam},   {KIND_ADAM, .adam = decay},
        {KIND_ADAM, .adam = ams},    {KIND_ADAMW, .adam = ct_adamw_defaults()},
        {KIND_ADAMW, .adam = adamw},
    };
    run_cases(device, cases, (int)(sizeof cases / sizeof cases[0]));
}

/* A real gradient of a complex parameter is taken with imaginary parts 0; a complex gradient
 * of a real parameter is refused, and nothing changes. */
DEVICE_TEST(test_optim_complex_gradient_dtypes) {
    double pairs[4] = {1, 2, 3, 4}, values[2] = {0.5, -0.5};
    ct_tensor *z = from_pairs(pairs, (int64_t[]){1, 2}, CT_C64, device);
    ct_tensor *x = ref_tensor(values, 2, (int64_t[]){1, 2}, CT_F32, device);
    ct_optimizer *opt = z && x ? ct_sgd(1, &z, &(ct_sgd_options){.lr = 1}) : NULL;
    ct_optimizer *real_opt = x ? ct_sgd(1, &x, &(ct_sgd_options){.lr = 1}) : NULL;
    bool ok =
        opt && real_opt && set_grad(z, ref_tensor(values, 2, (int64_t[]){1, 2}, CT_F32, device));
    ct_status status = ok ? ct_optimizer_step(opt) : CT_ERR_STATE;
    double expected[4] = {0.5, 2, 3.5, 4};
    double *after = status == CT_OK ? read_parts(z) : NULL;
    bool updated = after && memcmp(after, expected, sizeof expected) == 0;
    ok = ok && set_grad(x, from_pairs(pairs, (int64_t[]){1, 2}, CT_C64, device));
    ct_status refused = ok ? ct_optimizer_step(real_opt) : CT_OK;
    bool named = refused == CT_ERR_DTYPE && strstr(ct_last_error(), "complex64") &&
                 strstr(ct_last_error(), "a real parameter's gradient is real");
    double *kept = ok ? ref_read(x) : NULL;
    bool unchanged = kept && kept[0] == 0.5 && kept[1] == -0.5;
    free(after), free(kept);
    ct_optimizer_free(opt), ct_optimizer_free(real_opt);
    ct_release(z), ct_release(x);
    CHECK_OK(status);
    CHECK(updated);
    CHECK(named);
    CHECK(unchanged);
}

/* Clipping a complex gradient beside a real one: for p = 2 exactly as its real pairs; for
 * another p the norm is of the complex magnitudes (PyTorch's vector_norm of a complex
 * tensor), and both gradients are scaled by max_norm / (norm + 1e-6). */
DEVICE_TEST(test_optim_complex_clip_grad_norm) {
    const int64_t shape[2] = {3, 5};
    double pairs[30], real_values[4];
    ref_random(pairs, 30, 330, -2, 2);
    ref_random(real_values, 4, 331, -2, 2);
    const double ords[4] = {2, 1, 3, INFINITY};
    for (int o = 0; o < 4 && !ct_test_failed(); o++) {
        ct_dtype dtype = o % 2 ? CT_C64 : CT_C128, part = o % 2 ? CT_F32 : CT_F64;
        double p = ords[o];
        ct_tensor *z = from_pairs(pairs, shape, dtype, device);
        ct_tensor *r = from_pairs(pairs, shape, part, device);
        ct_tensor *w = ref_tensor(real_values, 1, (int64_t[]){4}, part, device);
        ct_tensor *w2 = ref_tensor(real_values, 1, (int64_t[]){4}, part, device);
        bool ok = z && r && w && w2 && set_grad(z, from_pairs(pairs, shape, dtype, device)) &&
                  set_grad(r, from_pairs(pairs, shape, part, device)) &&
                  set_grad(w, ref_tensor(real_values, 1, (int64_t[]){4}, part, device)) &&
                  set_grad(w2, ref_tensor(real_values, 1, (int64_t[]){4}, part, device));
        double total = NAN, pair_total = NAN;
        ok = ok && ct_clip_grad_norm(2, (ct_tensor *[]){z, w}, 1.0, p, &total) == CT_OK;
        ok = ok && ct_clip_grad_norm(2, (ct_tensor *[]){r, w2}, 1.0, p, &pair_total) == CT_OK;
        /* The reference norm, of the magnitudes of the values the dtype holds. */
        double expected = 0;
        for (int i = 0; i < 19; i++) {
            double m = i < 15
                           ? hypot(ref_round(pairs[2 * i], part), ref_round(pairs[2 * i + 1], part))
                           : fabs(ref_round(real_values[i - 15], part));
            expected = isinf(p) ? fmax(expected, m) : expected + pow(m, p);
        }
        if (!isinf(p)) expected = pow(expected, 1.0 / p);
        double *clipped = ok ? read_parts(z->grad) : NULL;
        double coef = 1.0 / (expected + 1e-6), tol = part == CT_F32 ? 1e-5 : 1e-12;
        bool scaled = clipped != NULL;
        for (int i = 0; scaled && i < 30; i++)
            scaled = fabs(clipped[i] - ref_round(pairs[i], part) * coef) <= tol;
        bool as_pairs = ok && p == 2.0 && same_values(z->grad, r->grad, 30) &&
                        same_values(w->grad, w2->grad, 4) && total == pair_total;
        free(clipped);
        ct_release(z), ct_release(r), ct_release(w), ct_release(w2);
        CHECK(ok);
        CHECK(fabs(total - expected) <= tol * expected);
        CHECK(scaled);
        CHECK(p != 2.0 || as_pairs);
    }
}

/* The gradient scaler unscales a complex gradient's parts, and a non-finite imaginary part
 * skips the step. */
DEVICE_TEST(test_optim_complex_grad_scaler) {
    ct_tensor *z = from_pairs((double[]){1, 2, 3, 4}, (int64_t[]){1, 2}, CT_C64, device);
    ct_grad_scaler_params params = ct_grad_scaler_params_default();
    params.init_scale = 4.0;
    ct_optimizer *sgd = z ? ct_sgd(1, &z, &(ct_sgd_options){.lr = 1}) : NULL;
    ct_grad_scaler *scaler = z ? ct_grad_scaler_new(1, &z, NULL, &params) : NULL;
    bool skipped = true, skipped_bad = false;
    bool ok = sgd && scaler &&
              set_grad(z, from_pairs((double[]){4, -8, 2, 1}, (int64_t[]){1, 2}, CT_C64, device)) &&
              ct_grad_scaler_step(scaler, sgd, &skipped) == CT_OK &&
              ct_grad_scaler_update(scaler) == CT_OK;
    double *after = ok ? read_parts(z) : NULL;
    const double expected[4] = {0, 4, 2.5, 3.75};
    bool stepped = after && memcmp(after, expected, sizeof expected) == 0;
    ct_test_warnings warnings = {0};
    ct_set_log_hook(ct_test_record_warning, &warnings);
    ct_tensor *bad = from_pairs((double[]){1, INFINITY, 2, 1}, (int64_t[]){1, 2}, CT_C64, device);
    if (!ok) ct_release(bad);
    ok = ok && set_grad(z, bad) && ct_grad_scaler_step(scaler, sgd, &skipped_bad) == CT_OK;
    ct_set_log_hook(NULL, NULL);
    double *kept = ok ? read_parts(z) : NULL;
    bool unchanged = kept && memcmp(kept, expected, sizeof expected) == 0;
    free(after), free(kept);
    ct_grad_scaler_free(scaler);
    ct_optimizer_free(sgd);
    ct_release(z);
    CHECK(ok);
    CHECK(!skipped && stepped);
    CHECK(skipped_bad && unchanged);
    CHECK(warnings.count == 1 && strstr(warnings.last, "parameter 0"));
}

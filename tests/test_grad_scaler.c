/* The loss scaler step by step with injected inf and NaN gradients: scale and unscale, a
 * skipped step that leaves the parameters alone and names the bad parameter, the backoff,
 * growth after the interval, the floor, the one read-back per device and step, the state for
 * checkpoints, and bad calls. */
#include <stdlib.h>

#include "ct_ref.h"
#include "ct_test.h"

/* Two parameters a (3) and b (2); loss = sum(a * ka) + sum(b * kb), so grad a = ka * scale. */
typedef struct rig {
    ct_tensor *a, *b;
    ct_optimizer *sgd;
    ct_grad_scaler *scaler;
} rig;

static bool rig_make(rig *r, ct_device device, const ct_grad_scaler_params *p) {
    r->a = ct_from_data((double[]){1, 2, 3}, 1, (int64_t[]){3}, CT_F64, device);
    r->b = ct_from_data((double[]){4, 5}, 1, (int64_t[]){2}, CT_F64, device);
    if (!r->a || !r->b) return false;
    ct_tensor *a32 = ct_keep(ct_cast(r->a, CT_F32)), *b32 = ct_keep(ct_cast(r->b, CT_F32));
    ct_release(r->a), ct_release(r->b);
    r->a = a32, r->b = b32;
    if (!a32 || !b32 || ct_set_requires_grad(a32, true) || ct_set_requires_grad(b32, true))
        return false;
    ct_tensor *params[2] = {a32, b32};
    r->sgd = ct_sgd(2, params, &(ct_sgd_options){.lr = 0.1});
    r->scaler = ct_grad_scaler_new(2, params, (const char *[]){"0.weight", "0.bias"}, p);
    return r->sgd && r->scaler;
}

static void rig_free(rig *r) {
    ct_grad_scaler_free(r->scaler);
    ct_optimizer_free(r->sgd);
    ct_release(r->a), ct_release(r->b);
}

/* One step with the given multipliers; *skipped from the scaler. */
static ct_status rig_step(rig *r, const double *ka, const double *kb, bool *skipped) {
    ct_scope_begin();
    ct_device device = ct_device_of(r->a);
    ct_tensor *ta = ct_from_data(ka, 1, (int64_t[]){3}, CT_F64, device);
    ct_tensor *tb = ct_from_data(kb, 1, (int64_t[]){2}, CT_F64, device);
    ct_tensor *loss = ct_add(ct_sum(ct_mul(r->a, ct_cast(ta, CT_F32)), 0, NULL, false),
                             ct_sum(ct_mul(r->b, ct_cast(tb, CT_F32)), 0, NULL, false));
    ct_status s = ct_optimizer_zero_grad(r->sgd);
    if (s == CT_OK) s = ct_backward(ct_grad_scaler_scale(r->scaler, loss));
    if (s == CT_OK) s = ct_grad_scaler_step(r->scaler, r->sgd, skipped);
    if (s == CT_OK) s = ct_grad_scaler_update(r->scaler);
    ct_scope_end();
    return s;
}

static const double clean_a[3] = {1, 1, 1}, clean_b[2] = {1, 1};

DEVICE_TEST(test_grad_scaler_defaults_scale_and_unscale) {
    ct_grad_scaler_params d = ct_grad_scaler_params_default();
    CHECK(d.init_scale == 65536.0 && d.growth_factor == 2.0 && d.backoff_factor == 0.5);
    CHECK(d.growth_interval == 2000 && d.min_scale == 0.0 && d.enabled);
    rig r = {0};
    ct_scope_begin();
    CHECK(rig_make(&r, device, NULL));
    ct_tensor *ka = ct_from_data((float[]){0.5f, -2, 3}, 1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *loss = ct_sum(ct_mul(r.a, ka), 0, NULL, false);
    ct_tensor *scaled = ct_grad_scaler_scale(r.scaler, loss);
    double lv, sv;
    CHECK_OK(ct_item(loss, &lv));
    CHECK_OK(ct_item(scaled, &sv));
    CHECK_NEAR(sv, lv * 65536.0, 1e-3);
    CHECK_OK(ct_backward(scaled));
    CHECK_TENSOR(ct_grad(r.a), ((double[]){0.5 * 65536, -2 * 65536, 3 * 65536}));
    ct_transfer_statistics t0, t1;
    ct_transfer_stats(&t0);
    CHECK_OK(ct_grad_scaler_unscale(r.scaler));
    CHECK_OK(ct_grad_scaler_unscale(r.scaler)); /* once a step */
    ct_transfer_stats(&t1);
    CHECK_TENSOR(ct_grad(r.a), ((double[]){0.5, -2, 3}));
    /* One read-back for the device's gradients (none on the CPU, which reads nothing). */
    uint64_t reads = t1.counters[CT_TRANSFER_D2H][1].count - t0.counters[CT_TRANSFER_D2H][1].count;
    CHECK(reads == (device.type == CT_DEVICE_CPU ? 0u : 1u));
    CHECK_OK(ct_grad_scaler_step(r.scaler, r.sgd, NULL));
    CHECK_OK(ct_grad_scaler_update(r.scaler));
    CHECK_TENSOR(r.a, ((double[]){1 - 0.05, 2 + 0.2, 3 - 0.3}));
    ct_scope_end();
    rig_free(&r);
}

DEVICE_TEST(test_grad_scaler_skips_backs_off_and_names_the_parameter) {
    ct_test_warnings warnings = {0};
    ct_set_log_hook(ct_test_record_warning, &warnings);
    rig r = {0};
    ct_scope_begin();
    CHECK(rig_make(&r, device, NULL));
    bool skipped = false;
    CHECK_OK(rig_step(&r, clean_a, (double[]){1, INFINITY}, &skipped));
    CHECK(skipped);
    CHECK(ct_grad_scaler_get_scale(r.scaler) == 32768.0);
    CHECK(ct_grad_scaler_skipped_steps(r.scaler) == 1);
    CHECK(ct_grad_scaler_last_bad_param(r.scaler) == 1);
    CHECK(warnings.count == 1 && strstr(warnings.last, "parameter 1 (0.bias)"));
    CHECK(strstr(warnings.last, "backs off to 32768"));
    CHECK_TENSOR(r.a, ((double[]){1, 2, 3})); /* no step taken */
    CHECK_TENSOR(r.b, ((double[]){4, 5}));
    /* NaN in both: the first parameter is named. */
    CHECK_OK(rig_step(&r, (double[]){NAN, 1, 1}, (double[]){NAN, 1}, &skipped));
    CHECK(skipped && ct_grad_scaler_last_bad_param(r.scaler) == 0);
    CHECK(strstr(warnings.last, "parameter 0 (0.weight)"));
    CHECK(ct_grad_scaler_get_scale(r.scaler) == 16384.0);
    /* A clean step steps and keeps the scale. */
    CHECK_OK(rig_step(&r, clean_a, clean_b, &skipped));
    CHECK(!skipped && ct_grad_scaler_last_bad_param(r.scaler) == -1);
    CHECK(ct_grad_scaler_get_scale(r.scaler) == 16384.0);
    CHECK_TENSOR(r.a, ((double[]){0.9, 1.9, 2.9}));
    CHECK(warnings.count == 2);
    ct_scope_end();
    rig_free(&r);
    ct_set_log_hook(NULL, NULL);
}

DEVICE_TEST(test_grad_scaler_grows_after_the_interval) {
    ct_grad_scaler_params p = ct_grad_scaler_params_default();
    p.init_scale = 8.0;
    p.growth_interval = 3;
    rig r = {0};
    ct_scope_begin();
    CHECK(rig_make(&r, device, &p));
    bool skipped;
    for (int i = 0; i < 2; i++) CHECK_OK(rig_step(&r, clean_a, clean_b, &skipped));
    CHECK(ct_grad_scaler_get_scale(r.scaler) == 8.0);
    CHECK(ct_grad_scaler_get_state(r.scaler).growth_tracker == 2);
    CHECK_OK(rig_step(&r, clean_a, clean_b, &skipped));
    CHECK(ct_grad_scaler_get_scale(r.scaler) == 16.0);
    /* An inf resets the count of clean steps. */
    for (int i = 0; i < 2; i++) CHECK_OK(rig_step(&r, clean_a, clean_b, &skipped));
    ct_set_log_hook(ct_test_record_warning, &(ct_test_warnings){0});
    CHECK_OK(rig_step(&r, (double[]){1, -INFINITY, 1}, clean_b, &skipped));
    ct_set_log_hook(NULL, NULL);
    CHECK(skipped && ct_grad_scaler_get_scale(r.scaler) == 8.0);
    for (int i = 0; i < 2; i++) CHECK_OK(rig_step(&r, clean_a, clean_b, &skipped));
    CHECK(ct_grad_scaler_get_scale(r.scaler) == 8.0);
    CHECK_OK(rig_step(&r, clean_a, clean_b, &skipped));
    CHECK(ct_grad_scaler_get_scale(r.scaler) == 16.0);
    ct_scope_end();
    rig_free(&r);
}

DEVICE_TEST(test_grad_scaler_floor_holds) {
    ct_grad_scaler_params p = ct_grad_scaler_params_default();
    p.min_scale = 16384.0;
    rig r = {0};
    ct_scope_begin();
    CHECK(rig_make(&r, device, &p));
    ct_test_warnings warnings = {0};
    ct_set_log_hook(ct_test_record_warning, &warnings);
    bool skipped;
    double expected[4] = {32768, 16384, 16384, 16384};
    for (int i = 0; i < 4; i++) {
        CHECK_OK(rig_step(&r, (double[]){1, 1, NAN}, clean_b, &skipped));
        CHECK(skipped && ct_grad_scaler_get_scale(r.scaler) == expected[i]);
    }
    ct_set_log_hook(NULL, NULL);
    CHECK(warnings.count == 4 && strstr(warnings.last, "backs off to 16384"));
    CHECK(ct_grad_scaler_skipped_steps(r.scaler) == 4);
    ct_scope_end();
    rig_free(&r);
}

DEVICE_TEST(test_grad_scaler_state_round_trip) {
    rig r = {0}, q = {0};
    ct_scope_begin();
    CHECK(rig_make(&r, device, NULL));
    CHECK(rig_make(&q, device, NULL));
    bool skipped;
    ct_set_log_hook(ct_test_record_warning, &(ct_test_warnings){0});
    CHECK_OK(rig_step(&r, clean_a, (double[]){NAN, 1}, &skipped));
    ct_set_log_hook(NULL, NULL);
    CHECK_OK(rig_step(&r, clean_a, clean_b, &skipped));
    ct_grad_scaler_state s = ct_grad_scaler_get_state(r.scaler);
    CHECK(s.scale == 32768.0 && s.growth_tracker == 1 && s.skipped_steps == 1);
    CHECK_OK(ct_grad_scaler_set_state(q.scaler, &s));
    ct_grad_scaler_state t = ct_grad_scaler_get_state(q.scaler);
    CHECK(t.scale == s.scale && t.growth_tracker == 1 && t.skipped_steps == 1);
    CHECK(ct_grad_scaler_set_state(q.scaler, &(ct_grad_scaler_state){0.0, 0, 0}) ==
          CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "finite and > 0");
    CHECK(ct_grad_scaler_set_state(q.scaler, &(ct_grad_scaler_state){INFINITY, 0, 0}) ==
          CT_ERR_INVALID_ARG);
    ct_clear_error();
    CHECK(ct_grad_scaler_get_scale(q.scaler) == 32768.0); /* a refused state changes nothing */
    ct_scope_end();
    rig_free(&r);
    rig_free(&q);
}

DEVICE_TEST(test_grad_scaler_disabled_is_plain_training) {
    ct_grad_scaler_params p = ct_grad_scaler_params_default();
    p.enabled = false;
    rig r = {0};
    ct_scope_begin();
    CHECK(rig_make(&r, device, &p));
    bool skipped = true;
    CHECK_OK(rig_step(&r, clean_a, clean_b, &skipped));
    CHECK(!skipped && ct_grad_scaler_get_scale(r.scaler) == 1.0);
    CHECK_TENSOR(r.a, ((double[]){0.9, 1.9, 2.9}));
    ct_scope_end();
    rig_free(&r);
}

TEST(test_grad_scaler_bad_calls) {
    ct_grad_scaler_params p = ct_grad_scaler_params_default();
    p.backoff_factor = 1.5;
    CHECK(!ct_grad_scaler_new(0, NULL, NULL, &p));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "backoff_factor is 1.5");
    p = ct_grad_scaler_params_default();
    p.growth_interval = 0;
    CHECK(!ct_grad_scaler_new(0, NULL, NULL, &p));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "growth_interval is 0");
    p = ct_grad_scaler_params_default();
    p.min_scale = 1e9;
    CHECK(!ct_grad_scaler_new(0, NULL, NULL, &p));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "min_scale");
    CHECK(!ct_grad_scaler_new(1, (ct_tensor *[]){NULL}, NULL, NULL));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "parameter 0 is NULL");
    ct_grad_scaler *s = ct_grad_scaler_new(0, NULL, NULL, NULL);
    CHECK_NOT_NULL(s);
    CHECK(ct_grad_scaler_update(s) == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "no gradients were checked");
    CHECK(ct_grad_scaler_step(s, NULL, NULL) == CT_ERR_INVALID_ARG);
    ct_clear_error();
    ct_grad_scaler_free(s);
    ct_grad_scaler_free(NULL);
}

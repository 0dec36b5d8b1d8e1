/* The finite-difference gradient check (ct_gradcheck.h). */
#include "ct_gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ct_ref.h"

enum { GRADCHECK_SEED = 1234 };

static ct_tensor *evaluate(ct_gradcheck_fn f, ct_tensor *const *inputs, void *context) {
    ct_manual_seed(GRADCHECK_SEED);
    return f(inputs, context);
}

/* sum(u * f(inputs)) in float64, without recording. */
static bool weighted_output(ct_gradcheck_fn f, ct_tensor *const *inputs, void *context,
                            const double *u, double *out) {
    ct_no_grad_push();
    ct_tensor *y = evaluate(f, inputs, context);
    ct_no_grad_pop();
    double *values = y ? ref_read(y) : NULL;
    if (!values) {
        ct_release(y);
        return false;
    }
    double total = 0;
    for (int64_t i = 0; i < ct_numel(y); i++) total += u[i] * values[i];
    *out = total;
    free(values);
    ct_release(y);
    return true;
}

/* Write host values into input (a leaf that requires grad: inside a no-grad region). */
static bool write_values(ct_tensor *input, const double *values) {
    ct_tensor *src = ref_tensor(values, ct_ndim(input), ct_shape(input), ct_dtype_of(input),
                                ct_device_of(input));
    ct_no_grad_push();
    ct_status status = src ? ct_copy(input, src) : ct_last_status();
    ct_no_grad_pop();
    ct_release(src);
    return status == CT_OK;
}

/* The analytic gradients: backward of sum(u * f) through the graph f records. */
static bool analytic(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *context,
                     const double *u, double **grads) {
    ct_tensor *y = evaluate(f, inputs, context);
    if (!y) return false;
    ct_tensor *weights = ref_tensor(u, ct_ndim(y), ct_shape(y), ct_dtype_of(y), ct_device_of(y));
    ct_status status = weights ? ct_backward_with(y, weights, false) : ct_last_status();
    ct_release(weights);
    ct_release(y);
    if (status != CT_OK) {
        fprintf(stderr, "gradcheck: backward failed: %s\n", ct_last_error());
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (!ct_requires_grad(inputs[i])) continue;
        ct_tensor *g = ct_grad(inputs[i]);
        /* No gradient reached the input: it does not affect the output. */
        grads[i] = g ? ref_read(g) : calloc((size_t)ct_numel(inputs[i]) + 1, sizeof(double));
        if (!g) ct_clear_error();
        ct_release(g);
        ct_zero_grad(inputs[i]);
    }
    return true;
}

static bool compare_input(ct_gradcheck_fn f, ct_tensor *const *inputs, int i, void *context,
                          const double *u, const double *grad, double eps, double atol,
                          double rtol) {
    ct_tensor *x = inputs[i];
    double *values = ref_read(x);
    bool ok = values != NULL;
    double worst = 0, worst_a = 0, worst_n = 0;
    int64_t worst_at = -1;
    for (int64_t j = 0; ok && j < ct_numel(x); j++) {
        double saved = values[j], plus = 0, minus = 0;
        values[j] = saved + eps;
        ok = write_values(x, values) && weighted_output(f, inputs, context, u, &plus);
        values[j] = saved - eps;
        ok = ok && write_values(x, values) && weighted_output(f, inputs, context, u, &minus);
        values[j] = saved;
        double numeric = (plus - minus) / (2 * eps);
        double excess = fabs(grad[j] - numeric) - (atol + rtol * fabs(numeric));
        if (!(excess <= worst))
            worst = isnan(excess) ? INFINITY : excess, worst_at = j, worst_a = grad[j],
            worst_n = numeric;
    }
    ok = write_values(x, values) && ok;
    free(values);
    if (ok && worst_at >= 0)
        fprintf(stderr, "gradcheck: input %d element %lld: analytic %.10g, numeric %.10g\n", i + 1,
                (long long)worst_at, worst_a, worst_n);
    return ok && worst_at < 0;
}

bool ct_gradcheck(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *context, double eps,
                  double atol, double rtol) {
    ct_tensor *probe = evaluate(f, inputs, context);
    if (!probe) {
        fprintf(stderr, "gradcheck: the function failed: %s\n", ct_last_error());
        return false;
    }
    int64_t count = ct_numel(probe);
    ct_release(probe);
    double *u = malloc(sizeof(double) * (size_t)(count + 1));
    double **grads = calloc((size_t)n, sizeof *grads);
    bool ok = u && grads;
    if (ok) ref_random(u, count, 99, -1.0, 1.0);
    ok = ok && analytic(f, n, inputs, context, u, grads);
    for (int i = 0; ok && i < n; i++)
        if (ct_requires_grad(inputs[i]))
            ok = grads[i] && compare_input(f, inputs, i, context, u, grads[i], eps, atol, rtol);
    for (int i = 0; grads && i < n; i++) free(grads[i]);
    free(grads);
    free(u);
    return ok;
}

ct_tensor *ct_gradcheck_leaf(ct_device device, int ndim, const int64_t *shape, uint64_t seed,
                             double lo, double hi, bool requires_grad) {
    int64_t n = ref_numel(ndim, shape);
    double *values = malloc(sizeof(double) * (size_t)(n + 1));
    if (!values) return NULL;
    ref_random(values, n, seed, lo, hi);
    ct_tensor *t = ref_tensor(values, ndim, shape, CT_F64, device);
    free(values);
    if (t && requires_grad && ct_set_requires_grad(t, true) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

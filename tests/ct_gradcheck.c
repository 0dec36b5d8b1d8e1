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

/* ---- complex functions ---- */

static bool is_complex(const ct_tensor *t) {
    return ct_dtype_of(t) == CT_C64 || ct_dtype_of(t) == CT_C128;
}

/* t's elements as (re, im) pairs in float64 (im 0 for a real t); malloc'd, NULL on failure. */
static double *read_pairs(const ct_tensor *t) {
    int64_t n = ct_numel(t);
    double *pairs = calloc((size_t)(2 * n + 2), sizeof *pairs);
    if (!pairs) return NULL;
    if (!is_complex(t)) {
        double *re = ref_read(t);
        for (int64_t i = 0; re && i < n; i++) pairs[2 * i] = re[i];
        bool ok = re != NULL;
        free(re);
        if (ok) return pairs;
        free(pairs);
        return NULL;
    }
    ct_tensor *wide = ct_cast(t, CT_C128);
    ct_tensor *dense = wide ? ct_contiguous(wide) : NULL;
    bool ok = dense && ct_copy_to_host(dense, pairs, (size_t)n * 2 * sizeof(double)) == CT_OK;
    ct_release(wide);
    ct_release(dense);
    if (ok) return pairs;
    free(pairs);
    return NULL;
}

/* A tensor of dtype (complex128 or float64: the real parts) on device from (re, im) pairs. */
static ct_tensor *from_pairs(const double *pairs, int ndim, const int64_t *shape, ct_dtype dtype,
                             ct_device device) {
    if (dtype == CT_C128) return ct_from_data(pairs, ndim, shape, CT_C128, device);
    int64_t n = ref_numel(ndim, shape);
    double *re = malloc(sizeof(double) * (size_t)(n + 1));
    if (!re) return NULL;
    for (int64_t i = 0; i < n; i++) re[i] = pairs[2 * i];
    ct_tensor *t = ref_tensor(re, ndim, shape, dtype, device);
    free(re);
    return t;
}

static bool write_pairs(ct_tensor *input, const double *pairs) {
    ct_tensor *src =
        from_pairs(pairs, ct_ndim(input), ct_shape(input), ct_dtype_of(input), ct_device_of(input));
    ct_no_grad_push();
    ct_status status = src ? ct_copy(input, src) : ct_last_status();
    ct_no_grad_pop();
    ct_release(src);
    return status == CT_OK;
}

/* L = sum Re(conj(u) f(inputs)), without recording. */
static bool complex_loss(ct_gradcheck_fn f, ct_tensor *const *inputs, void *context,
                         const double *u, double *out) {
    ct_no_grad_push();
    ct_tensor *y = evaluate(f, inputs, context);
    ct_no_grad_pop();
    double *values = y ? read_pairs(y) : NULL;
    bool ok = values != NULL;
    double total = 0;
    for (int64_t i = 0; ok && i < ct_numel(y); i++)
        total += u[2 * i] * values[2 * i] + (is_complex(y) ? u[2 * i + 1] * values[2 * i + 1] : 0);
    *out = total;
    free(values);
    ct_release(y);
    return ok;
}

static bool complex_analytic(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *context,
                             const double *u, double **grads) {
    ct_tensor *y = evaluate(f, inputs, context);
    if (!y) return false;
    ct_tensor *wide =
        from_pairs(u, ct_ndim(y), ct_shape(y), is_complex(y) ? CT_C128 : CT_F64, ct_device_of(y));
    ct_tensor *weights = wide ? ct_cast(wide, ct_dtype_of(y)) : NULL;
    ct_status status = weights ? ct_backward_with(y, weights, false) : ct_last_status();
    ct_release(wide);
    ct_release(weights);
    ct_release(y);
    if (status != CT_OK) {
        fprintf(stderr, "gradcheck: backward failed: %s\n", ct_last_error());
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (!ct_requires_grad(inputs[i])) continue;
        ct_tensor *g = ct_grad(inputs[i]);
        if (g && ct_dtype_of(g) != ct_dtype_of(inputs[i])) {
            fprintf(stderr, "gradcheck: input %d's gradient is %s, the input %s\n", i + 1,
                    ct_dtype_name(ct_dtype_of(g)), ct_dtype_name(ct_dtype_of(inputs[i])));
            ct_release(g);
            return false;
        }
        grads[i] =
            g ? read_pairs(g) : calloc((size_t)(2 * ct_numel(inputs[i]) + 2), sizeof(double));
        if (!g) ct_clear_error();
        ct_release(g);
        ct_zero_grad(inputs[i]);
    }
    return true;
}

static bool compare_complex_input(ct_gradcheck_fn f, ct_tensor *const *inputs, int i, void *context,
                                  const double *u, const double *grad, double eps, double atol,
                                  double rtol) {
    ct_tensor *x = inputs[i];
    double *values = read_pairs(x);
    bool ok = values != NULL;
    int parts = is_complex(x) ? 2 : 1;
    double worst = 0, worst_a = 0, worst_n = 0;
    int64_t worst_at = -1;
    for (int64_t j = 0; ok && j < 2 * ct_numel(x); j++) {
        if (j % 2 >= parts) continue;
        double saved = values[j], plus = 0, minus = 0;
        values[j] = saved + eps;
        ok = write_pairs(x, values) && complex_loss(f, inputs, context, u, &plus);
        values[j] = saved - eps;
        ok = ok && write_pairs(x, values) && complex_loss(f, inputs, context, u, &minus);
        values[j] = saved;
        double numeric = (plus - minus) / (2 * eps);
        double excess = fabs(grad[j] - numeric) - (atol + rtol * fabs(numeric));
        if (!(excess <= worst))
            worst = isnan(excess) ? INFINITY : excess, worst_at = j, worst_a = grad[j],
            worst_n = numeric;
    }
    ok = write_pairs(x, values) && ok;
    free(values);
    if (ok && worst_at >= 0)
        fprintf(stderr,
                "gradcheck: input %d element %lld (%s part): analytic %.10g, numeric %.10g\n",
                i + 1, (long long)(worst_at / 2), worst_at % 2 ? "imaginary" : "real", worst_a,
                worst_n);
    return ok && worst_at < 0;
}

bool ct_gradcheck_complex(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *context,
                          double eps, double atol, double rtol) {
    ct_tensor *probe = evaluate(f, inputs, context);
    if (!probe) {
        fprintf(stderr, "gradcheck: the function failed: %s\n", ct_last_error());
        return false;
    }
    int64_t count = ct_numel(probe);
    ct_release(probe);
    double *u = malloc(sizeof(double) * (size_t)(2 * count + 2));
    double **grads = calloc((size_t)n, sizeof *grads);
    bool ok = u && grads;
    if (ok) ref_random(u, 2 * count, 99, -1.0, 1.0);
    ok = ok && complex_analytic(f, n, inputs, context, u, grads);
    for (int i = 0; ok && i < n; i++)
        if (ct_requires_grad(inputs[i]))
            ok = grads[i] &&
                 compare_complex_input(f, inputs, i, context, u, grads[i], eps, atol, rtol);
    for (int i = 0; grads && i < n; i++) free(grads[i]);
    free(grads);
    free(u);
    return ok;
}

ct_tensor *ct_gradcheck_complex_leaf(ct_device device, int ndim, const int64_t *shape,
                                     uint64_t seed, const double re[2], const double im[2],
                                     bool requires_grad) {
    int64_t n = ref_numel(ndim, shape);
    double *parts = malloc(sizeof(double) * (size_t)(2 * n + 2));
    double *pairs = malloc(sizeof(double) * (size_t)(2 * n + 2));
    ct_tensor *t = NULL;
    if (parts && pairs) {
        ref_random(parts, n, seed, re[0], re[1]);
        ref_random(parts + n, n, seed + 1, im[0], im[1]);
        for (int64_t i = 0; i < n; i++) pairs[2 * i] = parts[i], pairs[2 * i + 1] = parts[n + i];
        t = ct_from_data(pairs, ndim, shape, CT_C128, device);
    }
    free(parts);
    free(pairs);
    if (t && requires_grad && ct_set_requires_grad(t, true) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

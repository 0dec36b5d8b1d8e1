/* ct_batch_norm and ct_batch_norm_relu in training on shapes whose channels a GPU splits over
 * several blocks (tens of thousands of elements a channel; short planes; a 2-D (n, c) input,
 * whose channels are innermost, with a channel count that is not a multiple of 32): forward
 * (y, the running statistics) and backward (dx, dweight, dbias) against a float64 reference
 * within the dtype's tolerance, f32, f64, f16 and bf16; the same bits from run to run; and on
 * a device other than the CPU, the CPU's values within f32's tolerance (the numerics contract
 * of the device kernels: backend/norm_args_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"

#define MOMENTUM 0.1
#define EPS 1e-5

/* The shapes: NCHW with planes of 1024, NCHW with planes of 4 (runs of whole planes), and
 * (n, c) with 40 channels innermost. */
static const struct {
    int ndim;
    int64_t shape[4];
} shapes[] = {{4, {32, 3, 32, 32}}, {4, {512, 5, 2, 2}}, {2, {4096, 40, 0, 0}}};
#define SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* One training pass's results, read back as doubles: y, dx, dw, db, running mean and
 * running variance; the inputs x, w, b and the upstream gradient u as the op saw them. */
enum { Y, DX, DW, DB, RM, RV, X, W, B, U, PARTS };

static void free_parts(double **p) {
    for (int i = 0; i < PARTS; i++) free(p[i]), p[i] = NULL;
}

/* ct_batch_norm (or _relu) of seeded data on device in dtype, backward from u; running
 * statistics start at 0 and 1 (f32). */
static bool one_pass(ct_device device, int s, ct_dtype dtype, bool relu, double **out) {
    const int64_t *shape = shapes[s].shape, c = shape[1];
    int ndim = shapes[s].ndim;
    ct_scope_begin();
    ct_tensor *x = ct_cast(ct_gradcheck_leaf(device, ndim, shape, 11, -2.0, 3.0, false), dtype);
    ct_tensor *u = ct_cast(ct_gradcheck_leaf(device, ndim, shape, 12, -1.0, 1.0, false), dtype);
    ct_tensor *w = ct_cast(ct_gradcheck_leaf(device, 1, &c, 13, 0.5, 1.5, false), dtype);
    ct_tensor *b = ct_cast(ct_gradcheck_leaf(device, 1, &c, 14, -0.5, 0.5, false), dtype);
    ct_tensor *rm = ct_zeros(1, &c, CT_F32, device), *rv = ct_ones(1, &c, CT_F32, device);
    bool ok = x && u && w && b && rm && rv && ct_set_requires_grad(x, true) == CT_OK &&
              ct_set_requires_grad(w, true) == CT_OK && ct_set_requires_grad(b, true) == CT_OK;
    ct_tensor *y = !ok    ? NULL
                   : relu ? ct_batch_norm_relu(x, rm, rv, w, b, true, MOMENTUM, EPS)
                          : ct_batch_norm(x, rm, rv, w, b, true, MOMENTUM, EPS);
    ok = y && ct_backward_with(y, u, false) == CT_OK;
    const ct_tensor *results[PARTS] = {
        y, ok ? ct_grad(x) : NULL, ok ? ct_grad(w) : NULL, ok ? ct_grad(b) : NULL, rm, rv, x, w, b,
        u};
    for (int i = 0; i < PARTS; i++) out[i] = ok && results[i] ? ref_read(results[i]) : NULL;
    ct_scope_end();
    for (int i = 0; i < PARTS; i++) ok = ok && out[i];
    return ok;
}

/* The float64 reference of a pass from its inputs (p[X], p[W], p[B], p[U]) into ref[Y..RV];
 * the fused ReLU's mask is the pass's own output (p[Y] > 0), so that an element within
 * rounding of 0 cannot make the two disagree. */
static bool reference(int s, bool relu, double *const *p, double **ref) {
    const int64_t *shape = shapes[s].shape, n = shape[0], c = shape[1];
    const int64_t inner = ref_numel(shapes[s].ndim - 2, shape + 2), numel = n * c * inner;
    for (int i = Y; i <= RV; i++) {
        int64_t size = i == Y || i == DX ? numel : c;
        ref[i] = malloc(sizeof(double) * (size_t)size);
        if (!ref[i]) return false;
    }
    const double count = (double)(n * inner);
    for (int64_t ch = 0; ch < c; ch++) {
        long double sum = 0.0, sq = 0.0, sum_g = 0.0, sum_gx = 0.0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < inner; j++) sum += p[X][(i * c + ch) * inner + j];
        long double mean = sum / count;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < inner; j++) {
                long double d = p[X][(i * c + ch) * inner + j] - mean;
                sq += d * d;
            }
        long double invstd = 1.0L / sqrtl(sq / count + EPS);
        ref[RM][ch] = (double)(MOMENTUM * mean);
        ref[RV][ch] = (double)((1 - MOMENTUM) + MOMENTUM * sq / (count - 1));
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < inner; j++) {
                int64_t at = (i * c + ch) * inner + j;
                long double xhat = (p[X][at] - mean) * invstd, v = xhat * p[W][ch] + p[B][ch];
                ref[Y][at] = relu && v < 0 ? 0.0 : (double)v;
                long double g = relu && !(p[Y][at] > 0.0) ? 0.0 : p[U][at];
                sum_g += g;
                sum_gx += g * xhat;
            }
        ref[DW][ch] = (double)sum_gx;
        ref[DB][ch] = (double)sum_g;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < inner; j++) {
                int64_t at = (i * c + ch) * inner + j;
                long double xhat = (p[X][at] - mean) * invstd;
                long double g = relu && !(p[Y][at] > 0.0) ? 0.0 : p[U][at];
                ref[DX][at] =
                    (double)(p[W][ch] * invstd * (g - sum_g / count - xhat * sum_gx / count));
            }
    }
    return true;
}

static const char *const part_names[PARTS] = {"y",     "dx",           "dweight",
                                              "dbias", "running_mean", "running_var"};

/* The element count of part i of shape s. */
static int64_t part_size(int s, int i) {
    int64_t numel = ref_numel(shapes[s].ndim, shapes[s].shape);
    return i == Y || i == DX || i >= X ? numel : shapes[s].shape[1];
}

/* Every element of parts Y..RV of got within dtype's tolerance of want (the running
 * statistics are f32); the first that is not, reported. */
static bool close_parts(double *const *got, double *const *want, int s, ct_dtype dtype,
                        const char *what) {
    for (int i = Y; i <= RV; i++) {
        ct_dtype of = i >= RM ? CT_F32 : dtype;
        /* dweight and dbias are sums over the channel: their tolerance scales with it. */
        double scale = i == DW || i == DB ? sqrt((double)part_size(s, Y) / shapes[s].shape[1]) : 1;
        for (int64_t k = 0; k < part_size(s, i); k++) {
            double tol = ref_tolerance(of) * scale * (1.0 + fabs(want[i][k]));
            if (fabs(got[i][k] - want[i][k]) <= tol) continue;
            ct_test_fail(__FILE__, __LINE__, "%s, shape %d, %s: %s[%lld] = %.9g, expected %.9g",
                         what, s, ct_dtype_name(dtype), part_names[i], (long long)k, got[i][k],
                         want[i][k]);
            return false;
        }
    }
    return true;
}

DEVICE_TEST(test_nn_batch_norm_split_matches_reference) {
    static const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
    for (int s = 0; s < SHAPES; s++)
        for (int d = 0; d < 4; d++)
            for (int relu = 0; relu < 2; relu++) {
                double *got[PARTS] = {0}, *want[PARTS] = {0};
                bool ok = one_pass(device, s, dtypes[d], relu, got);
                if (!ok)
                    ct_test_fail(__FILE__, __LINE__, "shape %d, %s: %s", s,
                                 ct_dtype_name(dtypes[d]), ct_last_error());
                else if (!reference(s, relu, got, want))
                    ct_test_fail(__FILE__, __LINE__, "out of memory for the reference");
                else
                    close_parts(got, want, s, dtypes[d], relu ? "batch_norm_relu" : "batch_norm");
                free_parts(got);
                free_parts(want);
                if (ct_test_failed()) return;
            }
}

/* Two passes give the same bits, every part. */
DEVICE_TEST(test_nn_batch_norm_split_same_bits) {
    static const ct_dtype dtypes[] = {CT_F32, CT_BF16};
    for (int s = 0; s < SHAPES; s++)
        for (int d = 0; d < 2; d++)
            for (int relu = 0; relu < 2; relu++) {
                double *first[PARTS] = {0}, *again[PARTS] = {0};
                bool ok = one_pass(device, s, dtypes[d], relu, first) &&
                          one_pass(device, s, dtypes[d], relu, again);
                int bad = -1;
                for (int i = Y; ok && i <= RV && bad < 0; i++)
                    if (memcmp(first[i], again[i], sizeof(double) * (size_t)part_size(s, i)))
                        bad = i;
                free_parts(first);
                free_parts(again);
                if (!ok || bad >= 0) {
                    ct_test_fail(__FILE__, __LINE__, "shape %d, %s, relu %d: %s", s,
                                 ct_dtype_name(dtypes[d]), relu,
                                 ok ? part_names[bad] : ct_last_error());
                    return;
                }
            }
}

/* On a GPU (or the fake one), f32 results within f32's tolerance of the CPU's. */
DEVICE_TEST(test_nn_batch_norm_split_device_matches_cpu) {
    if (device.type == CT_DEVICE_CPU) {
        ct_test_skip("compares a device's kernels with the CPU's; runs on cuda:N");
        return;
    }
    for (int s = 0; s < SHAPES; s++)
        for (int relu = 0; relu < 2; relu++) {
            double *on_device[PARTS] = {0}, *on_cpu[PARTS] = {0};
            bool ok = one_pass(device, s, CT_F32, relu, on_device) &&
                      one_pass(CT_CPU, s, CT_F32, relu, on_cpu);
            if (!ok)
                ct_test_fail(__FILE__, __LINE__, "shape %d: %s", s, ct_last_error());
            else
                close_parts(on_device, on_cpu, s, CT_F32,
                            relu ? "relu, against the CPU" : "against the CPU");
            free_parts(on_device);
            free_parts(on_cpu);
            if (ct_test_failed()) return;
        }
}

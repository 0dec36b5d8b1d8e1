/* The layers that test_nn_module.c does not build (GELU, sigmoid, softmax, log-softmax,
 * average and adaptive pooling, layer norm, embedding) against float64 references computed
 * here, on every device; and a module's state as a state dict and back: names with a
 * prefix, a round trip onto another device, and loads that are refused without changing
 * anything. */
#include <stdlib.h>

#include "ct_ref.h"

/* The module's output for an input of `values` (C order, shape, dtype) on device, checked
 * against expected (C order, out_shape). */
static void check_forward(ct_module *m, ct_device device, const double *values, int ndim,
                          const int64_t *shape, ct_dtype dtype, const double *expected,
                          int out_ndim, const int64_t *out_shape) {
    CHECK_NOT_NULL(m);
    CHECK_OK(ct_module_to(m, device));
    ct_tensor *x = ref_tensor(values, ndim, shape, dtype, device);
    CHECK_NOT_NULL(x);
    ct_tensor *y = ct_module_forward(m, x);
    CHECK_NOT_NULL(y);
    CHECK(ct_ndim(y) == out_ndim);
    for (int d = 0; d < out_ndim; d++) CHECK(ct_size(y, d) == out_shape[d]);
    CHECK(ct_device_equal(ct_device_of(y), device));
    CHECK_TENSOR(y, expected);
    ct_release(y);
    ct_release(x);
}

enum { ROWS = 3, COLS = 5, N = ROWS * COLS };

DEVICE_TEST(test_nn_layers_activations) {
    double x[N], gelu[N], gelu_tanh[N], sigmoid[N];
    ref_random(x, N, 41, -4, 4);
    for (int i = 0; i < N; i++) {
        gelu[i] = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2.0)));
        double u = sqrt(2.0 / M_PI) * (x[i] + 0.044715 * x[i] * x[i] * x[i]);
        gelu_tanh[i] = 0.5 * x[i] * (1 + tanh(u));
        sigmoid[i] = 1 / (1 + exp(-x[i]));
    }
    int64_t shape[2] = {ROWS, COLS};
    ct_module *m = ct_nn_gelu();
    check_forward(m, device, x, 2, shape, CT_F64, gelu, 2, shape);
    ct_module_free(m);
    m = ct_nn_gelu_tanh();
    check_forward(m, device, x, 2, shape, CT_F64, gelu_tanh, 2, shape);
    ct_module_free(m);
    m = ct_nn_sigmoid();
    check_forward(m, device, x, 2, shape, CT_F64, sigmoid, 2, shape);
    ct_module_free(m);
}

/* Softmax and log-softmax along axis 0 and along the last axis (-1). */
DEVICE_TEST(test_nn_layers_softmax_axes) {
    double x[N], soft_rows[N], log_cols[N];
    ref_random(x, N, 42, -3, 3);
    for (int c = 0; c < COLS; c++) { /* axis 0: each column sums to one */
        double sum = 0;
        for (int r = 0; r < ROWS; r++) sum += exp(x[r * COLS + c]);
        for (int r = 0; r < ROWS; r++) soft_rows[r * COLS + c] = exp(x[r * COLS + c]) / sum;
    }
    for (int r = 0; r < ROWS; r++) { /* axis -1: along each row */
        double sum = 0;
        for (int c = 0; c < COLS; c++) sum += exp(x[r * COLS + c]);
        for (int c = 0; c < COLS; c++) log_cols[r * COLS + c] = x[r * COLS + c] - log(sum);
    }
    int64_t shape[2] = {ROWS, COLS};
    ct_module *m = ct_nn_softmax(0);
    check_forward(m, device, x, 2, shape, CT_F64, soft_rows, 2, shape);
    ct_module_free(m);
    m = ct_nn_log_softmax(-1);
    check_forward(m, device, x, 2, shape, CT_F64, log_cols, 2, shape);
    ct_module_free(m);
}

/* Average pooling 2x2 with stride 2 and padding 1 (padded cells count, as PyTorch's
 * count_include_pad), and adaptive average pooling of 4x5 to 3x2 (window i spans
 * floor(i * in / out) to ceil((i + 1) * in / out)). */
DEVICE_TEST(test_nn_layers_average_pooling) {
    enum { H = 4, W = 5 };
    double x[2 * H * W];
    ref_random(x, 2 * H * W, 43, -1, 1);
    int64_t shape[4] = {1, 2, H, W};
    double avg[2 * 3 * 3];
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double sum = 0;
                for (int di = 0; di < 2; di++)
                    for (int dj = 0; dj < 2; dj++) {
                        int h = 2 * i - 1 + di, w = 2 * j - 1 + dj;
                        if (h >= 0 && h < H && w >= 0 && w < W) sum += x[(c * H + h) * W + w];
                    }
                avg[(c * 3 + i) * 3 + j] = sum / 4;
            }
    ct_module *m = ct_nn_avg_pool2d(&(ct_pool2d_options){{2, 2}, {2, 2}, {1, 1}});
    check_forward(m, device, x, 4, shape, CT_F64, avg, 4, (int64_t[]){1, 2, 3, 3});
    ct_module_free(m);

    double adaptive[2 * 3 * 2];
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++) {
                int h0 = i * H / 3, h1 = ((i + 1) * H + 2) / 3;
                int w0 = j * W / 2, w1 = ((j + 1) * W + 1) / 2;
                double sum = 0;
                for (int h = h0; h < h1; h++)
                    for (int w = w0; w < w1; w++) sum += x[(c * H + h) * W + w];
                adaptive[(c * 3 + i) * 2 + j] = sum / ((h1 - h0) * (w1 - w0));
            }
    m = ct_nn_adaptive_avg_pool2d(3, 2);
    check_forward(m, device, x, 4, shape, CT_F64, adaptive, 4, (int64_t[]){1, 2, 3, 2});
    ct_module_free(m);
}

/* Layer norm over the last axis with its initial weight (ones) and bias (zeros), then with
 * a weight and bias set through a state dict. */
DEVICE_TEST(test_nn_layers_layer_norm) {
    double x[N], plain[N], affine[N], weight[COLS], bias[COLS];
    ref_random(x, N, 44, -2, 2);
    ref_random(weight, COLS, 45, 0.5, 1.5);
    ref_random(bias, COLS, 46, -1, 1);
    for (int i = 0; i < N; i++) x[i] = ref_round(x[i], CT_F32);
    for (int c = 0; c < COLS; c++) {
        weight[c] = ref_round(weight[c], CT_F32);
        bias[c] = ref_round(bias[c], CT_F32);
    }
    for (int r = 0; r < ROWS; r++) {
        double mean = 0, var = 0;
        for (int c = 0; c < COLS; c++) mean += x[r * COLS + c] / COLS;
        for (int c = 0; c < COLS; c++) var += pow(x[r * COLS + c] - mean, 2) / COLS;
        for (int c = 0; c < COLS; c++) {
            int i = r * COLS + c;
            plain[i] = (x[i] - mean) / sqrt(var + 1e-5);
            affine[i] = plain[i] * weight[c] + bias[c];
        }
    }
    int64_t shape[2] = {ROWS, COLS};
    ct_module *m = ct_nn_layer_norm(1, (int64_t[]){COLS}, 0);
    CHECK_NOT_NULL(m);
    CHECK(ct_module_parameter_count(m) == 2 * COLS);
    check_forward(m, device, x, 2, shape, CT_F32, plain, 2, shape);

    ct_state_dict *sd = ct_state_dict_new();
    ct_tensor *w = ref_tensor(weight, 1, (int64_t[]){COLS}, CT_F32, CT_CPU);
    ct_tensor *b = ref_tensor(bias, 1, (int64_t[]){COLS}, CT_F32, CT_CPU);
    CHECK(sd && w && b);
    CHECK_OK(ct_state_dict_set(sd, "weight", w));
    CHECK_OK(ct_state_dict_set(sd, "bias", b));
    CHECK_OK(ct_module_load_state_dict(m, sd, NULL));
    check_forward(m, device, x, 2, shape, CT_F32, affine, 2, shape);
    ct_release(w);
    ct_release(b);
    ct_state_dict_free(sd);
    ct_module_free(m);
}

/* An embedding's output is the rows of its weight that the indices name; the weight is
 * drawn from N(0, 1). */
DEVICE_TEST(test_nn_layers_embedding) {
    enum { WORDS = 50, DIM = 40 };
    ct_manual_seed(47);
    ct_module *m = ct_nn_embedding(WORDS, DIM);
    CHECK_NOT_NULL(m);
    ct_tensor *weight[1];
    CHECK(ct_module_parameters(m, weight, 1) == 1);
    double *table = ref_read(weight[0]);
    CHECK_NOT_NULL(table);
    double mean = 0, square = 0;
    for (int i = 0; i < WORDS * DIM; i++) mean += table[i], square += table[i] * table[i];
    mean /= WORDS * DIM;
    double std = sqrt(square / (WORDS * DIM) - mean * mean);
    /* 2000 draws: the mean within 4 standard errors of 0, the deviation within 10% of 1 */
    CHECK(fabs(mean) < 4 / sqrt(WORDS * DIM) && fabs(std - 1) < 0.1);

    double indices[4] = {3, 0, 49, 3};
    double expected[4 * DIM];
    for (int k = 0; k < 4; k++)
        for (int d = 0; d < DIM; d++) expected[k * DIM + d] = table[(int)indices[k] * DIM + d];
    free(table);
    check_forward(m, device, indices, 2, (int64_t[]){2, 2}, CT_I64, expected, 3,
                  (int64_t[]){2, 2, DIM});
    ct_module_free(m);
}

TEST(test_nn_layers_constructor_errors) {
    CHECK(ct_nn_embedding(0, 4) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "num_embeddings");
    CHECK(ct_nn_embedding(4, -1) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "embedding_dim");
    CHECK(ct_nn_layer_norm(0, (int64_t[]){4}, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "normalised shape");
    CHECK(ct_nn_layer_norm(1, (int64_t[]){0}, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "normalised size");
    CHECK(ct_nn_adaptive_avg_pool2d(0, 2) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "must be positive");
    CHECK(ct_nn_avg_pool2d(NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "options are NULL");
}

/* ---- state dicts ---- */

static ct_module *small_model(uint64_t seed) {
    ct_manual_seed(seed);
    return ct_nn_sequential(4, (ct_module *[]){ct_nn_linear(4, 6, true),
                                               ct_nn_layer_norm(1, (int64_t[]){6}, 0), ct_nn_relu(),
                                               ct_nn_linear(6, 2, true)});
}

static const char *const model_names[] = {"net.0.weight", "net.0.bias",   "net.1.weight",
                                          "net.1.bias",   "net.3.weight", "net.3.bias"};
enum { MODEL_ENTRIES = 6 };

/* The model's output (on its device) for a fixed input, read back as doubles. */
static double *model_output(ct_module *m) {
    double x[8];
    ref_random(x, 8, 48, -1, 1);
    ct_tensor *input = ref_tensor(x, 2, (int64_t[]){2, 4}, CT_F32, ct_module_device(m));
    ct_tensor *y = input ? ct_module_forward(m, input) : NULL;
    double *values = y ? ref_read(y) : NULL;
    ct_release(y);
    ct_release(input);
    return values;
}

/* The state of one model, under a prefix, loaded into another made with another seed and
 * moved to device: both then compute the same outputs. */
DEVICE_TEST(test_nn_layers_state_dict_round_trip) {
    ct_module *a = small_model(1), *b = small_model(2);
    ct_state_dict *sd = ct_state_dict_new();
    CHECK(a && b && sd);
    CHECK_OK(ct_module_state_dict(a, sd, "net."));
    CHECK(ct_state_dict_size(sd) == MODEL_ENTRIES);
    for (int i = 0; i < MODEL_ENTRIES; i++) {
        CHECK(strcmp(ct_state_dict_name_at(sd, i), model_names[i]) == 0);
        ct_tensor *own = NULL;
        ct_module_state_at(a, i, &own, NULL);
        CHECK(ct_state_dict_tensor_at(sd, i) == own); /* the module's own tensors, not copies */
    }
    double *expected = model_output(a), *before = NULL, *after = NULL;
    CHECK_OK(ct_module_to(b, device));
    before = model_output(b);
    CHECK_OK(ct_module_load_state_dict(b, sd, "net."));
    after = model_output(b);
    CHECK(expected && before && after);
    bool differed = false;
    for (int i = 0; i < 4; i++) {
        differed = differed || before[i] != expected[i];
        CHECK_NEAR(after[i], expected[i], 1e-5);
    }
    CHECK(differed); /* the load changed b */
    free(expected);
    free(before);
    free(after);
    ct_state_dict_free(sd);
    ct_module_free(a);
    ct_module_free(b);
}

/* Every value of the module's state, in order, as doubles. */
static double *state_values(const ct_module *m, int64_t *count) {
    int64_t n = 0;
    ct_tensor *t;
    for (int i = 0; ct_module_state_at(m, i, &t, NULL); i++) n += ct_numel(t);
    double *all = malloc(sizeof(double) * (size_t)(n + 1));
    int64_t at = 0;
    for (int i = 0; all && ct_module_state_at(m, i, &t, NULL); i++) {
        double *v = ref_read(t);
        for (int64_t k = 0; v && k < ct_numel(t); k++) all[at++] = v[k];
        free(v);
    }
    *count = n;
    return all;
}

/* sd holds a's state except `skip`, with `replace` (when not NULL) under the name
 * `replaced` instead of a's tensor. */
static ct_state_dict *state_but(const ct_module *a, const char *skip, const char *replaced,
                                const ct_tensor *replace) {
    ct_state_dict *sd = ct_state_dict_new();
    ct_tensor *t;
    const char *name;
    for (int i = 0; sd && (name = ct_module_state_at(a, i, &t, NULL)); i++) {
        if (skip && strcmp(name, skip) == 0) continue;
        bool swap = replaced && strcmp(name, replaced) == 0;
        if (ct_state_dict_set(sd, name, swap ? replace : t) != CT_OK) {
            ct_state_dict_free(sd);
            return NULL;
        }
    }
    return sd;
}

/* A missing entry, a wrong shape or a wrong dtype is refused, naming the entry, and none of
 * the module's values change (not even those before the bad entry); extra entries are
 * ignored. */
TEST(test_nn_layers_load_state_dict_refusals_change_nothing) {
    ct_module *a = small_model(3), *b = small_model(4);
    CHECK(a && b);
    int64_t n = 0, n_after = 0;
    double *before = state_values(b, &n);
    CHECK_NOT_NULL(before);
    ct_tensor *wrong_shape = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, CT_CPU);
    ct_tensor *wrong_dtype = ct_zeros(1, (int64_t[]){2}, CT_F64, CT_CPU);
    CHECK(wrong_shape && wrong_dtype);
    struct {
        const char *skip, *replaced;
        const ct_tensor *with;
        const char *message;
    } cases[] = {
        {"3.bias", NULL, NULL, "no entry \"3.bias\""},
        {NULL, "1.weight", wrong_shape,
         "entry \"1.weight\" has dtype float32 and shape (2, 3), but the module's has dtype "
         "float32 and shape (6,)"},
        {NULL, "3.bias", wrong_dtype, "entry \"3.bias\" has dtype float64"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_state_dict *sd = state_but(a, cases[c].skip, cases[c].replaced, cases[c].with);
        CHECK_NOT_NULL(sd);
        CHECK(ct_module_load_state_dict(b, sd, NULL) == CT_ERR_FORMAT);
        CHECK_ERROR(CT_ERR_FORMAT, cases[c].message);
        ct_state_dict_free(sd);
        double *now = state_values(b, &n_after);
        CHECK(now && n_after == n);
        for (int64_t i = 0; i < n; i++) CHECK(now[i] == before[i]);
        free(now);
    }
    ct_state_dict *extra = state_but(a, NULL, NULL, NULL);
    CHECK_NOT_NULL(extra);
    CHECK_OK(ct_state_dict_set(extra, "unrelated", wrong_shape));
    CHECK_OK(ct_module_load_state_dict(b, extra, NULL));
    int64_t na = 0;
    double *loaded = state_values(b, &n_after), *source = state_values(a, &na);
    CHECK(loaded && source && na == n_after);
    for (int64_t i = 0; i < n_after; i++) CHECK(loaded[i] == source[i]);
    free(loaded);
    free(source);
    free(before);
    ct_state_dict_free(extra);
    ct_release(wrong_shape);
    ct_release(wrong_dtype);
    ct_module_free(a);
    ct_module_free(b);
}

/* A module without state gives an empty state dict, also while an earlier failure is still
 * recorded on the thread (the status is the call's own); NULL arguments are refused. */
TEST(test_nn_layers_state_dict_of_stateless_module) {
    ct_module *relu = ct_nn_relu();
    ct_state_dict *sd = ct_state_dict_new();
    CHECK(relu && sd);
    CHECK(ct_nn_embedding(0, 1) == NULL); /* leaves a failure recorded */
    CHECK_OK(ct_module_state_dict(relu, sd, "x."));
    CHECK(ct_state_dict_size(sd) == 0);
    CHECK_OK(ct_module_load_state_dict(relu, sd, NULL));
    ct_clear_error();
    CHECK(ct_module_state_dict(NULL, sd, NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_module_state_dict: argument 1 is NULL");
    CHECK(ct_module_load_state_dict(relu, NULL, NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_module_load_state_dict: argument 2 is NULL");
    ct_state_dict_free(sd);
    ct_module_free(relu);
}

/* A prefix that makes a name longer than the 511 bytes a state name may have is refused in
 * both directions, and nothing is added or loaded. */
TEST(test_nn_layers_state_dict_prefix_too_long) {
    char prefix[600];
    memset(prefix, 'p', sizeof prefix - 1);
    prefix[sizeof prefix - 1] = '\0';
    ct_module *linear = ct_nn_linear(2, 2, true);
    ct_state_dict *sd = ct_state_dict_new();
    CHECK(linear && sd);
    CHECK(ct_module_state_dict(linear, sd, prefix) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "longer than 511 bytes");
    CHECK(ct_state_dict_size(sd) == 0);
    CHECK_OK(ct_module_state_dict(linear, sd, NULL));
    CHECK(ct_module_load_state_dict(linear, sd, prefix) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "longer than 511 bytes");
    ct_state_dict_free(sd);
    ct_module_free(linear);
}

/* Printing: ct_format and ct_print. The expected strings are written out by hand from the
 * layout rules in src/ops/format.c (PyTorch's repr: common width, 4 decimals, scientific
 * notation for wide ranges, summaries past 1000 elements); "%s" in them is the device. */
#include <stdlib.h>
#include <unistd.h>

#include "core/error_impl.h"
#include "ct_ref.h"

/* ct_format(t) equals expected_format with the device name put in for its "%s". */
static bool format_is(const ct_tensor *t, ct_device device, const char *expected_format) {
    char name[32], expected[4096];
    ct_device_str(device, name, sizeof name);
    snprintf(expected, sizeof expected, expected_format, name);
    char *text = ct_format(t);
    if (!text) return false;
    bool same = strcmp(text, expected) == 0;
    if (!same) ct_test_fail(__FILE__, __LINE__, "got\n%s\nexpected\n%s", text, expected);
    ct_free(text);
    return same;
}

/* Build a tensor from values, check its format, release it. */
#define CHECK_FORMAT(values, ndim, shape, dtype, expected)                                         \
    do {                                                                                           \
        ct_tensor *format_t_ = ref_tensor((values), (ndim), (shape), (dtype), device);             \
        CHECK_NOT_NULL(format_t_);                                                                 \
        bool format_ok_ = format_is(format_t_, device, (expected));                                \
        ct_release(format_t_);                                                                     \
        CHECK(format_ok_);                                                                         \
    } while (0)

DEVICE_TEST(test_print_float_matrix_aligns_negative_numbers) {
    double v[] = {1.5, 2.0, -3.25, 4.0};
    int64_t shape[] = {2, 2};
    CHECK_FORMAT(v, 2, shape, CT_F32,
                 "tensor([[ 1.5000,  2.0000],\n"
                 "        [-3.2500,  4.0000]], dtype=float32, device=%s)");
    CHECK_FORMAT(v, 2, shape, CT_F64,
                 "tensor([[ 1.5000,  2.0000],\n"
                 "        [-3.2500,  4.0000]], dtype=float64, device=%s)");
}

DEVICE_TEST(test_print_whole_floats_print_with_a_point) {
    double v[] = {1, -2, 30};
    int64_t shape[] = {3};
    CHECK_FORMAT(v, 1, shape, CT_F64, "tensor([ 1., -2., 30.], dtype=float64, device=%s)");
    double zeros[] = {0, 0};
    int64_t two[] = {2};
    CHECK_FORMAT(zeros, 1, two, CT_F32, "tensor([0., 0.], dtype=float32, device=%s)");
}

DEVICE_TEST(test_print_integers_plainly) {
    double v[] = {1, -20, 300, 4};
    int64_t shape[] = {2, 2};
    CHECK_FORMAT(v, 2, shape, CT_I32,
                 "tensor([[  1, -20],\n"
                 "        [300,   4]], dtype=int32, device=%s)");
    double bytes[] = {0, 255, 7};
    int64_t three[] = {3};
    CHECK_FORMAT(bytes, 1, three, CT_U8, "tensor([  0, 255,   7], dtype=uint8, device=%s)");
}

DEVICE_TEST(test_print_int64_exactly) {
    /* 2^53 + 1 does not survive a trip through double: it must be printed from the int64 */
    int64_t v[] = {9007199254740993LL, -1};
    int64_t shape[] = {2};
    ct_tensor *t = ct_from_data(v, 1, shape, CT_I64, device);
    CHECK_NOT_NULL(t);
    bool ok = format_is(t, device,
                        "tensor([9007199254740993,               -1], dtype=int64, device=%s)");
    ct_release(t);
    CHECK(ok);
}

DEVICE_TEST(test_print_bool_as_true_false) {
    double v[] = {1, 0, 1};
    int64_t shape[] = {3};
    CHECK_FORMAT(v, 1, shape, CT_BOOL, "tensor([ True, False,  True], dtype=bool, device=%s)");
}

DEVICE_TEST(test_print_half_precision_values) {
    double v[] = {0.5, -1.25, 3.0};
    int64_t shape[] = {3};
    CHECK_FORMAT(v, 1, shape, CT_F16,
                 "tensor([ 0.5000, -1.2500,  3.0000], dtype=float16, device=%s)");
    /* 1/3 in bfloat16 is 0.333984375 (8 significant bits), printed as 0.3340 */
    double b[] = {1.0 / 3.0, 100.0};
    int64_t two[] = {2};
    CHECK_FORMAT(b, 1, two, CT_BF16, "tensor([  0.3340, 100.0000], dtype=bfloat16, device=%s)");
}

DEVICE_TEST(test_print_scientific_when_magnitudes_call_for_it) {
    double small[] = {1e-5, 1, 100};
    int64_t three[] = {3};
    CHECK_FORMAT(small, 1, three, CT_F64,
                 "tensor([1.0000e-05, 1.0000e+00, 1.0000e+02], dtype=float64, device=%s)");
    double ratio[] = {-1.5, 2000};
    int64_t two[] = {2};
    CHECK_FORMAT(ratio, 1, two, CT_F64,
                 "tensor([-1.5000e+00,  2.0000e+03], dtype=float64, device=%s)");
    double big_whole[] = {1e8, 1};
    CHECK_FORMAT(big_whole, 1, two, CT_F64,
                 "tensor([1.0000e+08, 1.0000e+00], dtype=float64, device=%s)");
    double just_fixed[] = {0.5, 499.75};
    CHECK_FORMAT(just_fixed, 1, two, CT_F32,
                 "tensor([  0.5000, 499.7500], dtype=float32, device=%s)");
}

DEVICE_TEST(test_print_nan_and_inf) {
    double v[] = {NAN, INFINITY, -INFINITY, 1.5};
    int64_t four[] = {4};
    CHECK_FORMAT(v, 1, four, CT_F32,
                 "tensor([   nan,    inf,   -inf, 1.5000], dtype=float32, device=%s)");
    double negative_nan[] = {-NAN, 0};
    int64_t two[] = {2};
    CHECK_FORMAT(negative_nan, 1, two, CT_F64, "tensor([nan,  0.], dtype=float64, device=%s)");
}

DEVICE_TEST(test_print_zero_dim) {
    ct_tensor *f = ct_scalar(3.5, CT_F32, device);
    ct_tensor *i = ct_scalar(-7, CT_I64, device);
    bool ok = f && i && format_is(f, device, "tensor(3.5000, dtype=float32, device=%s)") &&
              format_is(i, device, "tensor(-7, dtype=int64, device=%s)");
    ct_release(f);
    ct_release(i);
    CHECK(ok);
}

DEVICE_TEST(test_print_empty_shows_size) {
    int64_t rows0[] = {0, 3}, empty1[] = {0}, middle0[] = {2, 0, 4};
    double none[1] = {0};
    CHECK_FORMAT(none, 2, rows0, CT_F32, "tensor([], size=(0, 3), dtype=float32, device=%s)");
    CHECK_FORMAT(none, 1, empty1, CT_I32, "tensor([], dtype=int32, device=%s)");
    CHECK_FORMAT(none, 3, middle0, CT_BOOL, "tensor([], size=(2, 0, 4), dtype=bool, device=%s)");
}

DEVICE_TEST(test_print_three_dims_separates_slices_by_a_blank_line) {
    double v[8];
    for (int k = 0; k < 8; k++) v[k] = k;
    int64_t shape[] = {2, 2, 2};
    CHECK_FORMAT(v, 3, shape, CT_I32,
                 "tensor([[[0, 1],\n"
                 "         [2, 3]],\n"
                 "\n"
                 "        [[4, 5],\n"
                 "         [6, 7]]], dtype=int32, device=%s)");
}

DEVICE_TEST(test_print_rank_eight) {
    double v[2] = {1, 2};
    int64_t shape[] = {1, 1, 1, 1, 1, 1, 1, 2};
    CHECK_FORMAT(v, 8, shape, CT_U8, "tensor([[[[[[[[1, 2]]]]]]]], dtype=uint8, device=%s)");
}

DEVICE_TEST(test_print_long_rows_wrap_at_80_columns) {
    double v[30];
    for (int k = 0; k < 30; k++) v[k] = 0.5 * k;
    int64_t shape[] = {30};
    /* width 7 ("14.5000") + ", " gives (80 - 7) / 9 = 8 entries a line; the suffixes do not
     * fit after the last row, so device moves to a line of its own */
    CHECK_FORMAT(v, 1, shape, CT_F32,
                 "tensor([ 0.0000,  0.5000,  1.0000,  1.5000,  2.0000,  2.5000,  3.0000,  3.5000,\n"
                 "         4.0000,  4.5000,  5.0000,  5.5000,  6.0000,  6.5000,  7.0000,  7.5000,\n"
                 "         8.0000,  8.5000,  9.0000,  9.5000, 10.0000, 10.5000, 11.0000, 11.5000,\n"
                 "        12.0000, 12.5000, 13.0000, 13.5000, 14.0000, 14.5000], dtype=float32,\n"
                 "       device=%s)");
}

DEVICE_TEST(test_print_summarises_past_1000_elements) {
    double *v = malloc(2000 * sizeof *v);
    CHECK_NOT_NULL(v);
    for (int k = 0; k < 2000; k++) v[k] = k;
    int64_t matrix[] = {40, 50};
    ct_tensor *t = ref_tensor(v, 2, matrix, CT_I32, device);
    free(v);
    CHECK_NOT_NULL(t);
    bool ok = format_is(t, device,
                        "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n"
                        "        [  50,   51,   52,  ...,   97,   98,   99],\n"
                        "        [ 100,  101,  102,  ...,  147,  148,  149],\n"
                        "        ...,\n"
                        "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
                        "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
                        "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]], dtype=int32, "
                        "device=%s)");
    ct_release(t);
    CHECK(ok);
}

DEVICE_TEST(test_print_summary_style_comes_from_shown_entries) {
    double *v = malloc(2000 * sizeof *v);
    CHECK_NOT_NULL(v);
    for (int k = 0; k < 2000; k++) v[k] = 1000 + 0.5 * k;
    v[1000] = 1e30; /* hidden by the summary: must not switch to scientific notation */
    int64_t shape[] = {2000};
    ct_tensor *t = ref_tensor(v, 1, shape, CT_F32, device);
    free(v);
    CHECK_NOT_NULL(t);
    /* width 9 + ", " gives (80 - 7) / 11 = 6 entries a line, " ..." counting as one */
    bool ok = format_is(t, device,
                        "tensor([1000.0000, 1000.5000, 1001.0000,  ..., 1998.5000, 1999.0000,\n"
                        "        1999.5000], dtype=float32, device=%s)");
    ct_release(t);
    CHECK(ok);
}

DEVICE_TEST(test_print_non_contiguous_input) {
    double v[] = {1, 2, 3, 4, 5, 6};
    int64_t shape[] = {2, 3};
    ct_tensor *t = ref_tensor_strided(v, 2, shape, CT_I32, device);
    CHECK_NOT_NULL(t);
    CHECK(!ct_is_contiguous(t));
    bool ok = format_is(t, device,
                        "tensor([[1, 2, 3],\n"
                        "        [4, 5, 6]], dtype=int32, device=%s)");
    ct_release(t);
    CHECK(ok);
    double w[] = {0.25, -8};
    int64_t two[] = {2};
    ct_tensor *s = ref_tensor_strided(w, 1, two, CT_F32, device);
    CHECK_NOT_NULL(s);
    ok = format_is(s, device, "tensor([ 0.2500, -8.0000], dtype=float32, device=%s)");
    ct_release(s);
    CHECK(ok);
}

DEVICE_TEST(test_print_device_read_is_an_implicit_transfer) {
    double v[] = {1, 2};
    int64_t shape[] = {2};
    ct_tensor *t = ref_tensor(v, 1, shape, CT_F32, device);
    CHECK_NOT_NULL(t);
    ct_transfer_stats_reset();
    ct_transfer_guard previous = ct_set_transfer_guard(CT_GUARD_DISALLOW_IMPLICIT);
    char *text = ct_format(t);
    ct_set_transfer_guard(previous);
    ct_transfer_statistics stats;
    ct_transfer_stats(&stats);
    if (device.type == CT_DEVICE_CPU) {
        /* the CPU shares the host's memory: nothing moves, nothing is refused */
        CHECK(text != NULL);
        CHECK(stats.refused == 0);
    } else {
        CHECK(text == NULL);
        CHECK_ERROR(CT_ERR_TRANSFER_GUARD, "ct_format");
        CHECK(stats.refused == 1);
        text = ct_format(t);
        ct_transfer_stats(&stats);
        CHECK(text != NULL);
        CHECK(stats.counters[CT_TRANSFER_D2H][1].count == 1);
    }
    ct_free(text);
    ct_release(t);
}

TEST(test_print_null_keeps_first_error) {
    CHECK(ct_format(NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_format: argument 1 is NULL");
    CHECK(ct_print(NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_print: argument 1 is NULL");
    CHECK(ct_cast(NULL, CT_F32) == NULL); /* the first error of a chain */
    CHECK(ct_format(NULL) == NULL);
    CHECK(ct_print(NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_cast");
}

TEST(test_print_writes_the_string_and_a_newline_to_stdout) {
    ct_tensor *t = ct_scalar(2, CT_I32, CT_CPU);
    CHECK_NOT_NULL(t);
    FILE *capture = tmpfile();
    CHECK(capture != NULL);
    fflush(stdout);
    int saved = dup(fileno(stdout));
    dup2(fileno(capture), fileno(stdout));
    ct_status status = ct_print(t);
    fflush(stdout);
    dup2(saved, fileno(stdout));
    close(saved);
    ct_release(t);
    char got[128] = {0};
    rewind(capture);
    size_t n = fread(got, 1, sizeof got - 1, capture);
    fclose(capture);
    CHECK_OK(status);
    CHECK(n == strlen(got));
    CHECK(strcmp(got, "tensor(2, dtype=int32, device=cpu:0)\n") == 0);
}

TEST(test_print_out_of_memory_fails_cleanly) {
    double v[] = {1, 2, 3, 4, 5, 6};
    int64_t shape[] = {2, 3};
    ct_tensor *t = ref_tensor_strided(v, 2, shape, CT_F32, CT_CPU);
    CHECK_NOT_NULL(t);
    /* fail the 1st, 2nd, ... host allocation until formatting needs fewer */
    char *text = NULL;
    int failures = 0;
    for (long n = 1; n < 64 && !text; n++) {
        ct_clear_error();
        ct__malloc_fail_after(n, 0);
        text = ct_format(t);
        ct__malloc_fail_after(0, 0);
        if (!text && ct_last_status() != CT_ERR_OUT_OF_MEMORY) break;
        if (!text) failures++;
    }
    ct_release(t);
    CHECK_NOT_NULL(text);
    CHECK(failures >= 2); /* at least the host copy and the string */
    bool ok = strcmp(text, "tensor([[1., 2., 3.],\n"
                           "        [4., 5., 6.]], dtype=float32, device=cpu:0)") == 0;
    ct_free(text);
    CHECK(ok);
}

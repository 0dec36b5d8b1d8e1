/* ct_matmul against a float64 triple-loop reference written here: every rank combination
 * numpy.matmul allows, batch broadcasting, transposed and otherwise strided operands, empty
 * sizes, every dtype (integers exact and wrapping, bool logical), promotion, and the
 * error paths. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_impl.h"
#include "core/tensor_impl.h"
#include "ct_ref.h"

/* ---- the reference ---- */

typedef struct {
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    double *values; /* expected result, C order */
    double *scale;  /* sum over k of |a * b|: the size of the rounding error to allow */
} ref_result;

/* Offset (C order, contiguous) of batch index `out_index` in an operand with `nb` batch
 * axes of shape `bs`, right-aligned against the output's `n` batch axes. */
static int64_t ref_batch_offset(const int64_t *out_index, int n, int nb, const int64_t *bs,
                                int64_t matrix_size) {
    int64_t offset = 0;
    for (int d = 0; d < nb; d++) {
        int64_t i = bs[d] == 1 ? 0 : out_index[d + (n - nb)];
        offset = offset * bs[d] + i;
    }
    return offset * matrix_size;
}

/* numpy.matmul of a (shape sa) and b (shape sb) in float64; logical for bool. */
static ref_result ref_matmul(const double *a, int na, const int64_t *sa, const double *b, int nb,
                             const int64_t *sb, bool logical) {
    ref_result r = {0, {0}, NULL, NULL};
    int64_t m = na == 1 ? 1 : sa[na - 2], k = sa[na - 1], n = nb == 1 ? 1 : sb[nb - 1];
    int ba = na > 2 ? na - 2 : 0, bb = nb > 2 ? nb - 2 : 0, bn = ba > bb ? ba : bb;
    for (int d = 0; d < bn; d++) {
        int64_t xa = d - (bn - ba) < 0 ? 1 : sa[d - (bn - ba)];
        int64_t xb = d - (bn - bb) < 0 ? 1 : sb[d - (bn - bb)];
        r.shape[r.ndim++] = xa == 1 ? xb : xa;
    }
    int64_t batches = ref_numel(r.ndim, r.shape);
    if (na > 1) r.shape[r.ndim++] = m;
    if (nb > 1) r.shape[r.ndim++] = n;
    int64_t total = batches * m * n;
    r.values = calloc((size_t)total + 1, sizeof(double));
    r.scale = calloc((size_t)total + 1, sizeof(double));
    int64_t index[CT_MAX_DIMS] = {0};
    for (int64_t bi = 0; bi < batches; bi++) {
        const double *pa = a + ref_batch_offset(index, bn, ba, sa, m * k);
        const double *pb = b + ref_batch_offset(index, bn, bb, sb, k * n);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0, scale = 0;
                for (int64_t p = 0; p < k; p++) {
                    double term = pa[i * k + p] * pb[p * n + j];
                    sum = logical ? (sum != 0 || term != 0) : sum + term;
                    scale += fabs(term);
                }
                r.values[(bi * m + i) * n + j] = sum;
                r.scale[(bi * m + i) * n + j] = scale;
            }
        for (int d = bn - 1; d >= 0; d--) {
            if (++index[d] < r.shape[d]) break;
            index[d] = 0;
        }
    }
    return r;
}

static void ref_result_free(ref_result *r) {
    free(r->values);
    free(r->scale);
}

/* n test values representable in dtype: floats in [-1, 1), signed integers -4..4,
 * u8 0..5, bool 0/1. */
static double *values_for(ct_dtype dtype, int64_t n, uint64_t seed) {
    double *v = malloc(sizeof(double) * (size_t)(n + 1));
    bool is_float = ct_dtype_is_floating(dtype);
    double lo = is_float ? -1 : dtype == CT_BOOL || dtype == CT_U8 ? 0 : -4;
    double hi = is_float ? 1 : dtype == CT_BOOL ? 2 : 5;
    ref_random(v, n, seed, lo, hi);
    for (int64_t i = 0; i < n; i++) v[i] = is_float ? ref_round(v[i], dtype) : floor(v[i]);
    return v;
}

/* Result t matches r: shape exactly, values within the dtype's rounding of the sum. */
static void check_result(const ct_tensor *t, const ref_result *r) {
    CHECK_NOT_NULL(t);
    CHECK(ct_ndim(t) == r->ndim);
    for (int d = 0; d < r->ndim; d++) CHECK(ct_shape(t)[d] == r->shape[d]);
    double *got = ref_read(t);
    CHECK_NOT_NULL(got);
    double tol = ref_tolerance(ct_dtype_of(t));
    for (int64_t i = 0; i < ct_numel(t); i++) {
        /* Integer results wrap modulo 2^bits, as storing the exact sum in the dtype does. */
        double expected = ct_dtype_is_integer(ct_dtype_of(t))
                              ? ref_round(r->values[i], ct_dtype_of(t))
                              : r->values[i];
        if (fabs(got[i] - expected) > tol * (1 + r->scale[i])) {
            ct_test_fail(__FILE__, __LINE__, "element %lld = %.9g, expected %.9g (%s)",
                         (long long)i, got[i], expected, ct_dtype_name(ct_dtype_of(t)));
            break;
        }
    }
    free(got);
}

/* One case: a (dtype da, shape sa) @ b (db, sb), each contiguous or strided
 * (ref_tensor_strided: first two axes swapped in storage, or stride 2 for 1-D). */
static void check_case(ct_device device, ct_dtype da, int na, const int64_t *sa, bool strided_a,
                       ct_dtype db, int nb, const int64_t *sb, bool strided_b) {
    int64_t numel_a = ref_numel(na, sa), numel_b = ref_numel(nb, sb);
    double *va = values_for(da, numel_a, 11 + (uint64_t)numel_a);
    double *vb = values_for(db, numel_b, 23 + (uint64_t)numel_b);
    ct_tensor *a = (strided_a ? ref_tensor_strided : ref_tensor)(va, na, sa, da, device);
    ct_tensor *b = (strided_b ? ref_tensor_strided : ref_tensor)(vb, nb, sb, db, device);
    ct_dtype dt = ct_promote_types(da, db);
    ref_result r = ref_matmul(va, na, sa, vb, nb, sb, dt == CT_BOOL);
    free(va);
    free(vb);
    ct_tensor *c = ct_matmul(a, b);
    ct_release(a);
    ct_release(b);
    if (c && ct_dtype_of(c) != dt)
        ct_test_fail(__FILE__, __LINE__, "result dtype %s, expected %s",
                     ct_dtype_name(ct_dtype_of(c)), ct_dtype_name(dt));
    check_result(c, &r);
    ct_release(c);
    ref_result_free(&r);
}

/* The same case for every dtype, contiguous and strided. */
static void check_all_dtypes(ct_device device, int na, const int64_t *sa, int nb,
                             const int64_t *sb) {
    for (int d = 0; d < CT_TEST_DTYPE_COUNT; d++)
        for (int strided = 0; strided < 4; strided++)
            check_case(device, ct_test_dtypes[d], na, sa, strided & 1, ct_test_dtypes[d], nb, sb,
                       strided & 2);
}

/* ---- ranks ---- */

DEVICE_TEST(test_ops_matmul_vector_vector) {
    int64_t s[1] = {5};
    check_all_dtypes(device, 1, s, 1, s);
}

DEVICE_TEST(test_ops_matmul_vector_matrix) {
    int64_t v[1] = {3}, m[2] = {3, 4}, bm[3] = {2, 3, 4};
    check_all_dtypes(device, 1, v, 2, m);
    check_all_dtypes(device, 1, v, 3, bm);
}

DEVICE_TEST(test_ops_matmul_matrix_vector) {
    int64_t m[2] = {2, 3}, v[1] = {3}, bm[4] = {2, 1, 2, 3};
    check_all_dtypes(device, 2, m, 1, v);
    check_all_dtypes(device, 4, bm, 1, v);
}

DEVICE_TEST(test_ops_matmul_matrix_matrix) {
    int64_t a[2] = {2, 3}, b[2] = {3, 4};
    check_all_dtypes(device, 2, a, 2, b);
    int64_t c[2] = {17, 33}, d[2] = {33, 9};
    check_all_dtypes(device, 2, c, 2, d);
    int64_t row[2] = {1, 5}, col[2] = {5, 1};
    check_all_dtypes(device, 2, row, 2, col);
    check_all_dtypes(device, 2, col, 2, row);
}

DEVICE_TEST(test_ops_matmul_batched_broadcast) {
    int64_t a[4] = {2, 1, 3, 4}, b[3] = {5, 4, 2};
    check_all_dtypes(device, 4, a, 3, b);
    int64_t c[3] = {3, 2, 4}, d[2] = {4, 5};
    check_all_dtypes(device, 3, c, 2, d);
    check_all_dtypes(device, 2, d, 3, (int64_t[]){3, 5, 2});
    int64_t e[3] = {1, 2, 3}, f[3] = {4, 3, 2};
    check_all_dtypes(device, 3, e, 3, f);
}

/* Large enough for the integer kernel's OpenMP split and several BLAS batches. */
DEVICE_TEST(test_ops_matmul_large_parallel) {
    int64_t a[2] = {70, 60}, b[2] = {60, 50};
    for (int d = 0; d < CT_TEST_DTYPE_COUNT; d++)
        check_case(device, ct_test_dtypes[d], 2, a, false, ct_test_dtypes[d], 2, b, true);
    int64_t c[3] = {3, 64, 65}, d[2] = {65, 33};
    check_case(device, CT_F32, 3, c, false, CT_F32, 2, d, false);
    check_case(device, CT_I64, 3, c, true, CT_I64, 2, d, false);
}

/* Products large enough (m * n * k >= 2^18) that the CPU splits them over its threads: by
 * rows when m >= n, by columns otherwise, in slabs that do not divide m or n evenly, with
 * each operand plain or transposed in storage. */
DEVICE_TEST(test_ops_matmul_threaded_slabs) {
    static const int64_t shapes[2][3] = {{100, 70, 90}, {40, 70, 130}}; /* m, k, n */
    static const ct_dtype dtypes[2] = {CT_F32, CT_F64};
    for (int s = 0; s < 2; s++)
        for (int d = 0; d < 2; d++)
            for (int t = 0; t < 4; t++) {
                int64_t a[2] = {shapes[s][0], shapes[s][1]}, b[2] = {shapes[s][1], shapes[s][2]};
                check_case(device, dtypes[d], 2, a, t & 1, dtypes[d], 2, b, t & 2);
            }
}

DEVICE_TEST(test_ops_matmul_mixed_dtypes_promote) {
    static const ct_dtype pairs[][2] = {{CT_I32, CT_F32},  {CT_U8, CT_F16},  {CT_BOOL, CT_I64},
                                        {CT_F16, CT_BF16}, {CT_F32, CT_F64}, {CT_U8, CT_I32}};
    int64_t a[3] = {2, 3, 4}, b[2] = {4, 5};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        check_case(device, pairs[i][0], 3, a, false, pairs[i][1], 2, b, false);
        check_case(device, pairs[i][1], 2, b, true, pairs[i][0], 2, (int64_t[]){5, 3}, false);
    }
}

/* ---- layouts: views built by hand over a 1-D base ---- */

typedef struct {
    int64_t rows, cols, rs, cs, offset, base;
} layout;

/* A rows x cols view (strides rs, cs from offset) over a base of `base` values of dtype;
 * writes the view's values (C order) to logical. */
static ct_tensor *view_of(ct_device device, ct_dtype dtype, layout l, uint64_t seed,
                          double *logical) {
    double *base = values_for(dtype, l.base, seed);
    ct_tensor *t = ref_tensor(base, 1, &l.base, dtype, device);
    int64_t shape[2] = {l.rows, l.cols}, strides[2] = {l.rs, l.cs};
    ct_tensor *v = t ? ct__tensor_view(t, dtype, 2, shape, strides, l.offset) : NULL;
    for (int64_t i = 0; i < l.rows; i++)
        for (int64_t j = 0; j < l.cols; j++)
            logical[i * l.cols + j] = base[l.offset + i * l.rs + j * l.cs];
    free(base);
    ct_release(t);
    return v;
}

static void check_layouts(ct_device device, ct_dtype dtype, layout la, layout lb) {
    double va[64], vb[64];
    ct_tensor *a = view_of(device, dtype, la, 5, va);
    ct_tensor *b = view_of(device, dtype, lb, 7, vb);
    ct_tensor *c = ct_matmul(a, b);
    ref_result r = ref_matmul(va, 2, (int64_t[]){la.rows, la.cols}, vb, 2,
                              (int64_t[]){lb.rows, lb.cols}, dtype == CT_BOOL);
    check_result(c, &r);
    ref_result_free(&r);
    ct_release(a);
    ct_release(b);
    ct_release(c);
}

DEVICE_TEST(test_ops_matmul_strided_layouts) {
    /* Every layout is 3 x 4 (as a) or 4 x 3 (as b) after its own fashion. */
    static const layout as_a[] = {
        {3, 4, 4, 1, 0, 12},   /* contiguous */
        {3, 4, 6, 1, 1, 18},   /* row-major, padded rows: leading dimension 6 */
        {3, 4, 1, 3, 0, 12},   /* transposed (column-major) */
        {3, 4, 1, 5, 2, 20},   /* column-major, padded */
        {3, 4, 0, 1, 0, 4},    /* one row broadcast to three: packed */
        {3, 4, 16, 2, 0, 48},  /* both strides above 1: packed */
        {3, 4, -4, -1, 11, 12} /* reversed: packed */
    };
    static const layout as_b[] = {{4, 3, 3, 1, 0, 12},   {4, 3, 5, 1, 0, 20}, {4, 3, 1, 4, 0, 12},
                                  {4, 3, 1, 4, 1, 13},   {4, 3, 1, 0, 0, 4},  {4, 3, 2, 12, 0, 36},
                                  {4, 3, -3, -1, 11, 12}};
    static const ct_dtype dtypes[] = {CT_F32,  CT_F64, CT_F16, CT_BF16, CT_I32, CT_U8,
                                      CT_BOOL, CT_I8,  CT_I16, CT_U16,  CT_U32, CT_U64};
    int n = (int)(sizeof as_a / sizeof as_a[0]);
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) check_layouts(device, dtypes[d], as_a[i], as_b[j]);
}

/* ---- empty sizes ---- */

DEVICE_TEST(test_ops_matmul_empty) {
    int64_t m0[2] = {0, 3}, b[2] = {3, 4};
    check_all_dtypes(device, 2, m0, 2, b);
    int64_t k0a[2] = {2, 0}, k0b[2] = {0, 4};
    check_all_dtypes(device, 2, k0a, 2, k0b); /* 2 x 4 zeros */
    int64_t n0[2] = {3, 0}, a[2] = {2, 3};
    check_all_dtypes(device, 2, a, 2, n0);
    int64_t batch0[3] = {0, 2, 3};
    check_all_dtypes(device, 3, batch0, 2, b);
    int64_t v0[1] = {0};
    check_all_dtypes(device, 1, v0, 1, v0); /* a 0-d zero */
    int64_t k0batch[3] = {3, 0, 2};
    check_all_dtypes(device, 3, (int64_t[]){3, 2, 0}, 3, k0batch);
}

/* ---- integers wrap as their dtype; bool is logical ---- */

DEVICE_TEST(test_ops_matmul_integer_wraps) {
    int64_t sa[2] = {1, 3}, sb[2] = {3, 1};
    double a32[3] = {2147483647.0, -2147483648.0, 1000000.0}, b32[3] = {3, -7, 5000};
    uint32_t w32 = 2147483647u * 3u + 2147483648u * (uint32_t)-7 + 1000000u * 5000u;
    double a8[3] = {200, 255, 17}, b8[3] = {200, 3, 255};
    uint8_t w8 = (uint8_t)(200 * 200 + 255 * 3 + 17 * 255);
    double a64[3] = {4611686018427387904.0, 3.0, -5.0}, b64[3] = {5, 4611686018427387904.0, 1};
    uint64_t w64 = 4611686018427387904ull * 5u + 3ull * 4611686018427387904ull - 5u;
    struct {
        ct_dtype dtype;
        const double *a, *b;
        double expected;
    } cases[] = {{CT_I32, a32, b32, (double)(int32_t)w32},
                 {CT_U8, a8, b8, (double)w8},
                 {CT_I64, a64, b64, (double)(int64_t)w64}};
    for (int i = 0; i < 3; i++) {
        ct_tensor *a = ref_tensor(cases[i].a, 2, sa, cases[i].dtype, device);
        ct_tensor *b = ref_tensor(cases[i].b, 2, sb, cases[i].dtype, device);
        ct_tensor *c = ct_matmul(a, b);
        ct_release(a);
        ct_release(b);
        CHECK_NOT_NULL(c);
        CHECK(ct_dtype_of(c) == cases[i].dtype);
        double expected[1] = {cases[i].expected};
        CHECK_TENSOR(c, expected);
        ct_release(c);
    }
}

DEVICE_TEST(test_ops_matmul_bool_is_logical) {
    double a[6] = {1, 1, 1, 0, 0, 0}, b[6] = {1, 0, 1, 0, 1, 1};
    ct_tensor *ta = ref_tensor(a, 2, (int64_t[]){2, 3}, CT_BOOL, device);
    ct_tensor *tb = ref_tensor(b, 2, (int64_t[]){3, 2}, CT_BOOL, device);
    ct_tensor *c = ct_matmul(ta, tb);
    ct_release(ta);
    ct_release(tb);
    CHECK_NOT_NULL(c);
    CHECK(ct_dtype_of(c) == CT_BOOL);
    double expected[4] = {1, 1, 0, 0}; /* row 0 meets a true in both columns; row 1 none */
    CHECK_TENSOR(c, expected);
    ct_release(c);
}

/* ---- errors ---- */

DEVICE_TEST(test_ops_matmul_shape_errors) {
    ct_tensor *a = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *b = ct_zeros(2, (int64_t[]){4, 5}, CT_F32, device);
    ct_tensor *v3 = ct_zeros(1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *v4 = ct_zeros(1, (int64_t[]){4}, CT_F32, device);
    ct_tensor *s = ct_scalar(2.0, CT_F32, device);
    ct_tensor *ba = ct_zeros(3, (int64_t[]){2, 3, 4}, CT_F32, device);
    ct_tensor *bb = ct_zeros(3, (int64_t[]){3, 4, 5}, CT_F32, device);
    CHECK(ct_matmul(a, b) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "ct_matmul: (2,3) @ (4,5): inner sizes 3 and 4 differ");
    CHECK(ct_matmul(v3, v4) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "(3,) @ (4,): inner sizes 3 and 4 differ");
    CHECK(ct_matmul(a, v4) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "inner sizes 3 and 4 differ");
    CHECK(ct_matmul(s, a) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "argument 1 is 0-d");
    CHECK(ct_matmul(v3, s) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "argument 2 is 0-d");
    CHECK(ct_matmul(ba, bb) == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "(2,3,4) @ (3,4,5): batch axes do not broadcast (size 2 against 3)");
    ct_release(a);
    ct_release(b);
    ct_release(v3);
    ct_release(v4);
    ct_release(s);
    ct_release(ba);
    ct_release(bb);
}

DEVICE_TEST(test_ops_matmul_null_arguments) {
    ct_tensor *a = ct_zeros(2, (int64_t[]){2, 2}, CT_F32, device);
    CHECK(ct_matmul(NULL, a) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_matmul: argument 1 is NULL");
    CHECK(ct_matmul(a, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_matmul: argument 2 is NULL");
    /* A chain keeps its first error. */
    ct_tensor *v = ct_zeros(1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *bad = ct_matmul(a, ct_matmul(a, v));
    ct_release(v);
    ct_release(a);
    CHECK(bad == NULL);
    CHECK_ERROR(CT_ERR_SHAPE, "inner sizes 2 and 3 differ");
}

/* CT_F32_GEMM picks the library of f32 products (the ctest variants *_on_openblas and
 * *_on_onednn run this program under each), and `ctensor devices`' kernels line names the one
 * in use: the variants test different paths only if the choice takes. */
TEST(test_ops_matmul_f32_gemm_library_follows_the_choice) {
    const char *library = ct__cpu_f32_gemm_library(), *choice = getenv("CT_F32_GEMM");
    if (choice && strcmp(choice, "openblas") == 0) CHECK(strcmp(library, "OpenBLAS") == 0);
    if (choice && strcmp(choice, "onednn") == 0) CHECK(strcmp(library, "oneDNN") == 0);
    CHECK(strcmp(library, "OpenBLAS") == 0 || strcmp(library, "oneDNN") == 0);
    bool named = strstr(ct_cpu_kernels(), "f32 GEMM oneDNN") != NULL;
    CHECK(named == (strcmp(library, "oneDNN") == 0));
}

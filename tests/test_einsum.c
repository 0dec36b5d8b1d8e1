/* ct_einsum on every device: equations against a float64 (complex) reference summed here by
 * nested loops over every letter's values, in float64, float32 (operands as strided views),
 * complex128, complex64 and int32; gradients by finite differences; each error. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "ct_gradcheck.h"
#include "ct_ref.h"
#include "ct_test.h"

#define MAX_OPERANDS 4

/* An equation, its operands' shapes, and the same equation for the reference: explicit
 * ("->"), with every "..." spelled as letters (NULL: eq itself). */
typedef struct ecase {
    const char *eq;
    const char *ref;
    int n;
    int ndim[MAX_OPERANDS];
    int64_t shape[MAX_OPERANDS][CT_MAX_DIMS];
} ecase;

static const ecase cases[] = {
    {"ij,jk->ik", NULL, 2, {2, 2}, {{2, 3}, {3, 4}}},
    {"ij,jk", "ij,jk->ik", 2, {2, 2}, {{2, 3}, {3, 4}}},
    {"ij,jk->ki", NULL, 2, {2, 2}, {{2, 3}, {3, 4}}},
    {"bij,bjk->bik", NULL, 2, {3, 3}, {{2, 2, 3}, {2, 3, 4}}},
    {"bhqd,bhkd->bhqk", NULL, 2, {4, 4}, {{2, 2, 3, 4}, {2, 2, 5, 4}}},
    {"bhqk,bhkd->bhqd", NULL, 2, {4, 4}, {{2, 2, 3, 5}, {2, 2, 5, 4}}},
    {"bhqd,bhkd", "bhqd,bhkd->kq", 2, {4, 4}, {{2, 2, 3, 4}, {2, 2, 5, 4}}},
    {"i,j->ij", NULL, 2, {1, 1}, {{3}, {4}}},
    {"i,i->", NULL, 2, {1, 1}, {{5}, {5}}},
    {"i,i->i", NULL, 2, {1, 1}, {{5}, {5}}},
    {"ij,j->i", NULL, 2, {2, 1}, {{3, 4}, {4}}},
    {"ii", "ii->", 1, {2}, {{4, 4}}},
    {"ii->i", NULL, 1, {2}, {{4, 4}}},
    {"ij->ji", NULL, 1, {2}, {{2, 3}}},
    {"ij->", NULL, 1, {2}, {{2, 3}}},
    {"ij->i", NULL, 1, {2}, {{2, 3}}},
    {"ij->j", NULL, 1, {2}, {{2, 3}}},
    {"ij", "ij->ij", 1, {2}, {{2, 3}}},
    {"ji", "ji->ij", 1, {2}, {{2, 3}}},
    {"bA", "bA->Ab", 1, {2}, {{2, 3}}},
    {"ijk->kji", NULL, 1, {3}, {{2, 3, 4}}},
    {"ijk->j", NULL, 1, {3}, {{2, 3, 4}}},
    {"iij->j", NULL, 1, {3}, {{3, 3, 2}}},
    {"iji->j", NULL, 1, {3}, {{3, 2, 3}}},
    {"iijj->", NULL, 1, {4}, {{2, 2, 3, 3}}},
    {"bii->bi", NULL, 1, {3}, {{2, 3, 3}}},
    {"...ii->...i", "zii->zi", 1, {3}, {{2, 3, 3}}},
    {"...ij->...ji", "zij->zji", 1, {3}, {{2, 3, 4}}},
    {"...ij->...ji", "ij->ji", 1, {2}, {{3, 4}}},
    {"...ij->ij", "zij->ij", 1, {3}, {{2, 3, 4}}},
    {"...ij,...jk->...ik", "zij,yzjk->yzik", 2, {3, 4}, {{2, 3, 4}, {5, 2, 4, 3}}},
    {"...ij,...jk->...ik", "zij,yzjk->yzik", 2, {3, 4}, {{1, 3, 4}, {5, 2, 4, 3}}},
    {"...ij,jk", "zij,jk->zik", 2, {3, 2}, {{2, 3, 4}, {4, 5}}},
    {"...,...->...", "ij,j->ij", 2, {2, 1}, {{2, 3}, {3}}},
    {"ij,ij->ij", NULL, 2, {2, 2}, {{2, 1}, {2, 3}}},
    {"ij,jk->ik", NULL, 2, {2, 2}, {{2, 1}, {3, 4}}},
    {"bij,bjk->bik", NULL, 2, {3, 3}, {{1, 2, 3}, {4, 3, 5}}},
    {"ij,ij->", NULL, 2, {2, 2}, {{2, 3}, {2, 3}}},
    {"ij,ji->", NULL, 2, {2, 2}, {{3, 4}, {4, 3}}},
    {"ii,i->i", NULL, 2, {2, 1}, {{3, 3}, {3}}},
    {"ij,kl->ijkl", NULL, 2, {2, 2}, {{2, 3}, {2, 2}}},
    {"ijkl,jl->ik", NULL, 2, {4, 2}, {{2, 3, 2, 4}, {3, 4}}},
    {"Ab,bC->AC", NULL, 2, {2, 2}, {{2, 3}, {3, 4}}},
    {"aB,Ba", "aB,Ba->", 2, {2, 2}, {{2, 3}, {3, 2}}},
    {" i j , j k -> i k ", "ij,jk->ik", 2, {2, 2}, {{2, 3}, {3, 4}}},
    {",ij->ij", NULL, 2, {0, 2}, {{0}, {2, 3}}},
    {"ij,jk->ik", NULL, 2, {2, 2}, {{2, 0}, {0, 3}}},
    {"ij,jk,kl->il", NULL, 3, {2, 2, 2}, {{2, 3}, {3, 4}, {4, 5}}},
    {"ij,jk,kl,lm->im", NULL, 4, {2, 2, 2, 2}, {{2, 3}, {3, 2}, {2, 4}, {4, 3}}},
    {"ij,ij,ij->ij", NULL, 3, {2, 2, 2}, {{2, 3}, {2, 3}, {2, 3}}},
    {"ij,jk,ik->", NULL, 3, {2, 2, 2}, {{2, 3}, {3, 4}, {2, 4}}},
    {"i,j,k->ijk", NULL, 3, {1, 1, 1}, {{2}, {3}, {4}}},
    {"a,a,a->", NULL, 3, {1, 1, 1}, {{5}, {5}, {5}}},
    {"bn,anm,bm->ba", NULL, 3, {2, 3, 2}, {{2, 3}, {4, 3, 5}, {2, 5}}},
    {"ijk,ikl,ilm->jm", NULL, 3, {3, 3, 3}, {{2, 3, 2}, {2, 2, 3}, {2, 3, 2}}},
    {"ij,jk,kl", "ij,jk,kl->il", 3, {2, 2, 2}, {{2, 3}, {3, 1}, {4, 5}}},
    {"ab,bc,cd,da->", NULL, 4, {2, 2, 2, 2}, {{2, 3}, {3, 2}, {2, 4}, {4, 2}}},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- the reference ---- */

static int64_t numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* The explicit equation `eq` summed by brute force: every combination of the letters'
 * values, each operand read at its letters' values (0 on its size-1 axes). out has the
 * output's elements in C order; *out_n receives their count. */
static void reference(const char *eq, int n, const int *ndim, const int64_t (*shape)[CT_MAX_DIMS],
                      double complex *const *in, double complex *out, int64_t *out_n) {
    int sub[MAX_OPERANDS + 1][CT_MAX_DIMS], nsub[MAX_OPERANDS + 1] = {0}, k = 0;
    int64_t size[128] = {0};
    bool seen[128] = {false};
    for (const char *s = eq; *s; s++) {
        if (*s == ',')
            k++;
        else if (*s == '-')
            k = n, s++;
        else if (*s != ' ')
            sub[k][nsub[k]++] = *s;
    }
    int letters[64], nletters = 0;
    for (k = 0; k < n; k++)
        for (int a = 0; a < nsub[k]; a++) {
            int c = sub[k][a];
            if (!seen[c]) letters[nletters++] = c, size[c] = shape[k][a];
            if (size[c] == 1) size[c] = shape[k][a];
            seen[c] = true;
        }
    int64_t out_shape[CT_MAX_DIMS];
    for (int a = 0; a < nsub[n]; a++) out_shape[a] = size[sub[n][a]];
    *out_n = numel_of(nsub[n], out_shape);
    for (int64_t i = 0; i < *out_n; i++) out[i] = 0;
    int64_t value[128] = {0}, total = 1;
    for (int i = 0; i < nletters; i++) total *= size[letters[i]];
    for (int64_t step = 0; step < total; step++) {
        int64_t rest = step;
        for (int i = nletters - 1; i >= 0; i--) {
            value[letters[i]] = rest % size[letters[i]];
            rest /= size[letters[i]];
        }
        double complex product = 1;
        for (k = 0; k < n; k++) {
            int64_t at = 0;
            for (int a = 0; a < nsub[k]; a++)
                at = at * shape[k][a] + (shape[k][a] == 1 ? 0 : value[sub[k][a]]);
            product *= in[k][at];
        }
        int64_t at = 0;
        for (int a = 0; a < nsub[n]; a++) at = at * out_shape[a] + value[sub[n][a]];
        out[at] += product;
    }
}

/* ---- operands ---- */

/* A tensor of dtype on device holding v (real parts only for a real dtype); strided: a
 * non-contiguous view (ref_tensor_strided's layout) for the real dtypes. */
static ct_tensor *operand(const double complex *v, int ndim, const int64_t *shape, ct_dtype dtype,
                          bool strided, ct_device device) {
    int64_t n = numel_of(ndim, shape);
    if (!ct_dtype_is_complex(dtype)) {
        double *re = malloc((size_t)(n ? n : 1) * sizeof *re);
        if (!re) return NULL;
        for (int64_t i = 0; i < n; i++) re[i] = creal(v[i]);
        ct_tensor *t = strided ? ref_tensor_strided(re, ndim, shape, dtype, device)
                               : ref_tensor(re, ndim, shape, dtype, device);
        free(re);
        return t;
    }
    ct_complex128 *z = malloc((size_t)(n ? n : 1) * sizeof *z);
    if (!z) return NULL;
    for (int64_t i = 0; i < n; i++) z[i] = (ct_complex128){creal(v[i]), cimag(v[i])};
    ct_tensor *wide = ct_from_data(z, ndim, shape, CT_C128, device);
    free(z);
    ct_tensor *t = wide ? ct_cast(wide, dtype) : NULL;
    ct_release(wide);
    return t;
}

/* Random values of dtype's kind: small integers for int32, exact in float32 for the rest. */
static void fill(double complex *v, int64_t n, uint64_t seed, ct_dtype dtype) {
    double re[256], im[256];
    ref_random(re, n, seed, -1, 1);
    ref_random(im, n, seed + 1000, -1, 1);
    for (int64_t i = 0; i < n; i++) {
        double r = dtype == CT_I32 ? round(re[i] * 4) : ref_round(re[i], CT_F32);
        double j = ct_dtype_is_complex(dtype) ? ref_round(im[i], CT_F32) : 0;
        v[i] = CMPLX(r, j);
    }
}

/* t's n elements as double complex, through a complex128 copy on the host. */
static bool read_all(const ct_tensor *t, double complex *out, int64_t n) {
    ct_tensor *wide = ct_cast(t, CT_C128), *dense = wide ? ct_contiguous(wide) : NULL;
    ct_complex128 z[512];
    bool ok = dense && n <= 512 && ct_numel(dense) == n &&
              (n == 0 || ct_copy_to_host(dense, z, (size_t)n * sizeof z[0]) == CT_OK);
    ct_release(wide);
    ct_release(dense);
    for (int64_t i = 0; ok && i < n; i++) out[i] = CMPLX(z[i].re, z[i].im);
    return ok;
}

/* Case c in dtype on device against the reference; false (with the failure recorded). */
static bool run_case(const ecase *c, ct_dtype dtype, bool strided, ct_device device) {
    double complex values[MAX_OPERANDS][256], *in[MAX_OPERANDS], expected[512], got[512];
    ct_tensor *t[MAX_OPERANDS] = {NULL};
    for (int k = 0; k < c->n; k++) {
        in[k] = values[k];
        fill(values[k], numel_of(c->ndim[k], c->shape[k]), 17 + 31 * (uint64_t)k, dtype);
        t[k] = operand(values[k], c->ndim[k], c->shape[k], dtype, strided, device);
    }
    int64_t n = 0;
    reference(c->ref ? c->ref : c->eq, c->n, c->ndim, c->shape, in, expected, &n);
    ct_tensor *out = ct_einsum(c->eq, c->n, (const ct_tensor *const *)t);
    bool ok = out && ct_dtype_of(out) == dtype && ct_numel(out) == n && read_all(out, got, n);
    double tol = dtype == CT_F64 || dtype == CT_C128 ? 1e-12 : dtype == CT_I32 ? 0 : 1e-5;
    int64_t bad = -1;
    for (int64_t i = 0; ok && i < n && bad < 0; i++)
        if (cabs(got[i] - expected[i]) > tol * fmax(1.0, cabs(expected[i]))) bad = i;
    if (!ok || bad >= 0)
        ct_test_fail(__FILE__, __LINE__, "%s in %s: %s", c->eq, ct_dtype_name(dtype),
                     !out  ? ct_last_error()
                     : !ok ? "wrong dtype or size"
                           : "wrong value");
    if (bad >= 0)
        fprintf(stderr, "  element %lld = %.17g%+.17gi, expected %.17g%+.17gi\n", (long long)bad,
                creal(got[bad]), cimag(got[bad]), creal(expected[bad]), cimag(expected[bad]));
    ct_release(out);
    for (int k = 0; k < c->n; k++) ct_release(t[k]);
    return ok && bad < 0;
}

DEVICE_TEST(einsum_matches_loops_f64) {
    for (int i = 0; i < NCASES; i++)
        if (!run_case(&cases[i], CT_F64, false, device)) return;
}

DEVICE_TEST(einsum_matches_loops_f32_strided) {
    for (int i = 0; i < NCASES; i++)
        if (!run_case(&cases[i], CT_F32, true, device)) return;
}

DEVICE_TEST(einsum_matches_loops_complex) {
    for (int i = 0; i < NCASES; i++)
        if (!run_case(&cases[i], CT_C128, false, device)) return;
    for (int i = 0; i < 8; i++)
        if (!run_case(&cases[i], CT_C64, false, device)) return;
}

DEVICE_TEST(einsum_matches_loops_int32) {
    for (int i = 0; i < NCASES; i++)
        if (!run_case(&cases[i], CT_I32, false, device)) return;
}

/* Operands of two dtypes: the result has the promoted one, as ct_matmul's. */
DEVICE_TEST(einsum_promotes_dtypes) {
    ct_tensor *a = ct_ones(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *b = ct_ones(2, (int64_t[]){3, 4}, CT_F64, device);
    ct_tensor *z = ct_full_complex(2, (int64_t[]){3, 4}, (ct_complex128){1, 2}, CT_C64, device);
    ct_tensor *ab = ct_einsum("ij,jk->ik", 2, (const ct_tensor *[]){a, b});
    ct_tensor *az = ct_einsum("ij,jk->ik", 2, (const ct_tensor *[]){a, z});
    double complex got[8] = {0};
    bool ok =
        ab && az && ct_dtype_of(ab) == CT_F64 && ct_dtype_of(az) == CT_C64 && read_all(az, got, 8);
    ct_release(a), ct_release(b), ct_release(z), ct_release(ab), ct_release(az);
    CHECK(ok);
    CHECK(got[7] == CMPLX(3, 6));
}

/* bool operands give NumPy's logical einsum: or over the contracted letters of and. */
DEVICE_TEST(einsum_bool_is_logical) {
    const double av[6] = {1, 0, 0, 0, 1, 0}, bv[6] = {0, 1, 1, 0, 0, 0};
    ct_tensor *a = ref_tensor(av, 2, (int64_t[]){2, 3}, CT_BOOL, device);
    ct_tensor *b = ref_tensor(bv, 2, (int64_t[]){3, 2}, CT_BOOL, device);
    ct_tensor *ab = ct_einsum("ij,jk->ik", 2, (const ct_tensor *[]){a, b});
    ct_tensor *both = ct_einsum("ij,ij->ij", 2, (const ct_tensor *[]){a, a});
    ct_tensor *any = ct_einsum("ij->", 1, (const ct_tensor *[]){a});
    ct_release(a);
    ct_release(b);
    bool dtypes = ab && both && any && ct_dtype_of(ab) == CT_BOOL && ct_dtype_of(both) == CT_BOOL &&
                  ct_dtype_of(any) == CT_BOOL;
    const double want_ab[4] = {0, 1, 1, 0}, want_any[1] = {1};
    if (dtypes) {
        CHECK_TENSOR(ab, want_ab);
        CHECK_TENSOR(both, av);
        CHECK_TENSOR(any, want_any);
    }
    ct_release(ab), ct_release(both), ct_release(any);
    CHECK(dtypes);
}

/* ---- gradients ---- */

static ct_tensor *apply(ct_tensor *const *in, void *equation) {
    const char *eq = equation;
    int n = 1;
    for (const char *s = eq; *s && *s != '-'; s++) n += *s == ',';
    return ct_einsum(eq, n, (const ct_tensor *const *)in);
}

/* Leaves of the case's shapes (float64 or complex128) requiring grad, checked with eq. */
static bool gradcheck_case(const ecase *c, bool is_complex, ct_device device) {
    ct_tensor *in[MAX_OPERANDS] = {NULL};
    bool made = true;
    for (int k = 0; k < c->n; k++) {
        in[k] = is_complex ? ct_gradcheck_complex_leaf(device, c->ndim[k], c->shape[k], 5 + k,
                                                       (double[]){-1, 1}, (double[]){-1, 1}, true)
                           : ct_gradcheck_leaf(device, c->ndim[k], c->shape[k], 5 + k, -1, 1, true);
        made = made && in[k];
    }
    bool ok =
        made && (is_complex ? ct_gradcheck_complex(apply, c->n, in, (void *)c->eq, 1e-6, 1e-7, 1e-5)
                            : ct_gradcheck(apply, c->n, in, (void *)c->eq, 1e-6, 1e-7, 1e-5));
    if (!ok) ct_test_fail(__FILE__, __LINE__, "gradient of %s: %s", c->eq, ct_last_error());
    for (int k = 0; k < c->n; k++) ct_release(in[k]);
    return ok;
}

static const ecase grad_cases[] = {
    {"ij,jk->ik", NULL, 2, {2, 2}, {{2, 3}, {3, 4}}},
    {"bhqd,bhkd->bhqk", NULL, 2, {4, 4}, {{1, 2, 3, 2}, {1, 2, 2, 2}}},
    {"ii->i", NULL, 1, {2}, {{3, 3}}},
    {"iij->j", NULL, 1, {3}, {{3, 3, 2}}},
    {"ii", NULL, 1, {2}, {{3, 3}}},
    {"ij,jk,kl->il", NULL, 3, {2, 2, 2}, {{2, 3}, {3, 2}, {2, 2}}},
    {"ij,jk,ik->", NULL, 3, {2, 2, 2}, {{2, 3}, {3, 2}, {2, 2}}},
    {"...ij,...jk->...ik", NULL, 2, {3, 4}, {{1, 2, 3}, {2, 2, 3, 2}}},
    {"ij,ij->ij", NULL, 2, {2, 2}, {{2, 1}, {2, 3}}},
};

DEVICE_TEST(einsum_gradients) {
    for (int i = 0; i < (int)(sizeof grad_cases / sizeof grad_cases[0]); i++)
        if (!gradcheck_case(&grad_cases[i], false, device)) return;
}

DEVICE_TEST(einsum_gradients_complex) {
    if (!gradcheck_case(&grad_cases[0], true, device)) return;
    if (!gradcheck_case(&grad_cases[3], true, device)) return;
    gradcheck_case(&grad_cases[5], true, device);
}

/* ---- errors ---- */

/* ct_einsum(eq) on n operands of the given shapes fails with status and a message holding
 * needle (and the equation). */
static bool fails(const char *eq, int n, const int *ndim, const int64_t (*shape)[CT_MAX_DIMS],
                  ct_status status, const char *needle, ct_device device) {
    ct_tensor *t[CT_MAX_DIMS + 1] = {NULL};
    for (int k = 0; k < n; k++) t[k] = ct_zeros(ndim[k], shape[k], CT_F32, device);
    ct_tensor *out = ct_einsum(eq, n, (const ct_tensor *const *)t);
    bool ok = !out && ct_last_status() == status && strstr(ct_last_error(), needle) &&
              strstr(ct_last_error(), eq);
    if (!ok)
        ct_test_fail(__FILE__, __LINE__, "%s: expected %s with \"%s\", got %s: %s", eq,
                     ct_status_name(status), needle, ct_status_name(ct_last_status()),
                     out ? "a result" : ct_last_error());
    ct_clear_error();
    ct_release(out);
    for (int k = 0; k < n; k++) ct_release(t[k]);
    return ok;
}

DEVICE_TEST(einsum_errors) {
    const int two[2] = {2, 2};
    const int64_t m23[2][CT_MAX_DIMS] = {{2, 3}, {3, 4}}, bad[2][CT_MAX_DIMS] = {{2, 3}, {4, 5}};
    CHECK(fails("ij,j%->ik", 2, two, m23, CT_ERR_INVALID_ARG, "'%' (0x25) at position 4", device));
    CHECK(fails("ij,jk->ii", 2, two, m23, CT_ERR_INVALID_ARG, "'i' is repeated in the output",
                device));
    CHECK(fails("ij,jk->iz", 2, two, m23, CT_ERR_INVALID_ARG, "'z' is in no operand", device));
    CHECK(fails("ij,jk->ik", 2, two, bad, CT_ERR_SHAPE,
                "operand 1 has size 4 for subscript 'j', an earlier operand 3", device));
    CHECK(fails("ij,jk->ik", 1, two, m23, CT_ERR_INVALID_ARG,
                "2 operands' subscripts but 1 operands came", device));
    CHECK(fails("ij->ik", 2, two, m23, CT_ERR_INVALID_ARG,
                "1 operands' subscripts but 2 operands came", device));
    CHECK(fails("ijk,jk->ik", 2, two, m23, CT_ERR_SHAPE,
                "operand 0 has rank 2 but its subscripts name 3 axes", device));
    CHECK(fails("i...j...,jk->ik", 2, two, m23, CT_ERR_INVALID_ARG,
                "operand 0 has more than one '...'", device));
    CHECK(fails("ij,j.k->ik", 2, two, m23, CT_ERR_INVALID_ARG, "'.' (0x2e) at position 4", device));
    CHECK(fails("ij,jk->i,k", 2, two, m23, CT_ERR_INVALID_ARG, "the output's subscripts have",
                device));
    CHECK(fails("ij,jk->i->k", 2, two, m23, CT_ERR_INVALID_ARG, "'-' (0x2d)", device));
    CHECK(fails("ii->i", 1, two, m23, CT_ERR_SHAPE,
                "operand 0 repeats subscript 'i' on axes of sizes 2 and 3", device));
    /* One axis more than CT_MAX_DIMS, in an operand's term and in the output's. */
    enum { OVER = CT_MAX_DIMS + 1 };
    char term[OVER + 1], eq[4 * OVER + 8], needle[64];
    int one[OVER];
    int64_t vec[OVER][CT_MAX_DIMS] = {{0}};
    for (int k = 0; k < OVER; k++) term[k] = (char)('a' + k), one[k] = 1, vec[k][0] = 2;
    term[OVER] = '\0';
    snprintf(eq, sizeof eq, "%s,AB->B", term);
    snprintf(needle, sizeof needle, "operand 0 names more than %d axes", CT_MAX_DIMS);
    CHECK(fails(eq, 2, two, m23, CT_ERR_INVALID_ARG, needle, device));
    size_t len = 0;
    for (int k = 0; k < OVER; k++)
        len += (size_t)snprintf(eq + len, sizeof eq - len, "%s%c", k ? "," : "", term[k]);
    snprintf(eq + len, sizeof eq - len, "->%s", term);
    snprintf(needle, sizeof needle, "the output names more than %d axes", CT_MAX_DIMS);
    CHECK(fails(eq, OVER, one, (const int64_t(*)[CT_MAX_DIMS])vec, CT_ERR_INVALID_ARG, needle,
                device));
    /* Two operands of CT_MAX_DIMS / 2 + 1 axes each, none shared, contracted later: their
     * product would pass CT_MAX_DIMS. */
    enum { HALF = CT_MAX_DIMS / 2 + 1 };
    char first[HALF + 1], second[HALF + 1];
    for (int k = 0; k < HALF; k++) first[k] = (char)('a' + k), second[k] = (char)('a' + HALF + k);
    first[HALF] = second[HALF] = '\0';
    snprintf(eq, sizeof eq, "%s,%s,%s,%s->", first, second, first, second);
    const int halves[4] = {HALF, HALF, HALF, HALF};
    int64_t ones[4][CT_MAX_DIMS];
    for (int k = 0; k < 4; k++)
        for (int d = 0; d < CT_MAX_DIMS; d++) ones[k][d] = 1;
    snprintf(needle, sizeof needle, "the product of operands 0 to 1 would have rank %d", 2 * HALF);
    CHECK(fails(eq, 4, halves, (const int64_t(*)[CT_MAX_DIMS])ones, CT_ERR_SHAPE, needle, device));

    ct_tensor *a = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    CHECK(!ct_einsum("ij,jk->ik", 2, (const ct_tensor *[]){a, NULL}));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_einsum");
    CHECK(!ct_einsum("ij", 0, (const ct_tensor *[]){a}));
    CHECK_ERROR(CT_ERR_INVALID_ARG, "at least one operand");
    ct_release(a);
}

/* Operands on two devices: ct's device error. Needs a device besides the CPU. */
DEVICE_TEST(einsum_device_mismatch) {
    if (device.type == CT_DEVICE_CPU) {
        ct_test_skip("needs a device besides the CPU for the second operand: runs on cuda");
        return;
    }
    ct_tensor *a = ct_zeros(2, (int64_t[]){2, 3}, CT_F32, device);
    ct_tensor *b = ct_zeros(2, (int64_t[]){3, 4}, CT_F32, CT_CPU);
    CHECK(a && b);
    ct_tensor *out = ct_einsum("ij,jk->ik", 2, (const ct_tensor *[]){a, b});
    ct_release(a);
    ct_release(b);
    CHECK(!out);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "ct_einsum");
}

/* complex64 and complex128 as dtypes, on every device: the rows' facts, promotion (the array
 * API standard's table, NumPy's for integers), creation, casts (complex to real refused),
 * the parts (ct_real, ct_imag, ct_conj), ct_item_complex, printing, and the ops that refuse
 * complex tensors. References are C99's double complex. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"

/* A complex128 tensor of n values (1-D). */
static ct_tensor *c128(const double complex *v, int64_t n, ct_device device) {
    ct_complex128 *z = malloc((size_t)(n ? n : 1) * sizeof *z);
    if (!z) return NULL;
    for (int64_t i = 0; i < n; i++) z[i] = (ct_complex128){creal(v[i]), cimag(v[i])};
    ct_tensor *t = ct_from_data(z, 1, &n, CT_C128, device);
    free(z);
    return t;
}

/* t's values as double complex (t cast to complex128); false with the test failed. */
static bool read_c128(const ct_tensor *t, double complex *out, int64_t n) {
    ct_tensor *wide = ct_cast(t, CT_C128);
    ct_complex128 z[64];
    bool ok = wide && n <= 64 && ct_copy_to_host(wide, z, (size_t)n * sizeof z[0]) == CT_OK;
    ct_release(wide);
    if (!ok) {
        ct_test_fail(__FILE__, __LINE__, "reading back: %s", ct_last_error());
        return false;
    }
    for (int64_t i = 0; i < n; i++) out[i] = CMPLX(z[i].re, z[i].im);
    return true;
}

/* Bitwise equality of the parts (so signed zeros and NaN count). */
static bool same_parts(double complex a, double complex b) {
    double ra = creal(a), ia = cimag(a), rb = creal(b), ib = cimag(b);
    bool re = isnan(ra) ? isnan(rb) : ra == rb && signbit(ra) == signbit(rb);
    bool im = isnan(ia) ? isnan(ib) : ia == ib && signbit(ia) == signbit(ib);
    return re && im;
}

static void check_values(const ct_tensor *t, const double complex *want, int64_t n,
                         const char *what) {
    double complex got[64];
    if (!read_c128(t, got, n)) return;
    for (int64_t i = 0; i < n; i++)
        if (!same_parts(got[i], want[i])) {
            ct_test_fail(__FILE__, __LINE__, "%s[%lld] = %g%+gj, expected %g%+gj", what,
                         (long long)i, creal(got[i]), cimag(got[i]), creal(want[i]),
                         cimag(want[i]));
            return;
        }
}

TEST(test_dtype_complex_rows) {
    CHECK(CT_C64 == 13 && CT_C128 == 14 && CT_DTYPE_COUNT == 15);
    CHECK(ct_dtype_size(CT_C64) == 8 && ct_dtype_size(CT_C128) == 16);
    CHECK(!strcmp(ct_dtype_name(CT_C64), "complex64"));
    CHECK(!strcmp(ct_dtype_name(CT_C128), "complex128"));
    CHECK(ct_dtype_is_complex(CT_C64) && ct_dtype_is_complex(CT_C128));
    CHECK(!ct_dtype_is_complex(CT_F64) && !ct_dtype_is_complex((ct_dtype)99));
    CHECK(!ct_dtype_is_floating(CT_C64) && !ct_dtype_is_integer(CT_C128));
}

/* The standard's table for the floating kinds; integers and bool as NumPy
 * (np.promote_types): i8, u8, i16, u16, bool with complex64 give complex64, the wider
 * integers complex128. */
TEST(test_dtype_complex_promotion) {
    static const struct {
        ct_dtype other, with_c64;
    } rows[] = {
        {CT_F16, CT_C64},  {CT_BF16, CT_C64}, {CT_F32, CT_C64},   {CT_F64, CT_C128},
        {CT_BOOL, CT_C64}, {CT_I8, CT_C64},   {CT_U8, CT_C64},    {CT_I16, CT_C64},
        {CT_U16, CT_C64},  {CT_I32, CT_C128}, {CT_U32, CT_C128},  {CT_I64, CT_C128},
        {CT_U64, CT_C128}, {CT_C64, CT_C64},  {CT_C128, CT_C128},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CHECK(ct_promote_types(CT_C64, rows[i].other) == rows[i].with_c64);
        CHECK(ct_promote_types(rows[i].other, CT_C64) == rows[i].with_c64);
        CHECK(ct_promote_types(CT_C128, rows[i].other) == CT_C128);
        CHECK(ct_promote_types(rows[i].other, CT_C128) == CT_C128);
    }
}

DEVICE_TEST(test_dtype_complex_creation) {
    int64_t shape[2] = {2, 3};
    for (ct_dtype dt = CT_C64; dt <= CT_C128; dt++) {
        ct_tensor *t = ct_full_complex(2, shape, (ct_complex128){1.5, -2.0}, dt, device);
        CHECK_NOT_NULL(t);
        double complex want[6];
        for (int i = 0; i < 6; i++) want[i] = CMPLX(1.5, -2.0);
        check_values(t, want, 6, "full_complex");
        CHECK(ct_dtype_of(t) == dt);
        ct_release(t);
        t = ct_ones(2, shape, dt, device);
        for (int i = 0; i < 6; i++) want[i] = CMPLX(1.0, 0.0);
        check_values(t, want, 6, "ones");
        ct_release(t);
        t = ct_eye(2, 3, dt, device);
        for (int i = 0; i < 6; i++) want[i] = CMPLX(i == 0 || i == 4 ? 1.0 : 0.0, 0.0);
        check_values(t, want, 6, "eye");
        ct_release(t);
        t = ct_linspace(0, 1, 5, dt, device);
        double complex ramp[5] = {0, 0.25, 0.5, 0.75, 1};
        check_values(t, ramp, 5, "linspace");
        ct_release(t);
        t = ct_linspace_complex((ct_complex128){0, 2}, (ct_complex128){1, -2}, 5, dt, device);
        double complex both[5] = {CMPLX(0, 2), CMPLX(0.25, 1), CMPLX(0.5, 0), CMPLX(0.75, -1),
                                  CMPLX(1, -2)};
        check_values(t, both, 5, "linspace_complex");
        ct_release(t);
        t = ct_full_complex(0, NULL, (ct_complex128){0.0, -0.0}, dt, device);
        double complex negative_zero = CMPLX(0.0, -0.0);
        check_values(t, &negative_zero, 1, "a signed zero");
        ct_complex128 item;
        CHECK_OK(ct_item_complex(t, &item));
        CHECK(item.re == 0 && signbit(item.im));
        double real;
        CHECK(ct_item(t, &real) == CT_ERR_DTYPE);
        CHECK_ERROR(CT_ERR_DTYPE, "ct_item: the tensor is complex");
        ct_release(t);
    }
    CHECK(ct_full_complex(1, shape, (ct_complex128){1, 1}, CT_F32, device) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_full_complex: dtype float32 is not complex");
    CHECK(ct_linspace_complex((ct_complex128){0, 0}, (ct_complex128){1, 1}, 3, CT_I32, device) ==
          NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_linspace_complex: dtype int32 is not complex");
}

DEVICE_TEST(test_dtype_complex_casts) {
    double complex v[4] = {CMPLX(1.25, -3), CMPLX(-0.0, 0.5), CMPLX(1e300, 1e-300),
                           CMPLX(NAN, INFINITY)};
    ct_tensor *z = c128(v, 4, device);
    CHECK_NOT_NULL(z);
    /* complex128 -> complex64 rounds each part (1e300 overflows, 1e-300 underflows) */
    ct_tensor *narrow = ct_cast(z, CT_C64);
    double complex want[4] = {CMPLX(1.25, -3), CMPLX(-0.0, 0.5), CMPLX(INFINITY, 0.0),
                              CMPLX(NAN, INFINITY)};
    check_values(narrow, want, 4, "c128 -> c64");
    /* real -> complex: imaginary part 0 */
    double reals[3] = {-2.5, 7, 0.1};
    int64_t three = 3;
    ct_tensor *r = ct_from_data(reals, 1, &three, CT_F64, device);
    ct_tensor *rc = ct_cast(r, CT_C64);
    double complex from_real[3] = {CMPLX(-2.5, 0), CMPLX(7, 0), CMPLX((float)0.1, 0)};
    check_values(rc, from_real, 3, "f64 -> c64");
    int32_t ints[3] = {-3, 0, 2147483647};
    ct_tensor *i = ct_from_data(ints, 1, &three, CT_I32, device);
    ct_tensor *ic = ct_cast(i, CT_C128);
    double complex from_int[3] = {CMPLX(-3, 0), CMPLX(0, 0), CMPLX(2147483647.0, 0)};
    check_values(ic, from_int, 3, "i32 -> c128");
    /* complex -> real is refused, naming the parts to take */
    for (int d = 0; d < CT_TEST_DTYPE_COUNT; d++) {
        CHECK(ct_cast(z, ct_test_dtypes[d]) == NULL);
        CHECK_ERROR(CT_ERR_DTYPE, "does not convert to");
    }
    CHECK(ct_copy(r, rc) == CT_ERR_DTYPE);
    CHECK_ERROR(CT_ERR_DTYPE,
                "(the imaginary part would be lost); take ct_real, ct_imag or ct_abs");
    ct_release(z);
    ct_release(narrow);
    ct_release(r);
    ct_release(rc);
    ct_release(i);
    ct_release(ic);
}

DEVICE_TEST(test_dtype_complex_parts) {
    double complex v[4] = {CMPLX(1, 2), CMPLX(-3, -0.0), CMPLX(0.5, INFINITY), CMPLX(NAN, -1)};
    ct_tensor *z = c128(v, 4, device);
    /* a strided view: elements 0 and 2 */
    ct_tensor *every_other = ct_slice(z, 0, 0, 4, 2);
    CHECK_NOT_NULL(every_other);
    for (int s = 0; s < 2; s++) {
        const ct_tensor *x = s ? every_other : z;
        int64_t n = s ? 2 : 4, step = s ? 2 : 1;
        ct_tensor *re = ct_real(x), *im = ct_imag(x), *cj = ct_conj(x);
        CHECK_NOT_NULL(re);
        CHECK_NOT_NULL(im);
        CHECK_NOT_NULL(cj);
        CHECK(ct_dtype_of(re) == CT_F64 && ct_dtype_of(im) == CT_F64 && ct_dtype_of(cj) == CT_C128);
        double complex want_re[4], want_im[4], want_cj[4];
        for (int64_t k = 0; k < n; k++) {
            want_re[k] = CMPLX(creal(v[k * step]), 0);
            want_im[k] = CMPLX(cimag(v[k * step]), 0);
            want_cj[k] = CMPLX(creal(v[k * step]), -cimag(v[k * step]));
        }
        check_values(re, want_re, n, "real");
        check_values(im, want_im, n, "imag");
        check_values(cj, want_cj, n, "conj");
        ct_release(re);
        ct_release(im);
        ct_release(cj);
    }
    /* complex64 parts are float32 */
    ct_tensor *narrow = ct_cast(z, CT_C64);
    ct_tensor *re = ct_real(narrow);
    CHECK(ct_dtype_of(re) == CT_F32);
    ct_release(re);
    ct_release(narrow);
    /* of a real tensor: itself and zeros */
    ct_tensor *r = ct_ones(1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *same = ct_real(r), *zeros = ct_imag(r), *conj = ct_conj(r);
    CHECK(same == r || ct_shares_storage(same, r));
    double complex zero[3] = {0, 0, 0};
    check_values(zeros, zero, 3, "imag of a real tensor");
    CHECK(ct_dtype_of(zeros) == CT_F32 && ct_dtype_of(conj) == CT_F32);
    ct_release(same);
    ct_release(zeros);
    ct_release(conj);
    ct_release(r);
    ct_release(every_other);
    ct_release(z);
}

/* Views, selections and copies move complex elements whole. */
DEVICE_TEST(test_dtype_complex_moves) {
    double complex v[6] = {CMPLX(1, -1), CMPLX(2, -2), CMPLX(3, -3),
                           CMPLX(4, -4), CMPLX(5, -5), CMPLX(6, -6)};
    ct_tensor *z = c128(v, 6, device);
    ct_tensor *m = ct_reshape(z, 2, (int64_t[]){2, 3});
    ct_tensor *t = ct_transpose(m, 0, 1);
    ct_tensor *c = ct_contiguous(t);
    double complex transposed[6] = {v[0], v[3], v[1], v[4], v[2], v[5]};
    check_values(c, transposed, 6, "transpose");
    for (ct_dtype dt = CT_C64; dt <= CT_C128; dt++) {
        ct_tensor *x = ct_cast(c, dt);
        const ct_tensor *parts[2] = {x, x};
        ct_tensor *cat = ct_concat(2, parts, 0);
        double complex twice[12];
        for (int i = 0; i < 12; i++) twice[i] = transposed[i % 6];
        check_values(cat, twice, 12, "concat");
        int64_t idx[3] = {2, 0, 2};
        ct_tensor *index = ct_from_data(idx, 1, (int64_t[]){3}, CT_I64, device);
        ct_tensor *flat = ct_reshape(x, 1, (int64_t[]){6});
        ct_tensor *picked = ct_index_select(flat, 0, index);
        double complex want[3] = {transposed[2], transposed[0], transposed[2]};
        check_values(picked, want, 3, "index_select");
        bool mask[6] = {true, false, true, false, false, true};
        ct_tensor *cond = ct_from_data(mask, 1, (int64_t[]){6}, CT_BOOL, device);
        ct_tensor *zeros = ct_zeros(1, (int64_t[]){6}, dt, device);
        ct_tensor *w = ct_where(cond, flat, zeros);
        double complex selected[6];
        for (int i = 0; i < 6; i++) selected[i] = mask[i] ? transposed[i] : 0;
        check_values(w, selected, 6, "where");
        ct_release(x);
        ct_release(cat);
        ct_release(index);
        ct_release(flat);
        ct_release(picked);
        ct_release(cond);
        ct_release(zeros);
        ct_release(w);
    }
    ct_release(z);
    ct_release(m);
    ct_release(t);
    ct_release(c);
}

DEVICE_TEST(test_dtype_complex_printing) {
    double complex v[3] = {CMPLX(1, 2), CMPLX(-0.5, -0.0), CMPLX(NAN, INFINITY)};
    ct_tensor *z = c128(v, 3, device);
    char *s = ct_format(z);
    CHECK_NOT_NULL(s);
    /* one width for all: the widest, -0.5000-0.0000j */
    const char *want = "tensor([ 1.0000+2.0000j, -0.5000-0.0000j,        nan+infj], "
                       "dtype=complex128,";
    if (s && strncmp(s, want, strlen(want)) != 0) ct_test_fail(__FILE__, __LINE__, "printed %s", s);
    ct_free(s);
    ct_tensor *whole = ct_full_complex(1, (int64_t[]){2}, (ct_complex128){1, -3}, CT_C64, device);
    s = ct_format(whole);
    want = "tensor([1.-3.j, 1.-3.j], dtype=complex64, device=";
    if (s && strncmp(s, want, strlen(want)) != 0) ct_test_fail(__FILE__, __LINE__, "printed %s", s);
    ct_free(s);
    ct_release(whole);
    ct_release(z);
}

/* Ops without a complex form name themselves (autograd through complex tensors:
 * test_autograd_complex.c). */
DEVICE_TEST(test_dtype_complex_refused) {
    ct_tensor *z = ct_ones(1, (int64_t[]){3}, CT_C64, device);
    CHECK(ct_relu(z) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_relu: not defined for complex tensors (argument 1 is complex64)");
    CHECK(ct_lt(z, z) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_lt: not defined for complex tensors");
    CHECK(ct_floor(z) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "ct_floor");
    CHECK(ct_argmax(z, 0, false) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "not defined for complex tensors");
    ct_release(z);
}

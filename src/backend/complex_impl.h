/* Complex arithmetic and elementary functions for the elementwise kernels, written once for
 * the CPU and the CUDA backend (header-only; host and device functions under nvcc, as
 * core/dtype_impl.h's helpers), on ct_complex128. complex64 computes in complex128 and rounds
 * each part once when stored: the same results on every backend, and no intermediate
 * overflow for complex64.
 *
 * Special values follow C99's Annex G (G.5 for * and /, G.6 for the functions), which the
 * array API standard's special cases restate: an infinite part makes an infinity, a NaN
 * propagates unless the function has a finite limit there, and the branch cuts are C's (the
 * sign of a zero part picks the side of a cut: log and sqrt along the negative real axis).
 * Where Annex G leaves a sign unspecified the comment of the function says which is given. */
#ifndef CT_BACKEND_COMPLEX_IMPL_H
#define CT_BACKEND_COMPLEX_IMPL_H

#include <math.h>

#include "backend/backend_impl.h"
#include "core/dtype_impl.h"

#define CT_CX_FN CT_DTYPE_FN

typedef ct_complex128 ct__z;

CT_CX_FN ct__z ct__z_make(double re, double im) {
    ct__z z = {re, im};
    return z;
}

CT_CX_FN ct__z ct__z_add(ct__z a, ct__z b) { return ct__z_make(a.re + b.re, a.im + b.im); }

CT_CX_FN ct__z ct__z_sub(ct__z a, ct__z b) { return ct__z_make(a.re - b.re, a.im - b.im); }

CT_CX_FN ct__z ct__z_neg(ct__z a) { return ct__z_make(-a.re, -a.im); }

CT_CX_FN ct__z ct__z_conj(ct__z a) { return ct__z_make(a.re, -a.im); }

/* a * b with Annex G's recovery of infinities (G.5.1's _Cmultd): a product that comes out
 * NaN + NaN i from an infinite operand is an infinity. */
CT_CX_FN ct__z ct__z_mul(ct__z x, ct__z y) {
    double a = x.re, b = x.im, c = y.re, d = y.im;
    double ac = a * c, bd = b * d, ad = a * d, bc = b * c;
    double re = ac - bd, im = ad + bc;
    if (isnan(re) && isnan(im)) {
        bool recalc = false;
        if (isinf(a) || isinf(b)) { /* a is infinite: box the infinity, NaNs to 0 */
            a = copysign(isinf(a) ? 1.0 : 0.0, a);
            b = copysign(isinf(b) ? 1.0 : 0.0, b);
            if (isnan(c)) c = copysign(0.0, c);
            if (isnan(d)) d = copysign(0.0, d);
            recalc = true;
        }
        if (isinf(c) || isinf(d)) {
            c = copysign(isinf(c) ? 1.0 : 0.0, c);
            d = copysign(isinf(d) ? 1.0 : 0.0, d);
            if (isnan(a)) a = copysign(0.0, a);
            if (isnan(b)) b = copysign(0.0, b);
            recalc = true;
        }
        if (!recalc && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {
            /* overflow in the parts: recover the infinities */
            if (isnan(a)) a = copysign(0.0, a);
            if (isnan(b)) b = copysign(0.0, b);
            if (isnan(c)) c = copysign(0.0, c);
            if (isnan(d)) d = copysign(0.0, d);
            recalc = true;
        }
        if (recalc) {
            re = INFINITY * (a * c - b * d);
            im = INFINITY * (a * d + b * c);
        }
    }
    return ct__z_make(re, im);
}

/* a / b, scaled against overflow and underflow, with Annex G's recovery (G.5.1's _Cdivd):
 * x / 0 is an infinity for a nonzero x, x / inf is 0 for a finite x. */
CT_CX_FN ct__z ct__z_div(ct__z x, ct__z y) {
    double a = x.re, b = x.im, c = y.re, d = y.im;
    int ilogbw = 0;
    double logbw = logb(fmax(fabs(c), fabs(d)));
    if (isfinite(logbw)) {
        ilogbw = (int)logbw;
        c = scalbn(c, -ilogbw);
        d = scalbn(d, -ilogbw);
    }
    double denom = c * c + d * d;
    double re = scalbn((a * c + b * d) / denom, -ilogbw);
    double im = scalbn((b * c - a * d) / denom, -ilogbw);
    if (isnan(re) && isnan(im)) {
        if (denom == 0.0 && (!isnan(a) || !isnan(b))) {
            re = copysign(INFINITY, c) * a;
            im = copysign(INFINITY, c) * b;
        } else if ((isinf(a) || isinf(b)) && isfinite(c) && isfinite(d)) {
            a = copysign(isinf(a) ? 1.0 : 0.0, a);
            b = copysign(isinf(b) ? 1.0 : 0.0, b);
            re = INFINITY * (a * c + b * d);
            im = INFINITY * (b * c - a * d);
        } else if (isinf(logbw) && logbw > 0 && isfinite(a) && isfinite(b)) {
            c = copysign(isinf(c) ? 1.0 : 0.0, c);
            d = copysign(isinf(d) ? 1.0 : 0.0, d);
            re = 0.0 * (a * c + b * d);
            im = 0.0 * (b * c - a * d);
        }
    }
    return ct__z_make(re, im);
}

/* |z| without overflow; inf when a part is infinite, even with a NaN. */
CT_CX_FN double ct__z_abs(ct__z z) { return hypot(z.re, z.im); }

/* z / |z| (0 for 0; NaN + NaN i when a part is NaN); an infinite z gives the unit number in
 * its infinite parts' direction. */
CT_CX_FN ct__z ct__z_sign(ct__z z) {
    if (isnan(z.re) || isnan(z.im)) return ct__z_make(NAN, NAN);
    if (z.re == 0 && z.im == 0) return ct__z_make(0.0, 0.0);
    if (isinf(z.re) || isinf(z.im)) {
        z.re = copysign(isinf(z.re) ? 1.0 : 0.0, z.re);
        z.im = copysign(isinf(z.im) ? 1.0 : 0.0, z.im);
    }
    double r = hypot(z.re, z.im);
    return ct__z_make(z.re / r, z.im / r);
}

/* e^z (G.6.3.1). exp(-inf + i inf) and exp(-inf + i NaN) give +0 + 0i; exp(+inf + i inf) and
 * exp(+inf + i NaN) give +inf + NaN i. Large real parts are split so that e^x overflowing
 * alone does not make inf * 0. */
CT_CX_FN ct__z ct__z_exp(ct__z z) {
    double x = z.re, y = z.im;
    if (y == 0) return ct__z_make(exp(x), y);
    if (isinf(x)) {
        if (x < 0) return isfinite(y) ? ct__z_make(0.0 * cos(y), 0.0 * sin(y)) : ct__z_make(0, 0);
        return isfinite(y) ? ct__z_make(x * cos(y), x * sin(y)) : ct__z_make(x, NAN);
    }
    if (isnan(x) || !isfinite(y)) return ct__z_make(NAN, NAN);
    if (x > 700.0) {
        double half = exp(x / 2);
        return ct__z_make(half * cos(y) * half, half * sin(y) * half);
    }
    double e = exp(x);
    return ct__z_make(e * cos(y), e * sin(y));
}

/* e^z - 1, accurate near 0: e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y/2). The special
 * values are exp's minus 1. */
CT_CX_FN ct__z ct__z_expm1(ct__z z) {
    double x = z.re, y = z.im;
    if (!isfinite(x) || !isfinite(y) || x > 700.0) {
        ct__z e = ct__z_exp(z);
        return ct__z_make(e.re - 1.0, e.im);
    }
    if (y == 0) return ct__z_make(expm1(x), y);
    double s = sin(y / 2);
    return ct__z_make(expm1(x) * cos(y) - 2 * s * s, exp(x) * sin(y));
}

/* The principal log (G.6.3.2): log|z| + i arg z, arg in [-pi, pi] with the cut along the
 * negative real axis (log(-1 + 0i) = i pi, log(-1 - 0i) = -i pi), log(0) = -inf. Near |z| =
 * 1 the real part comes from log1p for accuracy. */
CT_CX_FN ct__z ct__z_log(ct__z z) {
    double ax = fabs(z.re), ay = fabs(z.im);
    double big = fmax(ax, ay), small = fmin(ax, ay);
    double re;
    if (big >= 0.5 && big <= 2.0 && isfinite(ax) && isfinite(ay))
        re = 0.5 * log1p((big - 1) * (big + 1) + small * small);
    else
        re = log(hypot(z.re, z.im));
    return ct__z_make(re, atan2(z.im, z.re));
}

/* log(1 + z), accurate near 0: log|1 + z| = log1p(2x + x^2 + y^2) / 2 while that sum is
 * small. */
CT_CX_FN ct__z ct__z_log1p(ct__z z) {
    double x = z.re, y = z.im;
    if (isfinite(x) && isfinite(y) && fabs(x) < 0.5 && fabs(y) < 0.5)
        return ct__z_make(0.5 * log1p(x * (2 + x) + y * y), atan2(y, 1 + x));
    return ct__z_log(ct__z_make(1 + x, y));
}

/* The principal square root (G.6.4.2), its real part >= 0, the cut along the negative real
 * axis (sqrt(-4 + 0i) = 2i, sqrt(-4 - 0i) = -2i). sqrt(-inf + i NaN) gives NaN + inf i. */
CT_CX_FN ct__z ct__z_sqrt(ct__z z) {
    double x = z.re, y = z.im;
    if (x == 0 && y == 0) return ct__z_make(0.0, y);
    if (isinf(y)) return ct__z_make(INFINITY, y);
    if (isnan(x)) return ct__z_make(NAN, NAN);
    if (isinf(x)) {
        if (x > 0) return ct__z_make(x, isnan(y) ? y : copysign(0.0, y));
        return ct__z_make(isnan(y) ? NAN : 0.0, copysign(INFINITY, isnan(y) ? 1.0 : y));
    }
    if (isnan(y)) return ct__z_make(NAN, NAN);
    double scale = 1.0;
    if (fabs(x) > 0x1p1020 || fabs(y) > 0x1p1020) { /* |x| + |z| would overflow */
        x *= 0.25;
        y *= 0.25;
        scale = 2.0;
    } else if (fabs(x) < 0x1p-1020 && fabs(y) < 0x1p-1020) { /* keep the significant bits */
        x *= 0x1p54;
        y *= 0x1p54;
        scale = 0x1p-27;
    }
    double t = sqrt((fabs(x) + hypot(x, y)) / 2);
    if (x >= 0) return ct__z_make(t * scale, y / (2 * t) * scale);
    return ct__z_make(fabs(y) / (2 * t) * scale, copysign(t, y) * scale);
}

/* sinh x cos y + i cosh x sin y (G.6.2.5); for |x| > 700 the e^|x| / 2 of both is split in two
 * factors. sinh(+-0 + i inf) and sinh(+-0 + i NaN) give +-0 + NaN i; sinh(+-inf + i inf) and
 * sinh(+-inf + i NaN) give +-inf + NaN i. */
CT_CX_FN ct__z ct__z_sinh(ct__z z) {
    double x = z.re, y = z.im;
    if (isfinite(x) && isfinite(y)) {
        if (y == 0) return ct__z_make(sinh(x), y);
        if (fabs(x) > 700.0) {
            double half = exp(fabs(x) / 2);
            return ct__z_make(copysign(half * cos(y) * (half / 2), x), half * sin(y) * (half / 2));
        }
        return ct__z_make(sinh(x) * cos(y), cosh(x) * sin(y));
    }
    if (x == 0) return ct__z_make(x, y - y);
    if (y == 0) return ct__z_make(x, y);
    if (isinf(x))
        return isfinite(y) ? ct__z_make(x * cos(y), INFINITY * sin(y)) : ct__z_make(x, y - y);
    return ct__z_make(NAN, NAN);
}

/* cosh x cos y + i sinh x sin y (G.6.2.4). cosh(+-0 + i inf), cosh(+-0 + i NaN) give NaN + 0i
 * (the zero's sign is x's); cosh(NaN + 0i) gives NaN + 0i. */
CT_CX_FN ct__z ct__z_cosh(ct__z z) {
    double x = z.re, y = z.im;
    if (isfinite(x) && isfinite(y)) {
        if (y == 0) return ct__z_make(cosh(x), copysign(0.0, x) * y);
        if (fabs(x) > 700.0) {
            double half = exp(fabs(x) / 2);
            return ct__z_make(half * cos(y) * (half / 2), copysign(half * sin(y) * (half / 2), x));
        }
        return ct__z_make(cosh(x) * cos(y), sinh(x) * sin(y));
    }
    if (x == 0) return ct__z_make(y - y, x);
    if (y == 0) return ct__z_make(x * x, copysign(0.0, x) * y);
    if (isinf(x))
        return isfinite(y) ? ct__z_make(INFINITY * cos(y), x * sin(y))
                           : ct__z_make(INFINITY, y - y);
    return ct__z_make(NAN, NAN);
}

/* tanh (G.6.2.6, with C23's and the array API standard's tanh(+-0 + i inf) = +-0 + NaN i),
 * Kahan's formula for finite z: with t = tan y, b = 1 + t^2, s = sinh x, r = sqrt(1 + s^2),
 * tanh z = (b r s + i t) / (1 + b s^2). tanh(+-inf + iy) is +-1 + 0i with sin(2y)'s sign (+0 for
 * an infinite or NaN y). */
CT_CX_FN ct__z ct__z_tanh(ct__z z) {
    double x = z.re, y = z.im;
    if (isinf(x))
        return ct__z_make(copysign(1.0, x),
                          isfinite(y) ? copysign(0.0, sin(y) * cos(y)) : copysign(0.0, y));
    if (isnan(x)) return ct__z_make(x, y == 0 ? y : NAN);
    if (!isfinite(y)) return ct__z_make(x == 0 ? x : NAN, NAN);
    if (fabs(x) > 22.0) { /* tanh x is +-1 to double precision */
        double e = exp(-2 * fabs(x));
        return ct__z_make(copysign(1.0, x), 4 * sin(y) * cos(y) * e);
    }
    double t = tan(y), b = 1 + t * t, s = sinh(x), r = sqrt(1 + s * s);
    double d = 1 + b * s * s;
    return ct__z_make(b * r * s / d, t / d);
}

/* sin z = -i sinh(iz), cos z = cosh(iz), tan z = -i tanh(iz) (G.6: their special values are
 * those of the hyperbolic functions, rotated). */
CT_CX_FN ct__z ct__z_sin(ct__z z) {
    ct__z w = ct__z_sinh(ct__z_make(-z.im, z.re));
    return ct__z_make(w.im, -w.re);
}

CT_CX_FN ct__z ct__z_cos(ct__z z) { return ct__z_cosh(ct__z_make(-z.im, z.re)); }

CT_CX_FN ct__z ct__z_tan(ct__z z) {
    ct__z w = ct__z_tanh(ct__z_make(-z.im, z.re));
    return ct__z_make(w.im, -w.re);
}

/* ---- the inverse functions: Kahan's formulas ("Branch Cuts for Complex Elementary
 * Functions", 1987) for finite z, through sqrt(1 - z) and sqrt(1 + z) (which neither
 * overflow nor lose the sign of a zero on the cuts), and G.6.1 / G.6.2's special values.
 * The cuts: asin and acos on the real axis outside [-1, 1], atanh on it outside [-1, 1],
 * asinh and atan on the imaginary axis outside [-i, i], acosh on the real axis below 1. */

#define CT_CX_PI 3.14159265358979323846

/* acos (G.6.1.1): acos(+-inf + i NaN) gives NaN + inf i. */
CT_CX_FN ct__z ct__z_acos(ct__z z) {
    double x = z.re, y = z.im;
    if (isinf(y)) {
        double re = isnan(x)   ? NAN
                    : isinf(x) ? (x < 0 ? 0.75 * CT_CX_PI : 0.25 * CT_CX_PI)
                               : CT_CX_PI / 2;
        return ct__z_make(re, -y);
    }
    if (isinf(x)) {
        if (isnan(y)) return ct__z_make(NAN, INFINITY);
        return ct__z_make(x < 0 ? CT_CX_PI : 0.0, copysign(INFINITY, -y));
    }
    if (isnan(x)) return ct__z_make(NAN, NAN);
    if (isnan(y)) return ct__z_make(x == 0 ? CT_CX_PI / 2 : NAN, NAN);
    ct__z s1 = ct__z_sqrt(ct__z_make(1 - x, -y)), s2 = ct__z_sqrt(ct__z_make(1 + x, y));
    return ct__z_make(2 * atan2(s1.re, s2.re), asinh(s2.re * s1.im - s2.im * s1.re));
}

/* acosh z = +-i acos z, the sign that makes the real part >= 0 (G.6.2.1): i acos z above the
 * real axis (a zero imaginary part of + sign included), -i acos z below it; off the axis (a
 * NaN imaginary part: acosh(+-inf + NaN i) = inf + NaN i) the sign whose real part is >= 0. */
CT_CX_FN ct__z ct__z_acosh(ct__z z) {
    ct__z w = ct__z_acos(z);
    ct__z r = signbit(z.im) ? ct__z_make(w.im, -w.re) : ct__z_make(-w.im, w.re);
    return r.re < 0 ? ct__z_make(-r.re, -r.im) : r;
}

/* asinh (G.6.2.2); asinh(NaN + i inf) gives inf + NaN i. */
CT_CX_FN ct__z ct__z_asinh(ct__z z) {
    double x = z.re, y = z.im;
    if (isinf(x) || isinf(y)) {
        if (isnan(x)) return ct__z_make(INFINITY, NAN);
        if (isnan(y)) return ct__z_make(x, NAN);
        double im = isinf(x) && isinf(y) ? 0.25 * CT_CX_PI : isinf(y) ? CT_CX_PI / 2 : 0.0;
        return ct__z_make(copysign(INFINITY, x), copysign(im, y));
    }
    if (isnan(x)) return ct__z_make(NAN, y == 0 ? y : NAN);
    if (isnan(y)) return ct__z_make(NAN, NAN);
    /* asinh z = i asin(-i z); asin by Kahan: atan2(Re w, Re(s1 s2)) + i asinh(Im(conj(s1) s2))
     * with w = -i z = y - i x, s1 = sqrt(1 - w), s2 = sqrt(1 + w) */
    double wr = y, wi = -x;
    ct__z s1 = ct__z_sqrt(ct__z_make(1 - wr, -wi)), s2 = ct__z_sqrt(ct__z_make(1 + wr, wi));
    double are = atan2(wr, s1.re * s2.re - s1.im * s2.im);
    double aim = asinh(s1.re * s2.im - s1.im * s2.re);
    return ct__z_make(-aim, are);
}

/* asin z = -i asinh(i z) (G.6: its special values are asinh's, rotated). */
CT_CX_FN ct__z ct__z_asin(ct__z z) {
    ct__z w = ct__z_asinh(ct__z_make(-z.im, z.re));
    return ct__z_make(w.im, -w.re);
}

/* atanh (G.6.2.3): Re = log1p(4x / ((1 - x)^2 + y^2)) / 4, Im = atan2(2y, (1 - x)(1 + x) - y^2) /
 * 2, and for |z| > 2^500 (where the squares overflow) Re = Re(1 / z), Im = +-pi/2. */
CT_CX_FN ct__z ct__z_atanh(ct__z z) {
    double x = z.re, y = z.im;
    if (isinf(x) || isinf(y)) {
        if (isinf(y))
            return ct__z_make(isnan(x) ? 0.0 : copysign(0.0, x), copysign(CT_CX_PI / 2, y));
        return ct__z_make(copysign(0.0, x), isnan(y) ? y : copysign(CT_CX_PI / 2, y));
    }
    if (isnan(x)) return ct__z_make(NAN, NAN);
    if (isnan(y)) return ct__z_make(x == 0 ? x : NAN, NAN);
    if (fabs(x) > 0x1p500 || fabs(y) > 0x1p500) {
        ct__z r = ct__z_div(ct__z_make(1.0, 0.0), z);
        return ct__z_make(r.re, copysign(CT_CX_PI / 2, y));
    }
    double ax = fabs(x);
    double re = 0.25 * log1p(4 * ax / ((1 - ax) * (1 - ax) + y * y));
    double im = 0.5 * atan2(2 * y, (1 - ax) * (1 + ax) - y * y);
    return ct__z_make(copysign(re, x), im);
}

/* atan z = -i atanh(i z). */
CT_CX_FN ct__z ct__z_atan(ct__z z) {
    ct__z w = ct__z_atanh(ct__z_make(-z.im, z.re));
    return ct__z_make(w.im, -w.re);
}

/* log2 and log10 as the standard defines them: log z / log 2, log z / log 10. */
CT_CX_FN ct__z ct__z_log_base(ct__z z, double inv_ln) {
    ct__z l = ct__z_log(z);
    return ct__z_make(l.re * inv_ln, l.im * inv_ln);
}

/* z^n for an integer 0 < |n| < 100 as NumPy computes it: products of repeated squares (z^1
 * is z, z^2 is z z, exact where the products are), the reciprocal for a negative n. */
CT_CX_FN ct__z ct__z_pow_int(ct__z z, int n) {
    ct__z r = z, square = z;
    bool started = false;
    for (int k = n < 0 ? -n : n; k; k >>= 1) {
        if (k & 1) {
            r = started ? ct__z_mul(r, square) : square;
            started = true;
        }
        if (k > 1) square = ct__z_mul(square, square);
    }
    return n < 0 ? ct__z_div(ct__z_make(1.0, 0.0), r) : r;
}

/* z^w = e^(w log z); z^0 is 1 (also for a NaN or infinite z), 0^w is 0 for Re w > 0 (the
 * limit, and C's cpow; NumPy gives NaN where w is not real); a small integer w by products
 * (ct__z_pow_int), which keep a zero's signs. */
CT_CX_FN ct__z ct__z_pow(ct__z z, ct__z w) {
    if (w.re == 0 && w.im == 0) return ct__z_make(1.0, 0.0);
    if (w.im == 0 && fabs(w.re) < 100 && w.re == (double)(int)w.re)
        return ct__z_pow_int(z, (int)w.re);
    if (z.re == 0 && z.im == 0 && w.re > 0) return ct__z_make(0.0, 0.0);
    return ct__z_exp(ct__z_mul(w, ct__z_log(z)));
}

/* Each part rounded half to even (the standard's round of a complex number). */
CT_CX_FN ct__z ct__z_round(ct__z z) { return ct__z_make(nearbyint(z.re), nearbyint(z.im)); }

/* ---- the ops of op_list.h on complex operands ----
 * The kernels load each operand as a complex number (ct__load_c128), take the result below
 * and store it into the output's dtype (ct__store_c128): a complex result into a complex
 * output, and the results of abs (|z|), the predicates and the comparisons (0 or 1) in the
 * real part, into the real or bool output the op layer made. */

/* The unary ops with a complex form (the op layer refuses the others, naming them). */
CT_CX_FN bool ct__z_unary_defined(ct__unary_op op) {
    switch (op) {
    case CT_UOP_NEG:
    case CT_UOP_ABS:
    case CT_UOP_SIGN:
    case CT_UOP_SQRT:
    case CT_UOP_EXP:
    case CT_UOP_EXPM1:
    case CT_UOP_LOG:
    case CT_UOP_LOG1P:
    case CT_UOP_LOG2:
    case CT_UOP_LOG10:
    case CT_UOP_SIN:
    case CT_UOP_COS:
    case CT_UOP_TAN:
    case CT_UOP_SINH:
    case CT_UOP_COSH:
    case CT_UOP_TANH:
    case CT_UOP_ASIN:
    case CT_UOP_ACOS:
    case CT_UOP_ATAN:
    case CT_UOP_ASINH:
    case CT_UOP_ACOSH:
    case CT_UOP_ATANH:
    case CT_UOP_SQUARE:
    case CT_UOP_RECIPROCAL:
    case CT_UOP_ROUND:
    case CT_UOP_ISNAN:
    case CT_UOP_ISINF:
    case CT_UOP_ISFINITE: return true;
    default: return false;
    }
}

CT_CX_FN ct__z ct__z_unary(ct__unary_op op, ct__z z) {
    switch (op) {
    case CT_UOP_NEG: return ct__z_neg(z);
    case CT_UOP_ABS: return ct__z_make(ct__z_abs(z), 0.0);
    case CT_UOP_SIGN: return ct__z_sign(z);
    case CT_UOP_SQRT: return ct__z_sqrt(z);
    case CT_UOP_EXP: return ct__z_exp(z);
    case CT_UOP_EXPM1: return ct__z_expm1(z);
    case CT_UOP_LOG: return ct__z_log(z);
    case CT_UOP_LOG1P: return ct__z_log1p(z);
    case CT_UOP_LOG2: return ct__z_log_base(z, 1.4426950408889634074);   /* 1 / ln 2 */
    case CT_UOP_LOG10: return ct__z_log_base(z, 0.43429448190325182765); /* 1 / ln 10 */
    case CT_UOP_SIN: return ct__z_sin(z);
    case CT_UOP_COS: return ct__z_cos(z);
    case CT_UOP_TAN: return ct__z_tan(z);
    case CT_UOP_SINH: return ct__z_sinh(z);
    case CT_UOP_COSH: return ct__z_cosh(z);
    case CT_UOP_TANH: return ct__z_tanh(z);
    case CT_UOP_ASIN: return ct__z_asin(z);
    case CT_UOP_ACOS: return ct__z_acos(z);
    case CT_UOP_ATAN: return ct__z_atan(z);
    case CT_UOP_ASINH: return ct__z_asinh(z);
    case CT_UOP_ACOSH: return ct__z_acosh(z);
    case CT_UOP_ATANH: return ct__z_atanh(z);
    case CT_UOP_SQUARE: return ct__z_mul(z, z);
    case CT_UOP_RECIPROCAL: return ct__z_div(ct__z_make(1.0, 0.0), z);
    case CT_UOP_ROUND: return ct__z_round(z);
    case CT_UOP_ISNAN: return ct__z_make(isnan(z.re) || isnan(z.im), 0.0);
    case CT_UOP_ISINF: return ct__z_make(isinf(z.re) || isinf(z.im), 0.0);
    case CT_UOP_ISFINITE: return ct__z_make(isfinite(z.re) && isfinite(z.im), 0.0);
    default: return ct__z_make(NAN, NAN);
    }
}

/* The binary ops with a complex form. */
CT_CX_FN bool ct__z_binary_defined(ct__binary_op op) {
    return op == CT_BOP_ADD || op == CT_BOP_SUB || op == CT_BOP_MUL || op == CT_BOP_DIV ||
           op == CT_BOP_POW || op == CT_BOP_EQ || op == CT_BOP_NE;
}

CT_CX_FN ct__z ct__z_binary(ct__binary_op op, ct__z a, ct__z b) {
    switch (op) {
    case CT_BOP_ADD: return ct__z_add(a, b);
    case CT_BOP_SUB: return ct__z_sub(a, b);
    case CT_BOP_MUL: return ct__z_mul(a, b);
    case CT_BOP_DIV: return ct__z_div(a, b);
    case CT_BOP_POW: return ct__z_pow(a, b);
    case CT_BOP_EQ: return ct__z_make(a.re == b.re && a.im == b.im, 0.0);
    case CT_BOP_NE: return ct__z_make(a.re != b.re || a.im != b.im, 0.0);
    default: return ct__z_make(NAN, NAN);
    }
}

#endif

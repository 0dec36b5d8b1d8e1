/* The CPU FFT's transforms, in double (cpu_fft_impl.h): the butterflies of the mixed-radix
 * stages, Bluestein's convolution and the real transforms' pre- and post-processing. The
 * plan's tables are double (re, im) pairs. */
#include <stdint.h>

#include "backend/cpu/cpu_fft_impl.h"

typedef struct {
    double re, im;
} cpx;

static inline cpx mul(cpx a, cpx b) {
    return (cpx){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
static inline cpx add(cpx a, cpx b) { return (cpx){a.re + b.re, a.im + b.im}; }
static inline cpx sub(cpx a, cpx b) { return (cpx){a.re - b.re, a.im - b.im}; }
static inline cpx conjugate(cpx a) { return (cpx){a.re, -a.im}; }
/* sign * i * a, sign = +-1: multiplications by +-1 are exact. */
static inline cpx rot(cpx a, double sign) { return (cpx){-sign * a.im, sign * a.re}; }

/* Element i of an input: a (re, im) pair, or a real, widened from float where it is one. */
static inline cpx load_pair(ct__fft_input in, int64_t i) {
    if (in.f32) {
        const float *p = (const float *)in.base + 2 * i * in.stride;
        return (cpx){p[0], p[1]};
    }
    const double *p = (const double *)in.base + 2 * i * in.stride;
    return (cpx){p[0], p[1]};
}
static inline double load_real(ct__fft_input in, int64_t i) {
    return in.f32 ? ((const float *)in.base)[i * in.stride]
                  : ((const double *)in.base)[i * in.stride];
}

static ct__fft_input doubles(const void *base) { return (ct__fft_input){base, 1, false}; }

/* Radix 2: out[k], out[k + m] <- t0 + t1, t0 - t1 with t1 twiddled (none at k = 0). */
static void radix2(cpx *out, int64_t m, const cpx *tw) {
    for (int64_t k = 0; k < m; k++) {
        cpx t0 = out[k], t1 = k ? mul(out[k + m], tw[k]) : out[k + m];
        out[k] = add(t0, t1);
        out[k + m] = sub(t0, t1);
    }
}

/* Radix 3: w_3 = -1/2 + sign i sqrt(3)/2. */
static void radix3(cpx *out, int64_t m, const cpx *tw, double sign) {
    const double half = 0.5, s3 = 0.86602540378443864676372317075294;
    for (int64_t k = 0; k < m; k++) {
        cpx t0 = out[k], t1 = out[k + m], t2 = out[k + 2 * m];
        if (k) {
            t1 = mul(t1, tw[2 * k]);
            t2 = mul(t2, tw[2 * k + 1]);
        }
        cpx sum = add(t1, t2), dif = sub(t1, t2);
        cpx mid = {t0.re - half * sum.re, t0.im - half * sum.im};
        cpx rd = rot((cpx){s3 * dif.re, s3 * dif.im}, sign);
        out[k] = add(t0, sum);
        out[k + m] = add(mid, rd);
        out[k + 2 * m] = sub(mid, rd);
    }
}

/* Radix 4: w_4 = sign i. */
static void radix4(cpx *out, int64_t m, const cpx *tw, double sign) {
    for (int64_t k = 0; k < m; k++) {
        cpx t0 = out[k], t1 = out[k + m], t2 = out[k + 2 * m], t3 = out[k + 3 * m];
        if (k) {
            t1 = mul(t1, tw[3 * k]);
            t2 = mul(t2, tw[3 * k + 1]);
            t3 = mul(t3, tw[3 * k + 2]);
        }
        cpx s02 = add(t0, t2), d02 = sub(t0, t2);
        cpx s13 = add(t1, t3), d13 = rot(sub(t1, t3), sign);
        out[k] = add(s02, s13);
        out[k + m] = add(d02, d13);
        out[k + 2 * m] = sub(s02, s13);
        out[k + 3 * m] = sub(d02, d13);
    }
}

/* Radix 5: with a_r = t_r + t_{5-r}, b_r = t_r - t_{5-r}, X_q = t0 + sum_r a_r cos(2 pi rq/5)
 * +- sign i sum_r b_r sin(2 pi rq/5) (+ for q = 1, 2; - for q = 4, 3). */
static void radix5(cpx *out, int64_t m, const cpx *tw, double sign) {
    const double c1 = 0.30901699437494742410229341718282, c2 = -0.80901699437494742410229341718282,
                 s1 = 0.95105651629515357211643933337938, s2 = 0.58778525229247312916870595463907;
    for (int64_t k = 0; k < m; k++) {
        cpx t[5];
        for (int r = 0; r < 5; r++) t[r] = out[k + r * m];
        if (k)
            for (int r = 1; r < 5; r++) t[r] = mul(t[r], tw[4 * k + r - 1]);
        cpx a1 = add(t[1], t[4]), a2 = add(t[2], t[3]);
        cpx b1 = sub(t[1], t[4]), b2 = sub(t[2], t[3]);
        cpx e1 = {t[0].re + c1 * a1.re + c2 * a2.re, t[0].im + c1 * a1.im + c2 * a2.im};
        cpx e2 = {t[0].re + c2 * a1.re + c1 * a2.re, t[0].im + c2 * a1.im + c1 * a2.im};
        cpx o1 = rot((cpx){s1 * b1.re + s2 * b2.re, s1 * b1.im + s2 * b2.im}, sign);
        cpx o2 = rot((cpx){s2 * b1.re - s1 * b2.re, s2 * b1.im - s1 * b2.im}, sign);
        out[k] = (cpx){t[0].re + a1.re + a2.re, t[0].im + a1.im + a2.im};
        out[k + m] = add(e1, o1);
        out[k + 4 * m] = sub(e1, o1);
        out[k + 2 * m] = add(e2, o2);
        out[k + 3 * m] = sub(e2, o2);
    }
}

/* Any odd radix p <= CT_FFT_GENERIC_MAX, the radix-5 formula with the p roots of the plan. */
static void radix_generic(cpx *out, int p, int64_t m, const cpx *tw, const cpx *roots) {
    int h = p / 2;
    cpx t0, a[CT_FFT_GENERIC_MAX / 2], b[CT_FFT_GENERIC_MAX / 2];
    for (int64_t k = 0; k < m; k++) {
        t0 = out[k];
        cpx total = t0;
        for (int r = 1; r <= h; r++) {
            cpx x = out[k + r * m], y = out[k + (p - r) * m];
            if (k) {
                x = mul(x, tw[k * (p - 1) + r - 1]);
                y = mul(y, tw[k * (p - 1) + p - r - 1]);
            }
            a[r - 1] = add(x, y);
            b[r - 1] = sub(x, y);
            total = add(total, a[r - 1]);
        }
        out[k] = total;
        for (int q = 1; q <= h; q++) {
            cpx sa = {0, 0}, sb = {0, 0};
            int idx = 0;
            for (int r = 1; r <= h; r++) {
                idx += q;
                if (idx >= p) idx -= p;
                double c = roots[idx].re, s = roots[idx].im; /* s carries the sign */
                sa.re += a[r - 1].re * c;
                sa.im += a[r - 1].im * c;
                sb.re += b[r - 1].re * s;
                sb.im += b[r - 1].im * s;
            }
            out[k + q * m] = (cpx){t0.re + sa.re - sb.im, t0.im + sa.im + sb.re};
            out[k + (p - q) * m] = (cpx){t0.re + sa.re + sb.im, t0.im + sa.im - sb.re};
        }
    }
}

/* Stage st of a mixed-radix plan: the transform of the input's elements first,
 * first + step, ... (its stage-st length) into out[0 .. p m). */
static void mixed(const ct__fft_plan *plan, int st, cpx *out, ct__fft_input in, int64_t first,
                  int64_t step) {
    const ct__fft_stage *g = &plan->stage[st];
    int p = g->p;
    int64_t m = g->m;
    if (m == 1)
        for (int r = 0; r < p; r++) out[r] = load_pair(in, first + r * step);
    else
        for (int r = 0; r < p; r++)
            mixed(plan, st + 1, out + r * m, in, first + r * step, step * p);
    const cpx *tw = g->tw;
    double sign = (double)plan->sign;
    switch (p) {
    case 2: radix2(out, m, tw); break;
    case 3: radix3(out, m, tw, sign); break;
    case 4: radix4(out, m, tw, sign); break;
    case 5: radix5(out, m, tw, sign); break;
    default: radix_generic(out, p, m, tw, g->roots); break;
    }
}

/* Bluestein: a_j = x_j c_j (zero past n), A = FFT_M(a), C = FFT_M(conjugate(A filter)), then
 * X_k = c_k conjugate(C_k) (the filter carries the 1/M of the inverse transform). */
static void bluestein(const ct__fft_plan *plan, ct__fft_input in, cpx *out, cpx *scratch) {
    int64_t n = plan->n, big = plan->blue_m;
    const cpx *chirp = plan->chirp, *filter = plan->filter;
    cpx *a = scratch, *spectrum = scratch + big, *rest = scratch + 2 * big;
    for (int64_t j = 0; j < n; j++) a[j] = mul(load_pair(in, j), chirp[j]);
    for (int64_t j = n; j < big; j++) a[j] = (cpx){0, 0};
    ct__fft_exec_c2c(plan->inner, doubles(a), (double *)spectrum, (double *)rest);
    for (int64_t k = 0; k < big; k++) a[k] = conjugate(mul(spectrum[k], filter[k]));
    ct__fft_exec_c2c(plan->inner, doubles(a), (double *)spectrum, (double *)rest);
    for (int64_t k = 0; k < n; k++) out[k] = mul(chirp[k], conjugate(spectrum[k]));
}

void ct__fft_exec_c2c(const ct__fft_plan *plan, ct__fft_input in, double *out, double *scratch) {
    cpx *y = (cpx *)out;
    if (plan->blue_m)
        bluestein(plan, in, y, (cpx *)scratch);
    else if (plan->stages)
        mixed(plan, 0, y, in, 0, 1);
    else
        y[0] = load_pair(in, 0);
}

/* Even n = 2h: z_j = x_2j + i x_2j+1, Z = FFT_h(z); with E_k = (Z_k + conj Z_{h-k}) / 2 and
 * O_k = -i (Z_k - conj Z_{h-k}) / 2, X_k = E_k + w^k O_k and X_{h-k} = conj E_k +
 * w^{h-k} conj O_k (w = e^{-2 pi i / n}); X_0 and X_h from Z_0 alone. Contiguous reals are
 * z's pairs as they lie. */
void ct__fft_exec_r2c(const ct__fft_plan *plan, ct__fft_input in, double *out, double *scratch) {
    int64_t n = plan->n;
    cpx *y = (cpx *)out, *work = (cpx *)scratch;
    if (n % 2) {
        for (int64_t j = 0; j < n; j++) work[j] = (cpx){load_real(in, j), 0};
        ct__fft_exec_c2c(plan->sub, doubles(work), (double *)(work + n), (double *)(work + 2 * n));
        for (int64_t k = 0; k <= n / 2; k++) y[k] = work[n + k];
        return;
    }
    int64_t h = n / 2;
    const cpx *w = plan->rtw;
    ct__fft_input z = in;
    if (in.stride != 1) {
        for (int64_t j = 0; j < h; j++)
            work[j] = (cpx){load_real(in, 2 * j), load_real(in, 2 * j + 1)};
        z = doubles(work);
    }
    ct__fft_exec_c2c(plan->sub, z, out, (double *)(work + h));
    const double half = 0.5;
    cpx z0 = y[0];
    y[0] = (cpx){z0.re + z0.im, 0};
    y[h] = (cpx){z0.re - z0.im, 0};
    for (int64_t k = 1; k <= h - k; k++) {
        cpx zk = y[k], zj = y[h - k];
        cpx e = {half * (zk.re + zj.re), half * (zk.im - zj.im)};
        /* -i (zk - conj zj) / 2 */
        cpx o = {half * (zk.im + zj.im), -half * (zk.re - zj.re)};
        y[k] = add(e, mul(w[k], o));
        if (h - k != k) y[h - k] = add(conjugate(e), mul(w[h - k], conjugate(o)));
    }
}

/* Even n = 2h: Z'_k = (X_k + conj X_{h-k}) + i (X_k - conj X_{h-k}) v^k (v = e^{2 pi i / n},
 * twice z's transform), z = IFFT_h(Z') unnormalised gives n times the even and odd samples. */
void ct__fft_exec_c2r(const ct__fft_plan *plan, ct__fft_input in, double *out, double *scratch) {
    int64_t n = plan->n;
    cpx *work = (cpx *)scratch;
    if (n % 2) {
        work[0] = (cpx){load_pair(in, 0).re, 0};
        for (int64_t k = 1; k <= n / 2; k++) {
            work[k] = load_pair(in, k);
            work[n - k] = conjugate(work[k]);
        }
        ct__fft_exec_c2c(plan->sub, doubles(work), (double *)(work + n), (double *)(work + 2 * n));
        for (int64_t j = 0; j < n; j++) out[j] = work[n + j].re;
        return;
    }
    int64_t h = n / 2;
    const cpx *v = plan->rtw;
    double x0 = load_pair(in, 0).re, xh = load_pair(in, h).re;
    work[0] = (cpx){x0 + xh, x0 - xh};
    for (int64_t k = 1; k < h; k++) {
        cpx xk = load_pair(in, k), xj = conjugate(load_pair(in, h - k));
        cpx d = mul(sub(xk, xj), v[k]);
        work[k] = add(add(xk, xj), rot(d, 1));
    }
    ct__fft_exec_c2c(plan->sub, doubles(work), out, (double *)(work + h));
}

/* The CPU FFT's transforms in one precision (cpu_fft_exec.c), included once per element type
 * with CT_FFT_T (float or double) and CT_FFT_FN(name) (name suffixed by the type) defined.
 * Every operation is in CT_FFT_T; the plan's tables are pairs of CT_FFT_T (cpu_fft_impl.h). */

typedef struct {
    CT_FFT_T re, im;
} CT_FFT_FN(cpx);
#define CPX CT_FFT_FN(cpx)

static inline CPX CT_FFT_FN(mul)(CPX a, CPX b) {
    return (CPX){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
static inline CPX CT_FFT_FN(add)(CPX a, CPX b) { return (CPX){a.re + b.re, a.im + b.im}; }
static inline CPX CT_FFT_FN(sub)(CPX a, CPX b) { return (CPX){a.re - b.re, a.im - b.im}; }
static inline CPX CT_FFT_FN(conj)(CPX a) { return (CPX){a.re, -a.im}; }
/* sign * i * a, sign = +-1: multiplications by +-1 are exact. */
static inline CPX CT_FFT_FN(rot)(CPX a, CT_FFT_T sign) { return (CPX){-sign * a.im, sign * a.re}; }

/* Radix 2: out[k], out[k + m] <- t0 + t1, t0 - t1 with t1 twiddled (none at k = 0). */
static void CT_FFT_FN(radix2)(CPX *out, int64_t m, const CPX *tw) {
    for (int64_t k = 0; k < m; k++) {
        CPX t0 = out[k], t1 = k ? CT_FFT_FN(mul)(out[k + m], tw[k]) : out[k + m];
        out[k] = CT_FFT_FN(add)(t0, t1);
        out[k + m] = CT_FFT_FN(sub)(t0, t1);
    }
}

/* Radix 3: w_3 = -1/2 + sign i sqrt(3)/2. */
static void CT_FFT_FN(radix3)(CPX *out, int64_t m, const CPX *tw, CT_FFT_T sign) {
    const CT_FFT_T half = (CT_FFT_T)0.5, s3 = (CT_FFT_T)0.86602540378443864676372317075294;
    for (int64_t k = 0; k < m; k++) {
        CPX t0 = out[k], t1 = out[k + m], t2 = out[k + 2 * m];
        if (k) {
            t1 = CT_FFT_FN(mul)(t1, tw[2 * k]);
            t2 = CT_FFT_FN(mul)(t2, tw[2 * k + 1]);
        }
        CPX sum = CT_FFT_FN(add)(t1, t2), dif = CT_FFT_FN(sub)(t1, t2);
        CPX mid = {t0.re - half * sum.re, t0.im - half * sum.im};
        CPX rd = CT_FFT_FN(rot)((CPX){s3 * dif.re, s3 * dif.im}, sign);
        out[k] = CT_FFT_FN(add)(t0, sum);
        out[k + m] = CT_FFT_FN(add)(mid, rd);
        out[k + 2 * m] = CT_FFT_FN(sub)(mid, rd);
    }
}

/* Radix 4: w_4 = sign i. */
static void CT_FFT_FN(radix4)(CPX *out, int64_t m, const CPX *tw, CT_FFT_T sign) {
    for (int64_t k = 0; k < m; k++) {
        CPX t0 = out[k], t1 = out[k + m], t2 = out[k + 2 * m], t3 = out[k + 3 * m];
        if (k) {
            t1 = CT_FFT_FN(mul)(t1, tw[3 * k]);
            t2 = CT_FFT_FN(mul)(t2, tw[3 * k + 1]);
            t3 = CT_FFT_FN(mul)(t3, tw[3 * k + 2]);
        }
        CPX s02 = CT_FFT_FN(add)(t0, t2), d02 = CT_FFT_FN(sub)(t0, t2);
        CPX s13 = CT_FFT_FN(add)(t1, t3), d13 = CT_FFT_FN(rot)(CT_FFT_FN(sub)(t1, t3), sign);
        out[k] = CT_FFT_FN(add)(s02, s13);
        out[k + m] = CT_FFT_FN(add)(d02, d13);
        out[k + 2 * m] = CT_FFT_FN(sub)(s02, s13);
        out[k + 3 * m] = CT_FFT_FN(sub)(d02, d13);
    }
}

/* Radix 5: with a_r = t_r + t_{5-r}, b_r = t_r - t_{5-r}, X_q = t0 + sum_r a_r cos(2 pi rq/5)
 * +- sign i sum_r b_r sin(2 pi rq/5) (+ for q = 1, 2; - for q = 4, 3). */
static void CT_FFT_FN(radix5)(CPX *out, int64_t m, const CPX *tw, CT_FFT_T sign) {
    const CT_FFT_T c1 = (CT_FFT_T)0.30901699437494742410229341718282,
                   c2 = (CT_FFT_T)-0.80901699437494742410229341718282,
                   s1 = (CT_FFT_T)0.95105651629515357211643933337938,
                   s2 = (CT_FFT_T)0.58778525229247312916870595463907;
    for (int64_t k = 0; k < m; k++) {
        CPX t[5];
        for (int r = 0; r < 5; r++) t[r] = out[k + r * m];
        if (k)
            for (int r = 1; r < 5; r++) t[r] = CT_FFT_FN(mul)(t[r], tw[4 * k + r - 1]);
        CPX a1 = CT_FFT_FN(add)(t[1], t[4]), a2 = CT_FFT_FN(add)(t[2], t[3]);
        CPX b1 = CT_FFT_FN(sub)(t[1], t[4]), b2 = CT_FFT_FN(sub)(t[2], t[3]);
        CPX e1 = {t[0].re + c1 * a1.re + c2 * a2.re, t[0].im + c1 * a1.im + c2 * a2.im};
        CPX e2 = {t[0].re + c2 * a1.re + c1 * a2.re, t[0].im + c2 * a1.im + c1 * a2.im};
        CPX o1 = CT_FFT_FN(rot)((CPX){s1 * b1.re + s2 * b2.re, s1 * b1.im + s2 * b2.im}, sign);
        CPX o2 = CT_FFT_FN(rot)((CPX){s2 * b1.re - s1 * b2.re, s2 * b1.im - s1 * b2.im}, sign);
        out[k] = (CPX){t[0].re + a1.re + a2.re, t[0].im + a1.im + a2.im};
        out[k + m] = CT_FFT_FN(add)(e1, o1);
        out[k + 4 * m] = CT_FFT_FN(sub)(e1, o1);
        out[k + 2 * m] = CT_FFT_FN(add)(e2, o2);
        out[k + 3 * m] = CT_FFT_FN(sub)(e2, o2);
    }
}

/* Any odd radix p <= CT_FFT_GENERIC_MAX, the radix-5 formula with the p roots of the plan. */
static void CT_FFT_FN(radix_generic)(CPX *out, int p, int64_t m, const CPX *tw, const CPX *roots) {
    int h = p / 2;
    CPX t0, a[CT_FFT_GENERIC_MAX / 2], b[CT_FFT_GENERIC_MAX / 2];
    for (int64_t k = 0; k < m; k++) {
        t0 = out[k];
        CPX total = t0;
        for (int r = 1; r <= h; r++) {
            CPX x = out[k + r * m], y = out[k + (p - r) * m];
            if (k) {
                x = CT_FFT_FN(mul)(x, tw[k * (p - 1) + r - 1]);
                y = CT_FFT_FN(mul)(y, tw[k * (p - 1) + p - r - 1]);
            }
            a[r - 1] = CT_FFT_FN(add)(x, y);
            b[r - 1] = CT_FFT_FN(sub)(x, y);
            total = CT_FFT_FN(add)(total, a[r - 1]);
        }
        out[k] = total;
        for (int q = 1; q <= h; q++) {
            CPX sa = {0, 0}, sb = {0, 0};
            int idx = 0;
            for (int r = 1; r <= h; r++) {
                idx += q;
                if (idx >= p) idx -= p;
                CT_FFT_T c = roots[idx].re, s = roots[idx].im; /* s carries the sign */
                sa.re += a[r - 1].re * c;
                sa.im += a[r - 1].im * c;
                sb.re += b[r - 1].re * s;
                sb.im += b[r - 1].im * s;
            }
            out[k + q * m] = (CPX){t0.re + sa.re - sb.im, t0.im + sa.im + sb.re};
            out[k + (p - q) * m] = (CPX){t0.re + sa.re + sb.im, t0.im + sa.im - sb.re};
        }
    }
}

/* Stage st of a mixed-radix plan: the transform of in[0], in[stride], ... (its stage-st
 * length) into out[0 .. p m). */
static void CT_FFT_FN(mixed)(const ct__fft_plan *plan, int st, CPX *out, const CPX *in,
                             int64_t stride) {
    const ct__fft_stage *g = &plan->stage[st];
    int p = g->p;
    int64_t m = g->m;
    if (m == 1)
        for (int r = 0; r < p; r++) out[r] = in[r * stride];
    else
        for (int r = 0; r < p; r++)
            CT_FFT_FN(mixed)(plan, st + 1, out + r * m, in + r * stride, stride * p);
    const CPX *tw = g->tw;
    CT_FFT_T sign = (CT_FFT_T)plan->sign;
    switch (p) {
    case 2: CT_FFT_FN(radix2)(out, m, tw); break;
    case 3: CT_FFT_FN(radix3)(out, m, tw, sign); break;
    case 4: CT_FFT_FN(radix4)(out, m, tw, sign); break;
    case 5: CT_FFT_FN(radix5)(out, m, tw, sign); break;
    default: CT_FFT_FN(radix_generic)(out, p, m, tw, g->roots); break;
    }
}

/* Bluestein: a_j = x_j c_j (zero past n), A = FFT_M(a), C = FFT_M(conj(A filter)), then
 * X_k = c_k conj(C_k) (the filter carries the 1/M of the inverse transform). */
static void CT_FFT_FN(bluestein)(const ct__fft_plan *plan, const CPX *in, int64_t stride, CPX *out,
                                 CPX *scratch) {
    int64_t n = plan->n, big = plan->blue_m;
    const CPX *chirp = plan->chirp, *filter = plan->filter;
    CPX *a = scratch, *spectrum = scratch + big, *rest = scratch + 2 * big;
    for (int64_t j = 0; j < n; j++) a[j] = CT_FFT_FN(mul)(in[j * stride], chirp[j]);
    for (int64_t j = n; j < big; j++) a[j] = (CPX){0, 0};
    CT_FFT_FN(ct__fft_exec_c2c)
    (plan->inner, (const CT_FFT_T *)a, 1, (CT_FFT_T *)spectrum, (CT_FFT_T *)rest);
    for (int64_t k = 0; k < big; k++)
        a[k] = CT_FFT_FN(conj)(CT_FFT_FN(mul)(spectrum[k], filter[k]));
    CT_FFT_FN(ct__fft_exec_c2c)
    (plan->inner, (const CT_FFT_T *)a, 1, (CT_FFT_T *)spectrum, (CT_FFT_T *)rest);
    for (int64_t k = 0; k < n; k++) out[k] = CT_FFT_FN(mul)(chirp[k], CT_FFT_FN(conj)(spectrum[k]));
}

void CT_FFT_FN(ct__fft_exec_c2c)(const ct__fft_plan *plan, const CT_FFT_T *in, int64_t stride,
                                 CT_FFT_T *out, CT_FFT_T *scratch) {
    const CPX *x = (const CPX *)in;
    CPX *y = (CPX *)out;
    if (plan->blue_m)
        CT_FFT_FN(bluestein)(plan, x, stride, y, (CPX *)scratch);
    else if (plan->stages)
        CT_FFT_FN(mixed)(plan, 0, y, x, stride);
    else
        y[0] = x[0];
}

/* Even n = 2h: z_j = x_2j + i x_2j+1, Z = FFT_h(z); with E_k = (Z_k + conj Z_{h-k}) / 2 and
 * O_k = -i (Z_k - conj Z_{h-k}) / 2, X_k = E_k + w^k O_k and X_{h-k} = conj E_k +
 * w^{h-k} conj O_k (w = e^{-2 pi i / n}); X_0 and X_h from Z_0 alone. */
void CT_FFT_FN(ct__fft_exec_r2c)(const ct__fft_plan *plan, const CT_FFT_T *in, int64_t stride,
                                 CT_FFT_T *out, CT_FFT_T *scratch) {
    int64_t n = plan->n;
    CPX *y = (CPX *)out, *work = (CPX *)scratch;
    if (n % 2) {
        for (int64_t j = 0; j < n; j++) work[j] = (CPX){in[j * stride], 0};
        CT_FFT_FN(ct__fft_exec_c2c)
        (plan->sub, (CT_FFT_T *)work, 1, (CT_FFT_T *)(work + n), (CT_FFT_T *)(work + 2 * n));
        for (int64_t k = 0; k <= n / 2; k++) y[k] = work[n + k];
        return;
    }
    int64_t h = n / 2;
    const CPX *z = (const CPX *)in, *w = plan->rtw;
    if (stride != 1) {
        for (int64_t j = 0; j < h; j++)
            work[j] = (CPX){in[2 * j * stride], in[(2 * j + 1) * stride]};
        z = work;
    }
    CT_FFT_FN(ct__fft_exec_c2c)(plan->sub, (const CT_FFT_T *)z, 1, out, (CT_FFT_T *)(work + h));
    const CT_FFT_T half = (CT_FFT_T)0.5;
    CPX z0 = y[0];
    y[0] = (CPX){z0.re + z0.im, 0};
    y[h] = (CPX){z0.re - z0.im, 0};
    for (int64_t k = 1; k <= h - k; k++) {
        CPX zk = y[k], zj = y[h - k];
        CPX e = {half * (zk.re + zj.re), half * (zk.im - zj.im)};
        /* -i (zk - conj zj) / 2 */
        CPX o = {half * (zk.im + zj.im), -half * (zk.re - zj.re)};
        y[k] = CT_FFT_FN(add)(e, CT_FFT_FN(mul)(w[k], o));
        if (h - k != k)
            y[h - k] =
                CT_FFT_FN(add)(CT_FFT_FN(conj)(e), CT_FFT_FN(mul)(w[h - k], CT_FFT_FN(conj)(o)));
    }
}

/* Even n = 2h: Z'_k = (X_k + conj X_{h-k}) + i (X_k - conj X_{h-k}) v^k (v = e^{2 pi i / n},
 * twice z's transform), z = IFFT_h(Z') unnormalised gives n times the even and odd samples. */
void CT_FFT_FN(ct__fft_exec_c2r)(const ct__fft_plan *plan, const CT_FFT_T *in, int64_t stride,
                                 CT_FFT_T *out, CT_FFT_T *scratch) {
    int64_t n = plan->n;
    const CPX *x = (const CPX *)in;
    CPX *work = (CPX *)scratch;
    if (n % 2) {
        work[0] = (CPX){x[0].re, 0};
        for (int64_t k = 1; k <= n / 2; k++) {
            work[k] = x[k * stride];
            work[n - k] = CT_FFT_FN(conj)(x[k * stride]);
        }
        CT_FFT_FN(ct__fft_exec_c2c)
        (plan->sub, (CT_FFT_T *)work, 1, (CT_FFT_T *)(work + n), (CT_FFT_T *)(work + 2 * n));
        for (int64_t j = 0; j < n; j++) out[j] = work[n + j].re;
        return;
    }
    int64_t h = n / 2;
    const CPX *v = plan->rtw;
    CT_FFT_T x0 = x[0].re, xh = x[h * stride].re;
    work[0] = (CPX){x0 + xh, x0 - xh};
    for (int64_t k = 1; k < h; k++) {
        CPX xk = x[k * stride], xj = CT_FFT_FN(conj)(x[(h - k) * stride]);
        CPX d = CT_FFT_FN(mul)(CT_FFT_FN(sub)(xk, xj), v[k]);
        work[k] = CT_FFT_FN(add)(CT_FFT_FN(add)(xk, xj), CT_FFT_FN(rot)(d, (CT_FFT_T)1));
    }
    CT_FFT_FN(ct__fft_exec_c2c)(plan->sub, (const CT_FFT_T *)work, 1, out, (CT_FFT_T *)(work + h));
}

#undef CPX

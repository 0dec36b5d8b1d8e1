/* The typed loops of the CPU attention (cpu_attention.c), included once per compute type with
 * CT_ATT_T (float for f32, f16 and bf16 data; double for f64), CT_ATT_FN(name) (name suffixed
 * by the type) and CT_ATT_EXP(x) defined.
 *
 * Keys are taken in blocks of CT_ATT_BC: a block's keys are loaded (converted to CT_ATT_T)
 * once for the rows that use them, transposed where a product runs along the keys, so every
 * inner loop is an axpy over contiguous elements (vectorised by the CT_CPU_CLONES versions)
 * and no loop reduces across vector lanes. */

/* Rows [r0, r0 + rows) of a (.., n) array of dtype into dst (rows x n, contiguous). */
static void CT_ATT_FN(load_rows)(CT_ATT_T *dst, const char *src, ct_dtype dtype, int64_t r0,
                                 int64_t rows, int64_t n) {
    for (int64_t e = 0; e < rows * n; e++) dst[e] = (CT_ATT_T)ct__ldf(src, r0 * n + e, dtype);
}

/* The same rows transposed: dst (n x rows), dst[c * rows + r] = row r's element c. */
static void CT_ATT_FN(load_cols)(CT_ATT_T *dst, const char *src, ct_dtype dtype, int64_t r0,
                                 int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < n; c++)
            dst[c * rows + r] = (CT_ATT_T)ct__ldf(src, (r0 + r) * n + c, dtype);
}

/* z[j] for keys j0 .. j0 + n - 1 of row i of problem b: dropout's factor, 0 or
 * 1 / (1 - dropout_p) (norm_args_impl.h gives the stream layout). */
static void CT_ATT_FN(dropout_factors)(const ct__attention_args *a, int64_t b, int64_t i,
                                       int64_t j0, int64_t n, CT_ATT_T *z) {
    const CT_ATT_T keep = (CT_ATT_T)(1.0 / (1.0 - a->dropout_p));
    uint64_t e = (uint64_t)(b * a->tq + i) * (uint64_t)a->tk + (uint64_t)j0;
    uint32_t words[4];
    for (int64_t j = 0; j < n; j++, e++) {
        if (j == 0 || e % 4 == 0) ct__philox_stream_block(a->seed, a->offset + e / 4, words);
        z[j] = ct__philox_uniform(words[e % 4], 32) >= a->dropout_p ? keep : 0;
    }
}

/* s[j] = scale * qi . k_(j0 + j) for the block's n keys (kt: d x n), plus the mask's term,
 * -inf for a key row i does not see. */
CT_CPU_CLONES static void CT_ATT_FN(scores)(const ct__attention_args *a, int64_t mbase, int64_t i,
                                            int64_t j0, const CT_ATT_T *restrict qi,
                                            const CT_ATT_T *restrict kt, int64_t n,
                                            CT_ATT_T *restrict s) {
    const CT_ATT_T scale = (CT_ATT_T)a->scale;
    for (int64_t j = 0; j < n; j++) s[j] = 0;
    for (int64_t c = 0; c < a->d; c++) {
        const CT_ATT_T x = qi[c], *restrict row = kt + c * n;
        for (int64_t j = 0; j < n; j++) s[j] += x * row[j];
    }
    for (int64_t j = 0; j < n; j++) s[j] *= scale;
    if (a->mask) {
        const int64_t at = mbase + i * a->mask_stride_q + j0 * a->mask_stride_k;
        for (int64_t j = 0; j < n; j++)
            s[j] += (CT_ATT_T)att_mask_term(a, at + j * a->mask_stride_k);
    }
    if (a->causal)
        for (int64_t j = i + 1 - j0 < 0 ? 0 : i + 1 - j0; j < n; j++) s[j] = -INFINITY;
}

/* y[c] += x * row[c] for c < n. */
CT_CPU_CLONES static void CT_ATT_FN(axpy)(CT_ATT_T *restrict y, CT_ATT_T x,
                                          const CT_ATT_T *restrict row, int64_t n) {
    for (int64_t c = 0; c < n; c++) y[c] += x * row[c];
}

/* The forward of rows [i0, i0 + br) of problem b (br <= CT_ATT_BR), w its scratch
 * (CT_ATT_FN(forward_scratch) elements): an online softmax over the key blocks, each row
 * keeping its running maximum m and sum l, its output rescaled when m grows. */
static size_t CT_ATT_FN(forward_scratch)(const ct__attention_args *a) {
    return (size_t)(CT_ATT_BR * (a->d + a->dv + 2) + CT_ATT_BC * (a->d + a->dv + 2));
}

static void CT_ATT_FN(forward_rows)(const ct__attention_args *a, int64_t b, int64_t i0, int64_t br,
                                    CT_ATT_T *w) {
    const int64_t d = a->d, dv = a->dv;
    CT_ATT_T *q = w, *o = q + CT_ATT_BR * d, *kt = o + CT_ATT_BR * dv, *v = kt + CT_ATT_BC * d;
    CT_ATT_T *s = v + CT_ATT_BC * dv, *z = s + CT_ATT_BC, *m = z + CT_ATT_BC, *l = m + CT_ATT_BR;
    const int64_t mbase = att_mask_base(a, b);
    CT_ATT_FN(load_rows)(q, a->q, a->dtype, b * a->tq + i0, br, d);
    for (int64_t e = 0; e < br * dv; e++) o[e] = 0;
    for (int64_t r = 0; r < br; r++) m[r] = -INFINITY, l[r] = 0;
    /* Causal: no row of the block sees a key past its last row. */
    const int64_t keys = a->causal && i0 + br < a->tk ? i0 + br : a->tk;
    for (int64_t j0 = 0; j0 < keys; j0 += CT_ATT_BC) {
        const int64_t n = keys - j0 < CT_ATT_BC ? keys - j0 : CT_ATT_BC;
        CT_ATT_FN(load_cols)(kt, a->k, a->dtype, b * a->tk + j0, n, d);
        CT_ATT_FN(load_rows)(v, a->v, a->dtype, b * a->tk + j0, n, dv);
        for (int64_t r = 0; r < br; r++) {
            const int64_t i = i0 + r;
            CT_ATT_FN(scores)(a, mbase, i, j0, q + r * d, kt, n, s);
            CT_ATT_T mx = -INFINITY;
            for (int64_t j = 0; j < n; j++) mx = s[j] > mx ? s[j] : mx;
            const CT_ATT_T mnew = mx > m[r] ? mx : m[r];
            if (mnew == -INFINITY) continue; /* no key seen yet */
            const CT_ATT_T alpha = m[r] == -INFINITY ? 0 : CT_ATT_EXP(m[r] - mnew);
            CT_ATT_T sum = 0;
            for (int64_t j = 0; j < n; j++) {
                s[j] = CT_ATT_EXP(s[j] - mnew);
                sum += s[j];
            }
            l[r] = l[r] * alpha + sum;
            m[r] = mnew;
            if (a->dropout_p > 0) {
                CT_ATT_FN(dropout_factors)(a, b, i, j0, n, z);
                for (int64_t j = 0; j < n; j++) s[j] *= z[j];
            }
            CT_ATT_T *restrict orow = o + r * dv;
            for (int64_t c = 0; c < dv; c++) orow[c] *= alpha;
            for (int64_t j = 0; j < n; j++)
                if (s[j] != 0) CT_ATT_FN(axpy)(orow, s[j], v + j * dv, dv);
        }
    }
    for (int64_t r = 0; r < br; r++) {
        const int64_t row = b * a->tq + i0 + r;
        const bool seen = l[r] > 0;
        const double inv = seen ? 1.0 / (double)l[r] : 0.0;
        for (int64_t c = 0; c < dv; c++)
            ct__stf(a->out, row * dv + c, a->dtype, o[r * dv + c] * inv);
        ((double *)a->lse)[row] = seen ? (double)m[r] + log((double)l[r]) : -INFINITY;
    }
}

/* The backward of key blocks [kb0, kb1) of problem b: their rows of grad_k and grad_v, and
 * their share of grad_q (tq x d) added into dq, which starts at 0. w: scratch of
 * CT_ATT_FN(backward_scratch) elements. Per key block, the rows that see it recompute their
 * probabilities p = exp(s - lse) and, with D_i = dO_i . O_i:
 *     dV_j += z p dO_i,  dP = z (dO_i . v_j),  dS = p (dP - D_i),
 *     dQ_i += scale dS k_j,  dK_j += scale dS q_i. */
static size_t CT_ATT_FN(backward_scratch)(const ct__attention_args *a) {
    return (size_t)(a->tq * (a->d + a->dv + 1) + a->dv + CT_ATT_BC * (3 * a->d + 2 * a->dv + 3));
}

static void CT_ATT_FN(backward_keys)(const ct__attention_args *a, int64_t b, int64_t kb0,
                                     int64_t kb1, CT_ATT_T *restrict dq, CT_ATT_T *w) {
    const int64_t d = a->d, dv = a->dv, tq = a->tq;
    CT_ATT_T *q = w, *go = q + tq * d, *dl = go + tq * dv, *orow = dl + tq;
    CT_ATT_T *k = orow + dv, *kt = k + CT_ATT_BC * d, *vt = kt + CT_ATT_BC * d;
    CT_ATT_T *dk = vt + CT_ATT_BC * dv, *dvb = dk + CT_ATT_BC * d;
    CT_ATT_T *s = dvb + CT_ATT_BC * dv, *dp = s + CT_ATT_BC, *z = dp + CT_ATT_BC;
    const int64_t mbase = att_mask_base(a, b);
    const double *lse = (const double *)a->lse + b * tq;
    CT_ATT_FN(load_rows)(q, a->q, a->dtype, b * tq, tq, d);
    CT_ATT_FN(load_rows)(go, a->grad_out, a->dtype, b * tq, tq, dv);
    for (int64_t i = 0; i < tq; i++) {
        CT_ATT_FN(load_rows)(orow, a->out, a->dtype, b * tq + i, 1, dv);
        CT_ATT_T sum = 0;
        for (int64_t c = 0; c < dv; c++) sum += go[i * dv + c] * orow[c];
        dl[i] = sum;
    }
    for (int64_t e = 0; e < tq * d; e++) dq[e] = 0;
    const CT_ATT_T scale = (CT_ATT_T)a->scale;
    for (int64_t kb = kb0; kb < kb1; kb++) {
        const int64_t j0 = kb * CT_ATT_BC;
        const int64_t n = a->tk - j0 < CT_ATT_BC ? a->tk - j0 : CT_ATT_BC;
        CT_ATT_FN(load_rows)(k, a->k, a->dtype, b * a->tk + j0, n, d);
        CT_ATT_FN(load_cols)(kt, a->k, a->dtype, b * a->tk + j0, n, d);
        CT_ATT_FN(load_cols)(vt, a->v, a->dtype, b * a->tk + j0, n, dv);
        for (int64_t e = 0; e < n * d; e++) dk[e] = 0;
        for (int64_t e = 0; e < n * dv; e++) dvb[e] = 0;
        /* Causal: row i sees key j0 only from i = j0 on. */
        for (int64_t i = a->causal ? j0 : 0; i < tq; i++) {
            if (lse[i] == -INFINITY) continue; /* the row sees no key: no gradient */
            CT_ATT_FN(scores)(a, mbase, i, j0, q + i * d, kt, n, s);
            const CT_ATT_T li = (CT_ATT_T)lse[i];
            for (int64_t j = 0; j < n; j++) s[j] = CT_ATT_EXP(s[j] - li);
            for (int64_t j = 0; j < n; j++) dp[j] = 0;
            const CT_ATT_T *restrict goi = go + i * dv;
            for (int64_t c = 0; c < dv; c++) CT_ATT_FN(axpy)(dp, goi[c], vt + c * n, n);
            if (a->dropout_p > 0) {
                CT_ATT_FN(dropout_factors)(a, b, i, j0, n, z);
                for (int64_t j = 0; j < n; j++) dp[j] *= z[j];
            }
            for (int64_t j = 0; j < n; j++) {
                const CT_ATT_T pz = a->dropout_p > 0 ? s[j] * z[j] : s[j];
                if (pz != 0) CT_ATT_FN(axpy)(dvb + j * dv, pz, goi, dv);
                const CT_ATT_T ds = scale * s[j] * (dp[j] - dl[i]);
                if (ds != 0) {
                    CT_ATT_FN(axpy)(dq + i * d, ds, k + j * d, d);
                    CT_ATT_FN(axpy)(dk + j * d, ds, q + i * d, d);
                }
            }
        }
        for (int64_t e = 0; e < n * d; e++)
            ct__stf(a->grad_k, (b * a->tk + j0) * d + e, a->dtype, dk[e]);
        for (int64_t e = 0; e < n * dv; e++)
            ct__stf(a->grad_v, (b * a->tk + j0) * dv + e, a->dtype, dvb[e]);
    }
}

/* The typed loops of the CPU attention (cpu_attention.c), included once per compute type with
 * CT_ATT_T (float for f32, f16 and bf16 data; double for f64), CT_ATT_DTYPE (its dtype),
 * CT_ATT_FN(name) (name suffixed by the type), CT_ATT_EXP(x) and CT_ATT_BF16 (whether the
 * bf16 products exist for the type: float only) defined.
 *
 * The products of a block of CT_ATT_BR query rows with a block of CT_ATT_BC keys are GEMMs
 * (ct__cpu_gemm, one thread inside the kernel's parallel region); the softmax between them
 * runs over rows of the block's CT_ATT_BR x CT_ATT_BC scores. Operands already in the compute
 * type are read in place; others are converted block by block into scratch. */

/* Rows [r0, r0 + rows) of n elements of a problem's operand of dtype, whose row 0 is at
 * element `base` and rows `stride` elements apart: in place when dtype is the compute type
 * (*ld = stride), else converted into dst (*ld = n). */
static const CT_ATT_T *CT_ATT_FN(rows)(CT_ATT_T *dst, const char *src, ct_dtype dtype, int64_t base,
                                       int64_t stride, int64_t r0, int64_t rows, int64_t n,
                                       int64_t *ld) {
    if (dtype == CT_ATT_DTYPE) {
        *ld = stride;
        return (const CT_ATT_T *)src + base + r0 * stride;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < n; c++)
            dst[r * n + c] = (CT_ATT_T)ct__ldf(src, base + (r0 + r) * stride + c, dtype);
    *ld = n;
    return dst;
}

/* c (m x n, leading dimension ldc) = op(a) @ op(b) + beta * c (beta 0 or 1) in the compute
 * type, or, with bf16 scratch (bf16 data on a CPU whose bf16 units are fast: cpu_attention.c),
 * on the bf16 units from operands rounded to bf16, as flash attention's bf16 kernels round
 * the probabilities and their gradients. */
static void CT_ATT_FN(gemm)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const CT_ATT_T *a,
                            int64_t lda, const CT_ATT_T *b, int64_t ldb, double beta, CT_ATT_T *c,
                            int64_t ldc, uint32_t *bf16) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        if (beta == 0)
            for (int64_t r = 0; r < m; r++)
                for (int64_t j = 0; j < n; j++) c[r * ldc + j] = 0;
        return;
    }
#if CT_ATT_BF16
    if (bf16) {
        ct__cpu_attention_gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, beta != 0, c, ldc, bf16);
        return;
    }
#else
    (void)bf16;
#endif
    ct__cpu_gemm(CT_ATT_DTYPE, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
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

/* Row i's n scores against keys j0.. (s: their dot products): times the scale, plus the
 * mask's term, -inf for a key the row does not see. */
CT_CPU_CLONES static void CT_ATT_FN(bias)(const ct__attention_args *a, int64_t mbase, int64_t i,
                                          int64_t j0, int64_t n, CT_ATT_T *restrict s) {
    const CT_ATT_T scale = (CT_ATT_T)a->scale;
    for (int64_t j = 0; j < n; j++) s[j] *= scale;
    if (a->mask) {
        const int64_t at = mbase + i * a->mask_stride_q + j0 * a->mask_stride_k;
        for (int64_t j = 0; j < n; j++)
            s[j] += (CT_ATT_T)att_mask_term(a, at + j * a->mask_stride_k);
    }
    if (a->causal)
        for (int64_t j = i + 1 - j0 < 0 ? 0 : i + 1 - j0; j < n; j++) s[j] = -INFINITY;
}

/* The forward of rows [i0, i0 + br) of problem b (br <= CT_ATT_BR), w its scratch
 * (CT_ATT_FN(forward_scratch) elements), bf16 the bf16 products' or NULL: an online softmax over
 * the key blocks, each row keeping its running maximum m and sum l, its output rescaled when m
 * grows. */
static size_t CT_ATT_FN(forward_scratch)(const ct__attention_args *a) {
    return (size_t)(CT_ATT_BR * (a->d + a->dv + CT_ATT_BC + 2) + CT_ATT_BC * (a->d + a->dv + 1));
}

CT_CPU_CLONES static void CT_ATT_FN(forward_rows)(const ct__attention_args *a, int64_t b,
                                                  int64_t i0, int64_t br, CT_ATT_T *w,
                                                  uint32_t *bf16) {
    const int64_t d = a->d, dv = a->dv;
    CT_ATT_T *qw = w, *o = qw + CT_ATT_BR * d, *s = o + CT_ATT_BR * dv;
    CT_ATT_T *kw = s + CT_ATT_BR * CT_ATT_BC, *vw = kw + CT_ATT_BC * d, *z = vw + CT_ATT_BC * dv;
    CT_ATT_T *m = z + CT_ATT_BC, *l = m + CT_ATT_BR;
    const int64_t mbase = att_mask_base(a, b);
    const int64_t kbase = att_at(a, &a->k_at, b), vbase = att_at(a, &a->v_at, b);
    int64_t ldq, ldk, ldv;
    const CT_ATT_T *q =
        CT_ATT_FN(rows)(qw, a->q, a->dtype, att_at(a, &a->q_at, b), a->q_at.row, i0, br, d, &ldq);
    for (int64_t e = 0; e < br * dv; e++) o[e] = 0;
    for (int64_t r = 0; r < br; r++) m[r] = -INFINITY, l[r] = 0;
    /* Causal: no row of the block sees a key past its last row. */
    const int64_t keys = a->causal && i0 + br < a->tk ? i0 + br : a->tk;
    for (int64_t j0 = 0; j0 < keys; j0 += CT_ATT_BC) {
        const int64_t n = keys - j0 < CT_ATT_BC ? keys - j0 : CT_ATT_BC;
        const CT_ATT_T *k = CT_ATT_FN(rows)(kw, a->k, a->dtype, kbase, a->k_at.row, j0, n, d, &ldk);
        const CT_ATT_T *v =
            CT_ATT_FN(rows)(vw, a->v, a->dtype, vbase, a->v_at.row, j0, n, dv, &ldv);
        CT_ATT_FN(gemm)(false, true, br, n, d, q, ldq, k, ldk, 0.0, s, CT_ATT_BC, bf16);
        for (int64_t r = 0; r < br; r++) {
            const int64_t i = i0 + r;
            CT_ATT_T *restrict sr = s + r * CT_ATT_BC, *restrict orow = o + r * dv;
            CT_ATT_FN(bias)(a, mbase, i, j0, n, sr);
            CT_ATT_T mx = -INFINITY;
            for (int64_t j = 0; j < n; j++) mx = sr[j] > mx ? sr[j] : mx;
            const CT_ATT_T mnew = mx > m[r] ? mx : m[r];
            if (mnew == -INFINITY) { /* no key seen yet: this block adds nothing */
                for (int64_t j = 0; j < n; j++) sr[j] = 0;
                continue;
            }
            const CT_ATT_T alpha = m[r] == -INFINITY ? 0 : CT_ATT_EXP(m[r] - mnew);
            CT_ATT_T sum = 0;
            for (int64_t j = 0; j < n; j++) {
                sr[j] = CT_ATT_EXP(sr[j] - mnew);
                sum += sr[j];
            }
            l[r] = l[r] * alpha + sum;
            m[r] = mnew;
            if (a->dropout_p > 0) {
                CT_ATT_FN(dropout_factors)(a, b, i, j0, n, z);
                for (int64_t j = 0; j < n; j++) sr[j] *= z[j];
            }
            for (int64_t c = 0; c < dv; c++) orow[c] *= alpha;
        }
        CT_ATT_FN(gemm)(false, false, br, dv, n, s, CT_ATT_BC, v, ldv, 1.0, o, dv, bf16);
    }
    const int64_t obase = att_at(a, &a->out_at, b);
    for (int64_t r = 0; r < br; r++) {
        const int64_t row = b * a->tq + i0 + r, at = obase + (i0 + r) * a->out_at.row;
        const bool seen = l[r] > 0;
        const double inv = seen ? 1.0 / (double)l[r] : 0.0;
        for (int64_t c = 0; c < dv; c++) ct__stf(a->out, at + c, a->dtype, o[r * dv + c] * inv);
        ((double *)a->lse)[row] = seen ? (double)m[r] + log((double)l[r]) : -INFINITY;
    }
}

/* The backward of key blocks [kb0, kb1) of problem b: their rows of grad_k and grad_v, and
 * their share of grad_q (tq x d) added into dq, which starts at 0. w: scratch of
 * CT_ATT_FN(backward_scratch) elements; bf16 as in the forward. Per (query block, key block) the
 * probabilities are recomputed, p = exp(s - lse), and with D_i = dO_i . O_i (FlashAttention-2's
 * backward): dV += (z p)^T dO,  dP = z (dO V^T),  dS = scale p (dP - D), dQ += dS K,  dK += dS^T Q.
 */
static size_t CT_ATT_FN(backward_scratch)(const ct__attention_args *a) {
    return (size_t)(a->tq * (a->d + a->dv + 1) + a->dv + 2 * CT_ATT_BR * CT_ATT_BC +
                    CT_ATT_BC * (2 * a->d + 2 * a->dv + 1));
}

CT_CPU_CLONES static void CT_ATT_FN(backward_keys)(const ct__attention_args *a, int64_t b,
                                                   int64_t kb0, int64_t kb1, CT_ATT_T *restrict dq,
                                                   CT_ATT_T *w, uint32_t *bf16) {
    const int64_t d = a->d, dv = a->dv, tq = a->tq;
    CT_ATT_T *qw = w, *gw = qw + tq * d, *dl = gw + tq * dv, *orow = dl + tq;
    CT_ATT_T *s = orow + dv, *dp = s + CT_ATT_BR * CT_ATT_BC, *kw = dp + CT_ATT_BR * CT_ATT_BC;
    CT_ATT_T *vw = kw + CT_ATT_BC * d, *dk = vw + CT_ATT_BC * dv, *dvb = dk + CT_ATT_BC * d;
    CT_ATT_T *z = dvb + CT_ATT_BC * dv;
    const int64_t mbase = att_mask_base(a, b);
    const double *lse = (const double *)a->lse + b * tq;
    const int64_t qbase = att_at(a, &a->q_at, b), obase = att_at(a, &a->out_at, b);
    const int64_t kbase = att_at(a, &a->k_at, b), vbase = att_at(a, &a->v_at, b);
    int64_t ldq, ldg, ldo, ldk, ldv;
    const CT_ATT_T *q = CT_ATT_FN(rows)(qw, a->q, a->dtype, qbase, a->q_at.row, 0, tq, d, &ldq);
    const CT_ATT_T *go =
        CT_ATT_FN(rows)(gw, a->grad_out, a->dtype, obase, a->out_at.row, 0, tq, dv, &ldg);
    for (int64_t i = 0; i < tq; i++) {
        const CT_ATT_T *o =
            CT_ATT_FN(rows)(orow, a->out, a->dtype, obase, a->out_at.row, i, 1, dv, &ldo);
        CT_ATT_T sum = 0;
        for (int64_t c = 0; c < dv; c++) sum += go[i * ldg + c] * o[c];
        dl[i] = sum;
    }
    for (int64_t e = 0; e < tq * d; e++) dq[e] = 0;
    const CT_ATT_T scale = (CT_ATT_T)a->scale;
    for (int64_t kb = kb0; kb < kb1; kb++) {
        const int64_t j0 = kb * CT_ATT_BC;
        const int64_t n = a->tk - j0 < CT_ATT_BC ? a->tk - j0 : CT_ATT_BC;
        const CT_ATT_T *k = CT_ATT_FN(rows)(kw, a->k, a->dtype, kbase, a->k_at.row, j0, n, d, &ldk);
        const CT_ATT_T *v =
            CT_ATT_FN(rows)(vw, a->v, a->dtype, vbase, a->v_at.row, j0, n, dv, &ldv);
        for (int64_t e = 0; e < n * d; e++) dk[e] = 0;
        for (int64_t e = 0; e < n * dv; e++) dvb[e] = 0;
        /* Causal: row i sees key j0 only from i = j0 on. */
        for (int64_t i0 = a->causal ? j0 : 0; i0 < tq; i0 += CT_ATT_BR) {
            const int64_t br = tq - i0 < CT_ATT_BR ? tq - i0 : CT_ATT_BR;
            CT_ATT_FN(gemm)
            (false, true, br, n, d, q + i0 * ldq, ldq, k, ldk, 0.0, s, CT_ATT_BC, bf16);
            CT_ATT_FN(gemm)
            (false, true, br, n, dv, go + i0 * ldg, ldg, v, ldv, 0.0, dp, CT_ATT_BC, bf16);
            for (int64_t r = 0; r < br; r++) {
                const int64_t i = i0 + r;
                CT_ATT_T *restrict sr = s + r * CT_ATT_BC, *restrict dpr = dp + r * CT_ATT_BC;
                if (lse[i] == -INFINITY) { /* the row sees no key: no gradient */
                    for (int64_t j = 0; j < n; j++) sr[j] = 0, dpr[j] = 0;
                    continue;
                }
                CT_ATT_FN(bias)(a, mbase, i, j0, n, sr);
                const CT_ATT_T li = (CT_ATT_T)lse[i], di = dl[i];
                for (int64_t j = 0; j < n; j++) sr[j] = CT_ATT_EXP(sr[j] - li);
                if (a->dropout_p > 0) {
                    CT_ATT_FN(dropout_factors)(a, b, i, j0, n, z);
                    /* sr becomes dS and dpr z p, which dV takes. */
                    for (int64_t j = 0; j < n; j++) {
                        const CT_ATT_T p = sr[j];
                        sr[j] = scale * p * (z[j] * dpr[j] - di);
                        dpr[j] = z[j] * p;
                    }
                } else {
                    for (int64_t j = 0; j < n; j++) {
                        const CT_ATT_T p = sr[j];
                        sr[j] = scale * p * (dpr[j] - di);
                        dpr[j] = p;
                    }
                }
            }
            CT_ATT_FN(gemm)
            (true, false, n, dv, br, dp, CT_ATT_BC, go + i0 * ldg, ldg, 1.0, dvb, dv, bf16);
            CT_ATT_FN(gemm)
            (false, false, br, d, n, s, CT_ATT_BC, k, ldk, 1.0, dq + i0 * d, d, bf16);
            CT_ATT_FN(gemm)
            (true, false, n, d, br, s, CT_ATT_BC, q + i0 * ldq, ldq, 1.0, dk, d, bf16);
        }
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < d; c++)
                ct__stf(a->grad_k, kbase + (j0 + r) * a->k_at.row + c, a->dtype, dk[r * d + c]);
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < dv; c++)
                ct__stf(a->grad_v, vbase + (j0 + r) * a->v_at.row + c, a->dtype, dvb[r * dv + c]);
    }
}

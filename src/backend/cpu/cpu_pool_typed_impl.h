/* The typed loops of the CPU pooling kernels (cpu_pool.c), included once per element type
 * with CT_POOL_T (float or double), CT_POOL_U (the unsigned integer of its size) and
 * CT_POOL_FN(name) defined. One plane at a time: each
 * plane's outputs, and in backward its input gradient, belong to that plane alone, so
 * planes run on OpenMP threads without sharing anything. */

/* Make (v, i) the running maximum (best, at) when v is larger, or a NaN where no NaN holds
 * the place yet (so the first NaN wins), with bit masks instead of branches: on random
 * data the comparison is a coin toss that would mispredict every other element. */
static inline void CT_POOL_FN(take)(CT_POOL_T v, int64_t i, CT_POOL_T *best, int64_t *at) {
    int take = CT_POOL_TAKES(v, *best);
    CT_POOL_U vb, bb, m = (CT_POOL_U)0 - (CT_POOL_U)take;
    int64_t im = -(int64_t)take;
    memcpy(&vb, &v, sizeof vb);
    memcpy(&bb, best, sizeof bb);
    bb = (bb & ~m) | (vb & m);
    memcpy(best, &bb, sizeof bb);
    *at = (*at & ~im) | (i & im);
}

/* The larger of a and b, a on a tie (so -0 before +0 stays -0, the first cell's value, as the
 * tournament below gives): the form compilers vectorise as one max. */
static inline CT_POOL_T CT_POOL_FN(larger)(CT_POOL_T a, CT_POOL_T b) { return b > a ? b : a; }

/* One output row of 2x2 max pooling at stride 2: input rows x0 and x1, outputs y, and each
 * output's in-plane index (at0: x0's first index) in idx. The maximum of four, then the first
 * input equal to it in row-major order: selects, no branches, so the loop vectorises. Returns
 * whether the row held a NaN, which these results do not place as PyTorch does. */
CT_CPU_CLONES static int CT_POOL_FN(max_row_2x2)(const CT_POOL_T *restrict x0,
                                                 const CT_POOL_T *restrict x1,
                                                 CT_POOL_T *restrict y, int32_t *restrict idx,
                                                 int64_t ow_n, int64_t at0, int64_t w) {
    int nan = 0;
    for (int64_t ow = 0; ow < ow_n; ow++) {
        CT_POOL_T p = x0[2 * ow], q = x0[2 * ow + 1], r = x1[2 * ow], s = x1[2 * ow + 1];
        CT_POOL_T m = CT_POOL_FN(larger)(CT_POOL_FN(larger)(p, q), CT_POOL_FN(larger)(r, s));
        nan |= (p != p) | (q != q) | (r != r) | (s != s);
        y[ow] = m;
        idx[ow] = (int32_t)(at0 + 2 * ow + (p == m ? 0 : q == m ? 1 : r == m ? w : w + 1));
    }
    return nan;
}

/* The same row by a tournament with NaNs taken as PyTorch does: each input row's pair, then
 * the two winners, the first row winning ties, so the first maximum (or first NaN) wins. */
static void CT_POOL_FN(max_row_2x2_nan)(const CT_POOL_T *x0, const CT_POOL_T *x1, CT_POOL_T *y,
                                        int32_t *idx, int64_t ow_n, int64_t at0, int64_t w) {
    for (int64_t ow = 0; ow < ow_n; ow++) {
        int64_t c = 2 * ow, top = at0 + c, bottom = at0 + w + c;
        CT_POOL_T best = x0[c], best2 = x1[c];
        CT_POOL_FN(take)(x0[c + 1], top + 1, &best, &top);
        CT_POOL_FN(take)(x1[c + 1], bottom + 1, &best2, &bottom);
        CT_POOL_FN(take)(best2, bottom, &best, &top);
        y[ow] = best;
        idx[ow] = (int32_t)top;
    }
}

/* Max pooling of a plane with 2x2 windows at stride 2 and no padding (the common case), row
 * by row: through the vector row that CT_POOL_SIMD_ROW() picks for this processor where it is
 * defined (with the same results), else the loop above. idx_out may be NULL (no backward to
 * follow): a stack buffer then takes the indices, a row's piece at a time. */
static void CT_POOL_FN(max_plane_2x2)(const ct__pool2d_args *a, const CT_POOL_T *x, CT_POOL_T *y,
                                      int32_t *idx_out) {
    enum { PIECE = 64 };
    int64_t w = a->in_w, ow_n = a->out_w;
    int32_t scratch[PIECE];
    int64_t piece = idx_out ? ow_n : PIECE;
#ifdef CT_POOL_SIMD_ROW
    ct__cpu_max_row_f32_fn *simd = CT_POOL_SIMD_ROW();
#endif
    for (int64_t oh = 0; oh < a->out_h; oh++) {
        for (int64_t ow = 0; ow < ow_n; ow += piece) {
            int64_t n = ow_n - ow < piece ? ow_n - ow : piece, at0 = 2 * oh * w + 2 * ow;
            const CT_POOL_T *x0 = x + at0, *x1 = x0 + w;
            CT_POOL_T *yr = y + oh * ow_n + ow;
            int32_t *idx = idx_out ? idx_out + oh * ow_n + ow : scratch;
            int nan;
#ifdef CT_POOL_SIMD_ROW
            if (simd)
                nan = simd(x0, x1, yr, idx, n, at0, w);
            else
#endif
                nan = CT_POOL_FN(max_row_2x2)(x0, x1, yr, idx, n, at0, w);
            if (nan) CT_POOL_FN(max_row_2x2_nan)(x0, x1, yr, idx, n, at0, w);
        }
    }
}

/* Forward of plane p: max (with the first maximum's index) or average. */
static void CT_POOL_FN(forward_plane)(const ct__pool2d_args *a, int64_t p) {
    const CT_POOL_T *x = (const CT_POOL_T *)a->x + p * a->in_h * a->in_w;
    CT_POOL_T *y = (CT_POOL_T *)a->y + p * a->out_h * a->out_w;
    int32_t *idx = a->indices ? a->indices + p * a->out_h * a->out_w : NULL;
    if (a->kind == CT_POOL_MAX && pool_is_plain_2x2(a)) {
        CT_POOL_FN(max_plane_2x2)(a, x, y, idx);
        return;
    }
    for (int64_t oh = 0; oh < a->out_h; oh++) {
        pool_window hw = pool_window_of(a, 0, oh);
        for (int64_t ow = 0; ow < a->out_w; ow++) {
            pool_window ww = pool_window_of(a, 1, ow);
            int64_t o = oh * a->out_w + ow;
            if (a->kind == CT_POOL_MAX) {
                CT_POOL_T best = -(CT_POOL_T)INFINITY;
                int64_t at = hw.start * a->in_w + ww.start;
                for (int64_t ih = hw.start; ih < hw.end; ih++)
                    for (int64_t iw = ww.start; iw < ww.end; iw++)
                        CT_POOL_FN(take)(x[ih * a->in_w + iw], ih * a->in_w + iw, &best, &at);
                y[o] = best;
                if (idx) idx[o] = (int32_t)at;
            } else {
                double sum = 0;
                for (int64_t ih = hw.start; ih < hw.end; ih++)
                    for (int64_t iw = ww.start; iw < ww.end; iw++) sum += x[ih * a->in_w + iw];
                y[o] = (CT_POOL_T)(sum / (double)(hw.divisor * ww.divisor));
            }
        }
    }
}

/* Backward of plane p: the input gradient from the output gradient y. */
static void CT_POOL_FN(backward_plane)(const ct__pool2d_args *a, int64_t p) {
    CT_POOL_T *dx = (CT_POOL_T *)a->x + p * a->in_h * a->in_w;
    const CT_POOL_T *dy = (const CT_POOL_T *)a->y + p * a->out_h * a->out_w;
    for (int64_t i = 0; i < a->in_h * a->in_w; i++) dx[i] = 0;
    if (a->kind == CT_POOL_MAX) {
        const int32_t *idx = a->indices + p * a->out_h * a->out_w;
        for (int64_t o = 0; o < a->out_h * a->out_w; o++) dx[idx[o]] += dy[o];
        return;
    }
    for (int64_t oh = 0; oh < a->out_h; oh++) {
        pool_window hw = pool_window_of(a, 0, oh);
        for (int64_t ow = 0; ow < a->out_w; ow++) {
            pool_window ww = pool_window_of(a, 1, ow);
            CT_POOL_T g = (CT_POOL_T)(dy[oh * a->out_w + ow] / (double)(hw.divisor * ww.divisor));
            for (int64_t ih = hw.start; ih < hw.end; ih++)
                for (int64_t iw = ww.start; iw < ww.end; iw++) dx[ih * a->in_w + iw] += g;
        }
    }
}

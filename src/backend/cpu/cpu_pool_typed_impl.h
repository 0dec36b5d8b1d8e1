/* The typed loops of the CPU pooling kernels (cpu_pool.c), included once per element type
 * with CT_POOL_T (float or double), CT_POOL_U (the unsigned integer of its size) and
 * CT_POOL_FN(name) defined. One plane at a time: each
 * plane's outputs, and in backward its input gradient, belong to that plane alone, so
 * planes run on OpenMP threads without sharing anything. */

/* Make (v, i) the running maximum (best, at) when v is larger, or a NaN where no NaN holds
 * the place yet (so the first NaN wins), with bit masks instead of branches: on random
 * data the comparison is a coin toss that would mispredict every other element. */
static inline void CT_POOL_FN(take)(CT_POOL_T v, int64_t i, CT_POOL_T *best, int64_t *at) {
    int take = !(v <= *best) & (*best == *best);
    CT_POOL_U vb, bb, m = (CT_POOL_U)0 - (CT_POOL_U)take;
    int64_t im = -(int64_t)take;
    memcpy(&vb, &v, sizeof vb);
    memcpy(&bb, best, sizeof bb);
    bb = (bb & ~m) | (vb & m);
    memcpy(best, &bb, sizeof bb);
    *at = (*at & ~im) | (i & im);
}

/* Max pooling of a plane with 2x2 windows at stride 2 and no padding (the common case),
 * unrolled; idx may be NULL. */
static void CT_POOL_FN(max_plane_2x2)(const ct_pool2d_args *a, const CT_POOL_T *x, CT_POOL_T *y,
                                      int64_t *idx) {
    int64_t w = a->in_w;
    for (int64_t oh = 0; oh < a->out_h; oh++) {
        int64_t r0 = 2 * oh * w, r1 = r0 + w;
        for (int64_t ow = 0; ow < a->out_w; ow++) {
            /* A tournament: the two rows' pairs are independent, and the first row wins
             * ties against the second as it comes first, so the first maximum wins. */
            int64_t c = 2 * ow, at = r0 + c, at2 = r1 + c;
            CT_POOL_T best = x[at], best2 = x[at2];
            CT_POOL_FN(take)(x[at + 1], at + 1, &best, &at);
            CT_POOL_FN(take)(x[at2 + 1], at2 + 1, &best2, &at2);
            CT_POOL_FN(take)(best2, at2, &best, &at);
            y[oh * a->out_w + ow] = best;
            if (idx) idx[oh * a->out_w + ow] = at;
        }
    }
}

/* Forward of plane p: max (with the first maximum's index) or average. */
static void CT_POOL_FN(forward_plane)(const ct_pool2d_args *a, int64_t p) {
    const CT_POOL_T *x = (const CT_POOL_T *)a->x + p * a->in_h * a->in_w;
    CT_POOL_T *y = (CT_POOL_T *)a->y + p * a->out_h * a->out_w;
    int64_t *idx = a->indices ? a->indices + p * a->out_h * a->out_w : NULL;
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
                if (idx) idx[o] = at;
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
static void CT_POOL_FN(backward_plane)(const ct_pool2d_args *a, int64_t p) {
    CT_POOL_T *dx = (CT_POOL_T *)a->x + p * a->in_h * a->in_w;
    const CT_POOL_T *dy = (const CT_POOL_T *)a->y + p * a->out_h * a->out_w;
    for (int64_t i = 0; i < a->in_h * a->in_w; i++) dx[i] = 0;
    if (a->kind == CT_POOL_MAX) {
        const int64_t *idx = a->indices + p * a->out_h * a->out_w;
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

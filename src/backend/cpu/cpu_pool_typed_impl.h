/* The typed loops of the CPU pooling kernels (cpu_pool.c), included once per element type
 * with CT_POOL_T (float or double) and CT_POOL_FN(name) defined. One plane at a time: each
 * plane's outputs, and in backward its input gradient, belong to that plane alone, so
 * planes run on OpenMP threads without sharing anything. */

/* Forward of plane p: max (with the first maximum's index; NaN wins) or average. */
static void CT_POOL_FN(forward_plane)(const ct_pool2d_args *a, int64_t p) {
    const CT_POOL_T *x = (const CT_POOL_T *)a->x + p * a->in_h * a->in_w;
    CT_POOL_T *y = (CT_POOL_T *)a->y + p * a->out_h * a->out_w;
    int64_t *idx = a->indices ? a->indices + p * a->out_h * a->out_w : NULL;
    for (int64_t oh = 0; oh < a->out_h; oh++) {
        pool_window hw = pool_window_of(a, 0, oh);
        for (int64_t ow = 0; ow < a->out_w; ow++) {
            pool_window ww = pool_window_of(a, 1, ow);
            int64_t o = oh * a->out_w + ow;
            if (a->kind == CT_POOL_MAX) {
                CT_POOL_T best = -(CT_POOL_T)INFINITY;
                int64_t at = hw.start * a->in_w + ww.start;
                for (int64_t ih = hw.start; ih < hw.end; ih++)
                    for (int64_t iw = ww.start; iw < ww.end; iw++) {
                        CT_POOL_T v = x[ih * a->in_w + iw];
                        if (v > best || isnan(v)) best = v, at = ih * a->in_w + iw;
                    }
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

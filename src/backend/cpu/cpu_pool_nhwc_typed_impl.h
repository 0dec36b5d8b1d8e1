/* The typed loops of the CPU's channels-last pooling (cpu_pool_nhwc.c), included once per
 * element type with CT_NHWC_S (the stored type: float, double, or uint16_t for bf16),
 * CT_NHWC_T (the type the loops compute in: float for bf16), CT_NHWC_BF16 (1 for bf16, else
 * 0) and CT_NHWC_FN(name) defined.
 *
 * A pixel's channels are contiguous: every loop runs over a block of at most CT_NHWC_BLOCK
 * channels with no dependence between them, which the compiler vectorises (an AVX2 and an
 * AVX-512 clone, picked at load time). Each output (forward) or input gradient (backward)
 * element is computed by one iteration of its row alone, in the NCHW kernel's order. */

/* cb cells of src as CT_NHWC_T: src itself, or widened exactly into tmp (bf16). */
CT_NHWC_INLINE const CT_NHWC_T *CT_NHWC_FN(cells)(const CT_NHWC_S *restrict src,
                                                  CT_NHWC_T *restrict tmp, int64_t cb) {
#if CT_NHWC_BF16
    for (int64_t c = 0; c < cb; c++) {
        uint32_t bits = (uint32_t)src[c] << 16;
        memcpy(&tmp[c], &bits, sizeof bits);
    }
    return tmp;
#else
    (void)tmp, (void)cb;
    return src;
#endif
}

/* Where a block of cb results for dst is computed: dst itself, or tmp (bf16; put narrows it
 * into dst as the NCHW kernel's bf16 planes do). */
static inline CT_NHWC_T *CT_NHWC_FN(results)(CT_NHWC_S *dst, CT_NHWC_T *tmp) {
#if CT_NHWC_BF16
    (void)dst;
    return tmp;
#else
    (void)tmp;
    return dst;
#endif
}

static inline void CT_NHWC_FN(put)(CT_NHWC_S *dst, const CT_NHWC_T *values, int64_t cb) {
#if CT_NHWC_BF16
    ct__cpu_f32_to_bf16_row(dst, values, cb);
#else
    (void)dst, (void)values, (void)cb;
#endif
}

/* Max pooling of channels [c0, c0 + cb) of output pixel o (flat over batch, out_h, out_w) of
 * image x, window hw x ww: the first maximum (or first NaN) in row-major order and its index. */
CT_NHWC_INLINE void CT_NHWC_FN(max_block)(const ct__pool2d_args *a, const CT_NHWC_S *x, int64_t o,
                                          pool_window hw, pool_window ww, int64_t c0, int64_t cb) {
    int64_t C = a->channels;
    CT_NHWC_T best[CT_NHWC_BLOCK], tmp[CT_NHWC_BLOCK], out[CT_NHWC_BLOCK];
    int32_t at[CT_NHWC_BLOCK];
    int32_t first = (int32_t)(hw.start * a->in_w + ww.start);
    for (int64_t c = 0; c < cb; c++) best[c] = -(CT_NHWC_T)INFINITY, at[c] = first;
    for (int64_t ih = hw.start; ih < hw.end; ih++)
        for (int64_t iw = ww.start; iw < ww.end; iw++) {
            int32_t i = (int32_t)(ih * a->in_w + iw);
            const CT_NHWC_T *v = CT_NHWC_FN(cells)(x + i * C + c0, tmp, cb);
            for (int64_t c = 0; c < cb; c++) {
                int take = CT_POOL_TAKES(v[c], best[c]);
                best[c] = take ? v[c] : best[c];
                at[c] = take ? i : at[c];
            }
        }
    CT_NHWC_S *y = (CT_NHWC_S *)a->y + o * C + c0;
    CT_NHWC_T *r = CT_NHWC_FN(results)(y, out);
    for (int64_t c = 0; c < cb; c++) r[c] = best[c];
    CT_NHWC_FN(put)(y, r, cb);
    if (a->indices) memcpy(a->indices + o * C + c0, at, (size_t)cb * sizeof at[0]);
}

/* The average kinds, as max_block: the window's sum in double, in row-major order, divided
 * by the window's count and rounded once, as the NCHW kernel does. */
CT_NHWC_INLINE void CT_NHWC_FN(avg_block)(const ct__pool2d_args *a, const CT_NHWC_S *x, int64_t o,
                                          pool_window hw, pool_window ww, int64_t c0, int64_t cb) {
    int64_t C = a->channels;
    double sum[CT_NHWC_BLOCK];
    CT_NHWC_T tmp[CT_NHWC_BLOCK], out[CT_NHWC_BLOCK];
    for (int64_t c = 0; c < cb; c++) sum[c] = 0.0;
    for (int64_t ih = hw.start; ih < hw.end; ih++)
        for (int64_t iw = ww.start; iw < ww.end; iw++) {
            const CT_NHWC_T *v = CT_NHWC_FN(cells)(x + (ih * a->in_w + iw) * C + c0, tmp, cb);
            for (int64_t c = 0; c < cb; c++) sum[c] += v[c];
        }
    double count = (double)(hw.divisor * ww.divisor);
    CT_NHWC_S *y = (CT_NHWC_S *)a->y + o * C + c0;
    CT_NHWC_T *r = CT_NHWC_FN(results)(y, out);
    for (int64_t c = 0; c < cb; c++) r[c] = (CT_NHWC_T)(sum[c] / count);
    CT_NHWC_FN(put)(y, r, cb);
}

/* Forward of output row `row` (flat over batch and out_h): every pixel, every channel. */
CT_CPU_CLONES_AVX512 static void CT_NHWC_FN(forward_row)(const ct__pool2d_args *a, int64_t row) {
    int64_t n = row / a->out_h, oh = row % a->out_h, C = a->channels;
    const CT_NHWC_S *x = (const CT_NHWC_S *)a->x + n * a->in_h * a->in_w * C;
    pool_window hw = pool_window_of(a, 0, oh);
    for (int64_t ow = 0; ow < a->out_w; ow++) {
        pool_window ww = pool_window_of(a, 1, ow);
        int64_t o = row * a->out_w + ow;
        for (int64_t c0 = 0; c0 < C; c0 += CT_NHWC_BLOCK) {
            int64_t cb = C - c0 < CT_NHWC_BLOCK ? C - c0 : CT_NHWC_BLOCK;
            if (a->kind == CT_POOL_MAX)
                CT_NHWC_FN(max_block)(a, x, o, hw, ww, c0, cb);
            else
                CT_NHWC_FN(avg_block)(a, x, o, hw, ww, c0, cb);
        }
    }
}

/* Backward of input row `row` (flat over batch and in_h): each input pixel gathers, block by
 * block of channels, the gradients of the outputs whose windows hold it, in the order
 * (oh, ow) in which the NCHW kernel adds them (starting from +0), so the sums are its own;
 * max pooling takes an output's gradient only in the channels whose index is this pixel. */
CT_CPU_CLONES_AVX512 static void CT_NHWC_FN(backward_row)(const ct__pool2d_args *a, int64_t row) {
    int64_t n = row / a->in_h, ih = row % a->in_h, C = a->channels;
    const CT_NHWC_S *dy = (const CT_NHWC_S *)a->y;
    CT_NHWC_S *dx = (CT_NHWC_S *)a->x + row * a->in_w * C;
    pool_span hs = pool_span_of(a, 0, ih);
    CT_NHWC_T acc[CT_NHWC_BLOCK], tmp[CT_NHWC_BLOCK];
    for (int64_t iw = 0; iw < a->in_w; iw++) {
        pool_span ws = pool_span_of(a, 1, iw);
        int32_t i = (int32_t)(ih * a->in_w + iw);
        for (int64_t c0 = 0; c0 < C; c0 += CT_NHWC_BLOCK) {
            int64_t cb = C - c0 < CT_NHWC_BLOCK ? C - c0 : CT_NHWC_BLOCK;
            for (int64_t c = 0; c < cb; c++) acc[c] = 0;
            for (int64_t oh = hs.first; oh <= hs.last; oh++) {
                pool_window hw = pool_window_of(a, 0, oh);
                if (ih < hw.start || ih >= hw.end) continue;
                for (int64_t ow = ws.first; ow <= ws.last; ow++) {
                    pool_window ww = pool_window_of(a, 1, ow);
                    if (iw < ww.start || iw >= ww.end) continue;
                    int64_t o = ((n * a->out_h + oh) * a->out_w + ow) * C + c0;
                    const CT_NHWC_T *g = CT_NHWC_FN(cells)(dy + o, tmp, cb);
                    if (a->kind == CT_POOL_MAX) {
                        const int32_t *idx = a->indices + o;
                        for (int64_t c = 0; c < cb; c++)
                            acc[c] = idx[c] == i ? acc[c] + g[c] : acc[c];
                    } else {
                        double count = (double)(hw.divisor * ww.divisor);
                        for (int64_t c = 0; c < cb; c++) acc[c] += (CT_NHWC_T)(g[c] / count);
                    }
                }
            }
            CT_NHWC_S *d = dx + iw * C + c0;
            CT_NHWC_T *r = CT_NHWC_FN(results)(d, tmp);
            for (int64_t c = 0; c < cb; c++) r[c] = acc[c];
            CT_NHWC_FN(put)(d, r, cb);
        }
    }
}

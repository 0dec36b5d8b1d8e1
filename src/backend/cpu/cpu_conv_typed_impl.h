/* The typed loops of the CPU convolution (cpu_conv.c), included once per element type with
 * CT_CONV_T (float or double) and CT_CONV_FN(name) (name suffixed by the type) defined.
 *
 * A chunk of nb images starting at image n0 is lowered to a column matrix col with one row
 * per (channel, kernel row, kernel column) and one column per (image, output pixel): row
 * stride ld = nb * L, L = out_h * out_w. The output side lives in `mat`, (out_channels, ld),
 * so that each group's product is one large GEMM over the whole chunk. */

/* im2col of input channel c of image n0 + b into its kernel_h * kernel_w rows of col. */
static void CT_CONV_FN(im2col_plane)(const ct_conv2d_args *a, const CT_CONV_T *x, CT_CONV_T *col,
                                     int64_t ld, int64_t c) {
    int64_t oh_n = a->out_h, ow_n = a->out_w, h = a->in_h, w = a->in_w, sw = a->stride[1];
    for (int64_t i = 0; i < a->kernel_h; i++) {
        for (int64_t j = 0; j < a->kernel_w; j++) {
            CT_CONV_T *dst = col + ((c * a->kernel_h + i) * a->kernel_w + j) * ld;
            int64_t jo = j * a->dilation[1] - a->padding[1], lo, hi;
            conv_valid_range(jo, sw, w, ow_n, &lo, &hi);
            for (int64_t oh = 0; oh < oh_n; oh++) {
                int64_t ih = oh * a->stride[0] - a->padding[0] + i * a->dilation[0];
                CT_CONV_T *d = dst + oh * ow_n;
                if (ih < 0 || ih >= h) {
                    for (int64_t ow = 0; ow < ow_n; ow++) d[ow] = 0;
                    continue;
                }
                const CT_CONV_T *src = x + (c * h + ih) * w;
                for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;
                if (sw == 1)
                    memcpy(d + lo, src + lo + jo, (size_t)(hi - lo) * sizeof *d);
                else
                    for (int64_t ow = lo; ow < hi; ow++) d[ow] = src[ow * sw + jo];
                for (int64_t ow = hi; ow < ow_n; ow++) d[ow] = 0;
            }
        }
    }
}

/* col2im: the gradient of input channel c of one image, summed from its rows of col. */
static void CT_CONV_FN(col2im_plane)(const ct_conv2d_args *a, const CT_CONV_T *col, int64_t ld,
                                     int64_t c, CT_CONV_T *dx) {
    int64_t oh_n = a->out_h, ow_n = a->out_w, h = a->in_h, w = a->in_w, sw = a->stride[1];
    CT_CONV_T *plane = dx + c * h * w;
    for (int64_t p = 0; p < h * w; p++) plane[p] = 0;
    for (int64_t i = 0; i < a->kernel_h; i++) {
        for (int64_t j = 0; j < a->kernel_w; j++) {
            const CT_CONV_T *src = col + ((c * a->kernel_h + i) * a->kernel_w + j) * ld;
            int64_t jo = j * a->dilation[1] - a->padding[1], lo, hi;
            conv_valid_range(jo, sw, w, ow_n, &lo, &hi);
            for (int64_t oh = 0; oh < oh_n; oh++) {
                int64_t ih = oh * a->stride[0] - a->padding[0] + i * a->dilation[0];
                if (ih < 0 || ih >= h) continue;
                CT_CONV_T *row = plane + ih * w;
                const CT_CONV_T *s = src + oh * ow_n;
                for (int64_t ow = lo; ow < hi; ow++) row[ow * sw + jo] += s[ow];
            }
        }
    }
}

/* col = im2col of images n0 .. n0 + nb. */
static void CT_CONV_FN(im2col)(const ct_conv2d_args *a, int64_t n0, int64_t nb, CT_CONV_T *col) {
    int64_t c_n = a->in_channels, l = a->out_h * a->out_w, ld = nb * l;
    const CT_CONV_T *x = (const CT_CONV_T *)a->x;
    int64_t work = nb * c_n * a->kernel_h * a->kernel_w * l;
    (void)work;
#ifdef _OPENMP
#pragma omp parallel for if (work >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t item = 0; item < nb * c_n; item++) {
        int64_t b = item / c_n, c = item % c_n;
        CT_CONV_FN(im2col_plane)(a, x + (n0 + b) * c_n * a->in_h * a->in_w, col + b * l, ld, c);
    }
}

/* Forward's output: row (b, o) of y (batch, out_channels, L) = row o of mat, columns
 * b * L .. (b + 1) * L, plus bias[o] (bias may be NULL). */
static void CT_CONV_FN(scatter_output)(const ct_conv2d_args *a, int64_t n0, int64_t nb,
                                       const CT_CONV_T *mat) {
    int64_t o_n = a->out_channels, l = a->out_h * a->out_w, ld = nb * l;
    const CT_CONV_T *bias = (const CT_CONV_T *)a->bias;
    CT_CONV_T *y = (CT_CONV_T *)a->y;
    int64_t work = nb * o_n * l;
    (void)work;
#ifdef _OPENMP
#pragma omp parallel for if (work >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t item = 0; item < nb * o_n; item++) {
        int64_t b = item / o_n, o = item % o_n;
        CT_CONV_T *yrow = y + ((n0 + b) * o_n + o) * l, add = bias ? bias[o] : 0;
        const CT_CONV_T *mrow = mat + o * ld + b * l;
        for (int64_t p = 0; p < l; p++) yrow[p] = mrow[p] + add;
    }
}

/* Backward's output gradient: row o of mat = rows (b, o) of y side by side; with grad_bias,
 * also grad_bias[o] (+)= their sum (one pass over the gradient for both). One output
 * channel per work item, so each bias element has one writer. */
static void CT_CONV_FN(gather_grad)(const ct_conv2d_args *a, int64_t n0, int64_t nb,
                                    CT_CONV_T *mat) {
    int64_t o_n = a->out_channels, l = a->out_h * a->out_w, ld = nb * l;
    const CT_CONV_T *gy = (const CT_CONV_T *)a->y;
    CT_CONV_T *gb = (CT_CONV_T *)a->grad_bias;
    int64_t work = nb * o_n * l;
    (void)work;
#ifdef _OPENMP
#pragma omp parallel for if (work >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t o = 0; o < o_n; o++) {
        double sum = 0;
        for (int64_t b = 0; b < nb; b++) {
            const CT_CONV_T *row = gy + ((n0 + b) * o_n + o) * l;
            memcpy(mat + o * ld + b * l, row, (size_t)l * sizeof *row);
            if (gb)
                for (int64_t p = 0; p < l; p++) sum += row[p];
        }
        if (gb) gb[o] = (CT_CONV_T)(n0 == 0 ? sum : gb[o] + sum);
    }
}

/* Forward of images n0 .. n0 + nb: y = W @ col (+ bias), one GEMM per group. */
static void CT_CONV_FN(forward_chunk)(const ct_conv2d_args *a, int64_t n0, int64_t nb,
                                      CT_CONV_T *col, CT_CONV_T *mat) {
    int64_t ld = nb * a->out_h * a->out_w, g_n = a->groups;
    int64_t og = a->out_channels / g_n, kg = a->in_channels / g_n * a->kernel_h * a->kernel_w;
    CT_CONV_FN(im2col)(a, n0, nb, col);
    for (int64_t g = 0; g < g_n; g++)
        conv_gemm(a->dtype, false, false, og, ld, kg, a->weight, g * og * kg, kg, col, g * kg * ld,
                  ld, 0.0, mat, g * og * ld, ld);
    CT_CONV_FN(scatter_output)(a, n0, nb, mat);
}

/* Backward of images n0 .. n0 + nb: dW (+)= dY @ col^T, db (+)= row sums of dY, and
 * dcol = W^T @ dY scattered back into grad_x by col2im. */
static void CT_CONV_FN(backward_chunk)(const ct_conv2d_args *a, int64_t n0, int64_t nb,
                                       CT_CONV_T *col, CT_CONV_T *mat) {
    int64_t l = a->out_h * a->out_w, ld = nb * l, g_n = a->groups;
    int64_t og = a->out_channels / g_n, kg = a->in_channels / g_n * a->kernel_h * a->kernel_w;
    CT_CONV_FN(gather_grad)(a, n0, nb, mat);
    if (a->grad_weight) {
        CT_CONV_FN(im2col)(a, n0, nb, col);
        for (int64_t g = 0; g < g_n; g++)
            conv_gemm(a->dtype, false, true, og, kg, ld, (char *)mat, g * og * ld, ld, col,
                      g * kg * ld, ld, n0 == 0 ? 0.0 : 1.0, a->grad_weight, g * og * kg, kg);
    }
    if (!a->grad_x) return;
    for (int64_t g = 0; g < g_n; g++)
        conv_gemm(a->dtype, true, false, kg, ld, og, a->weight, g * og * kg, kg, (char *)mat,
                  g * og * ld, ld, 0.0, col, g * kg * ld, ld);
    int64_t c_n = a->in_channels, plane = a->in_h * a->in_w;
    CT_CONV_T *dx = (CT_CONV_T *)a->grad_x;
    int64_t work = nb * c_n * a->kernel_h * a->kernel_w * l;
    (void)work;
#ifdef _OPENMP
#pragma omp parallel for if (work >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t item = 0; item < nb * c_n; item++) {
        int64_t b = item / c_n, c = item % c_n;
        CT_CONV_FN(col2im_plane)(a, col + b * l, ld, c, dx + (n0 + b) * c_n * plane);
    }
}

/* ---- per-image path: images on OpenMP threads, each with its own scratch ---- */

/* Forward of image n into y with one thread's col (K x L): y_n = W @ col_n + bias. */
static void CT_CONV_FN(forward_image)(const ct_conv2d_args *a, int64_t n, CT_CONV_T *col) {
    int64_t l = a->out_h * a->out_w, g_n = a->groups, c_n = a->in_channels;
    int64_t og = a->out_channels / g_n, kg = c_n / g_n * a->kernel_h * a->kernel_w;
    const CT_CONV_T *x = (const CT_CONV_T *)a->x + n * c_n * a->in_h * a->in_w;
    CT_CONV_T *y = (CT_CONV_T *)a->y + n * a->out_channels * l;
    const CT_CONV_T *bias = (const CT_CONV_T *)a->bias;
    for (int64_t c = 0; c < c_n; c++) CT_CONV_FN(im2col_plane)(a, x, col, l, c);
    if (bias)
        for (int64_t o = 0; o < a->out_channels; o++)
            for (int64_t p = 0; p < l; p++) y[o * l + p] = bias[o];
    for (int64_t g = 0; g < g_n; g++)
        conv_gemm(a->dtype, false, false, og, l, kg, a->weight, g * og * kg, kg, col, g * kg * l, l,
                  bias ? 1.0 : 0.0, y, g * og * l, l);
}

/* Backward of image n: this thread's dw and db partial sums grow by image n's share;
 * grad_x's image n is written whole. col: the thread's K x L scratch. */
static void CT_CONV_FN(backward_image)(const ct_conv2d_args *a, int64_t n, CT_CONV_T *col,
                                       CT_CONV_T *dw, CT_CONV_T *db) {
    int64_t l = a->out_h * a->out_w, g_n = a->groups, c_n = a->in_channels;
    int64_t og = a->out_channels / g_n, kg = c_n / g_n * a->kernel_h * a->kernel_w;
    const CT_CONV_T *gy = (const CT_CONV_T *)a->y + n * a->out_channels * l;
    if (db)
        for (int64_t o = 0; o < a->out_channels; o++)
            for (int64_t p = 0; p < l; p++) db[o] += gy[o * l + p];
    if (dw) {
        const CT_CONV_T *x = (const CT_CONV_T *)a->x + n * c_n * a->in_h * a->in_w;
        for (int64_t c = 0; c < c_n; c++) CT_CONV_FN(im2col_plane)(a, x, col, l, c);
        for (int64_t g = 0; g < g_n; g++)
            conv_gemm(a->dtype, false, true, og, kg, l, gy, g * og * l, l, col, g * kg * l, l, 1.0,
                      dw, g * og * kg, kg);
    }
    if (!a->grad_x) return;
    for (int64_t g = 0; g < g_n; g++)
        conv_gemm(a->dtype, true, false, kg, l, og, a->weight, g * og * kg, kg, gy, g * og * l, l,
                  0.0, col, g * kg * l, l);
    CT_CONV_T *dx = (CT_CONV_T *)a->grad_x + n * c_n * a->in_h * a->in_w;
    for (int64_t c = 0; c < c_n; c++) CT_CONV_FN(col2im_plane)(a, col, l, c, dx);
}

/* The per-image path over the whole batch with nt threads; scratch per thread: col, then
 * (backward) partial dw and db, summed into grad_weight and grad_bias at the end. */
static void CT_CONV_FN(per_image)(const ct_conv2d_args *a, bool backward, int nt,
                                  int64_t per_thread) {
    int64_t wn = a->grad_weight
                     ? a->out_channels * (a->in_channels / a->groups) * a->kernel_h * a->kernel_w
                     : 0;
    int64_t bn = a->grad_bias ? a->out_channels : 0, col_n = per_thread - wn - bn;
    CT_CONV_T *ws = (CT_CONV_T *)a->workspace;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        CT_CONV_T *col = ws + t * per_thread, *dw = col + col_n, *db = dw + wn;
        for (int64_t i = 0; i < wn + bn; i++) dw[i] = 0;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t n = 0; n < a->batch; n++) {
            if (backward)
                CT_CONV_FN(backward_image)(a, n, col, wn ? dw : NULL, bn ? db : NULL);
            else
                CT_CONV_FN(forward_image)(a, n, col);
        }
        /* The implicit barrier above: every partial sum is complete. */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t i = 0; i < wn + bn; i++) {
            double sum = 0;
            for (int k = 0; k < nt; k++) sum += ws[k * per_thread + col_n + i];
            if (i < wn)
                ((CT_CONV_T *)a->grad_weight)[i] = (CT_CONV_T)sum;
            else
                ((CT_CONV_T *)a->grad_bias)[i - wn] = (CT_CONV_T)sum;
        }
    }
}

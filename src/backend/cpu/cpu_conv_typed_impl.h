/* The typed loops of the CPU convolution (cpu_conv.c), included once per element type with
 * CT_CONV_T (float or double) and CT_CONV_FN(name) (name suffixed by the type) defined.
 *
 * One image at a time, in tiles of output rows [oh0, oh1): the tile's column matrix col has
 * one row per (input channel, kernel row, kernel column) and one column per output pixel of
 * the tile (lt = (oh1 - oh0) * out_w of them, col's leading dimension), so the tile's output
 * (out_channels, lt) is W @ col, one GEMM per group, written in place in the image's output
 * (leading dimension L = out_h * out_w). */

/* Stride 1 with an output as wide as the input (a "same" convolution, the common case):
 * for a kernel offset, the output plane is the input plane shifted by `shift` elements, so
 * the valid rows of a tile move as one block; the columns outside [lo, hi), which the block
 * took from the neighbouring rows, and the rows outside, are zero. */
static bool CT_CONV_FN(same_width)(const ct__conv2d_args *a) {
    return a->stride[0] == 1 && a->stride[1] == 1 && a->out_w == a->in_w;
}

/* im2col of input channel c of one image x, output rows [oh0, oh1), into its
 * kernel_h * kernel_w rows of col (leading dimension ld). */
CT_CPU_CLONES static void CT_CONV_FN(im2col_plane)(const ct__conv2d_args *a, const CT_CONV_T *x,
                                                   CT_CONV_T *col, int64_t ld, int64_t c,
                                                   int64_t oh0, int64_t oh1) {
    int64_t ow_n = a->out_w, h = a->in_h, w = a->in_w, sw = a->stride[1];
    const CT_CONV_T *plane = x + c * h * w;
    bool same = CT_CONV_FN(same_width)(a);
    for (int64_t i = 0; i < a->kernel_h; i++) {
        for (int64_t j = 0; j < a->kernel_w; j++) {
            CT_CONV_T *dst = col + ((c * a->kernel_h + i) * a->kernel_w + j) * ld;
            conv_offset f = conv_offset_in_tile(a, i, j, oh0, oh1);
            int64_t io = f.io, jo = f.jo, oh_lo = f.row_lo, oh_hi = f.row_hi, lo = f.lo, hi = f.hi;
            for (int64_t k = 0; k < (oh_lo - oh0) * ow_n; k++) dst[k] = 0;
            for (int64_t k = (oh_hi - oh0) * ow_n; k < (oh1 - oh0) * ow_n; k++) dst[k] = 0;
            if (same && lo < hi && oh_lo < oh_hi) {
                int64_t shift = io * w + jo, first = oh0 * w; /* plane element k: dst[k - first] */
                for (int64_t k = oh_lo * w + lo; k < (oh_hi - 1) * w + hi; k++)
                    dst[k - first] = plane[k + shift];
            }
            for (int64_t oh = oh_lo; oh < oh_hi; oh++) {
                CT_CONV_T *d = dst + (oh - oh0) * ow_n;
                for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;
                for (int64_t ow = hi; ow < ow_n; ow++) d[ow] = 0;
                if (same) continue;
                const CT_CONV_T *src = plane + (oh * a->stride[0] + io) * w;
                for (int64_t ow = lo; ow < hi; ow++) d[ow] = src[ow * sw + jo];
            }
        }
    }
}

/* col2im: adds output rows [oh0, oh1)' share of the gradient of input channel c of one image
 * from its rows of col (leading dimension ld) into dx. col is scratch: its entries outside
 * the image are zeroed on the way, so that a "same" convolution's rows add as one block (as
 * im2col_plane copies them). */
CT_CPU_CLONES static void CT_CONV_FN(col2im_plane)(const ct__conv2d_args *a, CT_CONV_T *col,
                                                   int64_t ld, int64_t c, CT_CONV_T *dx,
                                                   int64_t oh0, int64_t oh1) {
    int64_t ow_n = a->out_w, h = a->in_h, w = a->in_w, sw = a->stride[1];
    CT_CONV_T *plane = dx + c * h * w;
    bool same = CT_CONV_FN(same_width)(a);
    for (int64_t i = 0; i < a->kernel_h; i++) {
        for (int64_t j = 0; j < a->kernel_w; j++) {
            CT_CONV_T *src = col + ((c * a->kernel_h + i) * a->kernel_w + j) * ld;
            conv_offset f = conv_offset_in_tile(a, i, j, oh0, oh1);
            int64_t io = f.io, jo = f.jo, oh_lo = f.row_lo, oh_hi = f.row_hi, lo = f.lo, hi = f.hi;
            if (lo >= hi) continue;
            for (int64_t oh = oh_lo; oh < oh_hi; oh++) {
                CT_CONV_T *s = src + (oh - oh0) * ow_n;
                if (same) {
                    for (int64_t ow = 0; ow < lo; ow++) s[ow] = 0;
                    for (int64_t ow = hi; ow < ow_n; ow++) s[ow] = 0;
                    continue;
                }
                CT_CONV_T *row = plane + (oh * a->stride[0] + io) * w;
                for (int64_t ow = lo; ow < hi; ow++) row[ow * sw + jo] += s[ow];
            }
            if (same && oh_lo < oh_hi) {
                int64_t shift = io * w + jo, first = oh0 * w; /* plane element k: src[k - first] */
                for (int64_t k = oh_lo * w + lo; k < (oh_hi - 1) * w + hi; k++)
                    plane[k + shift] += src[k - first];
            }
        }
    }
}

/* y's rows (channels of them, n long, ld apart) set to their channel's bias. */
CT_CPU_CLONES static void CT_CONV_FN(fill_bias)(CT_CONV_T *y, const CT_CONV_T *bias,
                                                int64_t channels, int64_t n, int64_t ld) {
    for (int64_t o = 0; o < channels; o++)
        for (int64_t p = 0; p < n; p++) y[o * ld + p] = bias[o];
}

/* Forward of output rows [oh0, oh1) of image n into y with one thread's col:
 * y_n's rows = W @ col + bias. */
static void CT_CONV_FN(forward_tile)(const ct__conv2d_args *a, int64_t n, int64_t oh0, int64_t oh1,
                                     CT_CONV_T *col) {
    int64_t l = a->out_h * a->out_w, g_n = a->groups, c_n = a->in_channels;
    int64_t og = a->out_channels / g_n, kg = c_n / g_n * a->kernel_h * a->kernel_w;
    int64_t lt = (oh1 - oh0) * a->out_w, at = oh0 * a->out_w;
    const CT_CONV_T *x = (const CT_CONV_T *)a->x + n * c_n * a->in_h * a->in_w;
    CT_CONV_T *y = (CT_CONV_T *)a->y + n * a->out_channels * l;
    const CT_CONV_T *bias = (const CT_CONV_T *)a->bias;
    if (bias) CT_CONV_FN(fill_bias)(y + at, bias, a->out_channels, lt, l);
    for (int64_t c = 0; c < c_n; c++) CT_CONV_FN(im2col_plane)(a, x, col, lt, c, oh0, oh1);
    for (int64_t g = 0; g < g_n; g++)
        conv_gemm(a, false, false, og, lt, kg, a->weight, g * og * kg, kg, col, g * kg * lt, lt,
                  bias ? 1.0 : 0.0, y, g * og * l + at, l);
}

/* Backward of image n: this thread's dw partial sums grow by image n's share (dw NULL: no
 * weight gradient); grad_x's image n is written whole. col: the thread's scratch for one
 * tile. */
static void CT_CONV_FN(backward_image)(const ct__conv2d_args *a, int64_t n, CT_CONV_T *col,
                                       CT_CONV_T *dw) {
    int64_t l = a->out_h * a->out_w, g_n = a->groups, c_n = a->in_channels;
    int64_t og = a->out_channels / g_n, kg = c_n / g_n * a->kernel_h * a->kernel_w;
    int64_t rows = conv_tile_rows(a), image = c_n * a->in_h * a->in_w;
    const CT_CONV_T *gy = (const CT_CONV_T *)a->y + n * a->out_channels * l;
    const CT_CONV_T *x = (const CT_CONV_T *)a->x + n * image;
    CT_CONV_T *dx = a->grad_x ? (CT_CONV_T *)a->grad_x + n * image : NULL;
    if (dx)
        for (int64_t p = 0; p < image; p++) dx[p] = 0;
    for (int64_t oh0 = 0; oh0 < a->out_h; oh0 += rows) {
        int64_t oh1 = oh0 + rows < a->out_h ? oh0 + rows : a->out_h, lt = (oh1 - oh0) * a->out_w;
        int64_t at = oh0 * a->out_w; /* the tile's first pixel in gy's rows */
        if (dw) {
            for (int64_t c = 0; c < c_n; c++) CT_CONV_FN(im2col_plane)(a, x, col, lt, c, oh0, oh1);
            for (int64_t g = 0; g < g_n; g++)
                conv_gemm(a, false, true, og, kg, lt, gy, g * og * l + at, l, col, g * kg * lt, lt,
                          1.0, dw, g * og * kg, kg);
        }
        if (!dx) continue;
        for (int64_t g = 0; g < g_n; g++)
            conv_gemm(a, true, false, kg, lt, og, a->weight, g * og * kg, kg, gy, g * og * l + at,
                      l, 0.0, col, g * kg * lt, lt);
        for (int64_t c = 0; c < c_n; c++) CT_CONV_FN(col2im_plane)(a, col, lt, c, dx, oh0, oh1);
    }
}

/* The calling thread's col in the workspace ws (col_n elements per thread). */
static CT_CONV_T *CT_CONV_FN(thread_col)(CT_CONV_T *ws, int64_t col_n) {
#ifdef _OPENMP
    return ws + omp_get_thread_num() * col_n;
#else
    (void)col_n;
    return ws;
#endif
}

/* The forward pass: (image, tile) items taken by nt threads as they come free (a thread
 * the OS deschedules then holds no one up), each thread with its own col. */
static void CT_CONV_FN(run_forward)(const ct__conv2d_args *a, int nt) {
    int64_t rows = conv_tile_rows(a), col_n = conv_col_elements(a);
    int64_t tiles = rows > 0 ? (a->out_h + rows - 1) / rows : 0;
    CT_CONV_T *ws = (CT_CONV_T *)a->workspace;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
    {
        CT_CONV_T *col = CT_CONV_FN(thread_col)(ws, col_n);
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int64_t item = 0; item < a->batch * tiles; item++) {
            int64_t n = item / tiles, oh0 = item % tiles * rows;
            int64_t oh1 = oh0 + rows < a->out_h ? oh0 + rows : a->out_h;
            CT_CONV_FN(forward_tile)(a, n, oh0, oh1, col);
        }
    }
}

/* The backward pass: the batch in nblocks blocks of consecutive images, taken by nt threads
 * as they come free. Scratch: one col per thread, then a partial dw per block, summed
 * in block order at the end, so the result does not depend on which thread ran which block
 * (nor on the team being smaller than nt inside another parallel region). */
static void CT_CONV_FN(run_backward)(const ct__conv2d_args *a, int nt, int64_t nblocks) {
    int64_t wn = a->out_channels * (a->in_channels / a->groups) * a->kernel_h * a->kernel_w;
    int64_t part = wn, col_n = conv_col_elements(a);
    CT_CONV_T *ws = (CT_CONV_T *)a->workspace, *parts = ws + nt * col_n;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
    {
        CT_CONV_T *col = CT_CONV_FN(thread_col)(ws, col_n);
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int64_t blk = 0; blk < nblocks; blk++) {
            CT_CONV_T *dw = parts + blk * part;
            for (int64_t i = 0; i < part; i++) dw[i] = 0;
            CT_CONV_T *pdw = a->grad_weight ? dw : NULL;
            for (int64_t n = blk * a->batch / nblocks; n < (blk + 1) * a->batch / nblocks; n++)
                CT_CONV_FN(backward_image)(a, n, col, pdw);
        }
        /* The implicit barrier above: every partial sum is complete. */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t i = 0; i < part; i++) {
            double sum = 0;
            for (int64_t blk = 0; blk < nblocks; blk++) sum += parts[blk * part + i];
            if (a->grad_weight) ((CT_CONV_T *)a->grad_weight)[i] = (CT_CONV_T)sum;
        }
    }
}

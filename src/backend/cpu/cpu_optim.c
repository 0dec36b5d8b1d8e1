/* CPU optimiser kernels: the fused SGD/Adam/AdamW update of a list of tensors, and the norm
 * and scaling of a list of gradients (gradient clipping). The list's elements form one index
 * space [0, total), tensor after tensor, which one OpenMP region splits into equal parts;
 * the element formulas are those of optim_update_impl.h, shared with CUDA. */
#include <math.h>

#include "backend/cpu/cpu_impl.h"
#include "backend/optim_update_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"

/* Elements of one norm partial: partials depend only on the sizes, so the norm is the same
 * whatever the number of threads. */
#define NORM_BLOCK 32768

/* Start of part k of `parts` equal parts of [0, total). */
static int64_t part_start(int64_t total, int parts, int k) {
    int64_t q = total / parts, r = total % parts;
    return q * k + (k < r ? k : r);
}

/* An update reads and writes a parameter, its gradient and up to two state buffers per
 * element: about four elementwise ops' worth of work (the parallel policy's unit). */
static int parts_for(int64_t total) { return ct__cpu_threads_for_elements(4 * total); }

/* The offset i of an optional state buffer (NULL stays NULL: no arithmetic on it). */
#define STATE_AT_(buf, i) ((buf) ? (buf) + (i) : NULL)

/* Elements [lo, hi) of one tensor's update, in its element type. */
#define CPU_UPDATE_(T, S)                                                                          \
    static void update_##S(const ct__optim_args *a, const ct__optim_tensor *t, int64_t lo,         \
                           int64_t hi) {                                                           \
        T *p = (T *)t->param, *s0 = (T *)t->state[0], *s1 = (T *)t->state[1];                      \
        T *s2 = (T *)t->state[2];                                                                  \
        const T *g = (const T *)t->grad;                                                           \
        if (a->kind == CT_OPTIM_SGD) {                                                             \
            ct__sgd_coef_##S c = ct__sgd_coef_make_##S(a, t);                                      \
            for (int64_t i = lo; i < hi; i++)                                                      \
                ct__sgd_update_##S(&c, p + i, g[i], STATE_AT_(s0, i));                             \
            return;                                                                                \
        }                                                                                          \
        ct__adam_coef_##S c = ct__adam_coef_make_##S(a, t);                                        \
        /* The common settings get loops of their own, where the per-element branches fold         \
         * away and the loop vectorises; the formulas are the same. */                             \
        if (!c.amsgrad && c.w1 < (T)0.5 && (c.decoupled || c.wd == 0)) {                           \
            if (c.decoupled)                                                                       \
                for (int64_t i = lo; i < hi; i++)                                                  \
                    ct__adam_update_##S(&c, p + i, g[i], s0 + i, s1 + i, NULL);                    \
            else                                                                                   \
                for (int64_t i = lo; i < hi; i++)                                                  \
                    ct__adam_update_##S(&c, p + i, g[i], s0 + i, s1 + i, NULL);                    \
            return;                                                                                \
        }                                                                                          \
        for (int64_t i = lo; i < hi; i++)                                                          \
            ct__adam_update_##S(&c, p + i, g[i], s0 + i, s1 + i, STATE_AT_(s2, i));                \
    }

CPU_UPDATE_(float, f32)
CPU_UPDATE_(double, f64)

/* Elements [begin, end) of the list's index space. */
static void update_range(const ct__optim_args *a, int64_t begin, int64_t end) {
    int64_t base = 0;
    for (int k = 0; k < a->count && base < end; k++) {
        const ct__optim_tensor *t = &a->tensors[k];
        int64_t lo = begin > base ? begin - base : 0;
        int64_t hi = end - base < t->numel ? end - base : t->numel;
        if (lo < hi) {
            if (t->dtype == CT_F32)
                update_f32(a, t, lo, hi);
            else
                update_f64(a, t, lo, hi);
        }
        base += t->numel;
    }
}

ct_status ct__cpu_optim_step(int device, const ct__optim_args *args) {
    (void)device;
    int parts = parts_for(args->total);
    if (parts == 1) {
        update_range(args, 0, args->total);
        return CT_OK;
    }
#pragma omp parallel for schedule(static) num_threads(parts)
    for (int k = 0; k < parts; k++)
        update_range(args, part_start(args->total, parts, k),
                     part_start(args->total, parts, k + 1));
    return CT_OK;
}

/* ---- gradient norm and scaling ---- */

/* A position in the list that only moves forward: tensor k starts at index base. */
typedef struct list_cursor {
    int k;
    int64_t base;
} list_cursor;

static double combine(double acc, double term, double p) {
    return isinf(p) ? ct__norm_max(acc, term) : acc + term;
}

/* The norm partial of elements [lo, hi) of one tensor, fast for the sum of squares. */
static double tensor_partial(const ct__list_tensor *t, int64_t lo, int64_t hi, double p) {
    double acc = 0.0;
    if (p == 2.0 && t->dtype == CT_F32) {
        const float *x = (const float *)t->data;
        for (int64_t i = lo; i < hi; i++) acc += (double)x[i] * (double)x[i];
        return acc;
    }
    if (p == 2.0 && t->dtype == CT_F64) {
        const double *x = (const double *)t->data;
        for (int64_t i = lo; i < hi; i++) acc += x[i] * x[i];
        return acc;
    }
    size_t size = ct__dtype_size(t->dtype);
    for (int64_t i = lo; i < hi; i++)
        acc =
            combine(acc, ct__norm_term(ct__load_f64(t->data + i * (int64_t)size, t->dtype), p), p);
    return acc;
}

/* The norm partial of elements [begin, end), advancing the cursor to begin's tensor. */
static double range_partial(const ct__list_args *a, list_cursor *c, int64_t begin, int64_t end,
                            double p) {
    while (c->k < a->count && c->base + a->tensors[c->k].numel <= begin)
        c->base += a->tensors[c->k++].numel;
    double acc = 0.0;
    int64_t base = c->base;
    for (int k = c->k; k < a->count && base < end; k++) {
        const ct__list_tensor *t = &a->tensors[k];
        int64_t lo = begin > base ? begin - base : 0;
        int64_t hi = end - base < t->numel ? end - base : t->numel;
        if (lo < hi) acc = combine(acc, tensor_partial(t, lo, hi, p), p);
        base += t->numel;
    }
    return acc;
}

/* Partials of blocks [first, last) of NORM_BLOCK elements. */
static void block_partials(const ct__list_args *a, int64_t first, int64_t last, double p,
                           double *partials) {
    list_cursor c = {0, 0};
    for (int64_t b = first; b < last; b++) {
        int64_t end = (b + 1) * NORM_BLOCK < a->total ? (b + 1) * NORM_BLOCK : a->total;
        partials[b] = range_partial(a, &c, b * NORM_BLOCK, end, p);
    }
}

ct_status ct__cpu_list_norm(int device, const ct__list_args *args, double p, double *out) {
    (void)device;
    int64_t blocks = (args->total + NORM_BLOCK - 1) / NORM_BLOCK;
    if (blocks <= 1) {
        list_cursor c = {0, 0};
        *out = range_partial(args, &c, 0, args->total, p);
        return CT_OK;
    }
    double *partials = ct__malloc((size_t)blocks * sizeof *partials);
    if (!partials)
        return ct__error(CT_ERR_OUT_OF_MEMORY,
                         "gradient norm: out of host memory for %lld partial sums",
                         (long long)blocks);
    int parts = parts_for(args->total);
    if (parts > blocks) parts = (int)blocks;
#pragma omp parallel for schedule(static) num_threads(parts) if (parts > 1)
    for (int k = 0; k < parts; k++)
        block_partials(args, part_start(blocks, parts, k), part_start(blocks, parts, k + 1), p,
                       partials);
    double acc = 0.0;
    for (int64_t b = 0; b < blocks; b++) acc = combine(acc, partials[b], p);
    ct__free_mem(partials);
    *out = acc;
    return CT_OK;
}

static void scale_range(const ct__list_args *a, int64_t begin, int64_t end, double factor) {
    int64_t base = 0;
    for (int k = 0; k < a->count && base < end; k++) {
        const ct__list_tensor *t = &a->tensors[k];
        int64_t lo = begin > base ? begin - base : 0;
        int64_t hi = end - base < t->numel ? end - base : t->numel;
        base += t->numel;
        if (t->dtype == CT_F64) {
            double *x = (double *)t->data;
            for (int64_t i = lo; i < hi; i++) x[i] *= factor;
            continue;
        }
        /* f32, f16 and bf16 multiply in float, as PyTorch's mul by an f32 scalar. */
        size_t size = ct__dtype_size(t->dtype);
        float f = (float)factor;
        for (int64_t i = lo; i < hi; i++) {
            char *x = t->data + i * (int64_t)size;
            ct__store_f64(x, t->dtype, (double)((float)ct__load_f64(x, t->dtype) * f));
        }
    }
}

ct_status ct__cpu_list_scale(int device, const ct__list_args *args, double factor) {
    (void)device;
    int parts = parts_for(args->total);
    if (parts == 1) {
        scale_range(args, 0, args->total, factor);
        return CT_OK;
    }
#pragma omp parallel for schedule(static) num_threads(parts)
    for (int k = 0; k < parts; k++)
        scale_range(args, part_start(args->total, parts, k), part_start(args->total, parts, k + 1),
                    factor);
    return CT_OK;
}

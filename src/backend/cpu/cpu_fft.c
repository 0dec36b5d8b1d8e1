/* The CPU FFT engine's batched entries (cpu_fft.h): a cached plan, then the batch's
 * transforms, in double, split over the library's OpenMP team (as many threads as the work pays
 * for, ct__cpu_threads_for), each thread with its own work buffer. Each transform is computed the
 * same way whatever the thread count, so the results do not depend on it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/cpu_fft.h"
#include "backend/cpu/cpu_fft_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "core/error_impl.h"

/* A transform costs about this many ns per point and radix-2 level on one core. */
#define CT_FFT_NS_PER_POINT_LEVEL 1.0

typedef struct fft_job {
    const ct__fft_plan *plan;
    const ct__fft_layout *layout;
    const char *in;
    char *out;
    bool f32; /* float data, widened to double for the transform */
} fft_job;

/* Elements of one transform's input and output, and the scalars in each element. */
static int64_t input_count(const ct__fft_plan *p) {
    return p->kind == CT_FFT_C2R ? p->n / 2 + 1 : p->n;
}
static int64_t output_count(const ct__fft_plan *p) {
    return p->kind == CT_FFT_R2C ? p->n / 2 + 1 : p->n;
}
static int input_scalars(const ct__fft_plan *p) { return p->kind == CT_FFT_R2C ? 1 : 2; }
static int output_scalars(const ct__fft_plan *p) { return p->kind == CT_FFT_C2R ? 1 : 2; }

static void exec(const ct__fft_plan *plan, const double *in, int64_t stride, double *out,
                 double *scratch) {
    if (plan->kind == CT_FFT_C2C)
        ct__fft_exec_c2c(plan, in, stride, out, scratch);
    else if (plan->kind == CT_FFT_R2C)
        ct__fft_exec_r2c(plan, in, stride, out, scratch);
    else
        ct__fft_exec_c2r(plan, in, stride, out, scratch);
}

/* Double pairs of work one transform needs: its result (n pairs) and the plan's scratch, and
 * for float data the widened input too. */
static int64_t work_pairs(const ct__fft_plan *plan, bool f32) {
    return plan->n + plan->scratch + (f32 ? plan->n : 0);
}

/* Transform b of the batch, in double. Float input is widened into work first and the result
 * rounded once when stored, so a float transform's error is that of the rounding alone.
 * Double output goes straight to its place when that is contiguous and apart from the input,
 * else through work. */
static void run_one(const fft_job *job, int64_t b, double *work) {
    const ct__fft_plan *plan = job->plan;
    const ct__fft_layout *l = job->layout;
    size_t real = job->f32 ? sizeof(float) : sizeof(double);
    int in_k = input_scalars(plan), out_k = output_scalars(plan);
    const char *in = job->in + b * l->in_dist * in_k * (int64_t)real;
    char *out = job->out + b * l->out_dist * out_k * (int64_t)real;
    int64_t count = output_count(plan), scalars = count * out_k;
    double *dest = work, *scratch = work + 2 * l->n;
    if (job->f32) {
        double *wide = scratch + 2 * plan->scratch;
        const float *x = (const float *)in;
        for (int64_t i = 0; i < input_count(plan); i++)
            for (int c = 0; c < in_k; c++) wide[i * in_k + c] = x[i * l->in_stride * in_k + c];
        exec(plan, wide, 1, dest, scratch);
        float *y = (float *)out;
        for (int64_t i = 0; i < count; i++)
            for (int c = 0; c < out_k; c++)
                y[i * l->out_stride * out_k + c] = (float)(dest[i * out_k + c] * l->scale);
        return;
    }
    bool direct = l->out_stride == 1 && job->in != job->out;
    if (direct) dest = (double *)out;
    exec(plan, (const double *)in, l->in_stride, dest, scratch);
    if (l->scale != 1.0)
        for (int64_t i = 0; i < scalars; i++) dest[i] *= l->scale;
    if (!direct)
        for (int64_t i = 0; i < count; i++)
            memcpy(out + i * l->out_stride * out_k * (int64_t)real, dest + i * out_k,
                   (size_t)out_k * real);
}

static ct_status run(bool f64, ct__fft_kind kind, int sign, const ct__fft_layout *layout,
                     const void *in, void *out, const char *name) {
    if (!layout || layout->n < 1 || layout->batch < 0 || (sign != -1 && sign != 1) ||
        (layout->batch > 0 && (!in || !out)))
        return ct__error(CT_ERR_INVALID_ARG, "%s: bad length, batch, sign or buffer", name);
    if (layout->batch == 0) return CT_OK;
    ct__fft_plan *plan = ct__fft_plan_get(layout->n, kind, sign);
    if (!plan)
        return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: no memory for a plan of length %lld", name,
                         (long long)layout->n);
    fft_job job = {plan, layout, in, out, !f64};
    size_t work_bytes = (size_t)work_pairs(plan, !f64) * 2 * sizeof(double);
    double levels = log2((double)layout->n) + 1.0;
    int64_t threads = ct__cpu_threads_for((double)layout->batch * (double)layout->n * levels *
                                          CT_FFT_NS_PER_POINT_LEVEL);
    if (threads > layout->batch) threads = layout->batch;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads((int)threads) if (threads > 1)
#endif
    {
        double *work = malloc(work_bytes);
        if (!work) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t b = 0; b < layout->batch; b++)
            if (work) run_one(&job, b, work);
        free(work);
    }
    ct__fft_plan_release(plan);
    if (failed)
        return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: no memory for the work buffers (%zu bytes)",
                         name, work_bytes);
    return CT_OK;
}

ct_status ct__fft_c2c(bool f64, int sign, const ct__fft_layout *layout, const void *in, void *out) {
    return run(f64, CT_FFT_C2C, sign, layout, in, out, "fft");
}

ct_status ct__fft_r2c(bool f64, const ct__fft_layout *layout, const void *in, void *out) {
    return run(f64, CT_FFT_R2C, -1, layout, in, out, "rfft");
}

ct_status ct__fft_c2r(bool f64, const ct__fft_layout *layout, const void *in, void *out) {
    return run(f64, CT_FFT_C2R, 1, layout, in, out, "irfft");
}

ct_status ct__cpu_fft(int device, const ct__fft_args *args) {
    (void)device;
    ct__fft_layout l = {args->n,          args->batch,    args->in_stride, args->in_dist,
                        args->out_stride, args->out_dist, args->scale};
    bool f64 = args->dtype == CT_F64;
    if (args->type == CT_FFT_TYPE_R2C) return ct__fft_r2c(f64, &l, args->in, args->out);
    if (args->type == CT_FFT_TYPE_C2R) return ct__fft_c2r(f64, &l, args->in, args->out);
    return ct__fft_c2c(f64, args->sign, &l, args->in, args->out);
}

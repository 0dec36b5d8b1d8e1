/* The CPU FFT engine's batched entries (cpu_fft.h): a cached plan, then the batch's
 * transforms split over the library's OpenMP team (as many threads as the work pays for,
 * ct__cpu_threads_for), each thread with its own work buffer. Each transform is computed the
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
    size_t in_size, out_size; /* bytes of one input and one output element */
} fft_job;

/* Transform b of the batch; work holds n + plan->scratch pairs. The output goes straight to
 * its place when that is contiguous and apart from the input, else through work. */
static void run_one(const fft_job *job, int64_t b, char *work) {
    const ct__fft_plan *plan = job->plan;
    const ct__fft_layout *l = job->layout;
    bool f64 = plan->f64;
    size_t pair = f64 ? 2 * sizeof(double) : 2 * sizeof(float);
    const char *in = job->in + b * l->in_dist * (int64_t)job->in_size;
    char *out = job->out + b * l->out_dist * (int64_t)job->out_size;
    int64_t count = plan->kind == CT_FFT_C2R   ? l->n
                    : plan->kind == CT_FFT_R2C ? l->n / 2 + 1
                                               : l->n;
    bool direct = l->out_stride == 1 && job->in != job->out;
    char *dest = direct ? out : work, *scratch = work + (size_t)l->n * pair;
    if (plan->kind == CT_FFT_C2C) {
        if (f64)
            ct__fft_exec_c2c_f64(plan, (const double *)in, l->in_stride, (double *)dest,
                                 (double *)scratch);
        else
            ct__fft_exec_c2c_f32(plan, (const float *)in, l->in_stride, (float *)dest,
                                 (float *)scratch);
    } else if (plan->kind == CT_FFT_R2C) {
        if (f64)
            ct__fft_exec_r2c_f64(plan, (const double *)in, l->in_stride, (double *)dest,
                                 (double *)scratch);
        else
            ct__fft_exec_r2c_f32(plan, (const float *)in, l->in_stride, (float *)dest,
                                 (float *)scratch);
    } else {
        if (f64)
            ct__fft_exec_c2r_f64(plan, (const double *)in, l->in_stride, (double *)dest,
                                 (double *)scratch);
        else
            ct__fft_exec_c2r_f32(plan, (const float *)in, l->in_stride, (float *)dest,
                                 (float *)scratch);
    }
    if (l->scale != 1.0) {
        int64_t scalars = count * (plan->kind == CT_FFT_C2R ? 1 : 2);
        if (f64)
            for (int64_t i = 0; i < scalars; i++) ((double *)dest)[i] *= l->scale;
        else
            for (int64_t i = 0; i < scalars; i++) ((float *)dest)[i] *= (float)l->scale;
    }
    if (!direct)
        for (int64_t i = 0; i < count; i++)
            memcpy(out + i * l->out_stride * (int64_t)job->out_size, work + i * job->out_size,
                   job->out_size);
}

static ct_status run(bool f64, ct__fft_kind kind, int sign, const ct__fft_layout *layout,
                     const void *in, void *out, const char *name) {
    if (!layout || layout->n < 1 || layout->batch < 0 || (sign != -1 && sign != 1) ||
        (layout->batch > 0 && (!in || !out)))
        return ct__error(CT_ERR_INVALID_ARG, "%s: bad length, batch, sign or buffer", name);
    if (layout->batch == 0) return CT_OK;
    ct__fft_plan *plan = ct__fft_plan_get(layout->n, f64, kind, sign);
    if (!plan)
        return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: no memory for a plan of length %lld", name,
                         (long long)layout->n);
    size_t real = f64 ? sizeof(double) : sizeof(float);
    fft_job job = {plan,
                   layout,
                   in,
                   out,
                   kind == CT_FFT_R2C ? real : 2 * real,
                   kind == CT_FFT_C2R ? real : 2 * real};
    size_t work_bytes = (size_t)(layout->n + plan->scratch) * 2 * real;
    double levels = log2((double)layout->n) + 1.0;
    int64_t threads = ct__cpu_threads_for((double)layout->batch * (double)layout->n * levels *
                                          CT_FFT_NS_PER_POINT_LEVEL);
    if (threads > layout->batch) threads = layout->batch;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads((int)threads) if (threads > 1)
#endif
    {
        char *work = malloc(work_bytes);
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

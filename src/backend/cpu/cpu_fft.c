/* The CPU FFT engine's batched entries (cpu_fft.h): a cached plan, then the batch's
 * transforms, in double, split over the library's OpenMP team (as many threads as the work pays
 * for, ct__cpu_threads_for), each thread with its own work buffer. Each transform is computed the
 * same way whatever the thread count, so the results do not depend on it. */
#include <math.h>
#include <stdatomic.h>
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
    bool f32; /* float data: read widened, the results rounded once when stored */
} fft_job;

static void exec(const ct__fft_plan *plan, ct__fft_input in, double *out, double *scratch) {
    if (plan->kind == CT_FFT_C2C)
        ct__fft_exec_c2c(plan, in, out, scratch);
    else if (plan->kind == CT_FFT_R2C)
        ct__fft_exec_r2c(plan, in, out, scratch);
    else
        ct__fft_exec_c2r(plan, in, out, scratch);
}

/* Transform b of the batch, in double; work holds n + plan->scratch pairs. Double output
 * goes straight to its place when that is contiguous and apart from the input, else through
 * work; float output always through work, rounded once as it is stored. */
static void run_one(const fft_job *job, int64_t b, double *work) {
    const ct__fft_plan *plan = job->plan;
    const ct__fft_layout *l = job->layout;
    int64_t real = job->f32 ? (int64_t)sizeof(float) : (int64_t)sizeof(double);
    int in_k = plan->kind == CT_FFT_R2C ? 1 : 2, out_k = plan->kind == CT_FFT_C2R ? 1 : 2;
    int64_t count = plan->kind == CT_FFT_R2C ? l->n / 2 + 1 : l->n, scalars = count * out_k;
    ct__fft_input in = {job->in + b * l->in_dist * in_k * real, l->in_stride, job->f32};
    char *out = job->out + b * l->out_dist * out_k * real;
    bool direct = !job->f32 && l->out_stride == 1 && job->in != job->out;
    double *dest = direct ? (double *)out : work, *scratch = work + 2 * l->n;
    exec(plan, in, dest, scratch);
    if (job->f32) {
        float *y = (float *)out;
        for (int64_t i = 0; i < count; i++)
            for (int c = 0; c < out_k; c++)
                y[i * l->out_stride * out_k + c] = (float)(dest[i * out_k + c] * l->scale);
        return;
    }
    if (l->scale != 1.0)
        for (int64_t i = 0; i < scalars; i++) dest[i] *= l->scale;
    if (!direct)
        for (int64_t i = 0; i < count; i++)
            memcpy(out + i * l->out_stride * out_k * real, dest + i * out_k,
                   (size_t)(out_k * real));
}

/* A thread's work buffer: the plan's spare when no other thread holds it (a buffer fresh from
 * malloc costs a page fault per 4 KiB at each call for large lengths), else a new one. */
static double *take_work(ct__fft_plan *plan, size_t bytes) {
    double *work = atomic_exchange(&plan->spare, NULL);
    return work ? work : malloc(bytes);
}

/* Back to the plan as its spare, unless it has one again. */
static void give_work(ct__fft_plan *plan, double *work) {
    double *none = NULL;
    if (work && !atomic_compare_exchange_strong(&plan->spare, &none, work)) free(work);
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
    size_t work_bytes = (size_t)(layout->n + plan->scratch) * 2 * sizeof(double);
    double levels = log2((double)layout->n) + 1.0;
    int64_t threads = ct__cpu_threads_for((double)layout->batch * (double)layout->n * levels *
                                          CT_FFT_NS_PER_POINT_LEVEL);
    if (threads > layout->batch) threads = layout->batch;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads((int)threads) if (threads > 1)
#endif
    {
        double *work = take_work(plan, work_bytes);
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
        give_work(plan, work);
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

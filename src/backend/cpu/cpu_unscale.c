/* The loss scaler's fused unscale and inf/NaN check on the CPU (list_unscale in
 * backend_impl.h): each gradient of the list is multiplied by 1/scale in one pass that also
 * notes whether it held an inf or NaN, split over the OpenMP threads where the measured
 * policy of cpu_threads.c says a split pays. */
#include <math.h>

#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"

static bool unscale_f32(float *x, int64_t n, float inv) {
    int bad = 0;
#ifdef _OPENMP
#pragma omp parallel for reduction(| : bad) schedule(static) if (n >= CT_CPU_PARALLEL_THRESHOLD)
#endif
    for (int64_t i = 0; i < n; i++) {
        bad |= !isfinite(x[i]);
        x[i] *= inv;
    }
    return bad != 0;
}

static bool unscale_f64(double *x, int64_t n, double inv) {
    int bad = 0;
#ifdef _OPENMP
#pragma omp parallel for reduction(| : bad) schedule(static) if (n >= CT_CPU_PARALLEL_THRESHOLD)
#endif
    for (int64_t i = 0; i < n; i++) {
        bad |= !isfinite(x[i]);
        x[i] *= inv;
    }
    return bad != 0;
}

/* f16 and bf16 multiply in f32, as PyTorch's unscale does, and round back. */
static bool unscale_half(char *x, ct_dtype dtype, int64_t n, float inv) {
    int bad = 0;
    size_t size = ct__dtype_size(dtype);
#ifdef _OPENMP
#pragma omp parallel for reduction(| : bad) schedule(static) if (n >= CT_CPU_PARALLEL_THRESHOLD)
#endif
    for (int64_t i = 0; i < n; i++) {
        char *p = x + i * (int64_t)size;
        float v = (float)ct__load_f64(p, dtype);
        bad |= !isfinite(v);
        ct__store_f64(p, dtype, (double)(v * inv));
    }
    return bad != 0;
}

ct_status ct__cpu_list_unscale(int device, const ct__list_args *args, double inv_scale,
                               int32_t *first_bad) {
    (void)device;
    *first_bad = -1;
    for (int k = 0; k < args->count; k++) {
        const ct__list_tensor *t = &args->tensors[k];
        bool bad = t->dtype == CT_F64 ? unscale_f64((double *)t->data, t->numel, inv_scale)
                   : t->dtype == CT_F32
                       ? unscale_f32((float *)t->data, t->numel, (float)inv_scale)
                       : unscale_half(t->data, t->dtype, t->numel, (float)inv_scale);
        if (bad && *first_bad < 0) *first_bad = k;
    }
    return CT_OK;
}

/* The loss scaler's fused unscale and inf/NaN check on the CPU (list_unscale in
 * backend_impl.h): each gradient of the list is multiplied by 1/scale in one pass that also
 * notes whether it held an inf or NaN, split over the OpenMP threads where the measured
 * policy of cpu_threads.c says a split pays. */
#include <math.h>

#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"

/* The split over the threads of every unscale loop (a pragma that macros can hold; not
 * formatted, as _Pragma takes one string literal, never two). */
#ifdef _OPENMP
/* clang-format off */
#define CT_UNSCALE_PARALLEL \
    _Pragma("omp parallel for reduction(| : bad) schedule(static) if (n >= CT_CPU_PARALLEL_THRESHOLD)")
/* clang-format on */
#else
#define CT_UNSCALE_PARALLEL
#endif

/* name(x, n, inv): the n elements of x (type T) times inv, in place; true when one of them
 * was an inf or a NaN. */
#define CT_DEFINE_UNSCALE(name, T)                                                                 \
    static bool name(T *x, int64_t n, T inv) {                                                     \
        int bad = 0;                                                                               \
        CT_UNSCALE_PARALLEL                                                                        \
        for (int64_t i = 0; i < n; i++) {                                                          \
            bad |= !isfinite(x[i]);                                                                \
            x[i] *= inv;                                                                           \
        }                                                                                          \
        return bad != 0;                                                                           \
    }

CT_DEFINE_UNSCALE(unscale_f32, float)
CT_DEFINE_UNSCALE(unscale_f64, double)

/* f16 and bf16 multiply in f32, as PyTorch's unscale does, and round back. */
static bool unscale_half(char *x, ct_dtype dtype, int64_t n, float inv) {
    int bad = 0;
    size_t size = ct__dtype_size(dtype);
    CT_UNSCALE_PARALLEL
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

/* CPU dropout kernel: one Philox block decides four elements (random.h's stream layout,
 * as ct_rand draws), so the mask is the same for any thread count and on every device. */
#include "backend/cpu/cpu_norm_impl.h"
#include "core/philox_impl.h"

CT_CPU_INLINE void dropout_block(const ct__dropout_args *a, int64_t b, ct_dtype dtype) {
    uint32_t w[4];
    ct__philox_stream_block(a->seed, a->offset + (uint64_t)b, w);
    int64_t first = 4 * b, left = a->numel - first;
    int count = left < 4 ? (int)left : 4;
    for (int i = 0; i < count; i++) {
        double keep = ct__philox_uniform(w[i], 32) >= a->p ? a->scale : 0.0;
        ct__stf(a->mask, first + i, dtype, keep);
        ct__stf(a->y, first + i, dtype, ct__ldf(a->x, first + i, dtype) * keep);
    }
}

ct_status ct__cpu_dropout(int device, const ct__dropout_args *args) {
    (void)device;
    int64_t blocks = (args->numel + 3) / 4;
#ifdef _OPENMP
#pragma omp parallel for if (args->numel >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t b = 0; b < blocks; b++) CT_CPU_BY_FLOAT_DTYPE(args->dtype, dropout_block, args, b);
    return CT_OK;
}

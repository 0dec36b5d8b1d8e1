/* CPU random kernels: Philox4x32-10 draws into a contiguous output (the stream layout is in
 * random.h and core/philox_impl.h). Each block of four elements depends only on its
 * counter, so the OpenMP split over blocks gives the same values for any thread count. */
#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"
#include "core/philox_impl.h"

/* Write elements [first, first + count) of the draw from their block's words w. */
static void write_block(char *out, ct_dtype dtype, ct__random_kind kind, int64_t first, int count,
                        const uint32_t w[4]) {
    size_t size = ct__dtype_size(dtype);
    double values[4];
    if (kind == CT_RANDOM_NORMAL) {
        ct__philox_box_muller(w[0], w[1], &values[0], &values[1]);
        if (count > 2) ct__philox_box_muller(w[2], w[3], &values[2], &values[3]);
    } else {
        int bits = ct__philox_uniform_bits(dtype);
        for (int i = 0; i < count; i++) values[i] = ct__philox_uniform(w[i], bits);
    }
    if (dtype == CT_F32) {
        float *o = (float *)out + first;
        for (int i = 0; i < count; i++) o[i] = (float)values[i];
        return;
    }
    for (int i = 0; i < count; i++)
        ct__store_f64(out + (first + i) * (int64_t)size, dtype, values[i]);
}

ct_status ct__cpu_random(int device, const ct__ew_args *args, ct__random_kind kind, uint64_t seed,
                         uint64_t offset) {
    (void)device;
    char *out = args->data[0];
    ct_dtype dtype = args->dtype[0];
    int64_t numel = args->numel, blocks = (numel + 3) / 4;
#ifdef _OPENMP
#pragma omp parallel for if (numel >= CT_CPU_PARALLEL_THRESHOLD) schedule(static)
#endif
    for (int64_t b = 0; b < blocks; b++) {
        uint32_t w[4];
        ct__philox_stream_block(seed, offset + (uint64_t)b, w);
        int64_t left = numel - 4 * b;
        write_block(out, dtype, kind, 4 * b, left < 4 ? (int)left : 4, w);
    }
    return CT_OK;
}

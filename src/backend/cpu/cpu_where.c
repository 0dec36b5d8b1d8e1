/* CPU where kernel: out = cond ? a : b, with cond bool and a, b of out's dtype (the op layer
 * converts them), any strides. Selection copies bytes, so one loop per element size serves
 * every dtype; contiguous operands get a vectorized select. */
#include <string.h>

#include "backend/cpu/cpu_ew_impl.h"
#include "core/dtype_impl.h"

/* The contiguous select for one element type. */
#define DEFINE_SELECT(name, T)                                                                     \
    CT_CPU_CLONES static void name(void *vo, const uint8_t *restrict cond, const void *va,         \
                                   const void *vb, int64_t n) {                                    \
        T *restrict o = vo;                                                                        \
        const T *restrict a = va, *restrict b = vb;                                                \
        for (int64_t i = 0; i < n; i++) o[i] = cond[i] ? a[i] : b[i];                              \
    }
DEFINE_SELECT(select_1, uint8_t)
DEFINE_SELECT(select_2, uint16_t)
DEFINE_SELECT(select_4, uint32_t)
DEFINE_SELECT(select_8, uint64_t)
DEFINE_SELECT(select_16, ct_complex128)

static void where_row(char *const *ptrs, const int64_t *strides, int64_t n, void *vctx) {
    int64_t size = *(const int64_t *)vctx;
    if (strides[0] == size && strides[1] == 1 && strides[2] == size && strides[3] == size) {
        const uint8_t *cond = (const uint8_t *)ptrs[1];
        switch (size) {
        case 1: select_1(ptrs[0], cond, ptrs[2], ptrs[3], n); return;
        case 2: select_2(ptrs[0], cond, ptrs[2], ptrs[3], n); return;
        case 4: select_4(ptrs[0], cond, ptrs[2], ptrs[3], n); return;
        case 8: select_8(ptrs[0], cond, ptrs[2], ptrs[3], n); return;
        default: select_16(ptrs[0], cond, ptrs[2], ptrs[3], n); return; /* complex128 */
        }
    }
    for (int64_t i = 0; i < n; i++) {
        const char *from =
            ptrs[1][i * strides[1]] ? ptrs[2] + i * strides[2] : ptrs[3] + i * strides[3];
        memcpy(ptrs[0] + i * strides[0], from, (size_t)size);
    }
}

ct_status ct__cpu_where(int device, const ct__ew_args *args) {
    (void)device;
    int64_t size = (int64_t)ct__dtype_size(args->dtype[0]);
    ct__cpu_parallel_rows(args, where_row, &size);
    return CT_OK;
}

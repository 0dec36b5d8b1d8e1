/* How a strided matrix operand reaches a BLAS-style GEMM (OpenBLAS on the CPU, cuBLAS on
 * CUDA) without a copy: shared so both backends decide it the same way. */
#ifndef CT_GEMM_LAYOUT_IMPL_H
#define CT_GEMM_LAYOUT_IMPL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct ct__gemm_layout {
    bool direct;     /* usable as it is (else: pack it first) */
    bool transposed; /* as the transpose of a row-major matrix */
    int64_t ld;      /* its leading dimension */
} ct__gemm_layout;

/* A rows x cols matrix with strides rs, cs (elements) as a row-major GEMM operand: either
 * unit column stride (as is) or unit row stride (transposed). The stride of a size-1 axis
 * never matters, so such an axis fits either way. */
static inline ct__gemm_layout ct__gemm_layout_of(int64_t rows, int64_t cols, int64_t rs,
                                                 int64_t cs) {
    ct__gemm_layout l = {false, false, 0};
    int64_t min_rs = cols > 1 ? cols : 1, min_cs = rows > 1 ? rows : 1;
    if ((cs == 1 || cols == 1) && (rows == 1 || rs >= min_rs)) {
        l.direct = true;
        l.ld = rows == 1 ? min_rs : rs;
    } else if ((rs == 1 || rows == 1) && (cols == 1 || cs >= min_cs)) {
        l.direct = true;
        l.transposed = true;
        l.ld = cols == 1 ? min_cs : cs;
    }
    if (l.ld > INT_MAX) l.direct = false;
    return l;
}

#endif
